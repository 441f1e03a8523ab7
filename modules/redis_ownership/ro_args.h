/* SPDX-License-Identifier: BSD-2-Clause */
/* A Redis command's arguments, each an owned copy (binary-safe), grown
 * as they are added. An allocation failure is remembered: the vector
 * reports it once, from ro_args_failed, instead of at every add. */
#ifndef PH_RO_ARGS_H
#define PH_RO_ARGS_H

#include <stddef.h>
#include <stdint.h>

typedef struct ro_args {
  size_t n, cap;
  char **v;
  size_t *len;
  int failed;
} ro_args;

void ro_args_add(ro_args *a, const char *s, size_t len);
void ro_args_str(ro_args *a, const char *s);
void ro_args_u64(ro_args *a, uint64_t v);
/* 32 raw bytes as 64 lower-case hex digits. */
void ro_args_hex(ro_args *a, const uint8_t *b, size_t n);
int ro_args_failed(const ro_args *a);
void ro_args_free(ro_args *a);

#endif
