/* SPDX-License-Identifier: BSD-2-Clause */
/* A unary call whose one answer is kept until it ends (issue 26: the
 * gateway's session calls and the checker's RegisterChecker were the same
 * code twice). cp_unary_start() starts the call on ch with a cp_unary as
 * the callbacks' argument: on_message keeps a copy of the answer in
 * resp/len (the last one, malloc'ed; len 0 when there was none or no
 * memory), then done(u, call, status, msg) runs once; the caller frees u
 * with cp_unary_free() when done with it (typically at the end of done).
 * A call cut without done (its channel freed, its queue closing at a
 * module's stop) frees u itself (on_drop). owner is the caller's. Loop
 * thread only (cp_grpc.h's rules). */
#ifndef CP_GRPC_UNARY_H
#define CP_GRPC_UNARY_H

#include <stddef.h>
#include <stdint.h>

#include "cp_grpc.h"

typedef struct cp_unary {
  void *owner;
  uint8_t *resp;
  size_t len;
} cp_unary;

/* NULL on a bad argument or no memory (then done never runs). */
cp_grpc_ccall *cp_unary_start(cp_grpc_channel *ch, const char *path,
                              int64_t timeout_ms, const uint8_t *req,
                              size_t len,
                              void (*done)(void *u, cp_grpc_ccall *call,
                                           int status, const char *msg),
                              void *owner);

/* Frees u and its answer. NULL is ignored. */
void cp_unary_free(cp_unary *u);

#endif
