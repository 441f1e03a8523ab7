/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What tm_ws.c (the context and the transport), tm_ws_end.c (what both
 * ends do once connected: frames in and out, closing; the client's TLS
 * through memory BIOs), tm_ws_client.c (the client end), tm_ws_server.c
 * (the server end) and tm_ws_tls.c (re-reading the TLS files) share.
 * Private to those files: the only ones that include <libwebsockets.h>.
 */
#ifndef TM_WS_INT_H
#define TM_WS_INT_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include <libwebsockets.h>

#include "lib/ilist.h"
#include "tunnel_common/proto/tm_proto.h"
#include "tm_session_ws.h"
#include "tm_ws.h"
#include "tm_ws_url.h"
#include "tm_wsc.h"

#define TM_WS_MAX_CONN_DEFAULT 4096u
#define TM_WS_MAX_CONN_LIMIT 65536u
#define TM_WS_HS_TIMEOUT_DEFAULT 10000u
#define TM_WS_HS_TIMEOUT_MAX 300000u
#define TM_WS_BEARER_MAX 4096u /* within a request head's TM_WSC_REQ_MAX */
#define TM_WS_CLOSE_GRACE_S 5  /* a close frame that cannot be written */
#define TM_WS_RX_CHUNK 16384   /* a reassembly buffer kept while idle */
/* lws' per-thread read buffer: what one read of a raw socket takes at
 * most. */
#define TM_WS_READ_CHUNK 65536
/* The bytes one writable event writes, at most (then one more message
 * may still go); they go out in one send. */
#define TM_WS_BATCH_BYTES 131072u
/* Bytes received while reading is paused (the session's pause, or a
 * server's until tm_ws_conn_resume), kept until it resumes (lws may still
 * hand over what it had read, TLS what it had decrypted). */
#define TM_WS_PENDING_MAX (1024u * 1024u)
#define TM_WS_EVLIB_PLUGIN LWS_INSTALL_LIBDIR "/libwebsockets-evlib_ev.so"

enum conn_state { CS_CONNECTING = 0, CS_HANDSHAKE, CS_OPEN };

/* A host name being resolved for tm_ws_connect (see resolve_work). */
struct tm_ws_resolve {
  tm_ws_conn *c; /* NULL once the conn gave up (the job frees itself) */
  char host[TM_WS_HOST_MAX + 1];
  char addr[64];
  int ok;
};

/* A growable buffer (tmws_append). */
struct tmws_buf {
  uint8_t *p;
  size_t len, cap;
};

/* One end of a connection (tm_ws_end.c): RFC 6455 over a raw
 * libwebsockets connection. */
struct tm_ws_end {
  char *req; /* client: the upgrade request (LWS_PRE before it), wiped
              * once sent */
  size_t req_len;
  uint8_t *ans; /* the peer's head so far: the client's 101
                 * (TM_WSC_RESP_MAX), the server's request
                 * (TM_WSC_REQ_MAX); wiped (it may hold a token) */
  size_t ans_len;
  char key[TM_WSC_KEY_LEN + 1];
  tm_wsc_rx dec;
  size_t out_len; /* the batch's bytes in w->out (0 between events) */
  uint8_t pong[TM_WSC_CONTROL_MAX];
  size_t pong_len;
  int pong_due;
  struct tmws_buf pend; /* received while paused */
  uint16_t close_code; /* 0: we close first */
  uint8_t masks[256];  /* client: masking keys, refilled from RAND_bytes */
  size_t mask_at;
  SSL *ssl;            /* client, wss: TLS over memory BIOs (tm_ws_end.c) */
  BIO *rbio, *wbio;    /* owned by ssl */
};

struct tm_ws_conn {
  tm_ws *w;
  struct lws *wsi; /* NULL once lws forgot it (then it is finishing) */
  tm_session *s;   /* where messages go; NULL: dropped */
  void *user;
  int client;
  int state;         /* conn_state */
  int counted;       /* server: upgraded, counted in n_server_conns */
  int accept_paused; /* server: until tm_ws_conn_resume */
  int user_paused;   /* the session's pause_read */
  int close_pending; /* tm_ws_conn_close / the session's close */
  /* Inside our writable callback, the session's writer runs again while
   * it wants to (want_write) and there is room: several frames per
   * event, in the writer's order (TM_WS_BATCH_BYTES a turn). */
  int in_writable;
  int want_write;
  size_t turn_bytes; /* written in this turn */
  int close_status;
  char close_reason[32];
  int deferred_error;            /* client: failed inside tm_ws_connect */
  int in_connect;                /* inside lws_client_connect_via_info */
  struct tm_ws_resolve *resolve; /* client: the name being resolved */
  int64_t job;
  int rx_text; /* the message being received is text */
  struct tmws_buf rx; /* reassembly, up to w->cfg.max_message bytes */
  char *bearer; /* client: the token to send; server: captured */
  size_t bearer_len;
  const char *subproto; /* static (tm_proto.h names) or NULL */
  char peer[64];
  tm_ws_url url; /* client */
  char offer[192];
  char hosthdr[TM_WS_HOST_MAX + 16];
  struct tm_ws_end ce;
  ilist_node link; /* on w->conns */
};

struct tm_ws {
  const ph_api *api;
  ph_ctx *ctx;
  struct lws_context *lws;
  struct lws_vhost *vh_server, *vh_client;
  tm_ws_cfg cfg;
  char *listen, *cert_file, *key_file, *ca_file, *path;
  /* client: its certificate and key (mutual TLS), re-read by
   * tm_ws_reload_tls */
  char *client_cert_file, *client_key_file;
  tm_ws_handlers h;
  void *arg;
  int port;
  struct lws_protocols srv_protocols[2];
  struct lws_protocols cli_protocols[2];
  /* server: the names its caps allow (tm_proto.h), NULL-terminated */
  const char *srv_names[6];
  ilist conns;
  uint32_t n_server_conns;
  ph_timer *deferred;  /* reports on_connect_error from the loop */
  SSL_CTX *client_tls; /* ours: lws 4.1 leaks the ones it makes */
  SSL_CTX *srv_tls;    /* the server vhost's (lws owns it): tm_ws_tls.c */
  tm_ws *next_live;    /* lws' log sink (process-wide) */
  /* Shared by every conn (tm_ws_end.c), since each is used only within
   * one callback (the loop runs one at a time): the batch of frames a
   * writable event sends (LWS_PRE before it), and the plaintext TLS
   * gives a read. A server's 4096 connections must not hold 200 KiB
   * each. */
  uint8_t *out;
  size_t out_cap;
  uint8_t *plain; /* TM_WS_READ_CHUNK */
  int freeing;         /* tm_ws_free runs: no new connection */
};

/* tm_ws.c */
void tmws_wipe(void *p, size_t n);
tm_ws_conn *tmws_conn_new(tm_ws *w, int client);
void tmws_conn_free(tm_ws_conn *c);
void tmws_conn_drop_bearer(tm_ws_conn *c);
/* The conn ends (on_closed or on_connect_error), then it is freed. */
void tmws_finish(tm_ws_conn *c);
void tmws_set_close(tm_ws_conn *c, int status, const char *reason);
/* Appends len bytes to b, growing it up to limit bytes; -1 with the close
 * set (status and reason when over limit) when it does not fit. */
int tmws_append(tm_ws_conn *c, struct tmws_buf *b, const void *in,
                size_t len, size_t limit, int status, const char *reason);
/* Appends len bytes to the reassembly buffer (frame_left: the bytes of
 * their frame still to come, so that a message's first piece reserves
 * its frame whole) (bounded by max_message);
 * -1 with the close set when it would not fit or memory ran out. */
int tmws_rx_append(tm_ws_conn *c, const void *in, size_t len,
                   size_t frame_left);
/* Hands a whole message to the bound session, then drops a large
 * reassembly buffer. */
void tmws_deliver(tm_ws_conn *c, const uint8_t *msg, size_t len);

/* tm_ws_end.c: both ends once the socket is up. */
/* Sends n plaintext bytes (through TLS when the end has it). */
int tmws_wire_send(tm_ws_conn *c, uint8_t *p, size_t n);
/* What TLS has to send, sent. */
int tmws_wire_flush(tm_ws_conn *c);
/* What lws read: decrypted when TLS (its handshake first: on_secure runs
 * once it completes), then given to plain (0, or -1: close now). */
int tmws_wire_rx(tm_ws_conn *c, uint8_t *in, size_t len,
                 int (*on_secure)(tm_ws_conn *c),
                 int (*plain)(tm_ws_conn *c, uint8_t *in, size_t len));
/* Either end's RAW_RX event (c: the wsi's connection, NULL when it has
 * none): tmws_wire_rx, and what the lws callback returns: -1 without a
 * connection, tmws_end_close_now's -1 when the bytes failed, else 0. */
int tmws_wire_on_rx(tm_ws_conn *c, void *in, size_t len,
                    int (*on_secure)(tm_ws_conn *c),
                    int (*plain)(tm_ws_conn *c, uint8_t *in, size_t len));
/* TLS over memory BIOs with ctx (the client end): 0, or -1. */
int tmws_tls_start(tm_ws_conn *c, SSL_CTX *ctx, int server);
/* The writable event (CS_OPEN): the session's frames, batched. */
int tmws_end_writable(tm_ws_conn *c);
/* Received bytes once open: frames to the session, or kept while paused.
 * 0, or -1 with the close set (close now). */
int tmws_end_rx(tm_ws_conn *c, uint8_t *in, size_t len);
/* Keeps bytes for later (read while paused). */
int tmws_end_keep(tm_ws_conn *c, const uint8_t *in, size_t len);
/* Inside a callback of c's wsi: the close frame (ours, or the echo of the
 * peer's) when open, then -1 so that lws closes the socket. */
int tmws_end_close_now(tm_ws_conn *c);
void tmws_end_want_write(tm_ws_conn *c);
int tmws_end_write(tm_ws_conn *c, const uint8_t *buf, size_t len);
/* Reading resumed: what was kept is handed over from the loop
 * (tmws_end_deferred). */
void tmws_end_resumed(tm_ws_conn *c);
void tmws_end_deferred(tm_ws_conn *c);
/* The peer's head (the client reads the 101, the server the upgrade
 * request): len bytes of in appended to e->ans, up to max in all (the
 * scanner refuses a head that does not fit). *before gets the bytes held
 * before this read. 0, or -1 when out of memory. */
int tmws_head_take(tm_ws_conn *c, const uint8_t *in, size_t len, size_t max,
                   size_t *before);
/* The head is done with: wiped (it may hold a token) and freed. */
void tmws_head_drop(tm_ws_conn *c);
/* Best effort at tm_ws_free: a close frame written now. */
void tmws_end_goodbye(tm_ws_conn *c);
void tmws_end_free(tm_ws_conn *c);

/* tm_ws_client.c */
int tmws_cli_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user,
                void *in, size_t len);

/* tm_ws_server.c */
int tmws_srv_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user,
                void *in, size_t len);


#endif
