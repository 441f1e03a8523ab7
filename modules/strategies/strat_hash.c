/* SPDX-License-Identifier: BSD-2-Clause */
/* SipHash-2-4 (strat_hash.h): four 64-bit lanes, two compression rounds a
 * message word, four finalisation rounds. */
#include <string.h>

#include "strat_hash.h"

static inline uint64_t rotl(uint64_t x, unsigned b) {
  return (x << b) | (x >> (64 - b));
}

/* Eight bytes as a little-endian word (one load where the host is
 * little-endian). */
static inline uint64_t load_le64(const unsigned char *p) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  uint64_t x;
  memcpy(&x, p, sizeof(x));
  return x;
#else
  uint64_t x = 0;
  for (int i = 7; i >= 0; i--)
    x = (x << 8) | p[i];
  return x;
#endif
}

typedef struct sip {
  uint64_t v0, v1, v2, v3;
} sip;

static inline void sip_round(sip *s) {
  s->v0 += s->v1;
  s->v1 = rotl(s->v1, 13);
  s->v1 ^= s->v0;
  s->v0 = rotl(s->v0, 32);
  s->v2 += s->v3;
  s->v3 = rotl(s->v3, 16);
  s->v3 ^= s->v2;
  s->v0 += s->v3;
  s->v3 = rotl(s->v3, 21);
  s->v3 ^= s->v0;
  s->v2 += s->v1;
  s->v1 = rotl(s->v1, 17);
  s->v1 ^= s->v2;
  s->v2 = rotl(s->v2, 32);
}

static inline void sip_word(sip *s, uint64_t m) {
  s->v3 ^= m;
  sip_round(s);
  sip_round(s);
  s->v0 ^= m;
}

uint64_t strat_siphash24(uint64_t k0, uint64_t k1, const void *data,
                         size_t len) {
  const unsigned char *p = data;
  /* "somepseudorandomlygeneratedbytes" */
  sip s = {k0 ^ 0x736f6d6570736575u, k1 ^ 0x646f72616e646f6du,
           k0 ^ 0x6c7967656e657261u, k1 ^ 0x7465646279746573u};
  size_t whole = len - len % 8;
  for (size_t i = 0; i < whole; i += 8)
    sip_word(&s, load_le64(p + i));
  /* The last word: the remaining bytes, and len mod 256 in the top byte. */
  uint64_t last = (uint64_t)(len & 0xff) << 56;
  for (size_t i = 0; i < len % 8; i++)
    last |= (uint64_t)p[whole + i] << (8 * i);
  sip_word(&s, last);
  s.v2 ^= 0xff;
  for (int i = 0; i < 4; i++)
    sip_round(&s);
  return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

uint64_t strat_key_hash(const char *key, size_t len) {
  return strat_siphash24(0x70726f7879686f73u, 0x7374696368792121u, key, len);
}
