/* SPDX-License-Identifier: BSD-2-Clause */
/* The frontend session skeleton (modules/frontend/frontend_session.c)
 * through the real host API of the mock host, with a fake connector and a
 * fake authorizer: the deadline fires once, a check and an open are
 * cancelled when the client closes (read or, not read, probed), the drain
 * on stop with a session in each phase (handshake, check, open, relay)
 * ends with stop_done, exactly one end per session, the validation step
 * before the open (a fake provider: deny, allow, bypass, a refusal, the
 * cancel when the client leaves), answers inside the
 * call leave no stale id, and the guard rule under reentrancy: a callback
 * that closes the session from inside another callback frees nothing
 * before the outermost entry leaves (run under ASan to see it). And the
 * connector's lease (open_lease.h; issue 13, for CP-5-4/CP-5-5):
 * every open asks for it (the extension and, for an older connector,
 * PH_OPEN_F_LEASE) with the listener's name and the
 * session's headers; a relay's lease hears first_byte once and ends
 * once, CLOSED, TARGET_ERROR, CLIENT_ERROR or TIMEOUT as the relay
 * ended, CLIENT_ERROR when the session is closed while relaying; a
 * success without a socket ends its lease at once; a failure's is never
 * touched. And forwarding (issue 13): the session's open_forward asks
 * for it (the extension and the old flag), and open_done sees a
 * success's HTTP proxy and value (open_http_proxy, open_proxy_auth), from
 * the result's extensions (open_ext.h, issue 25) or an older connector's
 * old fields (also a result of SDK 1.6's size), never a failure's,
 * a flagless pointer or a struct too short to hold the value. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "frontend/frontend_server.h"
#include "frontend/hangup.h"
#include <proxyhost/mock.h>
#define HOST_TEST_SETUP setup
#include "fake_authorizer.h"
#include "fake_connector.h"
#include "host_test.h"
#include "loop_test.h"
#include "tap.h"

static stream_metrics sm;
static frontend_server srv;

/* ---- the fake connector and authorizer (t/lib) -------------------------- */

/* Every open is held until the test answers it (open_answer_now) or, in
 * ANSWER_INSIDE mode, answered inside open() itself; an OK answer is one
 * end of a socketpair (the test's end: target_peer()). The fake's
 * prepare hook shapes each answer from F and X. */
static const fc_row connector_rows[] = {
    {.host = "*", .when = FC_HELD, .give = FC_SOCKETPAIR, .peer_nonblock = 1},
    {.host = NULL}};

/* User "inside" is refused inside check_password itself; anyone else is
 * held until the test answers (auth_answer_now, with F.verdict). */
static const fa_row authorizer_rows[] = {
    {.user = "inside", .verdict = PH_AUTH_DENY, .when = FA_INSIDE},
    {.user = "*", .verdict = PH_AUTH_ALLOW, .when = FA_HELD},
    {.user = NULL}};

static fake_connector FC;
static fake_authorizer FA;

enum { ANSWER_LATER = 0, ANSWER_INSIDE };

/* How the next opens are answered (reset by reset_seen). */
static struct fake {
  int open_mode;
  int open_code;   /* what an answered open says */
  int refuse_open; /* the connector refuses the call (returns PH_EINVAL) */
  int verdict;     /* what an answered check says */
  int target_peer; /* the test's end of the last OK open's socketpair */
  /* Leases: give one with each open (give_lease; also with a failure,
   * which must not touch it), a success without a socket (bad_success). */
  int give_lease, bad_success;
  /* The result's old flags and http_forward (http_fwd: its size, 0:
   * NULL), the fields of SDK 1.6 and older. */
  uintptr_t rflags;
  uint32_t http_fwd;
} F;

/* Or the extensions (open_ext.h), kept across reset_seen: lease gives
 * the lease in the result's chain instead of the old field; fwd (its
 * size, 0: none) says HTTP proxy in the chain; junk puts a struct of an
 * unknown type first. */
static struct {
  int lease, junk;
  uint32_t fwd;
  int v16; /* a result of SDK 1.6's size, garbage where ext is now */
} X;

static int fc_admit(void *arg, const ph_open_request *rq) {
  (void)arg;
  return !(rq->flags & PH_OPEN_F_STREAM) || F.refuse_open ? PH_EINVAL : PH_OK;
}

static void fc_prepare(void *arg, const ph_open_request *rq, fc_pending *q) {
  (void)arg;
  (void)rq;
  q->when = F.open_mode == ANSWER_INSIDE ? FC_INSIDE : FC_HELD;
  q->code = F.open_code;
  fc_shape sh = {.on_failure = 1,
                 .no_socket = F.bad_success,
                 .junk = X.junk,
                 .v16 = X.v16};
  sh.lease = !F.give_lease ? FC_LEASE_NONE
             : X.lease     ? FC_LEASE_EXT
                           : FC_LEASE_FIELD;
  if (X.fwd) {
    sh.fwd = FC_FWD_EXT;
    sh.fwd_size = X.fwd;
    sh.proxy_auth = "Basic dTpx";
  } else if (F.http_fwd) {
    sh.fwd = F.rflags & PH_OPEN_R_HTTP_PROXY ? FC_FWD_FLAG : FC_FWD_POINTER;
    sh.fwd_size = F.http_fwd;
    sh.proxy_auth = "Basic dTpw";
  }
  q->shape = sh;
}

/* Answers the last open now (if it is still pending) with F.open_code. */
static void open_answer_now(void) {
  fake_connector_answer(&FC, FC.last.id, F.open_code);
}

/* Answers the last check now (if it is still pending) with F.verdict. */
static void auth_answer_now(void) {
  fake_authorizer_answer(&FA, FA.next_id, F.verdict);
}

/* The test's end of the last OK answer's socketpair, -1 when none. */
static int target_peer(void) {
  int fd = fake_connector_peer(&FC);
  if (fd >= 0)
    F.target_peer = fd;
  return F.target_peer;
}

static void close_target(void) {
  if (target_peer() >= 0)
    close(F.target_peer);
  F.target_peer = -1;
}

/* The lease of this case (the last given); a blank one when none was. */
static fake_lease *lease_now(void) {
  static fake_lease none;
  fake_lease *l = fake_lease_last(&FC.lease);
  return l ? l : &none;
}

/* The lease open_done must have got (NULL: none was given). */
static ph_open_lease *lease_given(void) {
  fake_lease *l = fake_lease_last(&FC.lease);
  return l ? &l->base : NULL;
}

/* It ended, once, and nothing was called on it after. */
static int lease_ended_once(void) {
  return lease_now()->ended && FC.lease.broken == 0;
}

/* ---- the test frontend ------------------------------------------------- */

enum phase { P_HANDSHAKE = 0, P_AUTH, P_OPEN, P_RELAY };

typedef struct tconn {
  frontend_session fs;
  int phase;
  int peer; /* the test's end of the client socketpair */
  int close_in_auth_done, close_in_open_done, relay_in_open_done;
  int64_t relay_idle_ms; /* 0: 60 s */
  int marker;
} tconn;

/* What the callbacks saw, over all sessions. */
static struct seen {
  int client_io, deadlines, hangups, auth_done, open_done, relay_done;
  int ends, ends_logged, frees, stops;
  int last_verdict, last_code;
  ph_open_lease *last_lease; /* what open_done got */
  int last_http_proxy;        /* ... and the session's open_http_proxy */
  const char *last_auth;      /* open_proxy_auth */
  uint32_t last_auth_len;
  int closes_in_end; /* close called again from inside end */
} S;

static void t_close(tconn *c) {
  frontend_session_close(&c->fs, FRONTEND_END_LOG);
}

static void t_client_io(void *owner, int revents) {
  tconn *c = owner;
  S.client_io++;
  if (revents & PH_READ) {
    char b[64];
    ssize_t n = recv(c->fs.fd, b, sizeof(b), 0);
    if (n == 0 || (n < 0 && errno != EAGAIN))
      t_close(c); /* the client left: cancels the check or the open */
  }
}

static void t_deadline(void *owner) {
  S.deadlines++;
  t_close(owner);
}

static void t_hangup(void *owner) {
  S.hangups++;
  t_close(owner);
}

static void t_auth_done(void *owner, int verdict) {
  tconn *c = owner;
  S.auth_done++;
  S.last_verdict = verdict;
  if (c->close_in_auth_done || verdict != PH_AUTH_ALLOW)
    t_close(c);
}

static void t_open_done(void *owner, int code, int stage, stream_end target,
                        ph_open_lease *lease) {
  tconn *c = owner;
  (void)stage;
  S.open_done++;
  S.last_code = code;
  S.last_lease = lease;
  S.last_http_proxy = c->fs.open_http_proxy;
  S.last_auth = c->fs.open_proxy_auth;
  S.last_auth_len = c->fs.open_proxy_auth_len;
  if (code != PH_OPEN_OK || c->close_in_open_done) {
    if (code == PH_OPEN_OK) {
      close(target.fd);
      ph_open_lease_end(lease, PH_LEASE_END_CLIENT_ERROR); /* ours now */
    }
    t_close(c);
    return;
  }
  if (c->relay_in_open_done) {
    frontend_relay_opts o = {c->relay_idle_ms ? c->relay_idle_ms : 60000,
                             16384, 0};
    c->phase = P_RELAY;
    if (frontend_session_relay(&c->fs, target, lease, NULL, 0, &o) != PH_OK)
      t_close(c);
    return;
  }
  close(target.fd);
  ph_open_lease_end(lease, PH_LEASE_END_CLOSED);
}

static void t_relay_done(void *owner, const relay_stats *st, int end) {
  (void)st;
  (void)end;
  S.relay_done++;
  t_close(owner);
}

/* A handshake or a relay is cut at stop; a check or an open finishes. */
static void t_stop(void *owner) {
  tconn *c = owner;
  S.stops++;
  if (c->phase == P_HANDSHAKE || c->phase == P_RELAY)
    t_close(c);
}

static void t_end(void *owner, int how) {
  tconn *c = owner;
  S.ends++;
  if (how == FRONTEND_END_LOG)
    S.ends_logged++;
  /* A second close from inside the end is ignored. */
  frontend_session_close(&c->fs, FRONTEND_END_LOG);
  S.closes_in_end++;
  if (c->peer >= 0)
    close(c->peer);
  c->peer = -1;
}

static void t_free(void *owner) {
  S.frees++;
  free(owner);
}

static const frontend_session_ops ops = {
    .client_io = t_client_io,
    .deadline = t_deadline,
    .hangup = t_hangup,
    .auth_done = t_auth_done,
    .open_done = t_open_done,
    .relay_done = t_relay_done,
    .stop = t_stop,
    .end = t_end,
    .free = t_free,
};

/* A session on a new socketpair; the test keeps the peer. */
static tconn *new_conn(void) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv))
    return NULL;
  tconn *c = calloc(1, sizeof(*c));
  c->peer = sv[1];
  if (frontend_session_start(&srv, &c->fs, c, sv[0], NULL, 0) != PH_OK) {
    t_close(c);
    return NULL;
  }
  return c;
}

static void reset_seen(void) {
  memset(&S, 0, sizeof(S));
  memset(&F, 0, sizeof(F));
  F.target_peer = -1;
  F.verdict = PH_AUTH_ALLOW;
  F.open_code = PH_OPEN_OK;
  fake_connector_clear(&FC); /* counters, log, leases; ids keep going */
  fake_authorizer_clear(&FA);
}

/* ---- the host module ----------------------------------------------------- */

static int setup(void) {
  if (stream_metrics_init(&sm, api, hctx, SM_CLIENT, SM_FRONTEND) != PH_OK)
    return PH_EINVAL;
  frontend_server_init(&srv, api, hctx, &ops, &sm, NULL);
  fake_connector_init(&FC, api, hctx, connector_rows);
  FC.admit = fc_admit;
  FC.prepare = fc_prepare;
  fake_authorizer_init(&FA, api, hctx, authorizer_rows);
  srv.connector = &fake_connector_vt;
  srv.connector_self = &FC;
  srv.authorizer = &fake_authorizer_vt;
  srv.authorizer_self = &FA;
  return PH_OK;
}

static int host_stop(void *state) {
  (void)state;
  return frontend_server_stop(&srv);
}

static void host_destroy(void *state) {
  (void)state;
  frontend_server_destroy(&srv);
  fake_connector_free(&FC);
  fake_authorizer_free(&FA);
}

/* The keys every frontend has (frontend_server_init reads allow_clients
 * and log_target): frontend_keys.ini.sample with modules/frontend/
 * frontend.keys, generated (modules/frontend/local.mk). */
extern const ph_conf_key host_keys[];

static const ph_module host_mod = {
    PH_MODULE_HEADER("fs_host", "1.0.0"),
    .config = host_keys,
    .init = host_init,
    .stop = host_stop,
    .destroy = host_destroy,
};

static ph_mock *mock_up(void) {
  return host_test_start(&host_mod, "[proxyhost]\ndrain_timeout = 3s\n"
                                    "[log]\nlevel = error\n");
}

/* ---- the tests ---------------------------------------------------------- */

static void test_deadline(ph_mock *m) {
  reset_seen();
  tconn *c = new_conn();
  frontend_session_watch(&c->fs, PH_READ);
  frontend_session_deadline(&c->fs, 30);
  ph_mock_run_for(m, 10);
  is_int(S.deadlines, 0, "deadline: not before its time");
  ph_mock_run_for(m, 80);
  is_int(S.deadlines, 1, "deadline: fires once");
  is_int(S.ends, 1, "deadline: one end");
  is_int(S.frees, 1, "deadline: freed");
  is_int(srv.n_sessions, 0, "deadline: unlinked");

  /* Moved and then removed: never fires. */
  reset_seen();
  c = new_conn();
  frontend_session_deadline(&c->fs, 20);
  frontend_session_deadline(&c->fs, 0);
  ph_mock_run_for(m, 60);
  is_int(S.deadlines, 0, "deadline 0: none");
  t_close(c);
  is_int(S.frees, 1, "closed outside an entry: freed at once");
}

/* The client of a read session (PH_READ) leaves; then one end (named
 * ended), the one pending call cancelled (cancels is its counter, named
 * cancelled) and no answer after it (done, named none_after). */
static void client_leaves(ph_mock *m, tconn *c, const int *cancels,
                          const int *done, const char *ended,
                          const char *cancelled, const char *none_after) {
  frontend_session_watch(&c->fs, PH_READ);
  close(c->peer);
  c->peer = -1;
  ph_mock_run_for(m, 20);
  is_int(S.ends, 1, ended);
  is_int(*cancels, 1, cancelled);
  is_int(*done, 0, none_after);
}

static void test_auth_cancel(ph_mock *m) {
  reset_seen();
  tconn *c = new_conn();
  is_int(frontend_session_auth(&c->fs, "u", 1, "p", 1), PH_OK, "check started");
  ok(frontend_session_authing(&c->fs), "check in flight");
  client_leaves(m, c, &FA.cancels, &S.auth_done,
                "client closed during the check: ended",
                "the check was cancelled", "no verdict after the cancel");
  is_int(S.frees, 1, "freed");
}

static void test_open_cancel(ph_mock *m) {
  reset_seen();
  tconn *c = new_conn();
  is_int(frontend_session_open(&c->fs, "ok.fake", 80, NULL), PH_OK,
         "open started");
  ok(frontend_session_opening(&c->fs), "open in flight");
  client_leaves(m, c, &FC.cancels, &S.open_done,
                "client closed during the open: ended",
                "the open was cancelled", "no answer after the cancel");

  /* Not read (PH_READ not asked): the hangup probe notices. */
  reset_seen();
  c = new_conn();
  frontend_session_open(&c->fs, "ok.fake", 80, NULL);
  frontend_session_watch(&c->fs, 0);
  ok(c->fs.probing, "not read during an open: probing");
  (void)send(c->peer, "xxxx", 4, 0); /* unread bytes before the FIN */
  close(c->peer);
  c->peer = -1;
  ph_mock_run_for(m, HANGUP_PROBE_MS / 2);
  is_int(S.hangups, 0, "probe: not before its period");
  ph_mock_run_for(m, HANGUP_PROBE_MS + 100);
  is_int(S.hangups, 1, "probe: the hangup is seen");
  is_int(FC.cancels, 1, "probe: the open was cancelled");
  is_int(S.frees, 1, "probe: freed");

  /* The metrics of an answered open are the skeleton's. */
  reset_seen();
  c = new_conn();
  F.open_code = PH_OPEN_CONNECTION_REFUSED;
  frontend_session_open(&c->fs, "refused.fake", 80, NULL);
  frontend_session_enter(&c->fs);
  open_answer_now();
  is_int(S.last_code, PH_OPEN_CONNECTION_REFUSED,
         "open failure reaches open_done");
  is_int(S.frees, 0, "closed in open_done: not freed inside the entry");
  frontend_session_leave(&c->fs);
  is_int(S.frees, 1, "freed by the outermost leave");
  like(ph_mock_metrics_text(m),
       "tunnelmesh_stream_open_total{component=\"client\",result=\"failure\","
       "error_class=\"connection_refused\",open_mode=\"strict\"} 1",
       "open counted by error class");

  /* Issue 25 item 3: an open the connector refuses in the call is
   * counted here too, for every frontend (http_proxy counted none). */
  c = new_conn();
  F.refuse_open = 1;
  ok(frontend_session_open(&c->fs, "refused.fake", 80, NULL) != PH_OK,
     "a connector's refusal in the call fails the open");
  F.refuse_open = 0;
  like(ph_mock_metrics_text(m),
       "tunnelmesh_stream_open_total{component=\"client\",result=\"failure\","
       "error_class=\"internal_error\",open_mode=\"strict\"} 1",
       "the refusal in the call is counted by the skeleton");
  frontend_session_close(&c->fs, FRONTEND_END_LOG);
}

/* ---- the validation step (frontend_session_open_validated) ------------- */

static struct vfake {
  int calls, cancels;
  int64_t rc;       /* what validate returns: > 0 an id, BYPASS, < 0 */
  int64_t id;       /* held */
  ph_validation_cb cb;
  void *arg;
  char user[64], pass[64], host[64];
  uint16_t port;
  int agent_null;
} V;

static int64_t fake_validate(void *self, const ph_validation_request *rq,
                             ph_validation_cb cb, void *arg) {
  (void)self;
  V.calls++;
  snprintf(V.user, sizeof(V.user), "%.*s", (int)rq->username_len,
           rq->username);
  snprintf(V.pass, sizeof(V.pass), "%.*s", (int)rq->password_len,
           rq->password);
  snprintf(V.host, sizeof(V.host), "%s", rq->host);
  V.port = rq->port;
  V.agent_null = rq->agent == NULL;
  V.cb = cb;
  V.arg = arg;
  V.id = V.rc > 0 ? V.rc : 0;
  return V.rc;
}

static int fake_validate_cancel(void *self, int64_t id) {
  (void)self;
  if (id != V.id || id <= 0)
    return PH_ENOENT;
  V.cancels++;
  V.id = 0;
  return PH_OK;
}

static const ph_validation_v1 validation = {.validate = fake_validate,
                                            .cancel = fake_validate_cancel};

static void validation_answer_now(int verdict) {
  V.id = 0;
  V.cb(V.arg, verdict);
}

static void vreset(int64_t rc) {
  memset(&V, 0, sizeof(V));
  V.rc = rc;
}

static void test_validation(ph_mock *m) {
  /* Without a provider: the open itself, nothing else. */
  reset_seen();
  vreset(0);
  tconn *c = new_conn();
  is_int(frontend_session_open_validated(&c->fs, "ok.fake", 80, "alice",
                                         "alice", 5, "pw", 2),
         PH_OK, "no validation provider: the open starts");
  is_int(FC.opens, 1, "... at once");
  is_int(V.calls, 0, "... and nothing is validated");
  t_close(c);

  srv.validation = &validation;
  /* A deny: no open, the forbidden answer. */
  reset_seen();
  vreset(7);
  c = new_conn();
  is_int(frontend_session_open_validated(&c->fs, "ok.fake", 443, "alice",
                                         "alice", 5, "pw-x", 4),
         PH_OK, "validation started");
  ok(V.calls == 1 && strcmp(V.user, "alice") == 0 &&
         strcmp(V.pass, "pw-x") == 0 && strcmp(V.host, "ok.fake") == 0 &&
         V.port == 443 && V.agent_null,
     "the credentials, the target and no agent reach the provider");
  ok(frontend_session_opening(&c->fs), "the validation counts as opening");
  is_int(FC.opens, 0, "no open before the verdict");
  frontend_session_enter(&c->fs);
  validation_answer_now(PH_VALIDATION_DENY);
  frontend_session_leave(&c->fs);
  is_int(S.last_code, PH_OPEN_FORBIDDEN, "a deny is open_done FORBIDDEN");
  is_int(FC.opens, 0, "... and nothing was opened");
  like(ph_mock_metrics_text(m),
       "tunnelmesh_stream_open_total{component=\"client\",result=\"rejected\","
       "error_class=\"forbidden\",open_mode=\"strict\"} 1",
       "the denial counted as a forbidden open");

  /* UNAVAILABLE is a denial too; an allow opens. */
  reset_seen();
  vreset(8);
  c = new_conn();
  frontend_session_open_validated(&c->fs, "ok.fake", 443, NULL, NULL, 0,
                                  NULL, 0);
  ok(V.calls == 1 && V.user[0] == 0 && V.pass[0] == 0,
     "no credentials: empty username and password");
  validation_answer_now(PH_VALIDATION_UNAVAILABLE);
  is_int(S.last_code, PH_OPEN_FORBIDDEN, "UNAVAILABLE is FORBIDDEN too");
  reset_seen();
  vreset(9);
  F.open_mode = ANSWER_LATER;
  c = new_conn();
  frontend_session_open_validated(&c->fs, "ok.fake", 443, "alice", "alice",
                                  5, "pw", 2);
  validation_answer_now(PH_VALIDATION_ALLOW);
  is_int(FC.opens, 1, "an allow starts the open");
  ok(frontend_session_opening(&c->fs), "... which is in flight");
  t_close(c);
  is_int(FC.cancels, 1, "closing cancels that open");

  /* BYPASS: the open at once; a refusal: forbidden at once. */
  reset_seen();
  vreset(PH_VALIDATION_BYPASS);
  c = new_conn();
  frontend_session_open_validated(&c->fs, "ok.fake", 80, NULL, "u", 1, "p",
                                  1);
  is_int(FC.opens, 1, "BYPASS: opened at once");
  t_close(c);
  reset_seen();
  vreset(PH_EFULL);
  c = new_conn();
  frontend_session_enter(&c->fs);
  is_int(frontend_session_open_validated(&c->fs, "ok.fake", 80, NULL, "u", 1,
                                         "p", 1),
         PH_OK, "a refused validation: PH_OK ...");
  is_int(S.last_code, PH_OPEN_FORBIDDEN, "... answered FORBIDDEN inside");
  is_int(FC.opens, 0, "... nothing opened");
  frontend_session_leave(&c->fs);

  /* The client leaves during the validation: it is cancelled. */
  reset_seen();
  vreset(10);
  c = new_conn();
  frontend_session_open_validated(&c->fs, "ok.fake", 80, NULL, "u", 1, "p",
                                  1);
  client_leaves(m, c, &V.cancels, &S.open_done,
                "client closed during the validation: ended",
                "the validation was cancelled", "no answer after the cancel");
  srv.validation = NULL;
}

static void test_inside_answers(ph_mock *m) {
  (void)m;
  /* A check answered inside check_password that closes the session:
   * nothing is freed before the caller's entry leaves, and no stale id. */
  reset_seen();
  tconn *c = new_conn();
  frontend_session_enter(&c->fs);
  is_int(frontend_session_auth(&c->fs, "inside", 6, "p", 1), PH_OK,
         "inside: the check is accepted");
  ok(frontend_session_dead(&c->fs), "inside: closed by auth_done");
  c->marker = 1; /* the owner is still memory (ASan) */
  is_int(S.frees, 0, "inside: not freed yet");
  is_int((int)c->fs.auth_id, 0, "inside: no stale check id");
  frontend_session_leave(&c->fs);
  is_int(S.frees, 1, "inside: freed by the outermost leave");
  is_int(FA.cancels, 0, "inside: nothing to cancel");

  /* An open answered inside open() with a socket: no stale id either,
   * and closing later cancels nothing. */
  reset_seen();
  F.open_mode = ANSWER_INSIDE;
  c = new_conn();
  frontend_session_enter(&c->fs);
  is_int(frontend_session_open(&c->fs, "ok.fake", 80, NULL), PH_OK,
         "inside: the open is accepted");
  is_int(S.open_done, 1, "inside: answered");
  ok(!frontend_session_opening(&c->fs), "inside: no stale open id");
  frontend_session_leave(&c->fs);
  t_close(c);
  is_int(FC.cancels, 0, "inside: nothing to cancel");
  is_int(S.frees, 1, "inside: freed");
  close_target();

  /* A refused request: no callback, an error. */
  reset_seen();
  c = new_conn();
  ok(frontend_session_open(&c->fs, NULL, 80, NULL) < 0,
     "a refused open returns its status");
  is_int(S.open_done, 0, "refused: no callback");
  t_close(c);
}

static void test_reentrancy(ph_mock *m) {
  /* Nested callbacks: the client's io starts an open answered inside,
   * whose open_done closes the session; then the io callback goes on and
   * touches its owner. */
  reset_seen();
  F.open_mode = ANSWER_INSIDE;
  F.open_code = PH_OPEN_TIMEOUT;
  tconn *c = new_conn();
  frontend_session_enter(&c->fs);
  frontend_session_enter(&c->fs); /* as session_io would, twice nested */
  frontend_session_open(&c->fs, "x.fake", 80, NULL);
  ok(frontend_session_dead(&c->fs), "nested: closed inside");
  frontend_session_watch(&c->fs, PH_READ); /* inert on a dead session */
  frontend_session_deadline(&c->fs, 10);
  c->marker = 2;
  frontend_session_leave(&c->fs);
  is_int(S.frees, 0, "nested: the inner leave does not free");
  frontend_session_leave(&c->fs);
  is_int(S.frees, 1, "nested: the outer leave frees");
  is_int(S.ends, 1, "nested: one end");
  ph_mock_run_for(m, 30);
  is_int(S.deadlines, 0, "nested: nothing fires after the end");

  /* A relay whose done closes the session from inside relay_client_io. */
  reset_seen();
  F.open_mode = ANSWER_LATER;
  c = new_conn();
  c->relay_in_open_done = 1;
  frontend_session_open(&c->fs, "ok.fake", 80, NULL);
  frontend_session_enter(&c->fs);
  open_answer_now();
  frontend_session_leave(&c->fs);
  ok(frontend_session_relaying(&c->fs), "relay: started from open_done");
  (void)send(c->peer, "ping", 4, 0);
  ph_mock_run_for(m, 20);
  char b[8] = {0};
  is_int(recv(target_peer(), b, sizeof(b), 0), 4, "relay: bytes go up");
  shutdown(c->peer, SHUT_WR);
  shutdown(target_peer(), SHUT_WR);
  ph_mock_run_for(m, 30);
  is_int(S.relay_done, 1, "relay: done once");
  is_int(S.ends, 1, "relay: one end");
  is_int(S.frees, 1, "relay: freed");
  like(ph_mock_metrics_text(m),
       "proxyhost_stream_bytes_total{component=\"client\",direction=\"up\","
       "protocol=\"tcp\"} 4",
       "relay: bytes counted by the skeleton");
  close_target();
}

static void test_once(ph_mock *m) {
  (void)m;
  reset_seen();
  tconn *c = new_conn();
  frontend_session_enter(&c->fs);
  t_close(c);
  t_close(c);
  frontend_session_close(&c->fs, FRONTEND_END_QUIET);
  frontend_session_leave(&c->fs);
  is_int(S.ends, 1, "closed three times (and once from inside end): one end");
  is_int(S.ends_logged, 1, "the first close's manner counts");
  is_int(S.closes_in_end, 1, "end ran once");
  is_int(S.frees, 1, "freed once");
}

/* Timers that answer the check and the open during the drain. */
static void answer_auth_cb(ph_timer *t, void *arg) {
  (void)arg;
  api->timer_free(t);
  auth_answer_now(); /* nothing when it is not pending */
}
static void answer_open_cb(ph_timer *t, void *arg) {
  (void)arg;
  api->timer_free(t);
  open_answer_now(); /* nothing when it is not pending */
}
static void drain_answers_arm(void) {
  ph_timer *a = api->timer_new(hctx, answer_auth_cb, NULL);
  ph_timer *o = api->timer_new(hctx, answer_open_cb, NULL);
  api->timer_set(a, 30, 0);
  api->timer_set(o, 60, 0);
}

/* The drain: one session in each phase; the handshake and the relay are
 * cut at stop, the check and the open finish, then stop_done. */
static void test_drain(ph_mock *m) {
  reset_seen();
  tconn *hs = new_conn();
  frontend_session_watch(&hs->fs, PH_READ);
  tconn *au = new_conn();
  au->phase = P_AUTH;
  frontend_session_auth(&au->fs, "u", 1, "p", 1);
  frontend_session_watch(&au->fs, PH_READ);
  /* The fake holds one open at a time: the relay's first. */
  tconn *re = new_conn();
  re->relay_in_open_done = 1;
  frontend_session_open(&re->fs, "ok.fake", 80, NULL);
  frontend_session_enter(&re->fs);
  open_answer_now();
  frontend_session_leave(&re->fs);
  int relay_peer = target_peer();
  F.target_peer = -1; /* closed below */
  tconn *op = new_conn();
  op->phase = P_OPEN;
  frontend_session_open(&op->fs, "ok.fake", 80, NULL);
  frontend_session_watch(&op->fs, PH_READ);
  op->close_in_open_done = 1;
  is_int(srv.n_sessions, 4, "drain: four sessions");
  /* The check and the open answer a little later, during the drain. */
  F.verdict = PH_AUTH_DENY; /* closes au */
  is_int(ph_mock_run_for(m, 5), PH_OK, "drain: loop runs");
  drain_answers_arm();
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int r = ph_mock_stop(m);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  long waited = (t1.tv_sec - t0.tv_sec) * 1000 +
                (t1.tv_nsec - t0.tv_nsec) / 1000000;
  is_int(r, PH_OK, "drain: stop_done came before the drain deadline");
  ok(waited >= 50 && waited < 2000,
     "drain: the stop waited for the open (answered at 60 ms)");
  is_int(S.stops, 4, "drain: stop asked of every session");
  is_int(S.ends, 4, "drain: four ends");
  is_int(S.frees, 4, "drain: four frees");
  is_int(srv.n_sessions, 0, "drain: none left");
  is_int(FA.cancels + FC.cancels, 0,
         "drain: the check and the open finished");
  is_int(S.auth_done, 1, "drain: the check answered");
  is_int(S.open_done, 2, "drain: the open answered");
  ok(srv.listener == NULL, "drain: the listener is closed");
  close(relay_peer);
  close_target();
}

/* A header lookup over fixed fields, as http_proxy's is over its head. */
static const char *hdr_get(void *arg, const char *name, size_t *len) {
  (void)arg;
  if (strcasecmp(name, "x-session") != 0)
    return NULL;
  *len = 3;
  return "abc";
}
static const ph_open_headers test_headers = {hdr_get, NULL};

/* A session relaying a lease's target (target_peer()). */
static tconn *lease_relay(ph_mock *m, int64_t idle_ms) {
  reset_seen();
  F.give_lease = 1;
  tconn *c = new_conn();
  c->relay_in_open_done = 1;
  c->relay_idle_ms = idle_ms;
  frontend_session_open(&c->fs, "ok.fake", 80, NULL);
  ph_mock_run_for(m, 1);
  frontend_session_enter(&c->fs);
  open_answer_now();
  frontend_session_leave(&c->fs);
  return c;
}

static int relay_over(void *arg) {
  (void)arg;
  return S.relay_done > 0;
}

static void test_lease(ph_mock *m) {
  /* The request: the lease flag, the listener, the headers. */
  reset_seen();
  tconn *c = new_conn();
  c->fs.headers = &test_headers;
  frontend_session_open(&c->fs, "ok.fake", 80, NULL);
  ok((FC.last.lease_asked & PH_OPEN_ASKED_EXT) && (FC.last.flags & PH_OPEN_F_STREAM),
     "lease: every open asks for a lease in its chain (and takes streams)");
  ok(FC.last.flags & PH_OPEN_F_LEASE,
     "lease: ... and says PH_OPEN_F_LEASE for a connector built against "
     "SDK 1.6 or older");
  is_str(FC.last.listener, "fs_host",
         "lease: the listener is the instance's name (module_name)");
  is_str(FC.last.session, "[abc]",
         "lease: the connector reads the session's headers in open()");
  t_close(c);
  c = new_conn();
  frontend_session_open(&c->fs, "ok.fake", 80, NULL);
  ok(FC.last.header_calls == 0 && strcmp(FC.last.session, "(none)") == 0,
     "lease: a session without headers offers none");
  t_close(c);

  /* A clean relay: first_byte once (at the first byte down), CLOSED. */
  c = lease_relay(m, 0);
  ok(S.last_lease && S.last_lease == lease_given() && frontend_session_relaying(&c->fs),
     "lease: open_done gets the success's lease; the relay takes it");
  (void)send(c->peer, "up", 2, 0);
  ph_mock_run_for(m, 20);
  is_int(lease_now()->first, 0, "lease: no first_byte before a byte came down");
  (void)send(target_peer(), "down", 4, 0);
  ph_mock_run_for(m, 20);
  (void)send(target_peer(), "more", 4, 0);
  ph_mock_run_for(m, 20);
  is_int(lease_now()->first + FC.lease.broken, 1, "lease: first_byte once, at the first byte down");
  is_int(lease_now()->ended, 0, "lease: not ended while relaying");
  shutdown(c->peer, SHUT_WR);
  shutdown(target_peer(), SHUT_WR);
  wait_until(loop, relay_over(NULL), 1000);
  ok(lease_ended_once() && lease_now()->how == PH_LEASE_END_CLOSED && S.relay_done == 1,
     "lease: EOF both ways ends it once, CLOSED");
  close_target();

  /* The target's end fails: TARGET_ERROR. */
  c = lease_relay(m, 0);
  close_target(); /* EOF down, then EPIPE writing up */
  ph_mock_run_for(m, 10);
  (void)send(c->peer, "x", 1, 0);
  wait_until(loop, relay_over(NULL), 1000);
  ok(lease_ended_once() && lease_now()->how == PH_LEASE_END_TARGET_ERROR,
     "lease: a write to a gone target ends it TARGET_ERROR");
  is_int(lease_now()->first, 0, "lease: no first_byte when nothing came down");

  /* The client's end fails: CLIENT_ERROR. */
  c = lease_relay(m, 0);
  close(c->peer); /* EOF up, then EPIPE writing down */
  c->peer = -1;
  ph_mock_run_for(m, 10);
  (void)send(target_peer(), "y", 1, 0);
  wait_until(loop, relay_over(NULL), 1000);
  ok(lease_ended_once() && lease_now()->how == PH_LEASE_END_CLIENT_ERROR,
     "lease: a write to a gone client ends it CLIENT_ERROR");
  close_target();

  /* The idle timeout: TIMEOUT. */
  c = lease_relay(m, 40);
  wait_until(loop, relay_over(NULL), 2000);
  ok(lease_ended_once() && lease_now()->how == PH_LEASE_END_TIMEOUT,
     "lease: the relay's idle timeout ends it TIMEOUT");
  close_target();

  /* Closed while relaying (a stop, a destroy): CLIENT_ERROR, once. */
  c = lease_relay(m, 0);
  (void)send(target_peer(), "z", 1, 0);
  ph_mock_run_for(m, 20);
  t_close(c);
  ok(lease_ended_once() && lease_now()->how == PH_LEASE_END_CLIENT_ERROR && lease_now()->first == 1,
     "lease: the session closed while relaying ends it CLIENT_ERROR");
  ph_mock_run_for(m, 20);
  ok(lease_ended_once() && FC.lease.broken == 0, "lease: and never again");
  close_target();

  /* The connector cuts the stream (on_cut; the pool's drain, issue 22
   * item 14): the session closes, the client and the target see their
   * connections closed, the lease ends once, CLIENT_ERROR. */
  c = lease_relay(m, 0);
  ok(lease_now()->cut != NULL && lease_now()->cut_arg != NULL,
     "lease: the skeleton gives every lease a cut (on_cut)");
  (void)send(target_peer(), "w", 1, 0);
  ph_mock_run_for(m, 20);
  fake_lease_cut(lease_now()); /* from outside any entry, as a timer */
  ok(lease_ended_once() && lease_now()->how == PH_LEASE_END_CLIENT_ERROR,
     "lease: a cut ends it once, CLIENT_ERROR (nothing against the target)");
  ok(S.ends_logged == 1 && S.frees == 1,
     "lease: ... by closing the session (its end line, then freed)");
  char eb[8];
  ph_mock_run_for(m, 5);
  is_int((int)recv(target_peer(), eb, sizeof eb, MSG_DONTWAIT), 0,
         "lease: ... the target's connection closed");
  close_target();

  /* A success without a socket (a connector's bug): ended at once. */
  reset_seen();
  F.give_lease = 1;
  F.bad_success = 1;
  c = new_conn();
  frontend_session_open(&c->fs, "ok.fake", 80, NULL);
  frontend_session_enter(&c->fs);
  open_answer_now();
  frontend_session_leave(&c->fs);
  ok(S.last_code == PH_OPEN_INTERNAL_ERROR && S.last_lease == NULL &&
         lease_ended_once() && lease_now()->how == PH_LEASE_END_CLIENT_ERROR,
     "lease: a success without a socket or stream ends its lease at once");

  /* A failure's lease (none should be there) is the connector's. */
  reset_seen();
  F.give_lease = 1;
  F.open_code = PH_OPEN_CONNECTION_REFUSED;
  c = new_conn();
  frontend_session_open(&c->fs, "ok.fake", 80, NULL);
  frontend_session_enter(&c->fs);
  open_answer_now();
  frontend_session_leave(&c->fs);
  ok(S.last_lease == NULL && !lease_now()->ended,
     "lease: a failure's lease is neither passed on nor ended");
}

/* One open answered with the fake's rflags and http_fwd: what open_done
 * saw. */
static void forward_open(uint32_t fwd_size, uintptr_t rflags, int code) {
  reset_seen();
  F.give_lease = 1;
  F.rflags = rflags;
  F.http_fwd = fwd_size;
  F.open_code = code;
  tconn *c = new_conn();
  c->fs.open_forward = 1;
  frontend_session_open(&c->fs, "ok.fake", 80, NULL);
  frontend_session_enter(&c->fs);
  open_answer_now();
  frontend_session_leave(&c->fs);
  if (code == PH_OPEN_OK) /* a failure closed (and freed) it already */
    t_close(c);
  close_target();
}

static int auth_is(const char *want) {
  return S.last_auth && S.last_auth_len == strlen(want) &&
         memcmp(S.last_auth, want, S.last_auth_len) == 0;
}

static void test_forward_flags(void) {
  /* A connector built against SDK 1.6 or older: the old flag and
   * fields. */
  forward_open(sizeof(ph_open_http_forward), PH_OPEN_R_HTTP_PROXY,
               PH_OPEN_OK);
  ok((FC.last.fwd_asked & PH_OPEN_ASKED_EXT) && (FC.last.lease_asked & PH_OPEN_ASKED_EXT) && (FC.last.flags & PH_OPEN_F_STREAM),
     "forward: open_forward asks for forwarding in the chain, beside the "
     "lease");
  ok((FC.last.flags & PH_OPEN_F_HTTP_FORWARD) &&
         (FC.last.flags & PH_OPEN_F_LEASE),
     "forward: ... and with the old flags, for an older connector");
  ok(S.last_code == PH_OPEN_OK && S.last_http_proxy && auth_is("Basic dTpw"),
     "forward: open_done sees an older connector's PH_OPEN_R_HTTP_PROXY and "
     "http_forward");
  forward_open(sizeof(ph_open_http_forward), 0, PH_OPEN_OK);
  ok(!S.last_http_proxy && S.last_auth == NULL,
     "forward: http_forward without the flag is not passed on");
  forward_open(offsetof(ph_open_http_forward, proxy_authorization),
               PH_OPEN_R_HTTP_PROXY, PH_OPEN_OK);
  ok(S.last_http_proxy && S.last_auth == NULL,
     "forward: a struct too short for the value: NULL (nothing to add)");
  forward_open(sizeof(ph_open_http_forward), PH_OPEN_R_HTTP_PROXY,
               PH_OPEN_CONNECTION_REFUSED);
  ok(S.last_code == PH_OPEN_CONNECTION_REFUSED && !S.last_http_proxy &&
         S.last_auth == NULL,
     "forward: a failure's flags and http_forward are never passed on");
  reset_seen();
  tconn *c = new_conn();
  frontend_session_open(&c->fs, "ok.fake", 80, NULL);
  ok(!(FC.last.flags & PH_OPEN_F_HTTP_FORWARD) && !(FC.last.fwd_asked & PH_OPEN_ASKED_EXT),
     "forward: a session that sets no open_forward asks nothing more");
  t_close(c);

  /* A connector built against SDK 1.6: its result is shorter, and what
   * lies beyond it is not read. */
  X.v16 = 1;
  forward_open(sizeof(ph_open_http_forward), PH_OPEN_R_HTTP_PROXY,
               PH_OPEN_OK);
  X.v16 = 0;
  ok(S.last_lease && S.last_lease == lease_given() && lease_ended_once() && S.last_http_proxy &&
         auth_is("Basic dTpw"),
     "forward: a 1.6 connector's shorter result: its lease, flag and "
     "http_forward");

  /* A connector of connector 1.5: the extensions in the result's chain
   * (open_ext.h), an unknown type first, skipped. */
  X.lease = 1;
  X.junk = 1;
  forward_open(0, 0, PH_OPEN_OK);
  X.fwd = 0;
  ok(S.last_code == PH_OPEN_OK && S.last_lease && S.last_lease == lease_given() && lease_ended_once() &&
         !S.last_http_proxy,
     "ext: the lease from the result's chain reaches open_done (an unknown "
     "extension skipped)");
  X.fwd = sizeof(ph_open_http_forward_res);
  forward_open(0, 0, PH_OPEN_OK);
  ok(S.last_lease && S.last_lease == lease_given() && S.last_http_proxy && auth_is("Basic dTpx"),
     "ext: the forwarding extension: HTTP proxy and its value");
  X.fwd = offsetof(ph_open_http_forward_res, proxy_authorization);
  forward_open(0, 0, PH_OPEN_OK);
  ok(!S.last_http_proxy && S.last_auth == NULL,
     "ext: an extension shorter than its struct is absent");
  X.fwd = sizeof(ph_open_http_forward_res);
  forward_open(0, 0, PH_OPEN_CONNECTION_REFUSED);
  ok(!S.last_http_proxy && S.last_lease == NULL && !lease_now()->ended,
     "ext: a failure's extensions are never taken");
  X.lease = X.junk = 0;
  X.fwd = 0;
}

static void test_destroy(void) {
  /* Sessions left at destroy end quietly, without stop_done. */
  ph_mock *m = mock_up();
  reset_seen();
  tconn *a = new_conn();
  tconn *b = new_conn();
  b->phase = P_OPEN; /* let finish by the stop ph_mock_free makes */
  frontend_session_open(&b->fs, "ok.fake", 80, NULL);
  (void)a;
  ph_mock_free(m);
  is_int(S.ends, 2, "destroy: both ended");
  is_int(S.ends_logged, 1, "destroy: the one left ends quietly");
  is_int(S.frees, 2, "destroy: both freed");
  is_int(FC.cancels, 1, "destroy: the open was cancelled");
}

/* stream_metrics_init(..., SM_CLIENT, SM_FRONTEND) declares only what a
 * frontend produces (api->metric_only): its component, the open and ttfb
 * stages with their results, one result per open code. */
static void test_declared_series(ph_mock *m) {
  const char *t = ph_mock_metrics_text(m);
  unlike(t, "component=\"agent\"", "declared: no agent series");
  unlike(t, "component=\"server\"", "declared: no server series");
  like(t, "stage=\"open\",result=\"rejected\",scope=\"local\",le=\"+Inf\"}",
       "declared: the open stage with every result");
  like(t, "stage=\"ttfb\",result=\"success\",scope=\"local\",le=\"+Inf\"}",
       "declared: ttfb with success");
  unlike(t, "stage=\"ttfb\",result=\"failure\"",
         "declared: but not ttfb with failure");
  unlike(t, "stage=\"dns\"", "declared: no stage the frontend never times");
  unlike(t, "result=\"success\",error_class=\"forbidden\"",
         "declared: no impossible open pair");
  like(t,
       "tunnelmesh_stream_open_total{component=\"client\",result="
       "\"rejected\",error_class=\"forbidden\",open_mode=\"strict\"} 0",
       "declared: the possible pair, at 0");
  unlike(t, "tunnelmesh_stream_queue_wait_seconds",
         "declared: no queue wait histogram without a dialer");
  for (int s = 0; s < SM_STAGES; s++)
    for (int r = 0; r < SM_RESULTS; r++)
      if (!stream_metrics_stage_has(s, r) && sm.stage[s][r]) {
        ok(0, "declared: an impossible stage result has a series");
        return;
      }
  ok(sm.stage[SM_TTFB][SM_SUCCESS] && !sm.stage[SM_TTFB][SM_FAILURE] &&
         !sm.stage[SM_DNS][SM_SUCCESS] && sm.open[PH_OPEN_FORBIDDEN] &&
         sm.active && sm.bytes[SM_UP] && !sm.queue_wait,
     "declared: the series pointers follow the declarations");
  stream_metrics_stage(&sm, SM_TTFB, SM_FAILURE, 0.5); /* NULL: no-op */
  unlike(ph_mock_metrics_text(m), "stage=\"ttfb\",result=\"failure\"",
         "declared: recording an undeclared one does nothing");
}

int main(void) {
  plan_lazy();
  signal(SIGPIPE, SIG_IGN);
  ph_mock *m = mock_up();
  test_declared_series(m);
  test_deadline(m);
  test_auth_cancel(m);
  test_open_cancel(m);
  test_validation(m);
  test_inside_answers(m);
  test_reentrancy(m);
  test_once(m);
  test_lease(m);
  test_forward_flags();
  test_drain(m);
  ph_mock_free(m);
  test_destroy();
  return done_testing();
}
