/* SPDX-License-Identifier: BSD-2-Clause */
/* The WebSocket layer's word to the session (tm_session_ws.c), for
 * tm_ws_end.c only: its connection is closing with 1002 for a WebSocket
 * protocol error, so the session ends as TM_CLOSE_PROTOCOL when the
 * connection then closes (not TM_CLOSE_TRANSPORT). Loop thread. */
#ifndef TM_SESSION_WS_H
#define TM_SESSION_WS_H

#include "tm_session.h"

void tm_session_on_transport_error(tm_session *s);

#endif
