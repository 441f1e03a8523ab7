/* SPDX-License-Identifier: BSD-2-Clause */
/* A unary call with its answer kept (cp_grpc_unary.h). */
#include <stdlib.h>
#include <string.h>

#include "cp_grpc_unary.h"

static void unary_message(void *arg, cp_grpc_ccall *call, const uint8_t *msg,
                          size_t len) {
  (void)call;
  cp_unary *u = arg;
  free(u->resp);
  u->resp = malloc(len ? len : 1);
  u->len = u->resp ? len : 0;
  if (u->resp && len)
    memcpy(u->resp, msg, len);
}

/* A call cut at a module's stop or with its channel: no done, so the
 * unary is freed here (it leaked before: LSan, in cp_reload.sh). */
static void unary_drop(void *arg) { cp_unary_free(arg); }

cp_grpc_ccall *cp_unary_start(cp_grpc_channel *ch, const char *path,
                              int64_t timeout_ms, const uint8_t *req,
                              size_t len,
                              void (*done)(void *u, cp_grpc_ccall *call,
                                           int status, const char *msg),
                              void *owner) {
  cp_unary *u = calloc(1, sizeof(*u));
  if (!u)
    return NULL;
  u->owner = owner;
  cp_grpc_ccall_cbs cbs = {unary_message, NULL, done, unary_drop};
  cp_grpc_ccall *c =
      cp_grpc_ccall_start(ch, path, CP_RPC_UNARY, timeout_ms, req, len, &cbs, u);
  if (!c)
    free(u);
  return c;
}

void cp_unary_free(cp_unary *u) {
  if (!u)
    return;
  free(u->resp);
  free(u);
}
