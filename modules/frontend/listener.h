/* SPDX-License-Identifier: BSD-2-Clause */
/* TCP listeners for frontends: parse "host:port" / "[v6]:port", bind with
 * SO_REUSEADDR (and SO_REUSEPORT when asked, to scale out with processes),
 * listen, accept in batches without blocking the loop, and enforce a
 * maximum number of concurrent clients (over it: accept and close at once,
 * counted). Announces the bound address on the bus (PH_LISTENER_TOPIC) so
 * connectors can refuse to dial it. Loop thread only. */
#ifndef PH_LISTENER_H
#define PH_LISTENER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <proxyhost/host.h>

typedef struct ph_listener ph_listener;

/* Called for each accepted, non-blocking, close-on-exec client socket with
 * TCP_NODELAY set. The callee owns fd and must call listener_release()
 * exactly once when it closes that client. */
typedef void (*listener_accept_fn)(void *arg, int fd,
                                   const struct sockaddr *peer,
                                   socklen_t peerlen);

typedef struct listener_opts {
  const char *address; /* "127.0.0.1:1080", "[::1]:1080", "0.0.0.0:0" */
  int backlog;         /* listen(2) backlog */
  int reuseport;       /* SO_REUSEPORT */
  int max_clients;     /* concurrent accepted clients */
  ph_topic *announce;  /* PH_LISTENER_TOPIC, or NULL */
  listener_accept_fn on_accept;
  void *arg;
  ph_series *refused_total; /* counter of max_clients refusals, or NULL */
} listener_opts;

/* A ph_module.check (ABI 1.1) for a module whose listen address is its
 * key "listen": use it as `.check = listener_check_listen`, or call it
 * from the module's own check. It uses api->parse_listen_addr, as
 * listener_open does. PH_OK, or PH_EINVAL with *key = "listen" and the
 * reason in why (e.g. "\"localhost:1080\": invalid address (...)"). */
int listener_check_listen(ph_ctx *ctx, const ph_api *api, const char **key,
                          char *why, size_t whylen);
/* Binds and listens (not accepting until listener_resume). NULL with a
 * one-line reason in err (no raw system text beyond strerror). */
ph_listener *listener_open(const ph_api *api, ph_ctx *ctx,
                           const listener_opts *o, char *err, size_t errlen);
/* Starts/stops accepting. Resume also announces the address once. */
void listener_resume(ph_listener *l);
void listener_pause(ph_listener *l);
/* One accepted client went away. */
void listener_release(ph_listener *l);
/* Accepted clients alive now, and clients refused by max_clients. */
int listener_clients(const ph_listener *l);
uint64_t listener_refused(const ph_listener *l);
/* The bound address (port resolved when 0 was asked). */
int listener_port(const ph_listener *l);
const struct sockaddr *listener_addr(const ph_listener *l, socklen_t *len);
/* Closes the socket (announcing bound=0) and frees. */
void listener_close(ph_listener *l);

#endif
