/* SPDX-License-Identifier: BSD-2-Clause */
/* The bounds tunnel_server's C code relies on, held again here: its key
 * table is generated from tunnel_server.ini.sample, and a sample that
 * allows more than the code holds must fail the start (or the reload),
 * closed, never truncate a path or wrap a count. */
#include <stdint.h>
#include <string.h>

#include "lib/conf_values.h"
#include "tunnel_common/proto/tm_proto.h"
#include "ts_int.h"

#define CAP(f) (sizeof(((ts_conf *)0)->f) - 1)

/* The strings ts_conf_read copies into ts_conf's fixed arrays. */
static const struct {
  const char *key;
  size_t max;
} strings[] = {
    {"listen", CAP(listen)},
    {"path", CAP(path)},
    {"tls.cert", CAP(cert)},
    {"tls.key", CAP(key)},
    {"node_id", CAP(node_id)},
    {"presence.zone", CAP(presence_zone)},
    {"presence.relay_addr", CAP(presence_relay)},
    {"relay.listen", CAP(relay_listen)},
    {"relay.tls.cert", CAP(relay_cert)},
    {"relay.tls.key", CAP(relay_key)},
    {"relay.tls.ca", CAP(relay_ca)},
    {"relay.trust_domain", CAP(relay_td)},
};

#define U32 ((int64_t)UINT32_MAX)

/* The integers (counts, bytes, milliseconds) read into 32-bit fields,
 * with the protocol's limits where the session needs them (tm_session
 * refuses a connection past them: here the start is refused instead). */
static const struct {
  const char *key;
  int64_t lo, hi;
} ints[] = {
    {"max_connections", 1, U32},
    {"presence.lease", 1, U32},
    {"relay.links_per_peer", 1, U32},
    {"stream.max_concurrent_opens", 1, U32},
    {"stream.max_pending_opens", 1, U32},
    {"stream.max_opens_per_session", 1, U32},
    {"stream.max_opens_per_principal", 1, U32},
    {"stream.max_pending_per_principal", 1, U32},
    {"stream.max_pending_per_session", 1, U32},
    /* a session's max_streams (tm_session: at most 2^20) */
    {"stream.max_per_connection", 1, 1 << 20},
    {"stream.max_per_token", 1, U32},
    {"stream.max_per_agent", 1, U32},
    {"stream.memory_per_session", 1, INT64_MAX},
    {"stream.memory_per_principal", 1, INT64_MAX},
    {"stream.open_timeout", 1, U32},
    {"stream.idle_timeout", 1, INT64_MAX},
    /* flow control: no zero window, no frame above MaxPayload (TM-CFG-25) */
    {"stream.inbound_buffer_bytes", 1, TM_WINDOW_MAX},
    {"stream.outbound_buffer_bytes", 1, TM_WINDOW_MAX},
    {"stream.initial_window", 1, TM_WINDOW_MAX},
    {"stream.window_update_threshold", 1, TM_WINDOW_MAX},
    {"stream.max_frame_payload", 1, TM_MAX_PAYLOAD},
    {"stream.quantum", 1, TM_WINDOW_MAX},
    {"stream.control_queue_frames", 1, U32},
    /* the largest control frame fits (tm_session) */
    {"stream.control_queue_bytes", TM_HEADER_LEN + TM_METADATA_MAX, U32},
    {"stream.violation_limit", 1, U32},
    {"stream.violation_window", 1, U32},
    {"ping_interval", 0, U32},
    {"ping_timeout", 1, U32},
    /* the selection's candidate arrays (ts_open.c) */
    {"agent.max_connections", 1, TS_AGENT_CONNS_MAX},
    {"client.max_connections_per_token", 1, U32},
    {"client.max_connections_per_user", 1, U32},
    {"credential_check_interval", 1, U32},
    {"drain_timeout", 0, U32},
};

int ts_conf_held(ph_ctx *ctx, const ph_api *a, const char **key, char *why,
                 size_t whylen) {
  for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
    const char *s = a->conf_str(ctx, strings[i].key);
    size_t n = s ? strlen(s) : 0;
    if (n > strings[i].max)
      return ph_conf_fail(key, strings[i].key, why, whylen,
                          "%zu bytes; this build holds at most %zu", n,
                          strings[i].max);
  }
  for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
    int64_t v = a->conf_int(ctx, ints[i].key);
    if (v < ints[i].lo || v > ints[i].hi)
      return ph_conf_fail(key, ints[i].key, why, whylen,
                          "%lld is outside %lld..%lld, what this build holds",
                          (long long)v, (long long)ints[i].lo,
                          (long long)ints[i].hi);
  }
  return PH_OK;
}
