/* SPDX-License-Identifier: BSD-2-Clause */
/* http_proxy: what the module's files share (private; not part of the SDK).
 *
 * One client connection (conn) is a small state machine on the loop thread:
 *   HEAD -> [AUTH] -> [OPEN] -> EXCHANGE -> HEAD ...   (forwarding)
 *   HEAD -> [AUTH] -> OPEN -> REPLY(200) -> TUNNEL      (CONNECT)
 *   any -> REPLY(error) -> LINGER -> closed
 *
 * One dispatcher, phases that return what comes next. http_conn.c is the
 * only file that acts: every event reaches it (the client's watcher and
 * the timer through the session skeleton, the upstream's watcher or
 * stream, the check's, the open's and the relay's answers), it calls the
 * phase function for the event, and runs the loop hp_conn_run: each
 * phase function computes and returns an enum hp_next, and the
 * dispatcher calls the phase that does it, until HP_WAIT (ask the loop
 * for the events the state needs) or HP_CLOSE. The phase files never
 * call the dispatcher, nor each other in a cycle: they call only the leaf
 * helpers (http_state.c, http_iobuf.c, the head and body codecs, the
 * skeleton) and return. A phase that wants a reply of our own returns
 * hp_want_reply(c, status, after); one that ends the request returns
 * HP_CLOSE. Nothing but the dispatcher closes a connection.
 *
 * Freeing (guard.h, through modules/frontend/frontend_session.h): every
 * entry runs between frontend_session_enter and frontend_session_leave;
 * closing releases everything at once (hp_conn_end for what only
 * http_proxy holds: the upstream, the buffers, the credentials) and marks
 * the conn dead; its memory is freed by the outermost leave. The
 * dispatcher's loop stops at a dead conn, so a callee's close never
 * frees a conn under its caller.
 *
 * Leases (connector.h): a connector's lease comes with the upstream and
 * lives in hp_upstream beside it. Its first_byte is told once, when the
 * first byte of a response head written to the client came from that
 * upstream (hp_up_first_byte); it ends exactly once, when the upstream
 * is closed (hp_close_upstream, with how), not per request: CLOSED for a
 * connection closed after complete responses (an idle kept one whatever
 * closed it), else conn.up_how, which the phases set when they decide to
 * close (TARGET_ERROR for a response cut short or unreadable, TIMEOUT
 * for the idle timeout in an exchange, CLIENT_ERROR otherwise: our side
 * failed or went away). A CONNECT hands it to the relay with the
 * upstream (frontend_session_relay).
 *
 * An upstream HTTP proxy (open_http_forward.h: forwarding is asked for
 * every forwarded request, never for CONNECT; the pool's `http`
 * upstreams answer it): the request head goes in
 * absolute form with the Proxy-Authorization the connector gave (made
 * from the origin-form head per attempt, hp_head_write_absolute), a kept
 * connection is reused per target host:port as always, and a 407 from
 * it is about the connector's credentials, never the client's: the
 * client gets 502 and the lease ends TARGET_ERROR.
 *
 * Bodies (http_body.h): the proxy never forwards framing it received.
 * A request or response body is decoded in its buffer, in place (the
 * payload moves down over the framing), and framed again for the peer:
 * Content-Length as it was, chunked as new chunks (HTTP/1.1 peers), or
 * closing the connection (a response to an HTTP/1.0 client).
 *
 * The files, one job each:
 *   http_proxy.c    module descriptor, configuration, lifecycle, accept glue
 *   http_conn.c     the dispatcher: events in, hp_conn_run, watchers
 *   http_request.c  phase: waiting for a request head, parsing it, the
 *                   head and body framing for upstream
 *   http_auth.c     phase: Proxy-Authorization through the authorizer
 *   http_open.c     phase: reusing the kept upstream or opening one
 *   http_tunnel.c   phase: CONNECT, handing both ends over to the relay
 *   http_forward.c  phase: absolute-form forwarding, request up, response
 *                   down
 *   http_reply.c    phase: replies of our own (errors, 407, CONNECT's 200)
 *                   and what comes once one is out
 *   http_state.c    leaf helpers: timer kinds, the upstream's release,
 *                   counting and logging a request, wiping secrets
 *   http_iobuf.c    leaf: the connection buffers, socket reads and writes
 *   http_head.c     HTTP/1.x head parsing and rewriting (hp_head_)
 *   http_body.c     strict body framing: decoding and encoding (hp_body_)
 *
 * Every extern of the module is hp_-prefixed, but for the two codecs'
 * hp_head_ and hp_body_ (their files' prefixes, shared with their tests); the
 * module's .so exports only proxyhost_module.
 */
#ifndef PH_HTTP_PROXY_INT_H
#define PH_HTTP_PROXY_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <proxyhost/authorizer.h>
#include <proxyhost/connector.h>
#include <proxyhost/module.h>

#include "lib/clocks.h"
#include "frontend/frontend_server.h"
#include "http_body.h"
#include "http_head.h"
#include "frontend/listener.h"
#include "frontend/relay.h"
#include "frontend/stream_metrics.h"

/* After an error reply: how long the rest of the client's request is read
 * and dropped (so closing does not reset the connection before the client
 * read the reply), and how many bytes at most. */
#define HP_LINGER_MS 2000
#define HP_LINGER_BYTES (256u * 1024u)

enum hp_method_class { MC_CONNECT = 0, MC_FORWARD, MC_COUNT };
enum hp_status_class { SC_2XX = 0, SC_3XX, SC_4XX, SC_5XX, SC_COUNT };
enum hp_auth_mode { AUTH_NONE = 0, AUTH_PASSWORD };

enum hp_conn_state {
  S_HEAD = 0, /* reading a request head */
  S_AUTH,     /* the authorizer is checking credentials */
  S_OPEN,     /* the connector is opening the upstream stream */
  S_EXCHANGE, /* forwarding a request and its response */
  S_REPLY,    /* writing a reply of our own (error, 407, CONNECT's 200) */
  S_LINGER,   /* reply sent, reading and dropping what the client sends */
  S_TUNNEL    /* the relay owns both ends */
};
enum hp_after_reply { AFTER_CLOSE = 0, AFTER_NEXT, AFTER_TUNNEL };
enum hp_timer_kind {
  T_NONE = 0,
  T_HEADER,    /* header_timeout: 408 */
  T_KEEPALIVE, /* idle_timeout between requests: close */
  T_IDLE,      /* idle_timeout while a request runs: 504 or close */
  T_LINGER,    /* after an error reply: close */
  T_NEXT       /* a pipelined request is waiting in cin: parse it */
};
enum hp_up_state { U_HEAD = 0, U_BODY, U_DONE };
enum hp_down_state { D_HEAD = 0, D_BODY, D_DONE };

/* What a phase function returns: what the dispatcher does next. */
enum hp_next {
  HP_WAIT = 0,  /* nothing now: ask the loop for what the state needs */
  HP_CLOSE,     /* log the request (if any) and close the connection */
  HP_BEGIN,     /* wait for the next request head on this connection */
  HP_PARSE,     /* parse what cin holds as a request head */
  HP_AUTHORIZE, /* check the head's Proxy-Authorization */
  HP_PROCEED,   /* authorized: reuse the kept upstream or open one */
  HP_OPEN,      /* open an upstream through the connector */
  HP_ATTACH,    /* the connector answered with an upstream: watch it */
  HP_EXCHANGE,  /* the upstream is ready: forward the request */
  HP_REPLY,     /* send our reply (reply_status, then after) */
  HP_PUMP,      /* write to the client, move the response on */
  HP_TUNNEL     /* CONNECT's 200 is out: the relay takes both ends */
};

typedef struct iobuf {
  char *data;
  size_t off, len, cap; /* pending bytes: data[off .. len) */
} iobuf;

typedef struct hp_conf {
  hp_head_limits lim;
  int64_t header_timeout_ms, idle_timeout_ms;
  size_t buffer_size;
  int splice;
  int auth;
  int next_hop; /* proxy_status.next_hop: name the upstream in replies */
} hp_conf;

typedef struct conn conn;

/* The module instance. */
typedef struct hp {
  ph_ctx *ctx;
  hp_conf conf;
  frontend_server fs; /* sessions, listener, connector, authorizer */
  ph_topic *announce;
  stream_metrics sm;
  ph_series *requests[MC_COUNT][SC_COUNT];
  ph_series *m_clients, *m_refused;
  /* Counts reloads: a kept upstream or a verified Proxy-Authorization of
   * an earlier generation is checked again (policy, credentials). */
  uint64_t generation;
} hp;

/* The upstream: a socket (fd, io) or a stream (st); kept between
 * requests to the same host:port. The open phase makes it, the forward
 * and tunnel phases use it, hp_close_upstream ends it. */
typedef struct hp_upstream {
  int fd;
  ph_stream *st; /* when the connector answered with a stream (fd -1) */
  ph_io *io;
  int ev;        /* events asked of io or st */
  char host[256]; /* kept: for whom */
  uint16_t port;
  uint64_t generation;
  ph_open_lease *lease; /* the connector's, or NULL: ended with it */
  /* An HTTP forward proxy (the open's result said so, open_http_forward.h):
   * requests go to it in absolute form, with this Proxy-Authorization
   * value (the connector's bytes, valid until the lease ends; a
   * credential, never logged), or none when NULL. */
  const char *proxy_auth;
  size_t proxy_auth_len;
  unsigned http_proxy : 1;
  unsigned idle : 1;   /* a kept upstream between requests */
  unsigned active : 1; /* counts in proxyhost_stream_active */
  unsigned told_first : 1; /* the lease heard first_byte */
} hp_upstream;

/* One forwarded exchange (http_forward.c's): the request up, the
 * response down. */
typedef struct hp_exchange {
  int up_state, down_state;
  iobuf uin;  /* from upstream: response head, then body */
  iobuf uout; /* to upstream: the rewritten request head (origin-form) */
  /* To an upstream HTTP proxy instead (via_proxy): uout in absolute form
   * with the proxy's Proxy-Authorization, made per attempt (a retry may
   * reach another kind of upstream); a credential, wiped once sent and
   * when the upstream or the request ends. */
  iobuf upx;
  /* While a body is read: cin [off, cdec) is decoded request payload,
   * [cdec, len) bytes not decoded yet (the next request, once the body
   * ended); uin and udec likewise for the response. */
  size_t cdec, udec;
  hp_body_decoder req_body, resp_body; /* the framing received */
  hp_body_encoder req_out, resp_out;   /* the framing sent */
  http_head resp;
  int interim;
  uint64_t body_sent;
  unsigned reused : 1;       /* this exchange runs on a kept upstream */
  unsigned via_proxy : 1;    /* its head goes in absolute form (upx) */
  unsigned retried : 1;
  unsigned resp_seen : 1;    /* upstream sent a byte of this response */
  unsigned resp_started : 1; /* a response byte went to the client */
  unsigned close_after : 1;
  unsigned up_dirty : 1; /* upstream unusable for another request */
} hp_exchange;

/* Proxy-Authorization on this connection (http_auth.c's). */
typedef struct hp_credentials {
  char *token; /* the verified value */
  size_t token_len;
  uint64_t token_generation;
  uint64_t check_generation; /* of the check running */
  char *pending_token;       /* the value being checked */
  size_t pending_len;
  char principal[256];    /* the user that token verified */
  char pending_user[256]; /* the user being checked */
  uint64_t t_check_us;
} hp_credentials;

struct conn {
  frontend_session fs; /* the client's socket, watcher, timer, check,
                          open and relay (frontend_session.h) */
  hp *hp;
  int state;
  int after;        /* S_REPLY: what comes when the reply is out */
  int reply_status; /* HP_REPLY: the status to send */
  /* The open that failed, for the reply's Proxy-Status (RFC 9209):
   * its stage and code, open_failed 1 (0: the reply has another cause) */
  int open_stage, open_code, open_failed;
  int timer_kind;
  int64_t last_ms; /* last activity, for T_IDLE */
  iobuf cin;       /* from the client: head, body, pipelined bytes */
  iobuf cout;      /* to the client: our reply or a response head */
  uint64_t lingered;
  /* The request. */
  http_head req;
  hp_head_target target;
  hp_head_span authz; /* its Proxy-Authorization in cin, if has_authz */
  int method_class;
  int status; /* what the client got, for the log and the counter */
  uint64_t t_req_us, bytes_up, bytes_down;
  unsigned has_authz : 1;
  unsigned first : 1;   /* the connection's first request */
  unsigned counted : 1; /* status counted */
  unsigned begun : 1;   /* a request began: the next one gets a new id */
  unsigned authed : 1;  /* this request's credentials were verified */
  unsigned target_ok : 1; /* target parsed, for the access line */
  char log_path[128]; /* with log_target: the path (no query), cut */
  hp_upstream up;
  /* How the upstream's lease ends if the connection closes now (enum
   * ph_lease_end): CLIENT_ERROR while an exchange runs, unless a phase
   * that returns HP_CLOSE or a reply says otherwise. */
  int up_how;
  ph_open_headers open_headers; /* the request's, for the open */
  hp_exchange x;
  hp_credentials cred;
};

/* ---- http_proxy.c -------------------------------------------------------- */

/* The host API, set by init before anything else runs. */
extern const ph_api *hp_api;
/* Label values of method_class, indexed by enum hp_method_class. */
extern const char *const hp_method_classes[];

/* ---- small helpers ------------------------------------------------------- */

/* The most a request or response head may take. */
static inline size_t hp_head_cap(const hp *h) {
  return h->conf.lim.max_line + h->conf.lim.max_header_bytes;
}

/* The most a connection buffer may hold. */
static inline size_t hp_buf_max(const hp *h) {
  size_t hc = hp_head_cap(h);
  return hc > h->conf.buffer_size ? hc : h->conf.buffer_size;
}

static inline int hp_conn_dead(const conn *c) {
  return frontend_session_dead(&c->fs);
}

/* A body's size lines and trailers are bounded like a head's lines. */
static inline hp_body_limits hp_body_limits_of(const hp *h) {
  hp_body_limits l = {h->conf.lim.max_line, h->conf.lim.max_header_bytes};
  return l;
}

/* A phase's answer asking for a reply of our own; after says what comes
 * once it is out. */
static inline int hp_want_reply(conn *c, int status, int after) {
  c->reply_status = status;
  c->after = after;
  return HP_REPLY;
}

/* An error in an exchange: a status while no response byte reached the
 * client, else closing; how (enum ph_lease_end) is how the upstream's
 * lease ends for it. */
static inline int hp_fail_exchange(conn *c, int status, int how) {
  c->up_how = how;
  return c->x.resp_started ? HP_CLOSE : hp_want_reply(c, status, AFTER_CLOSE);
}

/* ---- http_iobuf.c (leaf) ------------------------------------------------- */

static inline size_t hp_pending(const iobuf *b) { return b->len - b->off; }

/* The client's socket; the upstream, a socket or a stream. */
static inline stream_end hp_client_end(const conn *c) {
  return end_fd(c->fs.fd);
}
static inline stream_end hp_up_end(const conn *c) {
  stream_end e = {c->up.fd, c->up.st};
  return e;
}

void hp_buf_free(iobuf *b);
/* Moves the pending bytes to the front; *scan (if not NULL) follows them. */
void hp_buf_compact(iobuf *b, size_t *scan);
/* Wipes (explicit_bzero) and frees: a buffer that held a credential. */
void hp_buf_wipe(iobuf *b);
/* Replaces the contents with s[0..n); 0 or -1 (out of memory). */
int hp_buf_set(iobuf *b, const char *s, size_t n);

enum { RD_DATA = 1, RD_EOF = 0, RD_AGAIN = -1, RD_ERROR = -2, RD_FULL = -3 };
/* One read from a socket or a stream into b (up to max bytes held); an
 * RD_ value, and the bytes read in *got on RD_DATA. */
int hp_buf_read(stream_end e, iobuf *b, size_t max, size_t *scan,
                size_t *got);
/* Writes data[0..n) to a socket or a stream; the bytes written (0 when it
 * is full), or -1 on an error. */
ssize_t hp_send_some(stream_end e, const char *data, size_t n);
/* Decodes what is new in b from *dec on (in place, dropping the framing:
 * the bytes after the body, if it ended, move down to follow the
 * payload); an HB_ value. */
int hp_buf_decode(iobuf *b, size_t *dec, hp_body_decoder *d);
/* Writes the payload b [off, dec) framed by e (end: the decoder is done),
 * as far as out takes it; b->off moves past the payload written. The
 * bytes written, or -1 on an error. */
ssize_t hp_buf_send_body(stream_end out, iobuf *b, size_t dec,
                         hp_body_encoder *e, int end);
/* Writes cout to the client (counting response bytes in an exchange): 1
 * all out, 0 the socket is full, -1 an error. */
int hp_flush_client(conn *c);

/* ---- http_state.c (leaf) ------------------------------------------------- */

/* Sets the connection's timer: kind, due in ms (idle_timeout counts from
 * now: last_ms). */
void hp_arm_timer(conn *c, int kind, int64_t ms);
/* Closes the upstream (kept or in use), if any, and ends its lease with
 * how (enum ph_lease_end; CLOSED whatever how says for an idle kept
 * one: it was between complete responses). */
void hp_close_upstream(conn *c, int how);
/* A byte of a response head reached the client: the upstream's lease
 * hears first_byte, once per upstream. */
void hp_up_first_byte(conn *c);
/* Wipes and frees a secret. */
void hp_wipe_free(char **p, size_t *len);
/* Records the status the client got, and counts it once per request. */
void hp_count_status(conn *c, int status);
/* The request's access log line (once it was counted). */
void hp_access_log(conn *c);

/* ---- http_request.c (phase) ---------------------------------------------- */

/* Waits for the next request head: HP_WAIT, or HP_CLOSE when the module
 * stops and nothing is pending. */
int hp_request_begin(conn *c);
/* Parses what is in cin as a request head: HP_WAIT for more, a reply for
 * a bad one, HP_AUTHORIZE for a complete one. */
int hp_request_parse(conn *c);
/* The client's socket is readable while a head is expected. */
int hp_request_read(conn *c);
/* Sets the method class of a head that could not be parsed. */
void hp_request_guess_class(conn *c);
/* ph_open_headers.get over the request head (arg: the conn): the first
 * field called name (case-insensitive), without surrounding whitespace,
 * or NULL; never Proxy-Authorization (the proxy's own credentials). Only
 * while the open runs (S_OPEN: the head stays where it was parsed). */
const char *hp_request_header(void *arg, const char *name, size_t *len);

/* ---- http_auth.c (phase) ------------------------------------------------- */

/* HP_PROCEED when authorized (or no check is needed), HP_WAIT when a
 * check started, or a refusal. */
int hp_auth_check(conn *c);
/* The authorizer's verdict: HP_PROCEED or a refusal. */
int hp_auth_result(conn *c, int verdict);

/* ---- http_open.c (phase) ------------------------------------------------- */

/* Authorized: HP_EXCHANGE on the kept upstream, or HP_OPEN. */
int hp_open_proceed(conn *c);
/* Asks the connector for the request's target: HP_WAIT, or a reply. */
int hp_open_start(conn *c);
/* The connector's answer: HP_ATTACH with the upstream (and its lease, or
 * NULL) taken, or a reply. */
int hp_open_result(conn *c, int code, stream_end up, ph_open_lease *lease);
/* The upstream is watched: CONNECT's 200, or HP_EXCHANGE. */
int hp_open_attached(conn *c);

/* ---- http_tunnel.c (phase) ----------------------------------------------- */

/* CONNECT's 200 is out: the relay takes both ends. HP_WAIT (relaying) or
 * HP_CLOSE. */
int hp_tunnel_start(conn *c);
/* The relay ended: the bytes for the log; HP_CLOSE. */
int hp_tunnel_done(conn *c, const relay_stats *st);

/* ---- http_forward.c (phase) ---------------------------------------------- */

/* The upstream is ready (new or kept): starts the exchange. */
int hp_forward_start(conn *c);
/* Request body bytes arrived in cin: decodes them, sends what can go. */
int hp_forward_request_body(conn *c);
/* cout is flushed in an exchange: moves the response on. HP_WAIT,
 * HP_PUMP when a head was queued in cout, HP_BEGIN after a finished
 * exchange, or HP_CLOSE. */
int hp_forward_response(conn *c);
/* The upstream's events (revents) in an exchange, or on a kept one. */
int hp_forward_upstream(conn *c, int revents);
/* Whether the request (response) body has bytes or framing to send now. */
int hp_forward_request_ready(const conn *c);
int hp_forward_response_ready(const conn *c);

/* ---- http_reply.c (phase) ------------------------------------------------ */

/* Queues our reply (reply_status) in cout, ends what runs for the
 * request: HP_PUMP, or HP_CLOSE when it cannot be made. */
int hp_reply_start(conn *c);
/* Our reply is out: HP_TUNNEL, HP_BEGIN, or HP_WAIT while lingering. */
int hp_reply_done(conn *c);
/* The client's socket is readable while lingering: HP_WAIT or HP_CLOSE. */
int hp_reply_linger_read(conn *c);

/* ---- http_conn.c (the dispatcher) ---------------------------------------- */

/* The sessions' callbacks (frontend_server_init in http_proxy.c). */
extern const frontend_session_ops hp_conn_ops;
/* Takes an accepted client socket (and its max_clients slot) over. */
void hp_conn_accept(hp *h, int fd, const struct sockaddr *peer,
                    socklen_t peerlen);

#endif
