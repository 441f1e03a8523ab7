/* SPDX-License-Identifier: BSD-2-Clause */
/* modules/tunnel_common/proto/tm_window.c: per-stream flow-control windows
 * (TM-P2-8..13, TM-TEST-5): consumption, credit, overflow beyond
 * TM_WINDOW_MAX, the zero update, overrun, the update threshold (TM-P2-12:
 * never per frame), then a seeded random run of a sender and a receiver
 * against a plain model: bytes in flight never exceed the window and the
 * updates sum to the bytes delivered. */
#include <stdint.h>
#include <string.h>

#include "rng_test.h"
#include "tap.h"
#include "tunnel_common/proto/tm_proto.h"
#include "tunnel_common/proto/tm_window.h"

static void test_init(void) {
  tm_window w;
  ok(tm_win_init(&w, 65536, 262144, 32768) == TM_OK && w.send == 65536 &&
         w.recv == 262144 && w.recv_max == 262144 && w.pending == 0 &&
         w.threshold == 32768,
     "init: send from the peer, receive ours, nothing pending");
  is_int(tm_win_init(&w, 0, 100, 1), TM_EPROTO,
         "TM-CFG-25 a zero send window refused");
  is_int(tm_win_init(&w, 100, 0, 1), TM_EPROTO,
         "TM-CFG-25 a zero receive window refused");
  is_int(tm_win_init(&w, TM_WINDOW_MAX + 1, 100, 1), TM_EPROTO,
         "a send window above TM_WINDOW_MAX refused");
  is_int(tm_win_init(&w, 100, TM_WINDOW_MAX + 1, 1), TM_EPROTO,
         "a receive window above TM_WINDOW_MAX refused");
  is_int(tm_win_init(&w, 100, 100, 0), TM_EPROTO, "threshold 0 refused");
  is_int(tm_win_init(&w, 100, 100, 101), TM_EPROTO,
         "a threshold above the receive window refused");
  ok(tm_win_init(&w, TM_WINDOW_MAX, TM_WINDOW_MAX, TM_WINDOW_MAX) == TM_OK,
     "every bound at TM_WINDOW_MAX accepted");
  ok(tm_win_init(&w, 1, 1, 1) == TM_OK, "every bound at 1 accepted");
  is_int(tm_win_init(NULL, 1, 1, 1), TM_EPROTO, "NULL refused");
}

static void test_send(void) {
  tm_window w;
  tm_win_init(&w, 1000, 1000, 500);
  is_int(tm_win_take(&w, 300), 300, "take within the window: all of it");
  is_int(w.send, 700, "the send window shrinks by what was taken");
  is_int(tm_win_take(&w, 5000), 700, "take beyond the window: what is left");
  is_int(tm_win_take(&w, 1), 0, "an empty window stalls (0)");
  is_int(tm_win_take(&w, 0), 0, "taking 0 takes 0");
  is_int(tm_win_credit(&w, 250), TM_OK, "WINDOW_UPDATE credits");
  is_int(tm_win_take(&w, 1000), 250, "credit can be taken again");
  is_int(tm_win_credit(&w, 0), TM_EPROTO,
         "TM-P2-13 a zero-increment WINDOW_UPDATE is a violation");
  is_int(w.send, 0, "a refused update leaves the window unchanged");
  is_int(tm_win_credit(&w, TM_WINDOW_MAX), TM_OK,
         "credit up to exactly TM_WINDOW_MAX");
  is_int(tm_win_credit(&w, 1), TM_EPROTO,
         "TM-P2-13 a window beyond TM_WINDOW_MAX is an overflow");
  is_int(w.send, TM_WINDOW_MAX, "a refused overflow leaves it unchanged");
  is_int(tm_win_credit(&w, 0xffffffffu), TM_EPROTO,
         "an increment of 2^32-1 never wraps");
  tm_win_take(&w, 10);
  is_int(tm_win_credit(&w, 0xfffffff6u), TM_EPROTO,
         "an increment that would wrap 32 bits to the old value refused");
  is_int(w.send, TM_WINDOW_MAX - 10, "unchanged after it");
}

static void test_recv(void) {
  tm_window w;
  tm_win_init(&w, 1000, 1000, 400);
  is_int(tm_win_recv(&w, 600), TM_OK, "DATA within the receive window");
  is_int(tm_win_recv(&w, 401), TM_EPROTO,
         "TM-P2-13 DATA beyond what is left is an overrun");
  is_int(w.recv, 400, "an overrun leaves the window unchanged");
  is_int(tm_win_recv(&w, 400), TM_OK, "DATA of exactly what is left");
  is_int(tm_win_recv(&w, 0), TM_OK, "an empty DATA (a bare FIN) always fits");
  is_int(tm_win_recv(&w, 1), TM_EPROTO, "a closed window takes nothing");

  /* TM-P2-12: the update waits for the threshold, never per frame. */
  is_int(tm_win_delivered(&w, 100), 0, "100 delivered: below 400, no update");
  is_int(tm_win_delivered(&w, 299), 0, "399 delivered: still none");
  is_int(tm_win_delivered(&w, 1), 400,
         "400 delivered: the update gives back all of it");
  is_int(w.pending, 0, "pending restarts from 0");
  is_int(w.recv, 400, "the receive window reopens by the update");
  is_int(tm_win_delivered(&w, 600), 600,
         "a delivery past the threshold gives back the whole pending "
         "amount");
  is_int(w.recv, 1000, "the whole window is open again");
  is_int(tm_win_delivered(&w, 50), 0,
         "delivering more than was received is clamped (nothing to give)");
  is_int(w.pending, 0, "nothing pending after the clamp");

  tm_win_init(&w, 1000, 1000, 400);
  tm_win_recv(&w, 300);
  is_int(tm_win_delivered(&w, 1000), 0,
         "a delivery beyond what arrived counts only what arrived");
  is_int(w.pending, 300, "300 pending");

  /* 64 frames of 1 KiB against a 16 KiB threshold: 4 updates, not 64. */
  tm_win_init(&w, 65536, 65536, 16384);
  int updates = 0;
  uint64_t given = 0;
  for (int i = 0; i < 64; i++) {
    tm_win_recv(&w, 1024);
    uint32_t inc = tm_win_delivered(&w, 1024);
    updates += inc != 0;
    given += inc;
    if (inc && inc != 16384)
      ok(0, "each update is one threshold's worth");
  }
  is_int(updates, 4, "TM-P2-12 64 one-KiB frames, threshold 16 KiB: 4 "
                     "updates, never per frame");
  is_int(given, 65536, "the updates give back every delivered byte");
}

/* ---- seeded random run against a model ------------------------------ */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(uint32_t n) { return rng_test_below(&rng, n); }

/* A bounded FIFO of in-flight amounts (frames one way, updates the other). */
#define QMAX 4096
typedef struct q {
  uint32_t v[QMAX];
  size_t head, n;
} q;
static int q_push(q *x, uint32_t v) {
  if (x->n == QMAX)
    return 0;
  x->v[(x->head + x->n++) % QMAX] = v;
  return 1;
}
static uint32_t q_pop(q *x) {
  uint32_t v = x->v[x->head];
  x->head = (x->head + 1) % QMAX;
  x->n--;
  return v;
}

static void property_run(uint32_t window, uint32_t threshold, uint32_t maxf,
                         int steps) {
  /* One direction: a sender's tm_window (send side) and a receiver's
   * tm_window (receive side), joined by two FIFOs. */
  tm_window snd, rcv;
  tm_win_init(&snd, window, 1, 1);
  tm_win_init(&rcv, 1, window, threshold);
  static q frames, updates;
  memset(&frames, 0, sizeof frames);
  memset(&updates, 0, sizeof updates);
  uint64_t in_flight = 0, buffered = 0, delivered = 0, updated = 0;
  int violations = 0, broke = 0;
  for (int i = 0; i < steps && !broke; i++) {
    switch (rnd(4)) {
    case 0: { /* the sender sends what its window allows */
      uint32_t n = tm_win_take(&snd, 1 + rnd(maxf));
      if (n && q_push(&frames, n))
        in_flight += n;
      else if (n)
        tm_win_credit(&snd, n); /* the FIFO bound: give it back */
      break;
    }
    case 1: /* a frame arrives */
      if (frames.n) {
        uint32_t n = q_pop(&frames);
        in_flight -= n;
        violations += tm_win_recv(&rcv, n) != TM_OK;
        buffered += n;
      }
      break;
    case 2: { /* the receiver's socket takes some bytes */
      uint32_t n = buffered ? 1 + rnd((uint32_t)buffered) : 0;
      buffered -= n;
      delivered += n;
      uint32_t inc = tm_win_delivered(&rcv, n);
      if (inc) {
        broke |= !q_push(&updates, inc);
        updated += inc;
      }
      break;
    }
    case 3: /* an update arrives */
      if (updates.n)
        violations += tm_win_credit(&snd, q_pop(&updates)) != TM_OK;
      break;
    }
    uint64_t upd_flight = 0;
    for (size_t k = 0; k < updates.n; k++)
      upd_flight += updates.v[(updates.head + k) % QMAX];
    /* The model: the window is conserved across both sides. */
    if (in_flight > rcv.recv ||
        snd.send + in_flight + buffered + rcv.pending + upd_flight != window ||
        rcv.recv + buffered + rcv.pending != rcv.recv_max ||
        rcv.pending >= threshold) {
      broke = 1;
      printf("# step %d: send %u in_flight %llu recv %u buffered %llu "
             "pending %u\n",
             i, snd.send, (unsigned long long)in_flight, rcv.recv,
             (unsigned long long)buffered, rcv.pending);
    }
  }
  char name[160];
  snprintf(name, sizeof name,
           "TM-TEST-5 property (window %u, threshold %u, frames <= %u, %d "
           "steps): in flight never beyond the window, the window conserved",
           window, threshold, maxf, steps);
  ok(!broke && violations == 0, name);
  snprintf(name, sizeof name,
           "TM-TEST-5 property (window %u): updates + pending == delivered "
           "(%llu bytes)",
           window, (unsigned long long)delivered);
  ok(updated + rcv.pending == delivered && delivered > 0, name);
}

static void test_property(void) {
  property_run(65536, 16384, 16384, 200000);
  property_run(262144, 131072, 65536, 200000);
  property_run(1, 1, 1, 20000);
  property_run(100, 37, 300, 100000);
  property_run(TM_WINDOW_MAX, TM_WINDOW_MAX / 2, TM_MAX_PAYLOAD, 100000);

  /* A hostile sender that ignores the window is caught at the first
   * frame beyond it, and only that frame is refused. */
  tm_window rcv;
  tm_win_init(&rcv, 1, 10000, 5000);
  int caught_at = -1;
  uint32_t got = 0;
  for (int i = 0; i < 100; i++) {
    if (tm_win_recv(&rcv, 333) != TM_OK) {
      caught_at = i;
      break;
    }
    got += 333;
  }
  is_int(caught_at, 30, "TM-P2-13 a sender ignoring the window: the overrun "
                        "is the frame past 10000 bytes");
  is_int(rcv.recv, 10000 - got, "the window as it was before that frame");
}

int main(void) {
  plan_lazy();
  test_init();
  test_send();
  test_recv();
  test_property();
  return done_testing();
}
