/* SPDX-License-Identifier: BSD-2-Clause */
/* modules/tunnel_common/proto/tm_drr.c: the fair writer's deficit round-robin
 * (TM-P2-18/19): one quantum per active stream per round, a bulk stream
 * beside small ones (the small ones finish within one round), activate
 * and remove while picked, removal of the head, the budget always
 * 1..quantum, and a seeded random run checking that between two turns of
 * a stream no other stream has more than one turn. */
#include <stdint.h>
#include <string.h>

#include "rng_test.h"
#include "tap.h"
#include "tunnel_common/proto/tm_drr.h"
#include "tunnel_common/proto/tm_proto.h"

#define Q 32768u /* TM-P2-19: the default quantum */

typedef struct strm {
  tm_drr_node node; /* first: the node is the stream */
  uint64_t backlog;
  uint64_t sent;
  int id;
} strm;

static strm *of(tm_drr_node *n) { return (strm *)n; }

/* One writer step: pick, send min(budget, backlog, frame), report. */
static strm *step(tm_drr *d, uint32_t frame, uint32_t *budget_out) {
  uint32_t budget = 0;
  tm_drr_node *n = tm_drr_pick(d, &budget);
  if (!n)
    return NULL;
  strm *s = of(n);
  uint64_t x = budget < frame ? budget : frame;
  if (x > s->backlog)
    x = s->backlog;
  s->backlog -= x;
  s->sent += x;
  if (budget_out)
    *budget_out = budget;
  tm_drr_sent(d, n, (uint32_t)x, s->backlog > 0);
  return s;
}

static void setup(strm *s, int n, uint64_t backlog) {
  memset(s, 0, sizeof(strm) * (size_t)n);
  for (int i = 0; i < n; i++) {
    s[i].id = i;
    s[i].backlog = backlog;
  }
}

static void test_basics(void) {
  tm_drr d;
  tm_drr_init(&d, Q);
  uint32_t b = 7;
  ok(tm_drr_pick(&d, &b) == NULL && d.count == 0 && b == 7,
     "an empty ring picks nothing");
  strm s[3];
  setup(s, 3, 1000000);
  for (int i = 0; i < 3; i++)
    tm_drr_activate(&d, &s[i].node);
  tm_drr_activate(&d, &s[1].node);
  is_int(d.count, 3, "activate twice is a no-op");
  ok(tm_drr_pick(&d, &b) == &s[0].node && b == Q,
     "the first active stream's turn, a full quantum");
  ok(tm_drr_pick(&d, &b) == &s[0].node && b == Q,
     "pick without sent does not move the turn");
  tm_drr_sent(&d, &s[0].node, 10000, 1);
  ok(tm_drr_pick(&d, &b) == &s[0].node && b == Q - 10000,
     "the turn continues with the credit left");
  tm_drr_sent(&d, &s[0].node, 0, 1);
  ok(tm_drr_pick(&d, &b) == &s[0].node && b == Q - 10000,
     "sent 0 (the transport is full) keeps the turn and the credit");
  tm_drr_sent(&d, &s[0].node, Q - 10000, 1);
  ok(tm_drr_pick(&d, &b) == &s[1].node && b == Q,
     "credit spent: the next stream's turn, a full quantum");
  tm_drr_sent(&d, &s[1].node, 5, 0);
  is_int(d.count, 2, "nothing more: the stream leaves the ring");
  ok(!s[1].node.linked && s[1].node.deficit == 0,
     "left: unlinked, credit forgotten");
  ok(tm_drr_pick(&d, &b) == &s[2].node && b == Q,
     "its leaving hands the turn on");
  tm_drr_remove(&d, &s[1].node);
  is_int(d.count, 2, "removing a stream not in the ring is a no-op");

  /* Quantum bounds: never 0, never above TM_WINDOW_MAX. */
  tm_drr_init(&d, 0);
  is_int(d.quantum, 1, "quantum 0 is clamped to 1");
  tm_drr_init(&d, 0xffffffffu);
  is_int(d.quantum, TM_WINDOW_MAX, "quantum clamped to TM_WINDOW_MAX");
  tm_drr_init(&d, 1);
  setup(s, 2, 3);
  tm_drr_activate(&d, &s[0].node);
  tm_drr_activate(&d, &s[1].node);
  int order[6], k = 0;
  for (strm *x; k < 6 && (x = step(&d, 100, &b)) != NULL; k++)
    order[k] = x->id * 10 + (int)b;
  ok(k == 6 && order[0] == 1 && order[1] == 11 && order[2] == 1 &&
         order[3] == 11 && order[4] == 1 && order[5] == 11,
     "quantum 1: strict alternation one byte at a time");
}

static void test_rounds(void) {
  /* TM-P2-19: per round, every active stream sends at most one quantum. */
  tm_drr d;
  tm_drr_init(&d, Q);
  strm s[4];
  setup(s, 4, 10u * Q);
  for (int i = 0; i < 4; i++)
    tm_drr_activate(&d, &s[i].node);
  int fair = 1, guard = 0;
  for (int round = 1; round <= 10; round++) {
    /* A round: every stream's turn once, frames of 16 KiB. */
    for (int t = 0; t < 4 * 2 && guard++ < 1000; t++)
      step(&d, 16384, NULL);
    for (int i = 0; i < 4; i++)
      fair &= s[i].sent == (uint64_t)round * Q;
  }
  ok(fair, "TM-P2-19 four bulk streams: after each round every stream has "
           "sent exactly one more quantum");
  is_int(d.count, 0, "all drained: the ring is empty");

  /* A bulk stream beside small ones: the small ones are served within one
   * round, before the bulk one's second quantum. */
  tm_drr_init(&d, Q);
  strm bulk[1], small[5];
  setup(bulk, 1, 100u * 1024 * 1024);
  setup(small, 5, 300);
  for (int i = 0; i < 5; i++)
    small[i].id = 1 + i;
  tm_drr_activate(&d, &bulk[0].node);
  for (int i = 0; i < 5; i++)
    tm_drr_activate(&d, &small[i].node);
  uint64_t bulk_when_done = 0;
  for (int i = 0; i < 10000; i++) {
    step(&d, 16384, NULL);
    int done = 1;
    for (int k = 0; k < 5; k++)
      done &= small[k].backlog == 0;
    if (done) {
      bulk_when_done = bulk[0].sent;
      break;
    }
  }
  ok(bulk_when_done > 0 && bulk_when_done <= Q,
     "TM-P2-18 a bulk stream holds small ones back by at most one quantum");
  /* A small stream that becomes active during the bulk one's turn waits
   * at most for the rest of that turn. */
  strm late[1];
  setup(late, 1, 100);
  late[0].id = 9;
  step(&d, 1000, NULL); /* bulk's new turn has begun */
  tm_drr_activate(&d, &late[0].node);
  uint64_t before = bulk[0].sent;
  for (int i = 0; i < 1000 && late[0].backlog; i++)
    step(&d, 1000, NULL);
  ok(late[0].backlog == 0 && bulk[0].sent - before < Q,
     "a stream activated mid-turn is served before the bulk stream's next "
     "quantum");
}

static void test_remove(void) {
  tm_drr d;
  tm_drr_init(&d, Q);
  strm s[4];
  setup(s, 4, 1u << 30);
  for (int i = 0; i < 4; i++)
    tm_drr_activate(&d, &s[i].node);
  uint32_t b;
  ok(tm_drr_pick(&d, &b) == &s[0].node, "s0 picked");
  tm_drr_remove(&d, &s[0].node);
  ok(tm_drr_pick(&d, &b) == &s[1].node && b == Q && d.count == 3,
     "the head removed while picked (stalled on its window): the next "
     "stream's turn, a fresh quantum");
  tm_drr_sent(&d, &s[1].node, 100, 1);
  tm_drr_remove(&d, &s[3].node); /* the tail, not picked */
  ok(tm_drr_pick(&d, &b) == &s[1].node && b == Q - 100,
     "removing another stream leaves the current turn alone");
  tm_drr_activate(&d, &s[0].node); /* the window reopened: back, at the tail */
  tm_drr_sent(&d, &s[1].node, Q - 100, 1);
  ok(tm_drr_pick(&d, &b) == &s[2].node, "then s2");
  tm_drr_sent(&d, &s[2].node, Q, 1);
  ok(tm_drr_pick(&d, &b) == &s[0].node && b == Q,
     "a re-activated stream rejoins at the tail with a fresh quantum");
  tm_drr_sent(&d, &s[0].node, Q, 1);
  ok(tm_drr_pick(&d, &b) == &s[1].node, "round again: s1");
  /* A stream picked, then removed and activated again before sent: sent
   * on the unlinked-then-relinked stream does not corrupt the ring. */
  tm_drr_remove(&d, &s[1].node);
  tm_drr_sent(&d, &s[1].node, 10, 1);
  is_int(d.count, 2, "sent on a removed stream is ignored");
  tm_drr_activate(&d, &s[1].node);
  is_int(d.count, 3, "it can join again");
  /* Remove every stream, head first. */
  for (int guard = 0; guard < 10 && d.head; guard++)
    tm_drr_remove(&d, d.head);
  ok(d.head == NULL && d.count == 0, "removing the head until empty");
  tm_drr_activate(&d, &s[2].node);
  ok(tm_drr_pick(&d, &b) == &s[2].node && s[2].node.next == &s[2].node &&
         s[2].node.prev == &s[2].node,
     "a single stream is a ring of one");
  tm_drr_sent(&d, &s[2].node, Q, 1);
  ok(tm_drr_pick(&d, &b) == &s[2].node && b == Q,
     "alone, it gets quantum after quantum");
}

/* ---- seeded random run ------------------------------------------------ */

static uint64_t rng = 0x243f6a8885a308d3ull;
static uint32_t rnd(uint32_t n) { return rng_test_below(&rng, n); }

#define NS 16
static void test_random(uint32_t quantum, int steps) {
  tm_drr d;
  tm_drr_init(&d, quantum);
  strm s[NS];
  setup(s, NS, 0);
  /* turns[a][b]: turns stream b began since stream a's last turn began
   * (or since a joined the ring). */
  static int turns[NS][NS];
  memset(turns, 0, sizeof turns);
  tm_drr_node *cur = NULL;
  uint32_t cur_sent = 0;
  int budget_bad = 0, unfair = 0, over = 0, ring_bad = 0;
  for (int i = 0; i < steps; i++) {
    uint32_t r = rnd(10);
    strm *x = &s[rnd(NS)];
    if (r == 0) { /* bytes arrive for a stream */
      x->backlog += 1 + rnd(4 * quantum);
      if (!x->node.linked) {
        tm_drr_activate(&d, &x->node);
        memset(turns[x->id], 0, sizeof turns[x->id]);
      }
    } else if (r == 1 && x->node.linked) { /* stalled on its window */
      tm_drr_remove(&d, &x->node);
      if (cur == &x->node)
        cur = NULL;
    } else { /* the writer writes a frame */
      uint32_t budget = 0;
      tm_drr_node *n = tm_drr_pick(&d, &budget);
      if (!n)
        continue;
      strm *p = of(n);
      budget_bad += budget < 1 || budget > quantum;
      if (n != cur) { /* a new turn */
        budget_bad += budget != quantum;
        for (int k = 0; k < NS; k++)
          if (k != p->id && s[k].node.linked && ++turns[k][p->id] > 1)
            unfair++;
        memset(turns[p->id], 0, sizeof turns[p->id]);
        cur = n;
        cur_sent = 0;
      }
      uint32_t frame = 1 + rnd(quantum + quantum / 2);
      uint64_t xb = budget < frame ? budget : frame;
      if (xb > p->backlog)
        xb = p->backlog;
      if (rnd(20) == 0)
        xb = 0; /* the transport was full */
      p->backlog -= xb;
      cur_sent += (uint32_t)xb;
      over += cur_sent > quantum;
      int more = p->backlog > 0;
      tm_drr_sent(&d, n, (uint32_t)xb, more);
      if (!more || n->deficit == 0)
        cur = NULL; /* the turn ended */
    }
    /* The ring holds exactly the linked streams. */
    uint32_t linked = 0;
    for (int k = 0; k < NS; k++)
      linked += s[k].node.linked != 0;
    uint32_t walked = 0;
    tm_drr_node *h = d.head;
    if (h) {
      tm_drr_node *w = h;
      do {
        walked++;
        ring_bad += w->next->prev != w || !w->linked;
        w = w->next;
      } while (w != h && walked <= NS);
    }
    ring_bad += linked != d.count || walked != d.count;
  }
  char name[128];
  snprintf(name, sizeof name,
           "DRR random (quantum %u, %d steps): the budget is 1..quantum, a "
           "full quantum at each turn",
           quantum, steps);
  is_int(budget_bad, 0, name);
  snprintf(name, sizeof name,
           "TM-P2-19 DRR random (quantum %u): no turn sends more than one "
           "quantum",
           quantum);
  is_int(over, 0, name);
  snprintf(name, sizeof name,
           "TM-P2-18 DRR random (quantum %u): between two turns of a stream "
           "no other has two",
           quantum);
  is_int(unfair, 0, name);
  snprintf(name, sizeof name,
           "DRR random (quantum %u): the ring is consistent at every step",
           quantum);
  is_int(ring_bad, 0, name);
}

int main(void) {
  plan_lazy();
  test_basics();
  test_rounds();
  test_remove();
  test_random(Q, 200000);
  test_random(1, 50000);
  test_random(1000, 100000);
  return done_testing();
}
