/* SPDX-License-Identifier: BSD-2-Clause */
/* Why an mTLS connection to the controller failed (issue 23 item 8).
 * gRPC reports a certificate the controller refused in the TLS handshake
 * as UNAVAILABLE, "Socket closed" (with TLS 1.3 the client's handshake is
 * over before the server's alert comes), and the gateway would retry for
 * ever; CP-3-13 says an authentication error returns directly. So after
 * a RegisterWorker that failed UNAVAILABLE over mTLS, one handshake of our
 * own with the same files tells the two apart. Blocking: run it in a host
 * job. */
#ifndef PH_CPC_TLS_PROBE_H
#define PH_CPC_TLS_PROBE_H

#include <stddef.h>

#include "cp_common/grpc/cp_grpc.h"

/* Connects to address ("host:port", "[v6]:port") within timeout_ms for
 * each step, makes a TLS handshake with tls's files, the controller's
 * name checked as gRPC does (server_name, else the host), and sends the
 * HTTP/2 preface so that the controller answers or refuses. Returns
 * CP_GRPC_UNAUTHENTICATED when the controller refused this side's
 * certificate (a certificate alert, or, as gRPC's server does, the
 * connection closed without a byte once it had the certificate) or its
 * own certificate failed the check against ca_file (why: which), else
 * CP_GRPC_UNAVAILABLE (why: what happened, or empty). No key material
 * in why. */
int cpc_tls_probe(const char *address, const cp_grpc_tls *tls,
                  int timeout_ms, char *why, size_t whylen);

#endif
