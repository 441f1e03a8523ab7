/* SPDX-License-Identifier: BSD-2-Clause */
/* test_tm_ws's stand-in for tm_session (and, until tm-proto is merged,
 * the subprotocol helpers of tm_proto.h): an echo "session" bound to one
 * tm_ws_conn, recording what arrived and writing what it is given, one
 * message per writable event, through the real tm_ws transport. */
#ifndef TM_WS_STUBS_H
#define TM_WS_STUBS_H

#include <stddef.h>
#include <stdint.h>

#include "tunnel_common/session/tm_ws.h"

#define STUB_QMAX 8

struct tm_session {
  tm_ws_conn *c;
  int echo;          /* write every message back */
  int messages;      /* messages received */
  size_t last_len;   /* the last one's length */
  uint8_t last[16];  /* and its first bytes */
  uint32_t last_sum; /* a checksum of the whole last message */
  int writable;      /* on_writable calls */
  int closed;        /* on_transport_closed calls */
  int proto_errors;  /* on_transport_error calls (1002) */
  int write_errors;
  uint8_t *q[STUB_QMAX]; /* queued messages, each with LWS headroom */
  size_t qlen[STUB_QMAX];
  int qn;
  int *freed_flag; /* set to 1 when the stub is freed */
  int pause_at;    /* > 0: pause reading when this many messages arrived */
};

tm_session *stub_session_new(tm_ws_conn *c, int echo);
/* Queues a copy of len bytes and asks for a writable event. */
int stub_session_send(tm_session *s, const uint8_t *p, size_t len);
void stub_session_free(tm_session *s);
uint32_t stub_sum(const uint8_t *p, size_t len);

#endif
