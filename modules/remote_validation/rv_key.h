/* SPDX-License-Identifier: BSD-2-Clause */
/* remote_validation: the cache key (TM-P1-37/38, TM-SEC-3). A key is
 * HMAC-SHA256, under a random secret made once per process (getrandom),
 * over every field a verdict depends on: protocol, agent, target host,
 * port, username and password. Each field is written with a tag and a
 * 32-bit length in front of its bytes, so no two requests encode alike
 * ("ab"+"c" is not "a"+"bc", a NULL agent is not an empty one). The key
 * holds no credential in plain text, and a digest cannot be checked
 * against a guessed password without the secret, which never leaves the
 * process. */
#ifndef PH_RV_KEY_H
#define PH_RV_KEY_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/validation.h>

#define RV_KEY_LEN 32   /* SHA-256 */
#define RV_SECRET_LEN 32

typedef struct rv_keyer {
  unsigned char secret[RV_SECRET_LEN];
} rv_keyer;

/* Fills the secret from getrandom(2). PH_OK, or PH_EINVAL when the
 * kernel gave no random bytes (fail closed: no module without a key). */
int rv_keyer_init(rv_keyer *k);
/* Wipes the secret. */
void rv_keyer_wipe(rv_keyer *k);
/* The key of a request whose fields are within the header's bounds
 * (host 1..255, agent NULL or 1..255, username and password 0..255).
 * PH_OK, or PH_EINVAL. Every intermediate copy is wiped. */
int rv_key_digest(const rv_keyer *k, const ph_validation_request *rq,
                  unsigned char out[RV_KEY_LEN]);

#endif
