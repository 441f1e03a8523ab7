/* SPDX-License-Identifier: BSD-2-Clause */
/* One generation of the authorization cache (modules/auth_cache/
 * cache_gen.c) on its own: lookups, replacement, expiry, the bound and
 * its bounded second chance (TM-P1-9, TM-P1-10), and the chunked free of
 * a retired generation (TM-P1-28). */
#include <stdio.h>
#include <string.h>

#include <proxyhost/access.h>

#include "auth_cache/cache_gen.h"
#include "auth_cache/cache_key.h"
#include "tap.h"

static size_t key_of(int i, unsigned char *k) {
  char host[32];
  snprintf(host, sizeof(host), "h%d.example", i);
  ph_access_request r = {.size = sizeof(r),
                         .protocol = PH_PROTO_TCP,
                         .port = 443,
                         .host = host,
                         .principal = "tok"};
  return cache_key_encode(&r, k);
}

static int put(cache_gen *g, int i, int verdict, int64_t expires, int64_t now) {
  unsigned char k[CACHE_KEY_MAX];
  size_t n = key_of(i, k);
  cache_verdict v = {verdict, 0, expires};
  return cache_gen_put(g, k, n, cache_key_hash(k, n), &v, now);
}

static int get(cache_gen *g, int i, int64_t now, cache_verdict *out) {
  unsigned char k[CACHE_KEY_MAX];
  size_t n = key_of(i, k);
  return cache_gen_get(g, k, n, cache_key_hash(k, n), now, out);
}

/* TM-P1-3/5, TM-SEC-3: the key is the five fields and nothing else. */
static void test_key(void) {
  static char secret[] = "s3cr3t-bearer";
  ph_access_request r = {.size = sizeof(r),
                         .protocol = PH_PROTO_TCP,
                         .port = 0x1bb,
                         .host = "h.example",
                         .principal = "tok",
                         .agent = "ag",
                         .reserved = {secret, secret, secret, secret}};
  unsigned char k[CACHE_KEY_MAX];
  size_t n = cache_key_encode(&r, k);
  static const unsigned char want[] = {
      PH_PROTO_TCP, 0x01, 0xbb, 3,   3,   't', 'o', 'k', 2,  'a', 'g', 9,
      'h',          '.',  'e',  'x', 'a', 'm', 'p', 'l', 'e'};
  ok(n == sizeof(want) && memcmp(k, want, n) == 0,
     "TM-P1-3: the key is protocol, port, the principal, the agent and the "
     "host, each name with its length");
  ok(!memmem(k, n, secret, strlen(secret)),
     "TM-P1-5/TM-SEC-3: nothing else of the request gets in");
  ph_access_request anon = r;
  anon.principal = NULL;
  anon.agent = NULL;
  unsigned char k2[CACHE_KEY_MAX];
  size_t n2 = cache_key_encode(&anon, k2);
  ok(n2 == 4 + 10 && k2[3] == 0, "no principal, no agent: flags 0, the host");
  uint64_t h1 = cache_key_hash(k, n), h2 = cache_key_hash(k, n);
  ok(h1 == h2 && h1 != cache_key_hash(k2, n2), "the hash is a function of "
                                               "the key");
}

int main(void) {
  plan_lazy();
  ok(cache_key_seed() == 0, "the hash key is drawn");
  test_key();
  cache_gen *g = cache_gen_new(7, 3);
  ok(g != NULL, "a generation of 3 entries");
  is_int(cache_gen_revision(g), 7, "for revision 7");
  cache_verdict v;
  ok(!get(g, 1, 0, &v), "empty: nothing found");
  is_int(put(g, 1, PH_ACCESS_ALLOW, 100, 0), 0, "put: stored");
  ok(get(g, 1, 50, &v) && v.verdict == PH_ACCESS_ALLOW && v.expires_ms == 100,
     "found with its verdict and expiry");
  ok(!get(g, 1, 100, &v), "not found once its expiry has come");
  is_int(cache_gen_count(g), 0, "and removed then");
  put(g, 1, PH_ACCESS_ALLOW, 100, 0);
  put(g, 1, PH_ACCESS_DENY, 200, 0);
  ok(get(g, 1, 0, &v) && v.verdict == PH_ACCESS_DENY && v.expires_ms == 200,
     "a second put of one key replaces it");
  is_int(cache_gen_count(g), 1, "one entry");
  put(g, 2, PH_ACCESS_ALLOW, 1000, 0);
  put(g, 3, PH_ACCESS_ALLOW, 1000, 0);
  get(g, 1, 0, &v); /* 1 and 2 recently used, 3 not */
  get(g, 2, 0, &v);
  is_int(put(g, 4, PH_ACCESS_ALLOW, 1000, 0), 1,
         "TM-P1-9: full: a put evicts one");
  is_int(cache_gen_count(g), 3, "TM-P1-9: the count stays at the bound");
  ok(get(g, 1, 0, &v) && get(g, 2, 0, &v),
     "TM-P1-9: the recently used entries had their second chance");
  ok(!get(g, 3, 0, &v), "TM-P1-9: the unused one went");
  ok(get(g, 4, 0, &v), "the new entry is there");
  /* Every entry used: the insert evicts anyway, in O(1) (TM-P1-10: no
   * full sweep on the hot path). */
  cache_gen *big = cache_gen_new(1, 64);
  for (int i = 0; i < 64; i++)
    put(big, i, PH_ACCESS_ALLOW, 1000, 0);
  for (int i = 0; i < 64; i++)
    get(big, i, 0, &v);
  is_int(put(big, 100, PH_ACCESS_ALLOW, 1000, 0), 1,
         "TM-P1-10: all 64 entries used: the insert still evicts at once");
  int survivors = 0;
  for (int i = 0; i < 64; i++)
    survivors += get(big, i, 0, &v);
  is_int(survivors, 63, "TM-P1-10: exactly one of them went");
  /* An expired entry under the hand goes before a used one. */
  cache_gen *ex = cache_gen_new(1, 2);
  put(ex, 1, PH_ACCESS_ALLOW, 10, 0);
  put(ex, 2, PH_ACCESS_ALLOW, 1000, 0);
  get(ex, 1, 5, &v); /* used, then expired */
  get(ex, 2, 5, &v);
  put(ex, 3, PH_ACCESS_ALLOW, 1000, 20);
  ok(!get(ex, 1, 20, &v) && get(ex, 2, 20, &v) && get(ex, 3, 20, &v),
     "an expired entry goes first, used or not");
  /* Chunked free. */
  cache_gen *r = cache_gen_new(1, 10000);
  for (int i = 0; i < 10000; i++)
    put(r, i, PH_ACCESS_ALLOW, 1000, 0);
  int rounds = 0;
  while (!cache_gen_free_some(r, 4096) && rounds < 100)
    rounds++;
  is_int(rounds, 2,
         "TM-P1-28: 10000 entries freed in chunks of 4096: three "
         "calls");
  ok(cache_gen_new(1, 0) == NULL, "max_entries 0 is refused");
  while (!cache_gen_free_some(g, 1))
    ;
  while (!cache_gen_free_some(big, 1000))
    ;
  while (!cache_gen_free_some(ex, 1000))
    ;
  ok(1, "every generation freed (ASan: no leak)");
  return done_testing();
}
