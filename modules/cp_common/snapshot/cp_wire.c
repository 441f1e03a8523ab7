/* SPDX-License-Identifier: BSD-2-Clause */
/* The control-plane clients' common reads (cp_wire.h). */
#include <string.h>

#include <proxyhost/abi.h>

#include "cp_wire.h"

int cp_wire_read_ack(const ProtobufCMessageDescriptor *d, const uint8_t *msg,
                     size_t len, uint64_t *acked) {
  *acked = 0;
  const ProtobufCFieldDescriptor *f =
      protobuf_c_message_descriptor_get_field_by_name(d,
                                                      "acknowledged_sequence");
  if (!f || f->type != PROTOBUF_C_TYPE_UINT64 ||
      f->label == PROTOBUF_C_LABEL_REPEATED)
    return PH_EINVAL;
  ProtobufCMessage *r = protobuf_c_message_unpack(d, NULL, len, msg);
  if (!r)
    return PH_EINVAL;
  memcpy(acked, (const char *)r + f->offset, sizeof(*acked));
  protobuf_c_message_free_unpacked(r, NULL);
  return PH_OK;
}

int cp_wire_printable(const char *s, size_t max) {
  size_t n = s ? strlen(s) : 0;
  if (n < 1 || n > max)
    return 0;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
      return 0;
  return 1;
}
