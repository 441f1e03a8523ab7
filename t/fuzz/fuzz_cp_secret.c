/* SPDX-License-Identifier: BSD-2-Clause */
/* Fuzz target: a secret file's bytes (modules/controlplane_server/
 * cp_secrets.c, cp_secret_parse). It checks the contract of cp_secrets.h:
 * an accepted file gives a username of 1..255 visible ASCII bytes without
 * ':' and a password of 1..255 visible ASCII bytes, both NUL-terminated,
 * that joined with ':' are the input without its line end; a refusal
 * leaves the output wiped and a reason; the verdict is deterministic.
 * The input is the file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controlplane_server/cp_secrets.h"

#define CHECK(c)                                                          \
  do {                                                                    \
    if (!(c)) {                                                           \
      fprintf(stderr, "fuzz_cp_secret: %s\n", #c);                        \
      abort();                                                            \
    }                                                                     \
  } while (0)

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static void visible_field(const char *s, int colon_ok) {
  size_t n = strlen(s);
  CHECK(n >= 1 && n <= 255);
  for (size_t i = 0; i < n; i++) {
    CHECK(s[i] > 0x20 && s[i] < 0x7f);
    CHECK(colon_ok || s[i] != ':');
  }
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  static ph_pool_credential c, c2;
  const char *in = (const char *)data, *why = NULL, *why2 = NULL;
  memset(&c, 0x55, sizeof c);
  int rc = cp_secret_parse(in, size, &c, &why);
  int rc2 = cp_secret_parse(in, size, &c2, &why2);
  CHECK(rc == rc2);
  if (rc < 0) {
    CHECK(why && *why);
    CHECK(c.username[0] == 0 && c.password[0] == 0);
    return 0;
  }
  visible_field(c.username, 0);
  visible_field(c.password, 1);
  size_t u = strlen(c.username), p = strlen(c.password), n = size;
  if (n > 0 && in[n - 1] == '\n')
    n--;
  if (n > 0 && in[n - 1] == '\r')
    n--;
  CHECK(u + 1 + p == n);
  CHECK(memcmp(in, c.username, u) == 0 && in[u] == ':' &&
        memcmp(in + u + 1, c.password, p) == 0);
  CHECK(strcmp(c.username, c2.username) == 0 &&
        strcmp(c.password, c2.password) == 0);
  return 0;
}
