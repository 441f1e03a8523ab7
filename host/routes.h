/* SPDX-License-Identifier: BSD-2-Clause */
/* Modules' routes on the admin listener (ABI 1.3): the prefix table and
 * the requests handed to modules and not yet answered. The admin
 * listener (admin.c) and the mock host (mock.c) feed it requests; the
 * module answers through api->route_reply (api.c). Loop thread only.
 *
 * Bounds: at most ROUTES_MAX routes in a process, max_in_flight pending
 * requests per route (and the admin listener's max_connections over
 * all). Pending requests are a list searched linearly: there are at most
 * a few hundred, and a search costs nothing next to the HTTP exchange. */
#ifndef PH_ROUTES_H
#define PH_ROUTES_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/host.h>

#include "buf.h"

#define ROUTES_MAX 64

typedef struct ph_routes ph_routes;

/* A request as the listener read it; copied by routes_dispatch. Lengths
 * exclude any NUL. authorization and content_type NULL when absent. */
typedef struct routes_in {
  const char *method;
  size_t method_len;
  const char *path;
  size_t path_len;
  const char *query;
  size_t query_len;
  const char *authorization;
  size_t authorization_len;
  const char *content_type;
  size_t content_type_len;
  const char *body;
  size_t body_len;
} routes_in;

/* The module's answer, once per dispatched request that was not
 * cancelled. type may be NULL. Runs on the loop thread; the bytes are
 * valid during the call only. */
typedef void (*routes_done_fn)(void *arg, int status, const char *type,
                               const char *body, size_t body_len);

ph_routes *routes_new(void);
/* Cancels every pending request (module cancel callbacks run), frees. */
void routes_free(ph_routes *r);
/* Cancels every pending request: before the modules are destroyed. */
void routes_cancel_all(ph_routes *r);

/* api->route_register's checks and registration. owner names the module
 * in errors and the log. PH_OK or a ph_status, with the reason in err. */
int routes_add(ph_routes *r, ph_ctx *ctx, const char *owner,
               const char *prefix, ph_route_fn fn, ph_route_cancel_fn cancel,
               void *arg, uint32_t max_in_flight, ph_buf *err);
/* Whether a route serves path. */
int routes_match(const ph_routes *r, const char *path, size_t len);
/* Hands the request to the route serving its path. Returns its id > 0
 * (done will run once, maybe before this returns, unless routes_cancel
 * is called first), 0 when no route serves the path, PH_EFULL when the
 * route has max_in_flight requests pending, PH_ENOMEM. */
int64_t routes_dispatch(ph_routes *r, const routes_in *in,
                        routes_done_fn done, void *arg);
/* The client went away or the deadline passed: calls the module's
 * cancel, drops the request; done will not run. Unknown id: nothing. */
void routes_cancel(ph_routes *r, int64_t id);
/* api->route_reply: PH_OK, PH_ENOENT, PH_EINVAL, PH_ENOMEM. */
int routes_reply(ph_routes *r, ph_ctx *ctx, int64_t id, int status,
                 const char *type, const char *body, size_t body_len);

#endif
