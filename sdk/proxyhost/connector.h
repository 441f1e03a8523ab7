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
#define PH_CONNECTOR_MINOR 2

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
  PH_OPEN_F_STREAM = 1 /* the caller takes a stream as well as a socket */
};

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
  void *reserved[3];     /* zero */
} ph_open_request;

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
  void *reserved[2];
} ph_open_result;

/* ph_open_result.flags (minor 2). */
enum ph_open_result_flags {
  /* The stream was opened without the far end confirming its dial (a
   * TunnelMesh legacy open: TM-PROTO-39); the caller counts and logs it
   * with open_mode=legacy. Without it an open is strict: its success
   * means the target answered. */
  PH_OPEN_R_LEGACY = 1
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
