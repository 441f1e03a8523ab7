/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A TunnelMesh session: one WebSocket connection's streams, shared by the
 * three roles (tunnel_client, tunnel_server, tunnel_agent).
 *
 * The session sits between a message transport (tm_ws.h gives one over
 * libwebsockets; tests give one in memory) and the streams:
 *
 *   transport ─message─► tm_session_on_message: the one reader. It only
 *     decodes, validates, looks the stream up and enqueues (TM-P2-1/2):
 *     DATA is copied once into that stream's inbound queue, bounded in
 *     bytes (inbound_buffer_bytes) and entries; OPEN_STREAM becomes an
 *     ops->on_open call that must not block; never a socket write, a
 *     DNS lookup, a store query or a dial.
 *   streams ─► the writer: one per connection (TM-P2-16). A control queue
 *     (OPEN_STREAM, OPEN_RESULT, WINDOW_UPDATE, RESET, PING, PONG, GOAWAY,
 *     metadata), bounded in frames and bytes, always goes first; then
 *     DATA by deficit round-robin (tm_drr.h) over the streams with bytes
 *     and send window. Without the local fair_writer capability DATA goes
 *     in the order it was written (the old writer, for baselines). One
 *     frame per transport writable event.
 *
 * Each stream is a ph_stream (stream.h) for its user: the relay, or the
 * frontend through the client connector. Reading peeks the inbound queue
 * in place; consume() is the delivery, and only delivered bytes reopen
 * the receive window (TM-P2-11), through a WINDOW_UPDATE once the
 * threshold is reached (TM-P2-12). Writing copies into the stream's
 * outbound queue as far as its send window and queue bound allow
 * (TM-P2-10): a stream without window stalls alone.
 *
 * Errors have a scope (TM-P0-9..12). A stream error (window overrun or
 * overflow, zero WINDOW_UPDATE, a full inbound queue, DATA while opening,
 * a duplicate or late OPEN_RESULT, an illegal transition, a duplicate
 * stream id) resets that stream only and counts one violation; more than
 * violation_limit violations within violation_window_ms close the session
 * as abusive (audited: one warning log line, TM-FAIL-7). A session error
 * (transport failure, a frame that cannot be decoded, a full control
 * queue (TM-FAIL-8), a missed heartbeat, a connection-level limit) closes
 * the session: every stream is reset and ops->on_close says why.
 *
 * Legacy (negotiated capabilities without open_result): an open is open
 * at once on both ends, no OPEN_RESULT is sent, an acceptor's failure is
 * a RESET; without flow_control no window is sent or enforced, and the
 * bounded inbound queue is the only protection: a full one resets that
 * stream and counts the legacy backpressure, backpressure_total
 * {open_mode="legacy",result="rejected"} (TM-P2-6, TM-P2-15).
 *
 * Threads: loop thread only, for every function and every callback.
 * Callbacks run from the loop (a transport event or a timer), never from
 * inside a call the user made into the session, except where said.
 */
#ifndef TM_SESSION_H
#define TM_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/host.h>
#include <proxyhost/stream.h>

#include "tm_metrics.h" /* enum tm_close_reason */
#include "tunnel_common/proto/tm_proto.h"

typedef struct tm_session tm_session;
typedef struct tm_stream tm_stream;
struct tm_metrics; /* tm_metrics.h */

/* The role (enum tm_component) and why a session ended (enum
 * tm_close_reason) are in tm_metrics.h, whose metrics are labelled by
 * them. */

/* The transport: one message-oriented connection. The session calls
 * these; the transport calls tm_session_on_message/on_writable/
 * on_transport_closed. */
typedef struct tm_transport {
  /* Ask for one on_writable call when the connection can take a
   * message. */
  void (*want_write)(void *t);
  /* Sends one whole binary message now: buf has `headroom` writable bytes
   * before it (libwebsockets' LWS_PRE) and len bytes of frame. 0, or -1
   * (the session closes with TM_CLOSE_TRANSPORT). */
  int (*write)(void *t, uint8_t *buf, size_t len);
  /* Stop (1) or resume (0) reading messages: the session pauses the
   * transport only for connection-wide pressure, never for one stream. */
  void (*pause_read)(void *t, int paused);
  /* Close the connection (after on_close returned). */
  void (*close)(void *t);
  size_t headroom;
} tm_transport;

typedef struct tm_session_cfg {
  int component;       /* tm_component: the metrics' component label */
  int opener;          /* 1: this side opens streams, 0: the peer does */
  unsigned caps;       /* negotiated for this connection (TM_CAP_OPEN_RESULT,
                          TM_CAP_FLOW_CONTROL) */
  unsigned local_caps; /* this side's own: TM_CAP_FAIR_WRITER */
  uint32_t initial_window;          /* 262144 */
  uint32_t window_update_threshold; /* 131072 */
  uint32_t max_frame_payload;       /* 32768, <= TM_MAX_PAYLOAD */
  uint32_t inbound_buffer_bytes;    /* 262144 per stream */
  uint32_t outbound_buffer_bytes;   /* per stream, what write() queues */
  uint32_t max_streams;             /* open at once on this connection */
  uint32_t control_queue_frames;    /* 1024 */
  uint32_t control_queue_bytes;     /* 262144 */
  uint32_t quantum;                 /* 32768 */
  uint32_t violation_limit;         /* 16 */
  uint32_t violation_window_ms;     /* 60000 */
  uint32_t ping_interval_ms;        /* 0: no heartbeat */
  uint32_t ping_timeout_ms;
  struct tm_metrics *metrics;       /* may be NULL */
} tm_session_cfg;

/* The role's callbacks (all optional but on_open on an acceptor). */
typedef struct tm_session_ops {
  /* Acceptor: the peer opened st (state opening, or open when legacy).
   * The role answers exactly once, now or later, with tm_stream_accept or
   * tm_stream_reject; until then DATA for it is a violation (strict) or
   * is queued within the inbound bound (legacy). If the stream is reset
   * or the session closes first, on_reset says so and the answer must
   * not come. */
  void (*on_open)(void *arg, tm_stream *st, const tm_open_stream *req);
  /* Acceptor: a stream that was never answered was reset (the peer gave
   * up, the session closed). The role drops its pending work (cancels
   * the check or dial); st is dead when this returns. */
  void (*on_abandon)(void *arg, tm_stream *st);
  void (*on_metadata)(void *arg, const tm_metadata *m, int ack);
  /* The peer will open or accept nothing new (GOAWAY). */
  void (*on_goaway)(void *arg, uint32_t last_stream_id);
  /* The session ended: every stream was reset already (their users see
   * PH_ERESET). The session is freed after this returns. */
  void (*on_close)(void *arg, int reason);
} tm_session_ops;

/* A new session over t (its arg is targ). cfg is copied. NULL: no
 * memory. Starts the heartbeat timer. */
tm_session *tm_session_new(const ph_api *api, ph_ctx *ctx,
                           const tm_session_cfg *cfg,
                           const tm_transport *t, void *targ,
                           const tm_session_ops *ops, void *arg);
/* The transport's events. on_message: one whole message (the reader).
 * on_writable: after want_write. on_transport_closed: the connection is
 * gone: the session resets its streams, calls on_close and frees itself
 * (the transport's close is not called then). */
void tm_session_on_message(tm_session *s, const uint8_t *msg, size_t len);
void tm_session_on_writable(tm_session *s);
void tm_session_on_transport_closed(tm_session *s);

/* Sends AGENT_METADATA (ack 0) or its ACK (ack 1) through the control
 * queue. PH_OK or PH_EFULL. */
int tm_session_send_metadata(tm_session *s, const tm_metadata *m, int ack);
/* Sends GOAWAY: no new stream either way; the session closes by itself
 * (TM_CLOSE_GOAWAY_DONE) when the last stream ends. */
void tm_session_goaway(tm_session *s);
/* Closes now (on_close runs from the loop, reason TM_CLOSE_LOCAL). */
void tm_session_close(tm_session *s);

/* Counts for placement and limits: streams not yet finished (opening or
 * open) on this session, and whether it accepts new ones (not draining,
 * below max_streams). */
uint32_t tm_session_streams(const tm_session *s);
int tm_session_can_open(const tm_session *s);
unsigned tm_session_caps(const tm_session *s);
/* Narrows the negotiated caps to caps & tm_session_caps(s): only ever
 * removes bits. TM-PROTO-18: the agent metadata ACK is the intersection,
 * so an ACK granting less than the subprotocol wins. Only while the
 * session has had no stream (none opened, none accepted): PH_OK, or
 * PH_EINVAL with nothing changed. Streams opened or accepted afterwards
 * use the narrowed caps (without TM_CAP_OPEN_RESULT: legacy, and then
 * no flow control either). */
int tm_session_narrow_caps(tm_session *s, unsigned caps);
/* Heartbeat round trip of the last PONG, microseconds (0: none yet). */
uint64_t tm_session_rtt_us(const tm_session *s);
/* The writer's queue waits (a control frame queued to written, a stream's
 * data waiting for its turn) since the last call, added into *into; the
 * session's window starts again (the agent's pool controller, TM-P2-26). */
struct lat_window;
void tm_session_take_writer_waits(tm_session *s, struct lat_window *into);

/* ---- opener ----------------------------------------------------------- */

/* The answer to an open: res->accepted and the stage/code; st is usable
 * (open) only when accepted, and is then the caller's to close; on
 * failure it is already gone. strict: 1 when the peer's OPEN_RESULT
 * decided it, 0 when the stream was opened legacy (accepted at once). */
typedef void (*tm_open_cb)(void *arg, tm_stream *st,
                           const tm_open_result *res, int strict);

/* Opens a stream (OPEN_STREAM through the control queue; req->window is
 * filled in). Strict (caps has TM_CAP_OPEN_RESULT): cb runs when the
 * OPEN_RESULT arrives, when timeout_ms passes (code timeout; the stream
 * is reset towards the peer: TM-PROTO-38) or when the session closes
 * first (stage relay, code agent_offline). Legacy: cb runs from the
 * loop with accepted=1, strict=0. Returns the stream (for
 * tm_stream_cancel), or NULL with nothing sent: the session cannot open
 * (draining, at max_streams, control queue full). */
tm_stream *tm_stream_open(tm_session *s, const tm_open_stream *req,
                          uint32_t timeout_ms, tm_open_cb cb, void *arg);
/* Abandons an open whose cb has not run: the stream is reset towards the
 * peer with code 0 ("cancelled": the user went away); cb never runs. */
void tm_stream_cancel(tm_stream *st);
/* The same with the RESET code that says why (ph_open_code; out of range:
 * internal_error), e.g. timeout for the opener's own open timeout (issue
 * 22 item 8). */
void tm_stream_abort(tm_stream *st, int code);

/* ---- acceptor ---------------------------------------------------------- */

/* Installs st as open, then queues OPEN_RESULT(ok) (strict; with the
 * local receive window when flow control is on), in that order
 * (TM-P0-7/18). From now on st is the caller's ph_stream to close. */
void tm_stream_accept(tm_stream *st);
/* The same for a stream the acceptor opened towards a legacy hop (a
 * server whose agent connection has no open results): a strict peer gets
 * OPEN_RESULT(ok) with stage "relay" and "open_mode":"legacy", so it
 * knows and counts the stream legacy and never reads it as the agent's
 * connect (TM-PROTO-20..22, issue 24 item 3). Legacy st: as accept. */
void tm_stream_accept_legacy(tm_stream *st);
/* Refuses st: OPEN_RESULT(failure) when strict, RESET when legacy; st is
 * gone when this returns. */
void tm_stream_reject(tm_stream *st, int stage, int code, int retryable,
                      uint32_t retry_after_ms);

/* ---- both -------------------------------------------------------------- */

/* The stream as a ph_stream (valid until ph_stream_close). */
ph_stream *tm_stream_ph(tm_stream *st);
uint32_t tm_stream_id(const tm_stream *st);
tm_session *tm_stream_session(const tm_stream *st);
/* The role's own pointer on a stream (placement, accounting). */
void tm_stream_set_user(tm_stream *st, void *user);
void *tm_stream_user(const tm_stream *st);
/* Reset codes on every hop (issue 22 item 8). The code st was reset with,
 * sent or received (ph_open_code), or -1 while it was not reset. */
int tm_stream_reset_code(const tm_stream *st);
/* The code the owner's ph_stream_close sends when that close resets the
 * stream (a close before both directions finished): code 0, "cancelled",
 * unless set here, e.g. by a relay's owner that knows why its other end
 * failed. Out of range: internal_error. No effect once st was reset. */
void tm_stream_set_close_code(tm_stream *st, int code);
/* Joins two streams one relay carries (a server's client and agent
 * streams): when either is reset, whatever the reason, its code becomes
 * the other's close code, so the relay's close passes it on. The link
 * ends when either stream is freed. */
void tm_stream_link(tm_stream *a, tm_stream *b);
/* Whether the stream runs with strict open (for open_mode labels). */
int tm_stream_strict(const tm_stream *st);

#endif
