/* SPDX-License-Identifier: BSD-2-Clause */
/* The mailbox: a fixed ring of pending calls guarded by a mutex, with an
 * ev_async watcher to wake the loop thread. Producers hold the lock only to
 * copy one entry in; the loop holds it only to copy one entry out, so a call
 * never runs under the lock and may itself post. */
#include "mailbox.h"

#include <ev.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "metrics.h"

typedef struct mb_entry {
  ph_call_fn fn;
  void *arg;
  ph_free_fn free_arg;
} mb_entry;

struct ph_mailbox {
  struct ev_loop *loop;
  ev_async wake;
  pthread_mutex_t mu;
  mb_entry *ring;
  size_t capacity;
  size_t head;  /* index of the oldest entry; guarded by mu */
  size_t count; /* entries pending; guarded by mu */
  _Atomic uint64_t full;
  ph_series *full_counter;
};

static void mailbox_wake_cb(struct ev_loop *loop, ev_async *w, int revents) {
  (void)loop;
  (void)revents;
  mailbox_drain(w->data);
}

ph_mailbox *mailbox_new(struct ev_loop *loop, size_t capacity,
                        ph_series *full_counter) {
  if (!loop || capacity == 0)
    return NULL;
  ph_mailbox *mb = calloc(1, sizeof(*mb));
  if (!mb)
    return NULL;
  mb->ring = calloc(capacity, sizeof(*mb->ring));
  if (!mb->ring || pthread_mutex_init(&mb->mu, NULL) != 0) {
    free(mb->ring);
    free(mb);
    return NULL;
  }
  mb->loop = loop;
  mb->capacity = capacity;
  mb->full_counter = full_counter;
  atomic_init(&mb->full, 0);
  ev_async_init(&mb->wake, mailbox_wake_cb);
  mb->wake.data = mb;
  ev_async_start(loop, &mb->wake);
  return mb;
}

static void mailbox_count_full(ph_mailbox *mb) {
  atomic_fetch_add_explicit(&mb->full, 1, memory_order_relaxed);
  if (mb->full_counter)
    metrics_inc(mb->full_counter, 1);
}

int mailbox_post(ph_mailbox *mb, ph_call_fn fn, void *arg,
                 ph_free_fn free_arg) {
  if (!mb || !fn)
    return PH_EINVAL;
  pthread_mutex_lock(&mb->mu);
  if (mb->count == mb->capacity) {
    pthread_mutex_unlock(&mb->mu);
    mailbox_count_full(mb);
    return PH_EFULL;
  }
  size_t tail = (mb->head + mb->count) % mb->capacity;
  mb->ring[tail] = (mb_entry){fn, arg, free_arg};
  mb->count++;
  pthread_mutex_unlock(&mb->mu);
  /* ev_async_send is documented as safe from any thread; it coalesces, so
   * a burst of posts costs at most one wakeup per loop iteration. */
  ev_async_send(mb->loop, &mb->wake);
  return PH_OK;
}

/* Takes the oldest entry out, under the lock. 0 when empty. */
static int mailbox_pop(ph_mailbox *mb, mb_entry *out) {
  int got = 0;
  pthread_mutex_lock(&mb->mu);
  if (mb->count > 0) {
    *out = mb->ring[mb->head];
    mb->head = (mb->head + 1) % mb->capacity;
    mb->count--;
    got = 1;
  }
  pthread_mutex_unlock(&mb->mu);
  return got;
}

void mailbox_drain(ph_mailbox *mb) {
  if (!mb)
    return;
  /* Run only what was queued when the drain started: producers keep
   * posting meanwhile, and an unbounded drain would starve the loop. What
   * arrives later runs on the next wakeup, which we request below. */
  size_t budget = mailbox_pending(mb);
  mb_entry e;
  while (budget > 0 && mailbox_pop(mb, &e)) {
    budget--;
    e.fn(e.arg);
    if (e.free_arg)
      e.free_arg(e.arg);
  }
  if (mailbox_pending(mb) > 0)
    ev_async_send(mb->loop, &mb->wake);
}

uint64_t mailbox_full_count(const ph_mailbox *mb) {
  return mb ? atomic_load_explicit(&mb->full, memory_order_relaxed) : 0;
}

size_t mailbox_pending(ph_mailbox *mb) {
  if (!mb)
    return 0;
  pthread_mutex_lock(&mb->mu);
  size_t n = mb->count;
  pthread_mutex_unlock(&mb->mu);
  return n;
}

void mailbox_free(ph_mailbox *mb) {
  if (!mb)
    return;
  ev_async_stop(mb->loop, &mb->wake);
  /* Pending calls never run: their owner only gets its free_arg. */
  mb_entry e;
  while (mailbox_pop(mb, &e)) {
    if (e.free_arg)
      e.free_arg(e.arg);
  }
  pthread_mutex_destroy(&mb->mu);
  free(mb->ring);
  free(mb);
}
