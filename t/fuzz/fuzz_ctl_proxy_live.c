/* SPDX-License-Identifier: BSD-2-Clause */
/* libFuzzer target for tools/ctl_proxy_live.c: proxyhostctl proxy show reading
 * the controller's status JSON (issue 28). Besides memory safety: any
 * input is answered 1, 0 or -1, and a row is printed only for the id
 * asked (byte 0 picks one of two ids; the rest is the body). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_proxy_live.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  const char *id = data[0] & 1 ? "p1" : "<script>x</script>";
  char *out = NULL;
  size_t out_len = 0;
  FILE *f = open_memstream(&out, &out_len);
  if (!f)
    return 0;
  int rc = ctl_print_live(f, (const char *)data + 1, size - 1, id);
  fclose(f);
  if (rc < -1 || rc > 1 || (rc != 1 && out_len != 0) ||
      (rc == 1 && strncmp(out, "owner: ", 7) != 0))
    abort();
  free(out);
  return 0;
}
