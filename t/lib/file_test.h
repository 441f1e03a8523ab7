/* SPDX-License-Identifier: BSD-2-Clause */
/* Reading a whole file (a log the module under test wrote) in unit tests. */
#ifndef PH_FILE_TEST_H
#define PH_FILE_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The whole of path, NUL-terminated, as a malloc'd string the caller
 * frees; "" (malloc'd) when the file cannot be read. NULL only when out
 * of memory. */
static inline char *file_test_slurp(const char *path) {
  size_t n = 0, cap = 1 << 16;
  char *text = malloc(cap);
  FILE *f = fopen(path, "r");
  while (text && f) {
    n += fread(text + n, 1, cap - 1 - n, f);
    if (n < cap - 1)
      break;
    char *more = realloc(text, cap * 2);
    if (!more)
      free(text);
    text = more;
    cap *= 2;
  }
  if (f)
    fclose(f);
  if (text)
    text[n] = '\0';
  return text;
}

#endif
