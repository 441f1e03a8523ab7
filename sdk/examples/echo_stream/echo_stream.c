/* SPDX-License-Identifier: BSD-2-Clause */
/* echo_stream: an example connector whose streams live in the process
 * (SDK 1.2, <proxyhost/stream.h>): every open, whatever its target,
 * answers with a stream that sends back what it is sent. No socket is
 * involved; one buffer of `window` bytes holds what was written and not
 * yet read back, so a writer that runs ahead of its reader is held back
 * (ph_stream_write takes less), and the buffer never grows.
 *
 * Load it with a frontend that takes streams (socks5, http_proxy):
 *   [proxyhost]
 *   modules = echo_stream, socks5
 * and any CONNECT through socks5 is an echo. Build: see Makefile. */
#include <stdlib.h>
#include <string.h>

#include <proxyhost/connector.h>
#include <proxyhost/module.h>
#include <proxyhost/stream.h>

static const ph_api *api;

/* Opens waiting for their answer (the next loop turn), a bound. More at
 * once are refused at once (PH_ENOMEM, no callback); a real connector
 * answers them queue_full through the callback instead (connector.h). */
#define MAX_PENDING 64

typedef struct pending {
  int64_t id; /* 0: free */
  ph_open_cb cb;
  void *arg;
} pending;

typedef struct echo {
  ph_ctx *ctx;
  size_t window;
  ph_timer *answer; /* answers the pending opens */
  int64_t next_id;
  pending open[MAX_PENDING];
} echo;

typedef struct estream {
  ph_stream base; /* first: the host's ph_stream * is ours */
  echo *e;
  char *buf;
  size_t len;
  int want, shut, in_cb, closed;
  ph_stream_fn fn;
  void *arg;
  ph_timer *kick; /* delivers the level-triggered events */
} estream;

static void es_free(estream *s) {
  api->timer_free(s->kick);
  free(s->buf);
  free(s);
}

/* Events are delivered from the loop, never inside the user's call. */
static void arm(estream *s) { api->timer_set(s->kick, 1, 0); }

static void kick(ph_timer *t, void *arg) {
  (void)t;
  estream *s = arg;
  int ev = 0;
  if ((s->want & PH_READ) && (s->len > 0 || s->shut))
    ev |= PH_READ;
  if ((s->want & PH_WRITE) && !s->shut && s->len < s->e->window)
    ev |= PH_WRITE;
  if (!ev || !s->fn)
    return;
  s->in_cb = 1;
  s->fn(&s->base, ev, s->arg);
  s->in_cb = 0;
  if (s->closed)
    es_free(s); /* closed inside the callback */
  else
    arm(s); /* again while the condition holds */
}

static void es_watch(ph_stream *st, int events, ph_stream_fn fn, void *arg) {
  estream *s = (estream *)st;
  s->want = events;
  s->fn = fn;
  s->arg = arg;
  arm(s);
}

static ssize_t es_peek(ph_stream *st, const void **data) {
  estream *s = (estream *)st;
  if (s->len == 0)
    return s->shut ? 0 : PH_EAGAIN; /* EOF once the echo is drained */
  *data = s->buf;
  return (ssize_t)s->len;
}

static void es_consume(ph_stream *st, size_t n) {
  estream *s = (estream *)st;
  memmove(s->buf, s->buf + n, s->len - n);
  s->len -= n;
  arm(s); /* room to write again */
}

static ssize_t es_write(ph_stream *st, const void *data, size_t len) {
  estream *s = (estream *)st;
  if (s->shut)
    return PH_ESTATE;
  size_t n = s->e->window - s->len;
  if (n > len)
    n = len;
  if (n == 0)
    return PH_EAGAIN;
  memcpy(s->buf + s->len, data, n);
  s->len += n;
  arm(s);
  return (ssize_t)n;
}

static int es_shutdown(ph_stream *st) {
  estream *s = (estream *)st;
  s->shut = 1;
  arm(s);
  return PH_OK;
}

static void es_close(ph_stream *st) {
  estream *s = (estream *)st;
  s->closed = 1;
  if (!s->in_cb)
    es_free(s);
}

static const ph_stream_ops es_ops = {
    .size = sizeof(ph_stream_ops),
    .watch = es_watch,
    .peek = es_peek,
    .consume = es_consume,
    .write = es_write,
    .shutdown = es_shutdown,
    .close = es_close,
};

static estream *es_new(echo *e) {
  estream *s = calloc(1, sizeof(*s));
  if (!s)
    return NULL;
  s->base.ops = &es_ops;
  s->e = e;
  s->buf = malloc(e->window);
  s->kick = api->timer_new(e->ctx, kick, s);
  if (!s->buf || !s->kick) {
    es_free(s);
    return NULL;
  }
  return s;
}

/* ---- the connector ------------------------------------------------------ */

static void answer(ph_timer *t, void *arg) {
  (void)t;
  echo *e = arg;
  for (int i = 0; i < MAX_PENDING; i++) {
    pending p = e->open[i];
    if (!p.id)
      continue;
    e->open[i].id = 0; /* answered: cancel no longer finds it */
    ph_open_result res = {.size = sizeof(res), .fd = -1};
    if (!(res.stream = (ph_stream *)es_new(e))) {
      res.stage = PH_STAGE_PROTOCOL;
      res.code = PH_OPEN_INTERNAL_ERROR;
    }
    p.cb(p.arg, &res);
  }
}

static int64_t ec_open(void *self, const ph_open_request *rq, ph_open_cb cb,
                       void *arg) {
  echo *e = self;
  /* Only a caller that takes streams may get one (connector.h). */
  if (rq->size < sizeof(*rq) || !(rq->flags & PH_OPEN_F_STREAM))
    return PH_EINVAL;
  int i = 0;
  while (i < MAX_PENDING && e->open[i].id)
    i++;
  if (i == MAX_PENDING)
    return PH_ENOMEM; /* not even room to say queue_full */
  e->open[i] = (pending){++e->next_id, cb, arg};
  api->timer_set(e->answer, 1, 0); /* never answer inside open() */
  return e->open[i].id;
}

static int ec_cancel(void *self, int64_t id) {
  echo *e = self;
  for (int i = 0; i < MAX_PENDING; i++)
    if (e->open[i].id == id) {
      e->open[i].id = 0;
      return PH_OK;
    }
  return PH_ENOENT;
}

static const ph_connector_v1 vtable = {ec_open, ec_cancel};

static const ph_conf_key keys[] = {
    PH_CONF_KEY("window", PH_CONF_SIZE, "16KiB", 1, 1 << 20, 0, NULL,
     "bytes a stream holds that were written and not read back yet", NULL),
    PH_CONF_END};

static int ec_init(ph_ctx *ctx, const ph_api *a, void **state) {
  api = a;
  echo *e = calloc(1, sizeof(*e));
  if (!e)
    return PH_ENOMEM;
  *state = e;
  e->ctx = ctx;
  e->window = (size_t)a->conf_int(ctx, "window");
  e->answer = a->timer_new(ctx, answer, e);
  if (!e->answer)
    return PH_ENOMEM;
  return a->service_register(ctx, PH_CONNECTOR_SERVICE, PH_CONNECTOR_MAJOR,
                             PH_CONNECTOR_MINOR, &vtable, e);
}

static void ec_destroy(void *state) {
  echo *e = state;
  if (!e)
    return;
  if (e->answer)
    api->timer_free(e->answer);
  free(e);
}

static const char *const provides[] = {PH_CONNECTOR_SERVICE, NULL};

PROXYHOST_MODULE = {
    PH_MODULE_HEADER("echo_stream", "1.0"),
    .description = "example connector: every open is an in-process echo "
                   "stream",
    .provides = provides,
    .config = keys,
    .init = ec_init,
    .destroy = ec_destroy,
};
