/* SPDX-License-Identifier: BSD-2-Clause */
/* The tunnel server's open executor (modules/tunnel_server/open_exec.h):
 * global and per-session bounds, the per-session cap applied first,
 * round-robin fairness among sessions, queue_full at once, cancel of a
 * waiting or running open (TM-P0-16, TM-SEC-6, TM-FAIL-2); and per
 * principal (a tenant with several sessions, issue 22 item 3): its
 * running and waiting caps, the session's waiting cap, and turns that go
 * round the principals before their sessions. */
#include <string.h>

#include "tunnel_server/open_exec.h"
#include "tap.h"

#define NJ 64

static int count_running(oexec_job *j, int n) {
  int r = 0;
  for (int i = 0; i < n; i++)
    r += j[i].state == OEXEC_RUNNING;
  return r;
}

/* Limits with one session per principal: the principal's caps are the
 * server's, its waiting cap per session too. */
static oexec_limits lim(uint32_t running, uint32_t pending,
                        uint32_t per_group) {
  oexec_limits l = {running, pending, running, pending, per_group, pending};
  return l;
}

static void init(oexec *x, uint32_t running, uint32_t pending,
                 uint32_t per_group) {
  oexec_limits l = lim(running, pending, per_group);
  oexec_init(x, &l);
}

static void relimit(oexec *x, uint32_t running, uint32_t pending,
                    uint32_t per_group) {
  oexec_limits l = lim(running, pending, per_group);
  oexec_set_limits(x, &l);
}

/* A principal per group: the cases before issue 22 item 3. */
static oexec_principal solo[8];
static int nsolo;
static void group_init(oexec_group *g) {
  oexec_principal_init(&solo[nsolo % 8]);
  oexec_group_init(g, &solo[nsolo++ % 8]);
}

static void test_bounds(void) {
  oexec x;
  oexec_group a;
  oexec_job j[NJ];
  memset(j, 0, sizeof(j));
  init(&x, 4, 3, 64);
  group_init(&a);
  int run = 0, q = 0, full = 0;
  for (int i = 0; i < 10; i++) {
    int v = oexec_submit(&x, &a, &j[i]);
    run += v == OEXEC_RUN;
    q += v == OEXEC_QUEUED;
    full += v == OEXEC_FULL;
  }
  is_int(run, 4, "TM-P0-16: max_concurrent_opens opens run at once");
  is_int(q, 3, "TM-P0-16: max_pending_opens opens wait");
  is_int(full, 3, "TM-FAIL-2: the rest is refused at once (queue_full)");
  is_int(j[9].state, OEXEC_IDLE, "TM-FAIL-2: a refused open holds nothing");
  ok(oexec_next(&x) == NULL, "no slot free: next() gives nothing");
  oexec_remove(&x, &j[0]);
  oexec_job *n = oexec_next(&x);
  ok(n == &j[4], "a freed slot goes to the oldest waiting open");
  ok(oexec_next(&x) == NULL, "one slot, one open");
  is_int((int)x.running, 4, "running stays at the bound");
  is_int((int)x.pending, 2, "pending went down by one");
  is_int(oexec_submit(&x, &a, &j[10]), OEXEC_QUEUED,
         "a place in the queue is free again");
  is_int(oexec_submit(&x, &a, &j[11]), OEXEC_FULL, "and then full again");
}

static void test_per_session_cap(void) {
  oexec x;
  oexec_group a, b;
  oexec_job ja[NJ], jb[NJ];
  memset(ja, 0, sizeof(ja));
  memset(jb, 0, sizeof(jb));
  init(&x, 8, 64, 3);
  group_init(&a);
  group_init(&b);
  for (int i = 0; i < 20; i++)
    oexec_submit(&x, &a, &ja[i]);
  is_int(count_running(ja, 20), 3,
         "TM-SEC-6: one session runs at most max_opens_per_session opens");
  is_int((int)x.running, 3, "the other global slots stay free");
  is_int(oexec_submit(&x, &b, &jb[0]), OEXEC_RUN,
         "TM-SEC-6: another session gets a slot at once");
  for (int i = 1; i < 5; i++)
    oexec_submit(&x, &b, &jb[i]);
  is_int(count_running(jb, 5), 3, "TM-SEC-6: the cap applies to it too");
  ok(oexec_next(&x) == NULL,
     "TM-SEC-6: the cap comes first: free global slots stay free");
}

static void test_round_robin(void) {
  oexec x;
  oexec_group g[3];
  oexec_job j[3][10];
  memset(j, 0, sizeof(j));
  init(&x, 1, 64, 64);
  for (int k = 0; k < 3; k++)
    group_init(&g[k]);
  /* Session 0 takes the one slot and queues 9 more; 1 and 2 queue after. */
  for (int i = 0; i < 10; i++)
    oexec_submit(&x, &g[0], &j[0][i]);
  for (int k = 1; k < 3; k++)
    for (int i = 0; i < 3; i++)
      oexec_submit(&x, &g[k], &j[k][i]);
  int order[9];
  oexec_job *cur = &j[0][0];
  for (int n = 0; n < 9; n++) {
    oexec_remove(&x, cur);
    cur = oexec_next(&x);
    order[n] = cur ? (int)(cur->group - g) : -1;
  }
  int turns[3] = {0, 0, 0};
  for (int n = 0; n < 9; n++)
    if (order[n] >= 0)
      turns[order[n]]++;
  is_int(turns[1], 3,
         "TM-SEC-6: a session queued behind a busy one gets every turn");
  is_int(turns[2], 3, "TM-SEC-6: and so does the third");
  ok(order[0] != order[1] && order[1] != order[2] && order[0] != order[2],
     "TM-SEC-6: the turns go round the sessions, not to the first one");
}

static void test_cancel(void) {
  oexec x;
  oexec_group a, b;
  oexec_job j[8];
  memset(j, 0, sizeof(j));
  init(&x, 1, 8, 8);
  group_init(&a);
  group_init(&b);
  oexec_submit(&x, &a, &j[0]);
  oexec_submit(&x, &a, &j[1]);
  oexec_submit(&x, &b, &j[2]);
  oexec_remove(&x, &j[1]);
  is_int(j[1].state, OEXEC_IDLE, "a waiting open that is cancelled is idle");
  is_int((int)x.pending, 1, "its place is free");
  is_int((int)a.pending, 0, "its session has nothing waiting");
  oexec_remove(&x, &j[0]);
  ok(oexec_next(&x) == &j[2],
     "the cancelled open never runs: the next session's does");
  oexec_remove(&x, &j[2]);
  is_int((int)x.running, 0, "a running open that is cancelled frees its slot");
  ok(oexec_next(&x) == NULL, "nothing is left");
  oexec_remove(&x, &j[2]);
  is_int((int)x.running, 0, "removing twice changes nothing");
  ok(x.principals == NULL, "no session is left in the ring");
}

static void test_limits_change(void) {
  oexec x;
  oexec_group a;
  oexec_job j[8];
  memset(j, 0, sizeof(j));
  init(&x, 0, 0, 0);
  is_int((int)x.lim.max_running, 1, "a zero limit reads as one");
  group_init(&a);
  oexec_submit(&x, &a, &j[0]);
  oexec_submit(&x, &a, &j[1]);
  is_int(oexec_submit(&x, &a, &j[2]), OEXEC_FULL, "bounds of one hold");
  relimit(&x, 4, 4, 4);
  ok(oexec_next(&x) == &j[1], "a raised limit lets waiting opens run");
  relimit(&x, 1, 1, 1);
  is_int(oexec_submit(&x, &a, &j[3]), OEXEC_QUEUED,
         "a lowered limit keeps what runs and queues new opens");
  oexec_remove(&x, &j[0]);
  ok(oexec_next(&x) == NULL, "lowered: no slot frees until below the limit");
  oexec_remove(&x, &j[1]);
  ok(oexec_next(&x) == &j[3], "then the waiting open runs");
}

/* Two tenants on one executor: principal A with four sessions (a[0..3]),
 * principal B with one (b). */
typedef struct tenants {
  oexec x;
  oexec_principal pa, pb;
  oexec_group a[4], b;
} tenants;

static void tenants_init(tenants *t, const oexec_limits *l) {
  oexec_init(&t->x, l);
  oexec_principal_init(&t->pa);
  oexec_principal_init(&t->pb);
  for (int k = 0; k < 4; k++)
    oexec_group_init(&t->a[k], &t->pa);
  oexec_group_init(&t->b, &t->pb);
}

/* Issue 22 item 3: principal A holds four sessions and a silent agent,
 * principal B one session. */
static void test_per_principal(void) {
  tenants t;
  static oexec_job ja[4][20], jb[20];
  memset(ja, 0, sizeof(ja));
  memset(jb, 0, sizeof(jb));
  oexec_limits l = {.max_running = 8, .max_pending = 64,
                    .per_principal = 4, .pending_per_principal = 10,
                    .per_group = 2, .pending_per_group = 3};
  tenants_init(&t, &l);
  int run = 0, q = 0, full_p = 0, full_g = 0;
  for (int i = 0; i < 5; i++)
    for (int k = 0; k < 4; k++) {
      int v = oexec_submit(&t.x, &t.a[k], &ja[k][i]);
      run += v == OEXEC_RUN;
      q += v == OEXEC_QUEUED;
      full_p += v == OEXEC_FULL_PRINCIPAL;
      full_g += v == OEXEC_FULL_GROUP;
    }
  is_int(run, 4, "item 3: a principal runs at most max_opens_per_principal "
                 "opens, however many sessions it has");
  is_int((int)t.pa.running, 4, "counted on the principal");
  is_int(q, 10, "item 3: and at most max_pending_per_principal wait");
  is_int(full_p, 6, "the rest is refused by the principal's bound");
  is_int(full_g, 0, "(no session reached its own waiting bound first)");
  is_int(oexec_submit(&t.x, &t.b, &jb[0]), OEXEC_RUN,
         "item 3: another principal's open runs at once");
  is_int((int)t.x.pending, 10, "the server's waiting places are not all "
                               "taken by the first tenant");
  for (int i = 1; i < 6; i++)
    oexec_submit(&t.x, &t.b, &jb[i]);
  is_int((int)t.b.running, 2, "the session cap still comes first (TM-SEC-6)");
  is_int((int)t.b.pending, 3, "item 3: a session waits for at most "
                              "max_pending_per_session places");
  is_int(jb[5].state, OEXEC_IDLE, "the next one of that session is refused");
  oexec_job k0 = {0};
  is_int(oexec_submit(&t.x, &t.b, &k0), OEXEC_FULL_GROUP,
         "refused by the session's waiting bound, said so");
}

/* Turns go round the principals first: a tenant with four sessions gets
 * one turn per round like a tenant with one. */
static void test_principal_turns(void) {
  tenants t;
  static oexec_job ja[4][4], jb[8];
  memset(ja, 0, sizeof(ja));
  memset(jb, 0, sizeof(jb));
  oexec_limits l = lim(1, 64, 1);
  tenants_init(&t, &l);
  for (int i = 0; i < 3; i++)
    for (int k = 0; k < 4; k++)
      oexec_submit(&t.x, &t.a[k], &ja[k][i]);
  for (int i = 0; i < 6; i++)
    oexec_submit(&t.x, &t.b, &jb[i]);
  oexec_job *cur = &ja[0][0];
  int turns_b = 0, alternating = 1, last_b = -1;
  for (int n = 0; n < 10; n++) {
    oexec_remove(&t.x, cur);
    cur = oexec_next(&t.x);
    if (!cur)
      break;
    int is_b = cur->group == &t.b;
    turns_b += is_b;
    if (last_b == is_b)
      alternating = 0;
    last_b = is_b;
  }
  is_int(turns_b, 5, "item 3: of 10 turns the one-session tenant gets 5");
  ok(alternating, "item 3: the turns alternate between the two tenants");
}

int main(void) {
  plan_lazy();
  test_bounds();
  test_per_session_cap();
  test_round_robin();
  test_cancel();
  test_limits_change();
  test_per_principal();
  test_principal_turns();
  return done_testing();
}
