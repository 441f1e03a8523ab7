/* SPDX-License-Identifier: BSD-2-Clause */
/* The session's keys as the roles' samples declare them (prefix p:
 * "stream." or "streams."), for a test that builds a role's key table of
 * its own (test_tc_bounds, test_ta_bounds: every other key wider than
 * the sample's). */
#ifndef TM_SESSION_KEYS_TEST_H
#define TM_SESSION_KEYS_TEST_H

#include <proxyhost/config.h>

#define TM_TEST_KEY(n, t, d, lo, hi) PH_CONF_KEY(n, t, d, lo, hi, 0, NULL, n, NULL)

#define TM_TEST_SESSION_KEYS(p)                                                \
  TM_TEST_KEY(p "inbound_buffer_bytes", PH_CONF_SIZE, "262144", 1024,          \
              16777216),                                                       \
      TM_TEST_KEY(p "outbound_buffer_bytes", PH_CONF_SIZE, "262144", 1024,     \
                  16777216),                                                   \
      TM_TEST_KEY(p "initial_window", PH_CONF_SIZE, "262144", 1024, 16777216), \
      TM_TEST_KEY(p "window_update_threshold", PH_CONF_SIZE, "131072", 1,      \
                  16777216),                                                   \
      TM_TEST_KEY(p "max_frame_payload", PH_CONF_SIZE, "32768", 512, 65536),   \
      TM_TEST_KEY(p "quantum", PH_CONF_SIZE, "32768", 512, 1048576),           \
      TM_TEST_KEY(p "control_queue_frames", PH_CONF_INT, "1024", 16, 65536),   \
      TM_TEST_KEY(p "control_queue_bytes", PH_CONF_SIZE, "262144", 4096,       \
                  67108864),                                                   \
      TM_TEST_KEY(p "violation_limit", PH_CONF_INT, "16", 1, 1000000),         \
      TM_TEST_KEY(p "violation_window", PH_CONF_DURATION, "60s", 1000,         \
                  3600000),                                                    \
      TM_TEST_KEY("ping_interval", PH_CONF_DURATION, "15s", 0, 600000),        \
      TM_TEST_KEY("ping_timeout", PH_CONF_DURATION, "30s", 100, 600000),       \
      TM_TEST_KEY("capabilities.open_result", PH_CONF_BOOL, "true", 0, 0),     \
      TM_TEST_KEY("capabilities.flow_control", PH_CONF_BOOL, "true", 0, 0),    \
      TM_TEST_KEY("capabilities.fair_writer", PH_CONF_BOOL, "true", 0, 0)

#endif
