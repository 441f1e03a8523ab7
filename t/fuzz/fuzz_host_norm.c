/* SPDX-License-Identifier: BSD-2-Clause */
/* libFuzzer target: the normal form of a target host
 * (modules/lib/host_norm.c), which the "access" providers and the
 * authorization cache apply to the host every client sends.
 *
 * Input: the host's bytes (at most 300, NUL-terminated here; an embedded
 * NUL ends it as it would a C string). Contract checked:
 *   - host_norm returns 0 or -1, and host_norm_ok 0 or 1;
 *   - an accepted host's normal form is 1..HOST_NORM_MAX bytes,
 *     NUL-terminated, without upper case, a trailing dot or brackets;
 *   - the normal form is a fixed point: normalised again it is itself,
 *     and host_norm_ok says it is normal;
 *   - host_norm_ok(h) holds exactly when h is its own normal form. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/host_norm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char in[301];
  size_t n = size < 300 ? size : 300;
  memcpy(in, data, n);
  in[n] = '\0';
  char out[HOST_NORM_MAX + 1], again[HOST_NORM_MAX + 1];
  memset(out, 'X', sizeof(out));
  int rc = host_norm(in, out);
  int is_ok = host_norm_ok(in);
  if ((rc != 0 && rc != -1) || (is_ok != 0 && is_ok != 1))
    abort();
  if (rc != 0) {
    if (is_ok)
      abort(); /* refused, yet called normal */
    return 0;
  }
  size_t len = strnlen(out, sizeof(out));
  if (len == 0 || len > HOST_NORM_MAX)
    abort();
  for (size_t i = 0; i < len; i++)
    if ((out[i] >= 'A' && out[i] <= 'Z') || out[i] == '[' || out[i] == ']')
      abort();
  if (out[len - 1] == '.')
    abort();
  if (host_norm(out, again) != 0 || strcmp(again, out) != 0 ||
      !host_norm_ok(out))
    abort(); /* not a fixed point */
  if (is_ok != (strcmp(in, out) == 0))
    abort();
  return 0;
}
