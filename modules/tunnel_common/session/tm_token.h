/* SPDX-License-Identifier: BSD-2-Clause */
/* The bearer token a client or an agent sends to the server (one set of
 * rules for both roles), from token_file (read
 * at every connection attempt, so a rotated token is used on the next
 * reconnect and a file written after start is picked up) or the
 * sensitive token key. Nothing here logs or returns the token's bytes in
 * an error. */
#ifndef TM_TOKEN_H
#define TM_TOKEN_H

#include <stddef.h>

#define TM_TOKEN_MAX 4096

/* Why there is no token (one warning per change of this state). */
enum tm_token_state {
  TM_TOKEN_OK = 0,
  TM_TOKEN_MISSING, /* the file does not exist or cannot be opened */
  TM_TOKEN_EMPTY,   /* empty, or only white space */
  TM_TOKEN_BAD      /* not a regular file, too long, or characters a
                       header cannot carry */
};

/* Reads path into out (NUL-terminated, trailing white space and the line
 * end dropped). Returns a tm_token_state; out is wiped unless OK. */
int tm_token_read(const char *path, char *out, size_t cap);
/* Checks a token from the configuration the same way (TM_TOKEN_OK,
 * TM_TOKEN_EMPTY or TM_TOKEN_BAD) and copies it trimmed into out. */
int tm_token_take(const char *value, size_t len, char *out, size_t cap);
/* "missing", "empty", "unusable" (log and check messages). */
const char *tm_token_state_name(int st);
/* Overwrites n bytes so the compiler keeps the writes. */
void tm_token_wipe(void *p, size_t n);

#endif
