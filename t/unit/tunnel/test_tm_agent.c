/* SPDX-License-Identifier: BSD-2-Clause */
/* tunnel_agent's stream path (agent_stream.c over dial_exec.c) with the
 * real session layer (tm_session.c) on an in-memory transport, through
 * the mock host, against the fake connector of tm_fakeconn.h. The test
 * plays the server: it writes OPEN_STREAM, DATA and RESET frames into the
 * session's reader and reads the frames the session's writer sends. The
 * WebSocket and the connection pool (agent_pool.c) are not here: the
 * integration test t/integration/tunnel_agent.sh has them. Every wait is
 * bounded. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>

#define TM_FAKECONN_OWN_DRIVER
#include <proxyhost/mock.h>

#include "mock_test.h"
#include "tm_fakeconn.h"


#include "tunnel_agent/agent_int.h"
#include "tap.h"
#include "tunnel_common/proto/tm_proto.h"

/* ---- the in-memory transport ------------------------------------------ */

#define MAX_SEEN 512

typedef struct seen_frame {
  uint8_t type;
  uint32_t sid;
  uint32_t len;
  uint8_t payload[1100]; /* control frames and short DATA */
} seen_frame;

static struct memt {
  int want;
  int closed;
  int n;
  seen_frame f[MAX_SEEN];
} mt;

static void mt_want_write(void *t) { ((struct memt *)t)->want = 1; }
static int mt_write(void *t, uint8_t *buf, size_t len) {
  struct memt *m = t;
  tm_frame f;
  if (tm_frame_decode(buf, len, &f) != TM_OK || m->n >= MAX_SEEN)
    return 0;
  seen_frame *s = &m->f[m->n++];
  s->type = f.type;
  s->sid = f.stream_id;
  s->len = f.length;
  memcpy(s->payload, f.payload, f.length < sizeof(s->payload)
                                    ? f.length
                                    : sizeof(s->payload));
  return 0;
}
static void mt_pause(void *t, int p) {
  (void)t;
  (void)p;
}
static void mt_close(void *t) { ((struct memt *)t)->closed = 1; }
static const tm_transport mem_transport = {mt_want_write, mt_write, mt_pause,
                                           mt_close, 0};

/* ---- the driver: the agent's configuration and metrics ---------------- */

static tm_metrics *dmetrics;

/* As tunnel_agent does, the driver registers the agent's metrics. */
static int drv_init(ph_ctx *ctx, const ph_api *a, void **state) {
  dapi = a;
  dctx = ctx;
  *state = NULL;
  dmetrics = tm_metrics_register(a, ctx, TM_COMPONENT_AGENT);
  return dmetrics ? PH_OK : PH_EINVAL;
}
MOCK_TEST_MODULE(drv_mod, "tunnel_agent", "1", .requires = drv_requires,
                 .config = agent_conf_keys, .init = drv_init,
                 .start = drv_start);

/* agent_pool.c's part that agent_stream.c calls. */
static int maybe_free_calls;
void agent_conn_maybe_free(agent_conn *c) {
  (void)c;
  maybe_free_calls++;
}

/* ---- the harness ---------------------------------------------------------- */

static ph_mock *m;
static agent ag;
static agent_conn conn;
static int session_closed = -1;

static void on_close(void *arg, int reason) {
  (void)arg;
  session_closed = reason;
  conn.s = NULL;
  agent_streams_session_gone(&conn);
}

static const tm_session_ops ops = {
    .on_open = agent_on_open,
    .on_abandon = agent_on_abandon,
    .on_metadata = agent_conn_metadata,
    .on_close = on_close,
};

static void pump(int ms) {
  for (int i = 0; i < ms / 5 + 1; i++) {
    for (int k = 0; k < 64 && mt.want && conn.s; k++) {
      mt.want = 0;
      tm_session_on_writable(conn.s);
    }
    ph_mock_run_for(m, 5);
  }
}

/* Index of the first frame of type on sid, -1 when none (yet). */
static int find(uint8_t type, uint32_t sid) {
  for (int i = 0; i < mt.n; i++)
    if (mt.f[i].type == type && mt.f[i].sid == sid)
      return i;
  return -1;
}

/* Pumps until a frame of type on sid was written, at most limit_ms. */
static int wait_frame(uint8_t type, uint32_t sid, int limit_ms) {
  for (int waited = 0; find(type, sid) < 0 && waited < limit_ms; waited += 10)
    pump(10);
  return find(type, sid) >= 0;
}

static void feed(uint8_t type, uint8_t flags, uint32_t sid, const void *p,
                 size_t n) {
  uint8_t buf[TM_HEADER_LEN + 2048];
  tm_frame_header(buf, type, flags, sid, (uint32_t)n);
  memcpy(buf + TM_HEADER_LEN, p, n);
  tm_session_on_message(conn.s, buf, TM_HEADER_LEN + n);
}

static void open_stream(uint32_t sid, const char *host, uint16_t port) {
  tm_open_stream o;
  memset(&o, 0, sizeof(o));
  o.window = (tm_session_caps(conn.s) & TM_CAP_FLOW_CONTROL) ? 262144 : 0;
  o.protocol = 1;
  o.port = port;
  snprintf(o.host, sizeof(o.host), "%s", host);
  uint8_t p[600];
  int n = tm_open_stream_encode(&o, p, sizeof(p));
  feed(TM_OPEN_STREAM, 0, sid, p, (size_t)n);
}

static int result_of(uint32_t sid, tm_open_result *r) {
  int i = find(TM_OPEN_RESULT, sid);
  if (i < 0)
    return 0;
  return tm_open_result_decode(mt.f[i].payload, mt.f[i].len, r) == TM_OK;
}

static void session_up(unsigned caps, uint32_t conc, uint32_t pend,
                       uint32_t open_ms) {
  memset(&mt, 0, sizeof(mt));
  memset(&conn, 0, sizeof(conn));
  ilist_init(&conn.streams);
  session_closed = -1;
  ag.cfg.dial.max_concurrent = conc;
  ag.cfg.dial.max_pending = pend;
  ag.cfg.dial.open_timeout_ms = open_ms;
  ag.cfg.dial.connect_timeout_ms = open_ms;
  conn.a = &ag;
  conn.state = CONN_UP;
  conn.dx = dial_exec_new(dapi, dctx, dconn, dcself, &ag.cfg.dial);
  tm_session_cfg sc = ag.cfg.session;
  sc.caps = caps;
  sc.metrics = dmetrics;
  sc.ping_interval_ms = 0;
  conn.s = tm_session_new(dapi, dctx, &sc, &mem_transport, &mt, &ops, &conn);
  if (!conn.s || !conn.dx) {
    printf("Bail out! no session\n");
    exit(1);
  }
}

static void session_down(void) {
  if (conn.s)
    tm_session_close(conn.s);
  pump(20);
  agent_streams_abort(&conn);
  dial_exec_free(conn.dx);
  conn.dx = NULL;
  pump(20);
}

/* Reads what reached the target's socket, waiting up to limit_ms. */
/* Ends a case: the last target's peer (when one was dialled) closed, the
 * session down. */
static void case_down(void) {
  if (f_last_peer_fd >= 0)
    close(f_last_peer_fd);
  f_last_peer_fd = -1;
  session_down();
}

/* Streams 1 and 3 to hosts whose dials hang. */
static void open_two_hanging(void) {
  open_stream(1, "hang1.test", 80);
  open_stream(3, "hang2.test", 80);
}

static ssize_t target_read(int fd, char *buf, size_t cap, int limit_ms) {
  for (int waited = 0; waited < limit_ms; waited += 10) {
    ssize_t r = recv(fd, buf, cap, MSG_DONTWAIT);
    if (r > 0)
      return r;
    pump(10);
  }
  return -1;
}

int main(void) {
  plan_lazy();
  char e[1024];
  m = ph_mock_new("[log]\nlevel = warn\n[tunnel_agent]\n"
                  "server_url = ws://127.0.0.1:1/tunnel\ntoken = t\n",
                  e, sizeof(e));
  if (!m || ph_mock_add(m, &fake_mod, e, sizeof(e)) < 0 ||
      ph_mock_add(m, &drv_mod, e, sizeof(e)) < 0 ||
      ph_mock_init(m, e, sizeof(e)) < 0 || ph_mock_start(m, e, sizeof(e)) < 0) {
    printf("Bail out! mock host: %s\n", e);
    return 1;
  }
  memset(&ag, 0, sizeof(ag));
  ag.api = dapi;
  ag.ctx = dctx;
  ag.m = dmetrics;
  ag.conn = dconn;
  ag.cself = dcself;
  agent_cfg_read(dapi, dctx, &ag.cfg);
  const unsigned strict = TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL;

  /* TM-TEST-10, TM-P0-7: state before OPEN_OK; DATA right after it. */
  session_up(strict, 32, 128, 60000);
  open_stream(1, "ready.test", 80);
  ok(wait_frame(TM_OPEN_RESULT, 1, 5000), "TM-TEST-10: an OPEN_RESULT for a "
                                          "ready target");
  tm_open_result r;
  ok(result_of(1, &r) && r.accepted, "TM-TEST-10: accepted");
  ok(r.window > 0, "with the agent's receive window (flow control)");
  int peer = f_last_peer_fd;
  /* The server's DATA right after the ACK, before anything else ran. */
  feed(TM_DATA, 0, 1, "ping", 4);
  char buf[64];
  ssize_t got = target_read(peer, buf, sizeof(buf), 5000);
  ok(got == 4 && memcmp(buf, "ping", 4) == 0,
     "TM-TEST-10, TM-P0-7: DATA sent at once after OPEN_OK found the stream "
     "and reached the target");
  is_int(find(TM_RESET, 1), -1, "TM-TEST-10: and the stream was not reset");
  ok(send(peer, "pong", 4, 0) == 4, "the target answers");
  int ok_data = 0;
  for (int i = 0; i < 500 && !ok_data; i++) {
    pump(10);
    for (int k = 0; k < mt.n; k++)
      if (mt.f[k].type == TM_DATA && mt.f[k].sid == 1 && mt.f[k].len == 4 &&
          memcmp(mt.f[k].payload, "pong", 4) == 0)
        ok_data = 1;
  }
  ok(ok_data, "the target's bytes come back as DATA on the stream");
  case_down(); /* closes peer, the last dialled */

  /* TM-TEST-6, TM-P0-2: two blocked dials do not block a third stream. */
  reset_counts();
  session_up(strict, 32, 128, 60000);
  open_two_hanging();
  is_int(f_opened, 0, "TM-P0-2, TM-P0-6 (issue 24 item 4): the reader's "
                      "enqueue returned without calling the connector");
  ph_mock_run_for(m, 0);
  is_int(f_opened, 2, "TM-P0-2: the next loop turn started both dials "
                      "without waiting for them");
  is_str(f_order, "hang1.test,hang2.test,", "TM-P0-2: in the order of the "
                                            "OPEN_STREAMs");
  open_stream(5, "ready.test", 80);
  ok(wait_frame(TM_OPEN_RESULT, 5, 5000),
     "TM-TEST-6: the third stream is answered while two dials hang");
  ok(result_of(5, &r) && r.accepted, "TM-TEST-6: and it is open");
  is_int(find(TM_OPEN_RESULT, 1) + find(TM_OPEN_RESULT, 3), -2,
         "TM-TEST-6: the hanging two have no answer yet");
  /* TM-TEST-8: the server's RESET cancels an in-flight dial. */
  uint8_t code = PH_OPEN_TIMEOUT;
  feed(TM_RESET, 0, 1, &code, 1);
  pump(20);
  is_int(f_cancelled, 1, "TM-TEST-8, TM-P0-5: a RESET cancels that dial in "
                         "the connector");
  is_int(session_closed, -1, "TM-P0-8: the session goes on");
  /* TM-TEST-8: closing the session cancels what is still dialing. */
  tm_session_close(conn.s);
  pump(20);
  is_int(f_cancelled, 2, "TM-TEST-8, TM-P0-5: the session closing cancels "
                         "the other hanging dial");
  is_int(session_closed, TM_CLOSE_LOCAL, "the session ended");
  is_int(f_in_flight, 0, "no dial left in the connector");
  case_down();

  /* TM-TEST-9, TM-P0-8, TM-FAIL-3: a failed dial is that stream's only. */
  session_up(strict, 32, 128, 60000);
  open_stream(1, "refused.test", 80);
  open_stream(3, "nxdomain.test", 80);
  ok(wait_frame(TM_OPEN_RESULT, 1, 5000) && wait_frame(TM_OPEN_RESULT, 3, 5000),
     "TM-TEST-9: failed dials are answered");
  ok(result_of(1, &r) && !r.accepted && r.stage == PH_STAGE_CONNECT &&
         r.code == PH_OPEN_CONNECTION_REFUSED,
     "TM-TEST-9: connect/connection_refused");
  ok(result_of(3, &r) && !r.accepted && r.stage == PH_STAGE_DNS &&
         r.code == PH_OPEN_HOST_UNREACHABLE,
     "TM-TEST-9: dns/host_unreachable");
  is_int(session_closed, -1, "TM-TEST-9, TM-P0-12: the session did not end");
  is_int(mt.closed, 0, "and the transport was not closed");
  open_stream(5, "ready.test", 80);
  ok(wait_frame(TM_OPEN_RESULT, 5, 5000) && result_of(5, &r) && r.accepted,
     "TM-TEST-9: the next open on the same session works");
  case_down();

  /* TM-TEST-11, TM-P0-3, TM-FAIL-1: queue full refuses only that stream. */
  reset_counts();
  session_up(strict, 1, 1, 60000);
  open_two_hanging();
  open_stream(5, "hang3.test", 80);
  ok(wait_frame(TM_OPEN_RESULT, 5, 5000), "TM-TEST-11: the third open (1 "
                                          "running, 1 pending) is answered");
  ok(result_of(5, &r) && !r.accepted && r.stage == PH_STAGE_QUEUE &&
         r.code == PH_OPEN_QUEUE_FULL && r.retryable,
     "TM-P0-3: at once with queue/queue_full (retryable)");
  is_int(f_opened, 1, "TM-P0-4: one dial running in the connector");
  is_int(find(TM_OPEN_RESULT, 1) + find(TM_OPEN_RESULT, 3) +
             find(TM_RESET, 1) + find(TM_RESET, 3),
         -4, "TM-TEST-11: the other two streams are untouched");
  is_int(session_closed, -1, "TM-FAIL-1: the session stays online");
  session_down();
  is_int(f_in_flight, 0, "nothing left in the connector");

  /* Legacy peer: queue full is a RESET of that stream only (TM-P0-3). */
  reset_counts();
  session_up(0, 1, 0, 60000);
  open_two_hanging();
  ok(wait_frame(TM_RESET, 3, 5000),
     "TM-TEST-11, TM-P0-3: legacy: the stream past the bound is RESET");
  is_int(find(TM_OPEN_RESULT, 3), -1, "TM-PROTO-16: no OPEN_RESULT to a "
                                      "legacy peer");
  is_int(find(TM_RESET, 1), -1, "TM-TEST-11: the first stream is untouched");
  is_int(session_closed, -1, "the session stays online");
  /* Legacy: a refused dial is a RESET too, nothing more (TM-P0-21). */
  session_down();
  session_up(0, 4, 4, 60000);
  open_stream(1, "refused.test", 80);
  ok(wait_frame(TM_RESET, 1, 5000), "TM-P0-21: legacy: a refused dial is a "
                                    "RESET of that stream");
  is_int(session_closed, -1, "and the session goes on");
  session_down();

  /* TM-P0-5: streams.open_timeout answers timeout and cancels the dial. */
  reset_counts();
  session_up(strict, 4, 4, 150);
  open_stream(1, "hang.test", 80);
  ok(wait_frame(TM_OPEN_RESULT, 1, 5000), "TM-P0-5: a dial that hangs is "
                                          "answered at open_timeout");
  ok(result_of(1, &r) && !r.accepted && r.code == PH_OPEN_TIMEOUT,
     "TM-P0-5: with code timeout");
  is_int(f_cancelled, 1, "TM-P0-5: and the connector's dial was cancelled");
  session_down();

  /* TM-PROTO-18: the server's ACK is the intersection. The subprotocol
   * gave open_result and flow control, the ACK grants neither: the next
   * open is answered legacy-style (no OPEN_RESULT, open at once). */
  reset_counts();
  session_up(strict, 4, 4, 60000);
  conn.caps = strict | TM_CAP_FAIR_WRITER;
  tm_metadata ack;
  memset(&ack, 0, sizeof(ack));
  uint8_t mp[256];
  int mn = tm_metadata_encode(&ack, 1, mp, sizeof(mp));
  feed(TM_AGENT_METADATA_ACK, 0, 0, mp, (size_t)mn);
  ok(conn.acked, "TM-PROTO-18: the ACK arrived");
  is_int(tm_session_caps(conn.s) & strict, 0,
         "TM-PROTO-18: an ACK without open_result and flow_control narrows "
         "the session's capabilities");
  is_int(conn.caps & strict, 0, "TM-PROTO-18: ... and the connection's");
  open_stream(1, "ready.test", 80);
  feed(TM_DATA, 0, 1, "early", 5);
  for (int i = 0; i < 500 && f_last_peer_fd < 0; i++)
    pump(10);
  got = f_last_peer_fd >= 0
            ? target_read(f_last_peer_fd, buf, sizeof(buf), 5000)
            : -1;
  ok(got == 5 && memcmp(buf, "early", 5) == 0,
     "TM-PROTO-18: the next open is legacy: DATA right after OPEN_STREAM "
     "reaches the target");
  pump(50);
  is_int(find(TM_OPEN_RESULT, 1), -1,
         "TM-PROTO-18: ... and no OPEN_RESULT is sent for it");
  is_int(find(TM_RESET, 1), -1, "TM-PROTO-18: ... nor a RESET");
  case_down();

  /* TM-PROTO-18: an ACK after a stream started cannot change the streams'
   * mode: the session keeps the subprotocol's capabilities. */
  reset_counts();
  session_up(strict, 4, 4, 60000);
  conn.caps = strict | TM_CAP_FAIR_WRITER;
  open_stream(1, "ready.test", 80);
  ok(wait_frame(TM_OPEN_RESULT, 1, 5000), "a strict open before the ACK");
  feed(TM_AGENT_METADATA_ACK, 0, 0, mp, (size_t)mn);
  is_int(tm_session_caps(conn.s) & strict, strict,
         "TM-PROTO-18: an ACK after the first stream leaves the caps as "
         "they were");
  open_stream(3, "ready.test", 80);
  ok(wait_frame(TM_OPEN_RESULT, 3, 5000),
     "TM-PROTO-18: ... and the next open is still answered by OPEN_RESULT");
  if (f_last_peer_fd >= 0)
    case_down();

  const char *mt_text = ph_mock_metrics_text(m);
  like(mt_text, "tunnelmesh_stream_open_total{component=\"agent\"",
       "TM-OBS: opens counted with component=agent");
  like(mt_text, "tunnelmesh_stream_queue_wait_seconds_count{component=\"agent\"}",
       "TM-OBS: the dial queue wait is recorded");

  ph_mock_stop(m);
  ph_mock_free(m);
  return done_testing();
}
