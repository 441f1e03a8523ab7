/* SPDX-License-Identifier: BSD-2-Clause */
/* The HTTP API modules' tests (admin_api, pool_api) on the mock host: a
 * temporary directory holding the bearer token file, the token written
 * with a mode, and the first start that the rest of a test needs. */
#ifndef PH_API_TEST_H
#define PH_API_TEST_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <proxyhost/mock.h>

#include "tap.h"

/* A token of the accepted length (32 characters and more). */
#define API_TEST_TOKEN "0123456789abcdef0123456789abcdef-admin"

/* Makes the directory /tmp/NAME.XXXXXX (in dir) and names the token file
 * admin.token in it (not written): 0, or -1 when it cannot be made. */
static inline int api_test_dirs(char *dir, size_t dlen, char *token_file,
                                size_t tlen, const char *name) {
  snprintf(dir, dlen, "/tmp/%s.XXXXXX", name);
  if (!mkdtemp(dir))
    return -1;
  snprintf(token_file, tlen, "%s/admin.token", dir);
  return 0;
}

/* The token file: content with mode, replacing any. */
static inline void api_test_write_token(const char *token_file,
                                        const char *content, mode_t mode) {
  unlink(token_file);
  int fd = open(token_file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (write(fd, content, strlen(content)) < 0)
    perror("write");
  close(fd);
  chmod(token_file, mode);
}

/* The start the rest of a test needs: the TAP line what (m started), and
 * on failure err as a diagnostic. m. */
static inline ph_mock *api_test_started(ph_mock *m, const char *err,
                                        const char *what) {
  if (!ok(m != NULL, what))
    printf("# %s\n", err);
  return m;
}

/* A start that must fail: the TAP line what (m NULL), m freed. Whether it
 * failed; the caller's err holds the reasons. */
static inline int api_test_refused(ph_mock *m, const char *what) {
  int refused = ok(m == NULL, what);
  ph_mock_free(m);
  return refused;
}

#endif
