/* socks5: the SOCKS5 frontend (RFC 1928 CONNECT, RFC 1929 username and
 * password), over the "connector" service.
 *
 * One connection goes through these states:
 *
 *   GREETING -> [AUTH -> AUTH_WAIT] -> REQUEST -> OPENING -> REPLY_OK
 *            -> relay (relay.c owns both sockets from then on)
 *
 * and any of them may end in REPLY_ERR -> LINGER -> closed. The handshake
 * lives in a fixed buffer (S5_HANDSHAKE_BUF bytes, larger than any one
 * message); bytes the client pipelines after its request are kept there
 * and go to the target first. The success reply is sent only after the
 * connector reported the stream open (strict open); a failure is mapped
 * with open_map_socks5(). A client that goes away during the open cancels
 * it, which frees its dial slot at once; when its bytes filled the buffer,
 * so that it is not read, a hangup probe notices it (see the timer).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <proxyhost/authorizer.h>
#include <proxyhost/connector.h>
#include <proxyhost/module.h>

#include "frontend_check.h"
#include "frontend_services.h"
#include "frontend_keys.h"
#include "guard.h"
#include "hangup.h"
#include "listener.h"
#include "open_map.h"
#include "relay.h"
#include "socks5_proto.h"
#include "stream_metrics.h"

#define S5_HANDSHAKE_BUF 600 /* > S5_MAX_MESSAGE */
#define S5_LINGER_MS 1000    /* reading what is left before closing */
#define S5_LINGER_BYTES 65536

_Static_assert(S5_HANDSHAKE_BUF >= S5_MAX_MESSAGE, "a message must fit");

enum conn_state {
  ST_GREETING,
  ST_AUTH,
  ST_AUTH_WAIT,
  ST_REQUEST,
  ST_OPENING,
  ST_REPLY_OK,  /* success reply being written; then the relay */
  ST_REPLY_ERR, /* an error answer being written; then LINGER */
  ST_LINGER,    /* write side shut: read and drop until EOF or deadline */
  ST_RELAY
};

/* How a connection ended, for the access log and metrics. */
enum conn_result {
  R_NONE = 0,
  R_SUCCESS,
  R_FAILURE,  /* protocol error or failed open */
  R_TIMEOUT,  /* handshake deadline */
  R_REJECTED, /* no acceptable method, credentials refused */
  R_CLOSED    /* the client went away before an answer */
};
static const char *const result_names[] = {
    "none", "success", "failure", "timeout", "rejected", "client_closed"};

typedef struct s5_server s5_server;

typedef struct s5_conn {
  s5_server *s;
  struct s5_conn *prev, *next;
  int fd;
  int target_fd;
  ph_stream *target_st; /* the open's stream, when it answered with one */
  ph_io *io;
  ph_timer *timer;
  ph_relay *relay;
  guard g;             /* entries running; ended (guard.h) */
  int64_t deadline_ms; /* the stage's deadline (api->now_ms), 0: none */
  int probing;         /* the client is not watched: probe for a hangup */
  int state;
  int64_t open_id, auth_id;
  char *user; /* the authenticated principal (auth = password) */
  /* Timestamps in µs (CLOCK_MONOTONIC). */
  int64_t t_accept, t_request, t_reply;
  /* Outcome, for the access log. */
  int result;
  int stage, code; /* ph_open_stage / ph_open_code of the open */
  int reply;       /* SOCKS5 reply code sent, or -1 */
  const char *why; /* handshake failure reason (static text) */
  const char *end; /* how the relay ended (static text), or NULL */
  int opened;      /* the request reached the connector */
  int answered;    /* the connector answered (stage/code are set) */
  int handshake_done;
  size_t linger_left;
  /* Handshake input, and one pending answer. */
  size_t len;
  uint8_t in[S5_HANDSHAKE_BUF];
  size_t out_off, out_len;
  uint8_t out[S5_MAX_REPLY];
  struct sockaddr_in6 peer; /* or a sockaddr_in; formatted when logged */
} s5_conn;

struct s5_server {
  ph_ctx *ctx;
  ph_listener *listener;
  ph_topic *topic;
  const ph_connector_v1 *connector;
  void *cself;
  const ph_authorizer_v1 *authorizer;
  void *aself;
  stream_metrics sm;
  ph_series *m_clients, *m_refused, *m_handshake_fail;
  /* Configuration. */
  char listen[65]; /* as started: these keys need a restart */
  int64_t backlog, reuseport, max_clients;
  int password;
  int64_t handshake_ms, idle_ms;
  size_t buffer_size;
  int use_splice;
  s5_conn *conns;
  size_t n_conns;
  int stopping;
};

static const ph_api *api;

static const ph_conf_key s5_keys[] = {
    FRONTEND_KEYS("127.0.0.1:1080", "SOCKS5"),
    PH_CONF_KEY("handshake_timeout", PH_CONF_DURATION, "10s", 100, 300000, 0, NULL,
     "deadline from accept to a complete request (with authentication)", NULL),
    PH_CONF_KEY("idle_timeout", PH_CONF_DURATION, "300s", 1000, 86400000, 0, NULL,
     "a relayed stream with no bytes either way for this long is closed", NULL),
    PH_CONF_END};

static const char *const s5_requires[] = {PH_CONNECTOR_SERVICE, NULL};

static int64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static double seconds_since(int64_t t0_us) {
  return (double)(now_us() - t0_us) / 1e6;
}

/* ---- ending a connection ---------------------------------------------
 *
 * One rule against use-after-free (guard.h). A connection is entered from
 * outside only by its loop callbacks (on_accept, conn_io, conn_timer) and
 * by the callbacks of other modules' services (open_done, auth_done,
 * relay_done, relay_first_down); each runs between conn_enter and
 * conn_leave. Ending it (conn_end) releases everything at once: the open
 * or check in flight is cancelled, watcher and timer freed, sockets
 * closed, the connection unlinked with its listener slot given back. Its
 * memory is freed by the outermost conn_leave, at the end of the event
 * (at once when no entry runs: a stop or destroy walking the list). Code
 * that runs after a callee may have ended the connection checks
 * guard_dead (advance does, every round), so a callee can never free the
 * connection under its caller. */

static void maybe_stop_done(s5_server *s) {
  if (s->stopping && s->n_conns == 0) {
    s->stopping = 0;
    api->stop_done(s->ctx);
  }
}

/* The handshake stage ends once, with a result. */
static void handshake_over(s5_conn *c, int result) {
  if (c->handshake_done)
    return;
  c->handshake_done = 1;
  int r = result == R_SUCCESS    ? SM_SUCCESS
          : result == R_TIMEOUT  ? SM_TIMEOUT
          : result == R_REJECTED ? SM_REJECTED
                                 : SM_FAILURE;
  stream_metrics_stage(&c->s->sm, SM_SOCKS5_HANDSHAKE, r,
                       seconds_since(c->t_accept));
  if (result != R_SUCCESS)
    api->inc(c->s->m_handshake_fail, 1);
}

#define PEER_TEXT (INET6_ADDRSTRLEN + 8)

/* The client's address as "ip:port" or "[ip6]:port", for logs only (not
 * formatted per connection unless a line is written). */
static const char *peer_text(const s5_conn *c, char out[PEER_TEXT]) {
  char ip[INET6_ADDRSTRLEN] = "?";
  if (c->peer.sin6_family == AF_INET) {
    const struct sockaddr_in *a = (const struct sockaddr_in *)&c->peer;
    inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
    snprintf(out, PEER_TEXT, "%s:%d", ip, ntohs(a->sin_port));
  } else {
    inet_ntop(AF_INET6, &c->peer.sin6_addr, ip, sizeof(ip));
    snprintf(out, PEER_TEXT, "[%s]:%d", ip, ntohs(c->peer.sin6_port));
  }
  return out;
}

/* One line per stream at info: no credentials, no target. Connections
 * that never got to a request are logged rate-limited. */
static void access_log(s5_conn *c, uint64_t up, uint64_t down) {
  if (!api->log_enabled(c->s->ctx, PH_LOG_INFO))
    return;
  int64_t dur = now_us() - c->t_accept;
  const char *result = result_names[c->result];
  char peer[PEER_TEXT];
  peer_text(c, peer);
  if (c->opened) {
    PH_LOG(api, c->s->ctx, PH_LOG_INFO, "socks5 stream", PH_STR("client", peer),
           PH_STR("result", result),
           PH_STR("stage", c->answered ? ph_open_stage_name(c->stage) : "-"),
           PH_STR("code", c->answered ? ph_open_code_name(c->code) : "-"),
           PH_INT("reply", c->reply), PH_UINT("bytes_up", up),
           PH_UINT("bytes_down", down), PH_INT("duration_us", dur),
           PH_STR("end", c->end ? c->end : "-"),
           PH_STR("auth", c->s->password ? "password" : "none"));
  } else {
    PH_LOG_RL(api, c->s->ctx, PH_LOG_INFO, "socks5 handshake failed",
              PH_STR("client", peer), PH_STR("result", result),
              PH_STR("reason", c->why ? c->why : "closed"),
              PH_INT("reply", c->reply), PH_INT("duration_us", dur));
  }
}

static void unlink_conn(s5_conn *c) {
  s5_server *s = c->s;
  if (c->prev)
    c->prev->next = c->next;
  else
    s->conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  s->n_conns--;
  api->gauge_add(s->m_clients, -1);
  listener_release(s->listener);
}

/* Releases everything the connection holds and cancels what it still
 * waits for; the struct stays, inert. Not for a relaying connection (the
 * relay owns the sockets then). */
static void conn_release(s5_conn *c) {
  s5_server *s = c->s;
  if (c->auth_id > 0)
    s->authorizer->cancel(s->aself, c->auth_id);
  if (c->open_id > 0)
    s->connector->cancel(s->cself, c->open_id);
  c->auth_id = c->open_id = 0;
  api->io_free(c->io);
  api->timer_free(c->timer);
  c->io = NULL;
  c->timer = NULL;
  if (c->fd >= 0)
    close(c->fd);
  if (c->target_fd >= 0)
    close(c->target_fd);
  c->fd = c->target_fd = -1;
  if (c->target_st)
    ph_stream_close(c->target_st);
  c->target_st = NULL;
  unlink_conn(c);
  maybe_stop_done(s);
}

/* Frees the struct of an ended connection. Not inlined: GCC's
 * -Wuse-after-free cannot know that the guard frees only where no entry
 * runs, and would flag the conn_leave after a conn_end. */
static __attribute__((noinline)) void conn_free(s5_conn *c) {
  free(c->user);
  free(c);
}

static void conn_enter(s5_conn *c) { guard_enter(&c->g); }

static void conn_leave(s5_conn *c) {
  if (guard_leave(&c->g))
    conn_free(c);
}

/* Ends the connection: released now, freed now or by the outermost
 * conn_leave. */
static void conn_end(s5_conn *c) {
  conn_release(c);
  if (guard_end(&c->g))
    conn_free(c);
}

/* Ends a connection that never reached the relay. */
static void conn_close(s5_conn *c, int result, const char *why) {
  if (c->result == R_NONE)
    c->result = result;
  if (!c->why)
    c->why = why;
  handshake_over(c, result);
  access_log(c, 0, 0);
  conn_end(c);
}

/* Gone before an answer: ending cancels what runs for it. */
static void client_left(s5_conn *c) {
  conn_close(c, R_CLOSED,
             c->state == ST_OPENING ? "closed during open" : "closed");
}

/* ---- the timer ---------------------------------------------------------
 *
 * One timer per connection, for the deadline of its stage (the handshake,
 * the success reply, the linger; none during the open, which the
 * connector bounds). While the connection does not watch its client at
 * all (an open or a check runs and the handshake buffer is full), the
 * loop cannot see the client leave: the timer then also fires every
 * HANGUP_PROBE_MS to ask hangup_seen (hangup.h). */

static void arm_timer(s5_conn *c) {
  uint64_t after = 0; /* stopped */
  if (c->deadline_ms > 0) {
    int64_t left = c->deadline_ms - api->now_ms(c->s->ctx);
    after = left > 0 ? (uint64_t)left : 1;
  }
  if (c->probing && (after == 0 || after > HANGUP_PROBE_MS))
    after = HANGUP_PROBE_MS;
  api->timer_set(c->timer, after, 0);
}

/* A new stage: its deadline in ms from now, 0 for none. */
static void set_deadline(s5_conn *c, int64_t ms) {
  c->deadline_ms = ms > 0 ? api->now_ms(c->s->ctx) + ms : 0;
  arm_timer(c);
}

/* What to wait for from the client; with nothing, probe for its hangup. */
static void watch(s5_conn *c, int events) {
  api->io_set(c->io, events);
  int probe = events == 0;
  if (c->probing != probe) {
    c->probing = probe;
    arm_timer(c);
  }
}

/* ---- writing answers -------------------------------------------------- */

static void queue_out(s5_conn *c, const uint8_t *p, size_t n) {
  memcpy(c->out, p, n);
  c->out_off = 0;
  c->out_len = n;
}

/* Sends the pending answer: 1 all sent, 0 wait for writable, -1 error. */
static int flush_out(s5_conn *c) {
  while (c->out_off < c->out_len) {
    ssize_t w = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
                     MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
    }
    c->out_off += (size_t)w;
  }
  c->out_off = c->out_len = 0;
  return 1;
}

/* Answers with an error reply (or an RFC 1929 failure), then lingers. */
static void fail_with(s5_conn *c, const uint8_t *ans, size_t n, int result,
                      const char *why) {
  if (c->result == R_NONE)
    c->result = result;
  if (!c->why)
    c->why = why;
  handshake_over(c, result);
  queue_out(c, ans, n);
  c->state = ST_REPLY_ERR;
  set_deadline(c, S5_LINGER_MS);
}

static void fail_reply(s5_conn *c, int rep, int result, const char *why) {
  uint8_t r[S5_MAX_REPLY];
  c->reply = rep;
  fail_with(c, r, s5_encode_reply(r, rep, NULL), result, why);
}

/* ---- the relay -------------------------------------------------------- */

static void relay_first_down(void *arg) {
  s5_conn *c = arg;
  conn_enter(c);
  stream_metrics_stage(&c->s->sm, SM_TTFB, SM_SUCCESS,
                       seconds_since(c->t_reply));
  conn_leave(c);
}

static void relay_done(void *arg, const relay_stats *st, int end) {
  s5_conn *c = arg;
  s5_server *s = c->s;
  conn_enter(c);
  c->relay = NULL; /* ended, and closed both sockets */
  api->inc(s->sm.bytes[SM_UP], st->up);
  api->inc(s->sm.bytes[SM_DOWN], st->down);
  api->gauge_add(s->sm.active, -1);
  c->end = end == RELAY_END_IDLE    ? "idle_timeout"
           : end == RELAY_END_ERROR ? "error"
                                    : "closed";
  access_log(c, st->up, st->down);
  conn_end(c);
  conn_leave(c);
}

static void start_relay(s5_conn *c) {
  s5_server *s = c->s;
  c->t_reply = now_us();
  ph_io *cio = c->io; /* handed over: conn_io passes its events on */
  c->io = NULL;
  api->timer_free(c->timer);
  c->timer = NULL;
  c->state = ST_RELAY;
  relay_opts o = {.idle_timeout_ms = s->idle_ms,
                  .buffer_size = s->buffer_size,
                  .use_splice = s->use_splice,
                  .first_down = relay_first_down,
                  .done = relay_done,
                  .arg = c,
                  .client_io = cio};
  stream_end client = end_fd(c->fd), target = {c->target_fd, c->target_st};
  c->fd = c->target_fd = -1; /* the relay owns them, even on failure */
  c->target_st = NULL;
  api->gauge_add(s->sm.active, 1);
  c->relay = relay_start(api, s->ctx, client, target, c->in, c->len, &o);
  if (!c->relay) {
    api->gauge_add(s->sm.active, -1);
    PH_LOG_RL(api, s->ctx, PH_LOG_WARN, "socks5 relay could not start");
    c->result = R_FAILURE;
    access_log(c, 0, 0);
    conn_end(c);
  }
}

/* ---- the state machine ------------------------------------------------ */

static void advance(s5_conn *c);

static void auth_done(void *arg, int verdict) {
  s5_conn *c = arg;
  conn_enter(c);
  c->auth_id = 0;
  uint8_t ans[2];
  if (verdict != PH_AUTH_ALLOW) {
    free(c->user);
    c->user = NULL;
    fail_with(c, ans, s5_encode_auth_status(ans, 0), R_REJECTED,
              verdict == PH_AUTH_UNAVAILABLE ? "authorizer unavailable"
                                             : "credentials refused");
  } else {
    queue_out(c, ans, s5_encode_auth_status(ans, 1));
    c->state = ST_REQUEST;
  }
  advance(c);
  conn_leave(c);
}

/* The stream is open on a socket or a stream: the success reply (with
 * the socket's local address; 0.0.0.0:0 for a stream, which has none),
 * then the relay. */
static void reply_success(s5_conn *c, stream_end target) {
  c->target_fd = target.fd;
  c->target_st = target.stream;
  struct sockaddr_storage ss;
  socklen_t sl = sizeof(ss);
  memset(&ss, 0, sizeof(ss));
  ss.ss_family = AF_INET;
  if (c->target_fd >= 0 &&
      getsockname(c->target_fd, (struct sockaddr *)&ss, &sl) < 0) {
    memset(&ss, 0, sizeof(ss));
    ss.ss_family = AF_INET;
  }
  uint8_t r[S5_MAX_REPLY];
  c->reply = SOCKS5_SUCCEEDED;
  c->result = R_SUCCESS;
  queue_out(c, r, s5_encode_reply(r, SOCKS5_SUCCEEDED, (struct sockaddr *)&ss));
  c->state = ST_REPLY_OK;
  set_deadline(c, c->s->handshake_ms);
}

static void open_done(void *arg, const ph_open_result *res) {
  s5_conn *c = arg;
  s5_server *s = c->s;
  conn_enter(c);
  c->open_id = 0;
  c->answered = 1;
  stream_end target;
  int code = relay_take_open(res, &target);
  c->stage = code == PH_OPEN_OK ? PH_STAGE_NONE : res->stage;
  c->code = code;
  stream_metrics_stage(&s->sm, SM_OPEN, stream_metrics_result(code),
                       seconds_since(c->t_request));
  stream_metrics_open(&s->sm, code);
  if (code == PH_OPEN_OK) {
    reply_success(c, target);
  } else {
    c->reply = open_map_socks5(code);
    fail_reply(c, c->reply, R_FAILURE, "open failed");
  }
  advance(c);
  conn_leave(c);
}

/* Greeting complete: pick the method the configuration demands. */
static void on_greeting(s5_conn *c, const s5_greeting *g) {
  uint8_t ans[2];
  if (c->s->password ? g->password : g->no_auth) {
    int m = c->s->password ? S5_METHOD_PASSWORD : S5_METHOD_NONE;
    queue_out(c, ans, s5_encode_method(ans, m));
    c->state = c->s->password ? ST_AUTH : ST_REQUEST;
    return;
  }
  fail_with(c, ans, s5_encode_method(ans, S5_METHOD_UNACCEPTABLE), R_REJECTED,
            "no acceptable method");
}

static void on_auth(s5_conn *c, const s5_auth *a) {
  s5_server *s = c->s;
  c->state = ST_AUTH_WAIT; /* before the check, as ST_OPENING before open */
  c->user = strndup((const char *)a->user, a->user_len);
  int64_t id = c->user ? s->authorizer->check_password(
                             s->aself, c->user, a->user_len,
                             (const char *)a->pass, a->pass_len, auth_done, c)
                       : PH_ENOMEM;
  if (id <= 0) {
    uint8_t ans[2];
    free(c->user);
    c->user = NULL;
    fail_with(c, ans, s5_encode_auth_status(ans, 0), R_REJECTED,
              "credentials refused");
    return;
  }
  c->auth_id = id;
}

static void on_request(s5_conn *c, const s5_request *q) {
  s5_server *s = c->s;
  c->t_request = now_us();
  handshake_over(c, R_SUCCESS);
  set_deadline(c, 0); /* the connector bounds the open */
  if (api->log_enabled(s->ctx, PH_LOG_DEBUG)) {
    char peer[PEER_TEXT];
    PH_LOG(api, s->ctx, PH_LOG_DEBUG, "socks5 request",
           PH_STR("client", peer_text(c, peer)), PH_STR("host", q->host),
           PH_INT("port", q->port));
  }
  ph_open_request req = {.size = sizeof(req),
                         .protocol = PH_PROTO_TCP,
                         .port = q->port,
                         .host = q->host,
                         .principal = c->user,
                         .flags = PH_OPEN_F_STREAM};
  c->opened = 1;
  c->state = ST_OPENING;
  int64_t id = s->connector->open(s->cself, &req, open_done, c);
  if (id <= 0) {
    c->answered = 1;
    c->stage = PH_STAGE_PROTOCOL;
    c->code = PH_OPEN_INTERNAL_ERROR;
    stream_metrics_open(&s->sm, c->code);
    fail_reply(c, SOCKS5_GENERAL_FAILURE, R_FAILURE, "request refused");
    return;
  }
  c->open_id = id;
}

static void consume(s5_conn *c, size_t n) {
  c->len -= n;
  memmove(c->in, c->in + n, c->len);
}

/* Parses what the buffer holds for the current state. 1: keep going
 * (also when the step ended the connection: advance sees it), 0: wait for
 * more input or for a callback. */
static int parse_step(s5_conn *c) {
  int r;
  switch (c->state) {
  case ST_GREETING: {
    s5_greeting g;
    r = s5_parse_greeting(c->in, c->len, &g);
    if (r > 0) {
      consume(c, (size_t)r);
      on_greeting(c, &g);
    }
    break;
  }
  case ST_AUTH: {
    s5_auth a;
    r = s5_parse_auth(c->in, c->len, &a);
    if (r > 0) {
      on_auth(c, &a);
      /* The authorizer copied the password: wipe ours. */
      explicit_bzero(c->in, (size_t)r);
      consume(c, (size_t)r);
    } else if (r < 0) {
      uint8_t ans[2];
      fail_with(c, ans, s5_encode_auth_status(ans, 0), R_FAILURE,
                "malformed authentication");
      return 1;
    }
    break;
  }
  case ST_REQUEST: {
    s5_request q;
    r = s5_parse_request(c->in, c->len, &q);
    if (r > 0) {
      consume(c, (size_t)r);
      on_request(c, &q);
    } else if (r < 0 && s5_error_reply(r) >= 0) {
      fail_reply(c, s5_error_reply(r), R_FAILURE,
                 r == S5_ERR_COMMAND ? "command not supported"
                 : r == S5_ERR_ATYP  ? "address type not supported"
                                     : "malformed request");
      return 1;
    }
    break;
  }
  default:
    return 0;
  }
  if (r == S5_NEED_MORE)
    return 0;
  if (r < 0)
    conn_close(c, R_FAILURE, "not a SOCKS5 handshake");
  return 1;
}

/* Reads what the client sent into the handshake buffer. 1 ok, 0 EOF,
 * -1 error. A short read means the socket is drained: no second read
 * just to meet EAGAIN (the watcher is level-triggered). */
static int read_in(s5_conn *c) {
  while (c->len < sizeof(c->in)) {
    size_t room = sizeof(c->in) - c->len;
    ssize_t n = recv(c->fd, c->in + c->len, room, MSG_DONTWAIT);
    if (n > 0) {
      c->len += (size_t)n;
      if ((size_t)n < room)
        return 1;
      continue;
    }
    if (n == 0)
      return 0;
    if (errno == EINTR)
      continue;
    return errno == EAGAIN || errno == EWOULDBLOCK ? 1 : -1;
  }
  return 1;
}

/* Reads and drops what is left after an error answer. 1: keep going. */
static int linger_read(s5_conn *c) {
  char junk[4096];
  for (;;) {
    size_t want = c->linger_left < sizeof(junk) ? c->linger_left : sizeof(junk);
    if (want == 0)
      return 0;
    ssize_t n = read(c->fd, junk, want);
    if (n > 0) {
      c->linger_left -= (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
}

/* Runs the connection as far as it can go now. Each round first checks
 * that it still lives: a step may end it (a service answering inside the
 * call that started it, a closing client). */
static void advance(s5_conn *c) {
  while (!guard_dead(&c->g)) {
    if (c->out_len > 0) {
      int f = flush_out(c);
      if (f < 0) {
        conn_close(c, R_CLOSED, "client write failed");
        return;
      }
      if (f == 0) {
        watch(c, PH_WRITE);
        return;
      }
    }
    switch (c->state) {
    case ST_REPLY_OK:
      start_relay(c);
      return;
    case ST_REPLY_ERR:
      c->state = ST_LINGER;
      c->linger_left = S5_LINGER_BYTES;
      shutdown(c->fd, SHUT_WR);
      if (!linger_read(c)) {
        conn_close(c, c->result, NULL);
        return;
      }
      watch(c, PH_READ);
      return;
    case ST_LINGER:
      watch(c, PH_READ);
      return;
    case ST_AUTH_WAIT:
    case ST_OPENING:
      /* Watch the client only to see it leave (and keep what it
       * pipelines) while the buffer has room; with a full buffer, probe
       * for its hangup instead (watch). */
      watch(c, c->len == sizeof(c->in) ? 0 : PH_READ);
      return;
    case ST_RELAY: /* the relay has the sockets */
      return;
    default:
      break;
    }
    if (!parse_step(c)) {
      watch(c, PH_READ);
      return;
    }
  }
}

static void on_io(s5_conn *c, int revents) {
  if (c->state == ST_RELAY) {
    relay_client_io(c->relay, revents); /* may end c */
    return;
  }
  if (c->state == ST_LINGER) {
    if (!linger_read(c))
      conn_close(c, c->result, NULL);
    return;
  }
  if ((revents & PH_READ) && c->out_len == 0 && read_in(c) <= 0) {
    client_left(c);
    return;
  }
  advance(c);
}

static void conn_io(ph_io *io, int fd, int revents, void *arg) {
  (void)io;
  (void)fd;
  s5_conn *c = arg;
  conn_enter(c);
  on_io(c, revents);
  conn_leave(c);
}

static void on_timer(s5_conn *c) {
  if (c->probing && hangup_seen(c->fd))
    client_left(c);
  else if (c->deadline_ms == 0 || api->now_ms(c->s->ctx) < c->deadline_ms)
    arm_timer(c); /* a probe before the deadline */
  else if (c->state == ST_REPLY_ERR || c->state == ST_LINGER ||
           c->state == ST_REPLY_OK)
    conn_close(c, c->result, NULL);
  else
    conn_close(c, R_TIMEOUT, "handshake timeout");
}

static void conn_timer(ph_timer *t, void *arg) {
  (void)t;
  s5_conn *c = arg;
  conn_enter(c);
  on_timer(c);
  conn_leave(c);
}

static void on_accept(void *arg, int fd, const struct sockaddr *peer,
                      socklen_t peerlen) {
  s5_server *s = arg;
  s5_conn *c = calloc(1, sizeof(*c));
  if (!c) {
    close(fd);
    listener_release(s->listener);
    return;
  }
  c->s = s;
  c->fd = fd;
  c->target_fd = -1;
  c->reply = -1;
  c->state = ST_GREETING;
  c->t_accept = now_us();
  memcpy(&c->peer, peer, peerlen < sizeof(c->peer) ? peerlen : sizeof(c->peer));
  c->io = api->io_new(s->ctx, fd, 0, conn_io, c);
  c->timer = api->timer_new(s->ctx, conn_timer, c);
  c->next = s->conns;
  if (s->conns)
    s->conns->prev = c;
  s->conns = c;
  s->n_conns++;
  api->gauge_add(s->m_clients, 1);
  conn_enter(c);
  if (!c->io || !c->timer) {
    conn_close(c, R_FAILURE, "out of memory");
  } else {
    set_deadline(c, s->handshake_ms);
    /* A client usually sends its greeting right after connecting: read
     * it now rather than one loop iteration later. */
    if (read_in(c) <= 0)
      conn_close(c, R_CLOSED, "closed");
    else
      advance(c);
  }
  conn_leave(c);
}

/* ---- lifecycle -------------------------------------------------------- */

static ph_series *plain_metric(s5_server *s, const char *name, const char *help,
                               ph_metric_type type) {
  ph_metric_def d = {name, help, type, NULL, 0, NULL, 0};
  ph_metric *m = api->metric(s->ctx, &d);
  return m ? api->series(m, NULL) : NULL;
}

static void read_settings(s5_server *s) {
  s->handshake_ms = api->conf_int(s->ctx, "handshake_timeout");
  s->idle_ms = api->conf_int(s->ctx, "idle_timeout");
  s->buffer_size = (size_t)api->conf_int(s->ctx, "buffer_size");
  s->use_splice = (int)api->conf_int(s->ctx, "splice");
}

static int s5_init(ph_ctx *ctx, const ph_api *a, void **state) {
  api = a;
  s5_server *s = calloc(1, sizeof(*s));
  if (!s)
    return PH_ENOMEM;
  *state = s;
  s->ctx = ctx;
  read_settings(s);
  const char *auth = api->conf_str(ctx, "auth");
  s->password = auth && strcmp(auth, "password") == 0;
  s->topic = api->topic(ctx, PH_LISTENER_TOPIC, PH_LISTENER_TYPE);
  if (!s->topic || stream_metrics_init(&s->sm, api, ctx, SM_CLIENT) < 0)
    return PH_EINVAL;
  s->m_clients =
      plain_metric(s, "socks5_clients", "SOCKS5 client connections open now",
                   PH_METRIC_GAUGE);
  s->m_refused = plain_metric(
      s, "socks5_clients_refused_total",
      "SOCKS5 connections closed at once because max_clients was reached",
      PH_METRIC_COUNTER);
  s->m_handshake_fail =
      plain_metric(s, "socks5_handshake_failures_total",
                   "SOCKS5 connections that ended before a complete request",
                   PH_METRIC_COUNTER);
  if (!s->m_clients || !s->m_refused || !s->m_handshake_fail)
    return PH_EINVAL;
  return PH_OK;
}

static int s5_start(void *state) {
  s5_server *s = state;
  if (frontend_services_get(s->ctx, api, s->password, &s->connector,
                            &s->cself, &s->authorizer, &s->aself) != PH_OK)
    return PH_ENOENT;
  snprintf(s->listen, sizeof(s->listen), "%s", api->conf_str(s->ctx, "listen"));
  s->backlog = api->conf_int(s->ctx, "backlog");
  s->reuseport = api->conf_int(s->ctx, "reuseport");
  s->max_clients = api->conf_int(s->ctx, "max_clients");
  const char *listen = s->listen;
  listener_opts o = {.address = listen,
                     .backlog = (int)s->backlog,
                     .reuseport = (int)s->reuseport,
                     .max_clients = (int)s->max_clients,
                     .announce = s->topic,
                     .on_accept = on_accept,
                     .arg = s,
                     .refused_total = s->m_refused};
  char err[256];
  s->listener = listener_open(api, s->ctx, &o, err, sizeof(err));
  if (!s->listener) {
    PH_LOG(api, s->ctx, PH_LOG_ERROR, "socks5 listener failed",
           PH_STR("reason", err));
    return PH_EINVAL;
  }
  listener_resume(s->listener);
  PH_LOG(api, s->ctx, PH_LOG_INFO, "socks5 listening", PH_STR("listen", listen),
         PH_INT("port", listener_port(s->listener)),
         PH_STR("auth", s->password ? "password" : "none"));
  return PH_OK;
}

/* Timeouts, buffer size and splice apply to new connections; the
 * listener and the authentication mode stay as started. */
static int s5_reload(void *state) {
  s5_server *s = state;
  read_settings(s); /* the others are PH_CONF_RESTART keys */
  return PH_OK;
}

/* Stop accepting; clients still in their handshake are closed, opens and
 * relays finish on their own within the host's drain deadline. */
static int s5_stop(void *state) {
  s5_server *s = state;
  listener_close(s->listener);
  s->listener = NULL;
  for (s5_conn *c = s->conns, *next; c; c = next) {
    next = c->next;
    if (c->state == ST_GREETING || c->state == ST_AUTH ||
        c->state == ST_REQUEST)
      conn_close(c, R_CLOSED, "shutting down");
  }
  if (s->n_conns == 0)
    return PH_OK;
  s->stopping = 1;
  return PH_STOP_PENDING;
}

static void s5_destroy(void *state) {
  s5_server *s = state;
  if (!s)
    return;
  s->stopping = 0;
  while (s->conns) {
    s5_conn *c = s->conns;
    if (c->relay) {
      relay_abort(c->relay);
      c->relay = NULL;
      api->gauge_add(s->sm.active, -1);
    }
    conn_end(c); /* no entry runs: freed at once */
  }
  listener_close(s->listener);
  if (s->connector)
    api->service_release(s->ctx, PH_CONNECTOR_SERVICE);
  if (s->authorizer)
    api->service_release(s->ctx, PH_AUTHORIZER_SERVICE);
  free(s);
}

PROXYHOST_MODULE = {
    PH_MODULE_HEADER("socks5", "1.0.0"),
    .description = "SOCKS5 frontend (RFC 1928 CONNECT, RFC 1929 auth)",
    .requires = s5_requires,
    .config = s5_keys,
    /* The listen address is parsed at start, by the same code. */
    .check = frontend_check,
    .init = s5_init,
    .start = s5_start,
    .reload = s5_reload,
    .stop = s5_stop,
    .destroy = s5_destroy,
};
