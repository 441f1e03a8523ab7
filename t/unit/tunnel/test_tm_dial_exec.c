/* SPDX-License-Identifier: BSD-2-Clause */
/* tunnel_agent's dial executor (modules/tunnel_agent/dial_exec.c) through
 * the mock host, against a fake connector this test registers: it answers
 * by the target's name, late, never, by failure, or refuses the request,
 * and counts opens, cancels and dials in flight. The executor is created
 * by a small driver module (it needs a ctx and the connector service).
 * Every wait is bounded: the loop runs in short steps until a condition
 * holds or a generous limit passes; no timing threshold is asserted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <proxyhost/connector.h>
#include <proxyhost/mock.h>
#include <proxyhost/module.h>

#include "tunnel_agent/dial_exec.h"
#include "tap.h"

#include "tm_fakeconn.h"

static int in_submit; /* the test is inside dial_exec_submit */
static int cb_inside_submit;

/* ---- results --------------------------------------------------------------- */

typedef struct outcome {
  int done;
  int stage, code, fd;
  dial_times t;
} outcome;

static void on_done(void *arg, const ph_open_result *res, const dial_times *t) {
  outcome *o = arg;
  if (in_submit)
    cb_inside_submit = 1;
  o->done++;
  o->stage = res->stage;
  o->code = res->code;
  o->fd = res->fd;
  o->t = *t;
  if (res->fd >= 0)
    close(res->fd); /* the callee owns it */
}

static ph_mock *m;

/* A guard that refuses every IP address and counts the questions. */
static int refuse_ip(void *arg, const struct sockaddr *sa) {
  (void)sa;
  ++*(int *)arg;
  return 0;
}

static void setup(void) {
  char e[1024];
  m = ph_mock_new("[log]\nlevel = warn\n", e, sizeof(e));
  if (!m || ph_mock_add(m, &fake_mod, e, sizeof(e)) < 0 ||
      ph_mock_add(m, &drv_mod, e, sizeof(e)) < 0 ||
      ph_mock_init(m, e, sizeof(e)) < 0 || ph_mock_start(m, e, sizeof(e)) < 0) {
    printf("Bail out! mock host: %s\n", e);
    exit(1);
  }
}

static dial_exec *new_exec(uint32_t conc, uint32_t pend, uint32_t open_ms,
                           uint32_t conn_ms) {
  dial_exec_cfg c = {conc, pend, open_ms, conn_ms, NULL, NULL};
  return dial_exec_new(dapi, dctx, dconn, dcself, &c);
}

static dial_task *submit(dial_exec *x, const char *host, outcome *o,
                         int *code) {
  int c = -1;
  in_submit = 1;
  dial_task *t = dial_exec_submit(x, host, 443, on_done, o, &c);
  in_submit = 0;
  if (code)
    *code = c;
  return t;
}

/* Runs the loop in 10 ms steps until *flag >= want, at most limit_ms. */
static int wait_for(const int *flag, int want, int limit_ms) {
  for (int waited = 0; *flag < want && waited < limit_ms; waited += 10)
    ph_mock_run_for(m, 10);
  return *flag >= want;
}


int main(void) {
  plan_lazy();
  setup();

  /* TM-P0-2, TM-P0-6 (issue 24 item 4): submit only enqueues. The
   * connector's open (the policy check, /etc/hosts, DNS, connect) runs on
   * the loop's next turn, never on the reader's stack, in submit order;
   * a cancel does not dispatch on its caller's stack either. */
  {
    reset_counts();
    dial_exec *x = new_exec(8, 8, 60000, 60000);
    outcome o[4];
    memset(o, 0, sizeof(o));
    dial_task *t[4];
    t[0] = submit(x, "hang-a.test", &o[0], NULL);
    t[1] = submit(x, "hang-b.test", &o[1], NULL);
    t[2] = submit(x, "hang-c.test", &o[2], NULL);
    ok(t[0] && t[1] && t[2], "TM-P0-2: three submits taken");
    is_int(f_opened, 0, "TM-P0-2: submit returned without calling the "
                        "connector (no policy, hosts, DNS or connect on the "
                        "reader's stack)");
    is_int((int)dial_exec_pending(x), 3, "they wait in the queue");
    ph_mock_run_for(m, 0);
    is_int(f_opened, 3, "TM-P0-2: the next loop turn hands them to the "
                        "connector");
    is_str(f_order, "hang-a.test,hang-b.test,hang-c.test,",
           "TM-P0-2: in submit order");
    dial_exec_free(x);

    /* A freed slot: the waiting task reaches the connector on the next
     * turn, not inside dial_task_cancel (the reader's RESET). */
    reset_counts();
    x = new_exec(1, 4, 60000, 60000);
    t[0] = submit(x, "hang-1.test", &o[0], NULL);
    t[1] = submit(x, "hang-2.test", &o[1], NULL);
    t[2] = submit(x, "hang-3.test", &o[2], NULL);
    ph_mock_run_for(m, 0);
    is_int(f_opened, 1, "one slot: one dial");
    dial_task_cancel(t[0]);
    is_int(f_opened, 1, "TM-P0-2: the cancel returned without dispatching "
                        "the next one");
    ph_mock_run_for(m, 0);
    is_str(f_order, "hang-1.test,hang-2.test,",
           "the next loop turn dispatches the oldest waiting one");
    dial_exec_free(x);
    is_int(f_in_flight, 0, "nothing left in the connector");
  }

  /* TM-TEST-6: two blocked dials do not block a third, ready stream. */
  {
    reset_counts();
    dial_exec *x = new_exec(32, 128, 60000, 60000);
    outcome h1 = {0}, h2 = {0}, r = {0};
    ok(submit(x, "hang1.test", &h1, NULL) && submit(x, "hang2.test", &h2, NULL),
       "TM-TEST-6: two dials that never answer are taken");
    ok(submit(x, "ready.test", &r, NULL), "TM-TEST-6: a third is taken");
    ok(wait_for(&r.done, 1, 5000), "TM-TEST-6: the ready one answers while "
                                   "the other two still hang");
    is_int(r.code, PH_OPEN_OK, "TM-TEST-6: and it is open");
    ok(r.fd >= 0, "TM-TEST-6: with its socket");
    is_int(h1.done + h2.done, 0, "TM-TEST-6: the blocked ones are still "
                                 "pending");
    is_int((int)dial_exec_running(x), 2, "TM-TEST-6: two dials still running");
    ok(!cb_inside_submit, "TM-P0-2: no answer ever comes from inside submit");
    dial_exec_free(x);
    is_int(f_cancelled, 2, "TM-TEST-8: freeing the executor (the session "
                           "closed) cancels both hanging dials");
    is_int(h1.done + h2.done, 0, "TM-TEST-8: and their callbacks never run");
    is_int(f_in_flight, 0, "nothing left in the connector");
  }

  /* TM-TEST-7 / TM-P0-3/4: concurrency and pending strictly bounded. */
  {
    reset_counts();
    dial_exec *x = new_exec(2, 3, 60000, 60000);
    outcome o[6];
    memset(o, 0, sizeof(o));
    dial_task *t[6];
    for (int i = 0; i < 5; i++) {
      char h[32];
      snprintf(h, sizeof(h), "hang%d.test", i);
      t[i] = submit(x, h, &o[i], NULL);
    }
    ok(t[0] && t[1] && t[2] && t[3] && t[4],
       "TM-TEST-7: 2 running + 3 pending are taken");
    ph_mock_run_for(m, 0); /* the dispatch's turn */
    is_int((int)dial_exec_running(x), 2, "TM-TEST-7: exactly 2 running");
    is_int((int)dial_exec_pending(x), 3, "TM-TEST-7: exactly 3 pending");
    is_int(f_in_flight, 2, "TM-P0-4: the connector sees 2 dials");
    int code = -1;
    t[5] = submit(x, "hang5.test", &o[5], &code);
    ok(!t[5], "TM-TEST-7, TM-P0-3: the sixth is refused at once");
    is_int(code, PH_OPEN_QUEUE_FULL, "TM-P0-3: as queue_full");
    ph_mock_run_for(m, 50);
    is_int(o[0].done + o[1].done + o[2].done + o[3].done + o[4].done, 0,
           "TM-FAIL-1: the refusal touched none of the others");
    dial_task_cancel(t[0]);
    is_int(f_cancelled, 1, "TM-TEST-8: a reset cancels the running dial in "
                           "the connector");
    ph_mock_run_for(m, 0); /* the dispatch's turn */
    is_int((int)dial_exec_running(x), 2, "TM-TEST-7: a pending one took the "
                                         "freed slot");
    is_int((int)dial_exec_pending(x), 2, "TM-TEST-7: 2 left pending");
    dial_task_cancel(t[4]);
    is_int((int)dial_exec_pending(x), 1, "a pending task cancelled leaves the "
                                         "queue");
    is_int(f_opened, 3, "the cancelled pending task never reached the "
                        "connector");
    ok(f_max_in_flight <= 2, "TM-P0-4: never more than 2 in flight");
    ph_mock_run_for(m, 30);
    is_int(o[0].done + o[4].done, 0, "TM-TEST-8: cancelled tasks get no "
                                     "answer");
    dial_exec_free(x);
  }

  /* Slots are handed on in order as dials finish; never above the bound. */
  {
    reset_counts();
    dial_exec *x = new_exec(3, 20, 60000, 60000);
    outcome o[20];
    memset(o, 0, sizeof(o));
    int all = 1;
    for (int i = 0; i < 20; i++)
      all &= submit(x, i % 2 ? "late.test" : "ready.test", &o[i], NULL) != NULL;
    ok(all, "TM-TEST-7: 3 running + 17 pending taken");
    int total = 0;
    for (int step = 0; step < 1000 && total < 20; step++) {
      ph_mock_run_for(m, 10);
      total = 0;
      for (int i = 0; i < 20; i++)
        total += o[i].done;
    }
    is_int(total, 20, "every queued dial eventually ran and answered");
    ok(f_max_in_flight <= 3, "TM-TEST-7: at most 3 dials ever in flight");
    is_int(f_max_in_flight, 3, "and the 3 slots were used");
    dial_exec_free(x);
  }

  /* Failures keep their stage and code (TM-P0-8, TM-FAIL-3). */
  {
    dial_exec *x = new_exec(4, 4, 60000, 60000);
    outcome a = {0}, b = {0};
    submit(x, "refused.test", &a, NULL);
    submit(x, "nxdomain.test", &b, NULL);
    ok(wait_for(&a.done, 1, 5000) && wait_for(&b.done, 1, 5000),
       "TM-FAIL-3: failed dials answer");
    ok(a.stage == PH_STAGE_CONNECT && a.code == PH_OPEN_CONNECTION_REFUSED,
       "TM-FAIL-3: connect/connection_refused passes through");
    ok(b.stage == PH_STAGE_DNS && b.code == PH_OPEN_HOST_UNREACHABLE,
       "TM-FAIL-3: dns/host_unreachable passes through");
    outcome c = {0};
    f_refuse_next = 1;
    ok(submit(x, "ready.test", &c, NULL) != NULL,
       "a request the connector refuses is still taken");
    is_int(c.done, 0, "and not answered inside submit");
    ok(wait_for(&c.done, 1, 5000), "it is answered from the loop");
    ok(c.stage == PH_STAGE_PROTOCOL && c.code == PH_OPEN_INTERNAL_ERROR,
       "as protocol/internal_error");
    is_int((int)dial_exec_running(x), 0, "and its slot is free again");
    dial_exec_free(x);
  }

  /* TM-P0-5: the open timeout and the dial timeout cancel the dial. */
  {
    reset_counts();
    dial_exec *x = new_exec(1, 4, 150, 10000);
    outcome run = {0}, queued = {0};
    submit(x, "hang.test", &run, NULL);
    submit(x, "hang-too.test", &queued, NULL);
    ok(wait_for(&run.done, 1, 5000), "TM-P0-5: a hanging dial ends at the open "
                                     "timeout");
    ok(run.stage == PH_STAGE_CONNECT && run.code == PH_OPEN_TIMEOUT,
       "TM-P0-5: as connect/timeout");
    ok(wait_for(&queued.done, 1, 5000), "TM-P0-5: a queued one ends at its "
                                        "open timeout too");
    /* It may have got the slot just before its own deadline; either way it
     * timed out, in the queue or in the dial. */
    is_int(queued.code, PH_OPEN_TIMEOUT, "TM-P0-5: with code timeout");
    is_int(f_cancelled, f_opened, "TM-P0-5: every dial that reached the "
                                  "connector was cancelled there");
    is_int(f_in_flight, 0, "nothing left in the connector");
    dial_exec_free(x);

    reset_counts();
    x = new_exec(1, 4, 10000, 150);
    outcome busy = {0}, waiting = {0};
    submit(x, "hang.test", &busy, NULL);
    /* Behind one slot: every queued task ends by its own open timeout,
     * in the queue or in the dial it got at the last moment (equal
     * timeouts expire in FIFO order, so which one is not asserted). */
    dial_exec_cfg qc = {1, 4, 100, 10000, NULL, NULL};
    dial_exec *y = dial_exec_new(dapi, dctx, dconn, dcself, &qc);
    outcome q[4];
    memset(q, 0, sizeof(q));
    for (int i = 0; i < 4; i++)
      submit(y, "hang-queued.test", &q[i], NULL);
    (void)waiting;
    int ended = 1;
    for (int i = 0; i < 4; i++)
      ended &= wait_for(&q[i].done, 1, 5000);
    ok(ended, "every task behind a busy slot ends by its open timeout");
    int all_timeout = 1, stages_ok = 1;
    for (int i = 0; i < 4; i++) {
      all_timeout &= q[i].done == 1 && q[i].code == PH_OPEN_TIMEOUT;
      stages_ok &= q[i].stage == PH_STAGE_QUEUE ||
                   q[i].stage == PH_STAGE_CONNECT;
    }
    ok(all_timeout, "TM-P0-5: each queued task answered once, timeout");
    ok(stages_ok, "in stage queue (never got a slot) or connect");
    ok(wait_for(&busy.done, 1, 5000), "streams.connect_timeout bounds a dial");
    ok(busy.stage == PH_STAGE_CONNECT && busy.code == PH_OPEN_TIMEOUT,
       "as connect/timeout");
    dial_exec_free(x);
    dial_exec_free(y);
    is_int(f_in_flight, 0, "nothing left in the connector");
  }

  /* Queue wait is measured for the metrics (TM_Q_DIAL). */
  {
    dial_exec *x = new_exec(1, 4, 60000, 60000);
    outcome a = {0}, b = {0};
    submit(x, "late.test", &a, NULL);
    submit(x, "ready.test", &b, NULL);
    ok(wait_for(&b.done, 1, 5000), "the second dial ran after the first");
    ok(b.t.queue_us > 0 && a.t.dial_us > 0, "queue wait and dial time are "
                                            "recorded");
    dial_exec_free(x);
  }

  /* Issue 22 item 5: the agent's guard (cfg.addr_ok) reaches the
   * connector as the request's addr_filter, and the executor checks the
   * peer of the socket it gets from a connector that ignored it. */
  {
    int asked = 0;
    dial_exec_cfg gc = {4, 4, 60000, 60000, refuse_ip, &asked};
    dial_exec *x = dial_exec_new(dapi, dctx, dconn, dcself, &gc);
    outcome tcp = {0}, pair = {0};
    submit(x, "tcp.test", &tcp, NULL);
    ph_mock_run_for(m, 0); /* the dispatch's turn */
    ok(f_last_filter && f_last_filter->allow,
       "issue 22 item 5: the request carries the agent's address filter");
    ok(wait_for(&tcp.done, 1, 5000), "the dial to 127.0.0.1 answers");
    ok(tcp.stage == PH_STAGE_POLICY && tcp.code == PH_OPEN_FORBIDDEN &&
           tcp.fd < 0,
       "issue 22 item 5: a socket whose peer the guard refuses is closed "
       "and the open is policy/forbidden");
    is_int(tcp.t.addr_refused, 1, "... and the refusal is reported");
    is_int(asked, 1, "the guard judged the socket's peer");
    submit(x, "ready.test", &pair, NULL);
    ok(wait_for(&pair.done, 1, 5000) && pair.code == PH_OPEN_OK &&
           pair.t.addr_refused == 0,
       "a socketpair from an in-process connector has no address to judge");
    dial_exec_free(x);
    outcome plain = {0};
    x = new_exec(4, 4, 60000, 60000);
    submit(x, "tcp.test", &plain, NULL);
    ph_mock_run_for(m, 0); /* the dispatch's turn */
    ok(!f_last_filter, "without a guard, no filter is passed");
    ok(wait_for(&plain.done, 1, 5000) && plain.code == PH_OPEN_OK,
       "and the same socket is the caller's");
    dial_exec_free(x);
  }

  ph_mock_stop(m);
  ph_mock_free(m);
  return done_testing();
}
