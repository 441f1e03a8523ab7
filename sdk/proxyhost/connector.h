/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proxyhost SDK: the "connector" service and open results.
 *
 * A frontend (socks5, http_proxy, ...) asks a connector to open a stream
 * to a target on behalf of a principal and gets exactly one result: open,
 * or a failure with a stable stage and code (the TunnelMesh OPEN_RESULT
 * enums). The frontend tells its client "success" only after that. Raw
 * system error text never appears in a result.
 *
 * Service name "connector", major 1 (PH_CONNECTOR_MAJOR). Get it at start:
 *
 *   void *cself;
 *   const ph_connector_v1 *c =
 *       api->service_get(ctx, "connector", PH_CONNECTOR_MAJOR, 0, &cself);
 *
 * An open answers with a connected socket or, since minor 1 (ABI 1.2),
 * with a stream (stream.h): a connector whose streams live in the process
 * (multiplexed over a tunnel, say) hands one over without a socketpair.
 * It may do so only when the request says the caller takes streams
 * (PH_OPEN_F_STREAM); to an older caller it answers with a socket or
 * fails with unsupported_capability.
 *
 * Threads: loop thread only, for open, cancel and the callback.
 */
#ifndef PROXYHOST_CONNECTOR_H
#define PROXYHOST_CONNECTOR_H

#include <stddef.h>
#include <stdint.h>

/* The net.listener announcements have their own header; included here
 * for the frontends and connectors written before it. */
#include <proxyhost/listener_event.h>

#define PH_CONNECTOR_SERVICE "connector"
#define PH_CONNECTOR_MAJOR 1
#define PH_CONNECTOR_MINOR 4

/* Where an open failed. Stable: these names go on the wire and into
 * metric labels. */
typedef enum ph_open_stage {
  PH_STAGE_NONE = 0, /* success */
  PH_STAGE_AUTHORIZATION,
  PH_STAGE_SELECTION,
  PH_STAGE_RELAY,
  PH_STAGE_QUEUE,
  PH_STAGE_DNS,
  PH_STAGE_CONNECT,
  PH_STAGE_POLICY,
  PH_STAGE_PROTOCOL,
  PH_STAGE_COUNT_
} ph_open_stage;

/* What happened. Stable, as above; also the error_class label values. */
typedef enum ph_open_code {
  PH_OPEN_OK = 0,
  PH_OPEN_FORBIDDEN,
  PH_OPEN_AGENT_OFFLINE,
  PH_OPEN_QUEUE_FULL,
  PH_OPEN_TIMEOUT,
  PH_OPEN_NETWORK_UNREACHABLE,
  PH_OPEN_HOST_UNREACHABLE,
  PH_OPEN_CONNECTION_REFUSED,
  PH_OPEN_UNSUPPORTED_CAPABILITY,
  PH_OPEN_INTERNAL_ERROR,
  PH_OPEN_CODE_COUNT_
} ph_open_code;

enum ph_protocol { PH_PROTO_TCP = 1 };

/* ph_open_request.flags (minor 1). */
enum ph_open_flags {
  PH_OPEN_F_STREAM = 1, /* the caller takes a stream as well as a socket */
  /* Minor 3: the caller honours a lease (ph_open_lease below): it tells
   * the connector when the target's first byte reached the client and
   * when the stream ended. A connector that must know (the pool: an
   * upstream proxy's capacity and outcome) refuses a caller without it
   * with unsupported_capability. */
  PH_OPEN_F_LEASE = 2,
  /* Minor 3 (ABI 1.4): the caller will send HTTP/1.1 requests for
   * host:port over this stream (absolute-form forwarding: http_proxy
   * sets it for a forwarded request, never for CONNECT; socks5 never),
   * and can send each in absolute form with one more Proxy-Authorization
   * field when the result says so (PH_OPEN_R_HTTP_PROXY). A connector
   * that does not know it ignores it: nothing changes for its caller.
   * The pool answers it for an upstream of protocol `http` (an ordinary
   * forward proxy) with a socket to that proxy and no CONNECT. */
  PH_OPEN_F_HTTP_FORWARD = 4
};

/* Minor 3: request headers a connector may read during open() only (the
 * pool's sticky "header:<Name>" session key). get returns the value of
 * the first field called name (case-insensitive), its length in *len,
 * or NULL; the value is borrowed for the open() call. */
typedef struct ph_open_headers {
  const char *(*get)(void *arg, const char *name, size_t *len);
  void *arg;
} ph_open_headers;

/* Minor 3: what a connector that keeps per-stream state needs to hear
 * from the caller after a success (PH_OPEN_F_LEASE). The caller owns the
 * lease with the stream and calls, on the loop thread:
 *  - first_byte(l), at most once: the target's first byte reached the
 *    client (the response began);
 *  - end(l, how), exactly once, when the stream is over (after or as the
 *    caller closes its socket or stream), also when it never relayed a
 *    byte. end frees the lease; the pointer is dead afterwards.
 * And, since minor 4, where the connector offers it (on_cut set): on_cut(l,
 * cut, arg) once the caller holds the stream, naming how the connector
 * may end it early: it calls cut(arg) at most once, on the loop thread,
 * never from inside a call into it (open, cancel, a lease call), when
 * the stream must not go on (the pool: its upstream proxy left the
 * gateway's view, or the view is stale, and the drain is over). The
 * caller then closes the stream and its client's connection at once and
 * ends the lease (CLIENT_ERROR: it says nothing about the target),
 * inside cut or soon after. A later on_cut replaces the earlier; cut
 * NULL withdraws it. */
typedef struct ph_open_lease ph_open_lease;

enum ph_lease_end {
  PH_LEASE_END_CLOSED = 0,    /* finished cleanly (EOF both ways, or the
                                 caller was done with it) */
  PH_LEASE_END_TARGET_ERROR,  /* reading or writing the target's side
                                 failed (a reset, an error) */
  PH_LEASE_END_TIMEOUT,       /* nothing moved for the idle timeout */
  PH_LEASE_END_CLIENT_ERROR   /* the client's side failed or went away
                                 early: says nothing about the target */
};

typedef struct ph_open_lease_ops {
  uint32_t size; /* sizeof(ph_open_lease_ops) of the connector */
  void (*first_byte)(ph_open_lease *l);
  void (*end)(ph_open_lease *l, int how); /* enum ph_lease_end */
  /* Minor 4, was reserved[0]; NULL: the connector never cuts. */
  void (*on_cut)(ph_open_lease *l, void (*cut)(void *arg), void *arg);
  void *reserved[3];
} ph_open_lease_ops;

struct ph_open_lease {
  const ph_open_lease_ops *ops;
};

static inline void ph_open_lease_first_byte(ph_open_lease *l) {
  if (l)
    l->ops->first_byte(l);
}

/* NULL is a no-op. */
static inline void ph_open_lease_end(ph_open_lease *l, int how) {
  if (l)
    l->ops->end(l, how);
}

/* Tells the connector how to cut the stream (see on_cut above). 1 when
 * it took it, 0 when it never cuts (no hook, an older connector, NULL). */
static inline int ph_open_lease_on_cut(ph_open_lease *l,
                                       void (*cut)(void *arg), void *arg) {
  if (!l || l->ops->size < offsetof(ph_open_lease_ops, on_cut) +
                               sizeof(l->ops->on_cut) ||
      !l->ops->on_cut)
    return 0;
  l->ops->on_cut(l, cut, arg);
  return 1;
}
/* Minor 4: the caller's own say on where a connection may go,
 * asked at connect time about every address the connector is about to
 * connect to (a literal, or each address DNS gave: what a name resolves
 * to is judged, not the name). allow returns 1 to let the connector try
 * that address, 0 to skip it; none left is policy/forbidden. Called on
 * the loop thread, from open or later, never after the result was
 * delivered or the open cancelled; the struct must live that long. A
 * connector that does not know the field (an older one) ignores it: a
 * caller that depends on it checks the socket it gets (getpeername). The
 * agent uses it to keep its dials off its own host. */
struct sockaddr;
typedef struct ph_open_addr_filter {
  int (*allow)(void *arg, const struct sockaddr *sa);
  void *arg;
} ph_open_addr_filter;

typedef struct ph_open_request {
  uint32_t size;         /* sizeof(ph_open_request) of the caller */
  uint8_t protocol;      /* ph_protocol */
  uint16_t port;         /* 1..65535 */
  const char *host;      /* name or literal address, NUL-terminated, at
                            most 255 bytes; copied by the connector */
  const char *principal; /* authenticated user, or NULL for anonymous;
                            copied by the connector */
  uintptr_t flags;       /* minor 1, was reserved[0]: ph_open_flags; an
                            older caller leaves it 0 */
  /* Minor 3, were reserved[0] and [1]; an older caller leaves them NULL.
   * listener: the name of the frontend instance the request came in on
   * ("http_proxy", "socks5.public"), for routing; copied. headers: see
   * ph_open_headers; NULL when the request has none. */
  const char *listener;
  const ph_open_headers *headers;
  /* Minor 4, was reserved[0]: see ph_open_addr_filter; NULL:
   * the connector's own policy only. The struct has no reserved slot
   * left; size still grows it. */
  const ph_open_addr_filter *addr_filter;
} ph_open_request;

typedef struct ph_open_http_forward ph_open_http_forward; /* below */

typedef struct ph_open_result {
  uint32_t size;           /* sizeof(ph_open_result) of the connector */
  int stage;               /* ph_open_stage; PH_STAGE_NONE on success */
  int code;                /* ph_open_code; PH_OPEN_OK on success */
  int retryable;           /* whether trying again later may succeed */
  uint32_t retry_after_ms; /* a hint when retryable, else 0 */
  /* On success: a connected, non-blocking TCP socket. Ownership passes to
   * the callback's caller, who must close it. -1 on failure, and when the
   * stream below answers instead. */
  int fd;
  /* Minor 1, was reserved[0]: on success, when the request had
   * PH_OPEN_F_STREAM and the connector answers with a stream instead of
   * a socket (fd is then -1). Ownership passes to the callback's caller,
   * who must close it (ph_stream_close). NULL otherwise; an older
   * connector leaves it NULL. */
  struct ph_stream *stream;
  /* Minor 2, was reserved[0]: ph_open_result_flags about a success. An
   * older connector leaves it 0; a caller reads it only when size covers
   * it. */
  uintptr_t flags;
  /* Minor 3, was reserved[0]: on success, when the request had
   * PH_OPEN_F_LEASE, the lease the caller must end (see ph_open_lease);
   * NULL when the connector needs none (direct). Ownership passes with
   * the socket or stream. */
  ph_open_lease *lease;
  /* Minor 3 (ABI 1.4), was reserved[0]: with PH_OPEN_R_HTTP_PROXY, what
   * to add to every request sent over this socket or stream (see
   * ph_open_http_forward); NULL otherwise, and from an older connector
   * (read it only when size covers it). */
  const ph_open_http_forward *http_forward;
} ph_open_result;

/* Minor 3 (ABI 1.4): what a caller that asked PH_OPEN_F_HTTP_FORWARD
 * adds to each request when the result has PH_OPEN_R_HTTP_PROXY. The
 * connector owns the struct and its bytes; they stay valid until the
 * lease ends (a connector that sets the flag gives a lease with it).
 * The value is a credential: the caller writes it only into the request
 * heads it sends over this socket or stream, wipes its copies once they
 * are sent, and never logs it, counts it or shows it in an error. */
struct ph_open_http_forward {
  uint32_t size; /* sizeof(ph_open_http_forward) of the connector */
  /* The value of one Proxy-Authorization field to add ("Basic
   * dXNlcjpwdw=="): visible ASCII and spaces only, NUL-terminated,
   * proxy_authorization_len bytes without the NUL. NULL (and 0): the
   * upstream takes no credentials; add nothing. */
  uint32_t proxy_authorization_len;
  const char *proxy_authorization;
  void *reserved[2]; /* zero */
};

/* ph_open_result.flags (minor 2). */
enum ph_open_result_flags {
  /* The stream was opened without the far end confirming its dial (a
   * TunnelMesh legacy open); the caller counts and logs it
   * with open_mode=legacy. Without it an open is strict: its success
   * means the target answered. */
  PH_OPEN_R_LEGACY = 1,
  /* Minor 3 (ABI 1.4), only to a request with PH_OPEN_F_HTTP_FORWARD:
   * the socket or stream goes to an HTTP forward proxy, not to the
   * target: send each request in absolute form ("GET http://host:port/p
   * HTTP/1.1", the scheme, host and port the client asked for), with
   * the Proxy-Authorization of http_forward, and reuse the connection
   * only for requests to the same host:port. Its responses are the
   * target's, but for a 407: that one is about the connector's
   * credentials (answer the client 502 and end the lease TARGET_ERROR). */
  PH_OPEN_R_HTTP_PROXY = 2
};

/* Called exactly once per accepted open, on the loop thread, never from
 * inside open() itself, and never after cancel() returned. res is valid
 * only during the call. */
typedef void (*ph_open_cb)(void *arg, const ph_open_result *res);

typedef struct ph_connector_v1 {
  /* Starts opening. Never blocks: a full queue is answered with
   * stage=queue, code=queue_full through the callback. Returns an id > 0,
   * or a negative ph_status (PH_EINVAL for a malformed request, PH_ENOMEM)
   * and then cb is never called. */
  int64_t (*open)(void *self, const ph_open_request *req, ph_open_cb cb,
                  void *arg);
  /* Abandons an open (the client went away): stops its DNS lookup and
   * dial and frees its slot. The callback is not called afterwards.
   * PH_OK, or PH_ENOENT when the id is unknown or already answered. */
  int (*cancel)(void *self, int64_t id);
} ph_connector_v1;

/* Stable names of the enums (for logs, metric labels and the wire). */
static inline const char *ph_open_stage_name(int s) {
  static const char *const n[] = {"none",   "authorization", "selection",
                                  "relay",  "queue",         "dns",
                                  "connect", "policy",       "protocol"};
  return s >= 0 && s < PH_STAGE_COUNT_ ? n[s] : "none";
}

/* The code names in enum order, for label value lists:
 *   static const char *const codes[] = {PH_OPEN_CODE_NAMES, NULL}; */
#define PH_OPEN_CODE_NAMES                                                  \
  "ok", "forbidden", "agent_offline", "queue_full", "timeout",              \
      "network_unreachable", "host_unreachable", "connection_refused",      \
      "unsupported_capability", "internal_error"

static inline const char *ph_open_code_name(int c) {
  static const char *const n[] = {PH_OPEN_CODE_NAMES};
  return c >= 0 && c < PH_OPEN_CODE_COUNT_ ? n[c] : "internal_error";
}

#endif
