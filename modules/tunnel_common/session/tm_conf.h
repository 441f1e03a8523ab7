/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The session's keys, declared once for the three tunnel roles: the
 * window, queue, violation, heartbeat and capability keys that fill a
 * tm_session_cfg (TM-CFG-25: no zero window, no frame above the
 * protocol's MaxPayload, no byte count that overflows 32 bits).
 *
 * The window/queue/violation keys take a prefix ("stream." in
 * tunnel_client and tunnel_server, "streams." in tunnel_agent); the
 * heartbeat and capability keys have none. A role's table lists
 *
 *   TM_SESSION_KEYS("stream."),
 *
 * among its own keys (the stream count per connection is the role's:
 * its name differs), calls tm_conf_check from its check and
 * tm_conf_session/tm_conf_caps from init.
 */
#ifndef TM_CONF_H
#define TM_CONF_H

#include <stddef.h>

#include <proxyhost/module.h>

#include "tunnel_common/proto/tm_proto.h"
#include "tm_session.h"

#define TM_CONF_MIB (1024 * 1024)

/* Every key restart-only: a session's limits are fixed at its start. */
#define TM_SESSION_KEYS(p)                                                    \
  PH_CONF_KEY(p "inbound_buffer_bytes", PH_CONF_SIZE, "262144", 1024,         \
              TM_WINDOW_MAX, PH_CONF_RESTART, NULL,                           \
              "bytes queued per stream from the peer, not yet delivered",     \
              NULL),                                                          \
  PH_CONF_KEY(p "outbound_buffer_bytes", PH_CONF_SIZE, "262144", 1024,        \
              TM_WINDOW_MAX, PH_CONF_RESTART, NULL,                           \
              "bytes queued per stream towards the peer", NULL),              \
  PH_CONF_KEY(p "initial_window", PH_CONF_SIZE, "262144", 1024,               \
              TM_WINDOW_MAX, PH_CONF_RESTART, NULL,                           \
              "receive window a stream starts with (flow control)", NULL),    \
  PH_CONF_KEY(p "window_update_threshold", PH_CONF_SIZE, "131072", 1,         \
              TM_WINDOW_MAX, PH_CONF_RESTART, NULL,                           \
              "delivered bytes that trigger a WINDOW_UPDATE", NULL),          \
  PH_CONF_KEY(p "max_frame_payload", PH_CONF_SIZE, "32768", 512,              \
              TM_MAX_PAYLOAD, PH_CONF_RESTART, NULL,                          \
              "largest DATA payload sent", NULL),                             \
  PH_CONF_KEY(p "quantum", PH_CONF_SIZE, "32768", 512, TM_CONF_MIB,           \
              PH_CONF_RESTART, NULL,                                          \
              "bytes per stream per round of the fair writer", NULL),         \
  PH_CONF_KEY(p "control_queue_frames", PH_CONF_INT, "1024", 16, 65536,       \
              PH_CONF_RESTART, NULL,                                          \
              "control frames queued per connection; reading pauses "         \
              "before the answers owed could overflow it",                    \
              NULL),                                                          \
  PH_CONF_KEY(p "control_queue_bytes", PH_CONF_SIZE, "262144", 4096,          \
              64 * TM_CONF_MIB, PH_CONF_RESTART, NULL,                        \
              "control bytes queued per connection", NULL),                   \
  PH_CONF_KEY(p "violation_limit", PH_CONF_INT, "16", 1, 1000000,             \
              PH_CONF_RESTART, NULL,                                          \
              "stream violations per violation_window before the "            \
              "connection closes as abusive",                                 \
              NULL),                                                          \
  PH_CONF_KEY(p "violation_window", PH_CONF_DURATION, "60s", 1000, 3600000,   \
              PH_CONF_RESTART, NULL, "the window violation_limit counts in",  \
              NULL),                                                          \
  PH_CONF_KEY("ping_interval", PH_CONF_DURATION, "15s", 0, 600000,            \
              PH_CONF_RESTART, NULL, "heartbeat PING interval (0: none)",     \
              NULL),                                                          \
  PH_CONF_KEY("ping_timeout", PH_CONF_DURATION, "30s", 100, 600000,           \
              PH_CONF_RESTART, NULL,                                          \
              "no PONG this long after a PING: the connection is dead",       \
              NULL),                                                          \
  PH_CONF_KEY("capabilities.open_result", PH_CONF_BOOL, "true", 0, 0,         \
              PH_CONF_RESTART, NULL,                                          \
              "offer stream_open_result.v1 (strict open); off: legacy",       \
              NULL),                                                          \
  PH_CONF_KEY("capabilities.flow_control", PH_CONF_BOOL, "true", 0, 0,        \
              PH_CONF_RESTART, NULL,                                          \
              "offer stream_flow_control.v1 (needs open_result)", NULL),      \
  PH_CONF_KEY("capabilities.fair_writer", PH_CONF_BOOL, "true", 0, 0,         \
              PH_CONF_RESTART, NULL,                                          \
              "deficit round-robin writer; off: DATA in write order", NULL)

/* The rules between those keys that per-key bounds cannot say: threshold
 * <= window, a frame fits in the window, the inbound queue holds a whole
 * window, a quantum holds a frame, ping_timeout <= 4 x ping_interval,
 * flow_control only with open_result. keys is the role's table (the
 * failing key's name is returned from it). PH_OK, or PH_EINVAL with *key
 * and why set. */
int tm_conf_check(ph_ctx *ctx, const ph_api *a, const char *prefix,
                  const ph_conf_key *keys, const char **key, char *why,
                  size_t whylen);

/* Fills s's limits, heartbeat and local_caps (fair_writer) from the keys;
 * component, opener, caps, max_streams and metrics stay the caller's. */
void tm_conf_session(ph_ctx *ctx, const ph_api *a, const char *prefix,
                     tm_session_cfg *s);

/* The capabilities this side offers or negotiates: TM_CAP_OPEN_RESULT and
 * TM_CAP_FLOW_CONTROL from capabilities.*. */
unsigned tm_conf_caps(ph_ctx *ctx, const ph_api *a);

#endif
