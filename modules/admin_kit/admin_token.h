/* SPDX-License-Identifier: BSD-2-Clause */
/* The admin token: read from a file only its owner may read, checked
 * against a request's "Authorization: Bearer ..." in constant time. The
 * token itself never appears in an error text or a log line. */
#ifndef PH_ADMIN_API_TOKEN_H
#define PH_ADMIN_API_TOKEN_H

#include <stddef.h>

#define ADMIN_TOKEN_MIN 32  /* characters: at least 128 bits in hex/base64 */
#define ADMIN_TOKEN_MAX 256

/* SHA-256 of the token: what is kept and compared. */
typedef struct admin_token {
  unsigned char digest[32];
} admin_token;

/* Reads path: a regular file (no symlink), not readable or writable by
 * group or others, holding one token of ADMIN_TOKEN_MIN..ADMIN_TOKEN_MAX
 * printable ASCII characters without spaces (one trailing newline
 * allowed). 0, or -1 with the reason in why (naming the path and the
 * mode, never the content). */
int admin_token_load(const char *path, admin_token *t, char *why,
                     size_t whylen);

/* 1 when authorization is "Bearer " followed by the token (the scheme
 * case-insensitive), else 0. Constant time in the token's content: the
 * digests are compared. */
int admin_token_check(const admin_token *t, const char *authorization);

#endif
