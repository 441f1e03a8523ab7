/* SPDX-License-Identifier: BSD-2-Clause */
/* The admin token: read from a file only its owner may read, checked
 * against a request's "Authorization: Bearer ..." or a login form's field
 * in constant time. The token itself never appears in an error text or a
 * log line. Shared by the host ([admin] token_file, the status page) and
 * the admin modules (admin_kit): one set of file rules. No library
 * beyond libc: the token is kept in memory, wiped by admin_token_wipe. */
#ifndef PH_ADMIN_API_TOKEN_H
#define PH_ADMIN_API_TOKEN_H

#include <stddef.h>

#define ADMIN_TOKEN_MIN 32  /* characters: at least 128 bits in hex/base64 */
#define ADMIN_TOKEN_MAX 256

typedef struct admin_token {
  size_t len; /* 0: no token (every check fails) */
  unsigned char tok[ADMIN_TOKEN_MAX];
} admin_token;

/* Reads path: a regular file (no symlink), not readable or writable by
 * group or others, holding one token of ADMIN_TOKEN_MIN..ADMIN_TOKEN_MAX
 * printable ASCII characters without spaces (one trailing newline
 * allowed). 0, or -1 with the reason in why (naming the path and the
 * mode, never the content); t is left wiped on failure. */
int admin_token_load(const char *path, admin_token *t, char *why,
                     size_t whylen);

/* 1 when s[0..n) is the token, else 0. Constant time in the token's and
 * the candidate's content: all ADMIN_TOKEN_MAX bytes are compared, the
 * lengths folded in. */
int admin_token_equal(const admin_token *t, const char *s, size_t n);

/* 1 when authorization is "Bearer " followed by the token (the scheme
 * case-insensitive), else 0. As admin_token_equal. */
int admin_token_check(const admin_token *t, const char *authorization);

/* Zeroes t (a token being dropped or replaced). NULL is ignored. */
void admin_token_wipe(admin_token *t);

#endif
