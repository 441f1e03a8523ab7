/* SPDX-License-Identifier: BSD-2-Clause */
/* Reading a whole file (a log the module under test wrote) in unit tests. */
#ifndef PH_FILE_TEST_H
#define PH_FILE_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first MiB of path, NUL-terminated, as a malloc'd string the caller
 * frees; "" (malloc'd) when the file cannot be read. */
static inline char *file_test_slurp(const char *path) {
  static char text[1 << 20];
  size_t n = 0;
  FILE *f = fopen(path, "r");
  if (f) {
    n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
  }
  text[n] = '\0';
  return strdup(text);
}

#endif
