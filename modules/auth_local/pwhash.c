/* SPDX-License-Identifier: BSD-2-Clause */
#include "pwhash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

static const char b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static size_t b64_encode(const unsigned char *in, size_t n, char *out) {
  size_t o = 0;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)in[i] << 16;
    if (i + 1 < n)
      v |= (uint32_t)in[i + 1] << 8;
    if (i + 2 < n)
      v |= in[i + 2];
    out[o++] = b64[(v >> 18) & 63];
    out[o++] = b64[(v >> 12) & 63];
    if (i + 1 < n)
      out[o++] = b64[(v >> 6) & 63];
    if (i + 2 < n)
      out[o++] = b64[v & 63];
  }
  out[o] = '\0';
  return o;
}

static int b64_value(char c) {
  const char *p = c ? strchr(b64, c) : NULL;
  return p ? (int)(p - b64) : -1;
}

/* Decodes unpadded base64 of exactly `want` bytes. */
static int b64_decode(const char *in, size_t len, unsigned char *out,
                      size_t want) {
  if (len != (want * 4 + 2) / 3)
    return -1;
  uint32_t acc = 0;
  int bits = 0;
  size_t o = 0;
  for (size_t i = 0; i < len; i++) {
    int v = b64_value(in[i]);
    if (v < 0)
      return -1;
    acc = (acc << 6) | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      if (o < want)
        out[o++] = (unsigned char)(acc >> bits);
    }
  }
  return o == want ? 0 : -1;
}

int pwhash_parse(const char *text, pwhash *out) {
  size_t plen = strlen(PWHASH_PREFIX);
  if (!text || strncmp(text, PWHASH_PREFIX, plen) != 0)
    return -1;
  const char *p = text + plen;
  char *end;
  unsigned long iter = strtoul(p, &end, 10);
  if (end == p || *end != '$' || iter < PWHASH_MIN_ITER ||
      iter > PWHASH_MAX_ITER)
    return -1;
  const char *salt = end + 1;
  const char *dollar = strchr(salt, '$');
  if (!dollar)
    return -1;
  const char *hash = dollar + 1;
  if (b64_decode(salt, (size_t)(dollar - salt), out->salt,
                 PWHASH_SALT_LEN) < 0 ||
      b64_decode(hash, strlen(hash), out->hash, PWHASH_LEN) < 0)
    return -1;
  out->iterations = (uint32_t)iter;
  out->salt_len = PWHASH_SALT_LEN;
  return 0;
}

static int derive(const char *pw, size_t len, const unsigned char *salt,
                  size_t salt_len, uint32_t iter, unsigned char *out) {
  return PKCS5_PBKDF2_HMAC(pw, (int)len, salt, (int)salt_len, (int)iter,
                           EVP_sha256(), PWHASH_LEN, out) == 1
             ? 0
             : -1;
}

int pwhash_create(const char *password, size_t len, uint32_t iterations,
                  char *out, size_t outlen) {
  if (iterations < PWHASH_MIN_ITER || iterations > PWHASH_MAX_ITER ||
      outlen < PWHASH_TEXT_MAX)
    return -1;
  unsigned char salt[PWHASH_SALT_LEN], hash[PWHASH_LEN];
  if (RAND_bytes(salt, sizeof(salt)) != 1 ||
      derive(password, len, salt, sizeof(salt), iterations, hash) < 0)
    return -1;
  char s64[32], h64[64];
  b64_encode(salt, sizeof(salt), s64);
  b64_encode(hash, sizeof(hash), h64);
  OPENSSL_cleanse(hash, sizeof(hash));
  int n = snprintf(out, outlen, "%s%u$%s$%s", PWHASH_PREFIX,
                   (unsigned)iterations, s64, h64);
  return n > 0 && (size_t)n < outlen ? 0 : -1;
}

int pwhash_verify(const pwhash *h, const char *password, size_t len) {
  unsigned char got[PWHASH_LEN];
  if (derive(password, len, h->salt, h->salt_len, h->iterations, got) < 0)
    return 0;
  int same = CRYPTO_memcmp(got, h->hash, PWHASH_LEN) == 0;
  OPENSSL_cleanse(got, sizeof(got));
  return same;
}
