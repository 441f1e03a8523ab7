/* SPDX-License-Identifier: BSD-2-Clause */
/* The transport bounds a control-plane client's code holds again (the
 * gateway's controlplane_client and the checker), now that their key
 * tables come from their .ini.samples (tools/gen_conf_keys.awk): the TLS
 * paths copied into CP_GRPC_PATH_LEN arrays and the server name into 256
 * bytes (cp_grpc_client_kept), the message limits that bound what a call
 * buffers, the keepalive times gRPC takes as int milliseconds, the
 * session backoff kept as uint32 milliseconds. A sample
 * declaring more fails the start (ph_conf_limits, lib/conf_values.h). */
#ifndef CP_GRPC_HELD_H
#define CP_GRPC_HELD_H

#include "cp_grpc_conf.h"
#include "lib/conf_values.h"

/* Checks the transport's held bounds, then the module's own[0..n): PH_OK,
 * or the first value outside its bounds (ph_conf_limits). */
static inline int cp_grpc_client_held(ph_ctx *ctx, const ph_api *a,
                                      const ph_conf_limit *own, size_t n,
                                      const char **key, char *why,
                                      size_t whylen) {
  static const ph_conf_limit transport[] = {
      {"tls.cert_file", 0, CP_GRPC_PATH_LEN - 1, 1},
      {"tls.key_file", 0, CP_GRPC_PATH_LEN - 1, 1},
      {"tls.ca_file", 0, CP_GRPC_PATH_LEN - 1, 1},
      {"tls.server_name", 0, 253, 1},
      {"grpc.max_receive_message_size", 1024, 256 * CP_GRPC_MIB, 0},
      {"grpc.max_send_message_size", 1024, 256 * CP_GRPC_MIB, 0},
      {"grpc.keepalive_time", 10000, 7200000, 0},
      {"grpc.keepalive_timeout", 1000, 600000, 0},
      {"backoff.min", 1, 60000, 0},
      {"backoff.max", 1, 600000, 0}};
  int rc = ph_conf_limits(ctx, a, transport,
                          sizeof(transport) / sizeof(transport[0]), key, why,
                          whylen);
  return rc == PH_OK ? ph_conf_limits(ctx, a, own, n, key, why, whylen) : rc;
}

/* A client's keys as its conf_read begins: the identity
 * (cp_conf_identity: id_key is "worker_id" or "checker_id") into out,
 * then the held bounds (cp_grpc_client_held). PH_OK, or PH_EINVAL with the
 * first key at fault. */
static inline int cp_grpc_client_read(ph_ctx *ctx, const ph_api *a,
                                      const char *id_key,
                                      cp_client_ident *out,
                                      const ph_conf_limit *own, size_t n,
                                      const char **key, char *why,
                                      size_t whylen) {
  int rc = cp_conf_identity(ctx, a, id_key, out, key, why, whylen);
  return rc == PH_OK
             ? cp_grpc_client_held(ctx, a, own, n, key, why, whylen)
             : rc;
}

#endif
