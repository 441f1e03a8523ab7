/* SPDX-License-Identifier: BSD-2-Clause */
/* libFuzzer target: the tunnel server's reading of a peer's bearer token
 * for its log lines (modules/tunnel_server/ts_bearer.c), fed the
 * Authorization header's token as the peer sent it. Contract checked:
 * the answer is "-" or exactly the input's first 20 bytes, which are then
 * "tok_" and 16 lower-case hex digits followed by '.'; nothing past the
 * '.' (the secret) ever reaches it; the answer is NUL-terminated within
 * its buffer and the same when asked twice. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tunnel_server/ts_bearer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *b = (const char *)data;
  char out[PH_AZ_ID_LEN + 1], again[PH_AZ_ID_LEN + 1];
  memset(out, 'x', sizeof(out));
  ts_bearer_id(b, size, out);
  if (memchr(out, '\0', sizeof(out)) == NULL)
    abort();
  ts_bearer_id(b, size, again);
  if (strcmp(out, again) != 0)
    abort();
  if (strcmp(out, "-") == 0)
    return 0;
  if (strlen(out) != PH_AZ_ID_LEN || size <= PH_AZ_ID_LEN ||
      memcmp(out, b, PH_AZ_ID_LEN) != 0 || b[PH_AZ_ID_LEN] != '.' ||
      memcmp(out, "tok_", 4) != 0 ||
      strspn(out + 4, "0123456789abcdef") != PH_AZ_ID_LEN - 4)
    abort();
  return 0;
}
