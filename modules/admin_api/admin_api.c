/* SPDX-License-Identifier: BSD-2-Clause */
/* admin_api: the JSON admin API over the "authz.store" service, served on
 * the host's admin listener (ABI 1.3 routes): users, tokens, agents and
 * policies, listed, created, read, changed, deleted; tokens rotated and
 * revoked; and GET /v1/authorize, what the stream path's "access"
 * provider answers now for one (token, agent, host, port). docs/api/openapi.yaml describes every route; proxyhostctl is
 * its client.
 *
 * Every request needs "Authorization: Bearer <admin token>", the token
 * read from token_file (admin_token.c); a missing or wrong one is a 401
 * that does not say which. A request is checked (route, query, body)
 * before the store sees it, so bad input changes nothing; the store
 * checks the values and answers with its statuses, mapped here to HTTP.
 * A token's bearer secret appears only in the answer to the create or
 * rotate that made it, and never in a log line.
 *
 * Requests in flight: at most max_in_flight for the module (also each
 * route's bound at the host); the host's [admin] timeout cancels a
 * request whose store call did not answer, and the store call with it.
 *
 * The proxy pool's routes (/v1/pool/...) are pool_api's. [admin_api]
 * authority and credentials, which served them before, are kept only to
 * say where they went: set, the check refuses them and names
 * [pool_api]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include <proxyhost/authz_store.h>
#include <proxyhost/module.h>

#include "admin_kit/admin_http.h"
#include "admin_kit/admin_module.h"
#include "api_authorize.h"
#include "api_json.h"
#include "api_routes.h"
#include "lib/json.h"
#include "frontend/provider_check.h"

/* The bytes one record takes at most in a list's answer (names 64, a
 * pattern 255, escapes at most 6 bytes each, field names). */
#define RECORD_JSON_MAX 2400

static const ph_api *api;

/* The key table, generated from admin_api.ini.sample (its "; type:" lines)
 * by tools/gen_conf_keys.awk into admin_api_keys.c. max_in_flight's maximum
 * there is PH_ROUTE_MAX_IN_FLIGHT, which the host's route table checks
 * again: a sample that allows more fails the start, closed. */
extern const ph_conf_key api_keys[];

static const char *const api_requires[] = {PH_AZ_STORE_SERVICE, NULL};

typedef struct req req;
typedef struct mod mod;

struct req {
  admin_req link;  /* first: the kit's (id, in flight) */
  mod *m;
  int64_t call;    /* the store call, > 0 while outstanding */
  const api_route *route;
  char key[API_PATH_KEY_MAX + 1];
  api_body body;   /* a write's values */
  api_query q;     /* a list's */
  api_authorize az; /* an authorize's question */
  int64_t check;   /* the access check, > 0 while outstanding */
};

struct mod {
  admin_mod b; /* first: the kit's (ctx, token, requests in flight) */
  const ph_az_store_v1 *store;
  void *store_self;
  const ph_access_v1 *access;
  void *access_self;
};

/* ---- answers ----------------------------------------------------------- */

static void reply_json(mod *m, int64_t id, int status, const char *body,
                       size_t len) {
  admin_reply_json(m->b.ctx, api, id, status, body, len);
}

static void reply_error(mod *m, int64_t id, int status, const char *code,
                        const char *message) {
  admin_reply_error(m->b.ctx, api, id, status, code, message);
}

static void req_unlink(req *r) {
  admin_req_unlink(&r->link);
  OPENSSL_cleanse(r, sizeof(*r));
  free(r);
}

/* A store status as HTTP status, code and message. */
static void store_error(req *r, int status, const char *detail) {
  int http;
  const char *code, *msg = detail;
  switch (status) {
  case PH_EINVAL:
    http = 400, code = "invalid";
    msg = detail ? detail : "the request is not valid";
    break;
  case PH_ENOENT:
    http = 404, code = "not_found";
    msg = detail ? detail : "no such record";
    break;
  case PH_EEXIST:
    http = 409, code = "conflict";
    msg = detail ? detail : "the name is taken";
    break;
  case PH_EBUSY:
    http = 409, code = "busy";
    msg = detail ? detail
                 : "the user still owns agents or users: delete or move "
                   "them first";
    break;
  case PH_EFULL:
    http = 503, code = "busy";
    msg = "the store has too many calls in flight; try again";
    break;
  case PH_AZ_EUNAVAILABLE:
    http = 503, code = "unavailable";
    msg = "the store is unavailable; nothing was changed";
    break;
  case PH_AZ_EOUTCOME:
    http = 500, code = "outcome_unknown";
    msg = "the connection to the database was lost during the commit: the "
          "change may or may not have been made; list the records to check";
    break;
  default:
    http = 500, code = "internal";
    msg = "the store failed";
  }
  reply_error(r->m, r->link.id, http, code, msg);
}

/* ---- store answers ----------------------------------------------------- */

static void on_write(void *arg, const ph_az_write_result *res) {
  req *r = arg;
  r->call = 0;
  if (res->status != PH_OK) {
    store_error(r, res->status, res->detail);
    req_unlink(r);
    return;
  }
  if (r->route->op == OP_DELETE) {
    api->route_reply(r->m->b.ctx, r->link.id, 204, NULL, NULL, 0);
    req_unlink(r);
    return;
  }
  char buf[RECORD_JSON_MAX + 512];
  json_w w;
  json_w_init(&w, buf, sizeof(buf));
  if (res->bearer) {
    /* The one time the secret is shown (create or rotate of a token). */
    json_w_obj(&w);
    json_w_key(&w, "token");
    api_write_record(&w, &res->rec);
    json_w_key(&w, "bearer");
    json_w_str(&w, res->bearer);
    json_w_key(&w, "notice");
    json_w_str(&w, "the bearer is shown only now; it cannot be read again");
    json_w_obj_end(&w);
  } else {
    api_write_record(&w, &res->rec);
  }
  long n = json_w_finish(&w);
  if (n < 0)
    reply_error(r->m, r->link.id, 500, "internal",
                "the record could not be written as JSON; list to check");
  else
    reply_json(r->m, r->link.id, r->route->op == OP_CREATE ? 201 : 200, buf,
               (size_t)n);
  OPENSSL_cleanse(buf, sizeof(buf));
  req_unlink(r);
}

static const char *record_key(const ph_az_record *rec) {
  switch (rec->kind) {
  case PH_AZ_USER:
    return rec->u.user.name;
  case PH_AZ_AGENT:
    return rec->u.agent.name;
  case PH_AZ_TOKEN:
    return rec->u.token.id;
  case PH_AZ_POLICY:
    return rec->u.policy.id;
  }
  return NULL;
}

static void on_list(void *arg, const ph_az_list_result *res) {
  req *r = arg;
  r->call = 0;
  if (res->status != PH_OK) {
    store_error(r, res->status, NULL);
    req_unlink(r);
    return;
  }
  if (r->route->op == OP_GET) {
    const char *k = res->n == 1 ? record_key(&res->recs[0]) : NULL;
    if (!k || strcmp(k, r->key) != 0) {
      reply_error(r->m, r->link.id, 404, "not_found", "no such record");
      req_unlink(r);
      return;
    }
  }
  size_t cap = 256 + (res->n + 1) * RECORD_JSON_MAX;
  char *buf = malloc(cap);
  if (!buf) {
    reply_error(r->m, r->link.id, 503, "unavailable", "out of memory");
    req_unlink(r);
    return;
  }
  json_w w;
  json_w_init(&w, buf, cap);
  if (r->route->op == OP_GET) {
    api_write_record(&w, &res->recs[0]);
  } else {
    json_w_obj(&w);
    json_w_key(&w, "items");
    json_w_arr(&w);
    for (size_t i = 0; i < res->n; i++)
      api_write_record(&w, &res->recs[i]);
    json_w_arr_end(&w);
    json_w_key(&w, "more");
    json_w_bool(&w, res->more);
    json_w_key(&w, "next_after");
    json_w_str(&w, res->more && res->n ? record_key(&res->recs[res->n - 1])
                                       : NULL);
    json_w_key(&w, "revision");
    json_w_uint(&w, res->revision);
    json_w_obj_end(&w);
  }
  long n = json_w_finish(&w);
  if (n < 0)
    reply_error(r->m, r->link.id, 500, "internal",
                "the records could not be written as JSON");
  else
    reply_json(r->m, r->link.id, 200, buf, (size_t)n);
  free(buf);
  req_unlink(r);
}

static void on_access(void *arg, const ph_access_result *res) {
  req *r = arg;
  r->check = 0;
  char buf[256];
  json_w w;
  json_w_init(&w, buf, sizeof(buf));
  api_authorize_write(&w, res);
  long n = json_w_finish(&w);
  if (n < 0)
    reply_error(r->m, r->link.id, 500, "internal", "the verdict did not fit");
  else
    reply_json(r->m, r->link.id, 200, buf, (size_t)n);
  req_unlink(r);
}

/* ---- requests ---------------------------------------------------------- */

/* Whether key can name a record of kind: a name starting with a letter
 * or a digit, or "tok_"/"pol_" and 16 lower-case hex digits. */
static int key_valid(int kind, const char *key) {
  size_t n = strlen(key);
  if (kind == PH_AZ_TOKEN || kind == PH_AZ_POLICY) {
    const char *prefix = kind == PH_AZ_TOKEN ? "tok_" : "pol_";
    return n == PH_AZ_ID_LEN && memcmp(key, prefix, 4) == 0 &&
           strspn(key + 4, "0123456789abcdef") == 16;
  }
  return n >= 1 && n <= PH_AZ_NAME_MAX &&
         ((key[0] >= 'a' && key[0] <= 'z') || (key[0] >= '0' && key[0] <= '9'));
}

/* The greatest key of the kind below key (key_valid), so that a list
 * after it starts at key: names are [a-z0-9._-] of at most
 * PH_AZ_NAME_MAX bytes (the first a letter or a digit), compared
 * bytewise; ids a prefix and 16 hex digits. Empty when key is the
 * smallest there is (list from the start). */
static void key_before(int kind, const char *key, char *out, size_t cap) {
  size_t n = strlen(key);
  if (n == 0 || n >= cap) { /* key_valid said no: from the start */
    out[0] = '\0';
    return;
  }
  memcpy(out, key, n + 1);
  if (kind == PH_AZ_TOKEN || kind == PH_AZ_POLICY) {
    for (size_t i = n; i-- > 4;) { /* decrement the hex number */
      char c = out[i];
      if (c == '0') {
        out[i] = 'f';
        continue;
      }
      out[i] = c == 'a' ? '9' : (char)(c - 1);
      return;
    }
    out[0] = '\0';
    return;
  }
  char c = out[n - 1];
  if (n == 1) {
    if (c == '0') {
      out[0] = '\0';
      return;
    }
    out[0] = c == 'a' ? '9' : (char)(c - 1);
  } else if (c == '-') {
    /* The smallest character: the name without it comes just before. */
    out[n - 1] = '\0';
    return;
  } else {
    /* The character before c in "-.0123456789_abc...z". */
    out[n - 1] = c == '.' ? '-' : c == '0' ? '.' : c == '_' ? '9'
               : c == 'a' ? '_' : (char)(c - 1);
  }
  /* Then the longest tail of the greatest character. */
  size_t end = n;
  for (; end < PH_AZ_NAME_MAX && end + 1 < cap; end++)
    out[end] = 'z';
  out[end] = '\0';
}

static void on_request(void *arg, int64_t id, const ph_http_request *hr) {
  mod *m = arg;
  if (!admin_mod_authorized(&m->b, id, hr))
    return;
  char key[API_PATH_KEY_MAX + 1];
  int path_known;
  const api_route *rt = api_match(hr->method, hr->path, key, &path_known);
  if (admin_mod_answered(&m->b, id, rt, path_known, api_routes, api_n_routes))
    return;
  if (!m->store) {
    reply_error(m, id, 503, "unavailable", "the store is not started");
    return;
  }
  if (admin_mod_full(&m->b, id))
    return;
  const char *msg = NULL;
  int is_list =
      rt->op == OP_LIST || rt->op == OP_GET || rt->op == OP_AUTHORIZE;
  if (is_list && hr->body_len > 0) {
    reply_error(m, id, 400, "invalid", "a GET takes no body");
    return;
  }
  if (!is_list && hr->body_len > 0 && !api_is_json_type(hr->content_type)) {
    reply_error(m, id, 415, "unsupported_media_type",
                "send the body as application/json");
    return;
  }
  if (rt->op != OP_LIST && rt->op != OP_AUTHORIZE && hr->query[0]) {
    reply_error(m, id, 400, "invalid", "this call takes no query");
    return;
  }
  req *r = calloc(1, sizeof(*r));
  if (!r) {
    reply_error(m, id, 503, "unavailable", "out of memory");
    return;
  }
  r->m = m;
  r->route = rt;
  memcpy(r->key, key, sizeof(key));
  int rc = 0;
  if (rt->op == OP_AUTHORIZE) {
    if (!m->access) {
      reply_error(m, id, 503, "unavailable",
                  "no access provider: set [admin_api] access");
      free(r);
      return;
    }
    if (api_authorize_parse(&r->az, hr->query, &msg) < 0) {
      reply_error(m, id, 400, "invalid", msg);
      free(r);
      return;
    }
    admin_req_link(&m->b, &r->link, id);
    r->check = m->access->check_open(m->access_self, &r->az.req, on_access,
                                     r);
    if (r->check <= 0) {
      r->check = 0;
      reply_error(m, id, 400, "invalid",
                  "the access provider refused the question");
      req_unlink(r);
    }
    return;
  }
  if (rt->op == OP_LIST) {
    rc = api_query_parse(&r->q, hr->query, &msg);
  } else if (rt->op == OP_GET) {
    if (!key_valid(rt->kind, key)) {
      reply_error(m, id, 404, "not_found", "no such record");
      OPENSSL_cleanse(r, sizeof(*r));
      free(r);
      return;
    }
    key_before(rt->kind, key, r->q.after, sizeof(r->q.after));
    r->q.list.after = r->q.after[0] ? r->q.after : NULL;
    r->q.list.limit = 1;
  } else {
    rc = api_body_parse(&r->body, rt->kind, rt->op, key, hr->body,
                        hr->body_len, &msg);
  }
  /* After the query's parse, which starts from an empty list. */
  r->q.list.size = sizeof(r->q.list);
  r->q.list.kind = rt->kind;
  if (rc < 0) {
    reply_error(m, id, 400, "invalid", msg ? msg : "bad request");
    OPENSSL_cleanse(r, sizeof(*r));
    free(r);
    return;
  }
  admin_req_link(&m->b, &r->link, id);
  r->call = is_list ? m->store->list(m->store_self, &r->q.list, on_list, r)
                    : m->store->write(m->store_self, &r->body.w, on_write, r);
  if (r->call <= 0) {
    int st = (int)r->call;
    r->call = 0;
    store_error(r, st == PH_ENOMEM ? PH_AZ_EUNAVAILABLE : st, NULL);
    req_unlink(r);
  }
}

/* The client left or the deadline passed: drop the store call. */
static void on_cancel(void *arg, int64_t id) {
  mod *m = arg;
  req *r = (req *)admin_req_find(&m->b, id);
  if (!r)
    return;
  if (r->call > 0)
    m->store->cancel(m->store_self, r->call);
  if (r->check > 0)
    m->access->cancel(m->access_self, r->check);
  req_unlink(r);
}

/* ---- lifecycle --------------------------------------------------------- */

static int api_check(ph_ctx *ctx, const ph_api *a, const char **key,
                     char *why, size_t whylen) {
  int rc = admin_conf_provider(ctx, a, "store", PH_AZ_STORE_SERVICE,
                               "the authz.store provider instance "
                               "(store_sqlite or store_pg)",
                               key, why, whylen);
  if (rc == PH_OK)
    rc = admin_conf_provider(ctx, a, "access", PH_ACCESS_SERVICE, NULL, key,
                             why, whylen);
  if (rc != PH_OK)
    return rc;
  /* The keys that served the pool's routes before pool_api (issue 25). */
  static const char *const moved[] = {"authority", "credentials"};
  for (size_t i = 0; i < sizeof(moved) / sizeof(moved[0]); i++) {
    const char *v = a->conf_str(ctx, moved[i]);
    if (v && *v) {
      *key = moved[i];
      snprintf(why, whylen,
               "moved to [pool_api] %s: the pool's routes (/v1/pool/*) are "
               "the pool_api module's; load pool_api and set it there",
               moved[i]);
      return PH_EINVAL;
    }
  }
  return admin_token_conf_check(ctx, a, key, why, whylen);
}

static int api_init(ph_ctx *ctx, const ph_api *a, void **state) {
  api = a;
  mod *m;
  int rc = admin_mod_new(ctx, a, sizeof(*m), (void **)&m);
  if (rc != PH_OK)
    return rc;
  for (size_t i = 0; i < api_n_collections; i++) {
    rc = admin_mod_register(&m->b, api_collections[i].prefix, on_request,
                            on_cancel);
    if (rc != PH_OK) {
      admin_mod_free(&m->b, sizeof(*m));
      return rc;
    }
  }
  *state = m;
  return PH_OK;
}

static int api_start(void *state) {
  mod *m = state;
  const char *store = api->conf_str(m->b.ctx, "store");
  m->store = api->service_get_named(m->b.ctx, PH_AZ_STORE_SERVICE, store,
                                    PH_AZ_STORE_MAJOR, 0, &m->store_self);
  if (!m->store) {
    PH_LOG(api, m->b.ctx, PH_LOG_ERROR, "authz.store not found",
           PH_STR("store", store));
    return PH_ENOENT;
  }
  /* Empty: the store's own (a store provides "access" beside
   * "authz.store"), when it has one; authorize answers 503 otherwise. */
  const char *access = api->conf_str(m->b.ctx, "access");
  int named = access && *access;
  if (named || api->service_provider_loaded(m->b.ctx, PH_ACCESS_SERVICE, store))
    m->access = api->service_get_named(m->b.ctx, PH_ACCESS_SERVICE,
                                       named ? access : store,
                                       PH_ACCESS_MAJOR, 0, &m->access_self);
  if (named && !m->access) {
    PH_LOG(api, m->b.ctx, PH_LOG_ERROR, "access provider not found",
           PH_STR("access", access));
    return PH_ENOENT;
  }
  return PH_OK;
}

/* A new token file takes effect on SIGHUP (check has read it already). */
static int api_reload(void *state) { return admin_mod_reload(state); }

static void api_destroy(void *state) {
  mod *m = state;
  if (!m)
    return;
  req *r;
  while ((r = (req *)admin_req_first(&m->b))) {
    if (r->call > 0 && m->store)
      m->store->cancel(m->store_self, r->call);
    if (r->check > 0 && m->access)
      m->access->cancel(m->access_self, r->check);
    req_unlink(r);
  }
  admin_mod_free(&m->b, sizeof(*m));
}

PROXYHOST_MODULE = {
    PH_MODULE_HEADER("admin_api", "1.0.0"),
    .description = "JSON admin API for users, tokens, agents and policies "
                   "(authz.store) and GET /v1/authorize on the admin "
                   "listener",
    .requires = api_requires,
    .config = api_keys,
    .check = api_check,
    .init = api_init,
    .start = api_start,
    .reload = api_reload,
    .destroy = api_destroy,
};
