/* SPDX-License-Identifier: BSD-2-Clause */
/* The TunnelMesh session layer (modules/tunnel_common/session/tm_session.h): two
 * sessions back to back over t/unit/tunnel/tm_memlink (in memory, through the
 * mock host's real loop and timers), the opener as the client or server
 * is, the acceptor as the server or agent is. Raw frames injected where
 * a misbehaving peer is needed. Every loop is bounded (wait_until). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <proxyhost/connector.h>
#include <proxyhost/mock.h>
#include <proxyhost/module.h>

#define HOST_TEST_SETUP setup
#include "host_test.h"
#include "loop_test.h"
#include "frontend/relay.h"
#include "tap.h"
#include "tm_memlink.h"
#include "tunnel_common/session/tm_metrics.h"
#include "tunnel_common/proto/tm_proto.h"
#include "tunnel_common/session/tm_session.h"
#include "tm_session_test.h"

static ph_mock *mk;
static tm_metrics *m_client, *m_server;

static int setup(void) {
  m_client = tm_metrics_register(api, hctx, TM_COMPONENT_CLIENT);
  m_server = tm_metrics_register(api, hctx, TM_COMPONENT_SERVER);
  return m_client && m_server ? PH_OK : PH_EINVAL;
}

HOST_TEST_MODULE("tm_session_host");

static void run(int ms) { ph_mock_run_for(mk, ms); }

/* ---- a side: the role's callbacks ------------------------------------ */

enum policy { P_ACCEPT = 0, P_HOLD, P_REJECT };

typedef struct side {
  tm_session *s;
  int policy;
  int opens, abandons, closed, reason, goaways;
  int abandon_code; /* the last abandoned stream's reset code */
  uint32_t goaway_last;
  tm_open_stream last_req;
  tm_stream *accepted[16];
  int naccepted;
  tm_stream *held[16];
  int nheld;
} side;

static void on_open(void *arg, tm_stream *st, const tm_open_stream *req) {
  side *d = arg;
  d->opens++;
  d->last_req = *req;
  if (d->policy == P_ACCEPT) {
    tm_stream_accept(st);
    if (d->naccepted < 16)
      d->accepted[d->naccepted++] = st;
  } else if (d->policy == P_REJECT) {
    tm_stream_reject(st, PH_STAGE_POLICY, PH_OPEN_FORBIDDEN, 0, 0);
  } else if (d->nheld < 16) {
    d->held[d->nheld++] = st;
  }
}

static void on_abandon(void *arg, tm_stream *st) {
  side *d = arg;
  d->abandons++;
  d->abandon_code = tm_stream_reset_code(st);
  for (int i = 0; i < d->nheld; i++)
    if (d->held[i] == st)
      d->held[i] = NULL;
}

static void on_goaway(void *arg, uint32_t last) {
  side *d = arg;
  d->goaways++;
  d->goaway_last = last;
}

static void on_close(void *arg, int reason) {
  side *d = arg;
  d->closed = 1;
  d->reason = reason;
  d->s = NULL;
}

static const tm_session_ops ops = {.on_open = on_open,
                                   .on_abandon = on_abandon,
                                   .on_goaway = on_goaway,
                                   .on_close = on_close};

static tm_session_cfg cfg_default(int opener, unsigned caps) {
  return tm_test_cfg(opener, caps & (TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL),
                     opener ? m_client : m_server);
}

/* A connection: end 0 opens (side a), end 1 accepts (side b). */
typedef struct pair {
  tm_memlink *l;
  side a, b;
} pair;

static int pair_new(pair *p, const tm_session_cfg *ca,
                    const tm_session_cfg *cb) {
  memset(p, 0, sizeof(*p));
  p->l = tm_memlink_new(api, hctx, 16);
  if (!p->l)
    return -1;
  const tm_transport *t = tm_memlink_transport(p->l);
  p->a.s = tm_session_new(api, hctx, ca, t, tm_memlink_targ(p->l, 0), &ops,
                          &p->a);
  p->b.s = tm_session_new(api, hctx, cb, t, tm_memlink_targ(p->l, 1), &ops,
                          &p->b);
  tm_memlink_attach(p->l, 0, p->a.s);
  tm_memlink_attach(p->l, 1, p->b.s);
  return p->a.s && p->b.s ? 0 : -1;
}

static int pair_std(pair *p, unsigned caps) {
  tm_session_cfg ca = cfg_default(1, caps), cb = cfg_default(0, caps);
  return pair_new(p, &ca, &cb);
}

/* Closes whatever is still open and frees the link. */
static void pair_end(pair *p) {
  if (p->a.s)
    tm_session_close(p->a.s);
  if (p->b.s)
    tm_session_close(p->b.s);
  wait_until(loop, p->a.closed && p->b.closed, 2000);
  run(2);
  tm_memlink_free(p->l);
}

/* ---- an open, as the opener sees it ---------------------------------- */

typedef struct opening {
  int done, accepted, code, stage, strict;
  tm_stream *st;
} opening;

static void open_cb(void *arg, tm_stream *st, const tm_open_result *r,
                    int strict) {
  opening *o = arg;
  o->done++;
  o->accepted = r->accepted;
  o->code = r->code;
  o->stage = r->stage;
  o->strict = strict;
  o->st = r->accepted ? st : NULL;
}

static tm_stream *open_to(pair *p, opening *o, const char *host,
                          uint32_t timeout_ms) {
  tm_open_stream req;
  memset(&req, 0, sizeof(req));
  req.protocol = 1;
  req.port = 443;
  snprintf(req.host, sizeof(req.host), "%s", host);
  snprintf(req.agent, sizeof(req.agent), "agent-1");
  memset(o, 0, sizeof(*o));
  return tm_stream_open(p->a.s, &req, timeout_ms, open_cb, o);
}

/* ---- a stream user: reads everything (or nothing), remembers it ------ */

typedef struct user {
  ph_stream *ps;
  char got[65536 * 20];
  size_t n;
  uint64_t total;
  int eof, reset, calls;
  int read; /* consume what arrives */
} user;

static void user_cb(ph_stream *s, int revents, void *arg) {
  user *u = arg;
  u->calls++;
  if (!(revents & PH_READ))
    return;
  for (int i = 0; i < 64; i++) {
    const void *d;
    ssize_t n = ph_stream_peek(s, &d);
    if (n == PH_ERESET) {
      u->reset = 1;
      ph_stream_watch(s, 0, NULL, NULL);
      return;
    }
    if (n == 0) {
      u->eof = 1;
      ph_stream_watch(s, 0, NULL, NULL);
      return;
    }
    if (n < 0)
      return;
    size_t room = sizeof(u->got) - u->n;
    size_t c = (size_t)n < room ? (size_t)n : room;
    memcpy(u->got + u->n, d, c);
    u->n += c;
    u->total += (uint64_t)n;
    ph_stream_consume(s, (size_t)n);
  }
}

static void user_attach(user *u, tm_stream *st, int read) {
  memset(u, 0, sizeof(*u));
  u->ps = tm_stream_ph(st);
  u->read = read;
  ph_stream_watch(u->ps, read ? PH_READ : 0, user_cb, u);
}

static user *user_new(tm_stream *st, int read) {
  user *u = malloc(sizeof(*u));
  user_attach(u, st, read);
  return u;
}

/* Whether the stream reports a reset to a reader that asks now. */
static int peek_reset(ph_stream *ps) {
  const void *d;
  return ph_stream_peek(ps, &d) == PH_ERESET;
}

static ssize_t write_str(ph_stream *ps, const char *s) {
  return ph_stream_write(ps, s, strlen(s));
}

/* Writes up to len bytes of a pattern; returns what was taken. */
static size_t write_bulk(ph_stream *ps, size_t len) {
  static char chunk[16384];
  size_t done = 0;
  memset(chunk, 'x', sizeof(chunk));
  while (done < len) {
    size_t want = len - done < sizeof(chunk) ? len - done : sizeof(chunk);
    ssize_t n = ph_stream_write(ps, chunk, want);
    if (n <= 0)
      break;
    done += (size_t)n;
  }
  return done;
}

/* One accepted stream: opener's and acceptor's users (reading). */
static int open_accepted(pair *p, const char *host, user **ua, user **ub) {
  opening o;
  int before = p->b.naccepted;
  if (!open_to(p, &o, host, 5000))
    return -1;
  wait_until(loop, o.done && p->b.naccepted > before, 2000);
  if (!o.accepted || p->b.naccepted <= before)
    return -1;
  *ua = user_new(o.st, 1);
  *ub = user_new(p->b.accepted[p->b.naccepted - 1], 1);
  return 0;
}

static void close_user(user **u) {
  if (*u) {
    ph_stream_close((*u)->ps);
    free(*u);
    *u = NULL;
  }
}

/* Builds a raw frame. */
static size_t frame(uint8_t *out, uint8_t type, uint8_t flags, uint32_t id,
                    const void *payload, uint32_t len) {
  tm_frame_header(out, type, flags, id, len);
  if (len)
    memcpy(out + TM_HEADER_LEN, payload, len);
  return TM_HEADER_LEN + len;
}

static void inject_u32(pair *p, int e, uint8_t type, uint32_t id,
                       uint32_t v) {
  uint8_t f[TM_HEADER_LEN + 4], b[4];
  tm_u32_encode(b, v);
  tm_memlink_inject(p->l, e, f, frame(f, type, 0, id, b, 4));
}

static double metric(const char *series) {
  double v;
  return ph_mock_metric(mk, series, NULL, &v) == PH_OK ? v : -1;
}

/* ---- tests ------------------------------------------------------------- */

static void test_strict_basics(void) {
  pair p;
  ok(pair_std(&p, TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL) == 0,
     "two sessions back to back");
  opening o;
  tm_stream *st = open_to(&p, &o, "example.test", 5000);
  ok(st != NULL, "TM-PROTO-40: the opener opens a stream");
  is_int(tm_session_streams(p.a.s), 1, "it counts as a stream while opening");
  wait_until(loop, o.done, 2000);
  is_int(o.done, 1, "TM-PROTO-22: the OPEN_RESULT decides the open once");
  ok(o.accepted && o.strict, "strict: accepted by OPEN_RESULT(ok)");
  is_str(p.b.last_req.host, "example.test", "the acceptor sees the target");
  is_int(p.b.last_req.port, 443, "and the port");
  is_int(p.b.last_req.window, 262144,
         "TM-P2-8: the opener's window travels in OPEN_STREAM");
  ok(tm_stream_strict(st), "the stream is strict");
  user *ua = user_new(o.st, 1), *ub = user_new(p.b.accepted[0], 1);
  write_str(ua->ps, "hello");
  write_str(ub->ps, "world");
  wait_until(loop, ua->n == 5 && ub->n == 5, 2000);
  ok(ub->n == 5 && memcmp(ub->got, "hello", 5) == 0,
     "TM-PROTO-6: bytes reach the acceptor");
  ok(ua->n == 5 && memcmp(ua->got, "world", 5) == 0, "and the opener");
  ok(ph_stream_shutdown(ua->ps) == PH_OK, "the opener shuts down");
  is_int(ph_stream_write(ua->ps, "x", 1), PH_ESTATE,
         "a write after shutdown is PH_ESTATE");
  wait_until(loop, ub->eof, 2000);
  ok(ub->eof, "the acceptor reads EOF (FIN)");
  write_str(ub->ps, "after");
  wait_until(loop, ua->n == 10, 2000);
  ok(ua->n == 10 && memcmp(ua->got + 5, "after", 5) == 0,
     "half-close: the other direction goes on");
  ph_stream_shutdown(ub->ps);
  wait_until(loop, ua->eof, 2000);
  ok(ua->eof, "the opener reads EOF");
  close_user(&ua);
  close_user(&ub);
  run(5);
  is_int(tm_session_streams(p.a.s), 0, "no stream left on the opener");
  is_int(tm_session_streams(p.b.s), 0, "nor on the acceptor");
  is_int(tm_memlink_sent(p.l, 0, TM_RESET) + tm_memlink_sent(p.l, 1, TM_RESET),
         0, "a finished stream closes without RESET");
  is_int(tm_memlink_sent(p.l, 1, TM_OPEN_RESULT), 1, "one OPEN_RESULT");
  pair_end(&p);
  ok(p.a.reason == TM_CLOSE_LOCAL, "the opener closes on request");
}

/* One strict open from a (its caps plus ea) to b (plus eb) carrying a
 * trace id and principal (may be ""); what b's on_open saw is *seen.
 * Whether it was accepted. */
static const char *const trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
static int open_seen(unsigned ea, unsigned eb, const char *principal,
                     tm_open_stream *seen) {
  unsigned caps = TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL;
  tm_session_cfg ca = cfg_default(1, caps), cb = cfg_default(0, caps);
  ca.caps |= ea;
  cb.caps |= eb;
  pair p;
  pair_new(&p, &ca, &cb);
  tm_open_stream req;
  memset(&req, 0, sizeof(req));
  req.protocol = 1;
  req.port = 443;
  snprintf(req.host, sizeof(req.host), "trace.test");
  snprintf(req.trace, sizeof(req.trace), "%s", trace_id);
  snprintf(req.principal, sizeof(req.principal), "%s", principal);
  opening o;
  memset(&o, 0, sizeof(o));
  tm_stream_open(p.a.s, &req, 5000, open_cb, &o);
  wait_until(loop, o.done, 2000);
  int accepted = o.accepted && p.b.opens == 1;
  *seen = p.b.last_req;
  if (accepted && o.st && p.b.accepted[0]) {
    /* Both ends closed, so that the sessions end and are freed. */
    user *ua = user_new(o.st, 1), *ub = user_new(p.b.accepted[0], 1);
    close_user(&ua);
    close_user(&ub);
    run(5);
  }
  pair_end(&p);
  return accepted;
}

/* The trace field of OPEN_STREAM goes out only on a session that
 * negotiated TM_CAP_TRACE (a peer strict about trailing bytes would
 * refuse it otherwise); the acceptor reads it either way. */
static void trace_case(unsigned extra, const char *want, const char *what) {
  tm_open_stream r;
  ok(open_seen(extra, extra, "", &r) && strcmp(r.trace, want) == 0 &&
         !r.trace_bad,
     what);
}

/* The principal field (issue 27): sent only where the opener negotiated
 * TM_CAP_PRINCIPAL, read only where the acceptor did (a client's claim
 * on a session that did not negotiate it is dropped). */
static void principal_case(unsigned ea, unsigned eb, const char *want,
                           const char *what) {
  tm_open_stream r;
  ok(open_seen(TM_CAP_TRACE | ea, TM_CAP_TRACE | eb, "tok_0123456789abcdef",
               &r) &&
         strcmp(r.principal, want) == 0 && strcmp(r.trace, trace_id) == 0,
     what);
}

static void test_principal_gated(void) {
  principal_case(TM_CAP_PRINCIPAL, TM_CAP_PRINCIPAL, "tok_0123456789abcdef",
                 "issue 27: with stream_principal.v1 on both ends the "
                 "OPEN_STREAM carries the client's token id");
  principal_case(0, TM_CAP_PRINCIPAL, "",
                 "without it the opener sends no principal field");
  principal_case(TM_CAP_PRINCIPAL, 0, "",
                 "an acceptor that did not negotiate it drops one it "
                 "receives (never read from a client)");
}

static void test_trace_gated(void) {
  trace_case(0, "",
             "issue 27: without stream_trace.v1 the OPEN_STREAM carries no "
             "trace field (the acceptor reads none)");
  trace_case(TM_CAP_TRACE, "4bf92f3577b34da6a3ce929d0e0e4736",
             "with stream_trace.v1 negotiated it carries the trace id");
}

static void test_reject(void) {
  pair p;
  pair_std(&p, TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL);
  p.b.policy = P_REJECT;
  opening o;
  open_to(&p, &o, "denied.test", 5000);
  wait_until(loop, o.done, 2000);
  ok(o.done == 1 && !o.accepted, "TM-PROTO-23: a refusal is an OPEN_RESULT");
  is_int(o.code, PH_OPEN_FORBIDDEN, "with the acceptor's code");
  is_int(o.stage, PH_STAGE_POLICY, "and stage");
  is_int(tm_session_streams(p.a.s), 0, "the refused stream is gone");
  is_int(tm_memlink_sent(p.l, 1, TM_RESET), 0, "strict: no RESET for it");
  pair_end(&p);
}

static void test_legacy(void) {
  pair p;
  pair_std(&p, 0);
  opening o;
  tm_stream *st = open_to(&p, &o, "legacy.test", 5000);
  ok(st && o.done == 0, "TM-PROTO-39: legacy: the answer is not inline");
  wait_until(loop, o.done, 2000);
  ok(o.done == 1 && o.accepted && !o.strict,
     "legacy: accepted at once, from the loop (strict=0)");
  wait_until(loop, p.b.naccepted == 1, 2000);
  user *ua = user_new(o.st, 1), *ub = user_new(p.b.accepted[0], 1);
  write_str(ua->ps, "ping");
  wait_until(loop, ub->n == 4, 2000);
  ok(ub->n == 4, "legacy: bytes flow without windows");
  is_int(tm_memlink_sent(p.l, 1, TM_OPEN_RESULT), 0, "legacy: no OPEN_RESULT");
  is_int(tm_memlink_sent(p.l, 1, TM_WINDOW_UPDATE), 0,
         "TM-P2-15: legacy: no WINDOW_UPDATE");
  close_user(&ua);
  close_user(&ub);
  p.b.policy = P_REJECT;
  tm_stream *st2 = open_to(&p, &o, "legacy-denied.test", 5000);
  wait_until(loop, o.done, 2000);
  user *u2 = user_new(o.st, 1);
  wait_until(loop, u2->reset, 2000);
  ok(st2 && o.accepted && u2->reset,
     "legacy reject: a RESET, read as PH_ERESET");
  ok(tm_memlink_sent(p.l, 1, TM_RESET) >= 1, "the acceptor sent RESET");
  close_user(&u2);
  pair_end(&p);
}

/* TM-PROTO-18: tm_session_narrow_caps only removes bits and only before
 * the first stream; both ends narrowed to legacy open legacy-style. */
static void test_narrow_caps(void) {
  const unsigned strict = TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL;
  pair p;
  pair_std(&p, TM_CAP_OPEN_RESULT);
  is_int(tm_session_narrow_caps(p.b.s, strict), PH_OK,
         "TM-PROTO-18: narrowing before any stream is allowed");
  is_int(tm_session_caps(p.b.s), TM_CAP_OPEN_RESULT,
         "TM-PROTO-18: narrowing never adds a capability");
  is_int(tm_session_narrow_caps(p.a.s, 0), PH_OK, "the opener narrowed");
  is_int(tm_session_narrow_caps(p.b.s, 0), PH_OK, "the acceptor narrowed");
  is_int(tm_session_caps(p.b.s), 0, "TM-PROTO-18: open_result removed");
  opening o;
  open_to(&p, &o, "narrowed.test", 5000);
  wait_until(loop, o.done && p.b.naccepted == 1, 2000);
  ok(o.done == 1 && o.accepted && !o.strict,
     "TM-PROTO-18: the narrowed session opens legacy-style");
  is_int(tm_memlink_sent(p.l, 1, TM_OPEN_RESULT), 0,
         "TM-PROTO-18: ... without OPEN_RESULT");
  user *ua = user_new(o.st, 1), *ub = user_new(p.b.accepted[0], 1);
  close_user(&ua);
  close_user(&ub);
  pair_end(&p);

  pair_std(&p, strict);
  user *sa = NULL, *sb = NULL;
  ok(open_accepted(&p, "first.test", &sa, &sb) == 0, "a strict stream");
  is_int(tm_session_narrow_caps(p.b.s, 0), PH_EINVAL,
         "TM-PROTO-18: after a stream, narrowing is refused");
  is_int(tm_session_caps(p.b.s), strict, "... and nothing changed");
  close_user(&sa);
  close_user(&sb);
  pair_end(&p);
}

static void test_open_timeout(void) {
  pair p;
  pair_std(&p, TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL);
  user *ua, *ub;
  ok(open_accepted(&p, "one.test", &ua, &ub) == 0, "a first stream opens");
  p.b.policy = P_HOLD;
  opening o;
  open_to(&p, &o, "slow.test", 30);
  wait_until(loop, o.done, 2000);
  ok(o.done == 1 && !o.accepted && o.code == PH_OPEN_TIMEOUT,
     "TM-PROTO-38: an unanswered open times out");
  wait_until(loop, p.b.abandons == 1, 2000);
  is_int(p.b.abandons, 1, "the acceptor drops its pending work (RESET)");
  write_str(ua->ps, "still");
  wait_until(loop, ub->n == 5, 2000);
  ok(ub->n == 5, "TM-PROTO-38: the other stream keeps flowing");
  ok(p.a.s && p.b.s, "the session stays up");
  close_user(&ua);
  close_user(&ub);
  pair_end(&p);
}

/* Issue 22 item 8: reset codes on every hop, and a reset told to an
 * owner that wants no event (a relay that stopped reading). */
static void test_reset_codes(void) {
  pair p;
  pair_std(&p, TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL);
  user *ua, *ub;
  ok(open_accepted(&p, "one.test", &ua, &ub) == 0, "a stream opens");
  tm_stream *bst = p.b.accepted[p.b.naccepted - 1];
  ph_stream_watch(ub->ps, 0, user_cb, ub); /* paused, callback kept */
  tm_stream_set_close_code((tm_stream *)ua->ps, PH_OPEN_HOST_UNREACHABLE);
  close_user(&ua); /* before the FIN: a reset, with that code */
  wait_until(loop, ub->reset, 2000);
  ok(ub->reset, "a reset reaches an owner that wants no event");
  is_int(tm_stream_reset_code(bst), PH_OPEN_HOST_UNREACHABLE,
         "... with the code the closer set");
  close_user(&ub);

  /* A relay at b joins b1 and b2: a1's reset goes out on b2 with a1's
   * code when the relay closes b2. */
  user *a1, *b1, *a2, *b2;
  ok(open_accepted(&p, "one.test", &a1, &b1) == 0 &&
         open_accepted(&p, "two.test", &a2, &b2) == 0,
     "two more streams");
  tm_stream *sb1 = p.b.accepted[p.b.naccepted - 2];
  tm_stream *sb2 = p.b.accepted[p.b.naccepted - 1];
  tm_stream *sa2 = (tm_stream *)a2->ps;
  tm_stream_link(sb1, sb2);
  tm_stream_set_close_code((tm_stream *)a1->ps, PH_OPEN_CONNECTION_REFUSED);
  close_user(&a1);
  wait_until(loop, b1->reset, 2000);
  close_user(&b2); /* the relay's close, after b1 failed */
  wait_until(loop, a2->reset, 2000);
  ok(a2->reset, "the linked stream is reset");
  is_int(tm_stream_reset_code(sa2), PH_OPEN_CONNECTION_REFUSED,
         "... with the code of the stream it is linked to");
  close_user(&b1);
  close_user(&a2);

  /* An open abandoned with a code: the acceptor reads it. */
  p.b.policy = P_HOLD;
  opening o;
  tm_stream *st = open_to(&p, &o, "slow.test", 0);
  wait_until(loop, p.b.nheld == 1, 2000);
  tm_stream_abort(st, PH_OPEN_TIMEOUT);
  wait_until(loop, p.b.abandons == 1, 2000);
  is_int(p.b.abandon_code, PH_OPEN_TIMEOUT,
         "tm_stream_abort: the acceptor reads the RESET's code (timeout)");
  is_int(o.done, 0, "... and the opener's callback never runs");
  pair_end(&p);
}

static void test_data_while_opening(void) {
  pair p;
  pair_std(&p, TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL);
  user *ua, *ub;
  open_accepted(&p, "one.test", &ua, &ub);
  p.b.policy = P_HOLD;
  opening o;
  tm_stream *st = open_to(&p, &o, "two.test", 5000);
  wait_until(loop, p.b.nheld == 1, 2000);
  uint8_t f[64];
  uint64_t resets = tm_memlink_sent(p.l, 1, TM_RESET);
  tm_memlink_inject(p.l, 1, f,
                    frame(f, TM_DATA, 0, tm_stream_id(st), "early", 5));
  is_int(p.b.abandons, 1, "TM-P0-17: DATA while opening resets the stream");
  is_int(tm_memlink_sent(p.l, 1, TM_RESET), resets, "not yet sent");
  wait_until(loop, o.done, 2000);
  ok(o.done && !o.accepted, "the opener learns of the reset");
  is_int(tm_memlink_sent(p.l, 1, TM_RESET), resets + 1,
         "the acceptor sent one RESET");
  write_str(ua->ps, "fine");
  wait_until(loop, ub->n == 4, 2000);
  ok(ub->n == 4 && p.b.s, "TM-P0-17: only that stream: the other flows");
  close_user(&ua);
  close_user(&ub);
  pair_end(&p);
}

static void test_duplicate_result(void) {
  pair p;
  pair_std(&p, TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL);
  user *u1a, *u1b, *u2a, *u2b;
  open_accepted(&p, "one.test", &u1a, &u1b);
  open_accepted(&p, "two.test", &u2a, &u2b);
  tm_open_result r = {.accepted = 1, .stage = PH_STAGE_CONNECT,
                      .code = PH_OPEN_OK, .window = 65536};
  uint8_t pl[TM_OPEN_RESULT_MAX], f[TM_HEADER_LEN + TM_OPEN_RESULT_MAX];
  int n = tm_open_result_encode(&r, pl, sizeof(pl));
  uint32_t id1 = 1;
  uint64_t resets = tm_memlink_sent(p.l, 0, TM_RESET);
  tm_memlink_inject(p.l, 0, f, frame(f, TM_OPEN_RESULT, 0, id1, pl,
                                     (uint32_t)n));
  wait_until(loop, u1a->reset && u1b->reset, 2000);
  ok(u1a->reset, "TM-PROTO-41: a duplicate OPEN_RESULT resets the stream");
  ok(u1b->reset, "towards the peer too");
  is_int(tm_memlink_sent(p.l, 0, TM_RESET), resets + 1, "one RESET");
  write_str(u2a->ps, "two");
  wait_until(loop, u2b->n == 3, 2000);
  ok(u2b->n == 3, "TM-PROTO-41: only the stream concerned");
  /* late: after the timeout */
  p.b.policy = P_HOLD;
  opening o;
  tm_stream *st = open_to(&p, &o, "late.test", 20);
  uint32_t id3 = tm_stream_id(st);
  wait_until(loop, o.done, 2000);
  wait_until(loop, p.b.abandons == 1, 2000);
  resets = tm_memlink_sent(p.l, 0, TM_RESET);
  tm_memlink_inject(p.l, 0, f, frame(f, TM_OPEN_RESULT, 0, id3, pl,
                                     (uint32_t)n));
  run(5);
  is_int(tm_memlink_sent(p.l, 0, TM_RESET), resets,
         "TM-PROTO-38: a late OPEN_RESULT after a timeout is dropped");
  tm_memlink_inject(p.l, 0, f, frame(f, TM_OPEN_RESULT, 0, 999, pl,
                                     (uint32_t)n));
  wait_until(loop, tm_memlink_sent(p.l, 0, TM_RESET) > resets, 2000);
  is_int(tm_memlink_sent(p.l, 0, TM_RESET), resets + 1,
         "TM-PROTO-41: an OPEN_RESULT for an id never opened: RESET by id");
  ok(p.a.s != NULL, "the session stays up");
  close_user(&u1a);
  close_user(&u1b);
  close_user(&u2a);
  close_user(&u2b);
  pair_end(&p);
}

/* Issue 24 item 5: a peer that answers with the seed's five fields only
 * (no "window") on a flow-controlled stream: the stream opens and the
 * opener may send the protocol's initial window (262144), not its own
 * configured one. */
static void test_result_without_window(void) {
  pair p;
  tm_session_cfg ca = cfg_default(1, TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL);
  tm_session_cfg cb = cfg_default(0, TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL);
  ca.initial_window = 65536; /* ours: not what the peer may take */
  ca.window_update_threshold = 32768;
  ca.outbound_buffer_bytes = 1048576;
  pair_new(&p, &ca, &cb);
  p.b.policy = P_HOLD;
  opening o;
  tm_stream *st = open_to(&p, &o, "five.test", 5000);
  wait_until(loop, p.b.nheld == 1, 2000);
  static const char five[] = "{\"accepted\":true,\"stage\":\"connect\","
                             "\"code\":\"ok\",\"retryable\":false,"
                             "\"retry_after_ms\":0}";
  uint8_t f[TM_HEADER_LEN + sizeof(five)];
  tm_memlink_inject(p.l, 0, f,
                    frame(f, TM_OPEN_RESULT, 0, tm_stream_id(st), five,
                          (uint32_t)strlen(five)));
  wait_until(loop, o.done, 2000);
  ok(o.done && o.accepted && o.st,
     "issue 24 item 5: an accepted OPEN_RESULT without window opens the "
     "stream");
  if (o.st) {
    user *u = user_new(o.st, 1);
    is_int((int)write_bulk(u->ps, 600000), (int)TM_WINDOW_DEFAULT,
           "... with the protocol's initial window as the send window");
    close_user(&u);
  }
  pair_end(&p);
}

static void test_window_violations(void) {
  pair p;
  tm_session_cfg ca = cfg_default(1, TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL);
  tm_session_cfg cb = cfg_default(0, TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL);
  ca.initial_window = cb.initial_window = 16384;
  ca.window_update_threshold = cb.window_update_threshold = 8192;
  pair_new(&p, &ca, &cb);
  user *ua[4], *ub[4];
  for (int i = 0; i < 4; i++)
    open_accepted(&p, "w.test", &ua[i], &ub[i]);
  double before = metric(
      "tunnelmesh_stream_backpressure_total{component=\"server\",open_mode="
      "\"strict\",result=\"rejected\"}");
  static uint8_t big[TM_HEADER_LEN + 16385], pl[16385];
  memset(pl, 'o', sizeof(pl));
  tm_memlink_inject(p.l, 1, big, frame(big, TM_DATA, 0, 1, pl, 16385));
  wait_until(loop, ua[0]->reset, 2000);
  ok(ua[0]->reset && ub[0]->reset,
     "TM-P2-13: a window overrun resets the stream");
  inject_u32(&p, 1, TM_WINDOW_UPDATE, 2, 0);
  wait_until(loop, ua[1]->reset, 2000);
  ok(ua[1]->reset && ub[1]->reset,
     "TM-P2-13: a zero WINDOW_UPDATE resets the stream");
  inject_u32(&p, 1, TM_WINDOW_UPDATE, 3, TM_WINDOW_MAX);
  wait_until(loop, ua[2]->reset, 2000);
  ok(ua[2]->reset && ub[2]->reset,
     "TM-P2-13: a window overflow resets the stream");
  write_str(ua[3]->ps, "alive");
  write_str(ub[3]->ps, "alive");
  wait_until(loop, ub[3]->n == 5 && ua[3]->n == 5, 2000);
  ok(ub[3]->n == 5 && ua[3]->n == 5 && p.a.s && p.b.s,
     "TM-P2-5, TM-P0-9, TM-P0-11: the other stream keeps flowing, the "
     "session stays (a stream-scoped error is not a session error)");
  double after = metric(
      "tunnelmesh_stream_backpressure_total{component=\"server\",open_mode="
      "\"strict\",result=\"rejected\"}");
  ok(after - before >= 3,
     "TM-OBS-5: each counts backpressure{open_mode=strict,result=rejected}");
  /* an honest sender never overruns: the window stops it */
  size_t took = write_bulk(ua[3]->ps, 100000);
  is_int(took, 16384 - 5, "TM-P2-10: a writer takes only its send window");
  for (int i = 0; i < 4; i++) {
    close_user(&ua[i]);
    close_user(&ub[i]);
  }
  pair_end(&p);
}

static char logpath[256];

static void test_violation_limit(void) {
  pair p;
  tm_session_cfg ca = cfg_default(1, TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL);
  tm_session_cfg cb = cfg_default(0, TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL);
  cb.violation_limit = 3;
  pair_new(&p, &ca, &cb);
  uint8_t f[32];
  for (int i = 0; i < 3; i++)
    tm_memlink_inject(p.l, 1, f, frame(f, TM_DATA, 0, 500 + i, "x", 1));
  wait_until(loop, tm_memlink_sent(p.l, 1, TM_RESET) == 3, 2000);
  ok(p.b.s != NULL, "TM-FAIL-7: up to the limit, streams only are reset");
  is_int(tm_memlink_sent(p.l, 1, TM_RESET), 3, "one RESET each");
  tm_memlink_inject(p.l, 1, f, frame(f, TM_DATA, 0, 600, "x", 1));
  wait_until(loop, p.b.closed, 2000);
  ok(p.b.closed && p.b.reason == TM_CLOSE_ABUSE,
     "TM-FAIL-7: past the threshold the session closes as abusive");
  wait_until(loop, p.a.closed, 2000);
  ok(p.a.closed, "the peer sees the connection go");
  is_int(metric("proxyhost_stream_tunnel_sessions_closed_total{component="
                "\"server\",reason=\"abuse\"}"),
         1, "counted by reason");
  pair_end(&p);
  char log[65536] = "";
  FILE *lf = fopen(logpath, "r");
  if (lf) {
    size_t n = fread(log, 1, sizeof(log) - 1, lf);
    log[n] = '\0';
    fclose(lf);
  }
  like(log, "too many stream violations", "TM-FAIL-7: audited in the log");
  like(log, "violations=4", "with the count");
  unlike(log, "example.test", "and never a target");
}

/* One-byte DATA frames by the thousand: each is copied once, at enqueue,
 * into the stream's chunks (TM-P2-7), so the inbound queue's entries stay
 * few however small the frames, and both of its bounds hold (TM-P2-21:
 * bytes, and entries derived from them, tm_session.c in_entries_max). */
static void test_small_frames(void) {
  pair p;
  tm_session_cfg ca = cfg_default(1, 0), cb = cfg_default(0, 0);
  cb.inbound_buffer_bytes = 8192;
  pair_new(&p, &ca, &cb);
  user *ua, *ub;
  open_accepted(&p, "small.test", &ua, &ub);
  ph_stream_watch(ub->ps, 0, NULL, NULL); /* its reader stops */
  uint32_t id = tm_stream_id(p.b.accepted[p.b.naccepted - 1]);
  uint8_t f[TM_HEADER_LEN + 1];
  for (int i = 0; i < 8192; i++)
    tm_memlink_inject(p.l, 1, f, frame(f, TM_DATA, 0, id, "y", 1));
  const void *d;
  is_int(ph_stream_peek(ub->ps, &d), 4096,
         "TM-P2-7, TM-P2-21: 8192 one-byte DATA frames are queued in 4 KiB "
         "entries (one copy each, not one entry per frame)");
  tm_memlink_inject(p.l, 1, f, frame(f, TM_DATA, 0, id, "y", 1));
  ok(peek_reset(ub->ps),
     "TM-P2-21: one byte past inbound_buffer_bytes resets the stream");
  close_user(&ua);
  close_user(&ub);
  pair_end(&p);
}

static void test_legacy_backpressure(void) {
  pair p;
  tm_session_cfg ca = cfg_default(1, 0), cb = cfg_default(0, 0);
  cb.inbound_buffer_bytes = 8192;
  pair_new(&p, &ca, &cb);
  user *u1a, *u1b, *u2a, *u2b;
  open_accepted(&p, "one.test", &u1a, &u1b);
  open_accepted(&p, "two.test", &u2a, &u2b);
  ph_stream_watch(u1b->ps, 0, NULL, NULL); /* its reader stops */
  double before = metric("tunnelmesh_stream_backpressure_total{component="
                         "\"server\",open_mode=\"legacy\",result="
                         "\"rejected\"}");
  is_int(write_bulk(u1a->ps, 8192), 8192, "the sender fills the queue");
  wait_until(loop,
             tm_memlink_data_bytes(p.l, 0) >= 8192 &&
                 tm_memlink_pending(p.l, 1) == 0,
             2000);
  ok(!u1a->reset, "TM-P2-3: up to inbound_buffer_bytes is queued");
  const void *d;
  ssize_t held = ph_stream_peek(u1b->ps, &d);
  ok(held > 0 && held <= 8192, "the queue holds at most its bound");
  write_bulk(u1a->ps, 1);
  wait_until(loop, u1a->reset, 2000);
  ok(u1a->reset && peek_reset(u1b->ps),
     "TM-P2-6: legacy: a full inbound queue resets the stream");
  is_int(metric("tunnelmesh_stream_backpressure_total{component=\"server\","
                "open_mode=\"legacy\",result=\"rejected\"}") -
             before,
         1,
         "TM-P2-6, TM-OBS-5: and records the legacy backpressure "
         "(open_mode=legacy, result=rejected)");
  write_str(u2a->ps, "other");
  wait_until(loop, u2b->n == 5, 2000);
  ok(u2b->n == 5 && p.b.s, "without blocking the other streams");
  close_user(&u1a);
  close_user(&u1b);
  close_user(&u2a);
  close_user(&u2b);
  pair_end(&p);
}

static void test_window_reopens(void) {
  pair p;
  tm_session_cfg ca = cfg_default(1, TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL);
  tm_session_cfg cb = cfg_default(0, TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL);
  ca.initial_window = cb.initial_window = 65536;
  ca.window_update_threshold = cb.window_update_threshold = 32768;
  pair_new(&p, &ca, &cb);
  user *ua, *ub;
  open_accepted(&p, "w.test", &ua, &ub);
  ph_stream_watch(ub->ps, 0, NULL, NULL); /* read by hand below */
  double stalls = metric(
      "tunnelmesh_stream_window_stall_seconds_count{component=\"client\"}");
  is_int(write_bulk(ua->ps, 100000), 65536, "the window is taken whole");
  is_int(ph_stream_write(ua->ps, "x", 1), PH_EAGAIN, "then the writer stalls");
  wait_until(loop,
             tm_memlink_data_bytes(p.l, 0) >= 65536 &&
                 tm_memlink_pending(p.l, 1) == 0,
             2000);
  is_int(tm_memlink_sent(p.l, 1, TM_WINDOW_UPDATE), 0,
         "TM-P2-11: received, not delivered: no WINDOW_UPDATE");
  const void *d;
  ssize_t n = ph_stream_peek(ub->ps, &d);
  ok(n >= 16384, "the bytes wait in the inbound queue");
  ph_stream_consume(ub->ps, 16384);
  run(10);
  is_int(tm_memlink_sent(p.l, 1, TM_WINDOW_UPDATE), 0,
         "TM-P2-12: below the threshold: none yet");
  is_int(ph_stream_write(ua->ps, "x", 1), PH_EAGAIN, "the writer still waits");
  n = ph_stream_peek(ub->ps, &d);
  ph_stream_consume(ub->ps, 16384);
  wait_until(loop, tm_memlink_sent(p.l, 1, TM_WINDOW_UPDATE) >= 1, 2000);
  run(5);
  is_int(tm_memlink_sent(p.l, 1, TM_WINDOW_UPDATE), 1,
         "TM-P2-12: one WINDOW_UPDATE at the threshold");
  is_int(write_bulk(ua->ps, 100000), 32768,
         "TM-P2-11: the window reopened by what was delivered");
  ok(metric("tunnelmesh_stream_window_stall_seconds_count{component="
            "\"client\"}") -
             stalls >=
         1,
     "TM-OBS-4: the stall was measured");
  close_user(&ua);
  close_user(&ub);
  pair_end(&p);
}

static void control_first(int fair) {
  pair p;
  tm_session_cfg ca = cfg_default(1, TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL);
  tm_session_cfg cb = cfg_default(0, TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL);
  ca.initial_window = cb.initial_window = 1048576;
  ca.window_update_threshold = cb.window_update_threshold = 524288;
  ca.outbound_buffer_bytes = cb.outbound_buffer_bytes = 1048576;
  ca.inbound_buffer_bytes = cb.inbound_buffer_bytes = 1048576;
  ca.max_frame_payload = 16384;
  if (!fair)
    ca.local_caps = 0;
  pair_new(&p, &ca, &cb);
  user *u1a, *u1b, *u2a, *u2b, *u3a, *u3b;
  open_accepted(&p, "bulk.test", &u1a, &u1b);
  open_accepted(&p, "small.test", &u2a, &u2b);
  open_accepted(&p, "gone.test", &u3a, &u3b);
  tm_memlink_block_writes(p.l, 0, 1);
  size_t bulk = write_bulk(u1a->ps, 524288);
  write_str(u2a->ps, "small response");
  close_user(&u3a); /* a RESET, queued behind the backlog in time */
  uint64_t start = tm_memlink_sent(p.l, 0, 0);
  tm_memlink_block_writes(p.l, 0, 0);
  wait_until(loop, u2b->n == 14 && u1b->total == bulk, 5000);
  ok(u1b->total == bulk && u2b->n == 14, "everything arrives");
  uint32_t id, len;
  if (fair) {
    int first = tm_memlink_log(p.l, 0, start, &id, &len);
    is_int(first, TM_RESET,
           "TM-P2-17, TM-TEST-17: the RESET overtakes the DATA backlog");
  }
  uint64_t bulk_before = 0;
  int seen_small = 0;
  for (uint64_t i = start; i < tm_memlink_sent(p.l, 0, 0) && !seen_small;
       i++) {
    int type = tm_memlink_log(p.l, 0, i, &id, &len);
    if (type == TM_DATA && id == tm_stream_id(p.b.accepted[1]))
      seen_small = 1;
    else if (type == TM_DATA)
      bulk_before += len;
  }
  if (fair)
    ok(seen_small && bulk_before <= 32768,
       "TM-P2-18..20, TM-P2-20: the small stream goes out within one "
       "quantum beside the bulk stream");
  else
    ok(bulk_before == bulk,
       "TM-PROTO-12 without fair_writer on one end (same frames, the "
       "peer unchanged) the small stream waits for the whole backlog");
  if (fair)
    printf("# bulk bytes before the small stream: %llu\n",
           (unsigned long long)bulk_before);
  close_user(&u1a);
  close_user(&u1b);
  close_user(&u2a);
  close_user(&u2b);
  close_user(&u3b);
  pair_end(&p);
}

static void test_never_reads(void) {
  pair p;
  tm_session_cfg ca = cfg_default(1, TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL);
  tm_session_cfg cb = cfg_default(0, TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL);
  cb.control_queue_frames = 8;
  cb.outbound_buffer_bytes = 65536;
  pair_new(&p, &ca, &cb);
  user *ua, *ub;
  open_accepted(&p, "one.test", &ua, &ub);
  tm_memlink_block_writes(p.l, 1, 1); /* its peer never reads */
  size_t took = write_bulk(ub->ps, 1 << 20);
  ok(took <= 65536, "TM-FAIL-8: a stream's outbound queue stays bounded");
  is_int(ph_stream_write(ub->ps, "x", 1), PH_EAGAIN,
         "TM-P2-4 then writes wait: PH_EAGAIN at once, never blocking");
  uint8_t f[32], ping[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  for (int i = 0; i < 8; i++)
    tm_memlink_inject(p.l, 1, f, frame(f, TM_PING, 0, 0, ping, 8));
  run(5);
  ok(p.b.s != NULL, "TM-P2-14 control frames pass while the stream's "
                    "window and queue are full, up to the control queue's "
                    "own bound");
  tm_memlink_inject(p.l, 1, f, frame(f, TM_PING, 0, 0, ping, 8));
  wait_until(loop, p.b.closed, 2000);
  ok(p.b.closed && p.b.reason == TM_CLOSE_CONTROL_FULL,
     "TM-P2-22, TM-FAIL-8, TM-P0-9, TM-P0-11: a full control queue (a "
     "connection-level limit, session-scoped) closes the session");
  wait_until(loop, ub->reset, 2000);
  ok(ub->reset, "its streams read PH_ERESET");
  close_user(&ua);
  close_user(&ub);
  pair_end(&p);
}

/* Issue 22 item 7: a burst of opens beyond what the control queue holds
 * pauses the reader instead of closing the session as control_full, and
 * every open gets its own answer once the peer reads again. b refuses
 * each open at once (one OPEN_RESULT each) and cannot write; a's end
 * holds what b sends (the ids are not a's streams). */
static void test_open_burst(void) {
  const unsigned caps = TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL;
  tm_session_cfg ca = cfg_default(1, caps), cb = cfg_default(0, caps);
  cb.control_queue_frames = 16;
  pair p;
  pair_new(&p, &ca, &cb);
  p.b.policy = P_REJECT;
  tm_memlink_hold(p.l, 0, 1);
  tm_memlink_block_writes(p.l, 1, 1);
  uint8_t f[128], pl[64];
  tm_open_stream req = {.protocol = 1, .port = 80, .window = 65536};
  strcpy(req.host, "burst.test");
  int n = tm_open_stream_encode(&req, pl, sizeof(pl));
  enum { BURST = 100 };
  for (uint32_t i = 0; i < BURST; i++)
    tm_memlink_queue(p.l, 1, f, frame(f, TM_OPEN_STREAM, 0, 2 * i + 1, pl,
                                      (uint32_t)n));
  run(20);
  ok(!p.b.closed, "issue 22 item 7: a burst beyond the control queue does "
                  "not close the session (no control_full)");
  ok(p.b.opens < BURST && tm_memlink_pending(p.l, 1) > 0,
     "issue 22 item 7: the reader paused with the rest of the burst unread");
  tm_memlink_block_writes(p.l, 1, 0); /* the peer reads again */
  wait_until(loop, tm_memlink_sent(p.l, 1, TM_OPEN_RESULT) == BURST, 5000);
  is_int(p.b.opens, BURST, "every open reached the role");
  is_int(tm_memlink_sent(p.l, 1, TM_OPEN_RESULT), BURST,
         "issue 22 item 7: every open got its own OPEN_RESULT, in order");
  uint32_t id = 0, len = 0, next = 1;
  int ordered = 1;
  for (uint64_t i = 0; i < tm_memlink_sent(p.l, 1, 0); i++)
    if (tm_memlink_log(p.l, 1, i, &id, &len) == TM_OPEN_RESULT) {
      ordered &= id == next;
      next += 2;
    }
  ok(ordered, "answered in the order the opens came");
  ok(!p.b.closed, "and the session is still up");
  pair_end(&p);
}

static void test_heartbeat(void) {
  pair p;
  tm_session_cfg ca = cfg_default(1, TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL);
  tm_session_cfg cb = cfg_default(0, TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL);
  ca.ping_interval_ms = 10;
  ca.ping_timeout_ms = 30;
  pair_new(&p, &ca, &cb);
  wait_until(loop, tm_session_rtt_us(p.a.s) > 0, 2000);
  ok(tm_session_rtt_us(p.a.s) > 0, "a PONG answers the PING: rtt known");
  ok(tm_memlink_sent(p.l, 1, TM_PONG) >= 1, "the peer sent PONG");
  tm_memlink_hold(p.l, 1, 1); /* the peer hears nothing more */
  wait_until(loop, p.a.closed, 3000);
  ok(p.a.closed && p.a.reason == TM_CLOSE_HEARTBEAT,
     "no PONG within ping_timeout: TM_CLOSE_HEARTBEAT");
  tm_memlink_hold(p.l, 1, 0);
  pair_end(&p);
}

static void test_goaway(void) {
  pair p;
  pair_std(&p, TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL);
  user *ua, *ub;
  open_accepted(&p, "one.test", &ua, &ub);
  tm_session_goaway(p.a.s);
  ok(!tm_session_can_open(p.a.s), "after GOAWAY nothing new opens");
  opening o;
  ok(open_to(&p, &o, "new.test", 5000) == NULL, "tm_stream_open refuses");
  wait_until(loop, p.b.goaways == 1, 2000);
  is_int(p.b.goaways, 1, "the peer hears GOAWAY");
  is_int(p.b.goaway_last, 1, "with the last stream id");
  uint8_t f[128], pl[64];
  tm_open_stream req = {.protocol = 1, .port = 80, .window = 65536};
  strcpy(req.host, "late.test");
  int n = tm_open_stream_encode(&req, pl, sizeof(pl));
  uint64_t resets = tm_memlink_sent(p.l, 1, TM_RESET);
  int opens = p.b.opens;
  tm_memlink_inject(p.l, 1, f, frame(f, TM_OPEN_STREAM, 0, 7, pl,
                                     (uint32_t)n));
  wait_until(loop, tm_memlink_sent(p.l, 1, TM_RESET) > resets, 2000);
  is_int(p.b.opens, opens, "an OPEN_STREAM after GOAWAY is not offered");
  is_int(tm_memlink_sent(p.l, 1, TM_RESET), resets + 1, "it is RESET");
  write_str(ua->ps, "drain");
  wait_until(loop, ub->n == 5, 2000);
  ok(ub->n == 5 && !p.a.closed, "open streams finish their work");
  ph_stream_shutdown(ua->ps);
  ph_stream_shutdown(ub->ps);
  /* The last stream's both FINs end the drain and close the session at
   * once; its users still read EOF, not a reset the close made. */
  wait_until(loop, ua->eof && ub->eof, 2000);
  ok(ua->eof && ub->eof && !ua->reset && !ub->reset,
     "the drain's last stream ends with EOF at both users, not a reset");
  close_user(&ua);
  close_user(&ub);
  wait_until(loop, p.a.closed && p.b.closed, 2000);
  ok(p.a.closed && p.b.closed, "the session closes when the last stream ends");
  ok(p.a.reason == TM_CLOSE_GOAWAY_DONE || p.b.reason == TM_CLOSE_GOAWAY_DONE,
     "drained after GOAWAY");
  pair_end(&p);
}

static void test_close_resets_all(void) {
  pair p;
  pair_std(&p, TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL);
  user *u1a, *u1b, *u2a, *u2b;
  open_accepted(&p, "one.test", &u1a, &u1b);
  open_accepted(&p, "two.test", &u2a, &u2b);
  write_bulk(u1a->ps, 100000); /* bytes in flight */
  p.b.policy = P_HOLD;
  opening o;
  open_to(&p, &o, "pending.test", 5000);
  wait_until(loop, p.b.nheld == 1, 2000);
  tm_session_close(p.a.s);
  ok(!p.a.closed, "tm_session_close: on_close comes from the loop");
  wait_until(loop, p.a.closed && p.b.closed, 2000);
  ok(p.a.closed && p.a.reason == TM_CLOSE_LOCAL, "the session closed");
  ok(p.b.closed && p.b.reason == TM_CLOSE_TRANSPORT,
     "the peer lost its transport");
  ok(o.done == 1 && !o.accepted && o.code == PH_OPEN_AGENT_OFFLINE,
     "an open in flight fails (agent_offline)");
  is_int(p.b.abandons, 1, "the acceptor's unanswered open is abandoned");
  wait_until(loop, u1a->reset && u2a->reset && u1b->reset && u2b->reset, 2000);
  ok(u1a->reset && u2a->reset, "every stream reads PH_ERESET");
  ok(u1b->reset && u2b->reset, "on both sides");
  is_int(ph_stream_write(u1a->ps, "x", 1), PH_ERESET, "writes: PH_ERESET");
  close_user(&u1a);
  close_user(&u1b);
  close_user(&u2a);
  close_user(&u2b);
  run(5);
  pair_end(&p);
  ok(1, "TM-SEC-7: nothing is left after close (ASan/LSan build)");
}

static void test_transport_failure(void) {
  pair p;
  pair_std(&p, TM_CAP_OPEN_RESULT);
  user *ua, *ub;
  open_accepted(&p, "one.test", &ua, &ub);
  tm_memlink_fail(p.l);
  ok(p.a.closed && p.b.closed && p.a.reason == TM_CLOSE_TRANSPORT,
     "a failed transport closes both sessions");
  wait_until(loop, ua->reset && ub->reset, 2000);
  ok(ua->reset && ub->reset, "their streams read PH_ERESET");
  close_user(&ua);
  close_user(&ub);
  pair_end(&p);
}

/* ---- the relay over two sessions: client -> server -> agent ---------- */

/* The agent's user: echoes what it reads, shuts down at EOF. */
typedef struct echo {
  int shut, reset;
} echo;

static void echo_cb(ph_stream *s, int revents, void *arg) {
  echo *e = arg;
  (void)revents;
  for (int i = 0; i < 64; i++) {
    const void *d;
    ssize_t n = ph_stream_peek(s, &d);
    if (n == PH_ERESET) {
      e->reset = 1;
      ph_stream_watch(s, 0, NULL, NULL);
      return;
    }
    if (n == 0) {
      /* EOF: answer with ours and leave; the close, inside the callback,
       * lets the queued bytes and the FIN go out */
      ph_stream_shutdown(s);
      e->shut = 1;
      ph_stream_close(s);
      return;
    }
    if (n < 0) {
      ph_stream_watch(s, PH_READ, echo_cb, e);
      return;
    }
    ssize_t w = ph_stream_write(s, d, (size_t)n);
    if (w <= 0) {
      ph_stream_watch(s, PH_WRITE, echo_cb, e);
      return;
    }
    ph_stream_consume(s, (size_t)w);
  }
}

/* The server: each open from the client becomes an open towards the
 * agent; once the agent accepted, the client's stream is accepted and the
 * two are joined by the relay (TM-P0-18: installed before OPEN_RESULT). */
typedef struct relay_srv {
  tm_session *up;   /* towards the agent (opener) */
  tm_stream *down;  /* the client's stream, waiting */
  int done, end, closed;
  relay_stats st;
} relay_srv;

static void rs_on_close(void *arg, int reason) {
  (void)reason;
  ((relay_srv *)arg)->closed = 1;
}

static void rs_done(void *arg, const relay_stats *st, int end) {
  relay_srv *r = arg;
  r->done = 1;
  r->end = end;
  r->st = *st;
}

static void rs_open_cb(void *arg, tm_stream *st, const tm_open_result *res,
                       int strict) {
  relay_srv *r = arg;
  (void)strict;
  if (!res->accepted) {
    tm_stream_reject(r->down, res->stage, res->code, 0, 0);
    return;
  }
  tm_stream_accept(r->down);
  relay_opts o = {.idle_timeout_ms = 60000, .buffer_size = 16384,
                  .done = rs_done, .arg = r};
  stream_end client = {-1, tm_stream_ph(r->down)};
  stream_end target = {-1, tm_stream_ph(st)};
  relay_start(api, hctx, client, target, NULL, 0, &o);
}

static void rs_on_open(void *arg, tm_stream *st, const tm_open_stream *req) {
  relay_srv *r = arg;
  tm_open_stream fwd = *req;
  fwd.agent[0] = '\0';
  r->down = st;
  if (!tm_stream_open(r->up, &fwd, 5000, rs_open_cb, r))
    tm_stream_reject(st, PH_STAGE_RELAY, PH_OPEN_AGENT_OFFLINE, 1, 0);
}

static const tm_session_ops rs_ops = {.on_open = rs_on_open,
                                      .on_close = rs_on_close};

/* The agent accepts and echoes. */
static echo agent_echo;
static void ag_on_open(void *arg, tm_stream *st, const tm_open_stream *req) {
  (void)arg;
  (void)req;
  tm_stream_accept(st);
  ph_stream_watch(tm_stream_ph(st), PH_READ, echo_cb, &agent_echo);
}

static const tm_session_ops ag_ops = {.on_open = ag_on_open,
                                      .on_close = on_close};

/* The client's user: writes a pattern while it may, reads it back. */
typedef struct pump {
  ph_stream *ps;
  uint64_t sent, got, want;
  int bad, eof, reset, shut;
} pump;

static void pump_cb(ph_stream *s, int revents, void *arg) {
  pump *p = arg;
  if (revents & PH_WRITE) {
    uint8_t b[8192];
    while (p->sent < p->want) {
      size_t n = p->want - p->sent < sizeof(b) ? p->want - p->sent
                                                : sizeof(b);
      for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)((p->sent + i) % 251);
      ssize_t w = ph_stream_write(s, b, n);
      if (w <= 0)
        break;
      p->sent += (uint64_t)w;
    }
    if (p->sent == p->want && !p->shut) {
      ph_stream_shutdown(s);
      p->shut = 1;
    }
  }
  for (int k = 0; k < 64; k++) {
    const void *d;
    ssize_t n = ph_stream_peek(s, &d);
    if (n == PH_ERESET) {
      p->reset = 1;
      break;
    }
    if (n == 0) {
      p->eof = 1;
      break;
    }
    if (n < 0)
      break;
    for (ssize_t i = 0; i < n; i++)
      if (((const uint8_t *)d)[i] != (uint8_t)((p->got + (uint64_t)i) % 251))
        p->bad++;
    p->got += (uint64_t)n;
    ph_stream_consume(s, (size_t)n);
  }
  int ev = (p->eof || p->reset) ? 0 : PH_READ;
  if (!p->shut && !p->reset)
    ev |= PH_WRITE;
  ph_stream_watch(s, ev, pump_cb, p);
}

static void test_relay_chain(void) {
  unsigned caps = TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL;
  tm_session_cfg c = cfg_default(1, caps), s1 = cfg_default(0, caps);
  tm_session_cfg s2 = cfg_default(1, caps), ag = cfg_default(0, caps);
  s2.component = TM_COMPONENT_SERVER;
  s2.metrics = m_server;
  ag.component = TM_COMPONENT_AGENT;
  ag.metrics = NULL;
  /* small windows: backpressure all along the chain */
  tm_session_cfg *all[] = {&c, &s1, &s2, &ag};
  for (int i = 0; i < 4; i++) {
    all[i]->initial_window = 32768;
    all[i]->window_update_threshold = 16384;
    all[i]->inbound_buffer_bytes = 32768;
    all[i]->outbound_buffer_bytes = 16384;
    all[i]->max_frame_payload = 8192;
  }
  tm_memlink *l1 = tm_memlink_new(api, hctx, 16);
  tm_memlink *l2 = tm_memlink_new(api, hctx, 16);
  const tm_transport *t1 = tm_memlink_transport(l1);
  const tm_transport *t2 = tm_memlink_transport(l2);
  side client, server_up, agent;
  struct {
    tm_session *s;
  } server_down;
  memset(&client, 0, sizeof(client));
  memset(&server_up, 0, sizeof(server_up));
  memset(&agent, 0, sizeof(agent));
  relay_srv rs;
  memset(&rs, 0, sizeof(rs));
  memset(&agent_echo, 0, sizeof(agent_echo));
  client.s = tm_session_new(api, hctx, &c, t1, tm_memlink_targ(l1, 0), &ops,
                            &client);
  /* on_close of the relay and agent sessions writes into their sides */
  server_up.s = tm_session_new(api, hctx, &s2, t2, tm_memlink_targ(l2, 0),
                               &ops, &server_up);
  rs.up = server_up.s;
  tm_session_ops rso = rs_ops;
  server_down.s = tm_session_new(api, hctx, &s1, t1, tm_memlink_targ(l1, 1),
                                 &rso, &rs);
  agent.s = tm_session_new(api, hctx, &ag, t2, tm_memlink_targ(l2, 1),
                           &ag_ops, &agent);
  tm_memlink_attach(l1, 0, client.s);
  tm_memlink_attach(l1, 1, server_down.s);
  tm_memlink_attach(l2, 0, server_up.s);
  tm_memlink_attach(l2, 1, agent.s);
  opening o;
  tm_open_stream req;
  memset(&req, 0, sizeof(req));
  req.protocol = 1;
  req.port = 7;
  strcpy(req.host, "echo.test");
  strcpy(req.agent, "agent-1");
  memset(&o, 0, sizeof(o));
  tm_stream_open(client.s, &req, 5000, open_cb, &o);
  wait_until(loop, o.done, 2000);
  ok(o.accepted, "TM-P0-18: the client's open is answered after the agent's");
  pump p;
  memset(&p, 0, sizeof(p));
  p.want = 1 << 20;
  if (o.st) {
    p.ps = tm_stream_ph(o.st);
    ph_stream_watch(p.ps, PH_READ | PH_WRITE, pump_cb, &p);
  }
  wait_until(loop, p.eof || p.reset || p.bad, 20000);
  ok(p.eof && !p.reset, "1 MiB through client -> server relay -> agent echo");
  is_int(p.got, 1 << 20, "TM-PROTO-6: every byte came back");
  is_int(p.bad, 0, "in order");
  wait_until(loop, rs.done, 2000);
  ok(rs.done && rs.end == RELAY_END_CLOSED,
     "the server's relay ends with both directions finished");
  is_int(rs.st.up, 1 << 20, "it moved the bytes up");
  is_int(rs.st.down, 1 << 20, "and down");
  ok(tm_memlink_sent(l1, 0, TM_WINDOW_UPDATE) > 0 &&
         tm_memlink_sent(l2, 1, TM_WINDOW_UPDATE) > 0,
     "TM-P2-11: windows reopened along the chain as bytes were delivered");
  if (p.ps)
    ph_stream_close(p.ps);
  run(5);
  is_int(tm_memlink_sent(l1, 0, TM_RESET) + tm_memlink_sent(l1, 1, TM_RESET) +
             tm_memlink_sent(l2, 0, TM_RESET) +
             tm_memlink_sent(l2, 1, TM_RESET),
         0, "no stream was reset");
  is_int(tm_session_streams(server_down.s) + tm_session_streams(server_up.s),
         0, "nothing left on the server");
  tm_session_close(client.s);
  tm_session_close(server_up.s);
  wait_until(loop,
             client.closed && rs.closed && server_up.closed && agent.closed,
             2000);
  ok(client.closed && rs.closed && server_up.closed && agent.closed,
     "all four sessions close");
  run(2);
  tm_memlink_free(l1);
  tm_memlink_free(l2);
}

/* ---- the agent's join: a socket and a stream through the relay -------- */

/* The target: echoes on its socket, shuts its side down after EOF. */
typedef struct fd_echo {
  int fd;
  ph_io *io;
  char buf[65536];
  size_t len;
  int eof, shut;
} fd_echo;

static void fd_echo_cb(ph_io *io, int fd, int revents, void *arg) {
  fd_echo *e = arg;
  (void)revents;
  for (int i = 0; i < 16; i++) {
    if (e->len) {
      ssize_t w = send(fd, e->buf, e->len, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w <= 0)
        break;
      memmove(e->buf, e->buf + w, e->len - (size_t)w);
      e->len -= (size_t)w;
      continue;
    }
    if (e->eof)
      break;
    ssize_t r = recv(fd, e->buf, sizeof(e->buf), MSG_DONTWAIT);
    if (r == 0)
      e->eof = 1;
    if (r <= 0)
      break;
    e->len = (size_t)r;
  }
  if (e->eof && !e->len && !e->shut) {
    shutdown(fd, SHUT_WR);
    e->shut = 1;
  }
  api->io_set(io, e->shut ? 0 : (e->len ? PH_WRITE : PH_READ));
}

typedef struct fd_agent {
  int fd; /* the relay's end */
  int done, end;
} fd_agent;

static void fa_done(void *arg, const relay_stats *st, int end) {
  fd_agent *a = arg;
  (void)st;
  a->done = 1;
  a->end = end;
}

static void fa_on_open(void *arg, tm_stream *st, const tm_open_stream *req) {
  fd_agent *a = arg;
  (void)req;
  tm_stream_accept(st); /* the dial "succeeded": the socket is there */
  relay_opts o = {.idle_timeout_ms = 60000, .buffer_size = 16384,
                  .done = fa_done, .arg = a};
  stream_end client = {-1, tm_stream_ph(st)};
  relay_start(api, hctx, client, end_fd(a->fd), NULL, 0, &o);
}

static void fa_on_close(void *arg, int reason) {
  (void)arg;
  (void)reason;
}

static void test_relay_fd(void) {
  unsigned caps = TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL;
  tm_session_cfg ca = cfg_default(1, caps), cb = cfg_default(0, caps);
  ca.initial_window = cb.initial_window = 65536;
  ca.window_update_threshold = cb.window_update_threshold = 32768;
  cb.component = TM_COMPONENT_AGENT;
  cb.metrics = NULL;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) {
    ok(0, "socketpair");
    return;
  }
  fd_echo e;
  memset(&e, 0, sizeof(e));
  e.fd = sv[1];
  e.io = api->io_new(hctx, sv[1], PH_READ, fd_echo_cb, &e);
  fd_agent fa = {.fd = sv[0]};
  tm_memlink *l = tm_memlink_new(api, hctx, 16);
  const tm_transport *t = tm_memlink_transport(l);
  side a;
  memset(&a, 0, sizeof(a));
  tm_session_ops fo = {.on_open = fa_on_open, .on_close = fa_on_close};
  a.s = tm_session_new(api, hctx, &ca, t, tm_memlink_targ(l, 0), &ops, &a);
  tm_session *b = tm_session_new(api, hctx, &cb, t, tm_memlink_targ(l, 1),
                                 &fo, &fa);
  tm_memlink_attach(l, 0, a.s);
  tm_memlink_attach(l, 1, b);
  opening o;
  tm_open_stream req;
  memset(&req, 0, sizeof(req));
  req.protocol = 1;
  req.port = 7;
  strcpy(req.host, "target.test");
  memset(&o, 0, sizeof(o));
  tm_stream_open(a.s, &req, 5000, open_cb, &o);
  wait_until(loop, o.done, 2000);
  pump p;
  memset(&p, 0, sizeof(p));
  p.want = 1 << 20;
  if (o.st) {
    p.ps = tm_stream_ph(o.st);
    ph_stream_watch(p.ps, PH_READ | PH_WRITE, pump_cb, &p);
  }
  wait_until(loop, p.eof || p.reset || p.bad, 20000);
  ok(p.eof && !p.reset && p.got == (1u << 20) && !p.bad,
     "TM-PROTO-6: 1 MiB through stream -> relay -> socket echo and back");
  wait_until(loop, fa.done, 2000);
  ok(fa.done && fa.end == RELAY_END_CLOSED,
     "the agent's relay ends with both directions finished (half-close "
     "carried both ways)");
  ok(e.eof && e.shut, "the target saw EOF and answered with its own");
  is_int(tm_memlink_sent(l, 0, TM_RESET) + tm_memlink_sent(l, 1, TM_RESET),
         0, "no RESET");
  if (p.ps)
    ph_stream_close(p.ps);
  api->io_free(e.io);
  close(sv[1]);
  tm_session_close(a.s);
  wait_until(loop, a.closed, 2000);
  run(2);
  tm_memlink_free(l);
}

static int md_seen, md_ack;
static tm_metadata md_got;
static void on_md(void *arg, const tm_metadata *m, int ack) {
  (void)arg;
  md_seen++;
  md_ack = ack;
  md_got = *m;
}

static void test_cancel_dup_limits(void) {
  pair p;
  tm_session_cfg ca = cfg_default(1, TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL);
  tm_session_cfg cb = cfg_default(0, TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL);
  cb.max_streams = 3;
  pair_new(&p, &ca, &cb);
  /* cancel: the cb never runs, the peer drops its pending work */
  p.b.policy = P_HOLD;
  opening o;
  tm_stream *st = open_to(&p, &o, "cancel.test", 5000);
  wait_until(loop, p.b.nheld == 1, 2000);
  tm_stream_cancel(st);
  wait_until(loop, p.b.abandons == 1, 2000);
  is_int(p.b.abandons, 1, "a cancelled open is RESET: the acceptor drops it");
  run(5);
  is_int(o.done, 0, "the cancelled open's callback never runs");
  is_int(tm_session_streams(p.a.s), 0, "nothing left of it");
  /* a duplicate stream id resets the stream it names */
  p.b.policy = P_ACCEPT;
  user *u1a, *u1b, *u2a, *u2b;
  open_accepted(&p, "one.test", &u1a, &u1b);
  open_accepted(&p, "two.test", &u2a, &u2b);
  uint8_t f[128], pl[64];
  tm_open_stream req = {.protocol = 1, .port = 80, .window = 65536};
  strcpy(req.host, "dup.test");
  int n = tm_open_stream_encode(&req, pl, sizeof(pl));
  int opens = p.b.opens;
  tm_memlink_inject(p.l, 1, f, frame(f, TM_OPEN_STREAM, 0,
                                     tm_stream_id(p.b.accepted[0]), pl,
                                     (uint32_t)n));
  wait_until(loop, u1b->reset && u1a->reset, 2000);
  ok(u1a->reset && u1b->reset, "a duplicate stream id resets that stream");
  is_int(p.b.opens, opens, "and opens nothing");
  write_str(u2a->ps, "two");
  wait_until(loop, u2b->n == 3, 2000);
  ok(u2b->n == 3 && p.b.s, "the other stream keeps flowing");
  /* max_streams: the acceptor refuses past it (queue_full, retryable) */
  user *u3a, *u3b, *u4a, *u4b;
  ok(open_accepted(&p, "three.test", &u3a, &u3b) == 0, "a second live one");
  ok(open_accepted(&p, "four.test", &u4a, &u4b) == 0, "a third (the limit)");
  open_to(&p, &o, "five.test", 5000);
  wait_until(loop, o.done, 2000);
  ok(o.done && !o.accepted && o.code == PH_OPEN_QUEUE_FULL,
     "past max_streams an open is refused with queue_full");
  close_user(&u1a);
  close_user(&u1b);
  close_user(&u2a);
  close_user(&u2b);
  close_user(&u3a);
  close_user(&u3b);
  close_user(&u4a);
  close_user(&u4b);
  pair_end(&p);
}

static void test_metadata(void) {
  pair p;
  memset(&p, 0, sizeof(p));
  p.l = tm_memlink_new(api, hctx, 16);
  tm_session_ops with_md = ops;
  with_md.on_metadata = on_md;
  tm_session_cfg ca = cfg_default(1, TM_CAP_OPEN_RESULT);
  tm_session_cfg cb = cfg_default(0, TM_CAP_OPEN_RESULT);
  const tm_transport *t = tm_memlink_transport(p.l);
  p.a.s = tm_session_new(api, hctx, &ca, t, tm_memlink_targ(p.l, 0), &with_md,
                         &p.a);
  p.b.s = tm_session_new(api, hctx, &cb, t, tm_memlink_targ(p.l, 1), &with_md,
                         &p.b);
  tm_memlink_attach(p.l, 0, p.a.s);
  tm_memlink_attach(p.l, 1, p.b.s);
  tm_metadata md;
  memset(&md, 0, sizeof(md));
  md.caps = TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL;
  strcpy(md.agent_id, "agent-7");
  strcpy(md.version, "0.1.0");
  md_seen = 0;
  is_int(tm_session_send_metadata(p.b.s, &md, 0), PH_OK,
         "AGENT_METADATA queued");
  wait_until(loop, md_seen == 1, 2000);
  ok(md_seen == 1 && !md_ack, "TM-PROTO-18: the peer reads AGENT_METADATA");
  is_str(md_got.agent_id, "agent-7", "with the agent id");
  is_int(md_got.caps, TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL,
         "and the capabilities");
  tm_metadata ackm;
  memset(&ackm, 0, sizeof(ackm));
  ackm.caps = TM_CAP_OPEN_RESULT;
  tm_session_send_metadata(p.a.s, &ackm, 1);
  wait_until(loop, md_seen == 2, 2000);
  ok(md_seen == 2 && md_ack && md_got.caps == TM_CAP_OPEN_RESULT,
     "and the ACK with the intersection");
  pair_end(&p);
}

static void test_config_bounds(void) {
  tm_memlink *l = tm_memlink_new(api, hctx, 0);
  const tm_transport *t = tm_memlink_transport(l);
  tm_session_cfg c = cfg_default(1, TM_CAP_ALL);
  c.initial_window = 0;
  ok(!tm_session_new(api, hctx, &c, t, tm_memlink_targ(l, 0), &ops, NULL),
     "TM-CFG-25: a zero window is refused");
  c = cfg_default(1, TM_CAP_ALL);
  c.max_frame_payload = TM_MAX_PAYLOAD + 1;
  ok(!tm_session_new(api, hctx, &c, t, tm_memlink_targ(l, 0), &ops, NULL),
     "TM-CFG-25: a frame payload above 65536 is refused");
  c = cfg_default(1, TM_CAP_ALL);
  c.window_update_threshold = c.initial_window + 1;
  ok(!tm_session_new(api, hctx, &c, t, tm_memlink_targ(l, 0), &ops, NULL),
     "a threshold above the window is refused");
  tm_memlink_free(l);
}

/* The seed's allowed label names and values (TM-OBS-10..17); `le` is the
 * histogram bucket's own. The seed's families (tunnelmesh_*) carry only
 * these; the session layer's own families (proxyhost_stream_*) carry
 * these and the one label each documents (label_ok). */
static const char *const seed_labels[] = {
    "component", "stage", "result", "error_class", "protocol",
    "scope",     "cache", "open_mode", "le",     NULL};
static const char *const protocol_values[] = {"tcp", "udp", "http",
                                              "websocket", NULL};
static const char *const scope_values[] = {"local", "remote", NULL};
static const char *const open_mode_values[] = {"strict", "legacy", NULL};

static int in_list(const char *const *list, const char *s, size_t n) {
  for (int i = 0; list[i]; i++)
    if (strlen(list[i]) == n && strncmp(list[i], s, n) == 0)
      return 1;
  return 0;
}

/* Whether the label name (n bytes at p) may be on line's family, and its
 * value (vn bytes at v) in the seed's set for protocol, scope and
 * open_mode. */
static int label_ok(const char *line, const char *p, size_t n, const char *v,
                    size_t vn) {
  if (n == 8 && strncmp(p, "protocol", 8) == 0)
    return in_list(protocol_values, v, vn);
  if (n == 5 && strncmp(p, "scope", 5) == 0)
    return in_list(scope_values, v, vn);
  if (n == 9 && strncmp(p, "open_mode", 9) == 0)
    return in_list(open_mode_values, v, vn);
  if (in_list(seed_labels, p, n))
    return 1;
  static const char closed[] = "proxyhost_stream_tunnel_sessions_closed_total{";
  if (strncmp(line, closed, sizeof(closed) - 1) == 0)
    return n == 6 && strncmp(p, "reason", 6) == 0;
  return 0;
}

/* TM-TEST-18, TM-SEC-8, TM-OBS-18: only the allowed labels, no target,
 * no id. */
static void test_metric_labels(void) {
  const char *t = ph_mock_metrics_text(mk);
  int lines = 0, bad = 0;
  for (const char *line = t; line && *line;) {
    const char *nl = strchr(line, '\n');
    size_t len = nl ? (size_t)(nl - line) : strlen(line);
    if (len && line[0] != '#' &&
        (strncmp(line, "tunnelmesh_stream_", 18) == 0 ||
         strncmp(line, "proxyhost_stream_", 17) == 0)) {
      lines++;
      const char *p = memchr(line, '{', len);
      while (p && p < line + len && *p != '}') {
        p++;
        const char *eq = memchr(p, '=', (size_t)(line + len - p));
        if (!eq || eq[1] != '"')
          break;
        const char *v = eq + 2, *q = memchr(v, '"', (size_t)(line + len - v));
        if (!q)
          break;
        if (!label_ok(line, p, (size_t)(eq - p), v, (size_t)(q - v))) {
          bad++;
          printf("# label not allowed: %.*s\n", (int)len, line);
        }
        p = q + 1;
      }
      if (memmem(line, len, ".test", 5)) {
        bad++;
        printf("# a target in a label: %.*s\n", (int)len, line);
      }
    }
    line = nl ? nl + 1 : NULL;
  }
  ok(lines > 0, "the tunnel metric series exist");
  is_int(bad, 0, "TM-TEST-18, TM-SEC-8, TM-OBS-10..17: only the seed's "
                 "labels and values (TM-OBS-17: open_mode strict or legacy)");
  like(t, "tunnelmesh_stream_backpressure_total{component=\"server\","
          "open_mode=\"strict\",result=\"failure\"} 1",
       "TM-OBS-5: a full control queue closing the session is counted "
       "result=failure");
  like(t, "scope=\"local\"", "TM-OBS-15: the stage durations have scope");
  unlike(t, "scope=\"remote\"",
         "TM-OBS-15: no remote series: one server is the whole mesh");
  like(t, "proxyhost_stream_writer_wait_seconds_count{component=\"client\"}",
       "TM-OBS-3: the writer's queue wait");
  like(t, "tunnelmesh_stream_window_stall_seconds_count{component=\"client\"}",
       "TM-OBS-4: window stalls");
  like(t, "proxyhost_stream_tunnel_sessions{component=\"client\"} 0",
       "no session left open");
}

int main(void) {
  plan_lazy();
  char dir[] = "/tmp/test_tm_session.XXXXXX";
  if (!mkdtemp(dir)) {
    ok(0, "mkdtemp");
    return done_testing();
  }
  snprintf(logpath, sizeof(logpath), "%s/log", dir);
  char ini[512];
  snprintf(ini, sizeof(ini), "[log]\nlevel = info\nfile = %s\n", logpath);
  mk = host_test_start(&host_mod, ini);
  test_strict_basics();
  test_trace_gated();
  test_principal_gated();
  test_reject();
  test_legacy();
  test_narrow_caps();
  test_open_timeout();
  test_reset_codes();
  test_data_while_opening();
  test_duplicate_result();
  test_result_without_window();
  test_window_violations();
  test_violation_limit();
  test_legacy_backpressure();
  test_small_frames();
  test_window_reopens();
  control_first(1);
  control_first(0);
  test_never_reads();
  test_open_burst();
  test_heartbeat();
  test_goaway();
  test_close_resets_all();
  test_transport_failure();
  test_relay_chain();
  test_relay_fd();
  test_cancel_dup_limits();
  test_metadata();
  test_config_bounds();
  test_metric_labels();
  ph_mock_stop(mk);
  tm_metrics_free(m_client);
  tm_metrics_free(m_server);
  ph_mock_free(mk);
  unlink(logpath);
  rmdir(dir);
  return done_testing();
}
