/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cp_grpc: the one place proxyhost calls gRPC core's C API (1.51). The
 * control-plane modules (controlplane_server, controlplane_client, the
 * checker) talk gRPC only through this header, so that a change of the
 * core API (grpc.h calls core "a low-level library designed to be
 * wrapped") is fixed here once and pinned by t/unit/cp/test_cp_grpc.c.
 *
 * Messages are opaque bytes here (the caller packs and unpacks them with
 * protobuf-c); a method is its path, "/controlplane.v1.WorkerControlPlane/
 * RegisterWorker", and its kind, declared by hand (protoc-c has no
 * streaming flags).
 *
 * Threads: every function is loop-thread-only. Every callback runs on the
 * loop thread, and never from inside the cp_grpc call that started it:
 * they all come from completion-queue events, which a host thread
 * (api->thread_start) collects with grpc_completion_queue_next and hands
 * to the loop with api->thread_post; the state machines run on the loop.
 *
 * Objects: a cp_grpc_cq (one per module using gRPC: its completion queue
 * and its thread) carries servers and channels; a server carries server
 * calls, a channel client calls. Everything a function returns is owned
 * by the layer and documented with its end of life below.
 *
 * Return values: PH_OK (0) or a negative ph_status (<proxyhost/abi.h>):
 * PH_EINVAL (a bad argument, or the wrong kind of call), PH_EBUSY (one
 * operation of that sort is already in flight), PH_ESTATE (the call has
 * ended: finished, cancelled or its cq is closing), PH_ENOMEM.
 */
#ifndef CP_GRPC_H
#define CP_GRPC_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/module.h>

#include "contracts/cp_status.h"

/* Status codes: CP_GRPC_OK ... CP_GRPC_UNAUTHENTICATED (cp_status.h, the
 * wire's numbers). */

/* The kinds a method may have (bidirectional streams are not used by the
 * control plane and not offered). */
typedef enum cp_rpc_kind {
  CP_RPC_UNARY = 1,
  CP_RPC_SERVER_STREAM, /* one request, a stream of responses */
  CP_RPC_CLIENT_STREAM  /* a stream of requests, one response */
} cp_rpc_kind;

/* Bounds of the layer itself. */
#define CP_GRPC_PATH_MAX 128       /* a method path, NUL excluded */
#define CP_GRPC_PEER_ID_MAX 2048   /* a peer's URI SAN */
#define CP_GRPC_STATUS_MSG_MAX 256 /* a status message, cut beyond */
#define CP_GRPC_PEM_MAX (1 << 20)  /* a certificate, key or CA file */

/* ---- the completion queue and its thread --------------------------- */

typedef struct cp_grpc_cq cp_grpc_cq;

/* Init or start only (api->thread_start's rule), loop thread. Takes one
 * reference on gRPC core (grpc_init: gRPC counts them itself, so several
 * modules of one process, a controller and a gateway in one test, each
 * hold their own), creates a completion queue and the host thread
 * "ph-<module>-<thread_name>" polling it. The thread moves each event to
 * the cq's own list (bounded by the operations in flight: a tag is in it
 * at most once) and wakes the loop with one api->thread_post while the
 * list is non-empty, so the host's queue never holds more than one post.
 * NULL and *err (a static sentence) on failure. */
cp_grpc_cq *cp_grpc_cq_new(ph_ctx *ctx, const ph_api *api,
                           const char *thread_name, const char **err);

/* Loop thread, typically from the module's stop. Ends everything still on
 * cq without another user callback: servers are shut down and their calls
 * cancelled, channels closed and their calls cancelled; then the queue is
 * shut down and drained, the thread joined (api->thread_join), and the
 * gRPC reference dropped. Every cp_grpc_server, cp_grpc_channel and call
 * of cq is invalid afterwards. Returns when all that is done (bounded by
 * gRPC's own cancellation, not by peers; after 10 s it logs "grpc
 * completion queue did not drain" and leaves the rest, leaked, rather
 * than free what gRPC still uses). Never from inside a cp_grpc callback.
 * NULL is ignored. */
void cp_grpc_cq_free(cp_grpc_cq *cq);

/* ---- TLS and limits ------------------------------------------------- */

typedef enum cp_tls_mode { CP_TLS_MTLS = 1, CP_TLS_DISABLED } cp_tls_mode;

/* PEM file paths, read when the server or channel is made (the key is
 * wiped from memory once gRPC has copied it). */
typedef struct cp_grpc_tls {
  cp_tls_mode mode;
  const char *cert_file; /* this side's certificate (chain); a client
                            without one (NULL or "", tests only: the
                            configuration check requires it) offers none */
  const char *key_file;  /* its private key */
  const char *ca_file;   /* the CA the peer's certificate must chain to */
  const char *server_name; /* client only: name checked in the server's
                              certificate instead of the address' host;
                              NULL or "" for the host */
} cp_grpc_tls;

typedef struct cp_grpc_server_cfg {
  const char *listen; /* "host:port", port 0 picks one (tests) */
  cp_grpc_tls tls;
  int64_t max_recv_bytes;     /* per message; over it: RESOURCE_EXHAUSTED */
  int64_t max_send_bytes;     /* per message */
  int64_t max_streams;        /* concurrent streams per connection (HTTP/2) */
  int64_t max_calls;          /* calls at once in the whole server */
  int64_t keepalive_time_ms;  /* server pings an idle connection */
  int64_t keepalive_timeout_ms;
  int64_t min_ping_interval_ms; /* faster client pings: GOAWAY too_many_pings */
  int64_t max_connection_age_ms; /* then GOAWAY: bounds a stream's life */
  int64_t max_connection_age_grace_ms; /* then the streams are cut */
  /* A connection's TLS handshake and the client's HTTP/2 settings within
   * this, else gRPC closes it (0: gRPC's default, 120 s). */
  int64_t handshake_timeout_ms;
  /* > 0: the server's address is a front (cp_grpc_front.h) that keeps at
   * most this many connections that carried no call yet, each for at
   * most handshake_timeout_ms; 0: gRPC listens on it itself. */
  int64_t max_unauthenticated;
  ph_series *m_unauthenticated;                   /* gauge, or NULL */
  ph_series *m_dropped_limit, *m_dropped_timeout; /* counters, or NULL */
} cp_grpc_server_cfg;

typedef struct cp_grpc_client_cfg {
  const char *address; /* "host:port" of the controller (CP-9-2) */
  cp_grpc_tls tls;
  int64_t max_recv_bytes;
  int64_t max_send_bytes;
  int64_t keepalive_time_ms; /* >= the server's min_ping_interval */
  int64_t keepalive_timeout_ms;
  /* The channel's own reconnect backoff between connection attempts
   * (GRPC_ARG_{INITIAL,MIN,MAX}_RECONNECT_BACKOFF_MS); 0: gRPC's (1 s
   * x 1.6 up to 120 s). Set to the caller's session backoff, or a
   * controller that is back waits for gRPC's next attempt (issue 23
   * item 3). */
  int64_t reconnect_min_ms, reconnect_max_ms;
  /* NULL, or called on the loop thread each time the channel's
   * connectivity state becomes READY (its first connection included):
   * a caller waiting out its own backoff can retry at once instead of
   * adding a second backoff to the channel's (issue 23 item 3). Never
   * after cp_grpc_channel_free or cp_grpc_channel_retire, nor while the
   * cq closes. The watch (grpc_channel_watch_connectivity_state on the
   * cq) asks for no connection itself: the channel connects for calls. */
  void (*on_ready)(void *arg);
  void *on_ready_arg;
} cp_grpc_client_cfg;

/* ---- server --------------------------------------------------------- */

typedef struct cp_grpc_server cp_grpc_server;
typedef struct cp_grpc_call cp_grpc_call; /* a server-side call */

/* A new call on a registered method. req/len: the request (unary and
 * server-streaming; valid during this callback only), NULL/0 for a
 * client-streaming call (read it with cp_grpc_call_recv). The handler owns
 * the call until it calls cp_grpc_call_finish or its cancel callback
 * (cp_grpc_call_on_cancel) has run; the layer frees it after that. */
typedef void (*cp_grpc_handler_fn)(void *arg, cp_grpc_call *call,
                                   const uint8_t *req, size_t len);

typedef struct cp_grpc_method {
  const char *path; /* "/controlplane.v1.WorkerControlPlane/RegisterWorker" */
  cp_rpc_kind kind;
  cp_grpc_handler_fn fn;
  void *arg;
} cp_grpc_method;

/* Loop thread. Binds cfg->listen with cfg's credentials and limits and
 * starts serving methods[0..n-1] (paths and the array are copied; arg
 * stays the caller's); any other path is answered UNIMPLEMENTED. TLS mode
 * mtls requires and verifies a client certificate chaining to ca_file
 * (GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY; TLS 1.2 is
 * the minimum gRPC 1.51's C API allows, docs/operations/
 * control-plane-transport.md). With cfg->max_unauthenticated > 0,
 * cfg->listen is a front (cp_grpc_front.h) relaying to gRPC on 127.0.0.1.
 * NULL with err (never a key or file content) on failure. */
cp_grpc_server *cp_grpc_server_new(cp_grpc_cq *cq,
                                   const cp_grpc_server_cfg *cfg,
                                   const cp_grpc_method *methods, size_t n,
                                   char *err, size_t errlen);

/* Loop thread. Re-reads tls's files (the same keys as at
 * cp_grpc_server_new; issue 23 item 14): checked here (they parse, the
 * key matches the certificate), then taken by gRPC at the next
 * connection's handshake; connections already made keep theirs. PH_OK
 * (plaintext: nothing to do), or PH_EINVAL with err (naming the key,
 * never a file's content) and the files in use stay. */
int cp_grpc_server_reload_tls(cp_grpc_server *s, const cp_grpc_tls *tls,
                              char *err, size_t errlen);

/* The port bound (the one picked when listen asked for 0). */
int cp_grpc_server_port(const cp_grpc_server *s);

/* Loop thread. Stops accepting, cancels every call in flight (their cancel
 * callbacks run, later, on the loop), and once gRPC reports the shutdown
 * and the last call is released, destroys the server and calls done(arg)
 * on the loop. s is invalid once done ran. done may be NULL. */
void cp_grpc_server_shutdown(cp_grpc_server *s, void (*done)(void *arg),
                             void *arg);

/* The call's method path, kind and deadline (Unix ms, INT64_MAX for none);
 * valid while the handler owns the call. */
const char *cp_grpc_call_method(const cp_grpc_call *c);
cp_rpc_kind cp_grpc_call_kind(const cp_grpc_call *c);
int64_t cp_grpc_call_deadline_ms(const cp_grpc_call *c);
/* The peer certificate's SPIFFE id (its single spiffe:// URI SAN, gRPC's
 * peer_spiffe_id) when the transport is TLS; NULL for plaintext or a
 * certificate without exactly one. Check it with cp_spiffe_check. */
const char *cp_grpc_call_peer_id(const cp_grpc_call *c);

/* The peer went away, cancelled, or the deadline passed (or the server
 * shut down) before the handler finished: runs once, and the call is gone
 * when it returns. Never runs after cp_grpc_call_finish. */
typedef void (*cp_grpc_cancel_fn)(void *arg, cp_grpc_call *call);
void cp_grpc_call_on_cancel(cp_grpc_call *c, cp_grpc_cancel_fn fn, void *arg);

/* Client-streaming calls: asks for the next request message; fn gets it
 * (msg valid during fn only), or msg NULL when the client half-closed.
 * One receive in flight (PH_EBUSY otherwise). A message over
 * max_recv_bytes cancels the call with RESOURCE_EXHAUSTED (cancel
 * callback). */
typedef void (*cp_grpc_recv_fn)(void *arg, cp_grpc_call *call,
                                const uint8_t *msg, size_t len);
int cp_grpc_call_recv(cp_grpc_call *c, cp_grpc_recv_fn fn, void *arg);

/* Server-streaming calls: sends one response message (copied); fn(arg,
 * call) runs when gRPC has taken it, and only then may the next be sent
 * (PH_EBUSY otherwise): the caller paces the stream. A peer gone before
 * that: no fn, the cancel callback instead. fn may be NULL. */
typedef void (*cp_grpc_sent_fn)(void *arg, cp_grpc_call *call);
int cp_grpc_call_send(cp_grpc_call *c, const uint8_t *msg, size_t len,
                      cp_grpc_sent_fn fn, void *arg);

/* Ends the call with status and msg (a short fixed sentence: never data,
 * identifiers or secrets; cut at CP_GRPC_STATUS_MSG_MAX; NULL for none)
 * and, for unary and client-streaming calls with CP_GRPC_OK, the response
 * resp/len (copied; required then). A server-streaming call waits for its
 * send in flight first. The handler no longer owns the call: no callback
 * comes after this. PH_ESTATE when the call was cancelled already (its
 * cancel callback is then on its way, or has run). */
int cp_grpc_call_finish(cp_grpc_call *c, int status, const char *msg,
                        const uint8_t *resp, size_t len);

/* ---- client --------------------------------------------------------- */

typedef struct cp_grpc_channel cp_grpc_channel;
typedef struct cp_grpc_ccall cp_grpc_ccall; /* a client-side call */

/* Loop thread. A channel to cfg->address (plaintext only to a loopback
 * address, as cp_grpc_conf_check_client refuses otherwise; checked again
 * here), with a connection of its own (never shared with another
 * channel). gRPC connects lazily, at the first call, and reconnects by
 * itself. A call beyond the server's max_concurrent_streams waits for a
 * slot (its deadline still runs). NULL with err. */
cp_grpc_channel *cp_grpc_channel_new(cp_grpc_cq *cq,
                                     const cp_grpc_client_cfg *cfg,
                                     char *err, size_t errlen);

/* Loop thread. Cancels every call of ch without another callback and
 * closes the channel. NULL is ignored. */
void cp_grpc_channel_free(cp_grpc_channel *ch);
/* Loop thread. No new call on ch (cp_grpc_ccall_start: NULL); the calls
 * it carries go on, with their callbacks, and ch is closed once the last
 * one ended (at once when it has none). For a channel replaced by one
 * with renewed credentials (issue 23 item 14): the stream open on the
 * old connection stays. ch is invalid for the caller afterwards; NULL
 * is ignored; cp_grpc_cq_free still ends it as any channel. */
void cp_grpc_channel_retire(cp_grpc_channel *ch);

typedef struct cp_grpc_ccall_cbs {
  /* A response message (msg valid during the call): the only one of a
   * unary or client-streaming call, each of a server stream in order; the
   * next is read only after this returns (one at a time). */
  void (*on_message)(void *arg, cp_grpc_ccall *call, const uint8_t *msg,
                     size_t len);
  /* Client-streaming: the message given to cp_grpc_ccall_send was taken;
   * the next may be sent. May be NULL. */
  void (*on_sent)(void *arg, cp_grpc_ccall *call);
  /* The end, once, after every on_message: the status and its message
   * (valid during the call; "" for none). The call is freed when this
   * returns. */
  void (*on_done)(void *arg, cp_grpc_ccall *call, int status,
                  const char *msg);
  /* Instead of on_done, once, for a call cut without its callbacks: its
   * channel freed (cp_grpc_channel_free) or its queue closing
   * (cp_grpc_cq_free, a module's stop). Only for freeing what arg owns:
   * its owner may be gone. May be NULL. */
  void (*on_drop)(void *arg);
} cp_grpc_ccall_cbs;

/* Loop thread. Starts a call of kind on path with a deadline timeout_ms
 * from now (<= 0: none). req/len: the request of a unary or
 * server-streaming call (copied), NULL for client-streaming. cbs is
 * copied, arg stays the caller's. NULL only on a bad argument or no
 * memory; every failure after that arrives through on_done. */
cp_grpc_ccall *cp_grpc_ccall_start(cp_grpc_channel *ch, const char *path,
                                   cp_rpc_kind kind, int64_t timeout_ms,
                                   const uint8_t *req, size_t len,
                                   const cp_grpc_ccall_cbs *cbs, void *arg);

/* Client-streaming: sends one message (copied); one in flight (PH_EBUSY)
 * until on_sent. */
int cp_grpc_ccall_send(cp_grpc_ccall *call, const uint8_t *msg, size_t len);
/* Client-streaming: no more messages (after the last on_sent; PH_EBUSY
 * while a send is in flight); the response and on_done follow. */
int cp_grpc_ccall_close_send(cp_grpc_ccall *call);
/* Cancels the call: on_done follows later with CP_GRPC_CANCELLED (or the
 * status that arrived first). Never calls back from inside. */
void cp_grpc_ccall_cancel(cp_grpc_ccall *call);

/* ---- pure helpers (no gRPC; cp_ident.c) ----------------------------- */

/* 1 when addr ("host:port", "[v6]:port") names a loopback IP address
 * literal: 127.0.0.0/8 or ::1. Names, "localhost" included, are not
 * loopback here (a resolver could say otherwise), nor is a missing or bad
 * port, the unspecified address or anything malformed: 0. */
int cp_addr_is_loopback(const char *addr);

/* 1 when uri is exactly spiffe://<trust_domain>/<environment>/<role>/<id>
 * (role "worker" or "checker"): byte for byte, case-sensitive, no extra or
 * empty segment, no trailing slash, no percent-encoding, no NUL or control
 * byte, each part non-empty; else 0. uri_len is uri's length (a NUL
 * inside refuses). The expected parts must themselves be non-empty and
 * free of '/', '%' and bytes outside printable ASCII, else 0. */
int cp_spiffe_check(const char *uri, size_t uri_len, const char *trust_domain,
                    const char *environment, const char *role,
                    const char *id);

/* The id of uri when it is exactly spiffe://<trust_domain>/<environment>/
 * <role>/<id>, by the same rule as cp_spiffe_check: 0 with the id in out
 * (NUL-terminated, 1..outlen-1 bytes), for a controller that takes the
 * worker id from the certificate; -1 (out "") otherwise, an id that does
 * not fit included. */
int cp_spiffe_id(const char *uri, size_t uri_len, const char *trust_domain,
                 const char *environment, const char *role, char *out,
                 size_t outlen);

#endif
