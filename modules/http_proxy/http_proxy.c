/* http_proxy: an HTTP/1.1 proxy frontend.
 *
 * - CONNECT host:port: the connector opens the stream, the client gets
 *   "200 Connection established" only then, and the shared relay copies
 *   bytes both ways (bytes the client sent after the head go first).
 * - Absolute-form requests (GET http://host[:port]/path, any method): the
 *   request goes to the origin in origin-form with a correct Host and
 *   without hop-by-hop headers; request and response bodies are forwarded
 *   as they arrive, framed as they were (Content-Length, chunked, or until
 *   close), through bounded buffers; client connections stay open between
 *   requests when both sides allow it, and the upstream connection is
 *   kept for the next request to the same host:port.
 * - Proxy-Authorization: Basic through the "authorizer" service when
 *   auth = password.
 * - Limits: request line, header bytes and count, header and idle
 *   timeouts, concurrent clients, buffer sizes. A bad or oversized head
 *   gets its status and closes only its own connection.
 *
 * One connection (conn) is a small state machine on the loop thread:
 *   HEAD -> [AUTH] -> [OPEN] -> EXCHANGE -> HEAD ...   (forwarding)
 *   HEAD -> [AUTH] -> OPEN -> REPLY(200) -> TUNNEL      (CONNECT)
 *   any -> REPLY(error) -> LINGER -> closed
 * Every function that may free its conn returns GONE, and its callers
 * stop touching it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <proxyhost/authorizer.h>
#include <proxyhost/connector.h>
#include <proxyhost/module.h>

#include "http_head.h"
#include "listener.h"
#include "open_map.h"
#include "relay.h"
#include "stream_metrics.h"

#define GONE (-1)
/* The first allocation of a connection buffer; buffers grow by doubling
 * up to their limit and are freed while a connection idles. */
#define BUF_FIRST 4096u
/* After an error reply: how long the rest of the client's request is read
 * and dropped (so closing does not reset the connection before the client
 * read the reply), and how many bytes at most. */
#define LINGER_MS 2000
#define LINGER_BYTES (256u * 1024u)
/* Interim (1xx) responses accepted before the final one. */
#define MAX_INTERIM 8
/* A Proxy-Authorization value remembered as verified on a connection. */
#define MAX_TOKEN 1024

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
  S_TUNNEL    /* the relay owns both sockets */
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
  unsigned stopping : 1;
  unsigned stop_pending : 1;
} hp;

struct conn {
  hp *hp;
  conn *prev, *next;
  int state;
  int after;  /* S_REPLY: what comes when the reply is out */
  int timer_kind;
  int64_t last_ms; /* last activity, for T_IDLE */
  int cfd, ufd;
  ph_io *cio, *uio;
  int cev, uev; /* events asked of cio, uio */
  ph_timer *timer;
  iobuf cin;   /* from the client: head, body, pipelined bytes */
  iobuf cout;  /* to the client: our reply or a rewritten response head */
  iobuf uin;   /* from upstream: response head, then body */
  iobuf uout;  /* to upstream: the rewritten request head */
  size_t cscan; /* cin: bytes before this were framed by the parser */
  size_t uscan; /* uin: likewise */
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
  char *token;  /* verified Proxy-Authorization value on this connection */
  size_t token_len;
  char *pending_token; /* the value being checked */
  size_t pending_len;
  char principal[256];    /* the user that token verified */
  char pending_user[256]; /* the user being checked */
  unsigned first : 1;       /* the connection's first request */
  unsigned up_idle : 1;     /* ufd is a kept upstream between requests */
  unsigned up_active : 1;   /* ufd counts in proxyhost_streams_active */
  unsigned reused : 1;      /* this exchange runs on a kept upstream */
  unsigned retried : 1;
  unsigned req_body_done : 1;
  unsigned resp_done : 1;
  unsigned resp_seen : 1;   /* upstream sent a byte of this response */
  unsigned resp_started : 1; /* a response byte went to the client */
  unsigned close_after : 1;
  unsigned up_dirty : 1;    /* upstream unusable for another request */
  unsigned counted : 1;     /* status counted */
};

static const ph_api *api;

static const ph_conf_key hp_keys[] = {
    {"listen", PH_CONF_STRING, "127.0.0.1:8080", 3, 128, PH_CONF_RESTART, NULL,
     "address:port to listen on (IPv6 as [addr]:port)", NULL},
    {"backlog", PH_CONF_INT, "1024", 1, 65535, PH_CONF_RESTART, NULL,
     "listen(2) backlog", NULL},
    {"reuseport", PH_CONF_BOOL, "false", 0, 0, PH_CONF_RESTART, NULL,
     "SO_REUSEPORT, to run several processes on one port", NULL},
    {"max_clients", PH_CONF_INT, "1024", 1, 1000000, PH_CONF_RESTART, NULL,
     "concurrent client connections; more are closed at once", NULL},
    {"max_request_line", PH_CONF_SIZE, "8KiB", 256, 16384, 0, NULL,
     "longest request line; longer is answered 414", NULL},
    {"max_header_bytes", PH_CONF_SIZE, "16KiB", 1024, 65536, 0, NULL,
     "header bytes after the request line; more is answered 431", NULL},
    {"max_headers", PH_CONF_INT, "100", 1, 1000, 0, NULL,
     "header fields per request; more is answered 431", NULL},
    {"header_timeout", PH_CONF_DURATION, "10s", 100, 600000, 0, NULL,
     "time to receive a whole request head; then 408 and close", NULL},
    {"idle_timeout", PH_CONF_DURATION, "300s", 1000, 86400000, 0, NULL,
     "no bytes either way for this long closes a tunnel, a request "
     "in progress or an idle keep-alive connection", NULL},
    {"buffer_size", PH_CONF_SIZE, "64KiB", 4096, 1048576, 0, NULL,
     "per-direction buffer of a forwarded request or a tunnel", NULL},
    {"splice", PH_CONF_BOOL, "true", 0, 0, 0, NULL,
     "zero-copy splice(2) for CONNECT tunnels", NULL},
    {"auth", PH_CONF_ENUM, "none", 0, 0, PH_CONF_RESTART, NULL,
     "none, or password: Proxy-Authorization Basic checked by the "
     "authorizer service",
     "none|password"},
    PH_CONF_END};

static const char *const method_classes[] = {"connect", "forward", NULL};
static const char *const status_classes[] = {"2xx", "3xx", "4xx", "5xx",
                                             NULL};
static const ph_label_def request_labels[] = {
    {"method_class", method_classes}, {"status_class", status_classes}};
static const ph_metric_def request_def = {
    "proxyhost_http_requests_total",
    "HTTP proxy requests by method class and the status the client got",
    PH_METRIC_COUNTER,
    request_labels,
    2,
    NULL,
    0};

/* ---- small helpers ------------------------------------------------------- */

static uint64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static double seconds_since(uint64_t t0) {
  return (double)(now_us() - t0) / 1e6;
}

static size_t head_cap(const hp *h) {
  return h->conf.lim.max_line + h->conf.lim.max_header_bytes;
}

static size_t buf_max(const hp *h) {
  size_t hc = head_cap(h);
  return hc > h->conf.buffer_size ? hc : h->conf.buffer_size;
}

static size_t pending(const iobuf *b) { return b->len - b->off; }

static void buf_free(iobuf *b) {
  free(b->data);
  memset(b, 0, sizeof(*b));
}

/* Moves the pending bytes to the front; *scan follows them. */
static void buf_compact(iobuf *b, size_t *scan) {
  if (b->off == 0)
    return;
  size_t n = pending(b);
  if (n)
    memmove(b->data, b->data + b->off, n);
  if (scan)
    *scan = *scan > b->off ? *scan - b->off : 0;
  b->off = 0;
  b->len = n;
}

/* Room for at least one more byte within max total bytes; 0 or -1. */
static int buf_room(iobuf *b, size_t max, size_t *scan) {
  if (b->len < b->cap)
    return 0;
  if (b->off > 0) {
    buf_compact(b, scan);
    if (b->len < b->cap)
      return 0;
  }
  if (b->cap >= max)
    return -1;
  size_t cap = b->cap ? b->cap * 2 : BUF_FIRST;
  if (cap > max)
    cap = max;
  char *d = realloc(b->data, cap);
  if (!d)
    return -1;
  b->data = d;
  b->cap = cap;
  return 0;
}

static int buf_set(iobuf *b, const char *s, size_t n) {
  if (b->cap < n) {
    char *d = realloc(b->data, n);
    if (!d)
      return -1;
    b->data = d;
    b->cap = n;
  }
  memcpy(b->data, s, n);
  b->off = 0;
  b->len = n;
  return 0;
}

enum { RD_DATA = 1, RD_EOF = 0, RD_AGAIN = -1, RD_ERROR = -2, RD_FULL = -3 };

/* One read into b (up to max bytes held). */
static int buf_read(int fd, iobuf *b, size_t max, size_t *scan,
                    size_t *got) {
  if (buf_room(b, max, scan) < 0)
    return RD_FULL;
  size_t want = (max < b->cap ? max : b->cap) - b->len;
  ssize_t n = recv(fd, b->data + b->len, want, 0);
  if (n > 0) {
    b->len += (size_t)n;
    *got = (size_t)n;
    return RD_DATA;
  }
  if (n == 0)
    return RD_EOF;
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
    return RD_AGAIN;
  return RD_ERROR;
}

/* Writes data[0..n); the bytes written, or -1 on a socket error. */
static ssize_t send_some(int fd, const char *data, size_t n) {
  ssize_t w = send(fd, data, n, MSG_NOSIGNAL);
  if (w >= 0)
    return w;
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
    return 0;
  return -1;
}

static int status_class(int status) {
  if (status < 300)
    return SC_2XX;
  if (status < 400)
    return SC_3XX;
  if (status < 500)
    return SC_4XX;
  return SC_5XX;
}

/* ---- connection lifetime --------------------------------------------------- */

static int conn_close(conn *c);
static int client_step(conn *c);
static int upstream_step(conn *c);
static int begin_head(conn *c);
static int reply(conn *c, int status, int after);
static int start_tunnel(conn *c);
static int parse_response(conn *c);

static void update_io(conn *c) {
  hp *h = c->hp;
  int ce = 0, ue = 0;
  size_t max = buf_max(h);
  switch (c->state) {
  case S_HEAD:
    ce = PH_READ;
    break;
  case S_AUTH:
  case S_OPEN:
    /* Watch for the client going away; keep what it sends (bounded). */
    if (pending(&c->cin) < max)
      ce = PH_READ;
    break;
  case S_EXCHANGE:
    if (c->up_state != U_DONE && !c->req_body_done &&
        pending(&c->cin) < max)
      ce |= PH_READ;
    if (pending(&c->cout) ||
        (c->down_state == D_BODY && c->uscan > c->uin.off))
      ce |= PH_WRITE;
    if (c->up_state == U_HEAD ||
        (c->up_state == U_BODY && c->cscan > c->cin.off))
      ue |= PH_WRITE;
    if ((c->down_state == D_HEAD && !pending(&c->cout)) ||
        (c->down_state == D_BODY && !c->resp_done &&
         pending(&c->uin) < max))
      ue |= PH_READ;
    break;
  case S_REPLY:
    ce = PH_WRITE;
    break;
  case S_LINGER:
    ce = PH_READ;
    break;
  default:
    break;
  }
  if (c->up_idle)
    ue = PH_READ; /* a kept upstream: notice it closing */
  if (c->cio && ce != c->cev) {
    api->io_set(c->cio, ce);
    c->cev = ce;
  }
  if (c->uio && ue != c->uev) {
    api->io_set(c->uio, ue);
    c->uev = ue;
  }
}

static void arm_timer(conn *c, int kind, int64_t ms) {
  c->timer_kind = kind;
  c->last_ms = api->now_ms(c->hp->ctx);
  api->timer_set(c->timer, (uint64_t)(ms > 0 ? ms : 1), 0);
}

static void close_upstream(conn *c) {
  if (c->uio) {
    api->io_free(c->uio);
    c->uio = NULL;
    c->uev = 0;
  }
  if (c->ufd >= 0) {
    close(c->ufd);
    c->ufd = -1;
  }
  if (c->up_active) {
    api->gauge_add(c->hp->sm.active, -1);
    c->up_active = 0;
  }
  c->up_idle = 0;
  c->up_host[0] = '\0';
}

static void wipe_free(char **p, size_t *len) {
  if (*p) {
    explicit_bzero(*p, *len);
    free(*p);
  }
  *p = NULL;
  *len = 0;
}

static void count_status(conn *c, int status) {
  c->status = status;
  if (!c->counted) {
    c->counted = 1;
    api->inc(c->hp->requests[c->method_class][status_class(status)], 1);
  }
}

static void access_log(conn *c) {
  hp *h = c->hp;
  if (!c->counted)
    return;
  PH_LOG(api, h->ctx, PH_LOG_INFO, "http request",
         PH_STR("method_class", method_classes[c->method_class]),
         PH_INT("status", c->status), PH_UINT("bytes_up", c->bytes_up),
         PH_UINT("bytes_down", c->bytes_down),
         PH_UINT("duration_us", c->t_req_us ? now_us() - c->t_req_us : 0));
}

static void conn_unlink(conn *c) {
  hp *h = c->hp;
  if (c->prev)
    c->prev->next = c->next;
  else
    h->conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  h->n_conns--;
  api->gauge_add(h->m_clients, -1);
  if (h->listener)
    listener_release(h->listener);
  if (h->stopping && h->stop_pending && h->n_conns == 0) {
    h->stop_pending = 0;
    api->stop_done(h->ctx);
  }
}

/* Frees everything the connection holds; its fds are closed unless a
 * relay took them. */
static void conn_free(conn *c) {
  hp *h = c->hp;
  if (c->open_id > 0)
    h->connector->cancel(h->connector_self, c->open_id);
  if (c->auth_id > 0 && h->authorizer)
    h->authorizer->cancel(h->authorizer_self, c->auth_id);
  if (c->relay)
    relay_abort(c->relay);
  close_upstream(c);
  if (c->cio)
    api->io_free(c->cio);
  if (c->cfd >= 0)
    close(c->cfd);
  if (c->timer)
    api->timer_free(c->timer);
  buf_free(&c->cin);
  buf_free(&c->cout);
  buf_free(&c->uin);
  buf_free(&c->uout);
  hh_free(&c->req);
  hh_free(&c->resp);
  wipe_free(&c->token, &c->token_len);
  wipe_free(&c->pending_token, &c->pending_len);
  conn_unlink(c);
  free(c);
}

static int conn_close(conn *c) {
  access_log(c);
  conn_free(c);
  return GONE;
}

/* ---- replies of our own ---------------------------------------------------- */

/* Writes the head (and the short fixed body) of a reply of our own. The
 * body never says more than the status: no system or resolver detail. */
static int format_reply(conn *c, int status, int after, char *out,
                        size_t cap) {
  const char *reason = open_map_http_reason(status);
  if (status == 200)
    return snprintf(out, cap, "HTTP/1.%d 200 %s\r\n\r\n",
                    c->req.done ? hh_minor(&c->req) : 1, reason);
  char body[96];
  int blen = snprintf(body, sizeof(body), "%d %s\n", status, reason);
  int head_only = c->req.done && hh_method(&c->req) == HTTP_HEAD;
  return snprintf(
      out, cap,
      "HTTP/1.1 %d %s\r\n%sContent-Type: text/plain\r\n"
      "Content-Length: %d\r\nConnection: %s\r\n\r\n%s",
      status, reason,
      status == 407 ? "Proxy-Authenticate: Basic realm=\"proxyhost\"\r\n"
                    : "",
      blen, after == AFTER_NEXT ? "keep-alive" : "close",
      head_only ? "" : body);
}

static int reply(conn *c, int status, int after) {
  hp *h = c->hp;
  char msg[512];
  int n = format_reply(c, status, after, msg, sizeof(msg));
  if (n < 0 || (size_t)n >= sizeof(msg) ||
      buf_set(&c->cout, msg, (size_t)n) < 0)
    return conn_close(c);
  count_status(c, status);
  if (c->open_id > 0) {
    h->connector->cancel(h->connector_self, c->open_id);
    c->open_id = 0;
  }
  if (c->auth_id > 0) {
    h->authorizer->cancel(h->authorizer_self, c->auth_id);
    c->auth_id = 0;
    wipe_free(&c->pending_token, &c->pending_len);
  }
  if (c->state == S_EXCHANGE && after != AFTER_TUNNEL)
    close_upstream(c);
  c->state = S_REPLY;
  c->after = after;
  arm_timer(c, T_IDLE, h->conf.idle_timeout_ms);
  return client_step(c);
}

/* An error before any response byte reached the client gets a status;
 * after that, only closing tells the client. */
static int fail_exchange(conn *c, int status) {
  if (c->resp_started)
    return conn_close(c);
  return reply(c, status, AFTER_CLOSE);
}

static int reply_done(conn *c) {
  if (c->after == AFTER_TUNNEL)
    return start_tunnel(c);
  if (c->after == AFTER_NEXT) {
    access_log(c);
    return begin_head(c);
  }
  /* Lingering close: stop sending, then read and drop what the client
   * still sends for a while, so that closing does not reset the
   * connection before the client read the reply. */
  access_log(c);
  c->counted = 0; /* logged */
  close_upstream(c);
  shutdown(c->cfd, SHUT_WR);
  c->state = S_LINGER;
  int64_t ms = c->hp->conf.header_timeout_ms;
  arm_timer(c, T_LINGER, ms < LINGER_MS ? ms : LINGER_MS);
  update_io(c);
  return 0;
}

/* ---- CONNECT tunnels ----------------------------------------------------- */

static void tunnel_first_down(void *arg) {
  conn *c = arg;
  stream_metrics_stage(&c->hp->sm, SM_TTFB, SM_SUCCESS,
                       seconds_since(c->t_reply_us));
}

static void tunnel_done(void *arg, const relay_stats *st, int end) {
  conn *c = arg;
  hp *h = c->hp;
  (void)end;
  c->relay = NULL;
  c->bytes_up = st->up;
  c->bytes_down = st->down;
  api->inc(h->sm.bytes[SM_UP], st->up);
  api->inc(h->sm.bytes[SM_DOWN], st->down);
  conn_close(c);
}

static int start_tunnel(conn *c) {
  hp *h = c->hp;
  relay_opts o = {
      .idle_timeout_ms = h->conf.idle_timeout_ms,
      .buffer_size = h->conf.buffer_size,
      .use_splice = h->conf.splice,
      .first_down = tunnel_first_down,
      .done = tunnel_done,
      .arg = c,
      .client_io = c->cio, /* handed over: client_io passes events on */
  };
  api->io_free(c->uio);
  c->cio = c->uio = NULL;
  c->cev = c->uev = 0;
  api->timer_set(c->timer, 0, 0);
  c->timer_kind = T_NONE;
  int cfd = c->cfd, ufd = c->ufd;
  c->cfd = c->ufd = -1; /* the relay owns them, or closed them */
  c->state = S_TUNNEL;
  c->t_reply_us = now_us();
  /* Bytes the client sent after the head go to the target first. */
  c->relay = relay_start(api, h->ctx, cfd, ufd, c->cin.data + c->cin.off,
                         pending(&c->cin), &o);
  buf_free(&c->cin);
  buf_free(&c->cout);
  hh_free(&c->req);
  if (!c->relay)
    return conn_close(c);
  return GONE; /* the conn lives on, but the caller must not touch it */
}

/* ---- forwarding ------------------------------------------------------------ */

/* Frames the request body bytes that arrived. */
static int scan_request_body(conn *c) {
  if (c->req_body_done || c->cscan >= c->cin.len)
    return 0;
  size_t used = 0;
  int r = hh_body(&c->req, c->cin.data + c->cscan, c->cin.len - c->cscan,
                  &used);
  c->cscan += used;
  if (r == HH_DONE)
    c->req_body_done = 1;
  else if (r == HH_ERROR)
    return fail_exchange(c, 400);
  return 0;
}

static int scan_response_body(conn *c) {
  if (c->resp_done || c->uscan >= c->uin.len)
    return 0;
  size_t used = 0;
  int r = hh_body(&c->resp, c->uin.data + c->uscan, c->uin.len - c->uscan,
                  &used);
  c->uscan += used;
  if (r == HH_DONE) {
    c->resp_done = 1;
    if (c->uscan < c->uin.len) /* bytes after the response: not reusable */
      c->up_dirty = 1;
  } else if (r == HH_ERROR) {
    return fail_exchange(c, 502);
  }
  return 0;
}

/* Sends what the upstream should get next: the head, then body bytes. */
static int pump_up(conn *c) {
  if (c->up_state == U_HEAD) {
    while (pending(&c->uout)) {
      ssize_t w = send_some(c->ufd, c->uout.data + c->uout.off,
                            pending(&c->uout));
      if (w < 0)
        goto upstream_gone;
      if (w == 0)
        return 0;
      c->uout.off += (size_t)w;
      c->bytes_up += (uint64_t)w;
      api->inc(c->hp->sm.bytes[SM_UP], (uint64_t)w);
    }
    c->up_state = U_BODY;
  }
  while (c->up_state == U_BODY && c->cscan > c->cin.off) {
    ssize_t w = send_some(c->ufd, c->cin.data + c->cin.off,
                          c->cscan - c->cin.off);
    if (w < 0)
      goto upstream_gone;
    if (w == 0)
      return 0;
    c->cin.off += (size_t)w;
    c->bytes_up += (uint64_t)w;
    c->body_sent += (uint64_t)w;
    c->last_ms = api->now_ms(c->hp->ctx);
    api->inc(c->hp->sm.bytes[SM_UP], (uint64_t)w);
  }
  if (c->up_state == U_BODY && c->req_body_done && c->cscan == c->cin.off)
    c->up_state = U_DONE;
  return 0;
upstream_gone:
  /* The upstream stopped reading: it may still answer (say, 413), so keep
   * reading its response; the client connection closes after it. */
  c->up_state = U_DONE;
  c->up_dirty = 1;
  c->close_after = 1;
  return 0;
}

static int finish_exchange(conn *c) {
  hp *h = c->hp;
  int keep_up = !c->up_dirty && c->up_state == U_DONE &&
                hh_keep_alive(&c->resp) && pending(&c->uin) == 0 &&
                !h->stopping;
  if (keep_up) {
    c->up_idle = 1;
    snprintf(c->up_host, sizeof(c->up_host), "%s", c->target.host);
    c->up_port = c->target.port;
  } else {
    close_upstream(c);
  }
  if (c->close_after || h->stopping)
    return conn_close(c);
  access_log(c);
  return begin_head(c);
}

static int flush_cout(conn *c) {
  while (pending(&c->cout)) {
    ssize_t w = send_some(c->cfd, c->cout.data + c->cout.off,
                          pending(&c->cout));
    if (w < 0)
      return conn_close(c);
    if (w == 0)
      return 0;
    c->cout.off += (size_t)w;
    c->last_ms = api->now_ms(c->hp->ctx);
    if (c->state == S_EXCHANGE) {
      c->resp_started = 1;
      c->bytes_down += (uint64_t)w;
      api->inc(c->hp->sm.bytes[SM_DOWN], (uint64_t)w);
    }
  }
  c->cout.off = c->cout.len = 0;
  return 0;
}

static int flush_response_body(conn *c) {
  while (c->uscan > c->uin.off) {
    ssize_t w = send_some(c->cfd, c->uin.data + c->uin.off,
                          c->uscan - c->uin.off);
    if (w < 0)
      return conn_close(c);
    if (w == 0)
      return 0;
    c->uin.off += (size_t)w;
    c->resp_started = 1;
    c->bytes_down += (uint64_t)w;
    c->last_ms = api->now_ms(c->hp->ctx);
    api->inc(c->hp->sm.bytes[SM_DOWN], (uint64_t)w);
  }
  if (c->uin.off == c->uin.len)
    c->uin.off = c->uin.len = c->uscan = 0;
  return 0;
}

/* Writes our reply, or the response, to the client, and moves the
 * exchange on when a part of it is out. */
static int pump_client(conn *c) {
  for (;;) {
    if (flush_cout(c) == GONE)
      return GONE;
    if (pending(&c->cout))
      return 0;
    if (c->state == S_REPLY)
      return reply_done(c);
    if (c->state != S_EXCHANGE)
      return 0;
    if (c->down_state == D_HEAD) {
      if (c->uin.len == 0 || parse_response(c) == GONE)
        return c->uin.len == 0 ? 0 : GONE;
      if (c->down_state == D_HEAD && !pending(&c->cout))
        return 0; /* more of the head to come */
      continue;   /* a head to write */
    }
    if (flush_response_body(c) == GONE)
      return GONE;
    if (c->uscan > c->uin.off)
      return 0;
    if (c->down_state == D_BODY && c->resp_done)
      c->down_state = D_DONE;
    if (c->down_state != D_DONE)
      return 0;
    if (c->up_state == U_DONE)
      return finish_exchange(c);
    return conn_close(c); /* the response came before the request ended */
  }
}

static void start_response(conn *c) {
  hh_free(&c->resp);
  hh_init(&c->resp, HTTP_RESPONSE, &c->hp->conf.lim);
  if (hh_method(&c->req) == HTTP_HEAD)
    hh_expect_no_body(&c->resp);
  buf_compact(&c->uin, NULL);
  c->uscan = 0;
}

static int write_response_head(conn *c, int interim) {
  size_t max = hh_write_max(&c->resp);
  if (c->cout.cap - c->cout.len < max) {
    char *d = realloc(c->cout.data, c->cout.len + max);
    if (!d)
      return -1;
    c->cout.data = d;
    c->cout.cap = c->cout.len + max;
  }
  ssize_t n = hh_write_response(
      &c->resp, c->uin.data, interim ? 0 : c->close_after,
      interim ? 1 : hh_minor(&c->req), c->cout.data + c->cout.len,
      c->cout.cap - c->cout.len);
  if (n < 0)
    return -1;
  c->cout.len += (size_t)n;
  return 0;
}

/* A complete response head is at the start of uin. */
static int on_response_head(conn *c) {
  hp *h = c->hp;
  int status = hh_status(&c->resp);
  /* 101: we never forward Upgrade, so never asked for it. */
  if (status < 100 || status > 599 || status == 101)
    return fail_exchange(c, 502);
  if (status / 100 == 1) {
    if (++c->interim > MAX_INTERIM)
      return fail_exchange(c, 502);
    if (hh_minor(&c->req) && write_response_head(c, 1) < 0)
      return fail_exchange(c, 502);
    c->uin.off = c->resp.head_len;
    start_response(c);
    return 0;
  }
  c->close_after = c->close_after || !hh_keep_alive(&c->req) ||
                   hh_needs_eof(&c->resp) || c->up_state != U_DONE ||
                   h->stopping;
  if (write_response_head(c, 0) < 0)
    return fail_exchange(c, 502);
  if (!hh_keep_alive(&c->resp))
    c->up_dirty = 1;
  count_status(c, status);
  c->uin.off = c->resp.head_len;
  c->uscan = c->uin.off;
  int r = hh_body_begin(&c->resp);
  if (r == HH_ERROR)
    return fail_exchange(c, 502);
  c->down_state = D_BODY;
  c->resp_done = r == HH_DONE;
  if (c->resp_done && pending(&c->uin))
    c->up_dirty = 1;
  return scan_response_body(c);
}

/* Parses what upstream sent while a response head is expected. */
static int parse_response(conn *c) {
  while (c->state == S_EXCHANGE && c->down_state == D_HEAD &&
         !pending(&c->cout) && c->uin.len > 0) {
    int r = hh_parse(&c->resp, c->uin.data, c->uin.len);
    if (r == HH_MORE)
      return 0;
    if (r == HH_ERROR)
      return fail_exchange(c, 502);
    if (on_response_head(c) == GONE)
      return GONE;
  }
  return 0;
}

/* The upstream closed (or failed) while this exchange ran. */
static int start_open(conn *c);

static int upstream_eof(conn *c, int error) {
  c->up_dirty = 1;
  if (c->down_state == D_HEAD) {
    /* A kept connection the origin closed just as we used it: open a new
     * one once, when nothing of the body was sent yet. */
    if (c->reused && !c->retried && !c->resp_seen && c->body_sent == 0 &&
        c->interim == 0) {
      c->retried = 1;
      close_upstream(c);
      c->uin.off = c->uin.len = c->uscan = 0;
      return start_open(c);
    }
    return fail_exchange(c, 502);
  }
  if (!error && c->down_state == D_BODY && !c->resp_done &&
      hh_body_eof(&c->resp) == HH_DONE) {
    c->resp_done = 1;
    close_upstream(c);
    return pump_client(c);
  }
  if (c->down_state == D_BODY && c->resp_done) {
    close_upstream(c);
    return pump_client(c);
  }
  return conn_close(c); /* cut short: only closing tells the client */
}

static int exchange_upstream_readable(conn *c) {
  hp *h = c->hp;
  size_t max = c->down_state == D_HEAD ? head_cap(h) : buf_max(h);
  size_t got = 0;
  size_t *scan = c->down_state == D_BODY ? &c->uscan : NULL;
  if (c->down_state == D_HEAD && c->uin.off > 0)
    buf_compact(&c->uin, NULL);
  int r = buf_read(c->ufd, &c->uin, max, scan, &got);
  if (r == RD_AGAIN || (r == RD_FULL && c->down_state != D_HEAD))
    return 0;
  if (r == RD_FULL) /* cannot happen: hh_parse fails before */
    return fail_exchange(c, 502);
  if (r == RD_EOF || r == RD_ERROR)
    return upstream_eof(c, r == RD_ERROR);
  c->resp_seen = 1;
  c->last_ms = api->now_ms(h->ctx);
  if (c->down_state == D_HEAD)
    return parse_response(c);
  return scan_response_body(c);
}

static int build_request(conn *c) {
  size_t max = hh_write_max(&c->req);
  if (c->uout.cap < max) {
    char *d = realloc(c->uout.data, max);
    if (!d)
      return -1;
    c->uout.data = d;
    c->uout.cap = max;
  }
  ssize_t n = hh_write_request(&c->req, c->cin.data, &c->target,
                               c->uout.data, c->uout.cap);
  if (n < 0)
    return -1;
  c->uout.off = 0;
  c->uout.len = (size_t)n;
  return 0;
}

/* The upstream socket is ready (new or kept): run the exchange. */
static int run_exchange(conn *c) {
  hp *h = c->hp;
  c->up_idle = 0;
  c->up_dirty = 0;
  c->close_after = 0;
  c->state = S_EXCHANGE;
  c->up_state = U_HEAD;
  c->down_state = D_HEAD;
  c->resp_seen = 0;
  c->interim = 0;
  buf_free(&c->cout);
  start_response(c);
  arm_timer(c, T_IDLE, h->conf.idle_timeout_ms);
  if (scan_request_body(c) == GONE || pump_up(c) == GONE)
    return GONE;
  update_io(c);
  return 0;
}

/* ---- opening through the connector ----------------------------------------- */

static void open_done(void *arg, const ph_open_result *res);

static int start_open(conn *c) {
  hp *h = c->hp;
  ph_open_request rq = {.size = sizeof(rq),
                        .protocol = PH_PROTO_TCP,
                        .port = c->target.port,
                        .host = c->target.host,
                        .principal = c->principal[0] ? c->principal : NULL};
  c->state = S_OPEN;
  c->t_open_us = now_us();
  arm_timer(c, T_IDLE, h->conf.idle_timeout_ms);
  int64_t id = h->connector->open(h->connector_self, &rq, open_done, c);
  if (id <= 0)
    return reply(c, 400, AFTER_CLOSE);
  c->open_id = id;
  update_io(c);
  return 0;
}

static void upstream_io(ph_io *io, int fd, int revents, void *arg);

static void open_done(void *arg, const ph_open_result *res) {
  conn *c = arg;
  hp *h = c->hp;
  c->open_id = 0;
  int code = res->code;
  if (code == PH_OPEN_OK && res->fd < 0)
    code = PH_OPEN_INTERNAL_ERROR;
  stream_metrics_stage(&h->sm, SM_OPEN, stream_metrics_result(code),
                       seconds_since(c->t_open_us));
  stream_metrics_open(&h->sm, code);
  if (code != PH_OPEN_OK) {
    if (res->fd >= 0)
      close(res->fd);
    reply(c, open_map_http_status(code), AFTER_CLOSE);
    return;
  }
  c->ufd = res->fd;
  c->up_active = 1;
  api->gauge_add(h->sm.active, 1);
  c->uio = api->io_new(h->ctx, c->ufd, 0, upstream_io, c);
  if (!c->uio) {
    reply(c, 502, AFTER_CLOSE);
    return;
  }
  if (c->method_class == MC_CONNECT) {
    reply(c, 200, AFTER_TUNNEL);
    return;
  }
  c->uout.off = 0; /* the head built for this request (again on a retry) */
  run_exchange(c);
}

/* ---- authorization ----------------------------------------------------------- */

static int proceed(conn *c);
static int deny(conn *c, int status);

static void auth_done(void *arg, int verdict) {
  conn *c = arg;
  hp *h = c->hp;
  c->auth_id = 0;
  int allow = verdict == PH_AUTH_ALLOW;
  stream_metrics_stage(&h->sm, SM_AUTHORIZATION,
                       allow ? SM_SUCCESS : SM_REJECTED,
                       seconds_since(c->t_auth_us));
  if (!allow) {
    wipe_free(&c->pending_token, &c->pending_len);
    deny(c, verdict == PH_AUTH_UNAVAILABLE ? 503 : 407);
    return;
  }
  memcpy(c->principal, c->pending_user, sizeof(c->principal));
  wipe_free(&c->token, &c->token_len);
  c->token = c->pending_token;
  c->token_len = c->pending_len;
  c->pending_token = NULL;
  c->pending_len = 0;
  proceed(c);
}

static int deny(conn *c, int status) {
  int after = status == 407 && c->req_body_done && hh_keep_alive(&c->req)
                  ? AFTER_NEXT
                  : AFTER_CLOSE;
  return reply(c, status, after) == GONE ? GONE : 1;
}

/* 0 when authorized (or no check is needed), GONE, or 1 when a check
 * started or a refusal is being written. */
static int authorize(conn *c, const char *value, size_t len) {
  hp *h = c->hp;
  if (h->conf.auth == AUTH_NONE)
    return 0;
  if (!value)
    return deny(c, 407);
  if (c->token && c->token_len == len && memcmp(c->token, value, len) == 0)
    return 0; /* verified earlier on this connection */
  char pair[520];
  const char *user, *pass;
  size_t ulen, plen;
  if (len > MAX_TOKEN ||
      hh_basic_decode(value, len, pair, sizeof(pair), &user, &ulen, &pass,
                      &plen) < 0) {
    explicit_bzero(pair, sizeof(pair));
    return deny(c, 407);
  }
  memcpy(c->pending_user, user, ulen + 1);
  c->pending_token = malloc(len);
  if (!c->pending_token) {
    explicit_bzero(pair, sizeof(pair));
    return deny(c, 503);
  }
  memcpy(c->pending_token, value, len);
  c->pending_len = len;
  c->state = S_AUTH;
  c->t_auth_us = now_us();
  int64_t id = h->authorizer->check_password(h->authorizer_self, user, ulen,
                                              pass, plen, auth_done, c);
  explicit_bzero(pair, sizeof(pair));
  if (id <= 0) {
    wipe_free(&c->pending_token, &c->pending_len);
    return deny(c, 407);
  }
  c->auth_id = id;
  arm_timer(c, T_IDLE, h->conf.idle_timeout_ms);
  update_io(c);
  return 1;
}

/* Authorized: CONNECT opens a stream; a forward reuses the kept upstream
 * when it goes to the same place, or opens one. */
static int proceed(conn *c) {
  if (c->method_class == MC_FORWARD && c->up_idle &&
      c->up_port == c->target.port &&
      strcasecmp(c->up_host, c->target.host) == 0) {
    c->reused = 1;
    return run_exchange(c);
  }
  close_upstream(c);
  return start_open(c);
}

/* ---- request heads --------------------------------------------------------- */

static int on_request_head(conn *c) {
  hp *h = c->hp;
  c->t_req_us = now_us();
  c->method_class =
      hh_method(&c->req) == HTTP_CONNECT ? MC_CONNECT : MC_FORWARD;
  int st = hh_target_parse(&c->req, c->cin.data, &c->target);
  if (st)
    return reply(c, st, AFTER_CLOSE);
  PH_LOG(api, h->ctx, PH_LOG_DEBUG, "http request target",
         PH_STR("method_class", method_classes[c->method_class]),
         PH_STR("host", c->target.host), PH_INT("port", c->target.port));
  int r = hh_body_begin(&c->req);
  if (r == HH_ERROR)
    return reply(c, 400, AFTER_CLOSE);
  c->req_body_done = r == HH_DONE || c->method_class == MC_CONNECT;
  if (c->method_class == MC_FORWARD && build_request(c) < 0)
    return reply(c, 503, AFTER_CLOSE);
  hh_span v;
  int has = hh_find(&c->req, c->cin.data, "proxy-authorization", &v);
  /* The head's bytes are not needed any more: body bytes follow. */
  c->cin.off = c->req.head_len;
  c->cscan = c->cin.off;
  int a = authorize(c, has ? c->cin.data + v.off : NULL, has ? v.len : 0);
  if (a != 0)
    return a == GONE ? GONE : 0;
  return proceed(c);
}

/* The method class of a head that could not be parsed. */
static void guess_class(conn *c) {
  c->method_class = c->cin.len >= 8 && memcmp(c->cin.data, "CONNECT ", 8) == 0
                        ? MC_CONNECT
                        : MC_FORWARD;
}

static int parse_request(conn *c) {
  int r = hh_parse(&c->req, c->cin.data, c->cin.len);
  if (r == HH_MORE)
    return 0;
  if (r == HH_ERROR) {
    guess_class(c);
    return reply(c, c->req.status, AFTER_CLOSE);
  }
  api->timer_set(c->timer, 0, 0);
  c->timer_kind = T_NONE;
  return on_request_head(c);
}

static int begin_head(conn *c) {
  hp *h = c->hp;
  if (h->stopping && !pending(&c->cin))
    return conn_close(c);
  c->state = S_HEAD;
  hh_free(&c->req);
  hh_free(&c->resp);
  hh_init(&c->req, HTTP_REQUEST, &h->conf.lim);
  hh_init(&c->resp, HTTP_RESPONSE, &h->conf.lim);
  buf_free(&c->cout);
  buf_free(&c->uout);
  if (!c->up_idle)
    buf_free(&c->uin);
  else
    c->uin.off = c->uin.len = 0;
  if (pending(&c->cin) == 0)
    buf_free(&c->cin); /* an idle connection holds no buffer */
  else
    buf_compact(&c->cin, NULL);
  c->cscan = c->uscan = 0;
  c->status = 0;
  c->method_class = MC_FORWARD;
  c->counted = c->reused = c->retried = c->req_body_done = 0;
  c->resp_done = c->resp_seen = c->resp_started = c->close_after = 0;
  c->up_dirty = 0;
  c->bytes_up = c->bytes_down = c->body_sent = 0;
  c->t_req_us = 0;
  c->open_id = c->auth_id = 0;
  if (pending(&c->cin)) {
    /* Parsed on the next loop turn, not here: a client that pipelines
     * many refused requests must not make this recurse. */
    arm_timer(c, T_NEXT, 1);
  } else if (c->first) {
    arm_timer(c, T_HEADER, h->conf.header_timeout_ms);
  } else {
    arm_timer(c, T_KEEPALIVE, h->conf.idle_timeout_ms);
  }
  update_io(c);
  return 0;
}

/* ---- I/O callbacks ---------------------------------------------------------- */

static int client_readable(conn *c) {
  hp *h = c->hp;
  size_t got = 0;
  int r;
  switch (c->state) {
  case S_HEAD:
    r = buf_read(c->cfd, &c->cin, head_cap(h), NULL, &got);
    if (r == RD_AGAIN)
      return 0;
    if (r != RD_DATA) /* EOF or error: nothing to answer */
      return conn_close(c);
    if (c->timer_kind == T_KEEPALIVE)
      arm_timer(c, T_HEADER, h->conf.header_timeout_ms);
    if (c->timer_kind == T_NEXT)
      return 0; /* the timer parses what is there */
    return parse_request(c);
  case S_AUTH:
  case S_OPEN:
    r = buf_read(c->cfd, &c->cin, buf_max(h), &c->cscan, &got);
    if (r == RD_EOF || r == RD_ERROR)
      return conn_close(c); /* cancels the open or the check */
    return 0;
  case S_EXCHANGE:
    r = buf_read(c->cfd, &c->cin, buf_max(h), &c->cscan, &got);
    if (r == RD_EOF || r == RD_ERROR)
      return conn_close(c); /* the request body was cut short */
    if (r != RD_DATA)
      return 0;
    c->last_ms = api->now_ms(h->ctx);
    if (scan_request_body(c) == GONE)
      return GONE;
    return pump_up(c);
  case S_LINGER: {
    char drop[4096];
    ssize_t n = recv(c->cfd, drop, sizeof(drop), 0);
    if (n > 0)
      c->lingered += (uint64_t)n;
    if (n == 0 || c->lingered > LINGER_BYTES ||
        (n < 0 && errno != EAGAIN && errno != EINTR))
      return conn_close(c);
    return 0;
  }
  default:
    return 0;
  }
}

static int client_step(conn *c) {
  if (pump_client(c) == GONE)
    return GONE;
  update_io(c);
  return 0;
}

static void client_io(ph_io *io, int fd, int revents, void *arg) {
  conn *c = arg;
  (void)io;
  (void)fd;
  if (c->state == S_TUNNEL) {
    relay_client_io(c->relay, revents); /* may free c */
    return;
  }
  if ((revents & PH_READ) && client_readable(c) == GONE)
    return;
  if ((revents & PH_WRITE) &&
      (c->state == S_EXCHANGE || c->state == S_REPLY) &&
      pump_client(c) == GONE)
    return;
  update_io(c);
}

static int upstream_step(conn *c) {
  if (c->up_idle) {
    /* A kept upstream said something (EOF, or bytes nobody asked for). */
    close_upstream(c);
    return 0;
  }
  if (c->state != S_EXCHANGE)
    return 0;
  if (exchange_upstream_readable(c) == GONE)
    return GONE;
  if (c->state != S_EXCHANGE)
    return 0;
  return pump_client(c);
}

static void upstream_io(ph_io *io, int fd, int revents, void *arg) {
  conn *c = arg;
  (void)io;
  (void)fd;
  if (revents & PH_READ) {
    if (upstream_step(c) == GONE)
      return;
  }
  if ((revents & PH_WRITE) && c->state == S_EXCHANGE) {
    if (pump_up(c) == GONE)
      return;
    if (c->state == S_EXCHANGE && pump_client(c) == GONE)
      return;
  }
  update_io(c);
}

static void timer_fired(ph_timer *t, void *arg) {
  conn *c = arg;
  hp *h = c->hp;
  (void)t;
  switch (c->timer_kind) {
  case T_HEADER:
    guess_class(c);
    reply(c, 408, AFTER_CLOSE);
    return;
  case T_NEXT:
    arm_timer(c, T_HEADER, h->conf.header_timeout_ms);
    parse_request(c);
    return;
  case T_KEEPALIVE:
  case T_LINGER:
    conn_close(c);
    return;
  case T_IDLE: {
    int64_t idle = api->now_ms(h->ctx) - c->last_ms;
    if (idle < h->conf.idle_timeout_ms) {
      api->timer_set(c->timer, (uint64_t)(h->conf.idle_timeout_ms - idle),
                     0);
      return;
    }
    if (c->state == S_EXCHANGE || c->state == S_OPEN ||
        c->state == S_AUTH)
      fail_exchange(c, 504);
    else
      conn_close(c);
    return;
  }
  default:
    return;
  }
}

static void on_accept(void *arg, int fd, const struct sockaddr *peer,
                      socklen_t peerlen) {
  hp *h = arg;
  (void)peer;
  (void)peerlen;
  conn *c = calloc(1, sizeof(*c));
  if (!c) {
    close(fd);
    listener_release(h->listener);
    return;
  }
  c->hp = h;
  c->cfd = fd;
  c->ufd = -1;
  c->first = 1;
  c->next = h->conns;
  if (h->conns)
    h->conns->prev = c;
  h->conns = c;
  h->n_conns++;
  api->gauge_add(h->m_clients, 1);
  c->cio = api->io_new(h->ctx, fd, 0, client_io, c);
  c->timer = api->timer_new(h->ctx, timer_fired, c);
  if (!c->cio || !c->timer) {
    conn_free(c);
    return;
  }
  if (begin_head(c) == GONE)
    return;
  c->first = 0; /* later heads wait for idle_timeout first */
  /* A client usually sends its request right after connecting: read it
   * now rather than one loop iteration (and an epoll_wait) later. */
  if (client_readable(c) == GONE)
    return;
  if (c->state == S_HEAD && pending(&c->cin) == 0)
    buf_free(&c->cin); /* nothing yet: an idle connection holds no buffer */
  update_io(c);
}

/* ---- module lifecycle ------------------------------------------------------- */

static void read_conf(hp *h) {
  hp_conf *k = &h->conf;
  k->lim.max_line = (size_t)api->conf_int(h->ctx, "max_request_line");
  k->lim.max_header_bytes = (size_t)api->conf_int(h->ctx, "max_header_bytes");
  k->lim.max_headers = (size_t)api->conf_int(h->ctx, "max_headers");
  k->header_timeout_ms = api->conf_int(h->ctx, "header_timeout");
  k->idle_timeout_ms = api->conf_int(h->ctx, "idle_timeout");
  k->buffer_size = (size_t)api->conf_int(h->ctx, "buffer_size");
  k->splice = (int)api->conf_int(h->ctx, "splice");
  const char *auth = api->conf_str(h->ctx, "auth");
  k->auth = auth && strcmp(auth, "password") == 0 ? AUTH_PASSWORD : AUTH_NONE;
}

static int hp_init(ph_ctx *ctx, const ph_api *a, void **state) {
  api = a;
  hp *h = calloc(1, sizeof(*h));
  if (!h)
    return PH_ENOMEM;
  *state = h;
  h->ctx = ctx;
  read_conf(h);
  if (stream_metrics_init(&h->sm, api, ctx, SM_CLIENT) != PH_OK)
    return PH_EINVAL;
  ph_metric *m = api->metric(ctx, &request_def);
  if (!m)
    return PH_EINVAL;
  for (int mc = 0; mc < MC_COUNT; mc++)
    for (int sc = 0; sc < SC_COUNT; sc++) {
      const char *v[] = {method_classes[mc], status_classes[sc]};
      h->requests[mc][sc] = api->series(m, v);
    }
  ph_metric_def cd = {"http_proxy_clients",
                      "HTTP proxy client connections open now",
                      PH_METRIC_GAUGE, NULL, 0, NULL, 0};
  ph_metric_def rd = {
      "http_proxy_clients_refused_total",
      "HTTP proxy connections closed at once because max_clients was reached",
      PH_METRIC_COUNTER, NULL, 0, NULL, 0};
  ph_metric *cm = api->metric(ctx, &cd), *rm = api->metric(ctx, &rd);
  if (!cm || !rm)
    return PH_EINVAL;
  h->m_clients = api->series(cm, NULL);
  h->m_refused = api->series(rm, NULL);
  h->announce = api->topic(ctx, PH_LISTENER_TOPIC, PH_LISTENER_TYPE);
  return h->announce ? PH_OK : PH_EINVAL;
}

static int hp_start(void *state) {
  hp *h = state;
  h->connector = api->service_get(h->ctx, PH_CONNECTOR_SERVICE,
                                  PH_CONNECTOR_MAJOR, 0, &h->connector_self);
  if (!h->connector) {
    PH_LOG(api, h->ctx, PH_LOG_ERROR, "no connector service",
           PH_STR("service", PH_CONNECTOR_SERVICE));
    return PH_ENOENT;
  }
  if (h->conf.auth == AUTH_PASSWORD) {
    h->authorizer =
        api->service_get(h->ctx, PH_AUTHORIZER_SERVICE, PH_AUTHORIZER_MAJOR,
                         0, &h->authorizer_self);
    if (!h->authorizer) {
      PH_LOG(api, h->ctx, PH_LOG_ERROR,
             "auth = password needs a module providing the authorizer "
             "service (for example auth_local)",
             PH_STR("service", PH_AUTHORIZER_SERVICE));
      return PH_ENOENT;
    }
  }
  listener_opts o = {
      .address = api->conf_str(h->ctx, "listen"),
      .backlog = (int)api->conf_int(h->ctx, "backlog"),
      .reuseport = (int)api->conf_int(h->ctx, "reuseport"),
      .max_clients = (int)api->conf_int(h->ctx, "max_clients"),
      .announce = h->announce,
      .on_accept = on_accept,
      .arg = h,
      .refused_total = h->m_refused,
  };
  char err[256];
  h->listener = listener_open(api, h->ctx, &o, err, sizeof(err));
  if (!h->listener) {
    PH_LOG(api, h->ctx, PH_LOG_ERROR, "cannot listen", PH_STR("reason", err));
    return PH_EINVAL;
  }
  listener_resume(h->listener);
  PH_LOG(api, h->ctx, PH_LOG_INFO, "http proxy listening",
         PH_STR("listen", o.address), PH_INT("port",
                                             listener_port(h->listener)),
         PH_STR("auth", h->conf.auth == AUTH_PASSWORD ? "password" : "none"));
  return PH_OK;
}

static int hp_reload(void *state) {
  hp *h = state;
  int auth = h->conf.auth;
  read_conf(h);
  h->conf.auth = auth; /* the authorizer is looked up at start only */
  return PH_OK;
}

/* Stop accepting, close idle connections, let the others finish their
 * request (without keep-alive) or their tunnel, within the host's drain
 * deadline. */
static int hp_stop(void *state) {
  hp *h = state;
  h->stopping = 1;
  if (h->listener) /* announces bound = 0 */
    listener_close(h->listener);
  h->listener = NULL;
  conn *next;
  for (conn *c = h->conns; c; c = next) {
    next = c->next;
    if (c->state == S_HEAD && pending(&c->cin) == 0)
      conn_close(c);
  }
  if (h->n_conns == 0)
    return PH_OK;
  h->stop_pending = 1;
  return PH_STOP_PENDING;
}

static void hp_destroy(void *state) {
  hp *h = state;
  if (!h)
    return;
  h->stop_pending = 0;
  while (h->conns)
    conn_free(h->conns);
  if (h->listener)
    listener_close(h->listener);
  if (h->connector)
    api->service_release(h->ctx, PH_CONNECTOR_SERVICE);
  if (h->authorizer)
    api->service_release(h->ctx, PH_AUTHORIZER_SERVICE);
  free(h);
}

static const char *const hp_requires[] = {PH_CONNECTOR_SERVICE, NULL};

PROXYHOST_MODULE = {
    PH_MODULE_HEADER("http_proxy", "1.0.0"),
    .description = "HTTP proxy: CONNECT tunnels and absolute-form "
                   "forwarding with keep-alive",
    .requires = hp_requires,
    .config = hp_keys,
    .init = hp_init,
    .start = hp_start,
    .reload = hp_reload,
    .stop = hp_stop,
    .destroy = hp_destroy,
};
