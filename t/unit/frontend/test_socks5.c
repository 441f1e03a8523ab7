/* SPDX-License-Identifier: BSD-2-Clause */
/* The socks5 module (built socks5.so) through the mock host, with a fake
 * connector and a fake authorizer linked into this test: strict open (no
 * success before the connector says open), every reply code of the
 * mapping, pipelined bytes going to the target first, cancellation when
 * the client leaves during the open, hostile handshakes, the handshake
 * deadline, max_clients, username/password, the listener announcement
 * and the metrics. Covers TM-PROTO-7, TM-PROTO-30..37, TM-P0-5 (the open
 * is cancelled when the client goes away), TM-SEC-5 (max_clients),
 * TM-OBS-1/2/10..12 (metric names and labels), TM-OBS-18, and TM-SEC-7
 * (a client that leaves while it is not read frees everything) with the
 * guard rule (modules/lib/guard.h): a service answering inside the
 * call that started it may end the connection without a use-after-free
 * (run under ASan to see it). And the connector's leases (connector.h
 * minor 3; issue 13): every open names the listener and asks for one;
 * the relay tells first_byte once and ends it once (CLOSED for EOF both
 * ways), the drain's cut ends it CLIENT_ERROR, and after the module is
 * gone no lease is left or was ended twice. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <proxyhost/authorizer.h>
#include <proxyhost/connector.h>
#include <proxyhost/mock.h>

#include "fake_authorizer.h"
#include "fake_connector.h"
#include "file_test.h"
#include "frontend_script.h"
#include "mock_test.h"
#include "sock_test.h"
#include "tap.h"

#define SOCKS5_SO PH_BUILD_MODULES "/socks5/.libs/socks5.so"

/* ---- fake connector + authorizer ------------------------------------- */

/* Host names pick the connector's answer: "ok.fake", "hang.fake"
 * (never), "code-N" (that open code), "held.fake" (ok when the test calls
 * fake_connector_release(), so no wall-clock time decides the order),
 * "sync-N" (code N, answered inside open() itself, against connector.h's
 * contract, to test the guard); any other name does not resolve
 * (host_unreachable). Answers come after 1 ms. */
static const fc_row connector_rows[] = {
    {.host = "ok.fake"},
    {.host = "hang.fake", .when = FC_NEVER},
    {.host = "held.fake", .when = FC_HELD},
    {.host = "code-*", .code_from_host = 1},
    {.host = "sync-*", .code_from_host = 1, .when = FC_INSIDE},
    {.host = "*", .code = PH_OPEN_HOST_UNREACHABLE},
    {.host = NULL}};

/* alice/secret is allowed, "down" finds the store unavailable, "slow"
 * answers late (to test cancellation), "sync" is refused inside
 * check_password itself (against authorizer.h's contract, to test the
 * guard); anyone else is denied. */
static const fa_row authorizer_rows[] = {
    {.user = "alice", .pass = "secret", .verdict = PH_AUTH_ALLOW},
    {.user = "down", .pass = NULL, .verdict = PH_AUTH_UNAVAILABLE},
    {.user = "sync", .pass = NULL, .verdict = PH_AUTH_DENY, .when = FA_INSIDE},
    {.user = "slow", .pass = NULL, .verdict = PH_AUTH_DENY, .delay_ms = 5000},
    {.user = NULL}};

static fake_connector FC;
static fake_authorizer FA;

static struct fake {
  const ph_api *api;
  ph_ctx *ctx;
  /* Listener announcements seen. */
  int announced, unannounced;
  uint16_t port;
} F;

static void on_listener(const ph_topic *t, const void *payload, void *arg) {
  (void)t;
  (void)arg;
  const ph_listener_event *ev = payload;
  if (ev->bound) {
    const struct sockaddr_in *a = (const void *)ev->addr;
    F.announced++;
    F.port = ntohs(a->sin_port);
  } else {
    F.unannounced++;
  }
}

static int fake_init(ph_ctx *ctx, const ph_api *a, void **state) {
  memset(&F, 0, sizeof(F));
  F.api = a;
  F.ctx = ctx;
  *state = NULL;
  ph_topic *t = a->topic(ctx, PH_LISTENER_TOPIC, PH_LISTENER_TYPE);
  if (!t || a->subscribe(ctx, t, on_listener, NULL) <= 0 ||
      fake_connector_serve(&FC, a, ctx, connector_rows) < 0 ||
      fake_authorizer_serve(&FA, a, ctx, authorizer_rows) < 0)
    return PH_EINVAL;
  return PH_OK;
}

static void fake_destroy(void *state) {
  (void)state;
  fake_connector_free(&FC);
  fake_authorizer_free(&FA);
}

MOCK_TEST_MODULE(fake_mod, "fake", "1.0.0",
                 .provides = MOCK_TEST_NAMES("connector", "authorizer"),
                 .init = fake_init, .destroy = fake_destroy);

/* ---- harness ----------------------------------------------------------- */

static ph_mock *M;
static char err[8192];
static int target_l = -1; /* the fake targets' listening socket */
static uint16_t target_port;

static ph_mock *boot(const char *extra) {
  char text[2048];
  snprintf(text, sizeof(text),
           "[proxyhost]\nmodules = %s\ndrain_timeout = 1s\n"
           "[socks5]\nlisten = 127.0.0.1:0\n%s",
           SOCKS5_SO, extra);
  err[0] = '\0';
  return mock_test_start(text, &fake_mod, err, sizeof err);
}

static void run(int ms) { ph_mock_run_for(M, ms); }

static int client(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons(F.port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
    close(fd);
    return -1;
  }
  fcntl(fd, F_SETFL, O_NONBLOCK);
  return fd;
}

/* Runs the loop until fd has n bytes or EOF, for at most ms. Returns the
 * count read (a short count: EOF or timeout). *eof set on EOF. */
static int expect(int fd, uint8_t *buf, int n, int ms, int *eof) {
  int got = 0;
  if (eof)
    *eof = 0;
  for (int t = 0; t <= ms && got < n; t += 2) {
    ssize_t r = read(fd, buf + got, (size_t)(n - got));
    if (r > 0) {
      got += (int)r;
      continue;
    }
    if (r == 0) {
      if (eof)
        *eof = 1;
      break;
    }
    run(2);
  }
  return got;
}

/* EOF (or reset) within ms, after reading and dropping anything. */
static int closed_within(int fd, int ms) {
  uint8_t b[256];
  for (int t = 0; t <= ms; t += 2) {
    ssize_t r = read(fd, b, sizeof(b));
    if (r == 0 || (r < 0 && errno != EAGAIN))
      return 1;
    if (r < 0)
      run(2);
  }
  return 0;
}

static void send_all(int fd, const void *p, size_t n) {
  if (write(fd, p, n) != (ssize_t)n)
    printf("# short write\n");
}

#define SEND_LIT(fd, lit) send_all((fd), (lit), sizeof(lit) - 1)

/* Greeting with no-auth, then the method answer. */
static int hello(int fd) {
  uint8_t b[2];
  send_all(fd, "\x05\x01\x00", 3);
  return expect(fd, b, 2, 1000, NULL) == 2 && b[0] == 5 && b[1] == 0;
}

static void connect_domain(int fd, const char *host, uint16_t port) {
  uint8_t req[300] = {5, 1, 0, 3, (uint8_t)strlen(host)};
  size_t n = 5;
  memcpy(req + n, host, strlen(host));
  n += strlen(host);
  req[n++] = (uint8_t)(port >> 8);
  req[n++] = (uint8_t)port;
  send_all(fd, req, n);
}

/* The reply's REP byte, or -1 when none came. */
static int reply_code(int fd, int ms) {
  uint8_t r[10];
  int n = expect(fd, r, 10, ms, NULL);
  return n == 10 && r[0] == 5 ? r[1] : -1;
}

static int accept_target(int ms) {
  for (int t = 0; t <= ms; t += 2) {
    int fd = accept4(target_l, NULL, NULL, SOCK_NONBLOCK);
    if (fd >= 0)
      return fd;
    run(2);
  }
  return -1;
}

/* One exposition line, checked without printing the whole text. */
static void has_metric(const char *line, const char *name) {
  const char *t = ph_mock_metrics_text(M);
  if (!ok(strstr(t, line) != NULL, name))
    printf("#   missing: %s\n", line);
}

/* A client bound to src (127.0.0.2: loopback has all of 127/8). */
static int client_from(const char *src) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in b = {.sin_family = AF_INET};
  inet_pton(AF_INET, src, &b.sin_addr);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons(F.port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (bind(fd, (struct sockaddr *)&b, sizeof(b)) < 0 ||
      connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
    close(fd);
    return -1;
  }
  fcntl(fd, F_SETFL, O_NONBLOCK);
  return fd;
}

static char logpath[256];


/* allow_clients at accept (before a byte is read or written), reload,
 * and the access line's fields with and without log_target (TM-SEC-9). */
static void test_allow_clients(void) {
  char extra[512];
  snprintf(logpath, sizeof(logpath), "/tmp/test_socks5_acl.%d.log",
           (int)getpid());
  unlink(logpath);
  snprintf(extra, sizeof(extra),
           "allow_clients = 127.0.0.1/32, 2001:db8::/32\n"
           "[log]\nlevel = debug\nfile = %s\n",
           logpath);
  M = boot(extra);
  ok(M != NULL, "allow_clients = 127.0.0.1/32, 2001:db8::/32 starts");
  if (!M)
    return;
  int fd = client_from("127.0.0.2");
  ok(fd >= 0, "a client from 127.0.0.2 connects (the kernel accepts)");
  send_all(fd, "\x05\x01\x00", 3);
  uint8_t b[16];
  int eof = 0;
  is_int(expect(fd, b, 2, 1000, &eof), 0, "127.0.0.2: no byte answered");
  ok(eof, "127.0.0.2: closed at accept");
  close(fd);
  has_metric("proxyhost_frontend_clients_denied_total{reason=\"not_allowed\"} 1",
             "the refusal is counted");
  fd = client();
  ok(fd >= 0 && hello(fd), "127.0.0.1 is allowed");
  connect_domain(fd, "ok.fake", target_port);
  int t = accept_target(1000);
  is_int(reply_code(fd, 1000), 0, "and its stream opens");
  send_all(fd, "ping", 4);
  uint8_t got[4];
  ok(t >= 0 && expect(t, got, 4, 1000, NULL) == 4, "bytes go up");
  close(t);
  close(fd);
  run(50);
  char *log = file_test_slurp(logpath);
  like(log, "msg=\"client refused: not in allow_clients\" client=127.0.0.2:",
       "the refused client is logged with its address");
  like(log, "level=info module=socks5 msg=access stream=1 client=127.0.0.1:",
       "one access line with the stream id and the client");
  like(log, "user=- method=CONNECT status=succeeded status_code=0 result=success "
            "bytes_up=4 bytes_down=0 duration_us=",
       "user, command, reply, result, bytes, duration");
  like(log, "msg=\"socks5 request\" stream=1\n",
       "the debug line carries the same stream id, nothing else");
  unlike(log, "ok.fake", "no target in any line, debug included");
  free(log);
  char conf[sizeof(SOCKS5_SO) + 512]; /* the build path may be long */
  snprintf(conf, sizeof(conf),
           "[proxyhost]\nmodules = " SOCKS5_SO "\n[socks5]\n"
           "listen = 127.0.0.1:1\nallow_clients = 127.0.0.0/8\n"
           "log_target = true\n[log]\nlevel = debug\nfile = %s\n",
           logpath);
  is_int(ph_mock_reload(M, conf, NULL, 0), 0,
         "reload: allow_clients = 127.0.0.0/8");
  fd = client_from("127.0.0.2");
  ok(fd >= 0 && hello(fd), "127.0.0.2 is allowed after the reload");
  connect_domain(fd, "ok.fake", target_port);
  t = accept_target(1000);
  is_int(reply_code(fd, 1000), 0, "its stream opens");
  close(t);
  close(fd);
  run(50);
  log = file_test_slurp(logpath);
  char want[128];
  snprintf(want, sizeof(want), "target=ok.fake:%u\n", (unsigned)target_port);
  like(log, want, "log_target: the access line ends with the target");
  like(log, "client=127.0.0.2:", "from 127.0.0.2");
  snprintf(want, sizeof(want), "msg=\"socks5 request\" stream=2 target=ok.fake:%u",
           (unsigned)target_port);
  like(log, want, "and the debug line carries it");
  free(log);
  snprintf(conf, sizeof(conf),
           "[proxyhost]\nmodules = " SOCKS5_SO "\n[socks5]\n"
           "listen = 127.0.0.1:1\nallow_clients = 127.0.0.0/8, nope\n"
           "[log]\nlevel = debug\nfile = %s\n",
           logpath);
  ok(ph_mock_reload(M, conf, NULL, 0) != 0,
     "a reload with a bad network is refused");
  fd = client_from("127.0.0.2");
  ok(fd >= 0 && hello(fd), "and the list in force stays");
  close(fd);
  run(20);
  ph_mock_free(M);
  M = NULL;
  unlink(logpath);
}

/* ---- tests ------------------------------------------------------------- */

static void test_connect_and_relay(void) {
  int fd = client();
  ok(fd >= 0 && hello(fd), "no-auth greeting answered 0x00");
  /* The request and pipelined bytes in one write. */
  uint8_t req[64] = {5, 1, 0, 3, 7, 'o', 'k', '.', 'f', 'a', 'k', 'e'};
  req[12] = (uint8_t)(target_port >> 8);
  req[13] = (uint8_t)target_port;
  memcpy(req + 14, "EARLY", 5);
  send_all(fd, req, 19);
  uint8_t r[10];
  is_int(expect(fd, r, 10, 1000, NULL), 10, "a 10-byte IPv4 reply");
  ok(r[0] == 5 && r[1] == 0 && r[3] == 1, "success, ATYP IPv4");
  is_str(FC.last.host, "ok.fake", "the name reached the connector as sent");
  struct sockaddr_in bnd;
  memcpy(&bnd.sin_addr, r + 4, 4);
  ok(bnd.sin_addr.s_addr == htonl(INADDR_LOOPBACK) && (r[8] || r[9]),
     "BND.ADDR/PORT is the target socket's local address");
  int t = accept_target(1000);
  ok(t >= 0, "the fake connector dialled the target");
  uint8_t b[16] = {0};
  is_int(expect(t, b, 5, 1000, NULL), 5, "pipelined bytes reach the target");
  ok(memcmp(b, "EARLY", 5) == 0, "first, and intact");
  send_all(t, "pong", 4);
  ok(expect(fd, b, 4, 1000, NULL) == 4 && memcmp(b, "pong", 4) == 0,
     "the target's bytes reach the client");
  has_metric("proxyhost_stream_active{component=\"client\"} 1",
             "one active stream");
  close(fd);
  shutdown(t, SHUT_WR);
  int eof = 0;
  expect(t, b, 1, 1000, &eof);
  ok(eof, "closing the client closes the target side");
  close(t);
  run(20);
  has_metric("proxyhost_stream_active{component=\"client\"} 0",
             "no active stream after close");
  has_metric(
      "tunnelmesh_stream_open_total{component=\"client\",result=\"success\","
      "error_class=\"ok\",open_mode=\"strict\"} 1",
      "the open is counted with its class");
  has_metric(
      "tunnelmesh_stream_stage_duration_seconds_count{component=\"client\","
      "stage=\"socks5_handshake\",result=\"success\",scope=\"local\"} 1",
      "handshake stage recorded");
  has_metric(
      "tunnelmesh_stream_stage_duration_seconds_count{component=\"client\","
      "stage=\"open\",result=\"success\",scope=\"local\"} 1",
      "open stage recorded");
  has_metric(
      "tunnelmesh_stream_stage_duration_seconds_count{component=\"client\","
      "stage=\"ttfb\",result=\"success\",scope=\"local\"} 1",
      "ttfb recorded");
  has_metric(
      "proxyhost_stream_bytes_total{component=\"client\",direction=\"up\","
      "protocol=\"tcp\"} 5",
      "bytes up counted at close");
  has_metric(
      "proxyhost_stream_bytes_total{component=\"client\",direction=\"down\","
      "protocol=\"tcp\"} 4",
      "bytes down counted at close");
  ok(strstr(ph_mock_metrics_text(M), "ok.fake") == NULL,
     "no target host in the metrics");
  is_str(FC.last.listener, "socks5", "lease: the listener is socks5");
  ok(FC.leases_asked == 1 && FC.lease.n == 1, "lease: asked for and given");
  ok(FC.lease.first_bytes == 1 && FC.lease.ends[PH_LEASE_END_CLOSED] == 1 &&
         fake_lease_live(&FC.lease) == 0,
     "lease: first_byte once (pong), ended CLOSED (EOF both ways)");
}

/* The no-auth greeting and its answer, the rows most cases start with. */
#define HELLO                                                                  \
  FS_CONNECT(), FS_SEND_LIT("\x05\x01\x00"), FS_EXPECT_LIT("\x05\x00", NULL)
/* A CONNECT to a name (its length byte first, as its own literal: "\x06"
 * "code-7") and port 80. */
#define CONNECT_80(name)                                                       \
  FS_SEND(("\x05\x01\x00\x03" name "\x00\x50"), sizeof(name) + 5)
/* A 10-byte reply whose REP is rep. */
#define REPLY(rep, what) FS_EXPECT_PREFIX(("\x05" rep), 2, 10, what)

/* A request for ok.fake:80 and 1500 pipelined bytes, more than the
 * handshake buffer's room (connect_pipelined's bytes, as a literal). */
#define P10 "pppppppppp"
#define P100 P10 P10 P10 P10 P10 P10 P10 P10 P10 P10
#define P500 P100 P100 P100 P100 P100
#define PIPELINED_OK "\x05\x01\x00\x03\x07ok.fake\x00\x50" P500 P500 P500

/* The driver's state for the next run (large: one, not on the stack). */
static fs_ctx *script(void) {
  static fs_ctx s;
  s.m = M;
  s.port = F.port;
  s.fc = &FC;
  s.target_l = target_l;
  s.target_port = target_port;
  return &s;
}

static void test_strict_open(void) {
  char req[16] = "\x05\x01\x00\x03\x09held.fake";
  req[14] = (char)(target_port >> 8);
  req[15] = (char)target_port;
  size_t n = sizeof(req);
  const fs_row rows[] = {
      HELLO,
      FS_SEND(req, n),
      FS_SILENT(60, "TM-PROTO-37: no reply while the connector has not answered"),
      FS_RELEASE(1, "the connector answers now"),
      REPLY("\x00", "success once it said open"),
      FS_END};
  fs_run(script(), rows);
  int t = accept_target(1000);
  if (t >= 0)
    close(t);
  run(20);
}

static void test_reply_codes(void) {
  static const struct {
    int code;
    int rep;
    const char *name;
  } tab[] = {
      {PH_OPEN_FORBIDDEN, 0x02, "TM-PROTO-31 forbidden -> 0x02"},
      {PH_OPEN_NETWORK_UNREACHABLE, 0x03, "TM-PROTO-32 network -> 0x03"},
      {PH_OPEN_HOST_UNREACHABLE, 0x04, "TM-PROTO-33 host -> 0x04"},
      {PH_OPEN_AGENT_OFFLINE, 0x04, "TM-PROTO-33 agent_offline -> 0x04"},
      {PH_OPEN_CONNECTION_REFUSED, 0x05, "TM-PROTO-34 refused -> 0x05"},
      {PH_OPEN_TIMEOUT, 0x06, "TM-PROTO-35 timeout -> 0x06"},
      {PH_OPEN_QUEUE_FULL, 0x01, "TM-PROTO-35 queue_full -> 0x01"},
      {PH_OPEN_INTERNAL_ERROR, 0x01, "TM-PROTO-36 internal -> 0x01"},
      {PH_OPEN_UNSUPPORTED_CAPABILITY, 0x01, "TM-PROTO-36 other -> 0x01"},
  };
  for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
    char req[64], rep[2] = {5, (char)tab[i].rep};
    int hl = snprintf(req + 5, sizeof(req) - 7, "code-%d", tab[i].code);
    memcpy(req, "\x05\x01\x00\x03", 4);
    req[4] = (char)hl;
    req[5 + hl] = 0;
    req[6 + hl] = 80;
      const fs_row rows[] = {HELLO,
                           FS_SEND(req, (size_t)hl + 7),
                           FS_EXPECT_PREFIX(rep, 2, 10, tab[i].name),
                           FS_CLOSED("and the connection is closed"),
                           FS_END};
    fs_run(script(), rows);
  }
  has_metric(
      "tunnelmesh_stream_open_total{component=\"client\",result=\"failure\","
      "error_class=\"queue_full\",open_mode=\"strict\"} 1",
      "failed opens counted by error_class");
  has_metric(
      "tunnelmesh_stream_open_total{component=\"client\",result=\"rejected\","
      "error_class=\"forbidden\",open_mode=\"strict\"} 1",
      "forbidden is result=rejected");
}

static void test_cancel(void) {
  static const fs_row rows[] = {
      HELLO,
      CONNECT_80("\x09" "hang.fake"),
      FS_RUN(20),
      FS_PENDING(1, "the open hangs in the connector"),
      FS_CLOSE(),
      FS_RUN(20),
      FS_CANCELS(1, "TM-P0-5: the client leaving cancels the open"),
      FS_PENDING(0, "nothing left pending"),
      FS_END};
  fs_run(script(), rows);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A request for host:port followed by n pipelined bytes, in one write:
 * with n above the handshake buffer's room, the buffer is full during the
 * open and socks5 stops reading the client. */
static void connect_pipelined(int fd, const char *host, uint16_t port,
                              size_t n) {
  uint8_t req[300 + 2048] = {5, 1, 0, 3, (uint8_t)strlen(host)};
  size_t len = 5;
  memcpy(req + len, host, strlen(host));
  len += strlen(host);
  req[len++] = (uint8_t)(port >> 8);
  req[len++] = (uint8_t)port;
  memset(req + len, 'p', n);
  send_all(fd, req, len + n);
}

/* D4: the client's bytes filled the handshake buffer, so socks5 does not
 * read it while the open hangs; it still notices the client leave (a
 * hangup probe every 200 ms) and cancels the open. */
static void test_full_buffer_hangup(void) {
  int cancels = FC.cancels;
  int fd = client();
  hello(fd);
  connect_pipelined(fd, "hang.fake", 80, 1500);
  run(50);
  is_int(fake_connector_pending(&FC), 1, "a full buffer during a hanging open");
  has_metric("proxyhost_socks5_clients 1", "one client");
  close(fd);
  double t0 = now_s();
  for (int t = 0; t < 1500 && fake_connector_pending(&FC) > 0; t += 5)
    run(5);
  double waited = now_s() - t0;
  ok(fake_connector_pending(&FC) == 0 && FC.cancels == cancels + 1,
     "TM-SEC-7: a client that filled its buffer and left during a hanging "
     "open cancels it: after close no dial, writer or timer remains");
  printf("# noticed after %.3f s\n", waited);
  ok(waited < 0.6, "noticed within a few hangup probes (200 ms each)");
  run(10);
  has_metric("proxyhost_socks5_clients 0", "TM-SEC-7: the clients gauge drops");
}

/* The connector answers inside open() (which connector.h forbids), and
 * the answer ends the connection there: the client sent everything and
 * shut its side, so the error reply's linger sees EOF at once. The
 * request's caller then runs on an ended connection, not freed memory. */
static void test_sync_open(void) {
  int fd = client();
  char host[32];
  snprintf(host, sizeof(host), "sync-%d", PH_OPEN_CONNECTION_REFUSED);
  uint8_t msg[64] = {5, 1, 0, 5, 1, 0, 3, (uint8_t)strlen(host)};
  size_t n = 8;
  memcpy(msg + n, host, strlen(host));
  n += strlen(host);
  msg[n++] = 0;
  msg[n++] = 80;
  send_all(fd, msg, n);
  shutdown(fd, SHUT_WR);
  uint8_t b[12];
  int got = expect(fd, b, 12, 1000, NULL);
  ok(got == 12 && b[1] == 0 && b[3] == 0x05,
     "a connector failing inside open(), the connection ending inside that "
     "answer: the reply is sent, no use-after-free");
  ok(closed_within(fd, 1000), "and the connection is closed");
  close(fd);
  run(10);
  has_metric("proxyhost_socks5_clients 0", "nothing left of it");

  /* Success inside open(): the relay starts inside the request's step. */
  fd = client();
  hello(fd);
  connect_domain(fd, "sync-0", target_port);
  is_int(reply_code(fd, 1000), 0,
         "a connector answering ok inside open(): success reply");
  int t = accept_target(1000);
  send_all(fd, "up", 2);
  ok(t >= 0 && expect(t, b, 2, 1000, NULL) == 2 && memcmp(b, "up", 2) == 0,
     "and the stream is relayed");
  close(fd);
  if (t >= 0)
    close(t);
  run(20);
  has_metric("proxyhost_socks5_clients 0", "the relayed client ended");
}

static const fs_row command_rows[] = {
    HELLO,
    FS_SEND_LIT("\x05\x02\x00\x01\x7f\x00\x00\x01\x00\x50"),
    REPLY("\x07", "TM-PROTO-7: BIND -> 0x07"),
    FS_CLOSED("then closed"),
    HELLO,
    FS_SEND_LIT("\x05\x03\x00\x01\x7f\x00\x00\x01\x00\x50"),
    REPLY("\x07", "TM-PROTO-7: UDP ASSOCIATE -> 0x07"),
    HELLO,
    FS_SEND_LIT("\x05\x01\x00\x07\x01\x02"),
    REPLY("\x08", "unknown ATYP -> 0x08"),
    FS_CONNECT(),
    FS_SEND_LIT("\x05\x01\x02"),
    FS_EXPECT_LIT("\x05\xff",
                  "only username/password offered with auth=none -> 0xFF"),
    FS_CLOSED("then closed"),
    FS_END};

static void test_commands(void) {
  fs_run(script(), command_rows);
}

static void test_hostile(void) {
  /* A good client in the middle of hostile ones. */
  int good = client();
  hello(good);
  const char *junk[] = {"GET / HTTP/1.1\r\n\r\n", "\x04\x01\x00\x50",
                        "\x05\x00", "\x05\x01\x00\x05\x01\x00\x03\x00\x00\x50"};
  const size_t lens[] = {18, 4, 2, 10};
  int all_closed = 1;
  for (int i = 0; i < 4; i++) {
    int fd = client();
    send_all(fd, junk[i], lens[i]);
    if (!closed_within(fd, 1500))
      all_closed = 0;
    close(fd);
  }
  ok(all_closed, "garbage, SOCKS4, no methods, empty name: each closed");
  /* Oversized: a 255-byte name plus many pipelined bytes. */
  int fd = client();
  hello(fd);
  uint8_t big[4096];
  memset(big, 'a', sizeof(big));
  memcpy(big, "\x05\x01\x00\x03\xff", 5);
  big[5 + 255] = 0;
  big[5 + 256] = 80;
  send_all(fd, big, sizeof(big));
  is_int(reply_code(fd, 1000), 0x04,
         "a 255-byte name plus 4 KiB pipelined: parsed from a bounded "
         "buffer (and unresolvable: 0x04)");
  close(fd);
  connect_domain(good, "ok.fake", target_port);
  is_int(reply_code(good, 1000), 0, "the good client was not disturbed");
  int t = accept_target(1000);
  close(good);
  if (t >= 0)
    close(t);
  /* Truncated then silent: the handshake deadline closes it. */
  fd = client();
  send_all(fd, "\x05\x02\x00", 3);
  ok(closed_within(fd, 3000), "a truncated greeting hits the deadline");
  close(fd);
  run(20);
  has_metric(
      "tunnelmesh_stream_stage_duration_seconds_count{component=\"client\","
      "stage=\"socks5_handshake\",result=\"timeout\",scope=\"local\"} 1",
      "the deadline counts as a handshake timeout");
}

static void test_max_clients(void) {
  int fds[4];
  for (int i = 0; i < 4; i++)
    fds[i] = client();
  run(20);
  int fifth = client();
  ok(closed_within(fifth, 1000), "over max_clients: closed at once");
  close(fifth);
  ok(hello(fds[0]), "the admitted clients still work");
  for (int i = 0; i < 4; i++)
    close(fds[i]);
  run(1100);
  has_metric("proxyhost_socks5_clients_refused_total 1", "the refusal is counted");
  int again = client();
  ok(hello(again), "room again once clients left");
  close(again);
  run(20);
}

/* The authorizer's cancels since the MARK row. */
static int fa_mark(fs_ctx *s) {
  s->mark = FA.cancels;
  return 1;
}
static int fa_cancelled(fs_ctx *s) { return FA.cancels == s->mark + 1; }

/* A password greeting pipelined with user "slow" (answered late). */
#define SLOW_CHECK                                                             \
  FS_SEND_LIT("\x05\x01\x02\x01\x04"                                          \
              "slow"                                                           \
              "\x01"                                                           \
              "x")

static const fs_row password_rows[] = {
    FS_CONNECT(),
    FS_SEND_LIT("\x05\x02\x00\x02"),
    FS_EXPECT_LIT("\x05\x02",
                  "auth=password picks 0x02 even when 0x00 is offered"),
    FS_SEND_LIT("\x01\x05"
                "alice"
                "\x06"
                "secret"),
    FS_EXPECT_LIT("\x01\x00", "right credentials accepted"),
    CONNECT_80("\x06" "code-7"),
    REPLY("\x05", "then CONNECT goes on"),
    FS_LAST_PRINCIPAL("alice", "the principal reaches the connector"),

    FS_CONNECT(),
    FS_SEND_LIT("\x05\x01\x02\x01\x05"
                "alice"
                "\x05"
                "wrong"),
    FS_EXPECT_LIT("\x05\x02", "pipelined greeting"),
    FS_EXPECT_LIT("\x01\x01", "wrong password refused"),
    FS_CLOSED("and closed"),

    FS_CONNECT(),
    FS_SEND_LIT("\x05\x01\x00"),
    FS_EXPECT_LIT("\x05\xff", "no-auth only offered with auth=password -> 0xFF"),

    FS_CHECK(fa_mark, NULL),
    FS_CONNECT(),
    SLOW_CHECK,
    FS_RUN(30),
    FS_CLOSE(),
    FS_RUN(20),
    FS_CHECK(fa_cancelled, "a client leaving during the check cancels it"),

    /* The same with the buffer full (a pipelined request and more): the
     * client is not read during the check, a hangup probe notices it. */
    FS_CHECK(fa_mark, NULL),
    FS_CONNECT(),
    SLOW_CHECK,
    FS_SEND(PIPELINED_OK, sizeof(PIPELINED_OK) - 1),
    FS_RUN(50),
    FS_CLOSE(),
    FS_WAIT(fa_cancelled, 1500,
            "TM-SEC-7: a client that filled its buffer and left during the "
            "check cancels it within the probe interval"),

    /* An authorizer refusing inside check_password (which authorizer.h
     * forbids), the connection ending inside that answer (the client shut
     * its side, so the linger sees EOF at once). */
    FS_CONNECT(),
    FS_SEND_LIT("\x05\x01\x02\x01\x04"
                "sync"
                "\x01"
                "x"),
    FS_SHUT(),
    FS_EXPECT_LIT("\x05\x02\x01\x01",
                  "an authorizer refusing inside check_password, the "
                  "connection ending inside that answer: refused, no "
                  "use-after-free"),
    FS_CLOSED("and closed"),
    FS_CLOSE(),
    FS_RUN(10),
    FS_METRIC_IS("proxyhost_socks5_clients", "", 0,
                 "no client left after the checks"),
    FS_END};

static void test_password(void) {
  fs_run(script(), password_rows);
}

static double cpu_seconds(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* Out of fds: the listener pauses instead of spinning on a readable
 * listening socket, and accepts again once fds are free. The test and
 * the module share this process, so the test fills the fd table itself
 * (after making the client socket it needs). */
static void test_emfile(void) {
  int c = socket(AF_INET, SOCK_STREAM, 0);
  struct rlimit old;
  getrlimit(RLIMIT_NOFILE, &old);
  int top = c;
  for (int fd = 0; fd < 4096; fd++)
    if (fcntl(fd, F_GETFD) >= 0 && fd > top)
      top = fd;
  struct rlimit low = {(rlim_t)top + 1, old.rlim_max};
  setrlimit(RLIMIT_NOFILE, &low);
  int fill[4096], n_fill = 0;
  while (n_fill < 4096 && (fill[n_fill] = dup(0)) >= 0)
    n_fill++; /* the holes below the limit: now no fd is free */
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons(F.port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  int connected = connect(c, (struct sockaddr *)&a, sizeof(a)) == 0;
  double cpu0 = cpu_seconds();
  run(500);
  double cpu = cpu_seconds() - cpu0;
  ok(connected && cpu < 0.25,
     "EMFILE: accepting pauses instead of spinning the loop");
  if (cpu >= 0.25)
    printf("#   %.3f s of CPU in 0.5 s\n", cpu);
  while (n_fill > 0)
    close(fill[--n_fill]);
  setrlimit(RLIMIT_NOFILE, &old);
  fcntl(c, F_SETFL, O_NONBLOCK);
  ok(hello(c), "accepting resumes once fds are free again");
  close(c);
  run(20);
}

static void test_drain(void) {
  int fd = client();
  hello(fd);
  connect_domain(fd, "ok.fake", target_port);
  reply_code(fd, 1000);
  int t = accept_target(1000);
  int idle = client(); /* still in its handshake */
  run(10);
  /* The stop drains: the stream is still open, so it waits until the
   * drain deadline (1s) and reports the cut. */
  int cut = FC.lease.ends[PH_LEASE_END_CLIENT_ERROR];
  is_int(ph_mock_stop(M), PH_ELIMIT, "an open stream holds the drain");
  ok(closed_within(idle, 100), "clients still in their handshake are closed");
  is_int(fake_lease_live(&FC.lease), 1,
         "lease: the drained stream's is still live");
  ph_mock_free(M); /* the destroy cuts it */
  M = NULL;
  is_int(FC.lease.ends[PH_LEASE_END_CLIENT_ERROR], cut + 1,
         "lease: the stream cut at destroy ends CLIENT_ERROR");
  ok(F.unannounced == 1, "the listener announced its close");
  close(fd);
  close(idle);
  if (t >= 0)
    close(t);
}

static int open_target_listener(void) {
  int port = 0;
  target_l = sock_test_listen(&port, 64, 1);
  target_port = (uint16_t)port;
  return target_l < 0 ? -1 : 0;
}

int main(void) {
  plan_lazy();
  if (access(SOCKS5_SO, R_OK) != 0) {
    printf("1..0 # SKIP socks5 module not built\n");
    return 0;
  }
  err[0] = '\0';
  if (open_target_listener() < 0) {
    printf("Bail out! no target listener\n");
    return 1;
  }
  M = boot("max_clients = 4\nhandshake_timeout = 1s\n");
  if (!M) {
    printf("Bail out! mock host\n");
    return 1;
  }
  ok(F.announced == 1 && F.port > 0,
     "the listener announced its bound address on net.listener");
  test_connect_and_relay();
  test_strict_open();
  test_reply_codes();
  test_cancel();
  test_full_buffer_hangup();
  test_sync_open();
  test_commands();
  test_hostile();
  test_max_clients();
  test_emfile();
  test_drain();
  ok(FC.lease.n > 1 && fake_lease_live(&FC.lease) == 0 && FC.lease.broken == 0,
     "lease: every lease given ended once, none told first_byte twice");

  test_allow_clients();

  M = boot("auth = password\n");
  ok(M != NULL, "auth = password starts with an authorizer");
  if (M) {
    test_password();
    is_int(ph_mock_reload(M,
                          "[proxyhost]\nmodules = " SOCKS5_SO "\n"
                          "[socks5]\nlisten = 127.0.0.1:1\nauth = password\n"
                          "handshake_timeout = 200ms\n",
                          NULL, 0),
           0, "reload: new timeouts apply, the listener stays");
    static const fs_row rows[] = {
        FS_CONNECT(),
        FS_SEND_LIT("\x05\x01\x02"),
        FS_EXPECT_LIT("\x05\x02",
                      "still listening on the old address after the reload"),
        FS_CLOSED("the new handshake deadline applies"),
        /* Probing for a hangup during a check keeps the handshake
         * deadline. */
        FS_CHECK(fa_mark, NULL),
        FS_CONNECT(),
        SLOW_CHECK,
        FS_SEND(PIPELINED_OK, sizeof(PIPELINED_OK) - 1),
        FS_CLOSED("a full buffer during a slow check: the deadline still "
                  "closes it"),
        FS_CHECK(fa_cancelled, "and the check is cancelled"),
        FS_END};
      fs_run(script(), rows);
    ph_mock_free(M);
  }
  close(target_l);
  return done_testing();
}
