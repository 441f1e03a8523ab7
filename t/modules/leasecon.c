/* SPDX-License-Identifier: BSD-2-Clause */
/* leasecon: a test connector that hands out leases (connector.h minor 3)
 * and tells what its callers did with them, so that a test sees whether
 * the frontends honour the contract the pool relies on (issue 13;
 * t/integration/frontend_lease.sh).
 *
 * It dials 127.0.0.1:port itself (a non-blocking connect watched with a
 * ph_io) and answers with the socket and a lease; any other host is
 * refused (stage policy, forbidden). A request without PH_OPEN_F_LEASE
 * is answered stage protocol, unsupported_capability, as the pool
 * answers it. Never inside open(): every answer comes from the loop.
 * It is written against connector 1.4's fields (PH_OPEN_F_LEASE,
 * ph_open_result.lease) on purpose, and stays so, its results of SDK
 * 1.6's size: the frontends ask by the extension since connector 1.5
 * (open_lease.h), and frontend_lease.sh proves that a connector built
 * before it still gets their leases honoured.
 *
 * What a lease hears is counted:
 *   proxyhost_leasecon_leases            gauge, leases not ended yet
 *   proxyhost_leasecon_leases_total      leases given
 *   proxyhost_leasecon_first_byte_total  first_byte calls
 *   proxyhost_leasecon_end_total{how}    end calls, by enum ph_lease_end
 *   proxyhost_leasecon_unsupported_total requests without the flag
 * and GET /v1/leasecon answers the same as JSON, with the last request's
 * listener and the value of the request header the `header` key names
 * (null when the request had none), read through ph_open_headers during
 * open() as the pool does.
 *
 * A broken contract aborts the process, as memconn does: a second
 * first_byte, an unknown how, or a call on an ended lease (ended leases
 * stay on a bounded quarantine with ops that abort, so a second end is
 * caught without a sanitizer). Leases never ended are logged at destroy.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <proxyhost/connector.h>
#include <proxyhost/module.h>

#define LC_MAX_OPENS 64     /* opens in progress at once */
#define LC_QUARANTINE 256   /* ended leases kept to catch a second call */
#define LC_TEXT_MAX 255     /* listener and header value kept */

typedef struct leasecon leasecon;

typedef struct lc_lease {
  ph_open_lease base; /* first: ph_open_lease * casts to lc_lease * */
  leasecon *lc;
  struct lc_lease *prev, *next; /* live list, or quarantine order */
  unsigned first : 1;
} lc_lease;

typedef struct lc_open {
  leasecon *lc;
  int64_t id; /* 0: a free slot */
  ph_open_cb cb;
  void *arg;
  int fd;
  ph_io *io;
  int stage, code; /* an answer decided at open (ready) */
  int want_lease;
  unsigned ready : 1; /* answered by the next timer run */
} lc_open;

struct leasecon {
  ph_ctx *ctx;
  char header[65]; /* the request header shown by the route */
  lc_open opens[LC_MAX_OPENS];
  int64_t next_id;
  ph_timer *answer;
  lc_lease *live; /* leases not ended */
  lc_lease *quarantine[LC_QUARANTINE];
  size_t q_next, q_len;
  uint64_t given, live_n, first_bytes, unsupported;
  uint64_t ends[PH_LEASE_END_CLIENT_ERROR + 1];
  char listener[LC_TEXT_MAX + 1], value[LC_TEXT_MAX + 1];
  int has_listener, has_value;
  ph_series *m_live, *m_given, *m_first, *m_unsupported;
  ph_series *m_end[PH_LEASE_END_CLIENT_ERROR + 1];
};

static const ph_api *api;

static const char *const how_names[] = {"closed", "target_error", "timeout",
                                        "client_error", NULL};

static const ph_conf_key keys[] = {
    PH_CONF_KEY("header", PH_CONF_STRING, "X-Session", 1, 64, 0, NULL,
                "the request header whose value GET /v1/leasecon shows",
                NULL),
    PH_CONF_END};

/* ---- leases ------------------------------------------------------------ */

static void dead_first_byte(ph_open_lease *l) {
  (void)l;
  abort(); /* first_byte on an ended lease */
}

static void dead_end(ph_open_lease *l, int how) {
  (void)l;
  (void)how;
  abort(); /* a second end */
}

static const ph_open_lease_ops dead_ops = {.size = sizeof(ph_open_lease_ops),
                                           .first_byte = dead_first_byte,
                                           .end = dead_end};

static void lc_first_byte(ph_open_lease *l) {
  lc_lease *e = (lc_lease *)l;
  if (e->first)
    abort(); /* at most once */
  e->first = 1;
  e->lc->first_bytes++;
  api->inc(e->lc->m_first, 1);
}

static void unlink_live(lc_lease *e) {
  leasecon *lc = e->lc;
  if (e->prev)
    e->prev->next = e->next;
  else
    lc->live = e->next;
  if (e->next)
    e->next->prev = e->prev;
  e->prev = e->next = NULL;
}

static void lc_end(ph_open_lease *l, int how) {
  lc_lease *e = (lc_lease *)l;
  leasecon *lc = e->lc;
  if (how < PH_LEASE_END_CLOSED || how > PH_LEASE_END_CLIENT_ERROR)
    abort(); /* not an enum ph_lease_end */
  unlink_live(e);
  lc->live_n--;
  lc->ends[how]++;
  api->gauge_add(lc->m_live, -1);
  api->inc(lc->m_end[how], 1);
  /* Kept a while, answering every call with abort. */
  e->base.ops = &dead_ops;
  if (lc->q_len == LC_QUARANTINE)
    free(lc->quarantine[lc->q_next]);
  else
    lc->q_len++;
  lc->quarantine[lc->q_next] = e;
  lc->q_next = (lc->q_next + 1) % LC_QUARANTINE;
}

static const ph_open_lease_ops lease_ops = {.size = sizeof(ph_open_lease_ops),
                                            .first_byte = lc_first_byte,
                                            .end = lc_end};

static lc_lease *new_lease(leasecon *lc) {
  lc_lease *e = calloc(1, sizeof(*e));
  if (!e)
    return NULL;
  e->base.ops = &lease_ops;
  e->lc = lc;
  e->next = lc->live;
  if (lc->live)
    lc->live->prev = e;
  lc->live = e;
  lc->live_n++;
  lc->given++;
  api->gauge_add(lc->m_live, 1);
  api->inc(lc->m_given, 1);
  return e;
}

/* ---- answering --------------------------------------------------------- */

static void release(lc_open *o) {
  api->io_free(o->io);
  o->io = NULL;
  if (o->fd >= 0)
    close(o->fd);
  o->fd = -1;
  o->id = 0;
}

/* Answers o and frees its slot; the callback is the last use. The result
 * has SDK 1.6's size (it ends before ext, connector 1.5), as a
 * connector built against 1.6 answers; the bytes beyond it are garbage,
 * which a caller must not read. */
static void answer(leasecon *lc, lc_open *o, int stage, int code) {
  ph_open_result res = {.size = offsetof(ph_open_result, ext),
                        .stage = stage, .code = code, .fd = -1,
                        .ext = (const ph_open_ext *)(uintptr_t)1};
  if (code == PH_OPEN_OK) {
    lc_lease *e = o->want_lease ? new_lease(lc) : NULL;
    if (o->want_lease && !e) {
      res.stage = PH_STAGE_PROTOCOL;
      res.code = PH_OPEN_INTERNAL_ERROR;
    } else {
      res.fd = o->fd; /* the caller's now */
      o->fd = -1;
      res.lease = e ? &e->base : NULL;
    }
  }
  ph_open_cb cb = o->cb;
  void *arg = o->arg;
  release(o);
  cb(arg, &res);
}

static void answer_cb(ph_timer *t, void *arg) {
  (void)t;
  leasecon *lc = arg;
  for (int i = 0; i < LC_MAX_OPENS; i++) {
    lc_open *o = &lc->opens[i];
    if (o->id && o->ready)
      answer(lc, o, o->stage, o->code);
  }
}

/* The non-blocking connect finished one way or the other. */
static void dial_cb(ph_io *io, int fd, int revents, void *arg) {
  (void)io;
  (void)revents;
  lc_open *o = arg;
  int err = 0;
  socklen_t len = sizeof(err);
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
    err = errno;
  if (err == 0)
    answer(o->lc, o, PH_STAGE_NONE, PH_OPEN_OK);
  else
    answer(o->lc, o, PH_STAGE_CONNECT, PH_OPEN_CONNECTION_REFUSED);
}

/* Decided now, answered from the loop. */
static void answer_later(leasecon *lc, lc_open *o, int stage, int code) {
  o->stage = stage;
  o->code = code;
  o->ready = 1;
  api->timer_set(lc->answer, 1, 0);
}

/* Starts the connect to 127.0.0.1:port; a failure is answered later. */
static void dial(leasecon *lc, lc_open *o, uint16_t port) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  o->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (o->fd < 0) {
    answer_later(lc, o, PH_STAGE_CONNECT, PH_OPEN_INTERNAL_ERROR);
    return;
  }
  if (connect(o->fd, (struct sockaddr *)&a, sizeof(a)) == 0) {
    answer_later(lc, o, PH_STAGE_NONE, PH_OPEN_OK);
    return;
  }
  if (errno != EINPROGRESS) {
    answer_later(lc, o, PH_STAGE_CONNECT, PH_OPEN_CONNECTION_REFUSED);
    return;
  }
  o->io = api->io_new(lc->ctx, o->fd, PH_WRITE, dial_cb, o);
  if (!o->io)
    answer_later(lc, o, PH_STAGE_CONNECT, PH_OPEN_INTERNAL_ERROR);
}

/* Keeps a copy of s (n bytes), bounded, as the route's text. */
static void keep(char *out, int *has, const char *s, size_t n) {
  *has = s != NULL;
  if (!s)
    n = 0;
  if (n > LC_TEXT_MAX)
    n = LC_TEXT_MAX;
  if (n)
    memcpy(out, s, n);
  out[n] = '\0';
}

/* What the request tells about itself, read during open() only. */
static void note_request(leasecon *lc, const ph_open_request *rq) {
  int has3 = rq->size >= offsetof(ph_open_request, headers) +
                             sizeof(rq->headers);
  const char *l = has3 ? rq->listener : NULL;
  keep(lc->listener, &lc->has_listener, l, l ? strlen(l) : 0);
  const char *v = NULL;
  size_t vlen = 0;
  if (has3 && rq->headers && rq->headers->get)
    v = rq->headers->get(rq->headers->arg, lc->header, &vlen);
  keep(lc->value, &lc->has_value, v, vlen);
}

static int64_t lc_open_fn(void *self, const ph_open_request *rq,
                          ph_open_cb cb, void *arg) {
  leasecon *lc = self;
  if (!rq || !cb || !rq->host || rq->port == 0 ||
      rq->protocol != PH_PROTO_TCP)
    return PH_EINVAL;
  lc_open *o = NULL;
  for (int i = 0; i < LC_MAX_OPENS && !o; i++)
    if (!lc->opens[i].id)
      o = &lc->opens[i];
  note_request(lc, rq);
  if (!o)
    return PH_ENOMEM; /* bounded: the caller fails this request */
  *o = (lc_open){.lc = lc, .id = ++lc->next_id, .cb = cb, .arg = arg,
                 .fd = -1};
  int flags_known = rq->size >= offsetof(ph_open_request, flags) +
                                    sizeof(rq->flags);
  o->want_lease = flags_known && (rq->flags & PH_OPEN_F_LEASE);
  if (!o->want_lease) {
    lc->unsupported++;
    api->inc(lc->m_unsupported, 1);
    answer_later(lc, o, PH_STAGE_PROTOCOL, PH_OPEN_UNSUPPORTED_CAPABILITY);
  } else if (strcmp(rq->host, "127.0.0.1") != 0) {
    answer_later(lc, o, PH_STAGE_POLICY, PH_OPEN_FORBIDDEN);
  } else {
    dial(lc, o, rq->port);
  }
  return o->id;
}

static int lc_cancel(void *self, int64_t id) {
  leasecon *lc = self;
  for (int i = 0; i < LC_MAX_OPENS; i++)
    if (id > 0 && lc->opens[i].id == id) {
      release(&lc->opens[i]);
      return PH_OK;
    }
  return PH_ENOENT;
}

static const ph_connector_v1 vt = {lc_open_fn, lc_cancel};

/* ---- the route ---------------------------------------------------------- */

/* s as a JSON string (bytes outside printable ASCII escaped), or null. */
static size_t json_text(char *out, size_t cap, const char *s, int has) {
  size_t n = 0;
  if (!has)
    return (size_t)snprintf(out, cap, "null");
  out[n++] = '"';
  for (const unsigned char *p = (const unsigned char *)s; *p && n + 8 < cap;
       p++) {
    if (*p == '"' || *p == '\\')
      n += (size_t)snprintf(out + n, cap - n, "\\%c", *p);
    else if (*p < 0x20 || *p > 0x7e)
      n += (size_t)snprintf(out + n, cap - n, "\\u%04x", *p);
    else
      out[n++] = (char)*p;
  }
  out[n++] = '"';
  out[n] = '\0';
  return n;
}

static void route_handle(void *arg, int64_t id, const ph_http_request *r) {
  leasecon *lc = arg;
  if (strcmp(r->method, "GET") != 0) {
    api->route_reply(lc->ctx, id, 405, "text/plain", "GET only\n", 9);
    return;
  }
  char listener[LC_TEXT_MAX * 6 + 8], value[LC_TEXT_MAX * 6 + 8];
  json_text(listener, sizeof(listener), lc->listener, lc->has_listener);
  json_text(value, sizeof(value), lc->value, lc->has_value);
  char body[4096];
  int n = snprintf(
      body, sizeof(body),
      "{\"leases\":%llu,\"given\":%llu,\"first_byte\":%llu,"
      "\"end\":{\"closed\":%llu,\"target_error\":%llu,\"timeout\":%llu,"
      "\"client_error\":%llu},\"unsupported\":%llu,\"listener\":%s,"
      "\"header\":%s}\n",
      (unsigned long long)lc->live_n, (unsigned long long)lc->given,
      (unsigned long long)lc->first_bytes,
      (unsigned long long)lc->ends[PH_LEASE_END_CLOSED],
      (unsigned long long)lc->ends[PH_LEASE_END_TARGET_ERROR],
      (unsigned long long)lc->ends[PH_LEASE_END_TIMEOUT],
      (unsigned long long)lc->ends[PH_LEASE_END_CLIENT_ERROR],
      (unsigned long long)lc->unsupported, listener, value);
  if (n < 0 || (size_t)n >= sizeof(body)) {
    api->route_reply(lc->ctx, id, 500, "text/plain", "too long\n", 9);
    return;
  }
  api->route_reply(lc->ctx, id, 200, "application/json", body, (size_t)n);
}

static void route_cancel(void *arg, int64_t id) {
  (void)arg;
  (void)id; /* answered inside the handler: nothing in flight */
}

/* ---- lifecycle ----------------------------------------------------------- */

static ph_series *plain(ph_ctx *ctx, const char *name, const char *help,
                        ph_metric_type type) {
  ph_metric_def d = {name, help, type, NULL, 0, NULL, 0};
  ph_metric *m = api->metric(ctx, &d);
  return m ? api->series(m, NULL) : NULL;
}

static const ph_label_def how_label[] = {{"how", how_names}};
static const ph_metric_def end_def = {
    "proxyhost_leasecon_end_total",
    "leasecon leases ended, by how their caller said they ended",
    PH_METRIC_COUNTER, how_label, 1, NULL, 0};

static int lc_init(ph_ctx *ctx, const ph_api *a, void **state) {
  api = a;
  leasecon *lc = calloc(1, sizeof(*lc));
  if (!lc)
    return PH_ENOMEM;
  *state = lc;
  lc->ctx = ctx;
  snprintf(lc->header, sizeof(lc->header), "%s", a->conf_str(ctx, "header"));
  lc->answer = a->timer_new(ctx, answer_cb, lc);
  lc->m_live = plain(ctx, "proxyhost_leasecon_leases",
                     "leasecon leases given and not ended yet",
                     PH_METRIC_GAUGE);
  lc->m_given = plain(ctx, "proxyhost_leasecon_leases_total",
                      "leasecon leases given", PH_METRIC_COUNTER);
  lc->m_first = plain(ctx, "proxyhost_leasecon_first_byte_total",
                      "leasecon leases told the target's first byte reached "
                      "the client",
                      PH_METRIC_COUNTER);
  lc->m_unsupported =
      plain(ctx, "proxyhost_leasecon_unsupported_total",
            "leasecon opens refused: the caller does not honour leases",
            PH_METRIC_COUNTER);
  ph_metric *m = a->metric(ctx, &end_def);
  for (int h = 0; m && h <= PH_LEASE_END_CLIENT_ERROR; h++) {
    const char *v = how_names[h];
    lc->m_end[h] = a->series(m, &v);
  }
  if (!lc->answer || !lc->m_live || !lc->m_given || !lc->m_first ||
      !lc->m_unsupported || !m || !lc->m_end[PH_LEASE_END_CLIENT_ERROR])
    return PH_EINVAL;
  int r = a->route_register(ctx, "/v1/leasecon", route_handle, route_cancel,
                            lc, 8);
  if (r != PH_OK)
    return r;
  return a->service_register(ctx, PH_CONNECTOR_SERVICE, PH_CONNECTOR_MAJOR,
                             PH_CONNECTOR_MINOR, &vt, lc);
}

/* After its users (the host destroys users first): what is left was never
 * ended by them. */
static void lc_destroy(void *state) {
  leasecon *lc = state;
  if (!lc)
    return;
  for (int i = 0; i < LC_MAX_OPENS; i++)
    if (lc->opens[i].id)
      release(&lc->opens[i]);
  if (lc->live_n)
    PH_LOG(api, lc->ctx, PH_LOG_ERROR, "leasecon: leases never ended",
           PH_UINT("leases", lc->live_n));
  while (lc->live) {
    lc_lease *e = lc->live;
    unlink_live(e);
    free(e);
  }
  for (size_t i = 0; i < lc->q_len; i++)
    free(lc->quarantine[i]);
  if (lc->answer)
    api->timer_free(lc->answer);
  free(lc);
}

static const char *const provides[] = {PH_CONNECTOR_SERVICE, NULL};

PROXYHOST_MODULE = {
    PH_MODULE_HEADER("leasecon", "1.0.0"),
    .description = "test connector: dials 127.0.0.1 and counts what its "
                   "callers tell its leases",
    .provides = provides,
    .config = keys,
    .init = lc_init,
    .destroy = lc_destroy,
};
