/* SPDX-License-Identifier: BSD-2-Clause */
#include "resolver.h"

#include <ares.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/bw.h"
#include "resolver_qcache.h"

/* One socket c-ares asked us to watch. */
typedef struct rsock {
  int fd;
  ph_io *io;
} rsock;

struct resolver {
  const ph_api *api;
  ph_ctx *ctx;
  ares_channel channel;
  int have_channel;
  int destroying;
  ph_timer *timer;
  rsock *socks;
  size_t n_socks, cap_socks;
  size_t n_abandoned;
  void (*on_release)(void *arg);
  void *release_arg;
};

struct resolver_query {
  resolver *r;
  resolver_cb cb;
  void *arg;
  uint16_t port;
  int abandoned;
  int in_lookup; /* inside ares_getaddrinfo */
  int finished;  /* the callback ran inside ares_getaddrinfo */
};

/* ---- servers --------------------------------------------------------- */

/* Splits "ip", "ip:port", "[ip6]", "[ip6]:port" or a bare IPv6 address.
 * Writes "ip:port" or "[ip6]:port" (port 53 when absent) to out. */
static int format_server(const char *item, char *out, size_t outlen) {
  char host[64];
  const char *port = NULL;
  size_t n = strlen(item);
  if (n == 0 || n >= sizeof(host) + 8)
    return -1;
  if (item[0] == '[') {
    const char *close = strchr(item, ']');
    if (!close || (size_t)(close - item - 1) >= sizeof(host))
      return -1;
    memcpy(host, item + 1, (size_t)(close - item - 1));
    host[close - item - 1] = '\0';
    if (close[1] == ':')
      port = close + 2;
    else if (close[1] != '\0')
      return -1;
  } else {
    const char *colon = strchr(item, ':');
    if (colon && !strchr(colon + 1, ':')) { /* exactly one ':': v4:port */
      if ((size_t)(colon - item) >= sizeof(host))
        return -1;
      memcpy(host, item, (size_t)(colon - item));
      host[colon - item] = '\0';
      port = colon + 1;
    } else {
      if (n >= sizeof(host))
        return -1;
      memcpy(host, item, n + 1);
    }
  }
  long p = 53;
  if (port) {
    char *end;
    if (*port < '0' || *port > '9' || strlen(port) > 5)
      return -1;
    p = strtol(port, &end, 10);
    if (*end || p < 1 || p > 65535)
      return -1;
  }
  unsigned char a[16];
  int len;
  if (inet_pton(AF_INET, host, a) == 1)
    len = snprintf(out, outlen, "%s:%ld", host, p);
  else if (inet_pton(AF_INET6, host, a) == 1)
    len = snprintf(out, outlen, "[%s]:%ld", host, p);
  else
    return -1;
  return len > 0 && (size_t)len < outlen ? 0 : -1;
}

/* format_server with a reason for the configuration error. */
static int server_entry(const char *item, char *out, size_t outlen,
                        char *why, size_t whylen) {
  if (item && format_server(item, out, outlen) == 0)
    return 0;
  snprintf(why, whylen, "\"%s\" is not a numeric ip[:port] or [ip6]:port",
           item ? item : "");
  return -1;
}

int resolver_check_server(const char *item, char *why, size_t whylen) {
  char one[96];
  return server_entry(item, one, sizeof(one), why, whylen);
}

/* ---- driving c-ares from the loop ------------------------------------ */

static void rearm(resolver *r) {
  if (r->destroying)
    return;
  struct timeval tv, *tvp = ares_timeout(r->channel, NULL, &tv);
  if (!tvp) {
    r->api->timer_set(r->timer, 0, 0);
    return;
  }
  /* Round up so the timer never fires before c-ares' deadline. */
  uint64_t ms =
      (uint64_t)tvp->tv_sec * 1000 + ((uint64_t)tvp->tv_usec + 999) / 1000;
  r->api->timer_set(r->timer, ms ? ms : 1, 0);
}

static void on_timer(ph_timer *t, void *arg) {
  (void)t;
  resolver *r = arg;
  ares_process_fd(r->channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
  rearm(r);
}

static void on_io(ph_io *io, int fd, int revents, void *arg) {
  (void)io; /* may be freed by c-ares' socket callback below */
  resolver *r = arg;
  ares_process_fd(r->channel, (revents & PH_READ) ? fd : ARES_SOCKET_BAD,
                  (revents & PH_WRITE) ? fd : ARES_SOCKET_BAD);
  rearm(r);
}

static rsock *find_sock(resolver *r, int fd) {
  for (size_t i = 0; i < r->n_socks; i++)
    if (r->socks[i].fd == fd)
      return &r->socks[i];
  return NULL;
}

/* c-ares opens, changes or closes (readable = writable = 0) a socket. */
static void on_sock_state(void *data, ares_socket_t fd, int readable,
                          int writable) {
  resolver *r = data;
  int events = (readable ? PH_READ : 0) | (writable ? PH_WRITE : 0);
  rsock *s = find_sock(r, fd);
  if (!events) {
    if (s) {
      r->api->io_free(s->io);
      *s = r->socks[--r->n_socks];
    }
    return;
  }
  if (s) {
    r->api->io_set(s->io, events);
    return;
  }
  if (r->n_socks == r->cap_socks) {
    size_t cap = r->cap_socks ? r->cap_socks * 2 : 4;
    rsock *n = realloc(r->socks, cap * sizeof(*n));
    if (!n)
      return; /* the query then times out */
    r->socks = n;
    r->cap_socks = cap;
  }
  ph_io *io = r->api->io_new(r->ctx, fd, events, on_io, r);
  if (io)
    r->socks[r->n_socks++] = (rsock){fd, io};
}

/* ---- lifecycle ------------------------------------------------------- */

static int set_servers(resolver *r, const resolver_opts *o, char *err,
                       size_t errlen) {
  char csv[RESOLVER_MAX_SERVERS * 64];
  ph_bw w;
  ph_bw_init(&w, csv, sizeof(csv), PH_BW_TEXT);
  for (size_t i = 0; i < o->n_servers; i++) {
    char one[96], why[160];
    if (server_entry(o->servers[i], one, sizeof(one), why, sizeof(why)) < 0) {
      snprintf(err, errlen, "resolver_servers: %s", why);
      return -1;
    }
    if ((i && ph_bw_putc(&w, ',') < 0) || ph_bw_puts(&w, one) < 0) {
      snprintf(err, errlen, "resolver_servers: too long");
      return -1;
    }
  }
  if (ares_set_servers_ports_csv(r->channel, csv) != ARES_SUCCESS) {
    snprintf(err, errlen, "resolver_servers: refused by c-ares");
    return -1;
  }
  return 0;
}

resolver *resolver_new(const ph_api *api, ph_ctx *ctx, const resolver_opts *o,
                       char *err, size_t errlen) {
  if (o->n_servers > RESOLVER_MAX_SERVERS) {
    snprintf(err, errlen, "resolver_servers: at most %d servers",
             RESOLVER_MAX_SERVERS);
    return NULL;
  }
  resolver *r = calloc(1, sizeof(*r));
  if (!r) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  r->api = api;
  r->ctx = ctx;
  r->on_release = o->on_release;
  r->release_arg = o->release_arg;
  r->timer = api->timer_new(ctx, on_timer, r);
  if (!r->timer || ares_library_init(ARES_LIB_INIT_ALL) != ARES_SUCCESS) {
    snprintf(err, errlen, "resolver initialisation failed");
    api->timer_free(r->timer);
    free(r);
    return NULL;
  }
  struct ares_options opt;
  memset(&opt, 0, sizeof(opt));
  int mask = ARES_OPT_SOCK_STATE_CB | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES;
  opt.sock_state_cb = on_sock_state;
  opt.sock_state_cb_data = r;
  opt.timeout = o->timeout_ms;
  opt.tries = o->tries;
  resolver_no_qcache(&opt, &mask); /* TM-PROTO-8 */
  if (o->n_servers > 0) {
    /* Listed servers are used as they are: no search domains. */
    mask |= ARES_OPT_DOMAINS | ARES_OPT_FLAGS;
    opt.flags = ARES_FLAG_NOSEARCH;
    opt.domains = NULL;
    opt.ndomains = 0;
  }
  int rc = ares_init_options(&r->channel, &opt, mask);
  if (rc != ARES_SUCCESS) {
    snprintf(err, errlen, "resolver initialisation failed (%s)",
             rc == ARES_ENOMEM ? "out of memory" : "configuration");
    resolver_free(r);
    return NULL;
  }
  r->have_channel = 1;
  if (o->n_servers > 0 && set_servers(r, o, err, errlen) < 0) {
    resolver_free(r);
    return NULL;
  }
  return r;
}

void resolver_free(resolver *r) {
  if (!r)
    return;
  r->destroying = 1;
  if (r->have_channel)
    ares_destroy(r->channel); /* ends every query: see on_answer */
  for (size_t i = 0; i < r->n_socks; i++)
    r->api->io_free(r->socks[i].io);
  free(r->socks);
  r->api->timer_free(r->timer);
  ares_library_cleanup();
  free(r);
}

/* ---- queries --------------------------------------------------------- */

static int map_status(int status) {
  switch (status) {
  case ARES_SUCCESS:
    return RESOLVER_OK;
  case ARES_ENOTFOUND:
  case ARES_ENODATA:
  case ARES_ENONAME:
    return RESOLVER_NXDOMAIN;
  case ARES_ESERVFAIL:
  case ARES_EREFUSED:
  case ARES_ECONNREFUSED:
  case ARES_EFORMERR:
  case ARES_EBADRESP:
  case ARES_ENOTIMP:
  case ARES_EOF:
  case ARES_EFILE:
    return RESOLVER_FAILURE;
  case ARES_ETIMEOUT:
    return RESOLVER_TIMEOUT;
  case ARES_EBADNAME:
  case ARES_EBADFAMILY:
  case ARES_EBADQUERY:
  case ARES_EBADHINTS:
  case ARES_ESERVICE:
    return RESOLVER_BADNAME;
  default:
    return RESOLVER_INTERNAL;
  }
}

static size_t copy_addrs(const struct ares_addrinfo *ai, uint16_t port,
                         struct sockaddr_storage *out) {
  size_t n = 0;
  for (const struct ares_addrinfo_node *a = ai ? ai->nodes : NULL;
       a && n < RESOLVER_MAX_ADDRS; a = a->ai_next) {
    if (a->ai_family == AF_INET &&
        a->ai_addrlen >= sizeof(struct sockaddr_in)) {
      struct sockaddr_in *s4 = (struct sockaddr_in *)&out[n];
      memset(&out[n], 0, sizeof(out[n]));
      memcpy(s4, a->ai_addr, sizeof(*s4));
      s4->sin_port = htons(port);
      n++;
    } else if (a->ai_family == AF_INET6 &&
               a->ai_addrlen >= sizeof(struct sockaddr_in6)) {
      struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&out[n];
      memset(&out[n], 0, sizeof(out[n]));
      memcpy(s6, a->ai_addr, sizeof(*s6));
      s6->sin6_port = htons(port);
      n++;
    }
  }
  return n;
}

static void on_answer(void *arg, int status, int timeouts,
                      struct ares_addrinfo *ai) {
  (void)timeouts;
  resolver_query *q = arg;
  resolver *r = q->r;
  if (q->abandoned || r->destroying) {
    int released = q->abandoned && !r->destroying;
    if (q->abandoned)
      r->n_abandoned--;
    if (ai)
      ares_freeaddrinfo(ai);
    free(q); /* a query cannot be abandoned inside resolver_lookup */
    if (released && r->on_release)
      r->on_release(r->release_arg);
    return;
  }
  struct sockaddr_storage addrs[RESOLVER_MAX_ADDRS];
  size_t n = status == ARES_SUCCESS ? copy_addrs(ai, q->port, addrs) : 0;
  if (ai)
    ares_freeaddrinfo(ai);
  int st = map_status(status);
  if (st == RESOLVER_OK && n == 0)
    st = RESOLVER_NXDOMAIN;
  q->cb(q->arg, st, addrs, n);
  if (q->in_lookup)
    q->finished = 1; /* resolver_lookup frees it */
  else
    free(q);
}

int resolver_lookup(resolver *r, const char *name, uint16_t port,
                    resolver_cb cb, void *arg, resolver_query **out) {
  resolver_query *q = calloc(1, sizeof(*q));
  if (!q)
    return -1;
  q->r = r;
  q->cb = cb;
  q->arg = arg;
  q->port = port;
  q->in_lookup = 1;
  *out = q;
  struct ares_addrinfo_hints hints;
  memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  ares_getaddrinfo(r->channel, name, NULL, &hints, on_answer, q);
  q->in_lookup = 0;
  if (q->finished)
    free(q);
  rearm(r);
  return 0;
}

void resolver_abandon(resolver_query *q) {
  if (!q || q->abandoned)
    return;
  q->abandoned = 1;
  q->r->n_abandoned++;
}

size_t resolver_abandoned(const resolver *r) { return r->n_abandoned; }
