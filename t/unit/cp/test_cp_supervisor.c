/* SPDX-License-Identifier: BSD-2-Clause */
/* The gateway's session supervisor (modules/controlplane_client/
 * cp_supervisor.c), pure: the order Register -> Watch -> validate ->
 * swap -> ACK -> heartbeats, what each status leads to, the backoff, and
 * readiness from the view's validity and the max stale age, a view that
 * cannot be built NACKed in the same session. A seeded run
 * of random events checks the invariants (never an ACK before a swap,
 * never a heartbeat outside RUNNING or before the first accepted ACK). */
#include <stdlib.h>
#include <string.h>

#include "controlplane_client/cp_supervisor.h"
#include "rng_test.h"
#include "tap.h"

static const uint8_t SUM[32] = {1, 2, 3};

static uint32_t fixed_rnd(void *arg) { return *(uint32_t *)arg; }

static cp_sup_limits limits(uint32_t *rnd) {
  cp_sup_limits l = {.backoff_min_ms = 100,
                     .backoff_max_ms = 10000,
                     .runtime_min_ms = 500,
                     .runtime_max_ms = 30000,
                     .max_stale_max_ms = 600000,
                     .rnd = fixed_rnd,
                     .rnd_arg = rnd};
  return l;
}

/* Start to RUNNING at t=1000 with a view valid until 61000 and a 30 s
 * max stale age. */
static void to_running(cp_sup *s, const cp_sup_limits *l) {
  cp_sup_start(s, l);
  cp_sup_registered(s, CP_GRPC_OK, 7, 1000, 30000, 1000);
  cp_sup_snapshot(s, 0, 42, 7, SUM);
  cp_sup_swapped(s, 1000, 61000);
  cp_sup_acked(s, CP_GRPC_OK, 1000);
}

static void test_happy_path(void) {
  uint32_t r = 0;
  cp_sup_limits l = limits(&r);
  cp_sup s;
  is_int(cp_sup_start(&s, &l), CP_ACT_REGISTER, "CP-2-3: start registers");
  ok(!cp_sup_ready(&s, 0), "CP-1-28: not ready without a snapshot");
  is_int(cp_sup_timer(&s, 5000), CP_ACT_NONE, "no heartbeat before a session");
  is_int(cp_sup_registered(&s, CP_GRPC_OK, 7, 1000, 30000, 1000),
         CP_ACT_WATCH, "CP-2-3: a session opens WatchSnapshots");
  is_int(s.epoch, 7, "the session's epoch is kept");
  is_int(cp_sup_timer(&s, 9000), CP_ACT_NONE,
         "CP-1-15: no heartbeat before the snapshot is ACKed");
  is_int(cp_sup_snapshot(&s, 0, 42, 7, SUM), CP_ACT_BUILD,
         "CP-2-3: a valid snapshot is built into a view");
  is_int(cp_sup_timer(&s, 9000), CP_ACT_NONE, "no heartbeat while building");
  ok(!cp_sup_ready(&s, 1000), "CP-1-28: not ready until the swap");
  is_int(cp_sup_swapped(&s, 1000, 61000), CP_ACT_ACK,
         "CP-2-3: the ACK comes only after the swap");
  ok(s.ack_version == 42 && s.ack_epoch == 7 &&
         memcmp(s.ack_checksum, SUM, 32) == 0,
     "CP-1-8: the ACK carries the snapshot's version, epoch and checksum");
  ok(cp_sup_ready(&s, 1000), "ready once the view is swapped in");
  is_int(cp_sup_timer(&s, 9000), CP_ACT_NONE,
         "CP-1-15: no heartbeat while the ACK is in flight");
  is_int(cp_sup_acked(&s, CP_GRPC_OK, 1000), CP_ACT_RUNTIME,
         "CP-1-15: heartbeats start after the ACK");
  ok(s.has_base && s.base_version == 42 && s.base_epoch == 7,
     "CP-2-13: the ACKed snapshot is the runtime baseline");
  is_int(s.report_sequence, 1, "CP-2-9: the first report is sequence 1");
  is_int(cp_sup_timer(&s, 5000), CP_ACT_NONE,
         "one report in flight at a time");
  is_int(cp_sup_runtime_done(&s, CP_GRPC_OK, 1100), CP_ACT_NONE,
         "an accepted report");
  is_int(cp_sup_timer(&s, 1999), CP_ACT_NONE,
         "CP-2-4: the next one waits for the interval");
  is_int(cp_sup_timer(&s, 2000), CP_ACT_RUNTIME,
         "CP-2-4: and goes when it is due");
  is_int(s.report_sequence, 2, "CP-2-9: sequences strictly increase");
  is_int(s.resend, 0, "a new report, not a resend");
}

static void test_readiness(void) {
  uint32_t r = 0;
  cp_sup_limits l = limits(&r);
  cp_sup s;
  to_running(&s, &l);
  ok(cp_sup_ready(&s, 30999), "ready within valid_until and max stale");
  ok(!cp_sup_ready(&s, 31000),
     "CP-3-18: not ready once max_stale_age passed without a new snapshot");
  /* A new snapshot restarts the stale clock; valid_until still bounds. */
  cp_sup_snapshot(&s, 0, 43, 7, SUM);
  cp_sup_swapped(&s, 20000, 40000);
  ok(cp_sup_ready(&s, 39999), "a newer view is ready until its valid_until");
  ok(!cp_sup_ready(&s, 40000),
     "CP-3-9: at valid_until the view gives no traffic, to the millisecond");
}

static void test_rejected_snapshot(void) {
  uint32_t r = 0;
  cp_sup_limits l = limits(&r);
  cp_sup s;
  to_running(&s, &l);
  cp_sup_runtime_done(&s, CP_GRPC_OK, 1000);
  is_int(cp_sup_snapshot(&s, 2 /* BAD_CHECKSUM */, 44, 7, SUM), CP_ACT_NACK,
         "CP-3-7: an invalid snapshot is answered with a negative ACK");
  is_int(s.nack_reason, 2, "with its reason");
  ok(cp_sup_ready(&s, 5000), "CP-3-14: the old view stays in use");
  is_int(cp_sup_acked(&s, CP_GRPC_OK, 5000), CP_ACT_NONE,
         "the negative ACK is accepted");
  is_int(cp_sup_timer(&s, 100000), CP_ACT_NONE,
         "CP-1-10: no heartbeat after a negative ACK");
  ok(!s.has_base, "CP-1-10: the runtime baseline is gone until a positive ACK");
  is_int(cp_sup_snapshot(&s, 0, 45, 7, SUM), CP_ACT_BUILD,
         "a later valid snapshot is taken");
  cp_sup_swapped(&s, 6000, 70000);
  is_int(cp_sup_acked(&s, CP_GRPC_OK, 6000), CP_ACT_RUNTIME,
         "CP-1-10: a positive ACK reopens the heartbeats");
  is_int(s.base_version, 45, "with the new baseline");
}

/* A snapshot that passed its validation but could not be built into a
 * view (controlplane_client's build_done): a negative ACK of the same
 * triple, the session and the old view kept. */
static void test_build_failed(void) {
  uint32_t r = 0;
  cp_sup_limits l = limits(&r);
  cp_sup s;
  to_running(&s, &l);
  cp_sup_runtime_done(&s, CP_GRPC_OK, 1000);
  uint64_t epoch = s.epoch;
  is_int(cp_sup_build_failed(&s, 3), CP_ACT_NONE,
         "no build in flight: a build failure is no event");
  is_int(cp_sup_snapshot(&s, 0, 46, 7, SUM), CP_ACT_BUILD,
         "a valid snapshot goes to the build");
  is_int(cp_sup_build_failed(&s, 4 /* TOO_LARGE */), CP_ACT_NACK,
         "CP-3-14: a view that cannot be built is answered with a negative "
         "ACK, not a new session");
  ok(s.state == CP_SUP_NACKING && s.nack_reason == 4 &&
         s.ack_version == 46 && s.ack_epoch == 7 &&
         memcmp(s.ack_checksum, SUM, 32) == 0,
     "CP-1-8: the NACK names the snapshot's triple and the reason");
  ok(cp_sup_ready(&s, 5000) && s.view_valid_until_ms == 61000,
     "CP-3-14: the old view stays in use, its validity unchanged");
  is_int(cp_sup_acked(&s, CP_GRPC_OK, 5000), CP_ACT_NONE,
         "the negative ACK is accepted");
  ok(s.state == CP_SUP_WATCHING && s.epoch == epoch,
     "the session and its stream stay (no backoff, no register)");
  is_int(cp_sup_timer(&s, 100000), CP_ACT_NONE,
         "CP-1-10: no heartbeat after the negative ACK");
  is_int(cp_sup_snapshot(&s, 0, 47, 7, SUM), CP_ACT_BUILD,
         "a later snapshot on the stream is built again");
  is_int(cp_sup_swapped(&s, 6000, 70000), CP_ACT_ACK, "and swapped in");
  is_int(cp_sup_acked(&s, CP_GRPC_OK, 6000), CP_ACT_RUNTIME,
         "CP-1-10: its positive ACK reopens the heartbeats");
  /* The first snapshot of a session: no view yet, still a NACK. */
  cp_sup_start(&s, &l);
  cp_sup_registered(&s, CP_GRPC_OK, 8, 1000, 30000, 1000);
  cp_sup_snapshot(&s, 0, 1, 8, SUM);
  is_int(cp_sup_build_failed(&s, 0), CP_ACT_NACK,
         "a failed first build is NACKed too");
  is_int(s.nack_reason, 3, "reason 0 is sent as MALFORMED");
  ok(!cp_sup_ready(&s, 2000), "CP-1-28: still not ready without a view");
}

static void test_fatal(void) {
  uint32_t r = 0;
  cp_sup_limits l = limits(&r);
  const int codes[] = {CP_GRPC_INVALID_ARGUMENT, CP_GRPC_PERMISSION_DENIED,
                       CP_GRPC_UNAUTHENTICATED, CP_GRPC_FAILED_PRECONDITION,
                       CP_GRPC_UNIMPLEMENTED};
  const char *names[] = {
      "CP-3-13: INVALID_ARGUMENT at registration is fatal",
      "CP-3-13: PERMISSION_DENIED (identity) is fatal",
      "CP-3-13: UNAUTHENTICATED is fatal",
      "CP-7-4: FAILED_PRECONDITION at registration (protocol version) is fatal",
      "UNIMPLEMENTED (not a controller) is fatal"};
  for (int i = 0; i < 5; i++) {
    cp_sup s;
    cp_sup_start(&s, &l);
    int a = cp_sup_registered(&s, codes[i], 0, 0, 0, 0);
    ok(a == CP_ACT_FATAL && s.state == CP_SUP_FATAL &&
           s.fatal_call == CP_CALL_REGISTER && s.fatal_code == codes[i],
       names[i]);
    is_int(cp_sup_timer(&s, 1000000), CP_ACT_NONE,
           "and nothing is retried after it");
  }
  cp_sup s;
  to_running(&s, &l);
  is_int(cp_sup_failed(&s, CP_CALL_WATCH, CP_GRPC_FAILED_PRECONDITION, 2000),
         CP_ACT_BACKOFF,
         "CP-2-8: FAILED_PRECONDITION on the stream (session replaced) "
         "starts a new session");
  to_running(&s, &l);
  is_int(cp_sup_failed(&s, CP_CALL_WATCH, CP_GRPC_PERMISSION_DENIED, 2000),
         CP_ACT_FATAL, "CP-3-13: PERMISSION_DENIED on the stream is fatal");
}

static void test_backoff(void) {
  uint32_t r = 0; /* the bottom of every jitter span */
  cp_sup_limits l = limits(&r);
  cp_sup s;
  cp_sup_start(&s, &l);
  uint32_t want[] = {50, 100, 200, 400, 800, 1600, 3200, 5000, 5000};
  int64_t now = 0;
  int good = 1;
  for (int i = 0; i < 9; i++) {
    int a = cp_sup_registered(&s, CP_GRPC_UNAVAILABLE, 0, 0, 0, now);
    if (a != CP_ACT_BACKOFF || s.wait_ms != want[i])
      good = 0;
    if (cp_sup_timer(&s, now + s.wait_ms - 1) != CP_ACT_NONE)
      good = 0;
    now += s.wait_ms;
    if (cp_sup_timer(&s, now) != CP_ACT_REGISTER)
      good = 0;
  }
  ok(good, "CP-7-5, CP-1-27: an unreachable controller is retried with "
           "exponential backoff, bounded, never before the timer");
  r = UINT32_MAX;
  cp_sup_registered(&s, CP_GRPC_UNAVAILABLE, 0, 0, 0, now);
  ok(s.wait_ms >= 5000 && s.wait_ms <= 10000,
     "CP-7-5: the jitter stays within [d/2, d] at the cap");
  /* A session that reached RUNNING resets the attempts. */
  r = 0;
  to_running(&s, &l);
  cp_sup_failed(&s, CP_CALL_WATCH, CP_GRPC_OK, 70000);
  is_int(s.wait_ms, 50,
         "CP-3-12: after a healthy session the backoff starts low again");
  ok(s.state == CP_SUP_BACKOFF,
     "CP-3-11: the stream's end (at valid_until) starts a new session");
  ok(cp_sup_ready(&s, 60000) == 0 && cp_sup_ready(&s, 30000) == 1,
     "CP-3-14: the old view stays until its own deadline meanwhile");
  is_int(cp_sup_next_timer_ms(&s, 70000), 70050,
         "the driver's timer is the backoff's end");
  to_running(&s, &l);
  is_int(cp_sup_failed(&s, CP_CALL_OUTCOMES, CP_GRPC_FAILED_PRECONDITION,
                       2000),
         CP_ACT_BACKOFF,
         "CP-5-17: an outcome session-fence error rebuilds the session");
}

/* Issue 23 item 3: the channel's connection back (READY) ends the wait
 * at once, so a session comes within the channel's backoff.max of the
 * controller's return, not after the timer's next try as well; in any
 * other state it changes nothing. */
static void test_channel_ready(void) {
  uint32_t r = UINT32_MAX; /* the top of every jitter span */
  cp_sup_limits l = limits(&r);
  cp_sup s;
  is_int(cp_sup_start(&s, &l), CP_ACT_REGISTER, "start registers");
  is_int(cp_sup_channel_ready(&s), CP_ACT_NONE,
         "issue 23 item 3: a ready channel while registering: nothing more");
  int64_t now = 0;
  for (int i = 0; i < 9; i++) {
    cp_sup_registered(&s, CP_GRPC_UNAVAILABLE, 0, 0, 0, now);
    cp_sup_timer(&s, now += s.wait_ms);
  }
  cp_sup_registered(&s, CP_GRPC_UNAVAILABLE, 0, 0, 0, now);
  ok(s.state == CP_SUP_BACKOFF && s.wait_ms >= 5000 && s.wait_ms <= 10000,
     "an unreachable controller: the timer waits up to backoff.max");
  is_int(cp_sup_timer(&s, now + 1), CP_ACT_NONE, "... not over yet");
  is_int(cp_sup_channel_ready(&s), CP_ACT_REGISTER,
         "issue 23 item 3: the channel ready again: register now, not at "
         "the timer");
  is_int(s.state, CP_SUP_REGISTERING, "... the session is registering");
  is_int(cp_sup_next_timer_ms(&s, now + 1), -1, "... the timer is off");
  is_int(cp_sup_channel_ready(&s), CP_ACT_NONE,
         "a second ready while registering: one call only");
  to_running(&s, &l);
  is_int(cp_sup_channel_ready(&s), CP_ACT_NONE,
         "RUNNING: a ready channel changes nothing");
  ok(s.state == CP_SUP_RUNNING, "... still running");
  cp_sup_registered(&s, CP_GRPC_OK, 0, 0, 0, 0); /* ignored: not registering */
  s.state = CP_SUP_FATAL;
  is_int(cp_sup_channel_ready(&s), CP_ACT_NONE,
         "CP-3-13: FATAL is never retried, ready channel or not");
}

static void test_runtime_retry(void) {
  uint32_t r = 0;
  cp_sup_limits l = limits(&r);
  cp_sup s;
  to_running(&s, &l);
  is_int(s.report_sequence, 1, "report 1 in flight");
  is_int(cp_sup_runtime_done(&s, CP_GRPC_UNAVAILABLE, 1200), CP_ACT_NONE,
         "CP-5-16: a transport error does not end the session");
  is_int(cp_sup_timer(&s, 2000), CP_ACT_RUNTIME, "the report is sent again");
  ok(s.report_sequence == 1 && s.resend == 1,
     "CP-2-10: with the same sequence and content (an idempotent replay)");
  cp_sup_runtime_done(&s, CP_GRPC_OK, 2100);
  cp_sup_timer(&s, 3000);
  ok(s.report_sequence == 2 && s.resend == 0, "then a new report");
  is_int(cp_sup_runtime_done(&s, CP_GRPC_FAILED_PRECONDITION, 3100),
         CP_ACT_BACKOFF,
         "CP-2-5: a report of a replaced session ends the session");
  to_running(&s, &l);
  is_int(cp_sup_runtime_done(&s, CP_GRPC_ABORTED, 1100), CP_ACT_BACKOFF,
         "CP-2-10: a sequence the controller calls old ends the session");
}

/* Issue 23 item 2 (CP-2-6): every ownership change raises the cluster's
 * one epoch, so a report or an ACK of another worker's snapshot is
 * refused as stale while that worker's next snapshot is on its way. The
 * data is rejected, the session is not lost: no new registration, no
 * backoff; reports stop until the snapshot it is owed is ACKed. */
static void test_stale_epoch(void) {
  uint32_t r = 0;
  cp_sup_limits l = limits(&r);
  cp_sup s;
  to_running(&s, &l);
  is_int(cp_sup_runtime_done(&s, CP_SUP_STALE_EPOCH, 1100), CP_ACT_NONE,
         "CP-2-6 (issue 23 item 2): a report refused for a stale epoch does "
         "not end the session");
  is_int(s.state, CP_SUP_WATCHING, "... it waits for the snapshot it is owed");
  ok(cp_sup_ready(&s, 1100), "... and keeps its view (still ready)");
  is_int(cp_sup_timer(&s, 5000), CP_ACT_NONE,
         "... no report on a baseline the controller refuses");
  is_int(cp_sup_snapshot(&s, 0, 43, 8, SUM), CP_ACT_BUILD,
         "the owed snapshot (epoch 8) is built");
  cp_sup_swapped(&s, 5000, 65000);
  is_int(cp_sup_acked(&s, CP_SUP_STALE_EPOCH, 5000), CP_ACT_NONE,
         "CP-2-6 (issue 23 item 2): an ACK refused for a stale epoch (the "
         "epoch moved on again) does not end the session");
  is_int(s.state, CP_SUP_WATCHING, "... it waits for the next snapshot");
  is_int(cp_sup_timer(&s, 9000), CP_ACT_NONE, "... without reports");
  cp_sup_snapshot(&s, 0, 44, 9, SUM);
  cp_sup_swapped(&s, 9000, 69000);
  is_int(cp_sup_acked(&s, CP_GRPC_OK, 9000), CP_ACT_RUNTIME,
         "its ACK accepted: reports resume at once");
  ok(s.base_version == 44 && s.base_epoch == 9 && s.report_sequence == 2,
     "CP-2-9 CP-2-13: on the new baseline, the sequence still rising");
  /* A report sent on the old baseline and answered after the new ACK. */
  cp_sup_runtime_done(&s, CP_GRPC_OK, 9100);
  is_int(cp_sup_timer(&s, 10000), CP_ACT_RUNTIME, "report 3 (epoch 9)");
  cp_sup_snapshot(&s, 0, 45, 10, SUM);
  cp_sup_swapped(&s, 10000, 70000);
  cp_sup_acked(&s, CP_GRPC_OK, 10000);
  is_int(cp_sup_runtime_done(&s, CP_SUP_STALE_EPOCH, 10100), CP_ACT_NONE,
         "a stale answer to a report older than the baseline");
  is_int(s.state, CP_SUP_RUNNING, "... changes nothing: already on epoch 10");
  is_int(cp_sup_timer(&s, 11000), CP_ACT_RUNTIME, "... reports go on");
  is_int(s.attempt, 0, "no failure was counted");
  is_int(cp_sup_runtime_done(&s, CP_GRPC_FAILED_PRECONDITION, 11100),
         CP_ACT_BACKOFF,
         "CP-2-5: any other FAILED_PRECONDITION still ends the session");
}

static void test_clipping(void) {
  uint32_t r = 0;
  cp_sup_limits l = limits(&r);
  cp_sup s;
  cp_sup_start(&s, &l);
  cp_sup_registered(&s, CP_GRPC_OK, 1, 1, 0, 0);
  ok(s.runtime_interval_ms == 500 && s.max_stale_ms == 600000,
     "a runtime interval below the bound and a missing max stale age are "
     "clipped to the bounds");
  cp_sup_start(&s, &l);
  cp_sup_registered(&s, CP_GRPC_OK, 1, 999999, 999999999u, 0);
  ok(s.runtime_interval_ms == 30000 && s.max_stale_ms == 600000,
     "and so are values above them");
}

/* Random events: invariants hold in every state. */
static uint64_t rng = 88172645463325252ull;
static uint32_t next_rand(void *arg) {
  (void)arg;
  return (uint32_t)rng_test_next(&rng);
}

static void test_random(void) {
  cp_sup_limits l = {.backoff_min_ms = 10, .backoff_max_ms = 1000,
                     .runtime_min_ms = 10, .runtime_max_ms = 1000,
                     .max_stale_max_ms = 5000, .rnd = next_rand};
  static const int codes[] = {CP_GRPC_OK, CP_GRPC_OK, CP_GRPC_OK,
                              CP_GRPC_UNAVAILABLE, CP_GRPC_FAILED_PRECONDITION,
                              CP_GRPC_DEADLINE_EXCEEDED, CP_GRPC_ABORTED,
                              CP_SUP_STALE_EPOCH};
  int bad_ack = 0, bad_runtime = 0, bad_seq = 0, running = 0, runs = 0;
  cp_sup s;
  for (int run = 0; run < 200; run++) {
    cp_sup_start(&s, &l);
    int64_t now = 0;
    int swapped = 0;
    uint64_t last_seq = 0;
    for (int step = 0; step < 500 && s.state != CP_SUP_FATAL; step++) {
      now += next_rand(NULL) % 300;
      int code = codes[next_rand(NULL) % 8];
      int a = CP_ACT_NONE;
      /* Mostly the event the state waits for, sometimes any other. */
      int ev = (int)(next_rand(NULL) % 8);
      if (next_rand(NULL) % 10 < 7) {
        static const int expected[] = {
            [CP_SUP_REGISTERING] = 0, [CP_SUP_WATCHING] = 1,
            [CP_SUP_SWAPPING] = 2,    [CP_SUP_ACKING] = 3,
            [CP_SUP_NACKING] = 3,     [CP_SUP_RUNNING] = 4,
            [CP_SUP_BACKOFF] = 4};
        ev = expected[s.state];
        if (s.state == CP_SUP_RUNNING && s.runtime_in_flight)
          ev = 5;
        if (s.state == CP_SUP_BACKOFF)
          now += 1000;
        if (next_rand(NULL) % 4)
          code = CP_GRPC_OK;
      }
      switch (ev) {
      case 0: a = cp_sup_registered(&s, code, 1, 100, 2000, now); break;
      case 1: a = cp_sup_snapshot(&s, (int)(next_rand(NULL) % 3), 9, 1, SUM); break;
      case 2:
        if (next_rand(NULL) % 5 == 0) {
          a = cp_sup_build_failed(&s, 3);
          break;
        }
        a = cp_sup_swapped(&s, now, now + 1000);
        swapped |= a == CP_ACT_ACK;
        break;
      case 3: a = cp_sup_acked(&s, code, now); break;
      case 4: a = cp_sup_timer(&s, now); break;
      case 5: a = cp_sup_runtime_done(&s, code, now); break;
      case 7: a = cp_sup_channel_ready(&s); break;
      default: a = cp_sup_failed(&s, CP_CALL_WATCH, code, now); break;
      }
      if (a == CP_ACT_ACK && !swapped)
        bad_ack++;
      if (a == CP_ACT_RUNTIME) {
        if (s.state != CP_SUP_RUNNING || !s.has_base)
          bad_runtime++;
        if (s.report_sequence < last_seq ||
            (s.report_sequence == last_seq && !s.resend))
          bad_seq++;
        last_seq = s.report_sequence;
      }
      if (a == CP_ACT_REGISTER)
        last_seq = 0; /* a new session starts its sequences again */
      if (a == CP_ACT_BACKOFF && (s.wait_ms < 5 || s.wait_ms > 1000))
        bad_runtime++;
      running += s.state == CP_SUP_RUNNING;
      runs++;
    }
  }
  is_int(bad_ack, 0, "random events: never an ACK before a swap (CP-2-3)");
  is_int(bad_runtime, 0,
         "random events: heartbeats only in RUNNING with a baseline, "
         "backoff within bounds");
  is_int(bad_seq, 0, "random events: report sequences never go back (CP-2-9)");
  ok(runs > 10000 && running > 100,
     "random events: many steps, RUNNING reached often");
}

int main(void) {
  plan_lazy();
  test_happy_path();
  test_readiness();
  test_rejected_snapshot();
  test_build_failed();
  test_fatal();
  test_backoff();
  test_channel_ready();
  test_runtime_retry();
  test_stale_epoch();
  test_clipping();
  test_random();
  return done_testing();
}
