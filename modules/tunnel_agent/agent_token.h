/* SPDX-License-Identifier: BSD-2-Clause */
/* The agent's bearer token from its token file, read at every connection
 * attempt so that a rotated token (or a file written after the process
 * started) is picked up on reconnect. The token never reaches a log, a
 * metric or an error: callers wipe the buffer after use. */
#ifndef TM_AGENT_TOKEN_H
#define TM_AGENT_TOKEN_H

#include <stddef.h>

enum token_status {
  TOKEN_OK = 0,
  TOKEN_MISSING,  /* no such file, or unreadable */
  TOKEN_EMPTY,    /* empty, or only whitespace */
  TOKEN_TOO_LONG, /* more than cap - 1 bytes */
  TOKEN_BAD       /* a control character or a space inside */
};

/* Reads path into out (cap bytes, NUL-terminated), the first line with
 * its trailing CR/LF and surrounding blanks stripped. TOKEN_OK with
 * *len set, or a status (out then holds nothing). */
int token_read_file(const char *path, char *out, size_t cap, size_t *len);
/* A token given in the configuration, checked as above. */
int token_check(const char *tok, size_t *len);
/* One phrase per status, for the warning (never the content). */
const char *token_status_text(int st);
/* Overwrites n bytes in a way the compiler cannot drop. */
void token_wipe(void *p, size_t n);

#endif
