/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * WatchCheckTasks (docs/api/controlplane.md#watchchecktasks, issue 26,
 * CP-6-1, CP-6-2): a checker's server stream of CheckTask. The stream
 * takes tasks once Redis confirmed its session (checker_alive, which
 * also says what the checker registered); the newest stream of a session
 * replaces an older one (ABORTED), a new registration ends the streams of
 * older sessions (FAILED_PRECONDITION). While the stream lives its
 * session's TTL is renewed every session_ttl / 3, but not while the
 * checker owes an answer past a deadline: a checker that stopped
 * answering loses its session (and its stream) within session_ttl, and
 * one whose stream ended (killed) loses its tasks at once; either way the
 * scheduler gives them to the others.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "cp_checker_requests.h"
#include "cs_checker.h"

#define api cs_api

/* A checker's max_tasks_per_message above this counts as this. */
#define CS_TASKS_PER_MSG_MAX 4096

static void out_free(cs_out *o) {
  OPENSSL_cleanse(o->data, o->len);
  free(o);
}

static void c_free(cs_checker *c) {
  cs *m = c->m;
  struct cs_checkers *k = m->checkers;
  cs_auth_cancel(m, &c->auth_call);
  for (ilist_node *n; (n = ilist_first(&c->tasks));)
    cs_task_done(m, ILIST_ENTRY(n, cs_task, node), CS_TASK_RELEASED);
  idtab_free(&c->task_ids);
  for (ilist_node *n; (n = ilist_pop(&c->sendq));)
    out_free(ILIST_ENTRY(n, cs_out, node));
  if (c->timer)
    api->timer_free(c->timer);
  if (ilist_of(&c->node))
    ilist_remove(&c->node);
  if (c->claimed)
    api->gauge_add(k->m_checkers, -1);
  free(c);
}

void cs_checker_end(cs_checker *c, int status, const char *why) {
  if (c->call)
    cs_finish(c->m, c->call, CS_M_WATCH_TASKS, c->start_ms, status, why, NULL,
              0);
  c->call = NULL;
  c_free(c);
}

static void c_cancel(void *arg, cp_grpc_call *call) {
  cs_checker *c = arg;
  (void)call;
  api->inc(c->m->m_rpcs[CS_M_WATCH_TASKS][CP_GRPC_CANCELLED], 1);
  c->call = NULL;
  c_free(c);
}

static int pump(cs_checker *c);

static void sent(void *arg, cp_grpc_call *call) {
  cs_checker *c = arg;
  (void)call;
  c->sending = 0;
  (void)pump(c);
}

/* Tasks in one stream message at most this many bytes (far under
 * grpc.max_send_message_size's floor and any checker's receive limit). */
#define CS_TASK_MSG_BYTES (1u << 20)
/* CheckTask.more's tag: field 15, length-delimited. */
#define MORE_TAG ((15u << 3) | 2u)

static size_t varint(uint8_t *p, size_t v) {
  size_t n = 0;
  do {
    uint8_t b = v & 0x7f;
    v >>= 7;
    if (p)
      p[n] = (uint8_t)(b | (v ? 0x80 : 0));
    n++;
  } while (v);
  return n;
}

/* The queued tasks as one CheckTask message: the first task's bytes, then
 * each further one as a `more` element (protobuf's wire format lets a
 * message's fields be appended). NULL: no memory (then one alone). */
static cs_out *coalesce(cs_checker *c) {
  size_t total = 0, n = 0;
  ILIST_FOREACH_SAFE(&c->sendq, it, nx) {
    cs_out *o = ILIST_ENTRY(it, cs_out, node);
    size_t add = n ? 1 + varint(NULL, o->len) + o->len : o->len;
    if (n == c->batch_max || (n && total + add > CS_TASK_MSG_BYTES))
      break;
    total += add;
    n++;
  }
  if (n < 2)
    return NULL;
  cs_out *b = malloc(sizeof(*b) + total);
  if (!b)
    return NULL;
  size_t at = 0;
  for (size_t i = 0; i < n; i++) {
    cs_out *o = ILIST_ENTRY(ilist_pop(&c->sendq), cs_out, node);
    if (i) {
      b->data[at++] = MORE_TAG;
      at += varint(b->data + at, o->len);
    }
    memcpy(b->data + at, o->data, o->len);
    at += o->len;
    out_free(o);
  }
  b->len = at;
  return b;
}

/* 0, or -1 when the send failed and c is gone. */
static int pump(cs_checker *c) {
  ilist_node *n;
  if (c->sending || !c->call || c->m->checkers->corked ||
      !ilist_first(&c->sendq))
    return 0;
  cs_out *o = c->batch_max > 1 ? coalesce(c) : NULL;
  if (!o) {
    n = ilist_pop(&c->sendq);
    o = ILIST_ENTRY(n, cs_out, node);
  }
  int rc = cp_grpc_call_send(c->call, o->data, o->len, sent, c);
  out_free(o); /* the layer copied it */
  if (rc != PH_OK) {
    cs_checker_end(c, CP_GRPC_INTERNAL, "send failed");
    return -1;
  }
  c->sending = 1;
  return 0;
}

int cs_checker_send(cs_checker *c, cs_out *o) {
  ilist_push(&c->sendq, &o->node);
  return pump(c);
}

void cs_checkers_uncork(cs *m) {
  m->checkers->corked = 0;
  ILIST_FOREACH_SAFE(&m->checkers->live, it, nx)
    (void)pump(ILIST_ENTRY(it, cs_checker, node));
}

/* Ends id's streams other than keep: of keep's session (or of session
 * when keep is NULL: none) ABORTED, of other sessions
 * FAILED_PRECONDITION. */
static void end_others(cs *m, const char *id, const cs_checker *keep,
                       const char *session) {
  ILIST_FOREACH_SAFE(&m->checkers->live, it, nx) {
    cs_checker *c = ILIST_ENTRY(it, cs_checker, node);
    if (c == keep || strcmp(c->id, id) != 0)
      continue;
    int same = strcmp(c->session, session) == 0;
    if (same && !keep)
      continue;
    cs_checker_end(c, same ? CP_GRPC_ABORTED : CP_GRPC_FAILED_PRECONDITION,
                   same ? "a newer stream of this session replaced this one"
                        : "the session was replaced");
  }
}

void cs_checker_replaced(cs *m, const char *checker, const char *session) {
  end_others(m, checker, NULL, session);
}

cs_checker *cs_checker_find(cs *m, const char *id, const char *session) {
  ILIST_FOREACH_SAFE(&m->checkers->live, it, nx) {
    cs_checker *c = ILIST_ENTRY(it, cs_checker, node);
    if (c->claimed && strcmp(c->id, id) == 0 &&
        strcmp(c->session, session) == 0)
      return c;
  }
  return NULL;
}

static void alive(void *arg, const cp_auth_reply *rep) {
  cs_checker *c = arg;
  cs *m = c->m;
  c->auth_call = 0;
  cs_note_auth(m, rep->result);
  if (rep->result == CP_AUTH_STALE_SESSION) {
    cs_checker_end(c, CP_GRPC_FAILED_PRECONDITION,
                   "the session is not current");
    return;
  }
  if (rep->result != CP_AUTH_OK) {
    if (!c->claimed)
      cs_checker_end(c, CP_GRPC_UNAVAILABLE, "the authority did not answer");
    return; /* the next renewal tries again, until the TTL is gone */
  }
  c->renewed_ms = wall_ms();
  if (rep->size > offsetof(cp_auth_reply, zone) && rep->zone)
    snprintf(c->zone, sizeof(c->zone), "%s", rep->zone);
  if (c->claimed)
    return;
  c->max_concurrency = rep->max_concurrency ? rep->max_concurrency : 1;
  if (idtab_init(&c->task_ids, c->max_concurrency)) {
    cs_checker_end(c, CP_GRPC_RESOURCE_EXHAUSTED, "out of memory");
    return;
  }
  c->claimed = 1;
  c->tiers = rep->tiers ? rep->tiers : CP_TIERS_ALL;
  api->gauge_add(m->checkers->m_checkers, 1);
  end_others(m, c->id, c, c->session);
}

static void renew(ph_timer *t, void *arg) {
  cs_checker *c = arg;
  cs *m = c->m;
  (void)t;
  if (c->auth_call > 0)
    return;
  if (wall_ms() - c->renewed_ms >= m->conf.session_ttl_ms) {
    /* Not renewed for a whole TTL (it owed answers, or Redis did not
     * answer): Redis let the session go; so do we. */
    cs_checker_end(c, CP_GRPC_FAILED_PRECONDITION,
                   "the session expired: not renewed within session_ttl");
    return;
  }
  if (c->missed)
    return; /* no renewal while it owes an answer past a deadline */
  int64_t id = m->auth->checker_alive(m->auth_self, c->id, c->session, alive,
                                      c);
  if (id > 0)
    c->auth_call = id;
}

void cs_checker_watch_rpc(void *arg, cp_grpc_call *call, const uint8_t *req,
                          size_t len) {
  cs_req r;
  Controlplane__V1__WatchCheckTasksRequest *q = cs_request_as(
      &r, arg, call, "checker",
      &controlplane__v1__watch_check_tasks_request__descriptor, req, len);
  cs *m = r.m;
  if (!r.st)
    r.st = cp_check_watch_tasks(q, &r.c, &r.why);
  if (!r.st && (strlen(q->checker_id) > PH_POOL_ID_MAX ||
                strlen(q->session_id) > PH_POOL_ID_MAX)) {
    r.st = CP_GRPC_INVALID_ARGUMENT;
    r.why = "an identifier out of bounds";
  }
  cs_checker *c = NULL;
  if (!r.st && (!(c = calloc(1, sizeof(*c))) ||
                !(c->timer = api->timer_new(m->ctx, renew, c)))) {
    free(c);
    c = NULL;
    r.st = CP_GRPC_RESOURCE_EXHAUSTED;
    r.why = "out of memory";
  }
  if (r.st) {
    cs_request_fail(&r, CS_M_WATCH_TASKS, q);
    return;
  }
  c->m = m;
  c->call = call;
  c->start_ms = r.start;
  c->serial = ++m->checkers->next_serial;
  c->renewed_ms = wall_ms();
  strcpy(c->id, q->checker_id);
  strcpy(c->session, q->session_id);
  c->batch_max = q->max_tasks_per_message > CS_TASKS_PER_MSG_MAX
                     ? CS_TASKS_PER_MSG_MAX
                     : q->max_tasks_per_message;
  if (c->batch_max < 1)
    c->batch_max = 1;
  controlplane__v1__watch_check_tasks_request__free_unpacked(q, NULL);
  ilist_init(&c->tasks);
  ilist_init(&c->sendq);
  ilist_push(&m->checkers->live, &c->node);
  cp_grpc_call_on_cancel(call, c_cancel, c);
  int64_t ttl3 = m->conf.session_ttl_ms / 3;
  api->timer_set(c->timer, (uint64_t)(ttl3 > 0 ? ttl3 : 1),
                 (uint64_t)(ttl3 > 0 ? ttl3 : 1));
  int64_t id = m->auth->checker_alive(m->auth_self, c->id, c->session, alive,
                                      c);
  if (id < 0) {
    cs_checker_end(c, id == PH_EINVAL ? CP_GRPC_INVALID_ARGUMENT
                                      : CP_GRPC_UNAVAILABLE,
                   id == PH_EINVAL ? "an identifier out of bounds"
                                   : "the authority is busy");
    return;
  }
  c->auth_call = id;
}
