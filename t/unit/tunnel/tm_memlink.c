/* SPDX-License-Identifier: BSD-2-Clause */
/* tm_memlink: see tm_memlink.h. */
#include "tm_memlink.h"

#include <ev.h>
#include <stdlib.h>
#include <string.h>

#include "tunnel_common/proto/tm_proto.h"

#define MAX_PENDING 200000 /* a runaway test aborts rather than eats RAM */

typedef struct msg {
  struct msg *next;
  size_t len;
  uint8_t data[];
} msg;

typedef struct end {
  tm_memlink *l;
  int e;
  tm_session *s;
  msg *head, *tail; /* towards this end */
  size_t pending;
  int want, hold, block, paused, closed, told;
  uint64_t sent[256], data_bytes, nlog;
  struct {
    uint8_t type;
    uint32_t id, len;
  } log[TM_MEMLINK_LOG];
} end;

struct tm_memlink {
  const ph_api *api;
  ph_ctx *ctx;
  struct ev_loop *loop;
  ev_timer tick;
  int armed;
  tm_transport t;
  end ends[2];
};

static void arm(tm_memlink *l) {
  if (l->armed)
    return;
  l->armed = 1;
  ev_timer_set(&l->tick, 0., 0.);
  ev_timer_start(l->loop, &l->tick);
}

static int live(const end *d) { return d->s && !d->closed && !d->told; }

/* One round: messages to each end, then one writable event each; what
 * they cause runs in the next round. */
static void tick_cb(struct ev_loop *loop, ev_timer *w, int revents) {
  (void)loop;
  (void)revents;
  tm_memlink *l = (tm_memlink *)((char *)w - offsetof(tm_memlink, tick));
  l->armed = 0;
  for (int e = 0; e < 2; e++) {
    end *d = &l->ends[e];
    end *peer = &l->ends[!e];
    if (d->s && !d->closed && !d->told && peer->closed && !d->head) {
      d->told = 1; /* the peer hung up: after what it sent */
      tm_session_on_transport_closed(d->s);
      continue;
    }
    size_t n = d->pending; /* only those queued before this round */
    while (n-- && d->head && !d->hold && !d->paused && live(d)) {
      msg *m = d->head;
      d->head = m->next;
      if (!d->head)
        d->tail = NULL;
      d->pending--;
      tm_session_on_message(d->s, m->data, m->len);
      free(m);
    }
  }
  for (int e = 0; e < 2; e++) {
    end *d = &l->ends[e];
    if (d->want && !d->block && live(d)) {
      d->want = 0;
      tm_session_on_writable(d->s);
    }
  }
  for (int e = 0; e < 2; e++) {
    end *d = &l->ends[e];
    if (live(d) && ((d->head && !d->hold && !d->paused) ||
                    (d->want && !d->block) || l->ends[!e].closed))
      arm(l);
  }
}

/* A message for end d, delivered in a later round (unless d pauses). */
static int enqueue(end *d, const void *buf, size_t len) {
  if (d->pending >= MAX_PENDING)
    abort();
  msg *m = malloc(sizeof(*m) + len);
  if (!m)
    return -1;
  m->next = NULL;
  m->len = len;
  memcpy(m->data, buf, len);
  if (d->tail)
    d->tail->next = m;
  else
    d->head = m;
  d->tail = m;
  d->pending++;
  arm(d->l);
  return 0;
}

static void t_want_write(void *t) {
  end *d = t;
  d->want = 1;
  arm(d->l);
}

static int t_write(void *t, uint8_t *buf, size_t len) {
  end *d = t;
  tm_memlink *l = d->l;
  memset(buf - l->t.headroom, 0xA5, l->t.headroom); /* it is ours to use */
  tm_frame f;
  if (tm_frame_decode(buf, len, &f) == TM_OK) {
    d->sent[f.type]++;
    d->sent[0]++;
    if (f.type == TM_DATA)
      d->data_bytes += f.length;
    if (d->nlog < TM_MEMLINK_LOG) {
      d->log[d->nlog].type = f.type;
      d->log[d->nlog].id = f.stream_id;
      d->log[d->nlog].len = f.length;
    }
    d->nlog++;
  }
  return enqueue(&l->ends[!d->e], buf, len);
}

static void t_pause(void *t, int paused) {
  end *d = t;
  d->paused = paused;
  arm(d->l);
}

static void t_close(void *t) {
  end *d = t;
  d->closed = 1;
  arm(d->l);
}

tm_memlink *tm_memlink_new(const ph_api *api, ph_ctx *ctx, size_t headroom) {
  tm_memlink *l = calloc(1, sizeof(*l));
  if (!l)
    return NULL;
  l->api = api;
  l->ctx = ctx;
  l->loop = api->loop(ctx);
  ev_timer_init(&l->tick, tick_cb, 0., 0.);
  l->t.want_write = t_want_write;
  l->t.write = t_write;
  l->t.pause_read = t_pause;
  l->t.close = t_close;
  l->t.headroom = headroom;
  for (int e = 0; e < 2; e++) {
    l->ends[e].l = l;
    l->ends[e].e = e;
  }
  return l;
}

void tm_memlink_free(tm_memlink *l) {
  if (!l)
    return;
  ev_timer_stop(l->loop, &l->tick);
  for (int e = 0; e < 2; e++)
    while (l->ends[e].head) {
      msg *m = l->ends[e].head;
      l->ends[e].head = m->next;
      free(m);
    }
  free(l);
}

const tm_transport *tm_memlink_transport(tm_memlink *l) { return &l->t; }
void *tm_memlink_targ(tm_memlink *l, int e) { return &l->ends[e]; }
void tm_memlink_attach(tm_memlink *l, int e, tm_session *s) {
  l->ends[e].s = s;
}

void tm_memlink_hold(tm_memlink *l, int e, int on) {
  l->ends[e].hold = on;
  arm(l);
}

void tm_memlink_block_writes(tm_memlink *l, int e, int on) {
  l->ends[e].block = on;
  arm(l);
}

void tm_memlink_queue(tm_memlink *l, int e, const void *m, size_t len) {
  if (enqueue(&l->ends[e], m, len) < 0)
    abort(); /* a test without memory */
}

void tm_memlink_inject(tm_memlink *l, int e, const void *m, size_t len) {
  if (live(&l->ends[e]))
    tm_session_on_message(l->ends[e].s, m, len);
}

uint64_t tm_memlink_sent(const tm_memlink *l, int e, int type) {
  return l->ends[e].sent[type & 0xff];
}

uint64_t tm_memlink_data_bytes(const tm_memlink *l, int e) {
  return l->ends[e].data_bytes;
}

int tm_memlink_log(const tm_memlink *l, int e, uint64_t i, uint32_t *id,
                   uint32_t *len) {
  const end *d = &l->ends[e];
  if (i >= d->nlog || i >= TM_MEMLINK_LOG)
    return 0;
  if (id)
    *id = d->log[i].id;
  if (len)
    *len = d->log[i].len;
  return d->log[i].type;
}

size_t tm_memlink_pending(const tm_memlink *l, int e) {
  return l->ends[e].pending;
}

int tm_memlink_closed(const tm_memlink *l, int e) {
  return l->ends[e].closed;
}

void tm_memlink_fail(tm_memlink *l) {
  for (int e = 0; e < 2; e++) {
    end *d = &l->ends[e];
    if (live(d)) {
      d->told = 1;
      d->closed = 1;
      tm_session_on_transport_closed(d->s);
    }
  }
}
