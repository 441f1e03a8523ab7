/* SPDX-License-Identifier: BSD-2-Clause */
/* A packed control-plane message (issue 26: the gateway's and the
 * checker's requests were packed by the same code twice): malloc'ed
 * bytes the caller owns and frees with cp_buf_free. Pure; any thread. */
#ifndef PH_CP_BUF_H
#define PH_CP_BUF_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

typedef struct cp_buf {
  uint8_t *data;
  size_t len;
} cp_buf;

/* Packs msg into out (out's old bytes are not freed). PH_OK, or
 * PH_ENOMEM (out empty). */
int cp_buf_pack(const ProtobufCMessage *msg, cp_buf *out);

/* Frees the bytes; out is empty after. NULL is ignored. */
void cp_buf_free(cp_buf *b);

#endif
