/* SPDX-License-Identifier: BSD-2-Clause */
/* The calls of store_sqlite (store_sqlite.h): a call is submitted to a
 * host helper thread, which borrows a pooled connection for its work;
 * its answer comes back on the loop in the job's done, where the revision
 * its transaction saw is taken in before the caller's callback runs (so a
 * write's callback already sees the new revision, TM-P1-29). A call
 * answered without the database (over the in-flight bound, the job queue
 * full, a malformed bearer) waits in a FIFO for a one-shot timer, so no
 * callback ever runs inside the call that started it. */
#include <stdlib.h>
#include <string.h>

#include "store_sqlite.h"

void *sq_call_new(sq *s, size_t size, void (*work)(sq_call *, sqlite3 *),
                  void (*deliver)(sq_call *), void (*destroy)(sq_call *)) {
  sq_call *c = calloc(1, size);
  if (!c)
    return NULL;
  c->s = s;
  c->id = ++s->next_id;
  c->work = work;
  c->deliver = deliver;
  c->destroy = destroy;
  c->rev_what = AZ_REV_READ_FAILED;
  /* The work reads these, not the state a reload may change meanwhile. */
  c->positive_ms = s->positive_ms;
  c->negative_ms = s->negative_ms;
  return c;
}

void *sq_page_new(sq *s, size_t size, int kind, uint32_t limit, void *arg,
                  void (*work)(sq_call *, sqlite3 *),
                  void (*deliver)(sq_call *), void (*destroy)(sq_call *)) {
  sq_page *p = sq_call_new(s, size, work, deliver, destroy);
  if (!p)
    return NULL;
  p->arg = arg;
  p->kind = kind;
  p->limit = limit;
  return p;
}

void sq_page_cut(sq_page *p) {
  if (p->n > p->limit) {
    p->more = 1;
    p->n = p->limit;
  }
}

int sq_call_take_slot(sq *s, sq_call *c) {
  if (s->pending >= s->max_pending)
    return 0;
  s->pending++;
  c->holds_slot = 1;
  return 1;
}

static void release_slot(sq *s, sq_call *c) {
  if (c->holds_slot) {
    c->holds_slot = 0;
    s->pending--;
  }
}

static void unlink_call(sq_call **list, sq_call *c) {
  for (sq_call **p = list; *p; p = &(*p)->next)
    if (*p == c) {
      *p = c->next;
      c->next = NULL;
      return;
    }
}

/* Helper thread. */
static void run_work(void *arg) {
  sq_call *c = arg;
  char why[256];
  sqlite3 *db = sq_pool_get(c->s->pool, why, sizeof(why));
  if (!db) {
    c->no_db = 1;
    return;
  }
  c->work(c, db);
  sq_pool_put(c->s->pool, db, c->db_broken);
}

/* Loop thread: once per accepted job. */
static void job_done(void *arg, int status) {
  sq_call *c = arg;
  sq *s = c->s;
  unlink_call(&s->live, c);
  release_slot(s, c);
  c->job = 0;
  if (status == PH_OK) {
    /* Even for a cancelled call: a write may have committed. A call whose
     * statements failed counts as a failed read (TM-P1-31). */
    az_revision_observe_at(&s->rev, c->rev_what, c->rev_value,
                           c->rev_floor, 0);
    if (c->pool_rev_set)
      pool_revision_observe(&s->prev, c->pool_what, c->pool_value,
                            c->pool_floor);
    else if (c->no_db)
      pool_revision_observe(&s->prev, AZ_REV_READ_FAILED, 0, 0);
    if (!c->cancelled)
      c->deliver(c);
  }
  c->destroy(c);
}

int sq_call_submit(sq *s, sq_call *c) {
  c->rev_floor = az_revision_floor(&s->rev);
  c->pool_floor = s->prev.value;
  int64_t job = s->api->submit(s->ctx, run_work, job_done, c);
  if (job <= 0)
    return -1;
  c->job = job;
  c->next = s->live;
  s->live = c;
  return 0;
}

void sq_ready_tick(ph_defer *t, void *arg) {
  (void)t;
  sq *s = arg;
  s->batch = s->ready;
  s->ready = NULL;
  while (s->batch) {
    sq_call *c = s->batch;
    s->batch = c->next; /* first: the callback may cancel others */
    c->next = NULL;
    release_slot(s, c);
    c->deliver(c);
    c->destroy(c);
  }
}

void sq_call_answer_later(sq *s, sq_call *c) {
  /* FIFO: append. Lists are a loop iteration's worth of calls. */
  sq_call **p = &s->ready;
  while (*p)
    p = &(*p)->next;
  c->next = NULL;
  *p = c;
  /* The next loop turn, no clock tick; posting while pending changes
   * nothing, so no answer is pushed back by the ones after it. */
  s->api->defer_post(s->ready_turn);
}

void sq_call_start(sq *s, sq_call *c, int *status, const char **detail) {
  const char *d = NULL;
  if (!sq_call_take_slot(s, c)) {
    *status = PH_EFULL;
    d = "too many store calls in flight";
  } else if (sq_call_submit(s, c) < 0) {
    *status = PH_AZ_EUNAVAILABLE;
    d = "the host's job queue is full";
  } else {
    return;
  }
  if (detail)
    *detail = d;
  sq_call_answer_later(s, c);
}

static sq_call *find(sq_call *list, int64_t id) {
  for (; list; list = list->next)
    if (list->id == id)
      return list;
  return NULL;
}

int sq_call_cancel(sq *s, int64_t id) {
  sq_call *c = find(s->batch, id);
  if (c) {
    unlink_call(&s->batch, c);
  } else if ((c = find(s->ready, id))) {
    unlink_call(&s->ready, c);
  }
  if (c) {
    release_slot(s, c);
    c->destroy(c);
    return PH_OK;
  }
  c = find(s->live, id);
  if (!c || c->cancelled)
    return PH_ENOENT;
  /* The slot is free now (access.h); a queued job is dropped (its done
   * runs at once with ECANCELED and frees it), a running one finishes and
   * is ignored. */
  c->cancelled = 1;
  release_slot(s, c);
  s->api->job_cancel(s->ctx, c->job);
  return PH_OK;
}

void sq_call_drop_all(sq *s) {
  /* The host delivered every job's done before destroy: live is empty. */
  while (s->ready) {
    sq_call *c = s->ready;
    s->ready = c->next;
    c->destroy(c);
  }
}
