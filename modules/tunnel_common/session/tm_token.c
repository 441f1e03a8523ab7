/* SPDX-License-Identifier: BSD-2-Clause */
/* The bearer token (tm_token.h). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tm_token.h"

void tm_token_wipe(void *p, size_t n) {
  volatile unsigned char *v = p;
  while (n--)
    *v++ = 0;
}

int tm_token_take(const char *value, size_t len, char *out, size_t cap) {
  if (cap)
    out[0] = 0;
  while (len && (value[len - 1] == '\n' || value[len - 1] == '\r' ||
                 value[len - 1] == ' ' || value[len - 1] == '\t'))
    len--;
  size_t lead = 0;
  while (lead < len && (value[lead] == ' ' || value[lead] == '\t'))
    lead++;
  value += lead;
  len -= lead;
  if (len == 0)
    return TM_TOKEN_EMPTY;
  if (len >= cap || len > TM_TOKEN_MAX)
    return TM_TOKEN_BAD;
  /* One header value: visible ASCII only (RFC 6750's b64token is
   * narrower; the server decides what it accepts). */
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)value[i] <= 0x20 || (unsigned char)value[i] >= 0x7f)
      return TM_TOKEN_BAD;
  memcpy(out, value, len);
  out[len] = 0;
  return TM_TOKEN_OK;
}

int tm_token_read(const char *path, char *out, size_t cap) {
  if (cap)
    out[0] = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return TM_TOKEN_MISSING;
  struct stat st;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return TM_TOKEN_BAD;
  }
  char buf[TM_TOKEN_MAX + 2];
  size_t n = 0;
  for (;;) {
    ssize_t r = read(fd, buf + n, sizeof(buf) - n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      close(fd);
      tm_token_wipe(buf, sizeof(buf));
      return TM_TOKEN_BAD;
    }
    if (r == 0 || (n += (size_t)r) == sizeof(buf))
      break;
  }
  close(fd);
  int rc = n == sizeof(buf) ? TM_TOKEN_BAD : tm_token_take(buf, n, out, cap);
  tm_token_wipe(buf, sizeof(buf));
  if (rc != TM_TOKEN_OK)
    tm_token_wipe(out, cap);
  return rc;
}

const char *tm_token_state_name(int st) {
  switch (st) {
  case TM_TOKEN_OK:
    return "ok";
  case TM_TOKEN_MISSING:
    return "missing";
  case TM_TOKEN_EMPTY:
    return "empty";
  default:
    return "unusable";
  }
}
