/* SPDX-License-Identifier: BSD-2-Clause */
/* The agent's token file (agent_token.h). */
#include "agent_token.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

void token_wipe(void *p, size_t n) {
  volatile unsigned char *v = p;
  while (n--)
    *v++ = 0;
}

/* Strips blanks and a trailing newline, then checks what is left. */
static int clean(char *s, size_t n, size_t *len) {
  char *nl = memchr(s, '\n', n);
  if (nl)
    n = (size_t)(nl - s); /* the first line only */
  size_t a = 0;
  while (a < n && (s[a] == ' ' || s[a] == '\t' || s[a] == '\r'))
    a++;
  while (n > a && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
    n--;
  if (n == a)
    return TOKEN_EMPTY;
  for (size_t i = a; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c <= 0x20 || c >= 0x7f)
      return TOKEN_BAD; /* it goes into an HTTP header as it is */
  }
  memmove(s, s + a, n - a);
  s[n - a] = '\0';
  *len = n - a;
  return TOKEN_OK;
}

int token_read_file(const char *path, char *out, size_t cap, size_t *len) {
  *len = 0;
  if (cap < 2)
    return TOKEN_TOO_LONG;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0)
    return TOKEN_MISSING;
  /* At most cap - 1 bytes (bounded loop: each read adds at least one). */
  size_t n = 0;
  int st = TOKEN_OK;
  while (n < cap - 1) {
    ssize_t r = read(fd, out + n, cap - 1 - n);
    if (r < 0) {
      st = TOKEN_MISSING;
      break;
    }
    if (r == 0)
      break;
    n += (size_t)r;
  }
  close(fd);
  /* A buffer filled without a newline may have been cut: refuse it. */
  if (st == TOKEN_OK && n == cap - 1 && !memchr(out, '\n', n))
    st = TOKEN_TOO_LONG;
  if (st == TOKEN_OK) {
    out[n] = '\0';
    st = clean(out, n, len);
  }
  if (st != TOKEN_OK)
    token_wipe(out, cap);
  return st;
}

int token_check(const char *tok, size_t *len) {
  char buf[4097];
  size_t n = strlen(tok);
  if (n >= sizeof(buf))
    return TOKEN_TOO_LONG;
  memcpy(buf, tok, n + 1);
  int st = clean(buf, n, len);
  token_wipe(buf, sizeof(buf));
  return st;
}

const char *token_status_text(int st) {
  switch (st) {
  case TOKEN_OK:
    return "token read";
  case TOKEN_MISSING:
    return "the token file is missing or unreadable";
  case TOKEN_EMPTY:
    return "the token file is empty";
  case TOKEN_TOO_LONG:
    return "the token is too long";
  default:
    return "the token holds blanks or control characters";
  }
}
