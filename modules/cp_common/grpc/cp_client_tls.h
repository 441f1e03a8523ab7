/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A control-plane client's gRPC lifecycle (open/close, issue 25) and its
 * mTLS files re-read (issue 23 item 14; the
 * gateway's controlplane_client and, since issue 26, the checker): on SIGHUP (the
 * host's "host.reload" topic, after every module's reload hook) and,
 * with tls.reload_check_interval, when a file changed. gRPC's channel
 * credentials are fixed when the channel is made, so a new channel is
 * made from the files (checked: they parse, the key matches) and
 * replaces the module's; the old one is retired (cp_grpc_channel_retire):
 * the stream open on it stays until it ends, every new call
 * goes on the new connection, which presents the renewed certificate.
 * A failure keeps the channel in use. Logged and counted as every role's
 * reload (tls_reload.h).
 *
 * Loop thread only.
 */
#ifndef CP_CLIENT_TLS_H
#define CP_CLIENT_TLS_H

#include <proxyhost/module.h>

#include "cp_common/grpc/cp_grpc.h"
#include "cp_common/grpc/cp_grpc_conf.h"
#include "lib/tls_reload.h"

typedef struct cp_client_tls {
  const ph_api *api;
  ph_ctx *ctx;
  ph_tls_reload r;
  cp_grpc_client_kept kept;
  cp_grpc_cq *cq;       /* NULL outside start..stop */
  cp_grpc_channel **ch; /* the module's channel, replaced */
} cp_client_tls;

/* From init: the counter (module: its label in
 * proxyhost_tls_reloads_total, tls_reload.h) and the subscription to
 * host.reload. */
int cp_client_tls_init(cp_client_tls *t, ph_ctx *ctx, const ph_api *api,
                       const char *module);
/* From start, once *ch was made from cfg: cfg is kept (its paths are
 * restart-only) and the poll starts when the operator asked for it. */
int cp_client_tls_start(cp_client_tls *t, cp_grpc_cq *cq, cp_grpc_channel **ch,
                  const cp_grpc_client_cfg *cfg);
/* From stop and destroy (before the cq goes): no reload any more. */
void cp_client_tls_stop(cp_client_tls *t);

/* A control-plane client's whole gRPC lifecycle, one shape for every
 * client role (the gateway's controlplane_client, the checker).
 * From start: the completion queue (*cq, thread "cq"), the channel (*ch)
 * made from cfg, then cp_client_tls_start. A failure is logged ("grpc not
 * started", "control-plane channel not made", with the reason) and
 * returned (PH_EINVAL; PH_ENOMEM from cp_client_tls_start); what was made
 * stays for cp_client_tls_close. */
int cp_client_tls_open(cp_client_tls *t, cp_grpc_cq **cq, cp_grpc_channel **ch,
                       const cp_grpc_client_cfg *cfg);
/* From stop and destroy: cp_client_tls_stop, then the channel and the
 * queue freed and set to NULL (so a second call does nothing more). */
void cp_client_tls_close(cp_client_tls *t, cp_grpc_cq **cq,
                         cp_grpc_channel **ch);

#endif
