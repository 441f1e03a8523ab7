/* SPDX-License-Identifier: BSD-2-Clause */
/* The one block a view lives in (cp_view.h), shared by the compiler
 * (cp_view_build.c) and the lifecycle and queries (cp_view.c):
 *
 *   cp_view_block | rules[] | proxies[] | credentials[] | candidates[] |
 *   strings | secret strings (usernames, passwords)
 *
 * One allocation, one free; the secrets sit together at the end so that
 * one wipe covers them. */
#ifndef PH_CP_VIEW_INT_H
#define PH_CP_VIEW_INT_H

#include <stdatomic.h>
#include <stddef.h>

#include <proxyhost/pool_view.h>

typedef struct cp_view_block {
  ph_pool_view pub;       /* first: a ph_pool_view * is the block */
  atomic_uint refs;
  size_t len;             /* of the whole block */
  size_t secret_off;      /* where the secret strings start */
  size_t secret_len;
} cp_view_block;

static inline cp_view_block *cp_view_block_of(const ph_pool_view *v) {
  return (cp_view_block *)(void *)(uintptr_t)v;
}

#endif
