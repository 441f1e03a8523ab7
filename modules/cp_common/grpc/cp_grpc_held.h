/* SPDX-License-Identifier: BSD-2-Clause */
/* The transport bounds a control-plane module's code holds again (the
 * controller's controlplane_server; the gateway's controlplane_client and
 * the checker), now that their key tables come from their .ini.samples
 * (tools/gen_conf_keys.awk). Both sides: the TLS paths copied into
 * CP_GRPC_PATH_LEN arrays (cp_grpc_tls_paths_keep), the message limits
 * that bound what a call buffers and the keepalive timeout gRPC takes as
 * int milliseconds (cp_grpc_common.keys). A server: the stream and call
 * counts and the front's cap, whose 0 would mean none. A client: the
 * server name copied into 256 bytes (cp_grpc_client_kept), the keepalive
 * time, the session backoff kept as uint32 milliseconds. A sample
 * declaring more fails the start (ph_conf_limits, lib/conf_values.h). */
#ifndef CP_GRPC_HELD_H
#define CP_GRPC_HELD_H

#include "cp_grpc_conf.h"
#include "lib/conf_values.h"

/* Which side's transport rows cp_grpc_held checks. */
typedef enum cp_grpc_side { CP_GRPC_CLIENT, CP_GRPC_SERVER } cp_grpc_side;

/* Checks the transport's rows both sides hold, then the side's own
 * (cp_grpc_client.keys', cp_grpc_server.keys'), then the module's
 * own[0..n): PH_OK, or the first value outside its bounds
 * (ph_conf_limits). Check and init. */
static inline int cp_grpc_held(ph_ctx *ctx, const ph_api *a, cp_grpc_side side,
                               const ph_conf_limit *own, size_t n,
                               const char **key, char *why, size_t whylen) {
  static const ph_conf_limit both[] = {
      {"tls.cert_file", 0, CP_GRPC_PATH_LEN - 1, 1},
      {"tls.key_file", 0, CP_GRPC_PATH_LEN - 1, 1},
      {"tls.ca_file", 0, CP_GRPC_PATH_LEN - 1, 1},
      {"grpc.max_receive_message_size", 1024, 256 * CP_GRPC_MIB, 0},
      {"grpc.max_send_message_size", 1024, 256 * CP_GRPC_MIB, 0},
      {"grpc.keepalive_timeout", 1000, 600000, 0}};
  static const ph_conf_limit client[] = {
      {"tls.server_name", 0, 253, 1},
      {"grpc.keepalive_time", 10000, 7200000, 0},
      {"backoff.min", 1, 60000, 0},
      {"backoff.max", 1, 600000, 0}};
  static const ph_conf_limit server[] = {
      {"grpc.max_concurrent_streams", 1, 10000, 0},
      {"grpc.max_calls", 1, 1000000, 0},
      {"grpc.max_unauthenticated_connections", 1, 65536, 0}};
  int rc = ph_conf_limits(ctx, a, both, sizeof(both) / sizeof(both[0]), key,
                          why, whylen);
  const ph_conf_limit *rows = side == CP_GRPC_SERVER ? server : client;
  size_t nrows = side == CP_GRPC_SERVER ? sizeof(server) / sizeof(server[0])
                                        : sizeof(client) / sizeof(client[0]);
  if (rc == PH_OK)
    rc = ph_conf_limits(ctx, a, rows, nrows, key, why, whylen);
  return rc == PH_OK ? ph_conf_limits(ctx, a, own, n, key, why, whylen) : rc;
}

/* A client's keys as its conf_read begins: the identity
 * (cp_conf_identity: id_key is "worker_id" or "checker_id") into out,
 * then the held bounds (cp_grpc_held). PH_OK, or PH_EINVAL with the
 * first key at fault. */
static inline int cp_grpc_client_read(ph_ctx *ctx, const ph_api *a,
                                      const char *id_key,
                                      cp_client_ident *out,
                                      const ph_conf_limit *own, size_t n,
                                      const char **key, char *why,
                                      size_t whylen) {
  int rc = cp_conf_identity(ctx, a, id_key, out, key, why, whylen);
  return rc == PH_OK ? cp_grpc_held(ctx, a, CP_GRPC_CLIENT, own, n, key, why,
                                    whylen)
                     : rc;
}

#endif
