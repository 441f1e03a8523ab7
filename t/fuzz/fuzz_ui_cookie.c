/* SPDX-License-Identifier: BSD-2-Clause */
/* libFuzzer target for the status page's Cookie header parser
 * (host/ui_parse.c, ui_cookie_session), with the cookie named after the
 * listener's port. Input byte 0 picks the name: ph_session_9471, or
 * ph_session_947 (a prefix of the other: never taken for it). Besides
 * memory safety: a session found is exactly 64 lowercase hex digits,
 * NUL-terminated, and stands in the input right after "NAME=" (or
 * "NAME=\""), never after another cookie's name. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ui_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Whether id follows "NAME=" or "NAME=\"" somewhere in in. */
static int after_name(const char *in, size_t size, const char *name,
                      const char *id) {
  size_t nl = strlen(name);
  for (size_t i = 0; i + nl + 1 + UI_SESSION_HEX <= size; i++) {
    if (memcmp(in + i, name, nl) != 0 || in[i + nl] != '=')
      continue;
    size_t v = i + nl + 1;
    if (memcmp(in + v, id, UI_SESSION_HEX) == 0)
      return 1;
    if (in[v] == '"' && v + 1 + UI_SESSION_HEX <= size &&
        memcmp(in + v + 1, id, UI_SESSION_HEX) == 0)
      return 1;
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  const char *name = data[0] & 1 ? "ph_session_947" : "ph_session_9471";
  size--;
  char *in = malloc(size ? size : 1); /* exactly size bytes: ASan sees overreads */
  if (!in)
    return 0;
  memcpy(in, data + 1, size);
  char id[UI_SESSION_HEX + 1];
  memset(id, 'Z', sizeof(id));
  if (ui_cookie_session(in, size, name, id)) {
    if (id[UI_SESSION_HEX] != '\0')
      abort();
    for (int i = 0; i < UI_SESSION_HEX; i++)
      if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
        abort();
    if (!after_name(in, size, name, id))
      abort();
  }
  if (ui_cookie_session(in, size, "", id) || ui_cookie_session(in, size, NULL, id))
    abort(); /* no name: never a session */
  free(in);
  return 0;
}
