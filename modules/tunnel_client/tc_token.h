/* SPDX-License-Identifier: BSD-2-Clause */
/* The bearer token the client sends to the server, from token_file (read
 * at every connection attempt, so a rotated token is used on the next
 * reconnect and a file written after start is picked up) or the
 * sensitive token key. Nothing here logs or returns the token's bytes in
 * an error. */
#ifndef TC_TOKEN_H
#define TC_TOKEN_H

#include <stddef.h>

#define TC_TOKEN_MAX 4096

/* Why there is no token (one warning per change of this state). */
enum tc_token_state {
  TC_TOKEN_OK = 0,
  TC_TOKEN_MISSING, /* the file does not exist or cannot be opened */
  TC_TOKEN_EMPTY,   /* empty, or only white space */
  TC_TOKEN_BAD      /* not a regular file, too long, or characters a
                       header cannot carry */
};

/* Reads path into out (NUL-terminated, trailing white space and the line
 * end dropped). Returns a tc_token_state; out is wiped unless OK. */
int tc_token_read(const char *path, char *out, size_t cap);
/* Checks a token from the configuration the same way (TC_TOKEN_OK,
 * TC_TOKEN_EMPTY or TC_TOKEN_BAD) and copies it trimmed into out. */
int tc_token_take(const char *value, size_t len, char *out, size_t cap);
/* "missing", "empty", "unusable" (log and check messages). */
const char *tc_token_state_name(int st);
/* Overwrites n bytes so the compiler keeps the writes. */
void tc_token_wipe(void *p, size_t n);

#endif
