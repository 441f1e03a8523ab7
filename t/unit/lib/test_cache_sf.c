/* SPDX-License-Identifier: BSD-2-Clause */
/* The loop-side cache with singleflight (modules/lib): kcache on its own
 * (bounds in entries and bytes, LRU and insertion order, TTLs, the dead
 * dropped first, invalidation by key and in one go, chunked freeing,
 * secret keys), and sflight on the mock host (coalescing by key and
 * generation, waiter and flight bounds, cancelling one waiter, a lookup
 * whose waiters all left still completing, and answers delivered by the
 * host's defer on the very next loop turn, never from inside the call). */
#include <stdio.h>
#include <string.h>

#include <ev.h>

#include "core.h"
#include "lib/kcache.h"
#include "lib/sflight.h"
#include <proxyhost/mock.h>
#include "mock_test.h"
#include "tap.h"

/* ---- kcache ------------------------------------------------------------ */

#define KL 32

static void key_of(unsigned char k[KL], int i) {
  memset(k, 0, KL);
  memcpy(k, &i, sizeof(i));
  k[KL - 1] = (unsigned char)i;
}

static uint64_t hash_of(const unsigned char *k) {
  uint64_t h;
  memcpy(&h, k, sizeof(h));
  return h;
}

static int get(kcache *c, int i, int64_t now) {
  unsigned char k[KL];
  key_of(k, i);
  int v = 0;
  return kcache_get(c, k, KL, hash_of(k), now, &v, NULL) ? v : 0;
}

static int put(kcache *c, int i, int v, int64_t now, int64_t ttl) {
  unsigned char k[KL];
  key_of(k, i);
  return kcache_put(c, k, KL, hash_of(k), &v, now + ttl, now);
}

static kcache *map(size_t entries, size_t bytes, int policy, unsigned fl) {
  kcache_conf kc = {.max_entries = entries,
                    .max_bytes = bytes,
                    .value_size = sizeof(int),
                    .policy = policy,
                    .flags = fl};
  return kcache_new(&kc);
}

static void test_fifo(void) {
  kcache *c = map(3, 0, KCACHE_FIFO, 0);
  put(c, 1, 7, 0, 100);
  is_int(get(c, 1, 50), 7, "a value is kept until its expiry");
  is_int(get(c, 1, 100), 0, "and gone at it");
  is_int((int)kcache_count(c), 0, "the expired entry met is dropped");
  put(c, 1, 7, 0, 100);
  is_int(put(c, 1, 8, 0, 100), 0, "a put of a held key replaces it");
  ok(get(c, 1, 0) == 8 && kcache_count(c) == 1, "one entry, the new value");
  is_int(put(c, 1, 9, 0, 0), 2, "an expiry not after now keeps nothing");
  ok(get(c, 1, 0) == 0 && kcache_count(c) == 0, "and removes the key");

  put(c, 1, 1, 0, 1000);
  put(c, 2, 2, 0, 10); /* expires first */
  put(c, 3, 3, 0, 1000);
  is_int(put(c, 4, 4, 20, 1000), 1, "full: the put evicts");
  ok(get(c, 1, 20) == 1 && get(c, 2, 20) == 0 && get(c, 3, 20) == 3 &&
         get(c, 4, 20) == 4,
     "a full map drops the expired entry first");
  put(c, 5, 5, 20, 1000); /* full, none expired: the oldest goes */
  ok(get(c, 1, 20) == 0 && get(c, 3, 20) == 3 && get(c, 5, 20) == 5,
     "then the oldest, used or not (insertion order)");
  put(c, 3, 33, 20, 1000); /* held: keeps its place */
  put(c, 6, 6, 20, 1000);
  ok(get(c, 3, 20) == 0 && get(c, 4, 20) == 4 && get(c, 6, 20) == 6,
     "a key put again keeps its place in the order");
  int bad = 0;
  for (int i = 0; i < 5000; i++) {
    put(c, 100 + i, 1 + i % 2, i, 1 + i % 7);
    if (kcache_count(c) > 3)
      bad++;
  }
  is_int(bad, 0, "5000 puts with expiries: the entries bound holds");
  kcache_free(c);
  kcache_free(NULL);
}

static void test_lru(void) {
  kcache *c = map(3, 0, KCACHE_LRU, 0);
  put(c, 1, 1, 0, 1000);
  put(c, 2, 2, 0, 1000);
  put(c, 3, 3, 0, 1000);
  get(c, 1, 0); /* 1 is the newest now */
  put(c, 4, 4, 0, 1000);
  ok(get(c, 1, 0) == 1 && get(c, 2, 0) == 0 && get(c, 3, 0) == 3,
     "LRU: the least recently used goes, not the oldest put");
  kcache_free(c);
}

static void test_bytes(void) {
  kcache *one = map(100, 0, KCACHE_FIFO, 0);
  put(one, 1, 1, 0, 1000);
  size_t per = kcache_bytes(one);
  ok(per >= KL + sizeof(int), "an entry's bytes count its key and value");
  kcache_free(one);
  kcache *c = map(100, per * 2 + per / 2, KCACHE_FIFO, 0);
  put(c, 1, 1, 0, 1000);
  put(c, 2, 2, 0, 1000);
  is_int(put(c, 3, 3, 0, 1000), 1, "max_bytes: a third entry evicts");
  ok(get(c, 1, 0) == 0 && get(c, 2, 0) == 2 && get(c, 3, 0) == 3,
     "the oldest went");
  ok(kcache_bytes(c) <= per * 2 + per / 2, "the bytes bound holds");
  kcache_free(c);
  c = map(100, per / 2, KCACHE_FIFO, 0);
  is_int(put(c, 1, 1, 0, 1000), 2, "an entry above max_bytes is not kept");
  is_int((int)kcache_count(c), 0, "nothing held");
  kcache_free(c);
  c = map(0, 0, KCACHE_FIFO, 0);
  is_int(put(c, 1, 1, 0, 1000), 2, "max_entries 0 keeps nothing");
  is_int(get(c, 1, 0), 0, "and finds nothing");
  kcache_free(c);
}

static void test_invalidate(void) {
  kcache *c = map(10, 0, KCACHE_LRU, KCACHE_SECRET);
  put(c, 1, 1, 0, 1000);
  put(c, 2, 2, 0, 1000);
  unsigned char k[KL];
  key_of(k, 1);
  is_int(kcache_del(c, k, KL, hash_of(k)), 1, "del removes a held key");
  is_int(kcache_del(c, k, KL, hash_of(k)), 0, "and says when none was");
  is_int(get(c, 2, 0), 2, "the others stay");
  kcache_invalidate(c);
  is_int(get(c, 2, 0), 0, "invalidate: nothing held before is found");
  put(c, 2, 22, 0, 1000);
  is_int(get(c, 2, 0), 22, "a put after it is");
  key_of(k, 2);
  k[KL - 1] ^= 1;
  int v;
  is_int(kcache_get(c, k, KL, hash_of(k), 0, &v, NULL), 0,
         "KCACHE_SECRET: a key differing in its last byte is not found");
  kcache_free(c); /* wiped: ASan would see a use after free */

  kcache *r = map(10000, 0, KCACHE_FIFO, 0);
  for (int i = 0; i < 10000; i++)
    put(r, i, 1, 0, 1000);
  int rounds = 0;
  while (!kcache_free_some(r, 4096) && rounds < 100)
    rounds++;
  is_int(rounds, 2, "10000 entries freed in chunks of 4096: three calls");
}

/* ---- sflight on the mock host ------------------------------------------ */

static const ph_api *A;
static ph_ctx *C;

MOCK_TEST_KEEP(t_init, A, C);
MOCK_TEST_MODULE(t_mod, "t", "1.0", .init = t_init);

typedef struct got {
  int calls, value, order;
  sflight *sf;
  int64_t cancel; /* cancelled from inside the callback when > 0 */
  int ask_again;  /* queues another answer from inside the callback */
} got;

static int in_call, seq;

static void on_answer(void *arg, int value) {
  got *g = arg;
  ok(!in_call, "never called from inside the call that asked");
  g->calls++;
  g->value = value;
  g->order = ++seq;
  if (g->cancel > 0)
    sf_cancel(g->sf, g->cancel);
  if (g->ask_again) {
    static got again;
    g->ask_again = 0;
    sf_later(g->sf, &(int){9}, 0, (sf_fn)on_answer, &again);
  }
}

static void call(void *owner, sf_fn cb, void *arg, const void *answer) {
  (void)owner;
  ((void (*)(void *, int))cb)(arg, *(const int *)answer);
}

static int orphans;
static void orphan(void *owner, sf_flight *f) {
  (void)owner;
  (void)f;
  orphans++;
}

static sflight *new_sf(int64_t flights, int64_t waiters, int64_t per_key,
                       int with_orphan) {
  sf_conf c = {.answer_size = sizeof(int),
               .max_flights = flights,
               .max_waiters = waiters,
               .max_per_key = per_key,
               .key_max = KL,
               .call = call,
               .orphan = with_orphan ? orphan : NULL};
  return sf_new(A, C, &c);
}

#define CB ((sf_fn)on_answer)

static int64_t start(sflight *s, int key, uint64_t gen, int shared, got *g,
                     sf_flight **f) {
  unsigned char k[KL];
  key_of(k, key);
  in_call = 1;
  int64_t id = sf_start(s, k, KL, hash_of(k), gen, shared, CB, g, f);
  in_call = 0;
  return id;
}

static sf_flight *find(sflight *s, int key, uint64_t gen) {
  unsigned char k[KL];
  key_of(k, key);
  return sf_find(s, k, KL, hash_of(k), gen);
}

static void test_coalesce(void) {
  sflight *s = new_sf(4, 10, 10, 0);
  got a = {0}, b = {0}, c = {0};
  sf_flight *f, *u;
  int64_t ia = start(s, 1, 7, 1, &a, &f);
  ok(ia > 0 && f, "a miss starts a flight");
  ok(find(s, 1, 7) == f, "a later asker of the key finds it");
  ok(!find(s, 1, 8), "not under another generation");
  ok(!find(s, 2, 7), "not for another key");
  int64_t ib = sf_join(s, find(s, 1, 7), CB, &b);
  ok(ib > 0 && ib != ia, "joins it (its own id)");
  is_int((int)sf_flight_waiters(f), 2, "two waiters, one lookup");
  is_int((int)sf_flights(s), 1, "one flight");
  ok(start(s, 3, 7, 0, &c, &u) > 0 && !find(s, 3, 7),
     "an unshared flight is never found");
  sf_complete(s, f, &(int){5});
  ok(a.calls == 1 && b.calls == 1 && a.value == 5 && b.value == 5,
     "the answer reaches every waiter at completion");
  ok(a.order < b.order, "oldest first");
  ok(!find(s, 1, 7), "a completed flight is gone");
  sf_complete(s, u, &(int){6});
  is_int(c.value, 6, "the unshared one answers its own");
  is_int((int)sf_waiters(s), 0, "every slot given back");
  sf_free(s);
}

static void test_bounds(void) {
  sflight *s = new_sf(1, 3, 2, 0);
  got g[6] = {{0}};
  sf_flight *f, *f2;
  ok(start(s, 1, 0, 1, &g[0], &f) > 0, "first flight");
  is_int((int)start(s, 2, 0, 1, &g[1], &f2), PH_EFULL,
         "max_flights: a second flight is refused");
  ok(!f2, "and nothing made");
  ok(sf_join(s, f, CB, &g[1]) > 0, "a second waiter on the key");
  is_int((int)sf_join(s, f, CB, &g[2]), PH_EFULL,
         "max_per_key: a third waiter on it is refused");
  ok(sf_later(s, &(int){1}, 1, CB, &g[3]) > 0, "a slot for a queued answer");
  is_int((int)sf_later(s, &(int){1}, 1, CB, &g[4]), PH_EFULL,
         "max_waiters: no fourth slot");
  ok(sf_later(s, &(int){2}, 0, CB, &g[5]) > 0,
     "an answer without a slot (a refusal) is always queued");
  sf_set_limits(s, 1, 4, 3);
  ok(sf_join(s, f, CB, &g[2]) > 0, "new limits apply to the next asker");
  sf_free(s); /* every waiter dropped without a call */
  int calls = 0;
  for (int i = 0; i < 6; i++)
    calls += g[i].calls;
  is_int(calls, 0, "sf_free calls nobody");
}

static void test_cancel(void) {
  sflight *s = new_sf(4, 10, 10, 1);
  got a = {0}, b = {0};
  sf_flight *f;
  int64_t ia = start(s, 1, 0, 1, &a, &f);
  int64_t ib = sf_join(s, f, CB, &b);
  is_int(sf_cancel(s, ia), PH_OK, "cancel one waiter");
  is_int(sf_cancel(s, ia), PH_ENOENT, "its id is gone");
  is_int(orphans, 0, "the lookup goes on for the other");
  sf_complete(s, f, &(int){3});
  ok(a.calls == 0 && b.calls == 1, "only the other is answered");
  orphans = 0;
  int64_t i2 = start(s, 2, 0, 1, &a, &f);
  int64_t ic = sf_join(s, f, CB, &b);
  sf_cancel(s, ic);
  sf_cancel(s, i2);
  is_int(orphans, 1, "with orphan set, the last one leaving ends the lookup");
  is_int((int)sf_flights(s), 0, "and the flight");
  is_int(sf_cancel(s, 0), PH_ENOENT, "id 0: PH_ENOENT");
  sf_free(s);
  (void)ib;
}

/* auth_local's "a cancelled check still fills the cache", through the
 * library: without orphan the lookup outlives its waiters, and the
 * owner's completion fills the map for the next asker. */
static void test_complete_without_waiters(void) {
  sflight *s = new_sf(4, 10, 10, 0);
  kcache *m = map(10, 0, KCACHE_FIFO, 0);
  got a = {0}, late = {0};
  sf_flight *f;
  int64_t ia = start(s, 1, 0, 1, &a, &f);
  sf_cancel(s, ia);
  is_int((int)sf_flights(s), 1, "every waiter left: the flight stays");
  ok(find(s, 1, 0) == f, "and can be joined");
  size_t len;
  const unsigned char *k = sf_flight_key(f, &len);
  kcache_put(m, k, len, hash_of(k), &(int){4}, 1000, 0);
  sf_complete(s, f, &(int){4});
  is_int(a.calls, 0, "the cancelled waiter is not called");
  is_int(get(m, 1, 0), 4, "the completion filled the cache");
  ok(sf_later(s, &(int){get(m, 1, 0)}, 1, CB, &late) > 0,
     "the next asker gets a hit");
  sf_free(s);
  kcache_free(m);
}

static void test_next_turn(struct ev_loop *loop) {
  sflight *s = new_sf(4, 10, 10, 0);
  got a = {0}, b = {0}, c = {0};
  a.sf = b.sf = s;
  in_call = 1;
  sf_later(s, &(int){1}, 1, CB, &a);
  int64_t ib = sf_later(s, &(int){2}, 1, CB, &b);
  in_call = 0;
  ok(a.calls == 0 && b.calls == 0, "a known answer is not given at once");
  is_int(sf_cancel(s, ib), PH_OK, "a queued answer can be cancelled");
  unsigned it0 = ev_iteration(loop);
  ev_run(loop, EVRUN_NOWAIT);
  ok(a.calls == 1 && a.value == 1,
     "delivered on the very next loop turn (one non-blocking iteration)");
  is_int((int)(ev_iteration(loop) - it0), 1, "one iteration, no timer");
  is_int(b.calls, 0, "the cancelled one never is");
  /* An answer queued from a callback waits for the turn after. */
  got d = {0};
  d.sf = s;
  d.ask_again = 1;
  sf_later(s, &(int){1}, 0, CB, &d);
  ev_run(loop, EVRUN_NOWAIT);
  is_int(d.calls, 1, "the first answer on this turn");
  int before = seq;
  ev_run(loop, EVRUN_NOWAIT);
  ok(seq == before + 1, "the one its callback queued on the next");
  /* A lookup answered inside the call that started it (sf_hold). */
  sf_flight *f;
  start(s, 5, 0, 1, &c, &f);
  sf_hold(s);
  in_call = 1;
  sf_complete(s, f, &(int){8});
  in_call = 0;
  sf_unhold(s);
  is_int(c.calls, 0, "held: a completion is not handed out at once");
  ev_run(loop, EVRUN_NOWAIT);
  ok(c.calls == 1 && c.value == 8, "but on the next turn");
  /* A callback cancels the next waiter of the same batch. */
  got e = {0}, h = {0};
  e.sf = s;
  sf_later(s, &(int){1}, 1, CB, &e);
  e.cancel = sf_later(s, &(int){1}, 1, CB, &h);
  ev_run(loop, EVRUN_NOWAIT);
  ok(e.calls == 1 && h.calls == 0,
     "a callback cancelling a waiter of its batch: that one is skipped");
  is_int((int)sf_waiters(s), 0, "every slot given back");
  sf_free(s);
}

int main(void) {
  plan_lazy();
  test_fifo();
  test_lru();
  test_bytes();
  test_invalidate();
  char err[8192] = "";
  ph_mock *m = ph_mock_new("[proxyhost]\n", err, sizeof err);
  if (!m || ph_mock_add(m, &t_mod, err, sizeof err) < 0 || ph_mock_init(m, err, sizeof err) < 0 ||
      ph_mock_start(m, err, sizeof err) < 0) {
    printf("# %s\n", err);
    return 1;
  }
  test_coalesce();
  test_bounds();
  test_cancel();
  test_complete_without_waiters();
  test_next_turn(ph_mock_loop(m));
  ph_mock_stop(m);
  ph_mock_free(m);
  return done_testing();
}
