/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The WebSocket layer's word to the session (tm_ws_end.c): its connection
 * is closing with 1002 for a WebSocket protocol error (a client's
 * unmasked frame, a reserved bit, ...: issue 22 item 6), so the session
 * ends as TM_CLOSE_PROTOCOL, counted (sessions_closed_total
 * {reason="protocol"}) and reported to the role as its own protocol
 * errors are, not as a transport that merely went away. Its own file so
 * that the session's other files stay as they are.
 */
#include "tm_session_ws.h"

#include "tm_session_int.h"

void tm_session_on_transport_error(tm_session *s) {
  if (s)
    sess_fail(s, TM_CLOSE_PROTOCOL);
}
