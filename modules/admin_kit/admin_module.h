/* SPDX-License-Identifier: BSD-2-Clause */
/* The host-facing half of the admin kit: what admin_api and pool_api do
 * alike with the ph_api (modules/admin_kit/admin_http.h is the pure
 * half). The admin token of the module's "token_file" key, checked,
 * loaded at init and re-read on reload; JSON answers and {"error": ...}
 * answers to a route request. */
#ifndef PH_ADMIN_KIT_MODULE_H
#define PH_ADMIN_KIT_MODULE_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/module.h>

#include "admin_http.h"
#include "lib/admin_token.h"
#include "lib/ilist.h"

/* The check's part: reads token_file (PH_OK), or sets *key to
 * "token_file" and why (PH_EINVAL). Nothing is kept. */
int admin_token_conf_check(ph_ctx *ctx, const ph_api *a, const char **key,
                           char *why, size_t whylen);

/* Loads token_file into *t (init, reload): PH_OK, or PH_EINVAL after
 * logging msg with the reason (never the token); *t is then unchanged. */
int admin_token_conf_load(ph_ctx *ctx, const ph_api *a, admin_token *t,
                          const char *msg);

/* Answers request id with status and a JSON body. */
void admin_reply_json(ph_ctx *ctx, const ph_api *a, int64_t id, int status,
                      const char *body, size_t len);

/* Answers request id with status and {"error": {code, message}}. */
void admin_reply_error(ph_ctx *ctx, const ph_api *a, int64_t id, int status,
                       const char *code, const char *message);

/* ---- the module skeleton ----------------------------------------------
 * What an admin module's init, reload, destroy and request entry do alike:
 * its state starts with an admin_mod (the first member), its requests in
 * flight start with an admin_req. */

typedef struct admin_req {
  ilist_node node;
  int64_t id; /* the host's request id */
} admin_req;

typedef struct admin_mod {
  ph_ctx *ctx;
  const ph_api *api;
  admin_token token;
  int64_t max_in_flight; /* the "max_in_flight" key */
  ilist reqs;            /* admin_req: the requests in flight */
} admin_mod;

/* Init: size zeroed bytes (an admin_mod first) into *out, with the
 * "max_in_flight" key read and token_file loaded. PH_ESTATE on a host
 * before ABI 1.3 (no routes), PH_ENOMEM, PH_EINVAL (logged). */
int admin_mod_new(ph_ctx *ctx, const ph_api *a, size_t size, void **out);

/* Registers prefix with the host, arg the module's state. */
int admin_mod_register(admin_mod *m, const char *prefix, ph_route_fn handle,
                       ph_route_cancel_fn cancel);

/* Reload: token_file re-read (PH_EINVAL, logged, keeps the old one) and
 * max_in_flight. */
int admin_mod_reload(admin_mod *m);

/* Wipes and frees the state of size bytes (requests unlinked first). */
void admin_mod_free(admin_mod *m, size_t size);

/* A request's first steps. 1 when hr carries the admin token; 0 after
 * answering 401. */
int admin_mod_authorized(admin_mod *m, int64_t id, const ph_http_request *hr);

/* 1 after answering a request whose route the module does not serve:
 * none (405 when path_known, 404), or OP_ROUTES (the n routes of tbl). */
int admin_mod_answered(admin_mod *m, int64_t id, const api_route *rt,
                       int path_known, const api_route *tbl, size_t n);

/* 1 after answering 503 when max_in_flight requests are in flight. */
int admin_mod_full(admin_mod *m, int64_t id);

/* Requests in flight: linked (counted) until unlinked. */
void admin_req_link(admin_mod *m, admin_req *r, int64_t id);
void admin_req_unlink(admin_req *r);
admin_req *admin_req_find(admin_mod *m, int64_t id);
/* The first one, or NULL (destroy drains with it). */
admin_req *admin_req_first(admin_mod *m);

/* A check of the provider key k of service: required (non-NULL: the
 * text after "required: " when it is empty) or optional (empty: no
 * provider); set, it must name a loaded instance. */
int admin_conf_provider(ph_ctx *ctx, const ph_api *a, const char *k,
                        const char *service, const char *required,
                        const char **key, char *why, size_t whylen);

#endif
