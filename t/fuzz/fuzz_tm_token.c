/* SPDX-License-Identifier: BSD-2-Clause */
/* Fuzz target: the bearer token as tunnel_client and tunnel_agent read
 * it from token_file (modules/tunnel_common/session/tm_token.c, tm_token_take: the file's bytes).
 * It checks the contract of tm_token.h: an accepted token is
 * NUL-terminated, 1..TM_TOKEN_MAX bytes of visible ASCII (a header value
 * that cannot be split: no space, CR, LF or control byte), and a
 * substring of the input; a refusal leaves the output empty; white space
 * only is "empty"; the verdict is deterministic and does not depend on
 * trailing line ends; and a too small buffer refuses rather than cuts.
 * The input is the file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tunnel_common/session/tm_token.h"

#define CHECK(c)                                                          \
  do {                                                                    \
    if (!(c)) {                                                           \
      fprintf(stderr, "fuzz_tm_token: %s\n", #c);                         \
      abort();                                                            \
    }                                                                     \
  } while (0)

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  static char out[TM_TOKEN_MAX + 1], out2[TM_TOKEN_MAX + 1];
  static char with_nl[TM_TOKEN_MAX * 2 + 8];
  const char *in = (const char *)data;
  int st = tm_token_take(in, size, out, sizeof(out));
  CHECK(st == TM_TOKEN_OK || st == TM_TOKEN_EMPTY || st == TM_TOKEN_BAD);
  CHECK(tm_token_take(in, size, out2, sizeof(out2)) == st);
  if (st != TM_TOKEN_OK) {
    CHECK(out[0] == 0);
    int blank = 1;
    for (size_t i = 0; i < size; i++)
      if (!memchr(" \t\r\n", in[i], 4))
        blank = 0;
    CHECK(blank == (st == TM_TOKEN_EMPTY));
    return 0;
  }
  size_t n = strlen(out);
  CHECK(n >= 1 && n <= TM_TOKEN_MAX);
  CHECK(!strcmp(out, out2));
  for (size_t i = 0; i < n; i++)
    CHECK((unsigned char)out[i] > 0x20 && (unsigned char)out[i] < 0x7f);
  CHECK(memmem(data, size, out, n) != NULL);
  /* a line end more changes nothing */
  if (size + 2 <= sizeof(with_nl)) {
    memcpy(with_nl, data, size);
    memcpy(with_nl + size, "\r\n", 2);
    CHECK(tm_token_take(with_nl, size + 2, out2, sizeof(out2)) ==
              TM_TOKEN_OK &&
          !strcmp(out, out2));
  }
  /* a buffer one byte too small refuses */
  CHECK(tm_token_take(in, size, out2, n) == TM_TOKEN_BAD && out2[0] == 0);
  return 0;
}
