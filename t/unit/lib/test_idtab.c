/* SPDX-License-Identifier: BSD-2-Clause */
/* The id table (modules/lib/idtab.h): put, find, del and any; the bucket
 * count at its bounds; ids that collide in one bucket; and many insert and
 * remove cycles leaving the table empty and consistent. Run under ASan, a
 * leak fails the test. */
#include <stdint.h>
#include <stdlib.h>

#include "lib/idtab.h"
#include "tap.h"

typedef struct ent {
  int tag;
  idtab_node hn;
} ent;

static ent *get(const idtab *t, int64_t id) {
  idtab_node *n = idtab_find(t, id);
  return n ? IDTAB_ENTRY(n, ent, hn) : NULL;
}

int main(void) {
  plan_lazy();
  idtab t;
  ok(idtab_init(&t, 0) == 0, "init");
  is_int((int)t.n_buckets, (int)IDTAB_MIN_BUCKETS,
         "a tiny expectation gets the minimum bucket count");
  idtab_free(&t);
  idtab_init(&t, 1000);
  is_int((int)t.n_buckets, 1024, "buckets: the power of two at or above");
  idtab_free(&t);
  idtab_init(&t, (size_t)1 << 40);
  is_int((int)t.n_buckets, (int)IDTAB_MAX_BUCKETS,
         "a huge expectation is clamped to the maximum");
  idtab_free(&t);
  ok(!idtab_find(&t, 1), "a freed table finds nothing");

  idtab_init(&t, 4);
  ent e[4] = {{.tag = 10}, {.tag = 11}, {.tag = 12}, {.tag = 13}};
  ok(!idtab_find(&t, 7) && !idtab_any(&t), "an empty table finds nothing");
  idtab_put(&t, &e[0].hn, 7);
  idtab_put(&t, &e[1].hn, INT64_MAX);
  idtab_put(&t, &e[2].hn, -3);
  idtab_put(&t, &e[3].hn, 7 + 16); /* may share a bucket with 7 */
  is_int((int)t.n, 4, "the count follows puts");
  ok(get(&t, 7) == &e[0] && get(&t, INT64_MAX) == &e[1] &&
         get(&t, -3) == &e[2] && get(&t, 23) == &e[3],
     "find returns each element by its id, extreme and negative ids too");
  ok(!get(&t, 8), "an absent id is not found");
  idtab_del(&t, &e[0].hn);
  ok(!get(&t, 7) && get(&t, 23) == &e[3], "del removes only that entry");
  idtab_del(&t, &e[0].hn);
  is_int((int)t.n, 3, "deleting twice does nothing");
  idtab_node *n;
  int drained = 0;
  while ((n = idtab_any(&t)) && drained < 10) {
    idtab_del(&t, n);
    drained++;
  }
  is_int(drained, 3, "any drains the table");
  ok(t.n == 0 && !idtab_any(&t), "and leaves it empty");

  /* More entries than buckets, in a single bucket's worth of chains too,
   * then many insert/remove cycles. */
  enum { N = 4000, ROUNDS = 50 };
  ent *pool = calloc(N, sizeof(*pool));
  int64_t next = 1;
  int bad = 0;
  for (int r = 0; r < ROUNDS; r++) {
    for (int i = 0; i < N; i++) {
      pool[i].tag = i;
      idtab_put(&t, &pool[i].hn, next + i);
    }
    if (t.n != N)
      bad++;
    for (int i = 0; i < N; i += 2) /* half out, in a scattered order */
      idtab_del(&t, &pool[(i * 7) % N].hn);
    for (int i = 0; i < N; i++) {
      ent *g = get(&t, next + i); /* the even ones went (7 is odd) */
      if (i % 2 == 0 ? g != NULL : g != &pool[i])
        bad++;
    }
    size_t left = t.n;
    for (int i = 0; i < N; i++)
      idtab_del(&t, &pool[i].hn);
    if (left != N / 2 || t.n != 0 || idtab_any(&t))
      bad++;
    next += N;
  }
  is_int(bad, 0, "50 rounds of 4000 puts and dels: finds and counts agree");
  ok(!get(&t, 1) && !get(&t, next - 1), "every id is gone at the end");
  free(pool);
  idtab_free(&t);
  return done_testing();
}
