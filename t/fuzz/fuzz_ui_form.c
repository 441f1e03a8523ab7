/* SPDX-License-Identifier: BSD-2-Clause */
/* libFuzzer target for the status page's login form parser
 * (host/ui_parse.c, ui_form_token) and the percent decoder it shares with
 * the status query. Besides memory safety: a token read is within the
 * buffer, NUL-terminated, without control bytes; the decoder never
 * writes past max. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ui_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *in = malloc(size ? size : 1);
  if (!in)
    return 0;
  memcpy(in, data, size);
  char tok[257];
  long n = ui_form_token(in, size, tok, sizeof(tok));
  if (n >= 0) {
    if ((size_t)n >= sizeof(tok) || tok[n] != '\0' || size < 6)
      abort();
    for (long i = 0; i < n; i++)
      if ((unsigned char)tok[i] < 0x20 || tok[i] == 0x7f)
        abort();
  }
  char out[16];
  memset(out, 'Z', sizeof(out));
  long k = ui_form_decode(in, size, out, 8);
  if (k > 8 || out[8] != 'Z' || (k >= 0 && (size_t)k > size))
    abort();
  free(in);
  return 0;
}
