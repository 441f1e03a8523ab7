/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * TunnelMesh wire protocol: frames, payloads, capabilities and the
 * WebSocket subprotocols (docs/protocol/tunnel.md is the specification;
 * this header is its C form).
 *
 * Pure code (TM-PROTO-42): no I/O, no configuration, no logging, no
 * allocation; every function works on caller buffers and is safe on any
 * thread. Every decoder takes untrusted bytes, checks every bound and
 * length before it reads, and answers TM_EPROTO for anything malformed;
 * t/fuzz/fuzz_tm_frame.c and fuzz_tm_payload.c hold them to that.
 *
 * A frame is one WebSocket binary message:
 *
 *   0       1       2               6               10
 *   +-------+-------+---------------+---------------+-----------------+
 *   | type  | flags | stream_id u32 | length u32    | payload[length] |
 *   +-------+-------+---------------+---------------+-----------------+
 *
 * integers big-endian; length must equal the message length minus 10.
 * Stream 0 is the connection (PING, PONG, GOAWAY, AGENT_METADATA(_ACK));
 * every other type needs a stream id > 0. Only one side of a connection
 * opens streams (the client towards the server, the server towards the
 * agent), so ids never collide; the opener uses increasing ids and never
 * reuses one on a connection.
 */
#ifndef TM_PROTO_H
#define TM_PROTO_H

#include <stddef.h>
#include <stdint.h>

/* Results of the decoders (negative; 0 and above are lengths or OK). */
#define TM_OK 0
#define TM_EPROTO (-1) /* malformed: the caller decides the scope */
#define TM_ESPACE (-2) /* an encoder's output buffer is too small */

#define TM_HEADER_LEN 10
/* The protocol's MaxPayload: no frame carries more, whatever was
 * configured (TM-CFG-25 bounds max_frame_payload by it). */
#define TM_MAX_PAYLOAD 65536u
#define TM_MAX_FRAME (TM_HEADER_LEN + TM_MAX_PAYLOAD)
#define TM_OPEN_RESULT_MAX 1024u /* TM-PROTO-25 */
#define TM_METADATA_MAX 4096u    /* AGENT_METADATA and its ACK */
#define TM_HOST_MAX 255u
#define TM_AGENT_MAX 64u         /* PH_AZ_NAME_MAX */
#define TM_PING_LEN 8u
/* Windows: a receive window is at most this (and at least 1 frame). */
#define TM_WINDOW_MAX (16u * 1024 * 1024)
/* The protocol's initial window (the seed's initial_window): what an
 * accepted OPEN_RESULT of a flow-controlled stream that carries no
 * "window" gives the opener (issue 24 item 5: the seed's result has five
 * fields, window is ours and optional). */
#define TM_WINDOW_DEFAULT 262144u

enum tm_frame_type {
  TM_OPEN_STREAM = 0x01,
  TM_OPEN_RESULT = 0x02,
  TM_DATA = 0x03,
  TM_WINDOW_UPDATE = 0x04,
  TM_RESET = 0x05,
  TM_PING = 0x06,
  TM_PONG = 0x07,
  TM_GOAWAY = 0x08,
  TM_AGENT_METADATA = 0x09,
  TM_AGENT_METADATA_ACK = 0x0a
};

/* DATA flags. */
#define TM_FLAG_FIN 0x01 /* the sender's last DATA: the receiver reads EOF
                            after this payload (which may be empty) */

typedef struct tm_frame {
  uint8_t type;
  uint8_t flags;
  uint32_t stream_id;
  uint32_t length;
  const uint8_t *payload; /* points into the decoded buffer */
} tm_frame;

/* Decodes one whole message of len bytes. TM_OK and *f set, or
 * TM_EPROTO: shorter than the header, length not equal to the rest,
 * payload above TM_MAX_PAYLOAD, a connection frame type on a stream id
 * > 0 or a stream frame type on stream 0, flags other than FIN on DATA
 * or any flag on another type. An unknown type with a well-formed header
 * decodes (TM_OK): the caller ignores it (docs/protocol/tunnel.md,
 * "Unknown frames"). */
int tm_frame_decode(const uint8_t *msg, size_t len, tm_frame *f);
/* Writes the 10-byte header for a payload of length bytes. */
void tm_frame_header(uint8_t out[TM_HEADER_LEN], uint8_t type, uint8_t flags,
                     uint32_t stream_id, uint32_t length);
/* Whether type is one of the known types; whether it lives on stream 0. */
int tm_frame_known(uint8_t type);
int tm_frame_is_connection(uint8_t type);
const char *tm_frame_name(uint8_t type); /* "OPEN_STREAM", ..., "UNKNOWN" */

/* ---- OPEN_STREAM: window u32, protocol u8 (1 = tcp), port u16,
 *      host_len u8 (1..255), host, agent_len u8 (0..64), agent,
 *      then optionally trace_len u8 (1..64), trace, and after a trace
 *      optionally principal_len u8 (1..64), principal ---------------------
 * The trace (issue 24 item 10) is the stream's trace id for the logs of
 * client, server and agent (TM-OBS-19): made by the client, passed on by
 * the server, TM_TRACE_LEN lowercase hex digits, not all zero (the form
 * of a W3C trace-context trace-id), random but no secret. It is sent only
 * on a connection that negotiated TM_CAP_TRACE (a peer that does not know
 * the field may refuse trailing bytes; the session layer leaves it out
 * otherwise), and received whether or not it was negotiated. A trace field
 * whose length byte is 0 or above TM_TRACE_WIRE_MAX, or does not end the
 * payload, makes the OPEN_STREAM malformed (refused); one well framed but
 * not of that form decodes with trace empty and trace_bad set: the
 * receiver replaces it with one of its own.
 *
 * The principal (issue 27) is the client's authorized principal (its
 * token id, never a secret) as the ingress server saw it, carried to the
 * server holding the agent over a relay link, which logs it and
 * authorizes nothing by it (the ingress did). It is sent only on a
 * connection that negotiated TM_CAP_PRINCIPAL (relay links between
 * servers: no client or agent offers it), only after a trace, and read
 * only there: the session drops one received where it was not negotiated.
 * 1..TM_PRINCIPAL_MAX bytes of [A-Za-z0-9._-] (tm_principal_valid); a
 * length byte 0 or above TM_PRINCIPAL_MAX, bytes outside that set, or a
 * field that does not end the payload make the OPEN_STREAM malformed. */
#define TM_TRACE_LEN 32u
#define TM_TRACE_WIRE_MAX 64u
#define TM_PRINCIPAL_MAX 64u
#define TM_OPEN_STREAM_MAX                                                 \
  (9u + TM_HOST_MAX + TM_AGENT_MAX + 1u + TM_TRACE_WIRE_MAX + 1u +         \
   TM_PRINCIPAL_MAX)
typedef struct tm_open_stream {
  uint32_t window;   /* the opener's initial receive window for this
                        stream (flow control negotiated), else 0 */
  uint8_t protocol;  /* 1: tcp */
  uint16_t port;     /* 1..65535 */
  char host[TM_HOST_MAX + 1];   /* printable ASCII, NUL-terminated */
  char agent[TM_AGENT_MAX + 1]; /* client→server: the agent wanted; empty
                                   on server→agent */
  char trace[TM_TRACE_LEN + 1]; /* a trace id, or empty: none (encode: not
                                   written; decode: none sent, or bad) */
  int trace_bad; /* decode only: a trace field that is not a trace id */
  char principal[TM_PRINCIPAL_MAX + 1]; /* server→server: the client's
                                           token id, or empty: none */
} tm_open_stream;
/* Whether s[0..n) is a trace id (TM_TRACE_LEN lowercase hex, not all 0). */
int tm_trace_valid(const char *s, size_t n);
/* Whether s[0..n) is a principal (1..TM_PRINCIPAL_MAX of [A-Za-z0-9._-]). */
int tm_principal_valid(const char *s, size_t n);
/* Returns the payload length written, or TM_ESPACE / TM_EPROTO (a field
 * out of bounds, a trace that is not a trace id, a principal that is not
 * one or without a trace). */
int tm_open_stream_encode(const tm_open_stream *o, uint8_t *out, size_t cap);
int tm_open_stream_decode(const uint8_t *p, size_t len, tm_open_stream *o);

/* ---- OPEN_RESULT: bounded JSON (TM-PROTO-23..28) ------------------------
 * {"accepted":true,"stage":"connect","code":"ok","retryable":false,
 *  "retry_after_ms":0}, plus "window": the acceptor's initial receive
 * window, on an accepted result of a flow-controlled stream only (optional:
 * absent, the opener takes TM_WINDOW_DEFAULT; issue 24 item 5).
 * Unknown fields are ignored; a missing or mistyped known field, a stage
 * outside the stable set, accepted=true with a code other than ok, or
 * more than TM_OPEN_RESULT_MAX bytes are TM_EPROTO. An unknown code
 * string decodes as code PH_OPEN_INTERNAL_ERROR with code_known = 0
 * (TM-PROTO-29: the client maps it to a general failure). */
typedef struct tm_open_result {
  int accepted;            /* 1 / 0 */
  int stage;               /* ph_open_stage; PH_STAGE_CONNECT on ok */
  int code;                /* ph_open_code */
  int code_known;          /* decode only */
  int retryable;
  uint32_t retry_after_ms; /* 0 .. 3600000 */
  uint32_t window;         /* 0: absent */
  int legacy; /* "open_mode":"legacy" on an acceptance (issue 24 item 3):
                 the acceptor opened the stream towards a legacy hop (an
                 agent without open results), so the agent's connect is
                 not confirmed; absent or "strict": 0. Any other string
                 decodes as legacy (never read as a confirmation). */
} tm_open_result;
int tm_open_result_encode(const tm_open_result *r, uint8_t *out, size_t cap);
int tm_open_result_decode(const uint8_t *p, size_t len, tm_open_result *r);

/* ---- WINDOW_UPDATE: increment u32 (1..TM_WINDOW_MAX; 0 is a violation)
 *      RESET: code u8 (ph_open_code; unknown = internal_error)
 *      PING / PONG: 8 opaque bytes, PONG echoes them
 *      GOAWAY: last_stream_id u32 (the last stream the sender accepted or
 *              opened; it opens and accepts no more) ------------------- */
int tm_u32_decode(const uint8_t *p, size_t len, uint32_t *v); /* len == 4 */
void tm_u32_encode(uint8_t out[4], uint32_t v);

/* ---- capabilities ------------------------------------------------------ */
enum tm_cap {
  TM_CAP_OPEN_RESULT = 1u << 0, /* "stream_open_result.v1" */
  TM_CAP_FLOW_CONTROL = 1u << 1, /* "stream_flow_control.v1" */
  TM_CAP_FAIR_WRITER = 1u << 2,  /* "stream_fair_writer.v1" (local only,
                                    TM-PROTO-12) */
  TM_CAP_TRACE = 1u << 3,        /* "stream_trace.v1": OPEN_STREAM may
                                    carry the trace field */
  TM_CAP_PRINCIPAL = 1u << 4     /* "stream_principal.v1": OPEN_STREAM may
                                    carry the principal field (relay
                                    links between servers only: not in
                                    TM_CAP_ALL, never offered by a client
                                    or an agent) */
};
#define TM_CAP_ALL                                                          \
  (TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL | TM_CAP_FAIR_WRITER |          \
   TM_CAP_TRACE)
const char *tm_cap_name(unsigned cap_bit); /* NULL for a non-single bit */
/* 0 for an unknown name (ignored: TM-PROTO-19). */
unsigned tm_cap_from_name(const char *name, size_t len);

/* ---- WebSocket subprotocols (TM-PROTO-14..17) ---------------------------
 * The client offers, in this order, those its own capabilities allow:
 *   "tunnelmesh.v1.open-result.flow-control.trace.principal"
 *                                             OPEN_RESULT | FLOW_CONTROL |
 *                                             TRACE | PRINCIPAL (a server's
 *                                             relay link only)
 *   "tunnelmesh.v1.open-result.flow-control.trace"
 *                                             OPEN_RESULT | FLOW_CONTROL |
 *                                             TRACE
 *   "tunnelmesh.v1.open-result.flow-control"  OPEN_RESULT | FLOW_CONTROL
 *   "tunnelmesh.v1.open-result"               OPEN_RESULT
 *   "tunnelmesh.v1"                           neither
 * and always "tunnelmesh.v1" last. The server picks the first offered
 * combination whose capabilities it has all of. No subprotocol in the
 * answer (an old server) is legacy: capabilities 0. */
#define TM_SUBPROTO_PRINCIPAL \
  "tunnelmesh.v1.open-result.flow-control.trace.principal"
#define TM_SUBPROTO_TRACE "tunnelmesh.v1.open-result.flow-control.trace"
#define TM_SUBPROTO_FULL "tunnelmesh.v1.open-result.flow-control"
#define TM_SUBPROTO_OPEN "tunnelmesh.v1.open-result"
#define TM_SUBPROTO_BASE "tunnelmesh.v1"
/* The comma-separated offer for the local capabilities (cap bits), into
 * out; returns its length or TM_ESPACE. */
int tm_subproto_offer(unsigned caps, char *out, size_t cap);
/* Server: the offer header as received (comma/space separated, untrusted)
 * and the server's capabilities; returns the chosen name (a static
 * string) or NULL when nothing offered is acceptable (not even
 * tunnelmesh.v1: refuse the upgrade). */
const char *tm_subproto_select(const char *offer, size_t len, unsigned caps);
/* The capabilities a chosen name means (NULL or "" = legacy = 0); -1 for
 * a name never offered (the client refuses the connection). */
int tm_subproto_caps(const char *name);

/* ---- AGENT_METADATA / AGENT_METADATA_ACK (JSON, ≤ TM_METADATA_MAX) -----
 * agent → server: {"agent_id":"...","version":"...","capabilities":[...],
 *                  "max_streams":N}
 * server → agent: {"capabilities":[...]}   (the intersection, TM-PROTO-18)
 * Unknown fields and unknown capability names are ignored (TM-PROTO-19);
 * a missing "capabilities" is an old agent: 0. "max_streams" (optional,
 * 1..TM_METADATA_STREAMS_MAX, never in an ACK) is the streams the agent
 * takes at once on this connection: its capacity, the weight the server
 * gives the connection when it picks one for a new stream (TM-P2-27);
 * absent (an old agent), the server's own per-connection limit. */
#define TM_METADATA_STREAMS_MAX (1u << 20) /* tm_session's max_streams */
typedef struct tm_metadata {
  char agent_id[TM_AGENT_MAX + 1]; /* may be empty (ACK) */
  char version[33];
  unsigned caps;
  uint32_t max_streams; /* 0: not said (an old agent, an ACK) */
} tm_metadata;
int tm_metadata_encode(const tm_metadata *m, int ack, uint8_t *out,
                       size_t cap);
int tm_metadata_decode(const uint8_t *p, size_t len, tm_metadata *m);

#endif
