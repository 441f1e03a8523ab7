/* http_proxy: what the module's files share (private; not part of the SDK).
 *
 * One client connection (conn) is a small state machine on the loop thread:
 *   HEAD -> [AUTH] -> [OPEN] -> EXCHANGE -> HEAD ...   (forwarding)
 *   HEAD -> [AUTH] -> OPEN -> REPLY(200) -> TUNNEL      (CONNECT)
 *   any -> REPLY(error) -> LINGER -> closed
 *
 * Freeing (guard.h): a conn is entered only through its io and timer
 * callbacks, the connector's and the authorizer's callbacks and the
 * relay's, each between conn_enter and conn_leave. conn_close releases
 * everything it holds at once (sockets, watchers, timer, open, check,
 * relay) and marks it dead (state S_CLOSED); its memory is freed by the
 * outermost conn_leave, at the end of the event. So no callee frees a
 * conn under its caller. A function that may close its conn returns GONE
 * when it did, and its callers stop at once; a function entered with a
 * dead conn returns GONE and does nothing.
 *
 * Bodies (http_body.h): the proxy never forwards framing it received.
 * A request or response body is decoded in its buffer, in place (the
 * payload moves down over the framing), and framed again for the peer:
 * Content-Length as it was, chunked as new chunks (HTTP/1.1 peers), or
 * closing the connection (a response to an HTTP/1.0 client).
 *
 * The files, one job each:
 *   http_proxy.c    module descriptor, configuration, lifecycle, accept glue
 *   http_conn.c     a connection's life: accept, events, timers, close
 *   http_request.c  reading and parsing a request head, what comes next
 *   http_auth.c     Proxy-Authorization through the authorizer service
 *   http_open.c     reusing the kept upstream or opening one (connector)
 *   http_tunnel.c   CONNECT: handing both sockets over to the relay
 *   http_forward.c  absolute-form forwarding: request up, response down
 *   http_reply.c    replies of our own (errors, 407, CONNECT's 200)
 *   http_iobuf.c    the connection buffers and socket reads and writes
 *   http_head.c     HTTP/1.x head parsing and rewriting
 *   http_body.c     strict body framing: decoding and encoding
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

#include "guard.h"
#include "http_body.h"
#include "http_head.h"
#include "listener.h"
#include "relay.h"
#include "stream_metrics.h"

#define GONE (-1)
/* After an error reply: how long the rest of the client's request is read
 * and dropped (so closing does not reset the connection before the client
 * read the reply), and how many bytes at most. */
#define LINGER_MS 2000
#define LINGER_BYTES (256u * 1024u)

enum method_class { MC_CONNECT = 0, MC_FORWARD, MC_COUNT };
enum status_class { SC_2XX = 0, SC_3XX, SC_4XX, SC_5XX, SC_COUNT };
enum auth_mode { AUTH_NONE = 0, AUTH_PASSWORD };

enum conn_state {
  S_HEAD = 0, /* reading a request head */
  S_AUTH,     /* the authorizer is checking credentials */
  S_OPEN,     /* the connector is opening the upstream stream */
  S_EXCHANGE, /* forwarding a request and its response */
  S_REPLY,    /* writing a reply of our own (error, 407, CONNECT's 200) */
  S_LINGER,   /* reply sent, reading and dropping what the client sends */
  S_TUNNEL,   /* the relay owns both sockets */
  S_CLOSED    /* closed: released, freed at the end of the event */
};
enum after_reply { AFTER_CLOSE = 0, AFTER_NEXT, AFTER_TUNNEL };
enum timer_kind {
  T_NONE = 0,
  T_HEADER,    /* header_timeout: 408 */
  T_KEEPALIVE, /* idle_timeout between requests: close */
  T_IDLE,      /* idle_timeout while a request runs: 504 or close */
  T_LINGER,    /* after an error reply: close */
  T_NEXT       /* a pipelined request is waiting in cin: parse it */
};
enum up_state { U_HEAD = 0, U_BODY, U_DONE };
enum down_state { D_HEAD = 0, D_BODY, D_DONE };

typedef struct iobuf {
  char *data;
  size_t off, len, cap; /* pending bytes: data[off .. len) */
} iobuf;

typedef struct hp_conf {
  hh_limits lim;
  int64_t header_timeout_ms, idle_timeout_ms;
  size_t buffer_size;
  int splice;
  int auth;
} hp_conf;

typedef struct conn conn;

/* The module instance. */
typedef struct hp {
  ph_ctx *ctx;
  hp_conf conf;
  ph_listener *listener;
  ph_topic *announce;
  const ph_connector_v1 *connector;
  void *connector_self;
  const ph_authorizer_v1 *authorizer;
  void *authorizer_self;
  stream_metrics sm;
  ph_series *requests[MC_COUNT][SC_COUNT];
  ph_series *m_clients, *m_refused;
  conn *conns;
  size_t n_conns;
  /* Counts reloads: a kept upstream or a verified Proxy-Authorization of
   * an earlier generation is checked again (policy, credentials). */
  uint64_t generation;
  unsigned stopping : 1;
  unsigned stop_pending : 1;
} hp;

struct conn {
  guard g;
  hp *hp;
  conn *prev, *next;
  int state;
  int after;  /* S_REPLY: what comes when the reply is out */
  int timer_kind;
  int64_t last_ms; /* last activity, for T_IDLE */
  int cfd, ufd;
  ph_stream *ust; /* the upstream, when the connector answered with a
                     stream (ufd is then -1) */
  ph_io *cio, *uio;
  int cev, uev; /* events asked of cio, uio */
  ph_timer *timer;
  iobuf cin;   /* from the client: head, body, pipelined bytes */
  iobuf cout;  /* to the client: our reply or a rewritten response head */
  iobuf uin;   /* from upstream: response head, then body */
  iobuf uout;  /* to upstream: the rewritten request head */
  /* While a body is read: cin [off, cdec) is decoded request payload,
   * [cdec, len) bytes not decoded yet (the next request, once the body
   * ended); uin and udec likewise for the response. */
  size_t cdec, udec;
  hb_decoder req_body, resp_body; /* the framing received */
  hb_encoder req_out, resp_out;   /* the framing sent */
  http_head req, resp;
  hh_target target;
  int method_class;
  int status; /* what the client got, for the log and the counter */
  int up_state, down_state;
  int interim;
  int64_t open_id, auth_id;
  uint64_t t_req_us, t_open_us, t_auth_us, t_reply_us;
  uint64_t bytes_up, bytes_down, body_sent, lingered;
  ph_relay *relay;
  /* The upstream connection kept between requests, and for whom. */
  char up_host[256];
  uint16_t up_port;
  uint64_t up_generation;
  char *token;  /* verified Proxy-Authorization value on this connection */
  size_t token_len;
  uint64_t token_generation;
  uint64_t auth_generation; /* of the check running */
  char *pending_token; /* the value being checked */
  size_t pending_len;
  char principal[256];    /* the user that token verified */
  char pending_user[256]; /* the user being checked */
  unsigned first : 1;       /* the connection's first request */
  unsigned up_idle : 1;     /* ufd is a kept upstream between requests */
  unsigned up_active : 1;   /* ufd counts in proxyhost_streams_active */
  unsigned reused : 1;      /* this exchange runs on a kept upstream */
  unsigned retried : 1;
  unsigned resp_seen : 1;   /* upstream sent a byte of this response */
  unsigned resp_started : 1; /* a response byte went to the client */
  unsigned close_after : 1;
  unsigned up_dirty : 1;    /* upstream unusable for another request */
  unsigned counted : 1;     /* status counted */
};

/* ---- http_proxy.c -------------------------------------------------------- */

/* The host API, set by init before anything else runs. */
extern const ph_api *hp_api;
/* Label values of method_class, indexed by enum method_class. */
extern const char *const hp_method_classes[];

/* ---- small helpers ------------------------------------------------------- */

static inline uint64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static inline double seconds_since(uint64_t t0) {
  return (double)(now_us() - t0) / 1e6;
}

/* The most a request or response head may take. */
static inline size_t head_cap(const hp *h) {
  return h->conf.lim.max_line + h->conf.lim.max_header_bytes;
}

/* The most a connection buffer may hold. */
static inline size_t buf_max(const hp *h) {
  size_t hc = head_cap(h);
  return hc > h->conf.buffer_size ? hc : h->conf.buffer_size;
}

/* ---- http_iobuf.c -------------------------------------------------------- */

static inline size_t pending(const iobuf *b) { return b->len - b->off; }

/* The client's socket; the upstream, a socket or a stream. */
static inline stream_end client_end(const conn *c) { return end_fd(c->cfd); }
static inline stream_end up_end(const conn *c) {
  stream_end e = {c->ufd, c->ust};
  return e;
}

void buf_free(iobuf *b);
/* Moves the pending bytes to the front; *scan (if not NULL) follows them. */
void buf_compact(iobuf *b, size_t *scan);
/* Replaces the contents with s[0..n); 0 or -1 (out of memory). */
int buf_set(iobuf *b, const char *s, size_t n);

enum { RD_DATA = 1, RD_EOF = 0, RD_AGAIN = -1, RD_ERROR = -2, RD_FULL = -3 };
/* One read from a socket or a stream into b (up to max bytes held); an
 * RD_ value, and the bytes read in *got on RD_DATA. */
int buf_read(stream_end e, iobuf *b, size_t max, size_t *scan, size_t *got);
/* Writes data[0..n) to a socket or a stream; the bytes written (0 when it
 * is full), or -1 on an error. */
ssize_t send_some(stream_end e, const char *data, size_t n);
/* Decodes what is new in b from *dec on (in place, dropping the framing:
 * the bytes after the body, if it ended, move down to follow the
 * payload); an HB_ value. */
int body_decode(iobuf *b, size_t *dec, hb_decoder *d);
/* Writes the payload b [off, dec) framed by e (end: the decoder is done),
 * as far as out takes it; b->off moves past the payload written. The
 * bytes written, or -1 on an error. */
ssize_t send_body(stream_end out, iobuf *b, size_t dec, hb_encoder *e,
                  int end);

/* ---- http_conn.c --------------------------------------------------------- */

/* Takes an accepted client socket (and its max_clients slot) over. */
void conn_accept(hp *h, int fd);
/* Every entry into a conn from outside (guard.h) runs between these;
 * conn_leave frees a conn that was closed inside. */
void conn_enter(conn *c);
void conn_leave(conn *c);
/* Releases everything the connection holds (its fds are closed unless a
 * relay took them) and frees it, or marks it dead when an entry runs.
 * Logs nothing. */
void conn_free(conn *c);
/* Logs the request (if any) and ends the connection (conn_free); returns
 * GONE. A dead connection is left as it is. */
int conn_close(conn *c);
static inline int conn_dead(const conn *c) { return guard_dead(&c->g); }
/* Asks the loop for the events the connection's state needs. */
void update_io(conn *c);
void arm_timer(conn *c, int kind, int64_t ms);
/* Closes the upstream socket (kept or in use), if any. */
void close_upstream(conn *c);
/* Wipes and frees a secret. */
void wipe_free(char **p, size_t *len);
/* Records the status the client got, and counts it once per request. */
void count_status(conn *c, int status);
void access_log(conn *c);
/* Writes what the client should get next; 0 or GONE. */
int pump_client(conn *c);
/* pump_client, then update_io; 0 or GONE. */
int client_step(conn *c);

/* ---- http_reply.c -------------------------------------------------------- */

/* Sends a reply of our own; after says what comes once it is out. */
int reply(conn *c, int status, int after);
/* An error in an exchange: a status while no response byte reached the
 * client, else closing. */
int fail_exchange(conn *c, int status);
/* Our reply is out: tunnel, next request, or lingering close. */
int reply_done(conn *c);

/* ---- http_request.c ------------------------------------------------------ */

/* Waits for the next request head on the connection. */
int begin_head(conn *c);
/* Parses what is in cin as a request head, and acts on a complete one. */
int parse_request(conn *c);
/* Sets the method class of a head that could not be parsed. */
void guess_class(conn *c);

/* ---- http_auth.c --------------------------------------------------------- */

/* 0 when authorized (or no check is needed), GONE, or 1 when a check
 * started or a refusal is being written. */
int authorize(conn *c, const char *value, size_t len);

/* ---- http_open.c --------------------------------------------------------- */

/* Authorized: goes on to the upstream (kept or newly opened). */
int proceed(conn *c);
/* Opens the upstream for the request's target through the connector. */
int start_open(conn *c);

/* ---- http_tunnel.c ------------------------------------------------------- */

/* CONNECT's 200 is out: the relay takes both sockets. Returns GONE. */
int start_tunnel(conn *c);

/* ---- http_forward.c ------------------------------------------------------ */

/* Sets up the request body's decoding and framing (kind and length from
 * hh_framing) and writes the request head for upstream into uout; 0 or
 * -1. */
int start_request_body(conn *c, int kind, uint64_t length);
/* The upstream socket is ready (new or kept): runs the exchange. */
int run_exchange(conn *c);
/* Request body bytes arrived in cin: decodes them, sends what can go. */
int forward_request_body(conn *c);
/* cout is flushed in an exchange: moves the response on. 0 when waiting,
 * GONE, or FORWARD_AGAIN when a head was queued in cout to be written. */
#define FORWARD_AGAIN 1
int forward_response(conn *c);
/* Whether the request (response) body has bytes or framing to send now. */
int request_body_ready(const conn *c);
int response_body_ready(const conn *c);
/* The callbacks of the upstream: its socket's watcher, or its stream. */
void upstream_io(ph_io *io, int fd, int revents, void *arg);
void upstream_stream(ph_stream *s, int revents, void *arg);

#endif
