/* SPDX-License-Identifier: BSD-2-Clause */
/* TCP listeners for frontends (listener.h). */
#include "listener.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <proxyhost/connector.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LISTENER_BATCH 64     /* accepts per readiness event */
#define LISTENER_PAUSE_MS 100 /* out of fds or memory: wait this long */

struct ph_listener {
  const ph_api *api;
  ph_ctx *ctx;
  int fd;
  ph_io *io;
  ph_timer *pause_timer; /* resumes accepting after a resource pause */
  struct sockaddr_storage addr;
  socklen_t addrlen;
  int max_clients;
  int clients;
  uint64_t refused;
  ph_series *refused_total;
  ph_topic *announce;
  listener_accept_fn on_accept;
  void *arg;
  unsigned accepting : 1; /* resumed and not paused by the user */
  unsigned announced : 1;
  unsigned in_accept : 1; /* inside the accept loop */
  unsigned closing : 1;   /* listener_close from inside on_accept */
};

int listener_check_listen(ph_ctx *ctx, const ph_api *api, const char **key,
                          char *why, size_t whylen) {
  struct sockaddr_storage ss;
  socklen_t len;
  if (api->parse_listen_addr(api->conf_str(ctx, "listen"), &ss, &len, why,
                             whylen) == PH_OK)
    return PH_OK;
  *key = "listen";
  return PH_EINVAL;
}

static int addr_port(const struct sockaddr_storage *ss) {
  if (ss->ss_family == AF_INET6)
    return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
  return ntohs(((const struct sockaddr_in *)ss)->sin_port);
}

/* What to do about a bind that failed with e: who holds the port, or the
 * capability a low port needs. section names the listen key. */
static void bind_error(const listener_opts *o, const char *section,
                       const struct sockaddr_storage *ss, int e, char *err,
                       size_t errlen) {
  int port = addr_port(ss);
  if (e == EADDRINUSE)
    snprintf(err, errlen,
             "%s (%s.listen): address already in use; see who holds it: "
             "ss -ltnp 'sport = :%d'",
             o->address, section, port);
  else if (e == EACCES && port < 1024 && geteuid() != 0)
    snprintf(err, errlen,
             "%s (%s.listen): permission denied: a port below 1024 needs "
             "root or CAP_NET_BIND_SERVICE (or a lower "
             "net.ipv4.ip_unprivileged_port_start)",
             o->address, section);
  else
    snprintf(err, errlen, "%s (%s.listen): bind: %s", o->address, section,
             strerror(e));
}

static int bind_socket(const listener_opts *o, const char *section,
                       struct sockaddr_storage *ss, socklen_t *len, char *err,
                       size_t errlen) {
  int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    snprintf(err, errlen, "socket: %s", strerror(errno));
    return -1;
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  /* Set once here: Linux gives accepted sockets the listener's
   * TCP_NODELAY, which saves a setsockopt per client. */
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (o->reuseport &&
      setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0) {
    snprintf(err, errlen, "SO_REUSEPORT: %s", strerror(errno));
    close(fd);
    return -1;
  }
  if (bind(fd, (struct sockaddr *)ss, *len) < 0) {
    bind_error(o, section, ss, errno, err, errlen);
    close(fd);
    return -1;
  }
  if (listen(fd, o->backlog > 0 ? o->backlog : SOMAXCONN) < 0) {
    snprintf(err, errlen, "listen %s: %s", o->address, strerror(errno));
    close(fd);
    return -1;
  }
  *len = sizeof(*ss);
  if (getsockname(fd, (struct sockaddr *)ss, len) < 0) {
    snprintf(err, errlen, "getsockname: %s", strerror(errno));
    close(fd);
    return -1;
  }
  return fd;
}

static void announce(ph_listener *l, int bound) {
  if (!l->announce)
    return;
  ph_listener_event *ev = calloc(1, sizeof(*ev));
  if (!ev)
    return;
  ev->size = sizeof(*ev);
  ev->bound = bound;
  ev->addrlen = (uint32_t)l->addrlen;
  memcpy(ev->addr, &l->addr,
         l->addrlen < sizeof(ev->addr) ? l->addrlen : sizeof(ev->addr));
  l->api->publish(l->ctx, l->announce, ev, free);
}

static void free_listener(ph_listener *l) {
  l->api->io_free(l->io);
  l->api->timer_free(l->pause_timer);
  if (l->fd >= 0)
    close(l->fd);
  free(l);
}

/* Out of descriptors or memory: the listening socket would stay readable
 * and spin the loop, so stop accepting for a moment. */
static void pause_for_resources(ph_listener *l, int err) {
  l->api->io_set(l->io, 0);
  l->api->timer_set(l->pause_timer, LISTENER_PAUSE_MS, 0);
  PH_LOG_RL(l->api, l->ctx, PH_LOG_WARN,
            "accept paused: out of file descriptors or memory",
            PH_INT("errno", err), PH_INT("pause_ms", LISTENER_PAUSE_MS));
}

static void pause_done(ph_timer *t, void *arg) {
  (void)t;
  ph_listener *l = arg;
  if (l->accepting)
    l->api->io_set(l->io, PH_READ);
}

static void accept_cb(ph_io *io, int lfd, int revents, void *arg) {
  (void)io;
  (void)revents;
  ph_listener *l = arg;
  l->in_accept = 1;
  for (int i = 0; i < LISTENER_BATCH && l->accepting && !l->closing; i++) {
    struct sockaddr_storage peer;
    socklen_t plen = sizeof(peer);
    int fd = accept4(lfd, (struct sockaddr *)&peer, &plen,
                     SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED || errno == EPERM ||
          errno == EPROTO)
        continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
          errno == ENOMEM)
        pause_for_resources(l, errno);
      break;
    }
    if (l->clients >= l->max_clients) {
      close(fd); /* over max_clients: refuse at once, counted */
      l->refused++;
      if (l->refused_total)
        l->api->inc(l->refused_total, 1);
      PH_LOG_RL(l->api, l->ctx, PH_LOG_WARN,
                "max_clients reached: connection refused",
                PH_INT("max_clients", l->max_clients));
      continue;
    }
    l->clients++;
    l->on_accept(l->arg, fd, (struct sockaddr *)&peer, plen);
  }
  l->in_accept = 0;
  if (l->closing)
    free_listener(l);
}

ph_listener *listener_open(const ph_api *api, ph_ctx *ctx,
                           const listener_opts *o, char *err, size_t errlen) {
  if (!o || !o->on_accept || o->max_clients < 1) {
    snprintf(err, errlen, "listener: invalid options");
    return NULL;
  }
  ph_listener *l = calloc(1, sizeof(*l));
  if (!l) {
    snprintf(err, errlen, "listener: out of memory");
    return NULL;
  }
  l->api = api;
  l->ctx = ctx;
  l->fd = -1;
  l->max_clients = o->max_clients;
  l->announce = o->announce;
  l->refused_total = o->refused_total;
  l->on_accept = o->on_accept;
  l->arg = o->arg;
  char why[192];
  if (api->parse_listen_addr(o->address, &l->addr, &l->addrlen, why,
                             sizeof(why)) != PH_OK) {
    snprintf(err, errlen, "listen address %s", why);
    goto fail;
  }
  l->fd = bind_socket(o, api->module_name(ctx), &l->addr, &l->addrlen, err,
                      errlen);
  if (l->fd < 0)
    goto fail;
  l->io = api->io_new(ctx, l->fd, 0, accept_cb, l);
  l->pause_timer = api->timer_new(ctx, pause_done, l);
  if (!l->io || !l->pause_timer) {
    snprintf(err, errlen, "listener: out of memory");
    goto fail;
  }
  return l;
fail:
  free_listener(l);
  return NULL;
}

void listener_resume(ph_listener *l) {
  if (!l || l->closing)
    return;
  if (!l->announced) {
    l->announced = 1;
    announce(l, 1);
  }
  l->accepting = 1;
  l->api->io_set(l->io, PH_READ);
}

void listener_pause(ph_listener *l) {
  if (!l)
    return;
  l->accepting = 0;
  l->api->io_set(l->io, 0);
  l->api->timer_set(l->pause_timer, 0, 0);
}

void listener_release(ph_listener *l) {
  if (l && l->clients > 0)
    l->clients--;
}

int listener_clients(const ph_listener *l) { return l ? l->clients : 0; }

uint64_t listener_refused(const ph_listener *l) { return l ? l->refused : 0; }

int listener_port(const ph_listener *l) {
  if (!l)
    return -1;
  if (l->addr.ss_family == AF_INET)
    return ntohs(((const struct sockaddr_in *)&l->addr)->sin_port);
  return ntohs(((const struct sockaddr_in6 *)&l->addr)->sin6_port);
}

const struct sockaddr *listener_addr(const ph_listener *l, socklen_t *len) {
  if (!l)
    return NULL;
  if (len)
    *len = l->addrlen;
  return (const struct sockaddr *)&l->addr;
}

void listener_close(ph_listener *l) {
  if (!l || l->closing)
    return;
  listener_pause(l);
  if (l->announced)
    announce(l, 0);
  if (l->in_accept) {
    l->closing = 1; /* accept_cb frees it on the way out */
    return;
  }
  free_listener(l);
}
