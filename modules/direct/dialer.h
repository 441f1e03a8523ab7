/* SPDX-License-Identifier: BSD-2-Clause */
/* Non-blocking TCP connect with happy eyeballs (RFC 8305): the addresses
 * are interleaved by family (starting with the first one's), the first
 * attempt starts at once, the next one when the previous has not connected
 * within the delay or as soon as it fails; the first connection wins and
 * the others are closed. Every attempt has its own connect timeout.
 * Loop thread only. */
#ifndef PH_DIRECT_DIALER_H
#define PH_DIRECT_DIALER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <proxyhost/host.h>

#define DIALER_MAX_ADDRS 8 /* addresses tried per dial */

typedef struct dialer dialer;

/* Success: fd is a connected, non-blocking, close-on-exec TCP socket with
 * TCP_NODELAY, owned by the callee; code is PH_OPEN_OK. Failure: fd is -1,
 * code the most telling ph_open_code of all attempts (connection_refused,
 * host_unreachable, timeout, network_unreachable, internal_error, in that
 * order) and err its errno (for debug logs only). The callback may free
 * the dialer. */
typedef void (*dialer_cb)(void *arg, int fd, int code, int err);

typedef struct dialer_opts {
  uint32_t connect_timeout_ms; /* per attempt */
  uint32_t delay_ms;           /* before starting the next address */
} dialer_opts;

/* addrs hold ports; at most DIALER_MAX_ADDRS of them are used. NULL when
 * out of memory or n is 0. */
dialer *dialer_new(const ph_api *api, ph_ctx *ctx,
                   const struct sockaddr_storage *addrs, size_t n,
                   const dialer_opts *o, dialer_cb cb, void *arg);
/* Starts connecting. The callback may run before this returns (every
 * address failed at once, or a connect completed at once). */
void dialer_start(dialer *d);
/* Closes every attempt; no callback afterwards. */
void dialer_free(dialer *d);

/* The ph_open_code for a connect errno. */
int dialer_errno_code(int err);

#endif
