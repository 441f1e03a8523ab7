/* SPDX-License-Identifier: BSD-2-Clause */
/* Trace ids for one stream's log lines (issue 24 item 10, TM-OBS-19):
 * the client makes one per open and sends it in OPEN_STREAM; the server
 * logs it and passes it on to the agent, which logs it too, so one id
 * joins a stream's lines on all three. The form is tm_proto.h's
 * (tm_trace_valid): 32 lowercase hex digits, not all zero. Random but
 * not secret: nothing is authorized by it. Loop thread only. */
#ifndef TM_TRACE_H
#define TM_TRACE_H

#include "tunnel_common/proto/tm_proto.h"

/* A new trace id into out (TM_TRACE_LEN digits and a NUL). */
void tm_trace_new(char out[TM_TRACE_LEN + 1]);

/* The id a receiver logs and passes on: the peer's when it sent a valid
 * one, else a new one of ours (none sent: an older peer; a bad one is
 * replaced, never logged: *replaced is set for the caller's warning). */
void tm_trace_take(const tm_open_stream *req, char out[TM_TRACE_LEN + 1],
                   int *replaced);

#endif
