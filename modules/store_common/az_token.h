/* SPDX-License-Identifier: BSD-2-Clause */
/* Token material for both stores (authz_store.h): record ids, secrets,
 * bearer strings, the hash the database keeps, and its constant-time
 * comparison. No I/O but getrandom(2); no host API, so the fuzz target
 * and the unit tests link it alone.
 *
 * A bearer is "<id>.<secret>": id "tok_" + 16 lower-case hex digits, the
 * secret 43 characters of unpadded base64url (32 random bytes). The store
 * keeps only SHA-256(secret) in lower-case hex (64 characters). */
#ifndef PH_STORE_AZ_TOKEN_H
#define PH_STORE_AZ_TOKEN_H

#include <stddef.h>

#include <proxyhost/abi.h>
#include <proxyhost/authz_store.h>

#define AZ_TOKEN_PREFIX "tok_"
#define AZ_POLICY_PREFIX "pol_"
#define AZ_SECRET_BYTES 32
#define AZ_SECRET_LEN 43 /* base64url of 32 bytes, no padding */
#define AZ_HASH_HEX_LEN 64
/* "<id>.<secret>" */
#define AZ_BEARER_LEN (PH_AZ_ID_LEN + 1 + AZ_SECRET_LEN)

/* A new id: prefix (AZ_TOKEN_PREFIX or AZ_POLICY_PREFIX) and 16 hex
 * digits from getrandom. out gets PH_AZ_ID_LEN + 1 bytes. 0, or -1 when
 * the kernel gave no randomness (then out is "" and nothing may be made
 * from it). */
int az_id_new(const char *prefix, char out[PH_AZ_ID_LEN + 1]);

/* Whether id is prefix + exactly 16 lower-case hex digits (NUL-ended). */
int az_id_valid(const char *id, const char *prefix);

/* A new secret: 32 random bytes as 43 base64url characters + NUL. 0 or -1
 * (out wiped). The caller wipes it (az_wipe) once shown. */
int az_secret_new(char out[AZ_SECRET_LEN + 1]);

/* SHA-256 of len bytes of secret in lower-case hex + NUL. 0 or -1. */
int az_secret_hash(const char *secret, size_t len,
                   char out[AZ_HASH_HEX_LEN + 1]);

/* "<id>.<secret>" into out (AZ_BEARER_LEN + 1 bytes). 0, or -1 when id or
 * secret is not of the form above. */
int az_bearer_format(const char *id, const char *secret,
                     char out[AZ_BEARER_LEN + 1]);

/* Splits len bytes of bearer (not NUL-terminated; at most
 * PH_AZ_BEARER_MAX) into the token id and the hash of its secret. Strict:
 * exactly AZ_BEARER_LEN bytes, a valid token id, one '.', 43 base64url
 * characters whose last one carries no stray bits (the only spelling of
 * 32 bytes), nothing else. 0, or -1 for anything malformed (then id and
 * hash_hex are ""). The secret never leaves this function: only its hash
 * does. */
int az_bearer_parse(const char *bearer, size_t len,
                    char id[PH_AZ_ID_LEN + 1],
                    char hash_hex[AZ_HASH_HEX_LEN + 1]);

/* 1 when the two 64-character hex hashes are equal, compared in constant
 * time (CRYPTO_memcmp); 0 otherwise, also when either is NULL or not 64
 * characters long (the length check does not depend on the content). */
int az_hash_eq(const char *a, const char *b);

/* Wipes n bytes in a way the compiler keeps (OPENSSL_cleanse). */
void az_wipe(void *p, size_t n);

#endif
