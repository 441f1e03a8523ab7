/* SPDX-License-Identifier: BSD-2-Clause */
/* pool_api: the JSON API of the proxy pool over the "pool.store" service,
 * served on the host's admin listener (ABI 1.3 routes) under /v1/pool:
 * proxies, routes and credential references (api_pool.c) and exclusive
 * extraction (api_extract.c); GET /v1/pool lists the module's routes.
 * docs/api/openapi.yaml describes every route; proxyhostctl is its
 * client. The authorization routes are admin_api's.
 *
 * Every request needs "Authorization: Bearer <admin token>", the token
 * read from token_file (modules/admin_kit/admin_token.c); a missing or
 * wrong one is a 401 that does not say which. Requests in flight: at most
 * max_in_flight; the host's [admin] timeout cancels a request whose store
 * call did not answer, and the store call with it.
 *
 * Exclusive extraction asks the "cp.authority" provider [pool_api]
 * authority names (redis_ownership); without one those routes answer
 * 501. The provider should come before pool_api in [proxyhost] modules,
 * so that it starts before and is destroyed after this module. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include <proxyhost/module.h>
#include <proxyhost/pool_store.h>

#include "admin_kit/admin_http.h"
#include "admin_kit/admin_module.h"
#include "api_extract.h"
#include "api_pool.h"
#include "pool_routes.h"
#include "frontend/provider_check.h"


static const ph_api *api;

/* The key table, generated from pool_api.ini.sample (its "; type:" lines)
 * by tools/gen_conf_keys.awk into pool_api_keys.c. max_in_flight's maximum
 * there is PH_ROUTE_MAX_IN_FLIGHT, which the host's route table checks
 * again: a sample that allows more fails the start, closed. */
extern const ph_conf_key pool_api_keys[];

static const char *const pool_api_requires[] = {PH_POOL_STORE_SERVICE, NULL};

typedef struct req req;
typedef struct mod mod;

struct req {
  admin_req link;       /* first: the kit's (id, in flight) */
  mod *m;
  api_pool_call pool;   /* a pool.store request (api_pool.c) */
  api_extract_call ext; /* an extraction request (api_extract.c) */
};

struct mod {
  admin_mod b; /* first: the kit's (ctx, token, requests in flight) */
  const ph_pool_store_v1 *pool;
  void *pool_self;
  const cp_authority_v1 *auth; /* [pool_api] authority's, if set */
  void *auth_self;
  const cp_credcheck_v1 *cred; /* [pool_api] credentials', if loaded */
  const cp_health_v1 *health;  /* the same controller's reducer */
  void *health_self;
  void *cred_self;
};

/* ---- answers ----------------------------------------------------------- */

static void req_unlink(req *r) {
  admin_req_unlink(&r->link);
  api_pool_free(&r->pool);
  OPENSSL_cleanse(r, sizeof(*r));
  free(r);
}

/* api_pool.c's and api_extract.c's one answer to a request. */
static void pool_reply(void *arg, int http, const char *body, size_t len) {
  req *r = arg;
  if (body)
    admin_reply_json(r->m->b.ctx, api, r->link.id, http, body, len);
  else
    api->route_reply(r->m->b.ctx, r->link.id, http, NULL, NULL, 0);
  req_unlink(r);
}

/* A request taken on: in flight (admin_req_link) until pool_reply. NULL
 * (after answering 503) when too many are in flight or without memory. */
static req *track_req(mod *m, int64_t id) {
  if (admin_mod_full(&m->b, id))
    return NULL;
  req *r = calloc(1, sizeof(*r));
  if (!r) {
    admin_reply_error(m->b.ctx, api, id, 503, "unavailable", "out of memory");
    return NULL;
  }
  r->m = m;
  admin_req_link(&m->b, &r->link, id);
  return r;
}

/* ---- requests ---------------------------------------------------------- */

/* An extraction request: api_extract.c answers through pool_reply,
 * exactly once. */
static void serve_extract(mod *m, int64_t id, const api_route *rt,
                          const char *key, const ph_http_request *hr) {
  if (!m->auth) {
    admin_reply_error(
        m->b.ctx, api, id, 501, "not_implemented",
        "exclusive extraction is off: [pool_api] authority is not "
        "set");
    return;
  }
  if (hr->query && hr->query[0]) {
    admin_reply_error(m->b.ctx, api, id, 400, "invalid",
                      "this call takes no query");
    return;
  }
  req *r = track_req(m, id);
  if (!r)
    return;
  api_extract_call *c = &r->ext;
  c->st = m->pool;
  c->st_self = m->pool_self;
  c->auth = m->auth;
  c->auth_self = m->auth_self;
  c->op = rt->op;
  snprintf(c->key, sizeof(c->key), "%s", key);
  c->reply = pool_reply;
  c->arg = r;
  api_extract_start(c, hr->body_len);
}

/* A pool.store request: api_pool.c reads it and answers through
 * pool_reply, exactly once. */
static void serve_pool(mod *m, int64_t id, const api_route *rt, const char *key,
                       const ph_http_request *hr) {
  if (hr->body_len > 0 && !api_is_json_type(hr->content_type)) {
    admin_reply_error(m->b.ctx, api, id, 415, "unsupported_media_type",
                      "send the body as application/json");
    return;
  }
  req *r = track_req(m, id);
  if (!r)
    return;
  api_pool_call *c = &r->pool;
  c->st = m->pool;
  c->self = m->pool_self;
  c->cred = m->cred;
  c->cred_self = m->cred_self;
  c->health = m->health;
  c->health_self = m->health_self;
  c->kind = rt->kind;
  c->op = rt->op;
  snprintf(c->key, sizeof(c->key), "%s", key);
  c->reply = pool_reply;
  c->arg = r;
  api_pool_start(c, hr->query, hr->body, hr->body_len);
}

static void on_request(void *arg, int64_t id, const ph_http_request *hr) {
  mod *m = arg;
  if (!admin_mod_authorized(&m->b, id, hr))
    return;
  char key[API_POOL_KEY_MAX + 1];
  int path_known;
  const api_route *rt = pool_match(hr->method, hr->path, key, &path_known);
  if (!rt && !path_known && pool_extraction_path(hr->path)) {
    admin_reply_error(m->b.ctx, api, id, 400, "invalid",
                      "a proxy id is 1..128 bytes of [a-z0-9._-]");
    return;
  }
  if (admin_mod_answered(&m->b, id, rt, path_known, pool_routes,
                         pool_n_routes))
    return;
  if (!m->pool) {
    admin_reply_error(m->b.ctx, api, id, 503, "unavailable",
                      "the store is not started");
    return;
  }
  if (api_extract_op(rt->op))
    serve_extract(m, id, rt, key, hr);
  else
    serve_pool(m, id, rt, key, hr);
}

/* The client left or the deadline passed: drop the store call. */
static void on_cancel(void *arg, int64_t id) {
  mod *m = arg;
  req *r = (req *)admin_req_find(&m->b, id);
  if (!r)
    return;
  api_pool_cancel(&r->pool);
  api_extract_cancel(&r->ext);
  req_unlink(r);
}

/* ---- lifecycle --------------------------------------------------------- */

static int pool_api_check(ph_ctx *ctx, const ph_api *a, const char **key,
                          char *why, size_t whylen) {
  int rc = admin_conf_provider(ctx, a, "store", PH_POOL_STORE_SERVICE,
                               "the pool.store provider instance "
                               "(store_sqlite or store_pg)",
                               key, why, whylen);
  if (rc == PH_OK)
    rc = admin_conf_provider(ctx, a, "authority", CP_AUTHORITY_SERVICE, NULL,
                             key, why, whylen);
  if (rc != PH_OK)
    return rc;
  return admin_token_conf_check(ctx, a, key, why, whylen);
}

static int pool_api_init(ph_ctx *ctx, const ph_api *a, void **state) {
  api = a;
  mod *m;
  int rc = admin_mod_new(ctx, a, sizeof(*m), (void **)&m);
  if (rc != PH_OK)
    return rc;
  rc = admin_mod_register(&m->b, POOL_API_PREFIX, on_request, on_cancel);
  if (rc != PH_OK) {
    admin_mod_free(&m->b, sizeof(*m));
    return rc;
  }
  *state = m;
  return PH_OK;
}

static int pool_api_start(void *state) {
  mod *m = state;
  const char *store = api->conf_str(m->b.ctx, "store");
  m->pool = api->service_get_named(m->b.ctx, PH_POOL_STORE_SERVICE, store,
                                   PH_POOL_STORE_MAJOR, 0, &m->pool_self);
  if (!m->pool) {
    PH_LOG(api, m->b.ctx, PH_LOG_ERROR,
           "pool.store not found (a store of schema v10)",
           PH_STR("store", store));
    return PH_ENOENT;
  }
  /* Credentials the controller cannot read (issue 23 item 6): asked only
   * where that controller runs in this process. */
  const char *credentials = api->conf_str(m->b.ctx, "credentials");
  if (credentials && *credentials &&
      api->service_provider_loaded(m->b.ctx, CP_CREDCHECK_SERVICE, credentials))
    m->cred = api->service_get_named(m->b.ctx, CP_CREDCHECK_SERVICE, credentials,
                                     CP_CREDCHECK_MAJOR, 0, &m->cred_self);
  /* The same controller's health verdicts (issue 26, CP-6-7). */
  if (credentials && *credentials &&
      api->service_provider_loaded(m->b.ctx, CP_HEALTH_SERVICE, credentials))
    m->health = api->service_get_named(m->b.ctx, CP_HEALTH_SERVICE,
                                       credentials, CP_HEALTH_MAJOR, 0,
                                       &m->health_self);
  /* Exclusive extraction: minor 2 has extract (cp_authority.h). */
  const char *authority = api->conf_str(m->b.ctx, "authority");
  if (authority && *authority) {
    m->auth = api->service_get_named(m->b.ctx, CP_AUTHORITY_SERVICE, authority,
                                     CP_AUTHORITY_MAJOR, 2, &m->auth_self);
    if (!m->auth) {
      PH_LOG(api, m->b.ctx, PH_LOG_ERROR,
             "cp.authority 1.2 (exclusive extraction) not found: load "
             "redis_ownership or empty [pool_api] authority",
             PH_STR("authority", authority));
      return PH_ENOENT;
    }
  }
  return PH_OK;
}

/* A new token file takes effect on SIGHUP (check has read it already). */
static int pool_api_reload(void *state) { return admin_mod_reload(state); }

static void pool_api_destroy(void *state) {
  mod *m = state;
  if (!m)
    return;
  req *r;
  while ((r = (req *)admin_req_first(&m->b))) {
    api_pool_cancel(&r->pool);
    api_extract_cancel(&r->ext);
    req_unlink(r);
  }
  admin_mod_free(&m->b, sizeof(*m));
}

PROXYHOST_MODULE = {
    PH_MODULE_HEADER("pool_api", "1.0.0"),
    .description = "JSON API of the proxy pool (pool.store): proxies, "
                   "routes, credential references and exclusive extraction "
                   "under /v1/pool on the admin listener",
    .requires = pool_api_requires,
    .config = pool_api_keys,
    .check = pool_api_check,
    .init = pool_api_init,
    .start = pool_api_start,
    .reload = pool_api_reload,
    .destroy = pool_api_destroy,
};
