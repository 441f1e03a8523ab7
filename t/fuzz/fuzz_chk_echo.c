/* SPDX-License-Identifier: BSD-2-Clause */
/* Fuzz target: the checker's reading of an echo answer's body
 * (modules/checker/chk_echo.c, issue 26, CP-6-4), what a proxy under
 * check may forge. The input is the body. It checks that a success has a
 * NUL-terminated egress address and one of the three levels, and that
 * the reading is deterministic. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checker/chk_echo.h"

#define CHECK(c)                                                               \
  do {                                                                         \
    if (!(c)) {                                                                \
      fprintf(stderr, "fuzz_chk_echo: %s\n", #c);                              \
      abort();                                                                 \
    }                                                                          \
  } while (0)

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  const char *own[] = {"127.0.0.1", "::1", ""};
  chk_echo_result a, b;
  int ra = chk_echo_read((const char *)data, size, "n1", own, 3, &a);
  int rb = chk_echo_read((const char *)data, size, "n1", own, 3, &b);
  CHECK(ra == rb);
  if (ra == 0) {
    CHECK(memchr(a.egress_ip, 0, sizeof(a.egress_ip)) != NULL);
    CHECK(a.anonymity >= CHK_ANON_TRANSPARENT &&
          a.anonymity <= CHK_ANON_ELITE);
    CHECK(!strcmp(a.egress_ip, b.egress_ip) && a.anonymity == b.anonymity);
  }
  (void)chk_addr_in((const char *)data, size, "10.0.0.1");
  return 0;
}
