/* SPDX-License-Identifier: BSD-2-Clause */
/* Producer threads for the tests of what a loop drains (the mailbox, the
 * bus): n threads, each posting per messages (malloc'd producers_msg:
 * its id, seq 0..per-1) in order through post while the test's loop
 * delivers them. A full queue (PH_EFULL: nothing was taken) is retried
 * with the same message, counted in efull, a bounded number of tries; any
 * other refusal frees the message and stops that producer. The loop side
 * hands each message it receives to producers_got, which counts it and
 * checks the order per thread.
 *
 *   static int post(producers_msg *m) { return mailbox_post(..., m, ...); }
 *   static producers P = {.post = post, .n = 4, .per = 10000};
 *   static void on_msg(void *m) { producers_got(&P, m); }
 *   producers_run(&P, loop, 60000);
 *   is_int(P.received, 4 * 10000, ...); is_int(P.out_of_order, 0, ...);
 */
#ifndef PH_PRODUCERS_TEST_H
#define PH_PRODUCERS_TEST_H

#include <ev.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include <proxyhost/abi.h>

#include "loop_test.h"
#include "tap.h"

#define PRODUCERS_MAX 16

typedef struct producers producers;

typedef struct producers_msg {
  int thread;
  int seq;
} producers_msg;

typedef struct producer_ {
  producers *p;
  int id;
  pthread_t tid;
} producer_;

struct producers {
  int (*post)(producers_msg *m); /* PH_OK (m taken), PH_EFULL, a refusal */
  int n, per;                       /* threads (at most PRODUCERS_MAX), each */
  _Atomic int efull;                /* PH_EFULL answers, each retried */
  /* The loop side's count (producers_got). */
  int received, out_of_order, bad;
  int next_seq[PRODUCERS_MAX];
  producer_ t[PRODUCERS_MAX];
};

/* On the loop: one message arrived (bad: a thread id out of range). */
static inline void producers_got(producers *p, const producers_msg *m) {
  if (m->thread < 0 || m->thread >= p->n || m->thread >= PRODUCERS_MAX) {
    p->bad++;
    return;
  }
  if (m->seq != p->next_seq[m->thread])
    p->out_of_order++;
  p->next_seq[m->thread] = m->seq + 1;
  p->received++;
}

static inline void *producers_main_(void *arg) {
  producer_ *pr = arg;
  for (int i = 0; i < pr->p->per; i++) {
    producers_msg *m = malloc(sizeof(*m));
    if (!m)
      break;
    *m = (producers_msg){pr->id, i};
    int rc;
    long tries = 0;
    while ((rc = pr->p->post(m)) == PH_EFULL && tries++ < 50000000L) {
      atomic_fetch_add(&pr->p->efull, 1);
      sched_yield();
    }
    if (rc != PH_OK) {
      free(m);
      break;
    }
  }
  return NULL;
}

/* Starts the threads (the counts zeroed), runs loop until every message
 * arrived (at most ms: the TAP line "all cross-thread posts delivered
 * before the timeout"), then joins them. Whether they all arrived. */
static inline int producers_run(producers *p, struct ev_loop *loop, int ms) {
  atomic_store(&p->efull, 0);
  p->received = p->out_of_order = p->bad = 0;
  for (int i = 0; i < PRODUCERS_MAX; i++)
    p->next_seq[i] = 0;
  for (int i = 0; i < p->n && i < PRODUCERS_MAX; i++) {
    p->t[i] = (producer_){.p = p, .id = i};
    pthread_create(&p->t[i].tid, NULL, producers_main_, &p->t[i]);
  }
  int held = ok(poll_until(loop, p->received >= p->n * p->per, ms),
                "all cross-thread posts delivered before the timeout");
  for (int i = 0; i < p->n && i < PRODUCERS_MAX; i++)
    pthread_join(p->t[i].tid, NULL);
  return held;
}

#endif
