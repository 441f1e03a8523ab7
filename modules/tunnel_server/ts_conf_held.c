/* SPDX-License-Identifier: BSD-2-Clause */
/* The bounds tunnel_server's C code relies on, held again here: its key
 * table is generated from tunnel_server.ini.sample, and a sample that
 * allows more than the code holds must fail the start (or the reload),
 * closed, never truncate a path or wrap a count. */
#include <stdint.h>

#include "lib/conf_values.h"
#include "tunnel_common/proto/tm_proto.h"
#include "ts_int.h"

#define CAP(f) ((int64_t)sizeof(((ts_conf *)0)->f) - 1)
#define U32 ((int64_t)UINT32_MAX)

/* The strings ts_conf_read copies into ts_conf's fixed arrays (their
 * byte lengths), then the integers (counts, bytes, milliseconds) read
 * into 32-bit fields, with the protocol's limits where the session needs
 * them (tm_session refuses a connection past them: here the start is
 * refused instead). */
static const ph_conf_limit held[] = {
    {"listen", 0, CAP(listen), 1},
    {"path", 0, CAP(path), 1},
    {"tls.cert", 0, CAP(cert), 1},
    {"tls.key", 0, CAP(key), 1},
    {"node_id", 0, CAP(node_id), 1},
    {"presence.zone", 0, CAP(presence_zone), 1},
    {"presence.relay_addr", 0, CAP(presence_relay), 1},
    {"relay.listen", 0, CAP(relay_listen), 1},
    {"relay.tls.cert", 0, CAP(relay_cert), 1},
    {"relay.tls.key", 0, CAP(relay_key), 1},
    {"relay.tls.ca", 0, CAP(relay_ca), 1},
    {"relay.trust_domain", 0, CAP(relay_td), 1},
    {"max_connections", 1, U32, 0},
    {"presence.lease", 1, U32, 0},
    {"relay.links_per_peer", 1, U32, 0},
    {"stream.max_concurrent_opens", 1, U32, 0},
    {"stream.max_pending_opens", 1, U32, 0},
    {"stream.max_opens_per_session", 1, U32, 0},
    {"stream.max_opens_per_principal", 1, U32, 0},
    {"stream.max_pending_per_principal", 1, U32, 0},
    {"stream.max_pending_per_session", 1, U32, 0},
    /* a session's max_streams (tm_session: at most 2^20) */
    {"stream.max_per_connection", 1, 1 << 20, 0},
    {"stream.max_per_token", 1, U32, 0},
    {"stream.max_per_agent", 1, U32, 0},
    {"stream.memory_per_session", 1, INT64_MAX, 0},
    {"stream.memory_per_principal", 1, INT64_MAX, 0},
    {"stream.open_timeout", 1, U32, 0},
    {"stream.idle_timeout", 1, INT64_MAX, 0},
    /* flow control: no zero window, no frame above MaxPayload (TM-CFG-25) */
    {"stream.inbound_buffer_bytes", 1, TM_WINDOW_MAX, 0},
    {"stream.outbound_buffer_bytes", 1, TM_WINDOW_MAX, 0},
    {"stream.initial_window", 1, TM_WINDOW_MAX, 0},
    {"stream.window_update_threshold", 1, TM_WINDOW_MAX, 0},
    {"stream.max_frame_payload", 1, TM_MAX_PAYLOAD, 0},
    {"stream.quantum", 1, TM_WINDOW_MAX, 0},
    {"stream.control_queue_frames", 1, U32, 0},
    /* the largest control frame fits (tm_session) */
    {"stream.control_queue_bytes", TM_HEADER_LEN + TM_METADATA_MAX, U32, 0},
    {"stream.violation_limit", 1, U32, 0},
    {"stream.violation_window", 1, U32, 0},
    {"ping_interval", 0, U32, 0},
    {"ping_timeout", 1, U32, 0},
    /* the selection's candidate arrays (ts_open.c) */
    {"agent.max_connections", 1, TS_AGENT_CONNS_MAX, 0},
    {"client.max_connections_per_token", 1, U32, 0},
    {"client.max_connections_per_user", 1, U32, 0},
    {"credential_check_interval", 1, U32, 0},
    {"drain_timeout", 0, U32, 0},
};

int ts_conf_held(ph_ctx *ctx, const ph_api *a, const char **key, char *why,
                 size_t whylen) {
  return ph_conf_limits(ctx, a, held, sizeof(held) / sizeof(held[0]), key,
                        why, whylen);
}
