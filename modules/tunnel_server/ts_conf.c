/* SPDX-License-Identifier: BSD-2-Clause */
/* tunnel_server's keys: the seed's server.* keys as [tunnel_server]
 * stream.* (docs/user-guide/server.md), each with its default and bounds
 * (TM-CFG-25: no zero window, no frame above the protocol's MaxPayload,
 * no byte count that overflows 32 bits), and the relations between them
 * that the host's per-key bounds cannot say. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <proxyhost/access.h>

#include "provider_check.h"
#include "ts_int.h"

#define KIB 1024
#define MIB (1024 * 1024)

const ph_conf_key ts_keys[] = {
    PH_CONF_KEY("listen", PH_CONF_STRING, "127.0.0.1:8443", 1, 128,
                PH_CONF_RESTART, NULL,
                "address:port of the WebSocket listener (wss with tls.cert)",
                NULL),
    PH_CONF_KEY("path", PH_CONF_STRING, "/tunnel", 1, 128, PH_CONF_RESTART,
                NULL, "the upgrade path clients and agents connect to", NULL),
    PH_CONF_KEY("tls.cert", PH_CONF_STRING, "", 0, 1024, PH_CONF_RESTART,
                NULL, "PEM certificate chain (empty: plain ws)", NULL),
    PH_CONF_KEY("tls.key", PH_CONF_STRING, "", 0, 1024,
                PH_CONF_RESTART, NULL,
                "PEM private key of tls.cert", NULL),
    PH_CONF_KEY("allow_plain", PH_CONF_BOOL, "false", 0, 0, PH_CONF_RESTART,
                NULL, "allow plain ws on a non-loopback address", NULL),
    PH_CONF_KEY("max_connections", PH_CONF_INT, "1024", 1, 65536, 0, NULL,
                "WebSocket connections at once (clients, agents, and those "
                "being authenticated)",
                NULL),
    PH_CONF_KEY("store", PH_CONF_STRING, "", 0, 97, PH_CONF_RESTART, NULL,
                "the authz.store instance that authenticates bearer tokens; "
                "required",
                NULL),
    PH_CONF_KEY("access", PH_CONF_STRING, "auth_cache", 0, 97,
                PH_CONF_RESTART, NULL,
                "the access provider every stream is authorized by (the "
                "auth_cache in front of the store)",
                NULL),
    PH_CONF_KEY("node_id", PH_CONF_STRING, "", 0, TS_NODE_ID_MAX, 0, NULL,
                "this server's name in log lines (empty: none)", NULL),
    PH_CONF_KEY("capabilities.open_result", PH_CONF_BOOL, "true", 0, 0,
                PH_CONF_RESTART, NULL,
                "negotiate stream_open_result.v1 (off: a legacy server)",
                NULL),
    PH_CONF_KEY("capabilities.flow_control", PH_CONF_BOOL, "true", 0, 0,
                PH_CONF_RESTART, NULL, "negotiate stream_flow_control.v1",
                NULL),
    PH_CONF_KEY("capabilities.fair_writer", PH_CONF_BOOL, "true", 0, 0,
                PH_CONF_RESTART, NULL,
                "deficit round-robin writer (off: DATA in write order)", NULL),
    PH_CONF_KEY("legacy_no_subprotocol", PH_CONF_BOOL, "false", 0, 0,
                PH_CONF_RESTART, NULL,
                "answer the upgrade with no subprotocol, as an old server",
                NULL),
    PH_CONF_KEY("stream.max_concurrent_opens", PH_CONF_INT, "256", 1, 65536,
                0, NULL, "opens being authorized or opened at once", NULL),
    PH_CONF_KEY("stream.max_pending_opens", PH_CONF_INT, "1024", 1, 1048576,
                0, NULL, "opens waiting for a slot; beyond: queue_full", NULL),
    PH_CONF_KEY("stream.max_opens_per_session", PH_CONF_INT, "64", 1, 65536,
                0, NULL, "opens of one client session running at once", NULL),
    PH_CONF_KEY("stream.max_per_connection", PH_CONF_INT, "1024", 1, 65536,
                0, NULL, "streams open at once on one connection", NULL),
    PH_CONF_KEY("stream.max_per_token", PH_CONF_INT, "4096", 1, 1048576, 0,
                NULL, "client streams at once under one token", NULL),
    PH_CONF_KEY("stream.max_per_agent", PH_CONF_INT, "4096", 1, 1048576, 0,
                NULL, "streams at once through one agent (all connections)",
                NULL),
    PH_CONF_KEY("stream.open_timeout", PH_CONF_DURATION, "8s", 100, 300000, 0,
                NULL, "how long the agent may take to answer an open", NULL),
    PH_CONF_KEY("stream.idle_timeout", PH_CONF_DURATION, "5m", 1000,
                86400000, 0, NULL, "a relayed stream without bytes ends",
                NULL),
    PH_CONF_KEY("stream.initial_window", PH_CONF_SIZE, "262144", 1024,
                TM_WINDOW_MAX, PH_CONF_RESTART, NULL,
                "receive window a stream starts with (flow control)", NULL),
    PH_CONF_KEY("stream.window_update_threshold", PH_CONF_SIZE, "131072", 1,
                TM_WINDOW_MAX, PH_CONF_RESTART, NULL,
                "delivered bytes that trigger a WINDOW_UPDATE", NULL),
    PH_CONF_KEY("stream.max_frame_payload", PH_CONF_SIZE, "32768", 512,
                TM_MAX_PAYLOAD, PH_CONF_RESTART, NULL,
                "largest DATA payload sent", NULL),
    PH_CONF_KEY("stream.inbound_buffer_bytes", PH_CONF_SIZE, "262144", 1024,
                TM_WINDOW_MAX, PH_CONF_RESTART, NULL,
                "bytes queued per stream before delivery", NULL),
    PH_CONF_KEY("stream.outbound_buffer_bytes", PH_CONF_SIZE, "262144", 1024,
                TM_WINDOW_MAX, PH_CONF_RESTART, NULL,
                "bytes a stream's writer queues per stream", NULL),
    PH_CONF_KEY("stream.control_queue_frames", PH_CONF_INT, "1024", 16, 65536,
                PH_CONF_RESTART, NULL,
                "control frames queued per connection (full: closed)", NULL),
    PH_CONF_KEY("stream.control_queue_bytes", PH_CONF_SIZE, "262144", 4096,
                16 * MIB, PH_CONF_RESTART, NULL,
                "control bytes queued per connection", NULL),
    PH_CONF_KEY("stream.quantum", PH_CONF_SIZE, "32768", 512, 1 * MIB,
                PH_CONF_RESTART, NULL,
                "bytes per stream per round of the fair writer", NULL),
    PH_CONF_KEY("stream.violation_limit", PH_CONF_INT, "16", 1, 1000000,
                PH_CONF_RESTART, NULL,
                "stream violations per window before the connection closes",
                NULL),
    PH_CONF_KEY("stream.violation_window", PH_CONF_DURATION, "60s", 1000,
                3600000, PH_CONF_RESTART, NULL,
                "the window violation_limit counts in", NULL),
    PH_CONF_KEY("ping_interval", PH_CONF_DURATION, "15s", 0, 600000,
                PH_CONF_RESTART, NULL, "heartbeat PING interval (0: none)",
                NULL),
    PH_CONF_KEY("ping_timeout", PH_CONF_DURATION, "30s", 100, 600000,
                PH_CONF_RESTART, NULL,
                "no PONG for this long: the connection is dead", NULL),
    PH_CONF_KEY("agent.max_connections", PH_CONF_INT, "8", 1,
                TS_AGENT_CONNS_MAX, 0, NULL,
                "connections one agent may hold (its connections.max)", NULL),
    PH_CONF_KEY("drain_timeout", PH_CONF_DURATION, "5s", 0, 600000, 0, NULL,
                "after GOAWAY at stop, how long streams may finish", NULL),
    PH_CONF_END};

static int loopback(const struct sockaddr_storage *ss) {
  if (ss->ss_family == AF_INET) {
    const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (ss->ss_family == AF_INET6) {
    const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(a))
      return 1;
    return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
  }
  return 0;
}

static int bad(const char **key, const char *k, char *why, size_t whylen,
               const char *msg) {
  *key = k;
  snprintf(why, whylen, "%s", msg);
  return PH_EINVAL;
}

int ts_check(ph_ctx *ctx, const ph_api *a, const char **key, char *why,
             size_t whylen) {
  const char *store = a->conf_str(ctx, "store");
  if (!store || !*store)
    return bad(key, "store", why, whylen,
               "required: the authz.store provider instance (store_sqlite "
               "or store_pg)");
  int rc = check_named_provider(ctx, a, "store", PH_AZ_STORE_SERVICE, key,
                                why, whylen);
  if (rc != PH_OK)
    return rc;
  const char *acc = a->conf_str(ctx, "access");
  if (!acc || !*acc)
    return bad(key, "access", why, whylen,
               "required: the access provider (auth_cache)");
  rc = check_named_provider(ctx, a, "access", PH_ACCESS_SERVICE, key, why,
                            whylen);
  if (rc != PH_OK)
    return rc;
  struct sockaddr_storage ss;
  socklen_t sl;
  char w[200];
  if (a->parse_listen_addr(a->conf_str(ctx, "listen"), &ss, &sl, w,
                           sizeof(w)) != PH_OK)
    return bad(key, "listen", why, whylen, w);
  const char *path = a->conf_str(ctx, "path");
  if (!path || path[0] != '/' || strpbrk(path, " ?#\t\r\n"))
    return bad(key, "path", why, whylen,
               "must start with '/' and hold no space, '?' or '#'");
  const char *cert = a->conf_str(ctx, "tls.cert"),
             *tkey = a->conf_str(ctx, "tls.key");
  if ((cert && *cert) != (tkey && *tkey))
    return bad(key, (cert && *cert) ? "tls.key" : "tls.cert", why, whylen,
               "tls.cert and tls.key go together");
  if (cert && *cert && (access(cert, R_OK) != 0 || access(tkey, R_OK) != 0))
    return bad(key, access(cert, R_OK) != 0 ? "tls.cert" : "tls.key", why,
               whylen, "cannot be read");
  /* Fail closed before start: plain ws off loopback only when asked for
   * (tm_ws refuses it too, but at start, after the other modules). */
  if (!(cert && *cert) && !a->conf_int(ctx, "allow_plain") && !loopback(&ss))
    return bad(key, "listen", why, whylen,
               "plain ws (no tls.cert) on a non-loopback address: set "
               "tls.cert and tls.key, or allow_plain = true behind a TLS "
               "proxy");
  int64_t win = a->conf_int(ctx, "stream.initial_window"),
          thr = a->conf_int(ctx, "stream.window_update_threshold"),
          mfp = a->conf_int(ctx, "stream.max_frame_payload"),
          inb = a->conf_int(ctx, "stream.inbound_buffer_bytes"),
          q = a->conf_int(ctx, "stream.quantum");
  if (thr > win)
    return bad(key, "stream.window_update_threshold", why, whylen,
               "must not exceed stream.initial_window");
  if (win < mfp)
    return bad(key, "stream.initial_window", why, whylen,
               "must hold at least one frame (stream.max_frame_payload)");
  if (inb < win)
    return bad(key, "stream.inbound_buffer_bytes", why, whylen,
               "must hold the whole window (stream.initial_window): the "
               "peer may send that much before it waits");
  if (q < mfp)
    return bad(key, "stream.quantum", why, whylen,
               "must be at least stream.max_frame_payload");
  int64_t pi = a->conf_int(ctx, "ping_interval"),
          pt = a->conf_int(ctx, "ping_timeout");
  if (pi > 0 && pt <= pi)
    return bad(key, "ping_timeout", why, whylen,
               "must be longer than ping_interval");
  if (a->conf_int(ctx, "stream.max_opens_per_session") >
      a->conf_int(ctx, "stream.max_concurrent_opens"))
    return bad(key, "stream.max_opens_per_session", why, whylen,
               "must not exceed stream.max_concurrent_opens");
  return PH_OK;
}

static void copy(char *dst, size_t cap, const char *src) {
  snprintf(dst, cap, "%s", src ? src : "");
}

void ts_conf_read(ph_ctx *ctx, const ph_api *a, ts_conf *c) {
#define I(k) ((uint32_t)a->conf_int(ctx, k))
  copy(c->listen, sizeof(c->listen), a->conf_str(ctx, "listen"));
  copy(c->path, sizeof(c->path), a->conf_str(ctx, "path"));
  copy(c->cert, sizeof(c->cert), a->conf_str(ctx, "tls.cert"));
  copy(c->key, sizeof(c->key), a->conf_str(ctx, "tls.key"));
  copy(c->node_id, sizeof(c->node_id), a->conf_str(ctx, "node_id"));
  c->allow_plain = (int)a->conf_int(ctx, "allow_plain");
  c->legacy_no_subprotocol = (int)a->conf_int(ctx, "legacy_no_subprotocol");
  c->max_connections = I("max_connections");
  c->caps = 0;
  if (a->conf_int(ctx, "capabilities.open_result"))
    c->caps |= TM_CAP_OPEN_RESULT;
  if (a->conf_int(ctx, "capabilities.flow_control"))
    c->caps |= TM_CAP_FLOW_CONTROL;
  c->local_caps =
      a->conf_int(ctx, "capabilities.fair_writer") ? TM_CAP_FAIR_WRITER : 0;
  c->max_concurrent_opens = I("stream.max_concurrent_opens");
  c->max_pending_opens = I("stream.max_pending_opens");
  c->max_opens_per_session = I("stream.max_opens_per_session");
  c->max_per_connection = I("stream.max_per_connection");
  c->max_per_token = I("stream.max_per_token");
  c->max_per_agent = I("stream.max_per_agent");
  c->agent_max_connections = I("agent.max_connections");
  c->open_timeout_ms = I("stream.open_timeout");
  c->idle_timeout_ms = a->conf_int(ctx, "stream.idle_timeout");
  c->initial_window = I("stream.initial_window");
  c->window_update_threshold = I("stream.window_update_threshold");
  c->max_frame_payload = I("stream.max_frame_payload");
  c->inbound_buffer_bytes = I("stream.inbound_buffer_bytes");
  c->outbound_buffer_bytes = I("stream.outbound_buffer_bytes");
  c->control_queue_frames = I("stream.control_queue_frames");
  c->control_queue_bytes = I("stream.control_queue_bytes");
  c->quantum = I("stream.quantum");
  c->violation_limit = I("stream.violation_limit");
  c->violation_window_ms = I("stream.violation_window");
  c->ping_interval_ms = I("ping_interval");
  c->ping_timeout_ms = I("ping_timeout");
  c->drain_ms = I("drain_timeout");
#undef I
}

void ts_session_cfg(const ts_conf *c, int opener, unsigned caps,
                    tm_metrics *metrics, tm_session_cfg *o) {
  memset(o, 0, sizeof(*o));
  o->component = TM_COMPONENT_SERVER;
  o->opener = opener;
  o->caps = caps;
  o->local_caps = c->local_caps;
  o->initial_window = c->initial_window;
  o->window_update_threshold = c->window_update_threshold;
  o->max_frame_payload = c->max_frame_payload;
  o->inbound_buffer_bytes = c->inbound_buffer_bytes;
  o->outbound_buffer_bytes = c->outbound_buffer_bytes;
  o->max_streams = c->max_per_connection;
  o->control_queue_frames = c->control_queue_frames;
  o->control_queue_bytes = c->control_queue_bytes;
  o->quantum = c->quantum;
  o->violation_limit = c->violation_limit;
  o->violation_window_ms = c->violation_window_ms;
  o->ping_interval_ms = c->ping_interval_ms;
  o->ping_timeout_ms = c->ping_timeout_ms;
  o->metrics = metrics;
}
