/* SPDX-License-Identifier: BSD-2-Clause */
/* The controller's front door: cp_grpc_front.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cp_grpc_front.h"
#include "lib/ilist.h"
#include "frontend/listener.h"
#include "frontend/relay.h"

/* The listener's own cap on all connections: the pending ones are what
 * this file bounds; an authenticated one is a worker's. */
#define FRONT_MAX_CLIENTS (1 << 20)

typedef struct conn conn;
struct conn {
  cp_front *f;
  ilist_node node; /* in f->conns */
  ph_relay *relay;
  ph_timer *timer; /* pending_ms; NULL once a call came */
  int inner_port;  /* the relay's local port towards gRPC */
};

struct cp_front {
  ph_ctx *ctx;
  const ph_api *api;
  cp_front_cfg cfg;
  ph_listener *l;
  ilist conns;
  int n_pending;
};

static void pending_done(conn *c) {
  cp_front *f = c->f;
  if (!c->timer)
    return;
  f->api->timer_free(c->timer);
  c->timer = NULL;
  f->n_pending--;
  if (f->cfg.m_pending)
    f->api->gauge_add(f->cfg.m_pending, -1);
}

/* The relay is gone (ended or aborted): everything else goes. */
static void conn_free(conn *c) {
  pending_done(c);
  ilist_remove(&c->node);
  listener_release(c->f->l);
  free(c);
}

static void relay_done(void *arg, const relay_stats *st, int end) {
  (void)st;
  (void)end;
  conn_free(arg);
}

static void on_timeout(ph_timer *t, void *arg) {
  conn *c = arg;
  cp_front *f = c->f;
  (void)t;
  if (f->cfg.m_dropped_timeout)
    f->api->inc(f->cfg.m_dropped_timeout, 1);
  PH_LOG_RL(f->api, f->ctx, PH_LOG_WARN,
            "a connection carried no call within grpc.handshake_timeout: "
            "closed",
            PH_INT("timeout_ms", f->cfg.pending_ms));
  relay_abort(c->relay); /* closes both ends; relay_done is not called */
  conn_free(c);
}

/* A non-blocking socket connecting to gRPC's listener, and its local
 * port (what gRPC names as the call's peer). -1 on failure. */
static int dial_inner(int port, int *local_port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  struct sockaddr_in a;
  memset(&a, 0, sizeof(a));
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  /* On loopback the connect completes at once or soon; the relay's
   * writes wait for it (EAGAIN until then). */
  if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 &&
      errno != EINPROGRESS) {
    close(fd);
    return -1;
  }
  struct sockaddr_in me;
  socklen_t len = sizeof(me);
  if (getsockname(fd, (struct sockaddr *)&me, &len) < 0) {
    close(fd);
    return -1;
  }
  *local_port = ntohs(me.sin_port);
  return fd;
}

static void on_accept(void *arg, int fd, const struct sockaddr *peer,
                      socklen_t peerlen) {
  cp_front *f = arg;
  (void)peer;
  (void)peerlen;
  if (f->n_pending >= f->cfg.max_pending) {
    close(fd);
    listener_release(f->l);
    if (f->cfg.m_dropped_limit)
      f->api->inc(f->cfg.m_dropped_limit, 1);
    PH_LOG_RL(f->api, f->ctx, PH_LOG_WARN,
              "too many unauthenticated connections: one more closed",
              PH_INT("max_unauthenticated_connections", f->cfg.max_pending));
    return;
  }
  conn *c = calloc(1, sizeof(*c));
  int inner = c ? dial_inner(f->cfg.inner_port, &c->inner_port) : -1;
  if (c)
    c->timer = f->api->timer_new(f->ctx, on_timeout, c);
  if (inner < 0 || !c->timer) {
    if (inner >= 0)
      close(inner);
    if (c && c->timer)
      f->api->timer_free(c->timer);
    free(c);
    close(fd);
    listener_release(f->l);
    PH_LOG_RL(f->api, f->ctx, PH_LOG_ERROR,
              "cannot relay a connection to gRPC's listener: closed",
              PH_INT("inner_port", f->cfg.inner_port));
    return;
  }
  c->f = f;
  ilist_push_front(&f->conns, &c->node);
  f->n_pending++;
  if (f->cfg.m_pending)
    f->api->gauge_add(f->cfg.m_pending, 1);
  f->api->timer_set(c->timer, (uint64_t)f->cfg.pending_ms, 0);
  relay_opts o;
  memset(&o, 0, sizeof(o));
  o.buffer_size = 64 * 1024;
  o.use_splice = 1;
  o.done = relay_done;
  o.arg = c;
  c->relay = relay_start(f->api, f->ctx, end_fd(fd), end_fd(inner), NULL, 0,
                         &o);
  if (!c->relay) /* both ends closed already */
    conn_free(c);
}

cp_front *cp_front_new(ph_ctx *ctx, const ph_api *api, const cp_front_cfg *cfg,
                       char *err, size_t errlen) {
  cp_front *f = calloc(1, sizeof(*f));
  if (!f) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  f->ctx = ctx;
  f->api = api;
  ilist_init(&f->conns);
  f->cfg = *cfg;
  listener_opts lo;
  memset(&lo, 0, sizeof(lo));
  lo.address = cfg->listen;
  lo.backlog = 1024;
  lo.max_clients = FRONT_MAX_CLIENTS;
  lo.on_accept = on_accept;
  lo.arg = f;
  f->l = listener_open(api, ctx, &lo, err, errlen);
  if (!f->l) {
    free(f);
    return NULL;
  }
  listener_resume(f->l);
  return f;
}

int cp_front_port(const cp_front *f) { return listener_port(f->l); }

void cp_front_call_seen(cp_front *f, const char *peer) {
  const char *colon = peer ? strrchr(peer, ':') : NULL;
  if (!f || !colon || strncmp(peer, "ipv4:127.0.0.1:", 15) != 0)
    return;
  int port = atoi(colon + 1);
  ILIST_FOREACH_SAFE(&f->conns, it, nx) {
    conn *c = ILIST_ENTRY(it, conn, node);
    if (c->timer && c->inner_port == port) {
      pending_done(c);
      return;
    }
  }
}

void cp_front_free(cp_front *f) {
  if (!f)
    return;
  while (!ilist_empty(&f->conns)) {
    conn *c = ILIST_ENTRY(ilist_first(&f->conns), conn, node);
    relay_abort(c->relay);
    conn_free(c);
  }
  listener_close(f->l);
  free(f);
}
