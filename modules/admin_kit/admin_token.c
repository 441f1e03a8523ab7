/* SPDX-License-Identifier: BSD-2-Clause */
/* See admin_token.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* O_NOFOLLOW, O_CLOEXEC */
#endif
#include "admin_token.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

static int digest(const char *s, size_t n, unsigned char out[32]) {
  unsigned int len = 0;
  return EVP_Digest(s, n, out, &len, EVP_sha256(), NULL) == 1 && len == 32
             ? 0
             : -1;
}

int admin_token_load(const char *path, admin_token *t, char *why,
                     size_t whylen) {
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
    OPENSSL_cleanse(buf, sizeof(buf));
    snprintf(why, whylen,
             "token_file %s: must hold one token of %d to %d printable "
             "characters without spaces (proxyhostctl admin-token new "
             "makes one)",
             path, ADMIN_TOKEN_MIN, ADMIN_TOKEN_MAX);
    return -1;
  }
  int rc = digest(buf, len, t->digest);
  OPENSSL_cleanse(buf, sizeof(buf));
  if (rc < 0)
    snprintf(why, whylen, "token_file %s: cannot hash it", path);
  return rc;
}

int admin_token_check(const admin_token *t, const char *authorization) {
  if (!t || !authorization || strncasecmp(authorization, "Bearer ", 7) != 0)
    return 0;
  const char *tok = authorization + 7;
  size_t n = strlen(tok);
  if (n == 0 || n > ADMIN_TOKEN_MAX)
    return 0;
  unsigned char d[32];
  if (digest(tok, n, d) < 0)
    return 0;
  int same = CRYPTO_memcmp(d, t->digest, sizeof(d)) == 0;
  OPENSSL_cleanse(d, sizeof(d));
  return same;
}
