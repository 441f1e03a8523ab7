/* SPDX-License-Identifier: BSD-2-Clause */
/* The cache key and its hash (cache_key.h). */
#include "cache_key.h"

#include <string.h>
#include <sys/random.h>

static uint64_t k0, k1; /* the process's SipHash key */
static int seeded;

static size_t put_name(unsigned char *out, const char *s) {
  size_t n = strlen(s); /* validated: 1..255 */
  out[0] = (unsigned char)n;
  memcpy(out + 1, s, n);
  return n + 1;
}

size_t cache_key_encode(const ph_access_request *r, unsigned char *out) {
  size_t n = 0;
  out[n++] = r->protocol;
  out[n++] = (unsigned char)(r->port >> 8);
  out[n++] = (unsigned char)(r->port & 0xff);
  out[n++] = (unsigned char)((r->principal ? 1 : 0) | (r->agent ? 2 : 0));
  if (r->principal)
    n += put_name(out + n, r->principal);
  if (r->agent)
    n += put_name(out + n, r->agent);
  n += put_name(out + n, r->host);
  return n;
}

int cache_key_seed(void) {
  if (seeded)
    return 0;
  uint64_t k[2];
  if (getrandom(k, sizeof(k), 0) != (ssize_t)sizeof(k))
    return -1;
  k0 = k[0];
  k1 = k[1];
  seeded = 1;
  return 0;
}

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                               \
  do {                                                                         \
    v0 += v1;                                                                  \
    v1 = ROTL(v1, 13);                                                         \
    v1 ^= v0;                                                                  \
    v0 = ROTL(v0, 32);                                                         \
    v2 += v3;                                                                  \
    v3 = ROTL(v3, 16);                                                         \
    v3 ^= v2;                                                                  \
    v0 += v3;                                                                  \
    v3 = ROTL(v3, 21);                                                         \
    v3 ^= v0;                                                                  \
    v2 += v1;                                                                  \
    v1 = ROTL(v1, 17);                                                         \
    v1 ^= v2;                                                                  \
    v2 = ROTL(v2, 32);                                                         \
  } while (0)

static uint64_t load64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}

/* The reference algorithm (Aumasson and Bernstein), little-endian
 * words. */
uint64_t cache_key_hash(const unsigned char *in, size_t len) {
  uint64_t v0 = k0 ^ 0x736f6d6570736575ull, v1 = k1 ^ 0x646f72616e646f6dull;
  uint64_t v2 = k0 ^ 0x6c7967656e657261ull, v3 = k1 ^ 0x7465646279746573ull;
  size_t whole = len - len % 8;
  for (size_t i = 0; i < whole; i += 8) {
    uint64_t m = load64(in + i);
    v3 ^= m;
    SIPROUND;
    SIPROUND;
    v0 ^= m;
  }
  uint64_t b = (uint64_t)len << 56;
  for (size_t i = 0; i < len % 8; i++)
    b |= (uint64_t)in[whole + i] << (8 * i);
  v3 ^= b;
  SIPROUND;
  SIPROUND;
  v0 ^= b;
  v2 ^= 0xff;
  SIPROUND;
  SIPROUND;
  SIPROUND;
  SIPROUND;
  return v0 ^ v1 ^ v2 ^ v3;
}
