/* SPDX-License-Identifier: BSD-2-Clause */
/* Password hashes for configuration files: PBKDF2-HMAC-SHA256 with a
 * random salt, written as
 *   $pbkdf2-sha256$<iterations>$<salt, base64>$<hash, base64>
 * (standard base64 without padding). Verification is slow on purpose:
 * call it on a helper thread, never on the loop. */
#ifndef PH_PWHASH_H
#define PH_PWHASH_H

#include <stddef.h>
#include <stdint.h>

#define PWHASH_PREFIX "$pbkdf2-sha256$"
#define PWHASH_MIN_ITER 1000
#define PWHASH_MAX_ITER 10000000
#define PWHASH_DEFAULT_ITER 600000
#define PWHASH_SALT_LEN 16
#define PWHASH_LEN 32
#define PWHASH_TEXT_MAX 160

typedef struct pwhash {
  uint32_t iterations;
  unsigned char salt[PWHASH_SALT_LEN];
  size_t salt_len;
  unsigned char hash[PWHASH_LEN];
} pwhash;

/* Parses the text form. 0 or -1. */
int pwhash_parse(const char *text, pwhash *out);
/* Hashes password with a fresh random salt into out (PWHASH_TEXT_MAX
 * bytes). 0 or -1. */
int pwhash_create(const char *password, size_t len, uint32_t iterations,
                  char *out, size_t outlen);
/* 1 when password matches, 0 when not (constant-time comparison). */
int pwhash_verify(const pwhash *h, const char *password, size_t len);

#endif
