/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What every control-plane client reads the same way from the
 * controller's answers (issue 25: the checker's chk_wire and the
 * gateway's cpc_wire shared these): an acknowledgement's
 * acknowledged_sequence, whatever the response type, and the check of an
 * id the controller handed out. Pure: no I/O, any thread.
 */
#ifndef CP_WIRE_H
#define CP_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

/* msg (len bytes) as a message of type d, whose uint64 field
 * "acknowledged_sequence" goes to *acked. PH_OK, or PH_EINVAL (*acked = 0)
 * when msg is not such a message or d has no such field. */
int cp_wire_read_ack(const ProtobufCMessageDescriptor *d, const uint8_t *msg,
                     size_t len, uint64_t *acked);

/* 1 when s is 1..max bytes of printable ASCII without spaces (0x21-0x7e),
 * else 0 (NULL: 0). */
int cp_wire_printable(const char *s, size_t max);

#endif
