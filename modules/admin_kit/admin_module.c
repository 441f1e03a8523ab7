/* SPDX-License-Identifier: BSD-2-Clause */
/* See admin_module.h. */
#include "admin_module.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin_http.h"
#include "frontend/provider_check.h"

int admin_token_conf_check(ph_ctx *ctx, const ph_api *a, const char **key,
                           char *why, size_t whylen) {
  admin_token t;
  if (admin_token_load(a->conf_str(ctx, "token_file"), &t, why, whylen) < 0) {
    *key = "token_file";
    return PH_EINVAL;
  }
  admin_token_wipe(&t);
  return PH_OK;
}

int admin_token_conf_load(ph_ctx *ctx, const ph_api *a, admin_token *t,
                          const char *msg) {
  char why[512];
  admin_token n;
  if (admin_token_load(a->conf_str(ctx, "token_file"), &n, why, sizeof(why)) <
      0) {
    admin_token_wipe(&n);
    PH_LOG(a, ctx, PH_LOG_ERROR, msg, PH_STR("reason", why));
    return PH_EINVAL;
  }
  *t = n;
  admin_token_wipe(&n);
  return PH_OK;
}

void admin_reply_json(ph_ctx *ctx, const ph_api *a, int64_t id, int status,
                      const char *body, size_t len) {
  a->route_reply(ctx, id, status, API_JSON_TYPE, body, len);
}

void admin_reply_error(ph_ctx *ctx, const ph_api *a, int64_t id, int status,
                       const char *code, const char *message) {
  char buf[512];
  size_t n = api_write_error(buf, sizeof(buf), code, message);
  admin_reply_json(ctx, a, id, status, buf, n);
}

/* ---- the module skeleton ---------------------------------------------- */

int admin_mod_new(ph_ctx *ctx, const ph_api *a, size_t size, void **out) {
  if (a->size <= offsetof(ph_api, route_reply))
    return PH_ESTATE; /* a host before ABI 1.3 has no routes */
  admin_mod *m = calloc(1, size);
  if (!m)
    return PH_ENOMEM;
  m->ctx = ctx;
  m->api = a;
  ilist_init(&m->reqs);
  m->max_in_flight = a->conf_int(ctx, "max_in_flight");
  if (admin_token_conf_load(ctx, a, &m->token, "admin token not loaded") !=
      PH_OK) {
    free(m);
    return PH_EINVAL;
  }
  *out = m;
  return PH_OK;
}

int admin_mod_register(admin_mod *m, const char *prefix, ph_route_fn handle,
                       ph_route_cancel_fn cancel) {
  return m->api->route_register(m->ctx, prefix, handle, cancel, m,
                                (uint32_t)m->max_in_flight);
}

/* A new token file takes effect on SIGHUP (check has read it already). */
int admin_mod_reload(admin_mod *m) {
  if (admin_token_conf_load(m->ctx, m->api, &m->token,
                            "admin token not reloaded") != PH_OK)
    return PH_EINVAL;
  m->max_in_flight = m->api->conf_int(m->ctx, "max_in_flight");
  return PH_OK;
}

void admin_mod_free(admin_mod *m, size_t size) {
  explicit_bzero(m, size);
  free(m);
}

int admin_mod_authorized(admin_mod *m, int64_t id, const ph_http_request *hr) {
  if (admin_token_check(&m->token, hr->authorization))
    return 1;
  admin_reply_error(m->ctx, m->api, id, 401, "unauthorized",
                    "send Authorization: Bearer with the admin token");
  return 0;
}

int admin_mod_answered(admin_mod *m, int64_t id, const api_route *rt,
                       int path_known, const api_route *tbl, size_t n) {
  if (!rt) {
    if (path_known)
      admin_reply_error(m->ctx, m->api, id, 405, "method_not_allowed",
                        "this path does not take this method");
    else
      admin_reply_error(m->ctx, m->api, id, 404, "not_found",
                        "no such route");
    return 1;
  }
  if (rt->op != OP_ROUTES)
    return 0;
  char buf[4096];
  long len = api_write_routes(tbl, n, buf, sizeof(buf));
  if (len < 0)
    admin_reply_error(m->ctx, m->api, id, 500, "internal",
                      "route table too large");
  else
    admin_reply_json(m->ctx, m->api, id, 200, buf, (size_t)len);
  return 1;
}

int admin_mod_full(admin_mod *m, int64_t id) {
  if ((int64_t)ilist_len(&m->reqs) < m->max_in_flight)
    return 0;
  admin_reply_error(m->ctx, m->api, id, 503, "busy",
                    "too many admin requests in flight");
  return 1;
}

void admin_req_link(admin_mod *m, admin_req *r, int64_t id) {
  r->id = id;
  ilist_push(&m->reqs, &r->node);
}

void admin_req_unlink(admin_req *r) {
  if (ilist_of(&r->node))
    ilist_remove(&r->node);
}

admin_req *admin_req_find(admin_mod *m, int64_t id) {
  ILIST_FOREACH_SAFE(&m->reqs, it, nx) {
    admin_req *r = ILIST_ENTRY(it, admin_req, node);
    if (r->id == id)
      return r;
  }
  return NULL;
}

admin_req *admin_req_first(admin_mod *m) {
  ilist_node *n = ilist_first(&m->reqs);
  return n ? ILIST_ENTRY(n, admin_req, node) : NULL;
}

int admin_conf_provider(ph_ctx *ctx, const ph_api *a, const char *k,
                        const char *service, const char *required,
                        const char **key, char *why, size_t whylen) {
  const char *v = a->conf_str(ctx, k);
  if (v && *v)
    return check_named_provider(ctx, a, k, service, key, why, whylen);
  if (!required)
    return PH_OK;
  *key = k;
  snprintf(why, whylen, "required: %s", required);
  return PH_EINVAL;
}
