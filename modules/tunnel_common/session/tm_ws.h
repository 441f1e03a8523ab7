/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libwebsockets on the host's libev loop, for the three tunnel roles: one
 * lws context per module instance (a server vhost, client connections,
 * or both), whole binary messages in and out, TLS, the subprotocol offer
 * and choice, and the bearer token in a header. Its implementation
 * (tm_ws.c; tm_ws_server.c and tm_ws_client.c, each end's handshake;
 * tm_ws_end.c, both ends once connected: our RFC 6455, tm_wsc.h, on
 * libwebsockets raw connections, TLS through OpenSSL memory BIOs) is the
 * only code that includes <libwebsockets.h>; a tm_ws_conn is a
 * tm_transport for a tm_session.
 *
 * Server: listens on cfg->listen; with cert and key it speaks wss (TLS
 * 1.2+), without them plain ws, refused at tm_ws_new unless the address
 * is loopback or allow_plain is set. It has exactly the subprotocol
 * names its caps allow (tm_proto.h) and picks the first the client
 * offered among them (TM-PROTO-15); legacy_no_subprotocol makes it
 * answer with none at all, as an old server does. The Authorization
 * header (Bearer <token>) is captured at the handshake and handed to
 * on_accept with the chosen name; the token never appears in a URL, a log
 * line or an error sent back. Messages above max_message close the
 * connection (1009); a client's unmasked frame closes it with 1002 (RFC
 * 6455 section 5.1, issue 22 item 6) and ends its session as a protocol
 * error.
 *
 * Client: connects to a ws:// or wss:// URL (wss verifies the server's
 * certificate and name, an IPv4 literal as an IP address, against
 * ca_file, or the system store when empty;
 * ws:// to a non-loopback host is refused unless allow_plain), sending
 * the offer for its caps in Sec-WebSocket-Protocol and the token in
 * Authorization. on_connected reports the server's choice (NULL: none,
 * which is legacy: TM-PROTO-16). Never decides capabilities from a
 * timeout (TM-PROTO-17).
 *
 * Threads: loop thread only. The handlers run from the loop, never from
 * inside a tm_ws_* call, except tm_ws_free (on_closed, on_connect_error
 * for each conn); no handler may call tm_ws_free (tm-ws, issue 11).
 */
#ifndef TM_WS_H
#define TM_WS_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/host.h>

#include "tm_session.h"

typedef struct tm_ws tm_ws;
typedef struct tm_ws_conn tm_ws_conn;

typedef struct tm_ws_handlers {
  /* Server: a WebSocket was accepted. bearer: the token from the
   * Authorization header (len bytes, not NUL-terminated; len 0: none),
   * valid only during the call; subproto: the name chosen (NULL: none).
   * peer: the remote address text (for logs). Return 0 to keep the
   * connection (reading stays paused until tm_ws_conn_resume), -1 to
   * close it. */
  int (*on_accept)(void *arg, tm_ws_conn *c, const char *bearer, size_t len,
                   const char *subproto, const char *peer);
  /* Client: the handshake completed; subproto as the server chose. */
  void (*on_connected)(void *arg, tm_ws_conn *c, const char *subproto);
  /* Client: the connection attempt failed (the conn is gone after). */
  void (*on_connect_error)(void *arg, tm_ws_conn *c);
  /* Both: an established connection ended (the conn is gone after).
   * The session bound to it (tm_ws_conn_bind) got
   * tm_session_on_transport_closed just before (tm-ws, issue 11). */
  void (*on_closed)(void *arg, tm_ws_conn *c);
} tm_ws_handlers;

typedef struct tm_ws_cfg {
  const char *listen;     /* server: "host:port"; NULL: client only */
  const char *cert_file;  /* server TLS; NULL: plain ws */
  const char *key_file;
  const char *ca_file;    /* client: CA to verify the server; NULL: system */
  int allow_plain;        /* plain ws off loopback */
  int legacy_no_subprotocol; /* server: answer with no subprotocol */
  unsigned caps;          /* the capabilities this side will negotiate */
  uint32_t max_message;   /* TM_HEADER_LEN + max payload */
  const char *path;       /* server: the upgrade path, "/tunnel" */
  /* Added by tm-ws (issue 11), appended so existing initialisers hold:
   * server: connections at once (handshaking or open; 0: 4096, at most
   * 65536), the rest answered 503; both: the handshake deadline (0:
   * 10000 ms; whole seconds, at least 1 s, at most 300 s). */
  uint32_t max_connections;
  uint32_t handshake_timeout_ms;
  /* Mutual TLS (the relay between servers, issue 27), appended too:
   * server with cert_file: ask every client for a certificate and refuse
   * the handshake unless it verifies against ca_file (required then);
   * client: present this certificate chain and key (both or neither). */
  int require_client_cert;
  const char *client_cert_file;
  const char *client_key_file;
} tm_ws_cfg;

/* A context on api's loop. NULL with *err set to a static sentence (a bad
 * address, plain ws refused, a certificate that does not load). The bound
 * port is tm_ws_port (listen port 0 picks one). */
tm_ws *tm_ws_new(const ph_api *api, ph_ctx *ctx, const tm_ws_cfg *cfg,
                 const tm_ws_handlers *h, void *arg, const char **err);
int tm_ws_port(const tm_ws *w);
/* Closes every connection (their on_closed run) and the context. */
void tm_ws_free(tm_ws *w);

/* Re-reads the TLS files given to tm_ws_new (issue 23 item 14): the
 * server's certificate chain and key when it serves wss, the CA file
 * when one was given (the client's, and the server's under
 * require_client_cert), the client's certificate and key when given
 * (issue 27). Every file is checked before any is put in place. Later
 * handshakes use them; established connections keep what they negotiated. A
 * pair that does not load or match, or a CA file that does not load: -1 with
 * *err (a static sentence naming the key, never a file's content), and what was
 * in use stays. 0 otherwise (also when there is nothing to re-read). */
int tm_ws_reload_tls(tm_ws *w, const char **err);
/* 1 when tm_ws_reload_tls has files to re-read. */
int tm_ws_has_tls_files(const tm_ws *w);

/* Client: starts a connection to url with the bearer token (copied, then
 * wiped). NULL: a malformed URL or plain ws refused (*err says which).
 * Every other failure comes later, from the loop, as on_connect_error
 * (never inside this call). Each conn ends with exactly one of
 * on_connect_error (never established, including one closed while
 * connecting) and on_closed (established). */
tm_ws_conn *tm_ws_connect(tm_ws *w, const char *url, const char *bearer,
                          const char **err);

/* The peer's certificate's URI subject alternative names (a server's
 * client under require_client_cert, or the server a wss client
 * connected to): the part after prefix of the one URI that starts with
 * it, NUL-terminated in out. 0: exactly one such URI, its rest non-empty
 * and fitting in cap; -1 otherwise (no TLS, no certificate, none or
 * several such URIs). Valid from on_accept / on_connected on. */
int tm_ws_conn_peer_uri(const tm_ws_conn *c, const char *prefix, char *out,
                        size_t cap);

/* The transport for tm_session_new, with c as its argument. */
const tm_transport *tm_ws_transport(void);
/* Where the connection's messages and writable events go: a session (or
 * NULL to drop messages, as while authenticating). */
void tm_ws_conn_bind(tm_ws_conn *c, tm_session *s);
/* The role's pointer on a connection. */
void tm_ws_conn_set_user(tm_ws_conn *c, void *user);
void *tm_ws_conn_user(const tm_ws_conn *c);
/* Resume reading after on_accept (the session is bound by then). */
void tm_ws_conn_resume(tm_ws_conn *c);
/* Close with a WebSocket status (1000 normal, 1008 policy, 4401
 * unauthorized) and a short fixed reason. */
void tm_ws_conn_close(tm_ws_conn *c, int status, const char *reason);

/* A close status in words, for the log ("unauthorized" for 4401,
 * "credentials_ended" for 4403, RFC 6455's names for 1000..1015; "other"
 * for the rest). Static strings. */
static inline const char *tm_ws_close_name(int code) {
  switch (code) {
  case 1000: return "normal";
  case 1001: return "going_away";
  case 1002: return "protocol_error";
  case 1003: return "unsupported_data";
  case 1005: return "no_status";
  case 1006: return "abnormal";
  case 1007: return "invalid_data";
  case 1008: return "policy_violation";
  case 1009: return "message_too_big";
  case 1011: return "internal_error";
  case 1012: return "service_restart";
  case 1013: return "try_again_later";
  case 4401: return "unauthorized";
  case 4403: return "credentials_ended";
  }
  return "other";
}

#endif
