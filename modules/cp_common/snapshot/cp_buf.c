/* SPDX-License-Identifier: BSD-2-Clause */
/* A packed control-plane message (cp_buf.h). */
#include <stdlib.h>

#include <proxyhost/abi.h>

#include "cp_buf.h"

int cp_buf_pack(const ProtobufCMessage *msg, cp_buf *out) {
  size_t n = protobuf_c_message_get_packed_size(msg);
  out->data = malloc(n ? n : 1);
  out->len = 0;
  if (!out->data)
    return PH_ENOMEM;
  out->len = protobuf_c_message_pack(msg, out->data);
  return PH_OK;
}

void cp_buf_free(cp_buf *b) {
  if (!b)
    return;
  free(b->data);
  b->data = NULL;
  b->len = 0;
}
