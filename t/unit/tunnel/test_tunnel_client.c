/* SPDX-License-Identifier: BSD-2-Clause */
/* tunnel_client through the mock host, its links replaced by in-memory
 * ones (this file's tc_link_active) whose far end is a real tm_session
 * acting as the server, answering OPEN_STREAMs as each case says. A
 * consumer module takes the connector service as a frontend does.
 *
 * Cases: no connection is relay/agent_offline, answered from the loop;
 * strict opens answered only from OPEN_RESULT (TM-PROTO-37), with the
 * name unresolved and the configured agent (TM-PROTO-3); failures pass
 * stage/code/retry through (the frontend maps them: TM-PROTO-30..36); the
 * open timeout resets only that stream (TM-PROTO-38); cancel; a caller
 * without PH_OPEN_F_STREAM gets unsupported_capability; a server that
 * selects no subprotocol is legacy: success at once, counted with
 * open_mode=legacy (TM-PROTO-16/39, TM-TEST-2); a name never offered is
 * refused; the token re-read at every attempt (rotated, missing, late);
 * GOAWAY: the old streams finish, new ones go on a new connection. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <proxyhost/connector.h>
#include <proxyhost/mock.h>
#include <proxyhost/module.h>

#include "loop_test.h"
#include "mock_test.h"
#include "tap.h"
#include "tunnel_client/tunnel_client_int.h"

extern const ph_module proxyhost_module; /* tunnel_client.c */

/* ---- the in-memory links ------------------------------------------------ */

typedef struct msg {
  struct msg *next;
  size_t len;
  uint8_t data[];
} msg;

typedef struct mlink mlink;
typedef struct mside {
  mlink *l;
  tm_session *s;
  int want, paused, closed, told;
  msg *qh, *qt; /* messages for this side */
} mside;

struct mlink {
  int idx;
  tc_sess *ts;
  mside c, sv;
  ph_timer *tick;
  int up, done; /* done: the client was told failed/closed */
  char bearer[TM_TOKEN_MAX + 1];
  char url[256];
};

enum policy { P_ACCEPT = 0, P_REJECT, P_HOLD };

#define MAX_LINKS 64
#define MAX_OPENS 64

typedef struct sopen {
  tm_stream *st; /* the server's end; NULL once abandoned or rejected */
  int link;
  int abandoned, accepted;
  tm_open_stream req;
} sopen;

static struct {
  const ph_api *api;
  ph_ctx *ctx;
  mlink *links[MAX_LINKS];
  int n_links;
  /* what the next connection does */
  int refuse;
  const char *subproto;
  /* what the server does with an open */
  int policy, stage, code, retryable;
  uint32_t retry_ms;
  sopen opens[MAX_OPENS];
  int n_opens;
  /* the consumer */
  const ph_connector_v1 *conn;
  void *cself;
} G;

static void arm(mlink *l) { G.api->timer_set(l->tick, 0, 1); }

static void m_want_write(void *t) {
  mside *s = t;
  s->want = 1;
  arm(s->l);
}

static int m_write(void *t, uint8_t *buf, size_t len) {
  mside *s = t;
  mside *o = s == &s->l->c ? &s->l->sv : &s->l->c;
  if (s->closed)
    return -1;
  msg *m = malloc(sizeof(*m) + len);
  if (!m)
    return -1;
  m->next = NULL;
  m->len = len;
  memcpy(m->data, buf, len);
  if (o->qt)
    o->qt->next = m;
  else
    o->qh = m;
  o->qt = m;
  arm(s->l);
  return 0;
}

static void m_pause(void *t, int p) {
  mside *s = t;
  s->paused = p;
  if (!p)
    arm(s->l);
}

static void m_close(void *t) {
  mside *s = t;
  s->closed = 1;
  arm(s->l);
}

static const tm_transport m_transport = {m_want_write, m_write, m_pause,
                                         m_close, 0};

static void drop_queue(mside *s) {
  while (s->qh) {
    msg *m = s->qh;
    s->qh = m->next;
    free(m);
  }
  s->qt = NULL;
}

/* ---- the server's session ------------------------------------------------ */

static void echo_cb(ph_stream *ps, int revents, void *arg) {
  (void)revents;
  (void)arg;
  for (int i = 0; i < 8; i++) {
    const void *d;
    ssize_t n = ph_stream_peek(ps, &d);
    if (n <= 0) {
      if (n == 0 || n == PH_ERESET)
        ph_stream_watch(ps, 0, NULL, NULL);
      return;
    }
    ssize_t w = ph_stream_write(ps, d, (size_t)n);
    if (w <= 0)
      return;
    ph_stream_consume(ps, (size_t)w);
  }
}

static void srv_open(void *arg, tm_stream *st, const tm_open_stream *req) {
  mlink *l = arg;
  if (G.n_opens >= MAX_OPENS) {
    tm_stream_reject(st, PH_STAGE_QUEUE, PH_OPEN_QUEUE_FULL, 0, 0);
    return;
  }
  sopen *o = &G.opens[G.n_opens++];
  memset(o, 0, sizeof(*o));
  o->st = st;
  o->link = l->idx;
  o->req = *req;
  tm_stream_set_user(st, o);
  if (G.policy == P_ACCEPT) {
    o->accepted = 1;
    tm_stream_accept(st);
    ph_stream_watch(tm_stream_ph(st), PH_READ, echo_cb, NULL);
  } else if (G.policy == P_REJECT) {
    o->st = NULL;
    tm_stream_reject(st, G.stage, G.code, G.retryable, G.retry_ms);
  }
}

static void srv_abandon(void *arg, tm_stream *st) {
  (void)arg;
  sopen *o = tm_stream_user(st);
  if (o) {
    o->abandoned = 1;
    o->st = NULL;
  }
}

static void srv_close(void *arg, int reason) {
  (void)reason;
  mlink *l = arg;
  l->sv.s = NULL;
  /* open streams the server held: gone with the session */
  for (int i = 0; i < G.n_opens; i++)
    if (G.opens[i].link == l->idx && !G.opens[i].accepted)
      G.opens[i].st = NULL;
}

static const tm_session_ops srv_ops = {
    .on_open = srv_open, .on_abandon = srv_abandon, .on_close = srv_close};

static void srv_accept(sopen *o) {
  o->accepted = 1;
  tm_stream *st = o->st;
  tm_stream_accept(st);
  ph_stream_watch(tm_stream_ph(st), PH_READ, echo_cb, NULL);
}

/* ---- the link's events ---------------------------------------------------- */

static void deliver(mside *s) {
  while (s->qh && !s->paused && s->s) {
    msg *m = s->qh;
    s->qh = m->next;
    if (!s->qh)
      s->qt = NULL;
    tm_session_on_message(s->s, m->data, m->len);
    free(m);
  }
}

static void on_tick(ph_timer *t, void *arg) {
  mlink *l = arg;
  G.api->timer_set(t, 0, 0);
  if (l->done)
    return;
  if (!l->up) {
    if (G.refuse) {
      l->done = 1;
      tc_link_failed(l->ts);
      return;
    }
    l->up = 1;
    int caps = tm_subproto_caps(G.subproto);
    if (caps >= 0) {
      tm_session_cfg cfg = {.component = TM_COMPONENT_SERVER,
                            .opener = 0,
                            .caps = (unsigned)caps,
                            .local_caps = TM_CAP_FAIR_WRITER,
                            .initial_window = 262144,
                            .window_update_threshold = 131072,
                            .max_frame_payload = 32768,
                            .inbound_buffer_bytes = 262144,
                            .outbound_buffer_bytes = 262144,
                            .max_streams = 1024,
                            .control_queue_frames = 1024,
                            .control_queue_bytes = 262144,
                            .quantum = 32768,
                            .violation_limit = 16,
                            .violation_window_ms = 60000};
      l->sv.s = tm_session_new(G.api, G.ctx, &cfg, &m_transport, &l->sv,
                               &srv_ops, l);
    }
    tc_link_up(l->ts, G.subproto); /* may close the link (c.closed) */
  }
  deliver(&l->sv);
  deliver(&l->c);
  if (l->c.want && l->c.s && !l->c.closed) {
    l->c.want = 0;
    tm_session_on_writable(l->c.s);
  }
  if (l->sv.want && l->sv.s && !l->sv.closed) {
    l->sv.want = 0;
    tm_session_on_writable(l->sv.s);
  }
  if (l->c.closed && !l->sv.told) {
    /* the client's session closed its transport: the server's ends */
    l->sv.told = 1;
    if (l->sv.s)
      tm_session_on_transport_closed(l->sv.s);
    l->sv.s = NULL;
  }
  if (l->sv.closed && !l->sv.told) {
    l->sv.told = 1; /* the server's session closed itself */
    l->sv.s = NULL;
  }
  if ((l->c.closed || l->sv.told) && !l->done) {
    l->done = 1;
    drop_queue(&l->c);
    drop_queue(&l->sv);
    tc_sess *ts = l->ts;
    l->c.s = NULL;
    tc_link_closed(ts); /* resets the client's session if still there */
    return;
  }
  if (l->c.qh || l->sv.qh || l->c.want || l->sv.want)
    arm(l);
}

static void *m_env_new(const ph_api *api, ph_ctx *ctx, const tc_link_cfg *cfg,
                       const char **err) {
  (void)cfg;
  (void)err;
  G.api = api;
  G.ctx = ctx;
  return &G;
}

static void m_env_free(void *env) {
  (void)env;
  for (int i = 0; i < G.n_links; i++) {
    mlink *l = G.links[i];
    if (l->sv.s && !l->sv.told) {
      l->sv.told = 1;
      tm_session_on_transport_closed(l->sv.s);
      l->sv.s = NULL;
    }
    if (!l->done) {
      l->done = 1;
      if (l->up)
        tc_link_closed(l->ts);
      else
        tc_link_failed(l->ts);
    }
    drop_queue(&l->c);
    drop_queue(&l->sv);
    G.api->timer_free(l->tick);
    l->tick = NULL;
  }
}

static void *m_connect(void *env, tc_sess *ts, const char *url,
                       const char *bearer, const char **err) {
  (void)env;
  if (G.n_links >= MAX_LINKS) {
    *err = "test: too many links";
    return NULL;
  }
  mlink *l = calloc(1, sizeof(*l));
  l->idx = G.n_links;
  l->ts = ts;
  l->c.l = l->sv.l = l;
  snprintf(l->bearer, sizeof(l->bearer), "%s", bearer);
  snprintf(l->url, sizeof(l->url), "%s", url);
  l->tick = G.api->timer_new(G.ctx, on_tick, l);
  G.links[G.n_links++] = l;
  arm(l); /* the answer comes from the loop */
  return &l->c; /* the handle is the client's side: the transport's arg */
}

static const tm_transport *m_get_transport(void) { return &m_transport; }

static void m_bind(void *link, tm_session *s) {
  mside *c = link;
  c->s = s;
}

static void m_lclose(void *link, int status, const char *reason) {
  (void)status;
  (void)reason;
  mside *c = link;
  c->closed = 1;
  arm(c->l);
}

static const tc_link_ops mem_ops = {m_env_new, m_env_free, m_connect,
                                    m_get_transport, m_bind, m_lclose,
                                    NULL /* no TLS files */};

const tc_link_ops *tc_link_active(void) { return &mem_ops; }

/* ---- the consumer (a frontend's stand-in) --------------------------------- */

static const ph_api *user_api;
static ph_ctx *user_ctx;

static int user_start(void *state) {
  (void)state;
  G.conn = user_api->service_get_named(user_ctx, PH_CONNECTOR_SERVICE,
                                       "tunnel_client", PH_CONNECTOR_MAJOR,
                                       1, &G.cself);
  return G.conn ? PH_OK : PH_EINVAL;
}

MOCK_TEST_KEEP(user_init, user_api, user_ctx);

MOCK_TEST_MODULE(user_mod, "tcuser", "1.0.0",
                 .requires = MOCK_TEST_NAMES(PH_CONNECTOR_SERVICE),
                 .init = user_init, .start = user_start);

/* ---- harness ------------------------------------------------------------ */

static ph_mock *M;
static char dir[] = "/tmp/tc_unit.XXXXXX";
static char token_path[128];

typedef struct ans {
  int n, inside;
  int in_call;
  ph_open_result res;
} ans;

static void on_ans(void *arg, const ph_open_result *res) {
  ans *a = arg;
  a->n++;
  if (a->in_call)
    a->inside = 1;
  a->res = *res;
}

static int64_t do_open(ans *a, const char *host, uint16_t port,
                       uintptr_t flags) {
  memset(a, 0, sizeof(*a));
  ph_open_request rq = {.size = sizeof(rq),
                        .protocol = PH_PROTO_TCP,
                        .port = port,
                        .host = host,
                        .flags = flags};
  a->in_call = 1;
  int64_t id = G.conn->open(G.cself, &rq, on_ans, a);
  a->in_call = 0;
  return id;
}

static void run(int ms) { ph_mock_run_for(M, ms); }

/* Bounded: at most ms of loop time (loop_test.h). */
#define RUN_UNTIL(cond, ms) poll_until(ph_mock_loop(M), cond, ms)

static void write_token(const char *t) {
  FILE *f = fopen(token_path, "w");
  if (f) {
    fprintf(f, "%s\n", t);
    fclose(f);
  }
}

static mlink *last_link(void) {
  return G.n_links ? G.links[G.n_links - 1] : NULL;
}

static int up_links(void) {
  int n = 0;
  for (int i = 0; i < G.n_links; i++)
    n += G.links[i]->up && !G.links[i]->done && G.links[i]->c.s != NULL;
  return n;
}

/* Ends the current connection from the server's side. */
static void server_drops(void) {
  mlink *l = last_link();
  if (l && l->sv.s)
    tm_session_close(l->sv.s);
}

/* Reads what the stream holds into buf (bounded loop). */
static size_t read_stream(ph_stream *ps, char *buf, size_t cap, size_t want) {
  size_t got = 0;
  for (int i = 0; i < 200 && got < want; i++) {
    const void *d;
    ssize_t n = ph_stream_peek(ps, &d);
    if (n > 0) {
      size_t k = (size_t)n < cap - got ? (size_t)n : cap - got;
      memcpy(buf + got, d, k);
      ph_stream_consume(ps, k);
      got += k;
      continue;
    }
    if (n != PH_EAGAIN)
      break;
    run(5);
  }
  return got;
}

static void nop_cb(ph_stream *s, int ev, void *arg) {
  (void)s;
  (void)ev;
  (void)arg;
}

/* Whether ps (watched here) echoes what is written to it (the server
 * peer echoes), then closed. */
static int carries(ph_stream *ps, const char *bytes) {
  size_t n = strlen(bytes);
  char buf[16] = {0};
  ph_stream_watch(ps, PH_READ, nop_cb, NULL);
  ph_stream_write(ps, bytes, n);
  int good = n < sizeof(buf) && read_stream(ps, buf, sizeof(buf), n) == n &&
             memcmp(buf, bytes, n) == 0;
  ph_stream_close(ps);
  return good;
}

/* ---- cases ------------------------------------------------------------- */

static void test_offline(void) {
  ok(!ph_mock_ready(M), "not ready before a connection is up");
  ans a;
  int64_t id = do_open(&a, "target.example", 443, PH_OPEN_F_STREAM);
  ok(id > 0, "open accepted while offline");
  ok(a.n == 0, "... not answered inside open()");
  RUN_UNTIL(a.n, 500);
  ok(a.n == 1 && !a.inside, "... answered once, from the loop");
  ok(a.res.stage == PH_STAGE_RELAY && a.res.code == PH_OPEN_AGENT_OFFLINE &&
         a.res.retryable && a.res.fd == -1 && !a.res.stream,
     "no connection: relay/agent_offline, retryable (SOCKS5 0x04)");
  is_int(G.conn->cancel(G.cself, id), PH_ENOENT,
         "cancel after the answer: ENOENT");
}

static void test_strict(void) {
  G.refuse = 0;
  G.subproto = TM_SUBPROTO_FULL;
  RUN_UNTIL(ph_mock_ready(M), 2000);
  ok(ph_mock_ready(M), "ready once a connection is up");
  mlink *l = last_link();
  ok(l && !strcmp(l->bearer, "tok_0123456789abcdef.first"),
     "the token from token_file went to the link (the Authorization header)");
  ok(l && !strstr(l->url, "tok_"), "... and not into the URL");

  G.policy = P_HOLD;
  int before = G.n_opens;
  ans a;
  int64_t id = do_open(&a, "target.example", 443, PH_OPEN_F_STREAM);
  ok(id > 0, "strict open accepted");
  RUN_UNTIL(G.n_opens > before, 1000);
  ok(G.n_opens == before + 1, "the server got OPEN_STREAM");
  sopen *o = &G.opens[before];
  ok(!strcmp(o->req.host, "target.example") && o->req.port == 443,
     "the name goes unresolved, with the port (TM-PROTO-3)");
  is_str(o->req.agent, "lab-1", "OPEN_STREAM.agent is the configured agent");
  ok(o->req.window == 262144,
     "TM-P2-9 flow control: the client's initial window is sent");
  run(100);
  is_int(a.n, 0,
         "no answer while the server holds its OPEN_RESULT (TM-PROTO-37)");
  srv_accept(o);
  RUN_UNTIL(a.n, 1000);
  ok(a.n == 1 && a.res.code == PH_OPEN_OK && a.res.stage == PH_STAGE_NONE &&
         a.res.fd == -1 && a.res.stream,
     "OPEN_RESULT accepted=true: success with a stream (PH_OPEN_F_STREAM)");
  if (a.res.stream) {
    ph_stream *ps = a.res.stream;
    ph_stream_watch(ps, PH_READ, nop_cb, NULL);
    is_int((int)ph_stream_write(ps, "ping", 4), 4, "write to the stream");
    char buf[16] = {0};
    size_t n = read_stream(ps, buf, sizeof(buf), 4);
    ok(n == 4 && !memcmp(buf, "ping", 4), "the server's echo comes back");
    ph_stream_close(ps);
  }
  ok(!(a.res.flags & PH_OPEN_R_LEGACY),
     "a strict open is not marked legacy (the frontend counts it strict)");
  (void)id;
}

static void test_failures(void) {
  static const struct {
    int stage, code, retryable;
    uint32_t retry;
  } f[] = {{PH_STAGE_POLICY, PH_OPEN_FORBIDDEN, 0, 0},
           {PH_STAGE_DNS, PH_OPEN_HOST_UNREACHABLE, 1, 1000},
           {PH_STAGE_CONNECT, PH_OPEN_CONNECTION_REFUSED, 0, 0},
           {PH_STAGE_CONNECT, PH_OPEN_NETWORK_UNREACHABLE, 1, 500},
           {PH_STAGE_CONNECT, PH_OPEN_TIMEOUT, 1, 1000},
           {PH_STAGE_SELECTION, PH_OPEN_AGENT_OFFLINE, 1, 2000},
           {PH_STAGE_QUEUE, PH_OPEN_QUEUE_FULL, 1, 100},
           {PH_STAGE_AUTHORIZATION, PH_OPEN_FORBIDDEN, 0, 0},
           {PH_STAGE_PROTOCOL, PH_OPEN_UNSUPPORTED_CAPABILITY, 0, 0},
           {PH_STAGE_RELAY, PH_OPEN_INTERNAL_ERROR, 0, 0}};
  G.policy = P_REJECT;
  for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
    G.stage = f[i].stage;
    G.code = f[i].code;
    G.retryable = f[i].retryable;
    G.retry_ms = f[i].retry;
    ans a;
    do_open(&a, "target.example", 80, PH_OPEN_F_STREAM);
    RUN_UNTIL(a.n, 1000);
    char name[128];
    snprintf(name, sizeof(name),
             "%s/%s passes through unchanged (retryable %d, %u ms)",
             ph_open_stage_name(f[i].stage), ph_open_code_name(f[i].code),
             f[i].retryable, f[i].retry);
    ok(a.n == 1 && a.res.stage == f[i].stage && a.res.code == f[i].code &&
           a.res.retryable == f[i].retryable &&
           a.res.retry_after_ms == f[i].retry && !a.res.stream,
       name);
  }
  ok(up_links() == 1, "failures are stream-scoped: the connection stays");
}

static void test_timeout(void) {
  G.policy = P_HOLD;
  int before = G.n_opens;
  int links = G.n_links;
  ans a1, a2;
  do_open(&a1, "slow.example", 443, PH_OPEN_F_STREAM);
  do_open(&a2, "fast.example", 443, PH_OPEN_F_STREAM);
  RUN_UNTIL(G.n_opens >= before + 2, 1000);
  ok(G.n_opens == before + 2, "two opens held by the server");
  srv_accept(&G.opens[before + 1]);
  RUN_UNTIL(a2.n, 1000);
  ok(a2.n == 1 && a2.res.code == PH_OPEN_OK, "the second is accepted");
  RUN_UNTIL(a1.n, 3000);
  ok(a1.n == 1 && a1.res.stage == PH_STAGE_CONNECT &&
         a1.res.code == PH_OPEN_TIMEOUT && a1.res.retryable,
     "no OPEN_RESULT within stream.open_timeout: connect/timeout "
     "(SOCKS5 0x06)");
  RUN_UNTIL(G.opens[before].abandoned, 1000);
  ok(G.opens[before].abandoned,
     "... and that stream is reset towards the server (TM-PROTO-38)");
  ok(G.n_links == links && up_links() == 1,
     "... the connection stays up (only that stream)");
  if (a2.res.stream)
    ok(carries(a2.res.stream, "after"),
       "... and the other stream still carries bytes");
  /* a late accept of the abandoned one cannot happen: it is gone */
}

static void test_cancel_and_flags(void) {
  G.policy = P_HOLD;
  int before = G.n_opens;
  ans a;
  int64_t id = do_open(&a, "target.example", 443, PH_OPEN_F_STREAM);
  RUN_UNTIL(G.n_opens > before, 1000);
  is_int(G.conn->cancel(G.cself, id), PH_OK, "cancel an open in flight");
  RUN_UNTIL(G.opens[before].abandoned, 1000);
  ok(G.opens[before].abandoned, "... the server sees the stream reset");
  run(50);
  is_int(a.n, 0, "... and the callback never runs");
  is_int(G.conn->cancel(G.cself, id), PH_ENOENT, "a second cancel: ENOENT");

  id = do_open(&a, "target.example", 443, 0);
  ok(id > 0 && a.n == 0, "an open without PH_OPEN_F_STREAM is accepted");
  RUN_UNTIL(a.n, 500);
  ok(a.n == 1 && !a.inside && a.res.stage == PH_STAGE_PROTOCOL &&
         a.res.code == PH_OPEN_UNSUPPORTED_CAPABILITY && a.res.fd == -1,
     "... and answered protocol/unsupported_capability from the loop");
  id = do_open(&a, "target.example", 443, 0);
  is_int(G.conn->cancel(G.cself, id), PH_OK,
         "a local answer not yet delivered can be cancelled");
  run(20);
  is_int(a.n, 0, "... and is not delivered");

  ph_open_request bad = {.size = sizeof(bad), .protocol = 9, .port = 1,
                         .host = "x", .flags = PH_OPEN_F_STREAM};
  is_int((int)G.conn->open(G.cself, &bad, on_ans, &a), PH_EINVAL,
         "a protocol other than tcp: EINVAL");
  bad.protocol = PH_PROTO_TCP;
  bad.port = 0;
  is_int((int)G.conn->open(G.cself, &bad, on_ans, &a), PH_EINVAL,
         "port 0: EINVAL");
  bad.port = 1;
  bad.host = "";
  is_int((int)G.conn->open(G.cself, &bad, on_ans, &a), PH_EINVAL,
         "an empty host: EINVAL");
  int64_t id2 = do_open(&a, "bad host", 80, PH_OPEN_F_STREAM);
  RUN_UNTIL(a.n, 500);
  ok(id2 > 0 && a.res.stage == PH_STAGE_DNS &&
         a.res.code == PH_OPEN_HOST_UNREACHABLE,
     "a host OPEN_STREAM cannot carry: dns/host_unreachable");
}

static void test_token_rotation(void) {
  int links = G.n_links;
  write_token("tok_0123456789abcdef.rotated");
  server_drops();
  RUN_UNTIL(G.n_links > links && up_links() == 1, 3000);
  ok(G.n_links > links && up_links() == 1, "reconnected after a drop");
  ok(!strcmp(last_link()->bearer, "tok_0123456789abcdef.rotated"),
     "the rotated token is read at the next attempt");

  unlink(token_path);
  links = G.n_links;
  server_drops();
  RUN_UNTIL(!ph_mock_ready(M), 1000);
  ok(!ph_mock_ready(M), "a missing token file: not ready");
  run(300);
  is_int(G.n_links, links, "... and no connection is attempted");
  ans a;
  do_open(&a, "target.example", 443, PH_OPEN_F_STREAM);
  RUN_UNTIL(a.n, 500);
  ok(a.res.code == PH_OPEN_AGENT_OFFLINE, "... opens are agent_offline");
  write_token("tok_0123456789abcdef.late");
  RUN_UNTIL(ph_mock_ready(M), 3000);
  ok(ph_mock_ready(M), "a token file written later is picked up");
  ok(!strcmp(last_link()->bearer, "tok_0123456789abcdef.late"),
     "... with its content");
}

static void test_legacy(void) {
  G.subproto = NULL; /* an old server: no subprotocol */
  int links = G.n_links;
  server_drops();
  RUN_UNTIL(G.n_links > links && up_links() == 1, 3000);
  ok(up_links() == 1, "connected to a server that selects no subprotocol");
  G.policy = P_HOLD; /* the server never answers: legacy does not wait */
  int before_opens = G.n_opens;
  ans a;
  do_open(&a, "target.example", 443, PH_OPEN_F_STREAM);
  ok(a.n == 0, "legacy: not answered inside open()");
  RUN_UNTIL(a.n, 500);
  ok(a.n == 1 && a.res.code == PH_OPEN_OK && a.res.stream,
     "legacy: success at once, without waiting for the agent (TM-PROTO-39)");
  RUN_UNTIL(G.n_opens > before_opens, 500); /* the server reads the open */
  ok(G.n_opens > before_opens && G.opens[G.n_opens - 1].req.window == 0,
     "legacy: no window in OPEN_STREAM (TM-PROTO-16)");
  if (a.res.stream)
    ph_stream_close(a.res.stream);
  ok(a.res.flags & PH_OPEN_R_LEGACY,
     "marked PH_OPEN_R_LEGACY: its frontend counts it open_mode=legacy "
     "(TM-PROTO-21)");

  G.subproto = "tunnelmesh.v9.unknown";
  links = G.n_links;
  server_drops();
  RUN_UNTIL(G.n_links > links + 1, 3000);
  ok(G.n_links > links + 1 && !ph_mock_ready(M),
     "a subprotocol never offered: refused, retried, not ready");
  G.subproto = TM_SUBPROTO_OPEN; /* open-result without flow control */
  RUN_UNTIL(ph_mock_ready(M), 3000);
  ok(ph_mock_ready(M), "a server choosing tunnelmesh.v1.open-result: up");
  G.policy = P_ACCEPT;
  do_open(&a, "target.example", 443, PH_OPEN_F_STREAM);
  RUN_UNTIL(a.n, 1000);
  ok(a.n == 1 && a.res.code == PH_OPEN_OK &&
         G.opens[G.n_opens - 1].req.window == 0,
     "... strict, without a window");
  if (a.res.stream)
    ph_stream_close(a.res.stream);
}

static void test_goaway(void) {
  G.subproto = TM_SUBPROTO_FULL;
  int links = G.n_links;
  server_drops();
  RUN_UNTIL(G.n_links > links && ph_mock_ready(M), 3000);
  G.policy = P_ACCEPT;
  ans a;
  do_open(&a, "target.example", 443, PH_OPEN_F_STREAM);
  RUN_UNTIL(a.n, 1000);
  ok(a.n == 1 && a.res.stream, "a stream open before the GOAWAY");
  mlink *old = last_link();
  links = G.n_links;
  tm_session_goaway(old->sv.s);
  RUN_UNTIL(G.n_links > links && up_links() == 2, 3000);
  ok(G.n_links == links + 1, "GOAWAY: a new connection is opened");
  ans b;
  do_open(&b, "target.example", 443, PH_OPEN_F_STREAM);
  RUN_UNTIL(b.n, 1000);
  ok(b.n == 1 && b.res.code == PH_OPEN_OK &&
         G.opens[G.n_opens - 1].link == last_link()->idx,
     "... new streams go on the new connection");
  if (a.res.stream)
    ok(carries(a.res.stream, "old"),
       "TM-PROTO-4, TM-PROTO-5: ... the old stream finishes on the old one "
       "(never moved to the new connection, whose server does not know it)");
  RUN_UNTIL(old->done, 2000);
  ok(old->done, "... which closes once its last stream ended");
  if (b.res.stream)
    ph_stream_close(b.res.stream);
}

int main(void) {
  plan_lazy();
  if (!mkdtemp(dir)) {
    ok(0, "mkdtemp");
    return done_testing();
  }
  snprintf(token_path, sizeof(token_path), "%s/token", dir);
  write_token("tok_0123456789abcdef.first");
  char text[1024];
  snprintf(text, sizeof(text),
           "[proxyhost]\ndrain_timeout = 1s\n"
           "[log]\nlevel = warn\n"
           "[tunnel_client]\nserver_url = ws://127.0.0.1:9/tunnel\n"
           "agent = lab-1\ntoken_file = %s\n"
           "reconnect.min = 10ms\nreconnect.max = 40ms\n"
           "stream.open_timeout = 300ms\nping_interval = 0\n",
           token_path);
  char err[1024];
  G.refuse = 1; /* first: no server */
  M = ph_mock_new(text, err, sizeof(err));
  if (!M || ph_mock_add(M, &proxyhost_module, err, sizeof(err)) != PH_OK ||
      ph_mock_add(M, &user_mod, err, sizeof(err)) != PH_OK ||
      ph_mock_init(M, err, sizeof(err)) != PH_OK ||
      ph_mock_start(M, err, sizeof(err)) != PH_OK) {
    printf("# boot failed: %s\n", err);
    ok(0, "boot");
    return done_testing();
  }
  ok(1, "tunnel_client and a consumer run in the mock host");
  run(50);
  test_offline();
  test_strict();
  test_failures();
  test_timeout();
  test_cancel_and_flags();
  test_token_rotation();
  test_legacy();
  test_goaway();
  ok(ph_mock_stop(M) == PH_OK, "stop drains");
  ph_mock_free(M);
  for (int i = 0; i < G.n_links; i++)
    free(G.links[i]);
  unlink(token_path);
  rmdir(dir);
  return done_testing();
}
