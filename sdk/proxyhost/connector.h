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
 * What only some callers and connectors share is not a field here but
 * an extension (since minor 5): a struct of its own header linked into
 * the request's or the result's `ext` chain (open_ext.h): the lease
 * (open_lease.h), absolute-form HTTP forwarding
 * (open_http_forward.h) and, since minor 6, the upstream hop a
 * connector went through (open_upstream.h). The lease and forwarding fields and flags of
 * minors 3 and 4 stay, marked, for modules built against them (SDK 1.6
 * and older); new code uses the extensions' helpers.
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
#include <proxyhost/open_ext.h>

#define PH_CONNECTOR_SERVICE "connector"
#define PH_CONNECTOR_MAJOR 1
#define PH_CONNECTOR_MINOR 6

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
  /* Minors 3 and 4 (SDK 1.6 and older; new code uses the extension,
   * open_lease.h, whose helper sets this too): the caller honours a
   * lease. */
  PH_OPEN_F_LEASE = 2,
  /* Minors 3 and 4 (SDK 1.6 and older; new code uses the extension,
   * open_http_forward.h, whose helper sets this too): the caller can
   * forward HTTP requests in absolute form. */
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

/* The lease (minor 3): defined in open_lease.h, which this header
 * includes at its end for the code written before it. */
typedef struct ph_open_lease ph_open_lease;

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
  /* Minor 5, appended: the request's extensions (open_ext.h), the
   * caller's; NULL: none. A connector reads it only when size covers it
   * (ph_open_request_ext). */
  const ph_open_ext *ext;
} ph_open_request;

typedef struct ph_open_http_forward
    ph_open_http_forward; /* open_http_forward.h */

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
  /* Minors 3 and 4, was reserved[0] (SDK 1.6 and older; new code uses
   * the extension, open_lease.h): the lease, to a request with
   * PH_OPEN_F_LEASE. */
  ph_open_lease *lease;
  /* Minors 3 and 4, was reserved[0] (SDK 1.6 and older; new code uses
   * the extension, open_http_forward.h): with PH_OPEN_R_HTTP_PROXY, the
   * Proxy-Authorization to add. */
  const ph_open_http_forward *http_forward;
  /* Minor 5, appended: the result's extensions (open_ext.h), the
   * connector's, read during the callback (an extension says what lives
   * longer); NULL: none. A caller reads it only when size covers it
   * (ph_open_result_ext). */
  const ph_open_ext *ext;
} ph_open_result;

/* A request's and a result's extension chain, NULL when the writer was
 * built before minor 5. */
static inline const ph_open_ext *ph_open_request_ext(
    const ph_open_request *req) {
  return req->size >= offsetof(ph_open_request, ext) + sizeof(req->ext)
             ? req->ext
             : NULL;
}

static inline const ph_open_ext *ph_open_result_ext(
    const ph_open_result *res) {
  return res->size >= offsetof(ph_open_result, ext) + sizeof(res->ext)
             ? res->ext
             : NULL;
}

/* For a connector: how req asked for an extension (enum ph_open_asked
 * bits, 0: not at all): its struct of type (at least min_size bytes) in
 * the chain, and/or old_flag, the request flag of minors 3 and 4 (0:
 * none). */
static inline int ph_open_ext_asked(const ph_open_request *req,
                                    uint32_t type, size_t min_size,
                                    uintptr_t old_flag) {
  int asked = 0;
  if (ph_open_ext_find(ph_open_request_ext(req), type, min_size))
    asked |= PH_OPEN_ASKED_EXT;
  if (old_flag && (req->flags & old_flag))
    asked |= PH_OPEN_ASKED_FLAG;
  return asked;
}

/* ph_open_result.flags (minor 2). */
enum ph_open_result_flags {
  /* The stream was opened without the far end confirming its dial (a
   * TunnelMesh legacy open); the caller counts and logs it
   * with open_mode=legacy. Without it an open is strict: its success
   * means the target answered. */
  PH_OPEN_R_LEGACY = 1,
  /* Minors 3 and 4, only to a request with PH_OPEN_F_HTTP_FORWARD (SDK
   * 1.6 and older; new code uses the extension, open_http_forward.h):
   * the socket or stream goes to an HTTP forward proxy. */
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

/* The extensions of minor 3's and 4's fields, for the code written
 * before them. */
#include <proxyhost/open_http_forward.h>
#include <proxyhost/open_lease.h>

#endif
