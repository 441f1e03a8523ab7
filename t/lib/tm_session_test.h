/* SPDX-License-Identifier: BSD-2-Clause */
/* The tunnel session configuration the unit tests start from: the role's
 * component, the module defaults of the tunnel keys (windows, buffers,
 * queues, violation limits), the fair writer. Tests change fields after. */
#ifndef PH_TM_SESSION_TEST_H
#define PH_TM_SESSION_TEST_H

#include "tunnel_common/session/tm_session.h"

/* opener: 1 for the end that opens streams (the client), 0 for the
 * acceptor; caps: the negotiated capabilities, as given; metrics: the
 * role's series, or NULL. */
static inline tm_session_cfg tm_test_cfg(int opener, unsigned caps,
                                         struct tm_metrics *metrics) {
  tm_session_cfg c = {.component =
                          opener ? TM_COMPONENT_CLIENT : TM_COMPONENT_SERVER,
                      .opener = opener,
                      .caps = caps,
                      .local_caps = TM_CAP_FAIR_WRITER,
                      .initial_window = 262144,
                      .window_update_threshold = 131072,
                      .max_frame_payload = 32768,
                      .inbound_buffer_bytes = 262144,
                      .outbound_buffer_bytes = 262144,
                      .max_streams = 64,
                      .control_queue_frames = 1024,
                      .control_queue_bytes = 262144,
                      .quantum = 32768,
                      .violation_limit = 16,
                      .violation_window_ms = 60000,
                      .metrics = metrics};
  return c;
}

#endif
