/* SPDX-License-Identifier: BSD-2-Clause */
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
 * so that it is not read, a hangup probe notices it.
 *
 * The session skeleton (modules/frontend/frontend_session.h) holds what
 * every frontend repeats: the client's watcher, the deadline and the
 * hangup probe, the check and the open with their cancellation, the
 * relay, the one end of a connection and the drain. This file is the
 * SOCKS5 part: the messages, the replies and the access log line.
 *
 * A connector's lease (connector.h) comes with the target: this file
 * holds it with the target while the success reply goes out, and ends it
 * (CLIENT_ERROR) if the connection closes then; the relay's hand-over
 * passes it to the skeleton, which tells its first byte and its end.
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

#include "frontend/access_log.h"
#include "lib/clocks.h"
#include "frontend/frontend_check.h"
#include "frontend/frontend_gate.h"
#include "frontend/frontend_server.h"
#include "frontend/frontend_services.h"
#include "frontend/listener.h"
#include "lib/metric_table.h"
#include "frontend/open_map.h"
#include "frontend/relay.h"
#include "socks5_proto.h"
#include "frontend/stream_metrics.h"

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
  frontend_session fs; /* the client's socket, timer, check, open, relay */
  s5_server *s;
  int target_fd;
  ph_stream *target_st; /* the open's stream, when it answered with one */
  ph_open_lease *lease; /* the target's, until the relay takes it */
  int state;
  char *user; /* the principal being checked, then authenticated */
  /* With a validation step (the "validation" key) only: the password,
   * kept from the check to the request, wiped as soon as the validation
   * took its copy (and in s5_free). */
  char *pass;
  size_t pass_len;
  int authed; /* the authorizer allowed user */
  /* Timestamps in µs (CLOCK_MONOTONIC). */
  int64_t t_accept;
  uint64_t bytes_up, bytes_down; /* relayed, for the access log */
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
  uint16_t port;  /* the request's target, for log_target */
  char host[256];
} s5_conn;

struct s5_server {
  ph_ctx *ctx;
  frontend_server fs; /* sessions, listener, connector, authorizer */
  ph_topic *topic;
  stream_metrics sm;
  ph_series *m_clients, *m_refused, *m_handshake_fail;
  /* Configuration. */
  char listen[65]; /* as started: these keys need a restart */
  int64_t backlog, reuseport, max_clients;
  int password;
  int64_t handshake_ms, idle_ms;
  size_t buffer_size;
  int use_splice;
};

static const ph_api *api;

/* The key table, generated from socks5.ini.sample (its "; type:" lines)
 * by tools/gen_conf_keys.awk into socks5_keys.c. The bounds the code
 * needs of the shared keys (backlog, max_clients, buffer_size) are held
 * again by frontend_check (frontend_check.h). */
extern const ph_conf_key s5_keys[];

static const char *const s5_requires[] = {PH_CONNECTOR_SERVICE, NULL};

/* ---- ending a connection ---------------------------------------------
 *
 * The guard rule (guard.h) is the skeleton's: every entry (the client's
 * watcher and the timer, the open's, the check's and the relay's
 * answers, a stop) reaches this file between frontend_session_enter and
 * frontend_session_leave, and closing (frontend_session_close) releases
 * everything at once; the memory goes (s5_free) at the outermost leave.
 * Code that runs after a callee may have ended the connection checks
 * frontend_session_dead (advance does, every round). */

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
                       mono_seconds_since(c->t_accept));
  if (result != R_SUCCESS)
    api->inc(c->s->m_handshake_fail, 1);
}

/* The access line (access_log.h), one per stream: no credentials; the
 * target only with log_target. Connections that never got to a request
 * are logged rate-limited. */
static void access_log(s5_conn *c, uint64_t up, uint64_t down) {
  access_line l = {
      .method = c->opened ? "CONNECT" : NULL,
      .user = c->authed ? c->user : NULL,
      .status = access_socks5_reply_name(c->reply),
      .code = c->reply,
      .result = result_names[c->result],
      .end = c->end ? c->end : c->why,
      .bytes_up = up,
      .bytes_down = down,
      .duration_us = mono_us() - c->t_accept,
      .host = c->opened ? c->host : NULL,
      .port = c->port,
  };
  access_log_write(&c->fs, &l, !c->opened);
}

/* ops->end: exactly once. The line, and what only SOCKS5 holds (the
 * target before the relay took it); the skeleton releases the rest. */
static void s5_end(void *owner, int how) {
  s5_conn *c = owner;
  if (frontend_session_relaying(&c->fs)) /* destroyed while relaying */
    api->gauge_add(c->s->sm.active, -1);
  if (how == FRONTEND_END_LOG)
    access_log(c, c->bytes_up, c->bytes_down);
  if (c->target_fd >= 0)
    close(c->target_fd);
  c->target_fd = -1;
  if (c->target_st)
    ph_stream_close(c->target_st);
  c->target_st = NULL;
  /* Closed before the relay took it (the reply could not be written, its
   * deadline, a destroy): our side went away, not the target. */
  ph_open_lease *l = c->lease;
  c->lease = NULL;
  ph_open_lease_end(l, PH_LEASE_END_CLIENT_ERROR);
}

/* ops->free: once no entry runs. */
static void wipe_pass(s5_conn *c) {
  if (c->pass) {
    explicit_bzero(c->pass, c->pass_len);
    free(c->pass);
  }
  c->pass = NULL;
  c->pass_len = 0;
}

static void s5_free(void *owner) {
  s5_conn *c = owner;
  wipe_pass(c);
  free(c->user);
  free(c);
}

/* Ends a connection that never reached the relay. */
static void conn_close(s5_conn *c, int result, const char *why) {
  if (c->result == R_NONE)
    c->result = result;
  if (!c->why)
    c->why = why;
  handshake_over(c, result);
  frontend_session_close(&c->fs, FRONTEND_END_LOG);
}

/* Gone before an answer: ending cancels what runs for it. */
static void client_left(s5_conn *c) {
  conn_close(c, R_CLOSED,
             c->state == ST_OPENING ? "closed during open" : "closed");
}

/* ---- the deadline ----------------------------------------------------
 *
 * One deadline per stage (the handshake, the success reply, the linger;
 * none during the open, which the connector bounds). While the client is
 * not read at all (an open or a check runs and the handshake buffer is
 * full) the skeleton probes for its hangup (ops->hangup). */

static void set_deadline(s5_conn *c, int64_t ms) {
  frontend_session_deadline(&c->fs, ms);
}

static void watch(s5_conn *c, int events) {
  frontend_session_watch(&c->fs, events);
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
    ssize_t w = send(c->fs.fd, c->out + c->out_off, c->out_len - c->out_off,
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

/* ops->relay_done: the relay closed both ends. */
static void s5_relay_done(void *owner, const relay_stats *st, int end) {
  s5_conn *c = owner;
  api->gauge_add(c->s->sm.active, -1);
  c->bytes_up = st->up;
  c->bytes_down = st->down;
  c->end = end == RELAY_END_IDLE    ? "idle_timeout"
           : end == RELAY_END_ERROR ? "error"
                                    : "closed";
  frontend_session_close(&c->fs, FRONTEND_END_LOG);
}

static void start_relay(s5_conn *c) {
  s5_server *s = c->s;
  c->state = ST_RELAY;
  frontend_relay_opts o = {.idle_timeout_ms = s->idle_ms,
                           .buffer_size = s->buffer_size,
                           .use_splice = s->use_splice};
  stream_end target = {c->target_fd, c->target_st};
  ph_open_lease *lease = c->lease;
  c->target_fd = -1; /* the relay owns them, even on failure */
  c->target_st = NULL;
  c->lease = NULL;
  api->gauge_add(s->sm.active, 1);
  if (frontend_session_relay(&c->fs, target, lease, c->in, c->len, &o) !=
      PH_OK) {
    api->gauge_add(s->sm.active, -1);
    PH_LOG_RL(api, s->ctx, PH_LOG_WARN, "socks5 relay could not start");
    c->result = R_FAILURE;
    frontend_session_close(&c->fs, FRONTEND_END_LOG);
  }
}

/* ---- the state machine ------------------------------------------------ */

static void advance(s5_conn *c);

/* ops->auth_done. */
static void s5_auth_done(void *owner, int verdict) {
  s5_conn *c = owner;
  uint8_t ans[2];
  if (verdict != PH_AUTH_ALLOW) {
    free(c->user);
    c->user = NULL;
    wipe_pass(c);
    fail_with(c, ans, s5_encode_auth_status(ans, 0), R_REJECTED,
              verdict == PH_AUTH_UNAVAILABLE ? "authorizer unavailable"
                                             : "credentials refused");
  } else {
    c->authed = 1;
    queue_out(c, ans, s5_encode_auth_status(ans, 1));
    c->state = ST_REQUEST;
  }
  advance(c);
}

/* The stream is open on a socket or a stream: the success reply (with
 * the socket's local address; 0.0.0.0:0 for a stream, which has none),
 * then the relay. */
static void reply_success(s5_conn *c, stream_end target,
                          ph_open_lease *lease) {
  c->target_fd = target.fd;
  c->target_st = target.stream;
  c->lease = lease;
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

/* ops->open_done: the open's stage and counter are recorded already. */
static void s5_open_done(void *owner, int code, int stage,
                         stream_end target, ph_open_lease *lease) {
  s5_conn *c = owner;
  c->answered = 1;
  c->stage = code == PH_OPEN_OK ? PH_STAGE_NONE : stage;
  c->code = code;
  if (code == PH_OPEN_OK) {
    reply_success(c, target, lease);
  } else {
    c->reply = open_map_socks5(code);
    fail_reply(c, c->reply, R_FAILURE, "open failed");
  }
  advance(c);
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
  c->state = ST_AUTH_WAIT; /* before the check, as ST_OPENING before open */
  c->user = strndup((const char *)a->user, a->user_len);
  int r = c->user ? PH_OK : PH_ENOMEM;
  if (r == PH_OK && c->s->fs.validation) {
    /* The validation step needs the password again at the request. */
    c->pass = malloc(a->pass_len ? a->pass_len : 1);
    if (c->pass) {
      memcpy(c->pass, a->pass, a->pass_len);
      c->pass_len = a->pass_len;
    } else {
      r = PH_ENOMEM;
    }
  }
  /* The verdict comes through s5_auth_done (maybe already inside). */
  if (r == PH_OK)
    r = frontend_session_auth(&c->fs, c->user, a->user_len,
                              (const char *)a->pass, a->pass_len);
  if (r != PH_OK) {
    uint8_t ans[2];
    free(c->user);
    c->user = NULL;
    wipe_pass(c);
    fail_with(c, ans, s5_encode_auth_status(ans, 0), R_REJECTED,
              "credentials refused");
  }
}

static void on_request(s5_conn *c, const s5_request *q) {
  s5_server *s = c->s;
  handshake_over(c, R_SUCCESS);
  set_deadline(c, 0); /* the connector bounds the open */
  snprintf(c->host, sizeof(c->host), "%s", q->host);
  c->port = q->port;
  if (api->log_enabled(s->ctx, PH_LOG_DEBUG)) {
    char target[300];
    if (s->fs.log_target)
      PH_LOG(api, s->ctx, PH_LOG_DEBUG, "socks5 request",
             PH_UINT("stream", c->fs.id),
             PH_STR("target", access_target_text(q->host, q->port, target,
                                                 sizeof(target))));
    else
      PH_LOG(api, s->ctx, PH_LOG_DEBUG, "socks5 request",
             PH_UINT("stream", c->fs.id));
  }
  c->opened = 1;
  c->state = ST_OPENING;
  /* The answer comes through s5_open_done (maybe already inside), after
   * the validation step when there is one; it copies the credentials. */
  int r;
  if (!s->fs.validation) {
    r = frontend_session_open(&c->fs, q->host, q->port, c->user);
  } else {
    r = frontend_session_open_validated(&c->fs, c->host, q->port, c->user,
                                        c->user,
                                        c->user ? strlen(c->user) : 0,
                                        c->pass, c->pass_len);
    wipe_pass(c);
  }
  if (r != PH_OK) {
    c->answered = 1;
    c->stage = PH_STAGE_PROTOCOL;
    c->code = PH_OPEN_INTERNAL_ERROR; /* counted by frontend_session */
    fail_reply(c, SOCKS5_GENERAL_FAILURE, R_FAILURE, "request refused");
  }
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
    ssize_t n = recv(c->fs.fd, c->in + c->len, room, MSG_DONTWAIT);
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
    ssize_t n = read(c->fs.fd, junk, want);
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
  while (!frontend_session_dead(&c->fs)) {
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
      shutdown(c->fs.fd, SHUT_WR);
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

/* ops->client_io (the relay gets the events once it runs). */
static void s5_client_io(void *owner, int revents) {
  s5_conn *c = owner;
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

/* ops->hangup: the client left while it was not read. */
static void s5_hangup(void *owner) { client_left(owner); }

/* ops->deadline: the stage's deadline passed. */
static void s5_deadline(void *owner) {
  s5_conn *c = owner;
  if (c->state == ST_REPLY_ERR || c->state == ST_LINGER ||
      c->state == ST_REPLY_OK)
    conn_close(c, c->result, NULL);
  else
    conn_close(c, R_TIMEOUT, "handshake timeout");
}

/* ops->stop: clients still in their handshake are closed; opens and
 * relays finish on their own within the host's drain deadline. */
static void s5_on_stop(void *owner) {
  s5_conn *c = owner;
  if (c->state == ST_GREETING || c->state == ST_AUTH ||
      c->state == ST_REQUEST)
    conn_close(c, R_CLOSED, "shutting down");
}

static const frontend_session_ops s5_ops = {
    .client_io = s5_client_io,
    .deadline = s5_deadline,
    .hangup = s5_hangup,
    .auth_done = s5_auth_done,
    .open_done = s5_open_done,
    .relay_done = s5_relay_done,
    .stop = s5_on_stop,
    .end = s5_end,
    .free = s5_free,
};

static void on_accept(void *arg, int fd, const struct sockaddr *peer,
                      socklen_t peerlen) {
  s5_server *s = arg;
  if (!frontend_server_admit(&s->fs, fd, peer))
    return; /* not in allow_clients: closed, nothing read */
  s5_conn *c = calloc(1, sizeof(*c));
  if (!c) {
    frontend_server_refuse(&s->fs, fd);
    return;
  }
  c->s = s;
  c->target_fd = -1;
  c->reply = -1;
  c->state = ST_GREETING;
  c->t_accept = mono_us();
  int r = frontend_session_start(&s->fs, &c->fs, c, fd, peer, peerlen);
  frontend_session_enter(&c->fs);
  if (r != PH_OK) {
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
  frontend_session_leave(&c->fs);
}

/* ---- lifecycle -------------------------------------------------------- */

static const ph_metric_table s5_metrics[] = {
    PH_METRIC("proxyhost_socks5_clients", PH_METRIC_GAUGE,
              "SOCKS5 client connections open now", PH_METRIC_NO_LABELS,
              PH_METRIC_NO_BUCKETS, s5_server, m_clients),
    PH_METRIC("proxyhost_socks5_clients_refused_total", PH_METRIC_COUNTER,
              "SOCKS5 connections closed at once because max_clients was "
              "reached",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, s5_server,
              m_refused),
    PH_METRIC("proxyhost_socks5_handshake_failures_total", PH_METRIC_COUNTER,
              "SOCKS5 connections that ended before a complete request",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, s5_server,
              m_handshake_fail),
    PH_METRIC_END};

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
  unsigned uses = SM_FRONTEND | SM_STAGE_BIT(SM_SOCKS5_HANDSHAKE);
  if (frontend_uses_validation(ctx, api))
    uses |= SM_STAGE_BIT(SM_REMOTE_VALIDATION);
  if (!s->topic || stream_metrics_init(&s->sm, api, ctx, SM_CLIENT, uses) < 0)
    return PH_EINVAL;
  if (ph_metric_table_register(api, ctx, s5_metrics, s) != PH_OK)
    return PH_EINVAL;
  frontend_server_init(&s->fs, api, ctx, &s5_ops, &s->sm, s->m_clients);
  return PH_OK;
}

static int s5_start(void *state) {
  s5_server *s = state;
  if (frontend_server_services_get(&s->fs, s->password) != PH_OK)
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
  s->fs.listener = listener_open(api, s->ctx, &o, err, sizeof(err));
  if (!s->fs.listener) {
    PH_LOG(api, s->ctx, PH_LOG_ERROR, "socks5 listener failed",
           PH_STR("reason", err));
    return PH_EINVAL;
  }
  listener_resume(s->fs.listener);
  frontend_gate_attach(&s->fs); /* paused while the pool is stale */
  PH_LOG(api, s->ctx, PH_LOG_INFO, "socks5 listening", PH_STR("listen", listen),
         PH_INT("port", listener_port(s->fs.listener)),
         PH_STR("auth", s->password ? "password" : "none"));
  return PH_OK;
}

/* Timeouts, buffer size, splice and allow_clients apply to new
 * connections (log_target at once); the listener and the authentication
 * mode stay as started. */
static int s5_reload(void *state) {
  s5_server *s = state;
  read_settings(s); /* the others are PH_CONF_RESTART keys */
  frontend_server_reload(&s->fs); /* allow_clients, log_target */
  return PH_OK;
}

/* Stop accepting; the sessions decide (s5_on_stop). */
static int s5_stop(void *state) {
  s5_server *s = state;
  return frontend_server_stop(&s->fs);
}

static void s5_destroy(void *state) {
  s5_server *s = state;
  if (!s)
    return;
  frontend_server_destroy(&s->fs); /* ends the sessions, quietly */
  frontend_server_services_release(&s->fs);
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
