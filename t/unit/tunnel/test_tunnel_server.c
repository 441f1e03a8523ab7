/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The tunnel_server module through the mock host, its connections carried
 * by in-memory links (ts_link_ops) instead of WebSockets, and a test
 * module ("tsfake") as its authz.store and access provider. The test is
 * the peer: it writes frames into the sessions and reads what the server
 * wrote. Covered: the open executor inside the module (the per-session
 * cap first, queue_full at once, fairness between sessions, a RESET
 * cancelling a waiting and a running open), selection (weighted least
 * connections over an agent's connections, agent_offline, an agent that
 * sent no metadata, a legacy agent and its compatibility count), and
 * authentication (deny and unavailable closed with 4401, scopes), and
 * the status panels (issue 28: agents, sessions, opens; log_names; the
 * agents that left, with their last_seen_at, and the ring that keeps
 * them, bounded at TS_GONE_MAX).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <proxyhost/mock.h>

#include "tap.h"
#include "tunnel_common/proto/tm_proto.h"
#include "tunnel_server/ts_int.h"

extern const ph_module proxyhost_module; /* tunnel_server */

/* ---- tsfake: authz.store and access -------------------------------------- */

typedef struct held {
  int64_t id;
  int kind; /* 0 auth, 1 access */
  char what[256];
  void *cb, *arg;
  struct held *next;
} held;

static struct {
  const ph_api *api;
  ph_ctx *ctx;
  ph_timer *timer;
  held *q;        /* answered on the next loop turn (or held) */
  int hold_access;
  int64_t next_id, checks, cancels;
  /* Issue 22 item 1: the store changing under running sessions. */
  uint64_t rev;        /* the revision revision() and answers report */
  char denied[64];     /* a bearer the store now refuses */
  int unavailable;     /* every authentication answers UNAVAILABLE */
  int64_t expires_at;  /* of the "client3" token */
} fk = {.rev = 1};

static void fk_deliver(ph_timer *t, void *arg);

static int64_t fk_queue(int kind, const char *what, void *cb, void *arg) {
  held *h = calloc(1, sizeof(*h));
  h->id = ++fk.next_id;
  h->kind = kind;
  snprintf(h->what, sizeof(h->what), "%s", what);
  h->cb = cb;
  h->arg = arg;
  held **pp = &fk.q;
  while (*pp)
    pp = &(*pp)->next;
  *pp = h;
  fk.api->timer_set(fk.timer, 1, 0);
  return h->id;
}

static void answer(held *h) {
  if (h->kind == 0) {
    ph_az_auth_result r;
    memset(&r, 0, sizeof(r));
    r.size = sizeof(r);
    r.revision = fk.rev;
    if (fk.unavailable) {
      r.verdict = PH_AZ_AUTH_UNAVAILABLE;
    } else if (strcmp(h->what, fk.denied) == 0) {
      r.verdict = PH_AZ_AUTH_DENY;
    } else if (strcmp(h->what, "client3") == 0) {
      r.verdict = PH_AZ_AUTH_OK;
      r.token.id = "tok_00000000000000c3";
      r.token.scopes = PH_AZ_SCOPE_STREAM;
      r.token.expires_at = fk.expires_at;
    } else if (strcmp(h->what, "client") == 0 ||
               strcmp(h->what, "client2") == 0) {
      r.verdict = PH_AZ_AUTH_OK;
      r.token.id = strcmp(h->what, "client") == 0 ? "tok_00000000000000c1"
                                                   : "tok_00000000000000c2";
      r.token.scopes = PH_AZ_SCOPE_STREAM;
    } else if (strncmp(h->what, "agent:", 6) == 0) {
      r.verdict = PH_AZ_AUTH_OK;
      r.token.id = "tok_00000000000000a1";
      r.token.agent = h->what + 6;
      r.token.scopes = PH_AZ_SCOPE_AGENT;
    } else if (strcmp(h->what, "noscope") == 0) {
      r.verdict = PH_AZ_AUTH_OK;
      r.token.id = "tok_00000000000000d1";
    } else {
      r.verdict = strcmp(h->what, "unavail") == 0 ? PH_AZ_AUTH_UNAVAILABLE
                                                  : PH_AZ_AUTH_DENY;
    }
    ((ph_az_auth_cb)h->cb)(h->arg, &r);
  } else {
    ph_access_result r;
    memset(&r, 0, sizeof(r));
    r.size = sizeof(r);
    int deny = strcmp(h->what, "deny.test") == 0;
    r.verdict = deny ? PH_ACCESS_DENY : PH_ACCESS_ALLOW;
    r.code = deny ? PH_OPEN_FORBIDDEN : PH_OPEN_OK;
    ((ph_access_cb)h->cb)(h->arg, &r);
  }
  free(h);
}

/* Answers what is queued: auths always, access checks unless held. */
static void fk_deliver(ph_timer *t, void *arg) {
  (void)t, (void)arg;
  held **pp = &fk.q;
  while (*pp) {
    held *h = *pp;
    if (h->kind == 1 && fk.hold_access) {
      pp = &h->next;
      continue;
    }
    *pp = h->next;
    answer(h);
    pp = &fk.q; /* the callback may have queued or cancelled */
  }
}

/* Answers the oldest held access check; 0 when none. */
static int fk_release_one(void) {
  for (held **pp = &fk.q; *pp; pp = &(*pp)->next)
    if ((*pp)->kind == 1) {
      held *h = *pp;
      *pp = h->next;
      answer(h);
      return 1;
    }
  return 0;
}

static int fk_held(void) {
  int n = 0;
  for (held *h = fk.q; h; h = h->next)
    n += h->kind == 1;
  return n;
}

static int64_t fk_auth(void *self, const char *bearer, size_t len,
                       ph_az_auth_cb cb, void *arg) {
  (void)self;
  char b[256];
  snprintf(b, sizeof(b), "%.*s", (int)len, bearer);
  return fk_queue(0, b, (void *)cb, arg);
}

static int fk_cancel(void *self, int64_t id) {
  (void)self;
  for (held **pp = &fk.q; *pp; pp = &(*pp)->next)
    if ((*pp)->id == id) {
      held *h = *pp;
      *pp = h->next;
      if (h->kind == 1)
        fk.cancels++;
      free(h);
      return PH_OK;
    }
  return PH_ENOENT;
}

static int64_t fk_write(void *s, const ph_az_write *w, ph_az_write_cb cb,
                        void *a) {
  (void)s, (void)w, (void)cb, (void)a;
  return PH_EINVAL;
}
static int64_t fk_list(void *s, const ph_az_list *l, ph_az_list_cb cb,
                       void *a) {
  (void)s, (void)l, (void)cb, (void)a;
  return PH_EINVAL;
}

static char fk_order[256]; /* the hosts of the access checks, "a,b," */

static int64_t fk_check(void *self, const ph_access_request *req,
                        ph_access_cb cb, void *arg) {
  (void)self;
  fk.checks++;
  size_t ol = strlen(fk_order);
  if (ol + strlen(req->host) + 2 < sizeof(fk_order))
    snprintf(fk_order + ol, sizeof(fk_order) - ol, "%s,", req->host);
  return fk_queue(1, req->host, (void *)cb, arg);
}

static int fk_revision(void *self, uint64_t *rev) {
  (void)self;
  *rev = fk.rev;
  return PH_OK;
}

static const ph_az_store_v1 fk_store = {.authenticate = fk_auth,
                                        .write = fk_write,
                                        .list = fk_list,
                                        .cancel = fk_cancel};
static const ph_access_v1 fk_access = {
    .check_open = fk_check, .cancel = fk_cancel, .revision = fk_revision};

static int fk_init(ph_ctx *ctx, const ph_api *api, void **state) {
  fk.api = api;
  fk.ctx = ctx;
  fk.timer = api->timer_new(ctx, fk_deliver, NULL);
  *state = &fk;
  api->service_register(ctx, PH_AZ_STORE_SERVICE, PH_AZ_STORE_MAJOR,
                        PH_AZ_STORE_MINOR, &fk_store, &fk);
  return api->service_register(ctx, PH_ACCESS_SERVICE, PH_ACCESS_MAJOR,
                               PH_ACCESS_MINOR, &fk_access, &fk);
}

static void fk_destroy(void *state) {
  (void)state;
  while (fk.q) {
    held *h = fk.q;
    fk.q = h->next;
    free(h);
  }
  fk.api->timer_free(fk.timer);
}

static const char *const fk_provides[] = {PH_AZ_STORE_SERVICE,
                                          PH_ACCESS_SERVICE, NULL};
static const ph_module fk_module = {
    PH_MODULE_HEADER("tsfake", "1.0"),
    .description = "test: authz.store and access for tunnel_server",
    .provides = fk_provides,
    .init = fk_init,
    .destroy = fk_destroy,
};

/* ---- an in-memory link: the test is the peer ------------------------------ */

#define OUT_MAX 512

typedef struct out_frame {
  uint8_t type, flags;
  uint32_t sid, len;
  uint8_t payload[TM_MAX_PAYLOAD];
} out_frame;

typedef struct peer {
  ts_conn *c;
  tm_session *s;
  int want, resumed, closed, gone, status;
  out_frame *out[OUT_MAX];
  int nout;
} peer;

#define NPEERS 10
static peer peers[NPEERS];
static ph_mock *mk;

/* The links run from the loop (a tsfake timer), as sockets would: the
 * writable events and the end of a closed link. */
static ph_timer *link_timer;
static void links_run(ph_timer *t, void *arg);
static void arm_links(void) {
  if (!link_timer)
    link_timer = fk.api->timer_new(fk.ctx, links_run, NULL);
  fk.api->timer_set(link_timer, 1, 0);
}
static void links_run(ph_timer *t, void *arg) {
  (void)t, (void)arg;
  for (int i = 0; i < NPEERS; i++) {
    peer *p = &peers[i];
    for (int n = 0; n < 4096 && p->want && p->s && !p->closed; n++) {
      p->want = 0;
      tm_session_on_writable(p->s);
    }
    if (p->closed && !p->gone && p->c) {
      /* The link ends after the close, as a WebSocket does. */
      p->gone = 1;
      p->s = NULL;
      ts_conn *c = p->c;
      p->c = NULL;
      ts_conn_closed(c);
    }
  }
}

static void p_want(void *t) {
  ((peer *)t)->want = 1;
  arm_links();
}
static int p_write(void *t, uint8_t *buf, size_t len) {
  peer *p = t;
  tm_frame f;
  if (tm_frame_decode(buf, len, &f) != TM_OK || p->nout >= OUT_MAX)
    return -1;
  out_frame *o = calloc(1, sizeof(*o));
  o->type = f.type;
  o->flags = f.flags;
  o->sid = f.stream_id;
  o->len = f.length;
  memcpy(o->payload, f.payload, f.length);
  p->out[p->nout++] = o;
  return 0;
}
static void p_pause(void *t, int paused) { (void)t, (void)paused; }
static void p_tclose(void *t) {
  ((peer *)t)->closed = 1;
  arm_links();
}
static const tm_transport p_transport = {.want_write = p_want,
                                         .write = p_write,
                                         .pause_read = p_pause,
                                         .close = p_tclose,
                                         .headroom = 0};
static const tm_transport *p_get_transport(void) { return &p_transport; }
static void l_bind(void *link, tm_session *s) { ((peer *)link)->s = s; }
static void l_resume(void *link) { ((peer *)link)->resumed = 1; }
static void l_close(void *link, int status, const char *reason) {
  (void)reason;
  peer *p = link;
  p->status = status;
  p->closed = 1;
  arm_links();
}
static const ts_link_ops links = {.transport = p_get_transport,
                                  .bind = l_bind,
                                  .resume = l_resume,
                                  .close = l_close};

/* Runs the loop, and the links in it, for a while (bounded). */
static void pump(void) {
  for (int round = 0; round < 30; round++)
    ph_mock_run_for(mk, 1);
}

static peer *connect_peer(int i, const char *bearer, const char *subproto) {
  peer *p = &peers[i];
  for (int k = 0; k < p->nout; k++)
    free(p->out[k]);
  memset(p, 0, sizeof(*p));
  p->c = ts_conn_accept(ts_last_mod, &links, p, bearer, strlen(bearer),
                        subproto, "test");
  pump();
  return p;
}

static void send_frame(peer *p, uint8_t type, uint8_t flags, uint32_t sid,
                       const void *payload, size_t len) {
  static uint8_t buf[TM_MAX_FRAME];
  tm_frame_header(buf, type, flags, sid, (uint32_t)len);
  if (len)
    memcpy(buf + TM_HEADER_LEN, payload, len);
  tm_session_on_message(p->s, buf, TM_HEADER_LEN + len);
}

/* Takes the first frame of that type (and stream, unless 0) p got. */
static out_frame *take(peer *p, uint8_t type, uint32_t sid) {
  for (int k = 0; k < p->nout; k++) {
    out_frame *o = p->out[k];
    if (o->type == type && (sid == 0 || o->sid == sid)) {
      memmove(&p->out[k], &p->out[k + 1],
              (size_t)(p->nout - k - 1) * sizeof(*p->out));
      p->nout--;
      return o;
    }
  }
  return NULL;
}

static int count(peer *p, uint8_t type) {
  int n = 0;
  for (int k = 0; k < p->nout; k++)
    n += p->out[k]->type == type;
  return n;
}

static void open_stream(peer *p, uint32_t sid, const char *host,
                        const char *agent) {
  tm_open_stream o;
  memset(&o, 0, sizeof(o));
  o.window = 262144;
  o.protocol = 1;
  o.port = 443;
  snprintf(o.host, sizeof(o.host), "%s", host);
  snprintf(o.agent, sizeof(o.agent), "%s", agent);
  uint8_t b[600];
  int n = tm_open_stream_encode(&o, b, sizeof(b));
  send_frame(p, TM_OPEN_STREAM, 0, sid, b, (size_t)n);
}

static void agent_metadata(peer *p, const char *name, unsigned caps) {
  tm_metadata md;
  memset(&md, 0, sizeof(md));
  snprintf(md.agent_id, sizeof(md.agent_id), "%s", name);
  md.caps = caps;
  uint8_t b[TM_METADATA_MAX];
  int n = tm_metadata_encode(&md, 0, b, sizeof(b));
  send_frame(p, TM_AGENT_METADATA, 0, 0, b, (size_t)n);
}

/* The OPEN_RESULT p got for sid: 1 accepted, 0 refused (stage/code set),
 * -1 none. */
static int result(peer *p, uint32_t sid, int *stage, int *code) {
  out_frame *o = take(p, TM_OPEN_RESULT, sid);
  if (!o)
    return -1;
  tm_open_result r;
  int rc = tm_open_result_decode(o->payload, o->len, &r);
  free(o);
  if (rc != TM_OK)
    return -1;
  if (stage)
    *stage = r.stage;
  if (code)
    *code = r.code;
  return r.accepted;
}

static void agent_answer_ok(peer *a, uint32_t sid) {
  tm_open_result r = {.accepted = 1, .stage = PH_STAGE_CONNECT,
                      .code = PH_OPEN_OK, .window = 262144};
  uint8_t b[TM_OPEN_RESULT_MAX];
  int n = tm_open_result_encode(&r, b, sizeof(b));
  send_frame(a, TM_OPEN_RESULT, 0, sid, b, (size_t)n);
}

static void reset_stream(peer *p, uint32_t sid) {
  uint8_t c = PH_OPEN_INTERNAL_ERROR;
  send_frame(p, TM_RESET, 0, sid, &c, 1);
}

#define INI                                                               \
  "[log]\nlevel = warn\n"                                                  \
  "[tunnel_server]\nstore = tsfake\naccess = tsfake\n"                    \
  "listen = 127.0.0.1:0\nping_interval = 0\ndrain_timeout = 200ms\n"
#define TINY                                                              \
  "stream.max_concurrent_opens = 2\n"                                      \
  "stream.max_pending_opens = 2\n"                                         \
  "stream.max_opens_per_session = 1\n"

/* ---- the cases ------------------------------------------------------------ */

static void test_auth(void) {
  peer *p = connect_peer(0, "deny", TM_SUBPROTO_FULL);
  is_int(p->status, 4401, "a denied token is closed with 4401");
  ok(p->s == NULL, "and gets no session");
  p = connect_peer(0, "unavail", TM_SUBPROTO_FULL);
  is_int(p->status, 4401, "an unavailable store is a denial too (4401)");
  p = connect_peer(0, "noscope", TM_SUBPROTO_FULL);
  is_int(p->status, 4401, "a token with neither scope is refused");
}

static void test_strict_and_selection(void) {
  peer *a1 = connect_peer(1, "agent:edge", TM_SUBPROTO_FULL);
  ok(a1->s && a1->resumed, "an agent token makes an agent session");
  peer *c = connect_peer(0, "client", TM_SUBPROTO_FULL);
  ok(c->s && c->resumed, "a stream token makes a client session");
  int stage = -1, code = -1;
  open_stream(c, 1, "ok.test", "edge");
  pump();
  is_int(count(a1, TM_OPEN_STREAM), 0,
         "an agent without metadata takes no stream");
  is_int(result(c, 1, &stage, &code), 0, "so the open fails");
  is_int(code, PH_OPEN_AGENT_OFFLINE, "selection/agent_offline");
  is_int(stage, PH_STAGE_SELECTION, "at stage selection");

  agent_metadata(a1, "edge", TM_CAP_ALL);
  pump();
  out_frame *ack = take(a1, TM_AGENT_METADATA_ACK, 0);
  ok(ack != NULL, "TM-PROTO-18 the metadata is answered with an ACK");
  tm_metadata am;
  if (ack && tm_metadata_decode(ack->payload, ack->len, &am) == TM_OK)
    is_int((int)am.caps, (int)TM_CAP_ALL, "with the capability intersection");
  free(ack);

  open_stream(c, 3, "ok.test", "edge");
  pump();
  out_frame *os = take(a1, TM_OPEN_STREAM, 0);
  ok(os != NULL, "an allowed open reaches the agent");
  is_int(result(c, 3, NULL, NULL), -1,
         "TM-P0-18 no OPEN_RESULT before the agent answered");
  uint32_t asid = os ? os->sid : 0;
  free(os);
  agent_answer_ok(a1, asid);
  pump();
  is_int(result(c, 3, NULL, NULL), 1, "TM-TEST-15 the agent's ok reaches the client (local relay)");
  send_frame(c, TM_DATA, 0, 3, "ping", 4);
  pump();
  out_frame *d = take(a1, TM_DATA, asid);
  ok(d && d->len == 4 && memcmp(d->payload, "ping", 4) == 0,
     "the client's bytes are relayed to the agent stream");
  free(d);
  send_frame(a1, TM_DATA, 0, asid, "pong", 4);
  pump();
  d = take(c, TM_DATA, 3);
  ok(d && d->len == 4 && memcmp(d->payload, "pong", 4) == 0,
     "and the agent's back to the client");
  free(d);

  open_stream(c, 5, "deny.test", "edge");
  pump();
  is_int(result(c, 5, &stage, &code), 0, "a denied target is refused");
  is_int(code, PH_OPEN_FORBIDDEN, "authorization/forbidden");
  open_stream(c, 7, "ok.test", "nobody");
  pump();
  is_int(result(c, 7, &stage, &code), 0, "an agent with no connection");
  is_int(code, PH_OPEN_AGENT_OFFLINE, "is selection/agent_offline");

  /* A second connection of the agent: new streams go to the one with the
   * fewest (a1 holds one). */
  peer *a2 = connect_peer(2, "agent:edge", TM_SUBPROTO_FULL);
  agent_metadata(a2, "edge", TM_CAP_ALL);
  pump();
  for (uint32_t sid = 9; sid <= 15; sid += 2)
    open_stream(c, sid, "ok.test", "edge");
  pump();
  int n1 = count(a1, TM_OPEN_STREAM), n2 = count(a2, TM_OPEN_STREAM);
  is_int(n1 + n2, 4, "four opens reach the agent");
  ok(n2 >= 2 && abs((1 + n1) - n2) <= 1,
     "weighted least connections: the idle connection catches up, then "
     "they share (a1 had one stream)");
  /* The agent refuses: its stage and code reach the client as they are
   * (one by RESET while opening: stage relay); the sessions stay. */
  int first = 1;
  for (int k = 0; k < 2; k++) {
    peer *a = k ? a2 : a1;
    while ((os = take(a, TM_OPEN_STREAM, 0))) {
      if (first) {
        reset_stream(a, os->sid);
        first = 0;
      } else {
        tm_open_result r = {.accepted = 0, .stage = PH_STAGE_DNS,
                            .code = PH_OPEN_HOST_UNREACHABLE};
        uint8_t b[TM_OPEN_RESULT_MAX];
        int n = tm_open_result_encode(&r, b, sizeof(b));
        send_frame(a, TM_OPEN_RESULT, 0, os->sid, b, (size_t)n);
      }
      free(os);
    }
  }
  pump();
  int refused = 0, relay = 0;
  for (uint32_t sid = 9; sid <= 15; sid += 2) {
    if (result(c, sid, &stage, &code) != 0)
      continue;
    refused += stage == PH_STAGE_DNS && code == PH_OPEN_HOST_UNREACHABLE;
    relay += stage == PH_STAGE_RELAY;
  }
  is_int(refused, 3,
         "TM-P0-19 the agent's dns/host_unreachable reaches the client as is");
  is_int(relay, 1, "an agent RESET while opening is stage relay");
  ok(c->s && a1->s && a2->s && !c->closed && !a1->closed && !a2->closed,
     "TM-TEST-16 failed streams close neither session");
}

/* TM-P2-1, TM-P2-2, TM-P0-14 (issue 24 item 4): the client session's
 * reader only enqueues. The authorization call (with store_pg behind a
 * cache miss, a query) starts on the loop's next turn, not on the
 * reader's stack, in the order of the OPEN_STREAMs. */
static void test_reader_enqueue(void) {
  peer *c = &peers[0]; /* stream ids between the cases' before and after */
  fk.hold_access = 1;
  int64_t checks0 = fk.checks, cancels0 = fk.cancels;
  fk_order[0] = '\0';
  open_stream(c, 81, "first.test", "edge");
  open_stream(c, 83, "second.test", "edge");
  open_stream(c, 85, "third.test", "edge");
  is_int((int)(fk.checks - checks0), 0,
         "TM-P2-1 issue 24 item 4: the reader's enqueue returned without "
         "calling the authorizer");
  ph_mock_run_for(mk, 0);
  is_int((int)(fk.checks - checks0), 3,
         "TM-P2-2: the next loop turn starts the three authorizations");
  is_str(fk_order, "first.test,second.test,third.test,",
         "in the order of the OPEN_STREAMs");
  reset_stream(c, 81);
  reset_stream(c, 83);
  reset_stream(c, 85);
  pump();
  is_int((int)(fk.cancels - cancels0), 3, "RESETs cancel the checks");
  fk.hold_access = 0;
  int stage = -1, code = -1;
  ok(result(c, 81, &stage, &code) < 0, "no answer to a reset stream");

  /* A RESET before the turn: the open never reaches the authorizer. */
  checks0 = fk.checks;
  fk.hold_access = 1;
  open_stream(c, 87, "fourth.test", "edge");
  reset_stream(c, 87);
  pump();
  is_int((int)(fk.checks - checks0), 0,
         "an open reset before its turn never reaches the authorizer");
  fk.hold_access = 0;
}

static void test_executor(void) {
  /* Limits of this test's configuration: 2 at once, 2 waiting, 1 per
   * session. */
  peer *c = &peers[0], *a1 = &peers[1], *a2 = &peers[2];
  char err[1024];
  is_int(ph_mock_reload(mk, INI TINY, err, sizeof(err)), PH_OK,
         "a reload lowers the executor's limits");
  peer *c2 = connect_peer(3, "client2", TM_SUBPROTO_FULL);
  fk.hold_access = 1;
  int64_t checks0 = fk.checks, cancels0 = fk.cancels;
  open_stream(c, 101, "ok.test", "edge");
  open_stream(c, 103, "ok.test", "edge");
  open_stream(c, 105, "ok.test", "edge");
  open_stream(c, 107, "ok.test", "edge");
  pump();
  is_int((int)(fk.checks - checks0), 1,
         "TM-SEC-6 one session runs max_opens_per_session opens at once");
  int stage = -1, code = -1;
  is_int(result(c, 107, &stage, &code), 0,
         "TM-FAIL-2 beyond max_pending_opens: refused at once");
  is_int(code, PH_OPEN_QUEUE_FULL, "queue/queue_full");
  is_int(stage, PH_STAGE_QUEUE, "at stage queue");
  open_stream(c2, 1, "ok.test", "edge");
  pump();
  is_int((int)(fk.checks - checks0), 2,
         "TM-SEC-6 another session gets the free slot at once");
  /* RESET of a waiting open (105) and of a running one (101). */
  reset_stream(c, 105);
  pump();
  reset_stream(c, 101);
  pump();
  is_int((int)(fk.cancels - cancels0), 1,
         "a RESET while authorizing cancels the access check");
  is_int((int)(fk.checks - checks0), 3,
         "the freed slot goes to the session's next waiting open (103)");
  fk.hold_access = 0;
  while (fk_release_one())
    ;
  pump();
  int opens = count(a1, TM_OPEN_STREAM) + count(a2, TM_OPEN_STREAM);
  is_int(opens, 2, "the two running opens reach the agent; the cancelled "
                   "ones never do");
  is_int(fk_held(), 0, "nothing is left waiting");
  out_frame *os;
  for (int k = 0; k < 2; k++) {
    peer *a = k ? a2 : a1;
    while ((os = take(a, TM_OPEN_STREAM, 0))) {
      agent_answer_ok(a, os->sid);
      free(os);
    }
  }
  pump();
  is_int(result(c, 103, NULL, NULL), 1, "103 opened");
  is_int(result(c2, 1, NULL, NULL), 1, "the other session's open too");
}

static void test_legacy_agent(void) {
  peer *c = &peers[0];
  peer *old = connect_peer(4, "agent:oldedge", NULL);
  agent_metadata(old, "oldedge", 0);
  pump();
  const char *k = "tunnelmesh_stream_open_total{component=\"server\","
                  "result=\"success\",error_class=\"ok\","
                  "open_mode=\"legacy\"}";
  double before = 0, after = 0;
  ph_mock_metric(mk, k, NULL, &before);
  open_stream(c, 201, "ok.test", "oldedge");
  pump();
  is_int(count(old, TM_OPEN_STREAM), 1, "the legacy agent gets the open");
  is_int(result(c, 201, NULL, NULL), 1,
         "TM-PROTO-20 a strict client over a legacy agent: ok once opened "
         "towards it");
  ph_mock_metric(mk, k, NULL, &after);
  is_int((int)(after - before), 1,
         "TM-PROTO-21 one compatibility count (open_mode=legacy)");
}

static void test_limits(void) {
  peer *c = &peers[0], *c2 = &peers[3];
  char err[1024];
  int stage = -1, code = -1;
  /* Each client token holds a stream already (c: 3, 103, 201; c2: 1). */
  is_int(ph_mock_reload(mk, INI "stream.max_per_token = 1\n", err,
                        sizeof(err)),
         PH_OK, "a reload to stream.max_per_token = 1");
  open_stream(c, 301, "ok.test", "edge");
  open_stream(c2, 3, "ok.test", "edge");
  pump();
  is_int(result(c, 301, &stage, &code), 0,
         "TM-SEC-5 a token at stream.max_per_token: the open is refused");
  is_int(code, PH_OPEN_QUEUE_FULL, "queue/queue_full (retryable)");
  is_int(result(c2, 3, NULL, &code), 0, "the other token's too");
  is_int(ph_mock_reload(mk, INI "stream.max_per_agent = 1\n", err,
                        sizeof(err)),
         PH_OK, "a reload to stream.max_per_agent = 1");
  open_stream(c, 303, "ok.test", "edge");
  pump();
  is_int(result(c, 303, &stage, &code), 0,
         "TM-SEC-5 an agent at stream.max_per_agent: the open is refused");
  is_int(code, PH_OPEN_QUEUE_FULL, "queue/queue_full");
  is_int(ph_mock_reload(mk, INI "agent.max_connections = 2\n", err,
                        sizeof(err)),
         PH_OK, "a reload to agent.max_connections = 2");
  peer *a3 = connect_peer(5, "agent:edge", TM_SUBPROTO_FULL);
  is_int(a3->status, 1008,
         "an agent at agent.max_connections: a third connection is refused");
  ok(c->s && !c->closed, "the client session is untouched");
}

static void test_metadata_mismatch(void) {
  peer *a = connect_peer(6, "agent:edge9", TM_SUBPROTO_FULL);
  agent_metadata(a, "someone-else", TM_CAP_ALL);
  pump();
  ok(a->closed, "metadata naming another agent than the token closes it");
  is_int(count(a, TM_AGENT_METADATA_ACK), 0, "and gets no ACK");
  a = connect_peer(6, "agent:edge9", TM_SUBPROTO_FULL);
  agent_metadata(a, "edge9", 0);
  pump();
  ok(a->closed, "TM-PROTO-17 metadata without the capabilities the "
                "subprotocol chose closes it (never guessed around)");
}

/* ---- the status panels (issue 28) ----------------------------------------- */

static int counted(void *arg, const char *stage, const char *code,
                   uint32_t n) {
  char *out = arg;
  size_t len = strlen(out);
  snprintf(out + len, 256 - len, "%s/%s=%u;", stage, code, (unsigned)n);
  return 0;
}

/* The ring alone: minutes roll over, old ones drop out of the window. */
static void test_opens_ring(void) {
  ts_opens o;
  int64_t w = -1;
  char out[256] = "";
  ts_opens_init(&o, 600);
  ts_opens_count(&o, "selection", "agent_offline", 600);
  ts_opens_count(&o, "none", "ok", 610);
  ts_opens_count(&o, "none", "ok", 665); /* the next minute */
  ts_opens_count(&o, "bogus", "bogus", 670);
  ts_opens_walk(&o, 670, &w, counted, out);
  is_str(out, "none/ok=2;none/internal_error=1;selection/agent_offline=1;",
         "the ring sums its minutes by stage and code (unknown names count "
         "as none/internal_error)");
  is_int((int)w, 70, "the window starts at the first count");
  out[0] = '\0';
  ts_opens_walk(&o, 600 + 5 * 60 + 5, &w, counted, out);
  is_str(out, "none/ok=1;none/internal_error=1;",
         "five minutes on, the first minute is out of the window");
  is_int((int)w, 5 * 60 - 55, "which is at most five minutes (from the "
                              "start of the oldest minute kept)");
  out[0] = '\0';
  ts_opens_walk(&o, 600 + 60 * 60, &w, counted, out);
  is_str(out, "", "an hour on, nothing is left");
}

/* The agents that left (ts_gone.h): bounded, newest first, one entry a
 * name. */
static int gone_seen(void *arg, const char *name, int64_t at_s) {
  char *out = arg;
  size_t len = strlen(out);
  if (len < 200)
    snprintf(out + len, 256 - len, "%s@%d;", name, (int)at_s);
  return strlen(out) >= 40; /* a few are enough */
}

static void test_gone_ring(void) {
  static ts_gone g; /* ~19 kB */
  char name[16], out[256] = "";
  for (int i = 0; i < TS_GONE_MAX + 44; i++) {
    snprintf(name, sizeof(name), "a%d", i);
    ts_gone_add(&g, name, 1000 + i);
  }
  is_int((int)g.n, TS_GONE_MAX, "issue 28: the agents that left are kept "
                                "up to TS_GONE_MAX, the oldest dropped");
  is_str(g.e[0].name, "a44", "... the first 44 of 300 are gone");
  ts_gone_add(&g, "a100", 5000);
  ts_gone_drop(&g, "a299");
  ts_gone_drop(&g, "nobody");
  ts_gone_walk(&g, gone_seen, out);
  is_str(out, "a100@5000;a298@1298;a297@1297;a296@1296;",
         "newest first; leaving again moves an agent to the newest (one "
         "entry a name); one that connects again is no longer listed");
  is_int((int)g.n, TS_GONE_MAX - 1, "... which makes room");
}

#define XSS "<script>alert(1)</script>"

static const char *status_of(const char *target, int *code) {
  const char *json = NULL;
  *code = ph_mock_status(mk, target, &json);
  return json ? json : "";
}

static void test_status(void) {
  char err[1024], red[TS_REDACTED_LEN], want[256], path[256];
  int code;
  peer *a = connect_peer(9, "agent:" XSS, TM_SUBPROTO_FULL);
  agent_metadata(a, XSS, TM_CAP_ALL);
  pump();
  ok(a->s && !a->closed, "an agent named " XSS " is connected");
  ts_redact_agent(XSS, red);
  (void)path;
  const char *j = status_of("/v1/status/tunnel_server/agents/agents", &code);
  is_int(code, 200, "the agents table");
  snprintf(want, sizeof(want), "[\"%s\",\"%s\",1,0,\"", XSS, red);
  ok(strstr(j, want) != NULL,
     "agent (its name, verbatim in the JSON: the host escapes HTML), "
     "log_id (the hash the logs use), 1 connection, 0 streams");
  ok(strstr(j, "open_result") != NULL, "its negotiated capabilities");
  ok(strstr(j, "\"more\":false") != NULL, "one page");
  snprintf(path, sizeof(path),
           "/v1/status/tunnel_server/agents/agents?key=%s", red);
  j = status_of(path, &code);
  ok(code == 200 && strstr(j, "\"rows\":[]") != NULL,
     "the key is the name, not the hash");
  j = status_of("/v1/status/tunnel_server/agents", &code);
  ok(strstr(j, "\"connected\":") && strstr(j, "\"agents\":"),
     "the agents panel's fields");
  ok(strstr(j, "\"presence\":\"off\"") != NULL &&
         strstr(j, "\"remote_agents\"") == NULL,
     "presence off: said, and no remote count");
  ok(strstr(j, "\"online\",\"last_seen_at\"]") != NULL,
     "the columns end with online and last_seen_at");
  snprintf(want, sizeof(want), "\"\",\"yes\",\"\"]");
  ok(strstr(j, want) != NULL, "a connected agent is online, no last_seen_at");
  /* edge9 left (test_metadata_mismatch): offline, with when. */
  char red9[TS_REDACTED_LEN];
  ts_redact_agent("edge9", red9);
  snprintf(want, sizeof(want),
           "[\"edge9\",\"%s\",0,null,\"\",null,null,\"\",\"no\",\"20", red9);
  const char *gone9 = strstr(j, want);
  ok(gone9 != NULL, "issue 28: an agent that left is listed offline: 0 "
                    "connections, streams/rtt/age unknown (null), online "
                    "no, last_seen_at");
  ok(strstr(j, "\"offline_agents\":") != NULL, "... counted");

  /* The XSS agent leaves: it is listed offline, newest first, with a
   * last_seen_at of now (RFC 3339 UTC). */
  time_t t0 = time(NULL);
  a->closed = 1;
  arm_links();
  pump();
  ok(a->gone, "the agent's connection closed");
  j = status_of("/v1/status/tunnel_server/agents/agents?key=" XSS, &code);
  const char *seen = strstr(j, "\"no\",\"");
  struct tm tm;
  memset(&tm, 0, sizeof(tm));
  ok(seen && strptime(seen + 6, "%Y-%m-%dT%H:%M:%SZ", &tm) != NULL,
     "the agent that left: online no, last_seen_at in RFC 3339 UTC");
  time_t at = timegm(&tm);
  ok(at >= t0 - 1 && at <= time(NULL) + 1,
     "... the time its last connection closed (within a second)");
  j = status_of("/v1/status/tunnel_server/agents/agents", &code);
  const char *xss = strstr(j, "[\"" XSS "\"");
  gone9 = strstr(j, "[\"edge9\"");
  ok(xss && gone9 && xss < gone9, "the newest that left first");
  a = connect_peer(9, "agent:" XSS, TM_SUBPROTO_FULL);
  agent_metadata(a, XSS, TM_CAP_ALL);
  pump();
  j = status_of("/v1/status/tunnel_server/agents/agents?key=" XSS, &code);
  ok(strstr(j, "\"yes\"") && !strstr(j, "\"no\""),
     "connected again: one row, online (no longer listed as gone)");

  is_int(ph_mock_reload(mk, INI "log_names = true\n", err, sizeof(err)),
         PH_OK, "a reload to log_names = true");
  j = status_of("/v1/status/tunnel_server/agents", &code);
  snprintf(want, sizeof(want), "[\"%s\",\"%s\",1,", XSS, red);
  ok(strstr(j, want) != NULL,
     "log_names on: the same row (log_names is about the logs)");
  is_int(ph_mock_reload(mk, INI, err, sizeof(err)), PH_OK, "log_names off");

  j = status_of("/v1/status/tunnel_server/sessions/sessions", &code);
  is_int(code, 200, "the sessions table");
  ok(strstr(j, "\"tok_00000000000000c1\"") != NULL &&
         strstr(j, "\"strict\"") != NULL,
     "a client session by its token id (never the bearer), strict mode");
  ok(strstr(j, "\"client\"") == NULL, "the bearer itself is nowhere");
  j = status_of("/v1/status/tunnel_server/opens/opens", &code);
  is_int(code, 200, "the opens table");
  ok(strstr(j, "[\"selection\",\"agent_offline\",") != NULL,
     "the open results of the last minutes by stage and code");
}

/* The value of one series in the scrape (0 when absent). */
static long metric_value(const char *series) {
  double v;
  return ph_mock_metric(mk, series, NULL, &v) == PH_OK ? (long)v : 0;
}

#define ENDED(role, why)                                                       \
  "proxyhost_tunnel_server_credential_ends_total{role=\"" role                 \
  "\",reason=\"" why "\"}"
#define REFUSED(why)                                                           \
  "proxyhost_tunnel_server_connections_refused_total{reason=\"" why "\"}"

/* Issue 22 item 1: a session ends when its credentials stop being valid
 * (and only then); item 2: connections per token and per user. */
/* A reload to per_token connections per token, per_user per user. */
static void reload_limits(int per_token, int per_user, const char *name) {
  char conf[sizeof(INI) + 128];
  snprintf(conf, sizeof(conf),
           INI "client.max_connections_per_token = %d\n"
               "client.max_connections_per_user = %d\n",
           per_token, per_user);
  char err[1024];
  is_int(ph_mock_reload(mk, conf, err, sizeof(err)), PH_OK, name);
}

static void test_credentials(void) {
  char err[1024];
  peer *c = connect_peer(7, "client3", TM_SUBPROTO_FULL);
  ok(c->s && !c->closed, "a client session (token c3)");
  fk.unavailable = 1;
  fk.rev = 2;
  ph_mock_run_for(mk, 700);
  ok(c->s && !c->closed,
     "the revision moves while the store is unavailable: the session "
     "stays (unknown is no verdict; new streams are refused by access)");
  fk.unavailable = 0;
  ph_mock_run_for(mk, 700);
  ok(c->s && !c->closed, "re-checked once it answers again: still valid");
  snprintf(fk.denied, sizeof(fk.denied), "client3");
  ph_mock_run_for(mk, 700);
  ok(c->s && !c->closed,
     "revoked without a revision step: nothing to re-check yet");
  fk.rev = 3;
  ph_mock_run_for(mk, 700);
  is_int(c->status, 4403,
         "revoked, the revision moved: the client session is closed with "
         "4403 within the credential check");
  is_int((int)metric_value(ENDED("client", "denied")), 1,
         "counted credential_ends{role=client,reason=denied}");

  /* An agent: its slot is freed for the real agent's new token. */
  fk.denied[0] = 0;
  is_int(ph_mock_reload(mk, INI "agent.max_connections = 1\n", err,
                        sizeof(err)),
         PH_OK, "a reload to agent.max_connections = 1");
  peer *a = connect_peer(6, "agent:edge7", TM_SUBPROTO_FULL);
  ok(a->s && !a->closed, "an agent session for edge7");
  peer *a2 = connect_peer(5, "agent:edge7", TM_SUBPROTO_FULL);
  is_int(a2->status, 1008, "a second one is refused (its one slot)");
  is_int((int)metric_value(REFUSED("agent_limit")), 2,
         "counted connections_refused{reason=agent_limit}");
  snprintf(fk.denied, sizeof(fk.denied), "agent:edge7");
  fk.rev = 4;
  ph_mock_run_for(mk, 700);
  is_int(a->status, 4403, "its token revoked: the agent session is closed "
                          "with 4403");
  is_int((int)metric_value(ENDED("agent", "denied")), 1, "counted");
  fk.denied[0] = 0;
  a2 = connect_peer(5, "agent:edge7", TM_SUBPROTO_FULL);
  ok(a2->s && !a2->closed,
     "the agent's slot was freed at once: a new session is accepted");

  /* The expiry needs no revision step. */
  fk.expires_at = (int64_t)time(NULL) + 1;
  c = connect_peer(7, "client3", TM_SUBPROTO_FULL);
  ok(c->s && !c->closed, "a client whose token expires in a second");
  for (int i = 0; i < 30 && !c->closed; i++)
    ph_mock_run_for(mk, 100);
  pump(); /* the link ends */
  is_int(c->status, 4403, "is closed with 4403 once it expired");
  is_int((int)metric_value(ENDED("client", "expired")), 1, "counted expired");
  fk.expires_at = 0;

  /* Item 2: the clients' connection limits (peers 0 and 3 hold c1 and
   * c2, both of the user the fake store names ""). */
  reload_limits(1, 3, "a reload to 1 connection per token, 3 per user");
  c = connect_peer(7, "client3", TM_SUBPROTO_FULL);
  ok(c->s && !c->closed, "the user's third connection is accepted");
  peer *c4 = connect_peer(8, "client3", TM_SUBPROTO_FULL);
  is_int(c4->status, 1008, "a token's second connection is refused (1008)");
  is_int((int)metric_value(REFUSED("token_limit")), 1, "counted token_limit");
  reload_limits(2, 3, "2 per token");
  c4 = connect_peer(8, "client3", TM_SUBPROTO_FULL);
  is_int(c4->status, 1008, "the user's fourth connection is refused");
  is_int((int)metric_value(REFUSED("user_limit")), 1, "counted user_limit");
  ok(c->s && !c->closed && peers[0].s && !peers[0].closed,
     "the user's other sessions are untouched");
  is_int(ph_mock_reload(mk,
                        INI "client.max_connections_per_token = 4\n"
                            "client.max_connections_per_user = 3\n",
                        err, sizeof(err)),
         PH_EINVAL, "per token above per user is refused by the check");
}

int main(void) {
  plan_lazy();
  char err[2048];
  mk = ph_mock_new(INI, err, sizeof(err));
  ok(mk != NULL, "mock host");
  int rc = ph_mock_add(mk, &fk_module, err, sizeof(err));
  if (rc == PH_OK)
    rc = ph_mock_add(mk, &proxyhost_module, err, sizeof(err));
  if (rc == PH_OK)
    rc = ph_mock_init(mk, err, sizeof(err));
  if (rc == PH_OK)
    rc = ph_mock_start(mk, err, sizeof(err));
  is_int(rc, PH_OK, "tunnel_server starts with tsfake as store and access");
  if (rc != PH_OK) {
    printf("# %s\n", err);
    return done_testing();
  }
  ok(ts_last_mod != NULL, "the module's state");
  test_auth();
  test_strict_and_selection();
  test_reader_enqueue();
  test_executor();
  test_legacy_agent();
  test_limits();
  test_metadata_mismatch();
  test_opens_ring();
  test_gone_ring();
  test_status();
  test_credentials();
  /* Stop: GOAWAY to every session; the idle ones close at once, the ones
   * with streams at drain_timeout (TM-UPG-13). */
  int alive[NPEERS];
  for (int i = 0; i < NPEERS; i++)
    alive[i] = peers[i].c && peers[i].s && !peers[i].closed;
  ph_mock_stop(mk);
  int goaway = 0, live = 0, gone = 0;
  for (int i = 0; i < NPEERS; i++) {
    if (!alive[i])
      continue;
    live++;
    goaway += count(&peers[i], TM_GOAWAY) > 0;
    gone += peers[i].gone;
  }
  ok(live >= 5, "sessions were alive at the stop");
  is_int(goaway, live, "TM-UPG-13 stop sends GOAWAY on every session");
  is_int(gone, live, "and every connection is closed by the end of the drain");
  ph_mock_free(mk);
  for (int i = 0; i < NPEERS; i++)
    for (int k = 0; k < peers[i].nout; k++)
      free(peers[i].out[k]);
  return done_testing();
}
