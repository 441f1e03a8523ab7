/* SPDX-License-Identifier: BSD-2-Clause */
/* See admin_token.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* O_NOFOLLOW, O_CLOEXEC, explicit_bzero */
#endif
#include "admin_token.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

void admin_token_wipe(admin_token *t) {
  if (t)
    explicit_bzero(t, sizeof(*t));
}

int admin_token_load(const char *path, admin_token *t, char *why,
                     size_t whylen) {
  admin_token_wipe(t);
  if (!path || !*path) {
    snprintf(why, whylen, "token_file is required");
    return -1;
  }
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    snprintf(why, whylen, "token_file %s: %s", path,
             errno == ELOOP ? "is a symbolic link" : strerror(errno));
    return -1;
  }
  struct stat st;
  char buf[ADMIN_TOKEN_MAX + 3];
  ssize_t n = -1;
  if (fstat(fd, &st) < 0) {
    snprintf(why, whylen, "token_file %s: %s", path, strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    snprintf(why, whylen, "token_file %s: not a regular file", path);
  } else if (st.st_mode & 077) {
    snprintf(why, whylen,
             "token_file %s: readable or writable by group or others "
             "(mode %04o); make it the owner's only: chmod 600 %s",
             path, (unsigned)(st.st_mode & 07777), path);
  } else {
    n = read(fd, buf, sizeof(buf));
    if (n < 0)
      snprintf(why, whylen, "token_file %s: %s", path, strerror(errno));
  }
  close(fd);
  if (n < 0)
    return -1;
  size_t len = (size_t)n;
  if (len > 0 && buf[len - 1] == '\n')
    len--;
  int ok = len >= ADMIN_TOKEN_MIN && len <= ADMIN_TOKEN_MAX;
  for (size_t i = 0; ok && i < len; i++)
    ok = buf[i] > 0x20 && buf[i] < 0x7f;
  if (!ok) {
    explicit_bzero(buf, sizeof(buf));
    snprintf(why, whylen,
             "token_file %s: must hold one token of %d to %d printable "
             "characters without spaces (proxyhostctl admin-token new "
             "makes one)",
             path, ADMIN_TOKEN_MIN, ADMIN_TOKEN_MAX);
    return -1;
  }
  memcpy(t->tok, buf, len);
  t->len = len;
  explicit_bzero(buf, sizeof(buf));
  return 0;
}

int admin_token_equal(const admin_token *t, const char *s, size_t n) {
  if (!t || !s || t->len == 0 || n > ADMIN_TOKEN_MAX)
    return 0;
  /* Every byte of the token's buffer is looked at whatever n is; the
   * candidate is read within its n bytes only. */
  unsigned diff = (unsigned)(t->len ^ n);
  for (size_t i = 0; i < ADMIN_TOKEN_MAX; i++) {
    unsigned char c = i < n ? (unsigned char)s[i] : 0;
    diff |= (unsigned)(t->tok[i] ^ c);
  }
  return diff == 0;
}

int admin_token_check(const admin_token *t, const char *authorization) {
  if (!t || !authorization || strncasecmp(authorization, "Bearer ", 7) != 0)
    return 0;
  const char *tok = authorization + 7;
  return admin_token_equal(t, tok, strnlen(tok, ADMIN_TOKEN_MAX + 1));
}
