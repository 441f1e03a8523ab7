/* SPDX-License-Identifier: BSD-2-Clause */
/* The probe engine (issue 26, CP-6-3..5): one check of one upstream proxy
 * at one tier, on one non-blocking socket, through the upstream kit's
 * handshakes (modules/upstream/up_hs.h; the I/O rule of pool_dial.c):
 *  - BASIC: connect and handshake: a tunnel (HTTP CONNECT, SOCKS5 with
 *    RFC 1929) to the task's target, else to the echo endpoint's
 *    host:port; an `http` (absolute-form) proxy gets a HEAD of the echo
 *    URL (or of the target URL) instead, and any answer but 407 passes;
 *  - EGRESS: a GET of the echo URL through the proxy (in a tunnel, or in
 *    absolute form for `http`), the nonce as X-Proxyhost-Nonce and as
 *    the query's nonce=; the answer read by chk_echo.h;
 *  - TARGET: a tunnel to the target (host:port), or a GET of it (a URL)
 *    that any answer below 500 passes;
 *  - direct (protocol 0): a GET of the echo URL with no proxy, the
 *    checker's own probe of its echo endpoint.
 * A result is a status (the protocol's HealthStatus numbers) and a short
 * reason (chk_reasons below); never an address, a credential or a
 * peer's text.
 *
 * Not blocking, not loop-bound: the caller watches probe->fd for the
 * events a call returns (CHK_EV_READ, CHK_EV_WRITE; 0: the probe ended,
 * its result is in probe->res) and keeps the deadline (chk_probe_timeout
 * ends it). Ownership: the caller owns the chk_probe and every string of
 * the spec (borrowed until chk_probe_end; credentials are copied only
 * into the handshake's or the request's buffer, both wiped at the end).
 * One thread at a time per probe. */
#ifndef PH_CHK_PROBE_H
#define PH_CHK_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "chk_echo.h"
#include "chk_url.h"
#include "upstream/up_hs.h"

enum { CHK_EV_READ = 1, CHK_EV_WRITE = 2 };

/* The protocol's numbers. */
enum { CHK_TIER_BASIC = 1, CHK_TIER_EGRESS = 2, CHK_TIER_TARGET = 3 };
enum {
  CHK_OK = 1,
  CHK_FAILED = 2,
  CHK_TIMEOUT = 3,
  CHK_CHECKER_ERROR = 4
};

/* The reasons, a fixed set (the reason label's values, in this order). */
#define CHK_REASONS                                                           \
  "none", "dial_refused", "dial_unreachable", "dial_failed", "dial_timeout", \
      "handshake_rejected", "auth_failed", "handshake_malformed",             \
      "handshake_timeout", "target_unreachable", "target_status",            \
      "bad_echo", "proxy_error", "bad_response", "response_too_large",       \
      "response_timeout", "echo_unreachable", "name_not_supported",          \
      "bad_task", "no_resources", "deadline_passed", "dial_unresolved",      \
      "resolver_failed", "dial_forbidden", "late_task", "short_budget",      \
      "loop_late"
enum chk_reason {
  CHK_R_NONE,
  CHK_R_DIAL_REFUSED,
  CHK_R_DIAL_UNREACHABLE,
  CHK_R_DIAL_FAILED,
  CHK_R_DIAL_TIMEOUT,
  CHK_R_HS_REJECTED,
  CHK_R_AUTH_FAILED,
  CHK_R_HS_MALFORMED,
  CHK_R_HS_TIMEOUT,
  CHK_R_TARGET_UNREACHABLE,
  CHK_R_TARGET_STATUS,
  CHK_R_BAD_ECHO,
  CHK_R_PROXY_ERROR,
  CHK_R_BAD_RESPONSE,
  CHK_R_TOO_LARGE,
  CHK_R_RESPONSE_TIMEOUT,
  CHK_R_ECHO_UNREACHABLE,
  CHK_R_NAME,
  CHK_R_BAD_TASK,
  CHK_R_NO_RESOURCES,
  CHK_R_DEADLINE,
  CHK_R_UNRESOLVED, /* the name has no address (NXDOMAIN): the proxy's */
  CHK_R_RESOLVER,   /* the checker's resolver failed or timed out */
  CHK_R_FORBIDDEN,  /* the connector's target policy refused the dial */
  CHK_R_LATE_TASK,  /* less than task.min_budget left: no check (chk_budget.h) */
  CHK_R_SHORT_BUDGET, /* timed out served less than task.min_budget */
  CHK_R_LOOP_LATE, /* at the deadline the proxy's answer waited unread */
  CHK_R_COUNT
};
extern const char *const chk_reason_names[]; /* NULL-terminated */

/* The largest answer read (head and body) and the request's size. */
#define CHK_RESP_MIN 1024u
#define CHK_RESP_MAX (1u << 20)
#define CHK_REQ_MAX (CHK_PATH_MAX + 2 * CHK_HOST_MAX + UP_HS_PROXY_AUTH_MAX + \
                     512u)

typedef struct chk_probe_spec {
  int tier;     /* CHK_TIER_* */
  int protocol; /* PH_POOL_UPSTREAM_* (1..3), or 0: direct to the echo */
  const char *proxy_host; /* a literal, or a name (the connector's) */
  uint16_t proxy_port;
  const char *user, *pass; /* NULL: no credentials */
  uint32_t user_len, pass_len;
  const char *target;   /* TARGET: host:port or an http URL; BASIC: may be
                           "" */
  const char *echo_url; /* EGRESS and direct; BASIC's fallback */
  const char *nonce;    /* EGRESS and direct */
  const char *const *own; /* the checker's own addresses, besides the
                             socket's local one (EGRESS) */
  size_t n_own;
  uint32_t resp_max; /* CHK_RESP_MIN..CHK_RESP_MAX */
} chk_probe_spec;

typedef struct chk_probe_result {
  int status; /* CHK_OK ... */
  int reason; /* enum chk_reason */
  int http_status;
  chk_echo_result echo; /* EGRESS and direct, with CHK_OK */
} chk_probe_result;

typedef struct chk_probe {
  chk_probe_spec s;
  int fd;
  int phase; /* private */
  int get;   /* a request follows the dial or the tunnel */
  int absolute;
  int unconfirmed; /* our own connect not yet confirmed: the first send's
                      error is the dial's (no SO_ERROR asked) */
  chk_url url; /* what the request fetches, and where a tunnel goes */
  up_hs hs;
  char req[CHK_REQ_MAX];
  size_t req_len, req_off;
  char *resp;
  size_t resp_len;
  char local[CHK_ADDR_MAX]; /* the socket's local address */
  chk_probe_result res;
} chk_probe;

/* Starts the probe (the socket made, its connect begun). Returns the
 * events to wait for, or 0 when it ended at once (res says why: a bad
 * task, a name, no resources, or a refusal the kernel gave at once).
 * It dials address literals only: a name ends it CHECKER_ERROR
 * name_not_supported (a checker without a connector). */
int chk_probe_start(chk_probe *p, const chk_probe_spec *s);

/* The connector's way (the gateway's: a `direct` instance resolves and
 * dials, chk_dial.h): chk_probe_prepare plans the probe and says where
 * to dial (*host, borrowed from the spec or the probe, and *port);
 * 1: dial it, then chk_probe_connected with the connected socket (the
 * probe owns it from then on) or chk_probe_fail with the dial's verdict;
 * 0: the probe ended (a bad task). */
int chk_probe_prepare(chk_probe *p, const chk_probe_spec *s,
                      const char **host, uint16_t *port);
int chk_probe_connected(chk_probe *p, int fd);
void chk_probe_fail(chk_probe *p, int status, int reason);

/* The socket is ready for revents: goes on as far as it can. The events
 * to wait for next, or 0 when it ended. */
int chk_probe_io(chk_probe *p, int revents);

/* The deadline passed: ends the probe with TIMEOUT and the phase's
 * reason (dial_timeout, handshake_timeout, response_timeout). */
void chk_probe_timeout(chk_probe *p);

/* Closes the socket, wipes the buffers that held credentials, frees.
 * Idempotent; the result stays readable. */
void chk_probe_end(chk_probe *p);

#endif
