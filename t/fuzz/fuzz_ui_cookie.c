/* SPDX-License-Identifier: BSD-2-Clause */
/* libFuzzer target for the status page's Cookie header parser
 * (host/ui_parse.c, ui_cookie_session). Besides memory safety: a session
 * found is exactly 64 lowercase hex digits, NUL-terminated, and appears
 * in the input. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ui_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *in = malloc(size ? size : 1); /* exactly size bytes: ASan sees overreads */
  if (!in)
    return 0;
  memcpy(in, data, size);
  char id[UI_SESSION_HEX + 1];
  memset(id, 'Z', sizeof(id));
  if (ui_cookie_session(in, size, id)) {
    if (id[UI_SESSION_HEX] != '\0')
      abort();
    for (int i = 0; i < UI_SESSION_HEX; i++)
      if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
        abort();
    if (!memmem(in, size, id, UI_SESSION_HEX))
      abort();
  }
  free(in);
  return 0;
}
