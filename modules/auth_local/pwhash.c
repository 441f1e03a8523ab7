/* SPDX-License-Identifier: BSD-2-Clause */
#include "pwhash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "lib/b64.h"

/* Unpadded base64 of exactly `want` bytes: 0 or -1. */
static int b64_exact(const char *in, size_t len, unsigned char *out,
                     size_t want) {
  return len == B64_LEN_UNPADDED(want) &&
                 b64_decode(in, len, out, want) == (ssize_t)want
             ? 0
             : -1;
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
  if (b64_exact(salt, (size_t)(dollar - salt), out->salt, PWHASH_SALT_LEN) <
          0 ||
      b64_exact(hash, strlen(hash), out->hash, PWHASH_LEN) < 0)
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
  b64_encode(salt, sizeof(salt), s64, 0);
  b64_encode(hash, sizeof(hash), h64, 0);
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
