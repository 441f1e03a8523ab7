/* SPDX-License-Identifier: BSD-2-Clause */
/* remote_validation's verdict cache (rv_cache.c, TM-P1-43) on its own:
 * get and put, replacement, expiry, and eviction from a full cache (the
 * expired among the oldest first, then the oldest), whose insertion-order
 * list is an ilist. */
#include <string.h>

#include "remote_validation/rv_cache.h"
#include "tap.h"

static void key_of(unsigned char k[RV_KEY_LEN], int i) {
  memset(k, 0, RV_KEY_LEN);
  memcpy(k, &i, sizeof(i));
  k[RV_KEY_LEN - 1] = (unsigned char)i;
}

static int get(rv_cache *c, int i, int64_t now) {
  unsigned char k[RV_KEY_LEN];
  key_of(k, i);
  return rv_cache_get(c, k, now);
}

static void put(rv_cache *c, int i, int v, int64_t now, int64_t ttl) {
  unsigned char k[RV_KEY_LEN];
  key_of(k, i);
  rv_cache_put(c, k, v, now, ttl);
}

int main(void) {
  plan_lazy();
  ok(!rv_cache_new(0), "max_entries 0 is refused");
  rv_cache *c = rv_cache_new(3);
  put(c, 1, 7, 0, 100);
  is_int(get(c, 1, 50), 7, "a verdict is kept until its expiry");
  is_int(get(c, 1, 100), 0, "and gone at it");
  is_int((int)rv_cache_size(c), 0, "the expired entry met is dropped");
  put(c, 1, 7, 0, 100);
  put(c, 1, 8, 0, 100);
  ok(get(c, 1, 0) == 8 && rv_cache_size(c) == 1, "a put replaces its key");
  put(c, 1, 9, 0, 0);
  ok(get(c, 1, 0) == 0 && rv_cache_size(c) == 0, "ttl 0 keeps nothing");

  put(c, 1, 1, 0, 1000);
  put(c, 2, 2, 0, 10); /* expires first */
  put(c, 3, 3, 0, 1000);
  put(c, 4, 4, 20, 1000); /* full: the expired one goes */
  ok(get(c, 1, 20) == 1 && get(c, 2, 20) == 0 && get(c, 3, 20) == 3 &&
         get(c, 4, 20) == 4,
     "a full cache drops the expired entry first");
  put(c, 5, 5, 20, 1000); /* full, none expired: the oldest goes */
  ok(get(c, 1, 20) == 0 && get(c, 3, 20) == 3 && get(c, 5, 20) == 5,
     "then the oldest");
  is_int((int)rv_cache_size(c), 3, "never more than max_entries");
  int bad = 0;
  for (int i = 0; i < 5000; i++) {
    put(c, 100 + i, 1 + i % 2, i, 1 + i % 7);
    if (rv_cache_size(c) > 3)
      bad++;
  }
  is_int(bad, 0, "5000 puts with expiries: the bound holds");
  rv_cache_free(c);
  return done_testing();
}
