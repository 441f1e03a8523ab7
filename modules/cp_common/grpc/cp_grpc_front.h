/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The controller's front door (issue 22 item 10): gRPC 1.51 has no cap on
 * incoming connections (GRPC_ARG_MAX_ALLOWED_INCOMING_CONNECTIONS came
 * later) and cannot take an accepted TLS socket (grpc_server_add_channel_
 * from_fd is plaintext only). So the server's public address is this
 * listener (modules/frontend/listener.c), and each connection is relayed
 * byte for byte (relay.c, splice) to gRPC's own listener on 127.0.0.1:
 * TLS stays end to end between the worker and gRPC.
 *
 * A connection is unauthenticated until gRPC delivers a call on it (under
 * mtls only a verified client certificate gets that far): the call's peer
 * is the relay's inner socket, whose port names the connection. At most
 * max_pending such connections at once (one more is accepted and closed
 * at once), each closed when it carried no call within pending_ms. Both
 * are counted and logged (rate-limited). Loop thread only.
 */
#ifndef CP_GRPC_FRONT_H
#define CP_GRPC_FRONT_H

#include <stdint.h>

#include <proxyhost/module.h>

typedef struct cp_front cp_front;

typedef struct cp_front_cfg {
  const char *listen; /* the public "host:port" */
  int inner_port;     /* gRPC's listener on 127.0.0.1 */
  int max_pending;    /* connections without a call yet */
  int64_t pending_ms; /* such a connection is closed after this */
  ph_series *m_pending;                     /* gauge, or NULL */
  ph_series *m_dropped_limit, *m_dropped_timeout; /* counters, or NULL */
} cp_front_cfg;

/* Listens and accepts. NULL with a one-line reason in err. */
cp_front *cp_front_new(ph_ctx *ctx, const ph_api *api, const cp_front_cfg *cfg,
                       char *err, size_t errlen);
int cp_front_port(const cp_front *f);
/* gRPC's peer of a call ("ipv4:127.0.0.1:PORT"): the connection it came
 * on is no longer pending. */
void cp_front_call_seen(cp_front *f, const char *peer);
/* Closes the listener and every connection. */
void cp_front_free(cp_front *f);

#endif
