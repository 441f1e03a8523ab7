/* SPDX-License-Identifier: BSD-2-Clause */
/* The main libFuzzer would provide, for make check: runs the fuzz target
 * linked with it once over each file named on the command line. The
 * target's own checks abort on a broken contract; a clean exit means
 * every input passed. Inputs are read whole, at most REPLAY_MAX bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define REPLAY_MAX (1 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
  static uint8_t buf[REPLAY_MAX];
  for (int i = 1; i < argc; i++) {
    FILE *f = fopen(argv[i], "rb");
    if (!f) {
      fprintf(stderr, "replay: cannot open %s\n", argv[i]);
      return 2;
    }
    size_t n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    /* A heap copy of the exact size, so that ASan sees any read past the
     * input's end, as under libFuzzer. */
    uint8_t *copy = malloc(n ? n : 1);
    if (!copy)
      return 2;
    for (size_t k = 0; k < n; k++)
      copy[k] = buf[k];
    LLVMFuzzerTestOneInput(copy, n);
    free(copy);
  }
  return 0;
}
