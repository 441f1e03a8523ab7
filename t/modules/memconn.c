/* SPDX-License-Identifier: BSD-2-Clause */
/* memconn: a test connector whose streams are in-memory queues with a
 * window (stream.h), the way a tunnel's streams are: no socket, a bounded
 * queue each way, and a receive window that reopens only as the user
 * consumes. It proves that the frontends and the relay drive streams
 * (t/unit/frontend/test_streams.c, t/integration/streams.sh).
 *
 * Targets (the host name; the port is ignored unless said):
 *   echo.mem    sends back what it gets; EOF after the user's shutdown
 *   source.mem  sends `port` KiB of a pattern (byte i is i % 251), then
 *               EOF; discards what it gets
 *   http.mem    reads a request head, answers HTTP/1.1 200 with `port`
 *               KiB of the pattern (Content-Length), then EOF
 *   reset.mem   resets the stream at the user's first write
 *   anything else: connection_refused. A request that does not take
 *   streams (no PH_OPEN_F_STREAM): unsupported_capability.
 *
 * Metrics tell the tests what happened: memconn_streams (open now),
 * memconn_streams_closed_total, and memconn_queue_max_bytes, the most any
 * queue ever held (never above `window`). A second close of a stream, or
 * a call on a closed one, aborts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <proxyhost/connector.h>
#include <proxyhost/module.h>
#include <proxyhost/stream.h>

enum kind { K_ECHO = 1, K_SOURCE, K_HTTP, K_RESET };

typedef struct mconn mconn;

typedef struct mstream {
  ph_stream base; /* first: ph_stream * casts to mstream * */
  mconn *m;
  int kind;
  char *up, *down; /* user -> target, target -> user; window bytes each */
  size_t up_len, down_len;
  uint64_t source_left; /* K_SOURCE, K_HTTP: pattern bytes still to send */
  uint64_t sent;        /* pattern bytes queued so far */
  size_t head_seen;     /* K_HTTP: bytes of "\r\n\r\n" matched */
  int want;
  ph_stream_fn fn;
  void *arg;
  ph_timer *kick;
  unsigned user_shut : 1; /* the user shut its side down */
  unsigned down_eof : 1;  /* the target finished sending */
  unsigned reset : 1;
  unsigned answered : 1; /* K_HTTP: the response head is queued */
  unsigned in_cb : 1;    /* the user's callback runs */
  unsigned closed : 1;   /* the user closed it (freed on the way out) */
} mstream;

typedef struct pending_open {
  int64_t id;
  ph_open_cb cb;
  void *arg;
  int code, kind;
  uint64_t kib;
  int live;
} pending_open;

#define MAX_OPENS 64

struct mconn {
  ph_ctx *ctx;
  size_t window;
  ph_timer *answer; /* answers opens on the next loop turn */
  pending_open opens[MAX_OPENS];
  int64_t next_id;
  ph_series *m_open, *m_closed, *m_qmax;
  size_t qmax;
};

static const ph_api *api;

static const ph_conf_key keys[] = {
    PH_CONF_KEY("window", PH_CONF_SIZE, "16KiB", 1, 1 << 20, 0, NULL,
     "capacity of each direction's queue of a stream", NULL),
    PH_CONF_END};

/* ---- the stream ----------------------------------------------------- */

static mstream *ms(ph_stream *s) {
  mstream *m = (mstream *)s;
  if (m->closed)
    abort(); /* a call on a closed stream */
  return m;
}

static void note_queue(mstream *s, size_t len) {
  if (len > s->m->window)
    abort(); /* a queue above its window: the bound is broken */
  if (len > s->m->qmax) {
    s->m->qmax = len;
    api->gauge_set(s->m->m_qmax, (double)len);
  }
}

/* Level-triggered events: asked for on the next loop turn whenever the
 * state changed, and again after each callback while they hold. */
static void arm(mstream *s) { api->timer_set(s->kick, 1, 0); }

static unsigned char pattern(uint64_t i) { return (unsigned char)(i % 251); }

/* Queues what the target sends next: echo moves up to down, a source
 * refills down with the pattern. */
static void run_target(mstream *s) {
  size_t room = s->m->window - s->down_len;
  if (s->kind == K_ECHO) {
    size_t n = s->up_len < room ? s->up_len : room;
    memcpy(s->down + s->down_len, s->up, n);
    s->down_len += n;
    memmove(s->up, s->up + n, s->up_len - n);
    s->up_len -= n;
    if (s->user_shut && s->up_len == 0)
      s->down_eof = 1;
  } else if (s->kind == K_SOURCE || (s->kind == K_HTTP && s->answered)) {
    size_t n = s->source_left < room ? (size_t)s->source_left : room;
    for (size_t i = 0; i < n; i++)
      s->down[s->down_len + i] = (char)pattern(s->sent + i);
    s->down_len += n;
    s->sent += n;
    s->source_left -= n;
    if (s->source_left == 0)
      s->down_eof = 1;
  }
  note_queue(s, s->down_len);
}

static void free_stream(mstream *s) {
  api->timer_free(s->kick);
  free(s->up);
  free(s->down);
  free(s);
}

static void kick_cb(ph_timer *t, void *arg) {
  (void)t;
  mstream *s = arg;
  int ev = 0;
  if ((s->want & PH_READ) && (s->down_len || s->down_eof || s->reset))
    ev |= PH_READ;
  if ((s->want & PH_WRITE) &&
      (s->reset || (!s->user_shut && s->up_len < s->m->window)))
    ev |= PH_WRITE;
  if (!ev || !s->fn)
    return;
  s->in_cb = 1;
  s->fn(&s->base, ev, s->arg);
  s->in_cb = 0;
  if (s->closed) {
    free_stream(s); /* closed inside the callback */
    return;
  }
  arm(s); /* level-triggered: again if it still holds */
}

static void m_watch(ph_stream *st, int events, ph_stream_fn fn, void *arg) {
  mstream *s = ms(st);
  s->want = events;
  s->fn = fn;
  s->arg = arg;
  arm(s);
}

static ssize_t m_peek(ph_stream *st, const void **data) {
  mstream *s = ms(st);
  if (s->reset)
    return PH_ERESET;
  if (s->down_len) {
    *data = s->down;
    return (ssize_t)s->down_len;
  }
  return s->down_eof ? 0 : PH_EAGAIN;
}

static void m_consume(ph_stream *st, size_t n) {
  mstream *s = ms(st);
  if (n > s->down_len)
    abort(); /* more than peek showed */
  memmove(s->down, s->down + n, s->down_len - n);
  s->down_len -= n;
  run_target(s); /* the window reopens by n */
  arm(s);
}

/* K_HTTP: the request head ends at the first blank line. */
static void read_head(mstream *s, const char *p, size_t n) {
  static const char end[] = "\r\n\r\n";
  for (size_t i = 0; i < n && !s->answered; i++) {
    s->head_seen = p[i] == end[s->head_seen] ? s->head_seen + 1
                   : p[i] == '\r'            ? 1
                                             : 0;
    if (s->head_seen == 4) {
      char head[96];
      int len = snprintf(head, sizeof(head),
                         "HTTP/1.1 200 OK\r\nContent-Length: %llu\r\n\r\n",
                         (unsigned long long)s->source_left);
      memcpy(s->down, head, (size_t)len); /* down is empty: nothing sent */
      s->down_len = (size_t)len;
      s->answered = 1;
    }
  }
}

static ssize_t m_write(ph_stream *st, const void *data, size_t len) {
  mstream *s = ms(st);
  if (s->reset)
    return PH_ERESET;
  if (s->user_shut)
    return PH_ESTATE;
  if (s->kind == K_RESET) {
    s->reset = 1;
    arm(s);
    return PH_ERESET;
  }
  size_t room = s->m->window - s->up_len;
  size_t n = len < room ? len : room;
  if (n == 0)
    return PH_EAGAIN;
  if (s->kind == K_ECHO) {
    memcpy(s->up + s->up_len, data, n);
    s->up_len += n;
    note_queue(s, s->up_len);
  } else if (s->kind == K_HTTP) {
    read_head(s, data, n); /* the rest is discarded */
  }
  run_target(s);
  arm(s);
  return (ssize_t)n;
}

static int m_shutdown(ph_stream *st) {
  mstream *s = ms(st);
  if (s->reset)
    return PH_ERESET;
  s->user_shut = 1;
  run_target(s);
  arm(s);
  return PH_OK;
}

static void m_close(ph_stream *st) {
  mstream *s = ms(st);
  s->closed = 1;
  api->gauge_add(s->m->m_open, -1);
  api->inc(s->m->m_closed, 1);
  if (!s->in_cb)
    free_stream(s); /* else kick_cb frees it on the way out */
}

static const ph_stream_ops ops = {
    .size = sizeof(ph_stream_ops),
    .watch = m_watch,
    .peek = m_peek,
    .consume = m_consume,
    .write = m_write,
    .shutdown = m_shutdown,
    .close = m_close,
};

static mstream *new_stream(mconn *m, int kind, uint64_t kib) {
  mstream *s = calloc(1, sizeof(*s));
  if (!s)
    return NULL;
  s->base.ops = &ops;
  s->m = m;
  s->kind = kind;
  s->up = malloc(m->window);
  s->down = malloc(m->window);
  s->kick = api->timer_new(m->ctx, kick_cb, s);
  if (!s->up || !s->down || !s->kick) {
    free_stream(s);
    return NULL;
  }
  s->source_left = kind == K_SOURCE || kind == K_HTTP ? kib * 1024 : 0;
  run_target(s);
  api->gauge_add(m->m_open, 1);
  return s;
}

/* ---- the connector --------------------------------------------------- */

static int target_kind(const char *host) {
  if (strcmp(host, "echo.mem") == 0)
    return K_ECHO;
  if (strcmp(host, "source.mem") == 0)
    return K_SOURCE;
  if (strcmp(host, "http.mem") == 0)
    return K_HTTP;
  if (strcmp(host, "reset.mem") == 0)
    return K_RESET;
  return 0;
}

static void answer_cb(ph_timer *t, void *arg) {
  (void)t;
  mconn *m = arg;
  for (int i = 0; i < MAX_OPENS; i++) {
    pending_open *o = &m->opens[i];
    if (!o->live)
      continue;
    o->live = 0;
    ph_open_result res = {.size = sizeof(res), .fd = -1};
    res.code = o->code;
    res.stage = o->code ? PH_STAGE_CONNECT : PH_STAGE_NONE;
    if (!o->code && !(res.stream = (ph_stream *)new_stream(m, o->kind, o->kib))) {
      res.code = PH_OPEN_INTERNAL_ERROR;
      res.stage = PH_STAGE_PROTOCOL;
    }
    o->cb(o->arg, &res);
  }
}

static int64_t mc_open(void *self, const ph_open_request *rq, ph_open_cb cb,
                       void *arg) {
  mconn *m = self;
  int i = 0;
  while (i < MAX_OPENS && m->opens[i].live)
    i++;
  if (i == MAX_OPENS || !rq->host)
    return PH_EINVAL;
  pending_open *o = &m->opens[i];
  memset(o, 0, sizeof(*o));
  o->id = ++m->next_id;
  o->cb = cb;
  o->arg = arg;
  o->live = 1;
  o->kind = target_kind(rq->host);
  o->kib = rq->port;
  int streams = rq->size >= sizeof(*rq) && (rq->flags & PH_OPEN_F_STREAM);
  o->code = !streams    ? PH_OPEN_UNSUPPORTED_CAPABILITY
            : !o->kind ? PH_OPEN_CONNECTION_REFUSED
                       : PH_OPEN_OK;
  api->timer_set(m->answer, 1, 0); /* never inside open() */
  return o->id;
}

static int mc_cancel(void *self, int64_t id) {
  mconn *m = self;
  for (int i = 0; i < MAX_OPENS; i++)
    if (m->opens[i].live && m->opens[i].id == id) {
      m->opens[i].live = 0;
      return PH_OK;
    }
  return PH_ENOENT;
}

static const ph_connector_v1 vt = {mc_open, mc_cancel};

static ph_series *plain(ph_ctx *ctx, const char *name, const char *help,
                        int type) {
  ph_metric_def d = {name, help, type, NULL, 0, NULL, 0};
  ph_metric *mt = api->metric(ctx, &d);
  return mt ? api->series(mt, NULL) : NULL;
}

static int mc_init(ph_ctx *ctx, const ph_api *a, void **state) {
  api = a;
  mconn *m = calloc(1, sizeof(*m));
  if (!m)
    return PH_ENOMEM;
  *state = m;
  m->ctx = ctx;
  m->window = (size_t)a->conf_int(ctx, "window");
  m->answer = a->timer_new(ctx, answer_cb, m);
  m->m_open = plain(ctx, "memconn_streams", "memconn streams open now",
                    PH_METRIC_GAUGE);
  m->m_closed = plain(ctx, "memconn_streams_closed_total",
                      "memconn streams closed by their user",
                      PH_METRIC_COUNTER);
  m->m_qmax = plain(ctx, "memconn_queue_max_bytes",
                    "the most bytes any memconn queue held",
                    PH_METRIC_GAUGE);
  if (!m->answer || !m->m_open || !m->m_closed || !m->m_qmax)
    return PH_EINVAL;
  return a->service_register(ctx, PH_CONNECTOR_SERVICE, PH_CONNECTOR_MAJOR,
                             PH_CONNECTOR_MINOR, &vt, m);
}

static void mc_destroy(void *state) {
  mconn *m = state;
  if (!m)
    return;
  if (m->answer)
    api->timer_free(m->answer);
  free(m);
}

static const char *const provides[] = {PH_CONNECTOR_SERVICE, NULL};

PROXYHOST_MODULE = {
    PH_MODULE_HEADER("memconn", "1.0"),
    .description = "test connector: in-memory streams with a window",
    .provides = provides,
    .config = keys,
    .init = mc_init,
    .destroy = mc_destroy,
};
