/* SPDX-License-Identifier: BSD-2-Clause */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ro_args.h"

void ro_args_add(ro_args *a, const char *s, size_t len) {
  if (a->failed)
    return;
  if (a->n == a->cap) {
    size_t cap = a->cap ? a->cap * 2 : 16;
    char **v = realloc(a->v, cap * sizeof(*v));
    if (!v) {
      a->failed = 1;
      return;
    }
    a->v = v;
    size_t *l = realloc(a->len, cap * sizeof(*l));
    if (!l) {
      a->failed = 1;
      return;
    }
    a->len = l;
    a->cap = cap;
  }
  char *c = malloc(len + 1);
  if (!c) {
    a->failed = 1;
    return;
  }
  memcpy(c, s, len);
  c[len] = 0;
  a->v[a->n] = c;
  a->len[a->n] = len;
  a->n++;
}

void ro_args_str(ro_args *a, const char *s) { ro_args_add(a, s, strlen(s)); }

void ro_args_u64(ro_args *a, uint64_t v) {
  char b[24];
  int n = snprintf(b, sizeof(b), "%" PRIu64, v);
  ro_args_add(a, b, (size_t)n);
}

void ro_args_hex(ro_args *a, const uint8_t *b, size_t n) {
  char h[2 * 64 + 1];
  static const char d[] = "0123456789abcdef";
  if (n > 64) {
    a->failed = 1;
    return;
  }
  for (size_t i = 0; i < n; i++) {
    h[2 * i] = d[b[i] >> 4];
    h[2 * i + 1] = d[b[i] & 15];
  }
  ro_args_add(a, h, 2 * n);
}

int ro_args_failed(const ro_args *a) { return a->failed; }

void ro_args_free(ro_args *a) {
  for (size_t i = 0; i < a->n; i++)
    free(a->v[i]);
  free(a->v);
  free(a->len);
  memset(a, 0, sizeof(*a));
}
