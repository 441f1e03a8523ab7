/* SPDX-License-Identifier: BSD-2-Clause */
/* The admin HTTP listener: GET /metrics, /healthz, /readyz, the host's
 * status page (/ui/) and GET /v1/status (ui.h), and the modules' routes
 * under /v1/ (ABI 1.3: GET, POST, PATCH, DELETE, bodies
 * with Content-Length up to max_body). HTTP/1.0 and 1.1, one request per
 * connection, bounded request head and body, bounded connections, one
 * deadline per request and a shorter one to receive it; a slot held by a
 * client that is not being served goes to a new connection. */
#ifndef PH_ADMIN_H
#define PH_ADMIN_H

#include <sys/socket.h>

#include "buf.h"
#include "metrics.h"
#include "routes.h"
#include "ui.h"

struct ev_loop;
typedef struct ph_admin ph_admin;

/* Returns 1 when ready; otherwise writes one reason per line into why. */
typedef int (*admin_ready_fn)(void *arg, ph_buf *why);

typedef struct ph_admin_opts {
  const char *listen;        /* "127.0.0.1:9470", "[::1]:9470" */
  int max_connections;       /* concurrent clients; more are closed */
  int timeout_ms;            /* whole-request deadline */
  int header_timeout_ms;     /* whole request (head, body) received within;
                                0: timeout_ms only */
  size_t max_body;           /* a route request's body, bytes */
  ph_routes *routes;         /* modules' routes; NULL: none */
  ph_ui *ui; /* the host's /ui/ and /v1/status (ui.h); NULL: not served */
  ph_registry *registry;
  admin_ready_fn ready;
  void *ready_arg;
} ph_admin_opts;

/* Whether listen_on is a valid listen address, without binding: 0, or -1
 * with the reason in why. */
int admin_check_listen(const char *listen_on, char *why, size_t whylen);
/* Binds and listens. NULL with the reason in err. */
ph_admin *admin_start(struct ev_loop *loop, const ph_admin_opts *o,
                      ph_buf *err);
/* The bound port (useful with port 0). */
int admin_port(const ph_admin *a);
/* The bound address. 0 or -1. */
int admin_addr(const ph_admin *a, struct sockaddr_storage *ss,
               socklen_t *len);
/* Closes the listener and every client. */
void admin_stop(ph_admin *a);

#endif
