/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for host/bus.c (with host/mailbox.c). */
#include <ev.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "bus.h"
#include "mailbox.h"
#include "counter_test.h"
#include "loop_test.h"
#include "metrics.h"
#include "producers_test.h"
#include "tap.h"

/* ---- payloads with a free counter -------------------------------------- */

static _Atomic int payload_frees;

typedef struct msg {
  int thread;
  int seq;
} msg;

static msg *msg_new(int thread, int seq) {
  msg *m = malloc(sizeof(*m));
  *m = (msg){thread, seq};
  return m;
}

static void msg_free(void *p) {
  atomic_fetch_add(&payload_frees, 1);
  free(p);
}

/* ---- topics ------------------------------------------------------------- */

static void test_topics(void) {
  ph_bus *b = bus_new(NULL, NULL, NULL);
  ph_topic *t = bus_topic(b, "cfg.reload", "ph.reload/1");
  ok(t != NULL, "topic created");
  is_str(bus_topic_name(t), "cfg.reload", "topic name");
  is_str(bus_topic_type(t), "ph.reload/1", "topic type");
  ok(bus_topic(b, "cfg.reload", "ph.reload/1") == t,
     "same name and type returns the same topic");
  ok(bus_topic(b, "cfg.reload", "ph.reload/2") == NULL,
     "same name with another type is refused");
  ok(bus_find(b, "cfg.reload") == t, "bus_find finds it");
  ok(bus_find(b, "nope") == NULL, "bus_find on a missing name");
  ok(bus_topic(b, "", "x/1") == NULL, "empty name refused");
  char name[130];
  memset(name, 'a', 129);
  name[129] = '\0';
  ok(bus_topic(b, name, "x/1") == NULL, "129-byte name refused");
  name[128] = '\0';
  ok(bus_topic(b, name, "x/1") != NULL, "128-byte name accepted");
  int made = 2;
  for (int i = 0; i < 2000; i++) {
    char n[32];
    snprintf(n, sizeof n, "t%d", i);
    if (!bus_topic(b, n, "x/1"))
      break;
    made++;
  }
  is_int(made, 1024, "at most 1024 topics");
  ok(bus_find(b, "cfg.reload") == t, "existing topics still found");
  bus_free(b);
}

/* ---- ordering and counting -------------------------------------------- */

static char order_log[64];

static void log_handler(const ph_topic *t, const void *payload, void *arg) {
  (void)t;
  size_t n = strlen(order_log);
  order_log[n] = *(const char *)arg;
  order_log[n + 1] = (char)('0' + ((const msg *)payload)->seq);
}

static void test_order(void) {
  ph_series *delivered = counter("test_order_delivered_total");
  ok(delivered != NULL, "counter registered");
  ph_bus *b = bus_new(NULL, NULL, delivered);
  ph_topic *t = bus_topic(b, "order", "m/1");
  static const char A = 'A', B = 'B', C = 'C';
  int ia = bus_subscribe(b, t, log_handler, (void *)&A, NULL);
  int ib = bus_subscribe(b, t, log_handler, (void *)&B, NULL);
  int ic = bus_subscribe(b, t, log_handler, (void *)&C, NULL);
  ok(ia > 0 && ib > ia && ic > ib, "subscription ids > 0 and increasing");
  order_log[0] = '\0';
  payload_frees = 0;
  for (int i = 1; i <= 3; i++)
    is_int(bus_publish(b, t, msg_new(0, i), msg_free), PH_OK, "publish");
  is_str(order_log, "A1B1C1A2B2C2A3B3C3",
         "subscription order per message, messages in publish order");
  is_int(payload_frees, 3, "payload freed once per message");
  is_int(series_value(delivered), 9, "delivered counts handler calls");
  is_int(bus_publish(b, bus_topic(b, "empty", "m/1"), msg_new(0, 0),
                     msg_free),
         PH_OK, "publish with no subscribers");
  is_int(payload_frees, 4, "payload freed without subscribers too");
  is_int(bus_publish(b, NULL, msg_new(0, 0), msg_free), PH_EINVAL,
         "NULL topic refused");
  is_int(payload_frees, 5, "payload freed on a refused publish too");
  bus_free(b);
}

/* ---- unsubscribe inside handlers ----------------------------------------- */

typedef struct unsub_ctx {
  ph_bus *bus;
  int self_id, victim_id;
  int calls_a, calls_b, calls_c;
  int rc_self, rc_victim, rc_again;
} unsub_ctx;

static unsub_ctx uc;

static void unsub_self(const ph_topic *t, const void *p, void *arg) {
  (void)t;
  (void)p;
  (void)arg;
  uc.calls_a++;
  uc.rc_self = bus_unsubscribe(uc.bus, uc.self_id, NULL);
  uc.rc_again = bus_unsubscribe(uc.bus, uc.self_id, NULL);
}

static void unsub_other(const ph_topic *t, const void *p, void *arg) {
  (void)t;
  (void)p;
  (void)arg;
  uc.calls_b++;
  if (uc.calls_b == 1)
    uc.rc_victim = bus_unsubscribe(uc.bus, uc.victim_id, NULL);
}

static void victim(const ph_topic *t, const void *p, void *arg) {
  (void)t;
  (void)p;
  (void)arg;
  uc.calls_c++;
}

static void test_unsubscribe_in_handler(void) {
  ph_bus *b = bus_new(NULL, NULL, NULL);
  ph_topic *t = bus_topic(b, "unsub", "m/1");
  uc = (unsub_ctx){.bus = b};
  uc.self_id = bus_subscribe(b, t, unsub_self, NULL, NULL);
  bus_subscribe(b, t, unsub_other, NULL, NULL);
  uc.victim_id = bus_subscribe(b, t, victim, NULL, NULL);
  payload_frees = 0;
  bus_publish(b, t, msg_new(0, 1), msg_free);
  is_int(uc.rc_self, PH_OK, "a handler unsubscribes itself");
  is_int(uc.rc_again, PH_ENOENT, "a second unsubscribe is PH_ENOENT");
  is_int(uc.rc_victim, PH_OK, "a handler unsubscribes a later one");
  is_int(uc.calls_c, 0, "the later one is skipped for this message");
  bus_publish(b, t, msg_new(0, 2), msg_free);
  bus_publish(b, t, msg_new(0, 3), msg_free);
  is_int(uc.calls_a, 1, "self-unsubscribed handler not called again");
  is_int(uc.calls_b, 3, "remaining handler called for every message");
  is_int(uc.calls_c, 0, "unsubscribed handler never called");
  is_int(payload_frees, 3, "payloads freed once each");
  is_int(bus_unsubscribe(b, 12345, NULL), PH_ENOENT, "unknown id is PH_ENOENT");
  bus_free(b);
}

/* ---- unsubscribe_all and subscribe during delivery ---------------------- */

static int calls_x, calls_y, calls_late;

static void count_x(const ph_topic *t, const void *p, void *arg) {
  (void)t;
  (void)p;
  (void)arg;
  calls_x++;
}

static void count_y(const ph_topic *t, const void *p, void *arg) {
  (void)t;
  (void)p;
  (void)arg;
  calls_y++;
}

static void count_late(const ph_topic *t, const void *p, void *arg) {
  (void)t;
  (void)p;
  (void)arg;
  calls_late++;
}

/* Subscribes more handlers (growing the array) while being delivered. */
static void subscriber_adder(const ph_topic *t, const void *p, void *arg) {
  (void)p;
  ph_bus *b = arg;
  for (int i = 0; i < 8; i++)
    bus_subscribe(b, (ph_topic *)t, count_late, NULL, NULL);
}

static void test_unsubscribe_all(void) {
  ph_bus *b = bus_new(NULL, NULL, NULL);
  ph_topic *t1 = bus_topic(b, "one", "m/1");
  ph_topic *t2 = bus_topic(b, "two", "m/1");
  int owner_x, owner_y;
  bus_subscribe(b, t1, count_x, NULL, &owner_x);
  bus_subscribe(b, t2, count_x, NULL, &owner_x);
  int id_y = bus_subscribe(b, t1, count_y, NULL, &owner_y);
  calls_x = calls_y = 0;
  is_int(bus_unsubscribe(b, id_y, &owner_x), BUS_EFOREIGN,
         "another owner cannot unsubscribe it (BUS_EFOREIGN)");
  bus_publish(b, t1, NULL, NULL);
  is_int(calls_y, 1, "the subscription stayed");
  calls_x = calls_y = 0;
  bus_unsubscribe_all(b, &owner_x);
  bus_publish(b, t1, NULL, NULL);
  bus_publish(b, t2, NULL, NULL);
  is_int(calls_x, 0, "unsubscribe_all removed every subscription");
  is_int(calls_y, 1, "other owners keep theirs");

  ph_topic *t3 = bus_topic(b, "grow", "m/1");
  calls_late = 0;
  bus_subscribe(b, t3, subscriber_adder, b, NULL);
  bus_publish(b, t3, NULL, NULL);
  is_int(calls_late, 0, "handlers added during delivery wait for the next");
  bus_publish(b, t3, NULL, NULL);
  is_int(calls_late, 8, "and get the next message");
  bus_free(b);
}

/* ---- nested publish -------------------------------------------------------- */

typedef struct nest_ctx {
  ph_bus *bus;
  ph_topic *topic;
  int calls;
  int deepest_rc;
} nest_ctx;

static void nest_handler(const ph_topic *t, const void *p, void *arg) {
  (void)t;
  (void)p;
  nest_ctx *n = arg;
  n->calls++;
  int rc = bus_publish(n->bus, n->topic, msg_new(0, n->calls), msg_free);
  if (rc != PH_OK)
    n->deepest_rc = rc;
}

static void test_nested(void) {
  ph_bus *b = bus_new(NULL, NULL, NULL);
  nest_ctx n = {.bus = b, .topic = bus_topic(b, "nest", "m/1")};
  bus_subscribe(b, n.topic, nest_handler, &n, NULL);
  payload_frees = 0;
  is_int(bus_publish(b, n.topic, msg_new(0, 0), msg_free), PH_OK,
         "outer publish succeeds");
  is_int(n.calls, 16, "delivery nests down to depth 16");
  is_int(n.deepest_rc, PH_ELIMIT, "the 17th level is PH_ELIMIT");
  is_int(payload_frees, 17, "every payload freed, the refused one too");
  n.calls = 0;
  n.deepest_rc = 0;
  bus_publish(b, n.topic, msg_new(0, 0), msg_free);
  is_int(n.calls, 16, "depth is back to 0 after the limit was hit");
  bus_free(b);
}

/* ---- posts: full mailbox, teardown with pending ------------------------ */

static int post_calls;

static void post_handler(const ph_topic *t, const void *p, void *arg) {
  (void)t;
  (void)p;
  (void)arg;
  post_calls++;
}

static void test_post_full(struct ev_loop *loop) {
  ph_series *full = counter("test_post_full_total");
  ph_series *dropped = counter("test_post_dropped_total");
  ph_mailbox *mb = mailbox_new(loop, 2, full);
  ph_bus *b = bus_new(mb, dropped, NULL);
  ph_topic *t = bus_topic(b, "posted", "m/1");
  bus_subscribe(b, t, post_handler, NULL, NULL);
  payload_frees = 0;
  post_calls = 0;
  is_int(bus_post(b, t, msg_new(0, 1), msg_free), PH_OK, "post 1/2");
  is_int(bus_post(b, t, msg_new(0, 2), msg_free), PH_OK, "post 2/2");
  msg *mine = msg_new(0, 3);
  is_int(bus_post(b, t, mine, msg_free), PH_EFULL, "post on full mailbox");
  is_int(series_value(dropped), 1, "drop counted by the bus");
  is_int(series_value(full), 1, "full counted by the mailbox");
  is_int(payload_frees, 0, "the refused payload was not freed");
  ok(mine->seq == 3, "the caller still owns the refused payload");
  free(mine);
  mailbox_drain(mb);
  is_int(post_calls, 2, "accepted posts delivered");
  is_int(payload_frees, 2, "and their payloads freed once");

  /* Pending posts at teardown: bus first, then mailbox. */
  bus_post(b, t, msg_new(0, 4), msg_free);
  bus_post(b, t, msg_new(0, 5), msg_free);
  bus_free(b);
  mailbox_free(mb);
  is_int(post_calls, 2, "pending posts not delivered at teardown");
  is_int(payload_frees, 4, "bus_free then mailbox_free frees payloads");
}

static void test_post_teardown(struct ev_loop *loop) {
  /* Mailbox first, then bus. */
  ph_mailbox *mb = mailbox_new(loop, 8, NULL);
  ph_bus *b = bus_new(mb, NULL, NULL);
  ph_topic *t = bus_topic(b, "posted", "m/1");
  bus_subscribe(b, t, post_handler, NULL, NULL);
  payload_frees = 0;
  post_calls = 0;
  for (int i = 0; i < 3; i++)
    bus_post(b, t, msg_new(0, i), msg_free);
  mailbox_free(mb);
  is_int(payload_frees, 3, "mailbox_free frees pending payloads");
  bus_free(b);
  is_int(payload_frees, 3, "bus_free frees nothing twice");

  /* Bus freed, then the loop drains the envelopes: dropped, not run. */
  mb = mailbox_new(loop, 8, NULL);
  b = bus_new(mb, NULL, NULL);
  t = bus_topic(b, "posted", "m/1");
  bus_subscribe(b, t, post_handler, NULL, NULL);
  payload_frees = 0;
  for (int i = 0; i < 3; i++)
    bus_post(b, t, msg_new(0, i), msg_free);
  bus_free(b);
  mailbox_drain(mb);
  is_int(post_calls, 0, "envelopes for a freed bus are not delivered");
  is_int(payload_frees, 3, "their payloads are freed when drained");
  mailbox_free(mb);
}

/* ---- cross-thread posts ------------------------------------------------ */

#define N_THREADS 4
#define N_PER_THREAD 10000

typedef struct xstate {
  ph_bus *bus;
  ph_topic *topic;
} xstate;

static xstate xs;
static producers P;

static void x_handler(const ph_topic *t, const void *p, void *arg) {
  (void)t;
  (void)arg;
  producers_got(&P, p);
}

static int x_post(producers_msg *m) {
  return bus_post(xs.bus, xs.topic, m, msg_free);
}

static producers P = {.post = x_post, .n = N_THREADS, .per = N_PER_THREAD};

static void test_threads(struct ev_loop *loop) {
  ph_series *dropped = counter("test_threads_dropped_total");
  ph_series *delivered = counter("test_threads_delivered_total");
  ph_mailbox *mb = mailbox_new(loop, 128, NULL);
  xs = (xstate){0};
  xs.bus = bus_new(mb, dropped, delivered);
  xs.topic = bus_topic(xs.bus, "x", "m/1");
  bus_subscribe(xs.bus, xs.topic, x_handler, NULL, NULL);
  payload_frees = 0;
  producers_run(&P, loop, 60000);
  mailbox_drain(mb);
  is_int(P.received, N_THREADS * N_PER_THREAD,
         "every posted message delivered exactly once");
  is_int(P.out_of_order, 0, "per-thread order preserved");
  is_int(series_value(delivered), N_THREADS * N_PER_THREAD,
         "delivered counter matches");
  is_int(payload_frees, N_THREADS * N_PER_THREAD, "each payload freed once");
  is_int(series_value(dropped), atomic_load(&P.efull),
         "every PH_EFULL was counted as dropped");
  printf("# %d posts refused with PH_EFULL and retried\n",
         atomic_load(&P.efull));
  bus_free(xs.bus);
  mailbox_free(mb);
}

int main(void) {
  plan_lazy();
  reg = metrics_new();
  struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
  test_topics();
  test_order();
  test_unsubscribe_in_handler();
  test_unsubscribe_all();
  test_nested();
  test_post_full(loop);
  test_post_teardown(loop);
  test_threads(loop);
  ev_loop_destroy(loop);
  metrics_free(reg);
  return done_testing();
}
