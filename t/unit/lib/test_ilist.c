/* SPDX-License-Identifier: BSD-2-Clause */
/* The intrusive list (modules/lib/ilist.h): every operation, the count
 * and membership a node keeps, and removing (and freeing) the current
 * element during ILIST_FOREACH_SAFE. Run under ASan, a leak or a touch of
 * freed memory fails the test. */
#include <stdlib.h>

#include "lib/ilist.h"
#include "tap.h"

typedef struct item {
  int v;
  ilist_node node;
} item;

static int at(ilist_node *n) { return ILIST_ENTRY(n, item, node)->v; }

/* The values of `l` first to last, as a number (digits), or -1 when the
 * backward links disagree with the forward ones. */
static long order(const ilist *l) {
  long fwd = 0, back = 0, mul = 1;
  size_t k = 0;
  for (ilist_node *n = l->head.next; n != &l->head; n = n->next, k++)
    fwd = fwd * 10 + at(n);
  for (ilist_node *n = l->head.prev; n != &l->head; n = n->prev, mul *= 10)
    back += at(n) * mul;
  return (fwd == back && k == ilist_len(l)) ? fwd : -1;
}

int main(void) {
  plan_lazy();
  ilist a, b;
  ilist_init(&a);
  ilist_init(&b);
  ok(ilist_empty(&a) && ilist_len(&a) == 0, "a new list is empty");
  ok(!ilist_first(&a) && !ilist_last(&a) && !ilist_pop(&a),
     "first, last and pop of an empty list are NULL");

  item it[6];
  for (int i = 0; i < 6; i++) {
    it[i].v = i;
    ilist_node_init(&it[i].node);
  }
  ok(!ilist_of(&it[1].node), "an initialised node is on no list");
  ilist_remove(&it[1].node);
  ok(ilist_empty(&a), "removing an unlinked node does nothing");

  ilist_push(&a, &it[1].node);
  ilist_push(&a, &it[2].node);
  ilist_push_front(&a, &it[0].node);
  ilist_push(&a, &it[3].node);
  is_int(order(&a), 123, "push appends, push_front prepends");
  is_int((int)ilist_len(&a), 4, "the count follows");
  ok(ilist_of(&it[2].node) == &a, "a node knows its list");
  is_int(at(ilist_first(&a)), 0, "first");
  is_int(at(ilist_last(&a)), 3, "last");
  is_int(at(ilist_next(&it[1].node)), 2, "next");
  ok(!ilist_next(&it[3].node), "next of the last is NULL");

  ilist_remove(&it[2].node);
  is_int(order(&a), 13, "remove from the middle");
  ok(!ilist_of(&it[2].node), "a removed node is on no list");
  ilist_remove(&it[0].node);
  ilist_remove(&it[3].node);
  is_int(order(&a), 1, "remove the first and the last");

  ilist_push(&b, &it[1].node);
  ok(ilist_empty(&a) && ilist_len(&b) == 1 && ilist_of(&it[1].node) == &b,
     "pushing a linked node moves it between lists");
  ilist_push(&b, &it[4].node);
  ilist_push(&b, &it[5].node);
  is_int(at(ilist_pop(&b)), 1, "pop takes the first");
  is_int(order(&b), 45, "and leaves the rest");
  ilist_push_front(&b, &it[5].node);
  is_int(order(&b), 54, "push_front of a linked node moves it to the front");

  /* Removal, and freeing, of the current element while iterating. */
  ilist h;
  ilist_init(&h);
  for (int i = 0; i < 9; i++) {
    item *x = calloc(1, sizeof(*x));
    x->v = i;
    ilist_push(&h, &x->node);
  }
  int seen = 0;
  ILIST_FOREACH_SAFE(&h, n, nx) {
    item *x = ILIST_ENTRY(n, item, node);
    seen++;
    if (x->v % 2 == 0) {
      ilist_remove(n);
      free(x);
    }
  }
  is_int(seen, 9, "FOREACH_SAFE visits every node while some are freed");
  is_int(order(&h), 1357, "the odd ones stay, in order");
  ILIST_FOREACH_SAFE(&h, n, nx) {
    ilist_remove(n);
    free(ILIST_ENTRY(n, item, node));
  }
  ok(ilist_empty(&h) && !ilist_first(&h),
     "removing each current node empties the list (ASan: no leak)");
  int loops = 0;
  ILIST_FOREACH_SAFE(&h, n, nx) { (void)n, loops++; }
  is_int(loops, 0, "iterating an empty list runs no body");
  return done_testing();
}
