/* SPDX-License-Identifier: BSD-2-Clause */
/* The direct connector (modules/direct/direct.so) through the mock host,
 * with real sockets on 127.0.0.1 and a real DNS server on loopback
 * (t/lib/dnsd.py) that answers, refuses or hangs on purpose. The system's
 * resolver is never used: every configuration names dnsd.
 *
 * Blackhole for connect timeouts: a listener on 127.0.0.1 (or ::1) with
 * backlog 0 whose accept queue is filled by one connection first; the
 * kernel then drops further SYNs, so a connect stays in progress. (TEST-NET
 * addresses are not used: they leave loopback, and sandboxes answer them
 * with a refusal.)
 *
 * The module is the seed's DialExecutor (TM-P0-1): queueing, concurrency
 * limits, cancellation and result classification.
 *
 * Every wait is bounded: the loop runs in small steps until a condition
 * holds or a generous limit passes. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <proxyhost/connector.h>

#include "mock_core.h"
#include "mock_test.h"
#include "tap.h"

#define DIRECT_SO PH_BUILD_MODULES "/direct/.libs/direct.so"
#define SLOW_MS 600 /* dnsd's delay for names under slow.test */

static char err[8192];
static int dns_port;
static pid_t dns_pid = -1;
static char tmpdir[] = "/tmp/test_direct.XXXXXX";
static int have_v6;

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void skip(const char *why) {
  tap_n_++;
  printf("ok %d # SKIP %s\n", tap_n_, why);
}

/* ---- the DNS server -------------------------------------------------- */

static int dnsd_start(void) {
  if (!mkdtemp(tmpdir))
    return -1;
  char portfile[128];
  snprintf(portfile, sizeof(portfile), "%s/dns.port", tmpdir);
  const char *py = getenv("PYTHON3");
  if (!py || !*py)
    py = "python3";
  dns_pid = fork();
  if (dns_pid < 0)
    return -1;
  if (dns_pid == 0) {
    char slow[16];
    snprintf(slow, sizeof(slow), "%d", SLOW_MS);
    execlp(py, py, PH_TEST_LIBDIR "/dnsd.py", "--port", "0", "--port-file",
           portfile, "--lifetime", "180", "--slow-ms", slow, "--zone",
           "ok.test=127.0.0.1", "--zone", "self.test=127.0.0.1", "--zone",
           "both.test=::1,127.0.0.1", "--zone", "v6.test=::1", "--zone",
           "nodata.test=", "--zone", "a.slow.test=127.0.0.1", "--zone",
           "b.slow.test=127.0.0.1", (char *)NULL);
    _exit(127);
  }
  for (int i = 0; i < 500; i++) { /* at most 10 s */
    FILE *f = fopen(portfile, "r");
    if (f) {
      int ok_ = fscanf(f, "%d", &dns_port) == 1;
      fclose(f);
      if (ok_ && dns_port > 0)
        return 0;
    }
    if (waitpid(dns_pid, NULL, WNOHANG) == dns_pid) {
      dns_pid = -1;
      return -1;
    }
    usleep(20000);
  }
  return -1;
}

static void dnsd_stop(void) {
  if (dns_pid > 0) {
    kill(dns_pid, SIGTERM);
    waitpid(dns_pid, NULL, 0);
  }
  char path[128];
  snprintf(path, sizeof(path), "%s/dns.port", tmpdir);
  unlink(path);
  snprintf(path, sizeof(path), "%s/direct.log", tmpdir);
  unlink(path);
  rmdir(tmpdir);
}

/* ---- sockets --------------------------------------------------------- */

static int tcp_listen(int family, const char *ip, int port, int backlog,
                      int *bound) {
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof(ss));
  socklen_t len;
  int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (family == AF_INET) {
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    s4->sin_family = AF_INET;
    s4->sin_port = htons((uint16_t)port);
    inet_pton(AF_INET, ip, &s4->sin_addr);
    len = sizeof(*s4);
  } else {
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons((uint16_t)port);
    inet_pton(AF_INET6, ip, &s6->sin6_addr);
    len = sizeof(*s6);
  }
  if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, backlog) < 0 ||
      getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
    close(fd);
    return -1;
  }
  *bound = ntohs(family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                   : ((struct sockaddr_in6 *)&ss)->sin6_port);
  return fd;
}

/* A listener whose accept queue is full: connects to it hang. *filler is
 * the connection that fills it. */
static int blackhole(int family, const char *ip, int port, int *bound,
                     int *filler) {
  int l = tcp_listen(family, ip, port, 0, bound);
  if (l < 0)
    return -1;
  struct sockaddr_storage ss;
  socklen_t len = sizeof(ss);
  getsockname(l, (struct sockaddr *)&ss, &len);
  *filler = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (*filler < 0 || connect(*filler, (struct sockaddr *)&ss, len) < 0) {
    close(l);
    return -1;
  }
  return l;
}

/* A port nothing listens on (bound once, then closed). */
static int closed_port(void) {
  int port = 0;
  int fd = tcp_listen(AF_INET, "127.0.0.1", 0, 1, &port);
  if (fd >= 0)
    close(fd);
  return port;
}

static int count_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  if (!d)
    return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.')
      n++;
  closedir(d);
  return n - 1;
}

/* ---- the connector under test ---------------------------------------- */

typedef struct slot {
  int calls;
  ph_open_result res;
  int64_t at_ms;
} slot;

typedef struct env {
  ph_mock *m;
  const ph_connector_v1 *c;
  void *self;
} env;

static void on_result(void *arg, const ph_open_result *r) {
  slot *s = arg;
  s->calls++;
  s->res = *r;
  s->at_ms = now_ms();
}

static void ini_text(char *buf, size_t n, const char *extra) {
  snprintf(buf, n,
           "[proxyhost]\nmodules = " DIRECT_SO "\n"
           "[log]\nlevel = warn\n"
           "[direct]\nresolver_servers = 127.0.0.1:%d\n%s",
           dns_port, extra ? extra : "");
}

static int env_start(env *e, const char *extra) {
  char ini[4096];
  ini_text(ini, sizeof(ini), extra);
  memset(e, 0, sizeof(*e));
  err[0] = '\0';
  e->m = ph_mock_new(ini, err, sizeof err);
  if (!e->m || ph_mock_init(e->m, err, sizeof err) < 0 ||
      ph_mock_start(e->m, err, sizeof err) < 0) {
    printf("# setup failed: %s\n", err);
    ph_mock_free(e->m);
    e->m = NULL;
    return -1;
  }
  e->c = ph_mock_service(e->m, PH_CONNECTOR_SERVICE, NULL, PH_CONNECTOR_MAJOR,
                         0, &e->self);
  return e->c ? 0 : -1;
}

static void env_end(env *e) {
  ph_mock_free(e->m);
  e->m = NULL;
}

static int64_t open_to(env *e, const char *host, int port, slot *s) {
  ph_open_request req;
  memset(&req, 0, sizeof(req));
  req.size = sizeof(req);
  req.protocol = PH_PROTO_TCP;
  req.port = (uint16_t)port;
  req.host = host;
  memset(s, 0, sizeof(*s));
  s->res.fd = -1;
  return e->c->open(e->self, &req, on_result, s);
}

/* Runs the loop until at least k of the n slots were answered, or max_ms
 * passed. Returns how many were answered. */
static int wait_k(env *e, slot *s, int n, int k, int max_ms) {
  int64_t end = now_ms() + max_ms;
  for (;;) {
    int done = 0;
    for (int i = 0; i < n; i++)
      done += s[i].calls > 0;
    if (done >= k || now_ms() >= end)
      return done;
    ph_mock_run_for(e->m, 5);
  }
}

static int wait_one(env *e, slot *s, int max_ms) {
  return wait_k(e, s, 1, 1, max_ms);
}

/* Expects one failure with this stage and code. */
static void expect_fail(slot *s, int stage, int code, const char *what) {
  char name[256];
  snprintf(name, sizeof(name), "%s: answered once", what);
  is_int(s->calls, 1, name);
  snprintf(name, sizeof(name), "%s: stage %s", what, ph_open_stage_name(stage));
  is_str(ph_open_stage_name(s->res.stage), ph_open_stage_name(stage), name);
  snprintf(name, sizeof(name), "%s: code %s", what, ph_open_code_name(code));
  is_str(ph_open_code_name(s->res.code), ph_open_code_name(code), name);
  snprintf(name, sizeof(name), "%s: no socket", what);
  is_int(s->res.fd, -1, name);
}

/* Expects a connected socket to port (family 0: any); closes it. */
static void expect_open(slot *s, int port, int family, const char *what) {
  char name[256];
  snprintf(name, sizeof(name), "%s: open", what);
  if (!ok(s->calls == 1 && s->res.code == PH_OPEN_OK &&
              s->res.stage == PH_STAGE_NONE && s->res.fd >= 0,
          name)) {
    printf("#   calls %d stage %s code %s\n", s->calls,
           ph_open_stage_name(s->res.stage), ph_open_code_name(s->res.code));
    return;
  }
  struct sockaddr_storage ss;
  socklen_t len = sizeof(ss);
  int peer_ok = getpeername(s->res.fd, (struct sockaddr *)&ss, &len) == 0;
  int peer_port = ss.ss_family == AF_INET
                      ? ntohs(((struct sockaddr_in *)&ss)->sin_port)
                      : ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
  snprintf(name, sizeof(name), "%s: connected to the target", what);
  ok(peer_ok && peer_port == port && (!family || ss.ss_family == family), name);
  close(s->res.fd);
  s->res.fd = -1;
}

static const char *metrics(env *e) { return ph_mock_metrics_text(e->m); }

/* The value of the first sample line starting with prefix, or -1. */
static double metric_value(env *e, const char *series) {
  double v;
  return ph_mock_metric(e->m, series, NULL, &v) == PH_OK ? v : -1;
}

/* ---- tests ----------------------------------------------------------- */

/* TM-P0-2: open never blocks and never answers from inside
 * open(); on success the result carries the connected socket. */
static void test_success(void) {
  env e;
  if (env_start(&e, "") < 0) {
    ok(0, "direct starts");
    return;
  }
  int port = 0, lfd = tcp_listen(AF_INET, "127.0.0.1", 0, 64, &port);
  slot s;
  int64_t id = open_to(&e, "127.0.0.1", port, &s);
  ok(id > 0, "open of an IPv4 literal is accepted");
  is_int(s.calls, 0, "no callback from inside open()");
  wait_one(&e, &s, 5000);
  int fd = s.res.fd;
  int fl = fd >= 0 ? fcntl(fd, F_GETFL) : 0;
  int nodelay = 0;
  socklen_t len = sizeof(nodelay);
  if (fd >= 0)
    getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, &len);
  ok(fd >= 0 && (fl & O_NONBLOCK), "the socket is non-blocking");
  ok(nodelay, "the socket has TCP_NODELAY");
  ok(s.res.size >= sizeof(ph_open_result) && !s.res.retryable &&
         !s.res.retry_after_ms,
     "a success is not retryable");
  expect_open(&s, port, AF_INET, "IPv4 literal");
  ph_mock_run_for(e.m, 30);
  is_int(s.calls, 1, "exactly one callback");
  is_int(e.c->cancel(e.self, id), PH_ENOENT,
         "cancel after the answer: unknown id");

  /* TM-PROTO-3: names are resolved by the connector (remote DNS). */
  open_to(&e, "ok.test", port, &s);
  wait_one(&e, &s, 5000);
  expect_open(&s, port, AF_INET, "a name through DNS");
  open_to(&e, "OK.Test.", port, &s);
  wait_one(&e, &s, 5000);
  expect_open(&s, port, AF_INET, "a name in another case, trailing dot");

  /* TM-PROTO-8 (issue 24 item 7): no DNS cache of the connector's own,
   * c-ares's included (on by default from 1.23). dnsd answers a name
   * under once.test once, with an hour's TTL, and NXDOMAIN afterwards:
   * the second open must see the changed answer. */
  open_to(&e, "gone.once.test", port, &s);
  wait_one(&e, &s, 5000);
  expect_open(&s, port, AF_INET, "TM-PROTO-8: a name with an hour's TTL");
  open_to(&e, "gone.once.test", port, &s);
  wait_one(&e, &s, 5000);
  expect_fail(&s, PH_STAGE_DNS, PH_OPEN_HOST_UNREACHABLE,
              "TM-PROTO-8: asked again after its answer changed, the new "
              "answer (NXDOMAIN), not a cached one");

  if (have_v6) {
    int p6 = 0, l6 = tcp_listen(AF_INET6, "::1", 0, 64, &p6);
    open_to(&e, "::1", p6, &s);
    wait_one(&e, &s, 5000);
    expect_open(&s, p6, AF_INET6, "IPv6 literal");
    open_to(&e, "[::1]", p6, &s);
    wait_one(&e, &s, 5000);
    expect_open(&s, p6, AF_INET6, "bracketed IPv6 literal");
    open_to(&e, "v6.test", p6, &s);
    wait_one(&e, &s, 5000);
    expect_open(&s, p6, AF_INET6, "a name with only an AAAA record");
    close(l6);
  } else {
    skip("no IPv6 loopback");
  }
  close(lfd);
  env_end(&e);
}

/* TM-P0-10, TM-PROTO-26, TM-PROTO-27, TM-PROTO-28: each failure has a
 * stable stage and code, and no text. */
static void test_failures(void) {
  env e;
  if (env_start(&e, "dns_timeout = 300ms\nconnect_timeout = 300ms\n") < 0) {
    ok(0, "direct starts");
    return;
  }
  slot s;
  open_to(&e, "127.0.0.1", closed_port(), &s);
  wait_one(&e, &s, 5000);
  expect_fail(&s, PH_STAGE_CONNECT, PH_OPEN_CONNECTION_REFUSED, "refused port");
  ok(!s.res.retryable, "a refusal is not retryable");
  /* Behind a name, a loopback connect succeeds or fails inside the DNS
   * answer's callback (dialer.c knows at once): the result still comes
   * once, later, and the request outlives the callback (run under ASan). */
  open_to(&e, "ok.test", closed_port(), &s);
  wait_one(&e, &s, 5000);
  expect_fail(&s, PH_STAGE_CONNECT, PH_OPEN_CONNECTION_REFUSED,
              "refused port behind a name");

  open_to(&e, "nope.test", 80, &s);
  wait_one(&e, &s, 5000);
  expect_fail(&s, PH_STAGE_DNS, PH_OPEN_HOST_UNREACHABLE, "NXDOMAIN");
  ok(!s.res.retryable, "NXDOMAIN is not retryable");

  open_to(&e, "nodata.test", 80, &s);
  wait_one(&e, &s, 5000);
  expect_fail(&s, PH_STAGE_DNS, PH_OPEN_HOST_UNREACHABLE,
              "a name without addresses");

  /* TM-PROTO-24: a DNS server failure is dns/host_unreachable, retryable. */
  open_to(&e, "x.refused.test", 80, &s);
  wait_one(&e, &s, 5000);
  expect_fail(&s, PH_STAGE_DNS, PH_OPEN_HOST_UNREACHABLE, "DNS REFUSED");
  ok(s.res.retryable && s.res.retry_after_ms > 0,
     "a refusing DNS server is retryable");
  open_to(&e, "x.servfail.test", 80, &s);
  wait_one(&e, &s, 5000);
  expect_fail(&s, PH_STAGE_DNS, PH_OPEN_HOST_UNREACHABLE, "DNS SERVFAIL");
  ok(s.res.retryable, "SERVFAIL is retryable");

  int64_t t0 = now_ms();
  open_to(&e, "x.hang.test", 80, &s);
  wait_one(&e, &s, 10000);
  expect_fail(&s, PH_STAGE_DNS, PH_OPEN_TIMEOUT, "DNS hang");
  ok(s.res.retryable, "a DNS timeout is retryable");
  /* The dns_timeout (300 ms) ended it, not open_timeout (8 s). */
  ok(s.at_ms - t0 < 8000, "the DNS deadline fired before open_timeout");

  open_to(&e, "bad name!", 80, &s);
  is_int(s.calls, 0, "a malformed name is answered asynchronously too");
  wait_one(&e, &s, 5000);
  expect_fail(&s, PH_STAGE_DNS, PH_OPEN_HOST_UNREACHABLE, "malformed name");

  int port = 0, filler = -1;
  int bh = blackhole(AF_INET, "127.0.0.1", 0, &port, &filler);
  ok(bh >= 0, "blackhole listener on 127.0.0.1");
  t0 = now_ms();
  open_to(&e, "127.0.0.1", port, &s);
  wait_one(&e, &s, 10000);
  expect_fail(&s, PH_STAGE_CONNECT, PH_OPEN_TIMEOUT, "connect blackhole");
  ok(s.res.retryable, "a connect timeout is retryable");
  ok(s.at_ms - t0 < 8000, "connect_timeout fired before open_timeout");
  close(filler);
  close(bh);
  env_end(&e);
}

static void publish_listener(env *e, int family, const char *ip, int port,
                             int bound) {
  ph_listener_event *ev = calloc(1, sizeof(*ev));
  ev->size = sizeof(*ev);
  ev->bound = bound;
  if (family == AF_INET) {
    struct sockaddr_in s4;
    memset(&s4, 0, sizeof(s4));
    s4.sin_family = AF_INET;
    s4.sin_port = htons((uint16_t)port);
    inet_pton(AF_INET, ip, &s4.sin_addr);
    memcpy(ev->addr, &s4, sizeof(s4));
    ev->addrlen = sizeof(s4);
  } else {
    struct sockaddr_in6 s6;
    memset(&s6, 0, sizeof(s6));
    s6.sin6_family = AF_INET6;
    s6.sin6_port = htons((uint16_t)port);
    inet_pton(AF_INET6, ip, &s6.sin6_addr);
    memcpy(ev->addr, &s6, sizeof(s6));
    ev->addrlen = sizeof(s6);
  }
  is_int(ph_mock_publish(e->m, PH_LISTENER_TOPIC, PH_LISTENER_TYPE, ev, free),
         PH_OK, "listener announcement published");
}

static void expect_forbidden(env *e, const char *host, int port,
                             const char *what) {
  slot s;
  open_to(e, host, port, &s);
  wait_one(e, &s, 5000);
  expect_fail(&s, PH_STAGE_POLICY, PH_OPEN_FORBIDDEN, what);
  ok(!s.res.retryable, "a policy refusal is not retryable");
}

/* TM-P0-6, CP-1-25: the target policy, by CIDR, name, port and the
 * process's own listeners (before and after DNS). */
static void test_policy(void) {
  env e;
  if (env_start(&e, "deny_cidrs = 10.0.0.0/8, 2001:db8::/32\n"
                    "deny_hosts = .blocked.test\n"
                    "deny_ports = 9, 100-110\n") < 0) {
    ok(0, "direct starts");
    return;
  }
  expect_forbidden(&e, "10.1.2.3", 80, "deny_cidrs (IPv4)");
  expect_forbidden(&e, "2001:db8::5", 80, "deny_cidrs (IPv6)");
  expect_forbidden(&e, "::ffff:10.1.2.3", 80, "deny_cidrs (IPv4-mapped)");
  /* dnsd would answer NXDOMAIN: forbidden means the name check ran. */
  expect_forbidden(&e, "a.blocked.test", 80, "deny_hosts suffix");
  expect_forbidden(&e, "blocked.test", 80, "deny_hosts suffix (apex)");
  expect_forbidden(&e, "127.0.0.1", 9, "deny_ports");
  expect_forbidden(&e, "ok.test", 105, "deny_ports range, before DNS");

  int port = 0, lfd = tcp_listen(AF_INET, "127.0.0.1", 0, 64, &port);
  slot s;
  open_to(&e, "127.0.0.1", port, &s);
  wait_one(&e, &s, 5000);
  expect_open(&s, port, AF_INET, "our listener before it is announced");

  publish_listener(&e, AF_INET, "127.0.0.1", port, 1);
  expect_forbidden(&e, "127.0.0.1", port, "own listener by address");
  expect_forbidden(&e, "localhost", port, "own listener as localhost");
  expect_forbidden(&e, "self.test", port,
                   "a name resolving to our listener (after DNS)");
  expect_forbidden(&e, "0.0.0.0", port, "own listener through 0.0.0.0");
  open_to(&e, "127.0.0.1", closed_port(), &s);
  wait_one(&e, &s, 5000);
  is_int(s.res.code, PH_OPEN_CONNECTION_REFUSED,
         "other ports on loopback are still dialled");

  int wport = 0, wfd = tcp_listen(AF_INET, "127.0.0.1", 0, 64, &wport);
  publish_listener(&e, AF_INET, "0.0.0.0", wport, 1);
  expect_forbidden(&e, "127.0.0.1", wport, "wildcard listener: loopback");
  expect_forbidden(&e, "127.0.0.53", wport, "wildcard listener: 127/8");
  if (have_v6)
    expect_forbidden(&e, "::1", wport, "wildcard listener: ::1");

  publish_listener(&e, AF_INET, "127.0.0.1", port, 0);
  open_to(&e, "127.0.0.1", port, &s);
  wait_one(&e, &s, 5000);
  expect_open(&s, port, AF_INET, "a closed listener is dialled again");

  /* A malformed announcement changes nothing. */
  ph_listener_event *bad = calloc(1, sizeof(*bad));
  bad->size = 4;
  bad->bound = 1;
  ph_mock_publish(e.m, PH_LISTENER_TOPIC, PH_LISTENER_TYPE, bad, free);
  open_to(&e, "127.0.0.1", port, &s);
  wait_one(&e, &s, 5000);
  expect_open(&s, port, AF_INET, "a short announcement is ignored");
  close(lfd);
  close(wfd);
  env_end(&e);

  /* Allow lists: only names under .ok-zone may be dialled. */
  if (env_start(&e, "allow_hosts = ok.test\nallow_ports = 1-65535\n") < 0) {
    ok(0, "direct starts with allow_hosts");
    return;
  }
  lfd = tcp_listen(AF_INET, "127.0.0.1", 0, 64, &port);
  open_to(&e, "ok.test", port, &s);
  wait_one(&e, &s, 5000);
  expect_open(&s, port, AF_INET, "allow_hosts: the listed name");
  expect_forbidden(&e, "self.test", port, "allow_hosts: another name");
  expect_forbidden(&e, "127.0.0.1", port, "allow_hosts: a literal");
  close(lfd);
  env_end(&e);
}

/* The contract's PH_EINVAL cases: no id, no callback. */
static void test_invalid(void) {
  env e;
  if (env_start(&e, "") < 0) {
    ok(0, "direct starts");
    return;
  }
  slot s;
  memset(&s, 0, sizeof(s));
  ph_open_request req;
  memset(&req, 0, sizeof(req));
  req.size = sizeof(req);
  req.protocol = PH_PROTO_TCP;
  req.port = 80;
  req.host = "ok.test";
  is_int(e.c->open(e.self, &req, NULL, &s), PH_EINVAL, "no callback");
  req.host = NULL;
  is_int(e.c->open(e.self, &req, on_result, &s), PH_EINVAL, "no host");
  req.host = "";
  is_int(e.c->open(e.self, &req, on_result, &s), PH_EINVAL, "empty host");
  char longhost[300];
  memset(longhost, 'a', 256);
  longhost[256] = '\0';
  req.host = longhost;
  is_int(e.c->open(e.self, &req, on_result, &s), PH_EINVAL, "a 256-byte host");
  req.host = "ok.test";
  req.port = 0;
  is_int(e.c->open(e.self, &req, on_result, &s), PH_EINVAL, "port 0");
  req.port = 80;
  req.protocol = 2;
  is_int(e.c->open(e.self, &req, on_result, &s), PH_EINVAL, "not TCP");
  req.protocol = PH_PROTO_TCP;
  req.size = 8;
  is_int(e.c->open(e.self, &req, on_result, &s), PH_EINVAL,
         "a request struct too small");
  is_int(e.c->open(e.self, NULL, on_result, &s), PH_EINVAL, "no request");
  ph_mock_run_for(e.m, 30);
  is_int(s.calls, 0, "no callback for refused requests");
  is_int(e.c->cancel(e.self, 0), PH_ENOENT, "cancel of id 0");
  is_int(e.c->cancel(e.self, 12345), PH_ENOENT, "cancel of an unknown id");
  env_end(&e);
}

/* TM-P0-3, TM-FAIL-1: a full queue answers queue_full at once (through
 * the callback, never from inside open); TM-P0-4: at most
 * max_concurrent_dials run. */
static void test_queue_full(void) {
  env e;
  if (env_start(&e, "max_concurrent_dials = 1\nmax_pending_dials = 1\n") < 0) {
    ok(0, "direct starts");
    return;
  }
  slot s[3];
  int64_t a = open_to(&e, "a.hang.test", 80, &s[0]);
  int64_t b = open_to(&e, "b.hang.test", 80, &s[1]);
  int64_t c = open_to(&e, "c.hang.test", 80, &s[2]);
  ok(a > 0 && b > 0 && c > 0, "three opens accepted");
  is_int(s[2].calls, 0, "queue_full is not answered inside open()");
  ph_mock_run_for(e.m, 20);
  expect_fail(&s[2], PH_STAGE_QUEUE, PH_OPEN_QUEUE_FULL, "third open");
  ok(s[2].res.retryable && s[2].res.retry_after_ms > 0,
     "queue_full is retryable with a hint");
  ok(s[0].calls == 0 && s[1].calls == 0,
     "the running and the queued request are untouched");
  is_int((int)metric_value(&e, "proxyhost_direct_dial_queue_full_total"), 1,
         "queue_full counted");
  is_int((int)metric_value(&e, "proxyhost_direct_dials_active"), 1,
         "one dial runs");
  is_int((int)metric_value(&e, "proxyhost_direct_dials_pending"), 1,
         "one request waits");
  is_int(e.c->cancel(e.self, c), PH_ENOENT, "the answered id is gone");
  is_int(e.c->cancel(e.self, b), PH_OK, "cancel the queued one");
  is_int(e.c->cancel(e.self, a), PH_OK, "cancel the running one");
  is_int((int)metric_value(&e, "proxyhost_direct_dials_active"), 0,
         "no dial runs");
  is_int((int)metric_value(&e, "proxyhost_direct_dials_pending"), 0,
         "nothing waits");
  ph_mock_run_for(e.m, 50);
  ok(s[0].calls == 0 && s[1].calls == 0, "no callback after cancel");
  env_end(&e);
}

/* TM-TEST-31, TM-TEST-6: 32 concurrent opens, one name hangs
 * in DNS, the other 31 complete without waiting for it. */
static void test_32_concurrent(void) {
  env e;
  if (env_start(&e, "dns_timeout = 5s\n") < 0) {
    ok(0, "direct starts");
    return;
  }
  int port = 0, lfd = tcp_listen(AF_INET, "127.0.0.1", 0, 128, &port);
  slot s[32];
  int64_t hang = open_to(&e, "stuck.hang.test", port, &s[0]);
  for (int i = 1; i < 32; i++)
    open_to(&e, i % 2 ? "ok.test" : "127.0.0.1", port, &s[i]);
  int done = wait_k(&e, s + 1, 31, 31, 4000);
  is_int(done, 31, "31 opens completed");
  int good = 0;
  for (int i = 1; i < 32; i++)
    if (s[i].res.code == PH_OPEN_OK && s[i].res.fd >= 0) {
      good++;
      close(s[i].res.fd);
    }
  is_int(good, 31, "all 31 are connected");
  is_int(s[0].calls, 0, "the hanging one is still resolving");
  is_int(e.c->cancel(e.self, hang), PH_OK, "and can be cancelled");
  close(lfd);
  env_end(&e);
}

/* TM-P0-5, TM-TEST-8, TM-SEC-7: cancel stops the DNS lookup or the dial,
 * frees the slot at once, and no callback follows, even when the DNS
 * answer arrives later. */
static void test_cancel(void) {
  env e;
  /* Long DNS and open limits: only a cancel can free the slot early. */
  if (env_start(&e, "max_concurrent_dials = 1\nmax_pending_dials = 4\n"
                    "dns_timeout = 20s\nopen_timeout = 30s\n"
                    "connect_timeout = 5s\n") < 0) {
    ok(0, "direct starts");
    return;
  }
  int port = 0, lfd = tcp_listen(AF_INET, "127.0.0.1", 0, 64, &port);
  slot a, b;
  int64_t ida = open_to(&e, "a.hang.test", port, &a);
  open_to(&e, "ok.test", port, &b);
  ph_mock_run_for(e.m, 50);
  is_int(b.calls, 0, "the second request waits for the only slot");
  is_int(e.c->cancel(e.self, ida), PH_OK, "cancel the resolving request");
  wait_one(&e, &b, 10000);
  expect_open(&b, port, AF_INET, "the queued request got the slot");
  is_int(a.calls, 0, "no callback after cancel");
  is_int(e.c->cancel(e.self, ida), PH_ENOENT, "a cancelled id is gone");

  /* The answer to a cancelled lookup arrives later and is dropped. */
  slot l;
  int64_t idl = open_to(&e, "a.slow.test", port, &l);
  ph_mock_run_for(e.m, 20);
  is_int(e.c->cancel(e.self, idl), PH_OK, "cancel a slow lookup");
  ph_mock_run_for(e.m, SLOW_MS + 300);
  is_int(l.calls, 0, "its late answer calls nobody");

  /* Abandoned lookups have a budget (running plus abandoned stay under
   * 2 x max_concurrent_dials): the hanging one still counts, so after one
   * more cancel the next request waits for that late answer. */
  slot c1, c3;
  int64_t id1 = open_to(&e, "b.slow.test", port, &c1);
  ph_mock_run_for(e.m, 20);
  is_int(e.c->cancel(e.self, id1), PH_OK, "cancel another slow lookup");
  open_to(&e, "ok.test", port, &c3);
  ph_mock_run_for(e.m, 50);
  is_int(c3.calls, 0, "budget spent: the next request waits");
  is_int((int)metric_value(&e, "proxyhost_direct_dials_pending"), 1,
         "it is pending");
  wait_one(&e, &c3, 10000);
  expect_open(&c3, port, AF_INET, "it starts when the late answer arrives");
  is_int(c1.calls, 0, "the abandoned one stays silent");

  /* Cancel during the connect: the socket is closed. */
  int bport = 0, filler = -1;
  int bh = blackhole(AF_INET, "127.0.0.1", 0, &bport, &filler);
  slot d;
  int64_t idd = open_to(&e, "127.0.0.1", bport, &d);
  ph_mock_run_for(e.m, 50);
  int fds = count_fds();
  is_int(e.c->cancel(e.self, idd), PH_OK, "cancel a connecting request");
  is_int(count_fds(), fds - 1, "its socket is closed");
  ph_mock_run_for(e.m, 100);
  is_int(d.calls, 0, "no callback after cancel");
  is_int((int)metric_value(&e, "proxyhost_direct_dials_active"), 0,
         "the slot is free");

  /* Cancel an answer waiting for delivery. */
  slot f;
  int64_t idf = open_to(&e, "bad name!", 80, &f);
  is_int(e.c->cancel(e.self, idf), PH_OK,
         "cancel before the answer is delivered");
  ph_mock_run_for(e.m, 30);
  is_int(f.calls, 0, "the answer is not delivered");
  close(filler);
  close(bh);
  close(lfd);
  env_end(&e);
}

/* TM-P0-5, TM-CFG-17: open_timeout covers queue, DNS and connect, and the
 * stage says where the request was. */
static void test_open_timeout(void) {
  env e;
  if (env_start(&e, "open_timeout = 300ms\ndns_timeout = 5s\n"
                    "connect_timeout = 5s\n") < 0) {
    ok(0, "direct starts");
    return;
  }
  slot s;
  int64_t t0 = now_ms();
  open_to(&e, "x.hang.test", 80, &s);
  wait_one(&e, &s, 10000);
  expect_fail(&s, PH_STAGE_DNS, PH_OPEN_TIMEOUT, "open_timeout in DNS");
  ok(s.at_ms - t0 < 5000, "open_timeout ended it before dns_timeout");

  open_to(&e, "a.slow.test", 80, &s);
  wait_one(&e, &s, 10000);
  expect_fail(&s, PH_STAGE_DNS, PH_OPEN_TIMEOUT, "slow DNS answer");
  ph_mock_run_for(e.m, SLOW_MS + 200);
  is_int(s.calls, 1, "the late answer is ignored");

  int port = 0, filler = -1;
  int bh = blackhole(AF_INET, "127.0.0.1", 0, &port, &filler);
  t0 = now_ms();
  open_to(&e, "127.0.0.1", port, &s);
  wait_one(&e, &s, 10000);
  expect_fail(&s, PH_STAGE_CONNECT, PH_OPEN_TIMEOUT, "open_timeout in connect");
  ok(s.at_ms - t0 < 5000, "open_timeout ended it before connect_timeout");
  close(filler);
  close(bh);
  env_end(&e);

  /* In the queue: one slot held by a hanging lookup. open_timeout is read
   * per request, so a reload shortens it for the second one only. */
  if (env_start(&e, "max_concurrent_dials = 1\nopen_timeout = 5s\n") < 0) {
    ok(0, "direct starts");
    return;
  }
  slot a, b;
  int64_t ida = open_to(&e, "a.hang.test", 80, &a);
  char ini[4096];
  ini_text(ini, sizeof(ini),
           "max_concurrent_dials = 1\nopen_timeout = 200ms\n");
  is_int(ph_mock_reload(e.m, ini, NULL, 0), 0,
         "reload with a shorter open_timeout");
  open_to(&e, "ok.test", 80, &b);
  wait_one(&e, &b, 10000);
  expect_fail(&b, PH_STAGE_QUEUE, PH_OPEN_TIMEOUT, "open_timeout in queue");
  ok(b.res.retryable, "a queue timeout is retryable");
  is_int(a.calls, 0, "the slot holder is still resolving");
  is_int(e.c->cancel(e.self, ida), PH_OK, "cancel it");
  ok(metric_value(&e, "tunnelmesh_stream_queue_wait_seconds_count{component="
                      "\"client\"}") >= 2,
     "queue waits observed");
  env_end(&e);
}

/* RFC 8305: the first address family hangs, the other one wins. */
static void test_happy_eyeballs(void) {
  if (!have_v6) {
    skip("no IPv6 loopback");
    return;
  }
  env e;
  if (env_start(&e, "happy_eyeballs_delay = 50ms\nconnect_timeout = 5s\n") <
      0) {
    ok(0, "direct starts");
    return;
  }
  /* Port P: IPv4 accepts, IPv6 is a blackhole; port Q: the reverse. */
  int p = 0, q = 0, p6 = 0, q6 = 0, fp = -1, fq = -1;
  int l4 = tcp_listen(AF_INET, "127.0.0.1", 0, 64, &p);
  int b6 = blackhole(AF_INET6, "::1", p, &p6, &fp);
  int b4 = blackhole(AF_INET, "127.0.0.1", 0, &q, &fq);
  int l6 = tcp_listen(AF_INET6, "::1", q, 64, &q6);
  if (l4 < 0 || b6 < 0 || b4 < 0 || l6 < 0) {
    skip("could not bind the same port on both loopbacks");
  } else {
    slot s;
    int fds = count_fds();
    int64_t t0 = now_ms();
    open_to(&e, "both.test", p, &s);
    wait_one(&e, &s, 10000);
    expect_open(&s, p, AF_INET, "IPv6 hangs: IPv4 wins");
    ok(s.at_ms - t0 < 5000, "before the hanging attempt's timeout");
    t0 = now_ms();
    open_to(&e, "both.test", q, &s);
    wait_one(&e, &s, 10000);
    expect_open(&s, q, AF_INET6, "IPv4 hangs: IPv6 wins");
    ok(s.at_ms - t0 < 5000, "before the hanging attempt's timeout");
    /* A refused first family moves on at once. */
    int r = 0, lr = tcp_listen(AF_INET, "127.0.0.1", 0, 64, &r);
    open_to(&e, "both.test", r, &s);
    wait_one(&e, &s, 10000);
    expect_open(&s, r, AF_INET, "IPv6 refused: IPv4 wins");
    ph_mock_run_for(e.m, 20);
    is_int(count_fds(), fds + 1, "the losing attempts are closed");
    close(lr);
  }
  int fdl[] = {l4, b6, b4, l6, fp, fq};
  for (size_t i = 0; i < sizeof(fdl) / sizeof(fdl[0]); i++)
    if (fdl[i] >= 0)
      close(fdl[i]);
  env_end(&e);
}

/* TM-OBS-1, TM-OBS-3, TM-OBS-10, TM-OBS-11, TM-OBS-12, TM-OBS-18: stage
 * histograms with bounded labels, no target in any label; the component
 * comes from the configuration. */
static void test_metrics(void) {
  env e;
  if (env_start(&e, "component = agent\n") < 0) {
    ok(0, "direct starts");
    return;
  }
  int port = 0, lfd = tcp_listen(AF_INET, "127.0.0.1", 0, 64, &port);
  slot s;
  open_to(&e, "ok.test", port, &s);
  wait_one(&e, &s, 5000);
  if (s.res.fd >= 0)
    close(s.res.fd);
  open_to(&e, "nope.test", port, &s);
  wait_one(&e, &s, 5000);
  open_to(&e, "127.0.0.1", closed_port(), &s);
  wait_one(&e, &s, 5000);
  const char *h = "tunnelmesh_stream_stage_duration_seconds_count{"
                  "component=\"agent\",stage=";
  char key[256];
  snprintf(key, sizeof(key), "%s\"dns\",result=\"success\",scope=\"local\"}",
           h);
  is_int((int)metric_value(&e, key), 1, "DNS success observed");
  snprintf(key, sizeof(key), "%s\"dns\",result=\"failure\",scope=\"local\"}",
           h);
  is_int((int)metric_value(&e, key), 1, "DNS failure observed");
  snprintf(key, sizeof(key), "%s\"connect\",result=\"success\",scope=\"local\"}",
           h);
  is_int((int)metric_value(&e, key), 1, "connect success observed");
  snprintf(key, sizeof(key), "%s\"connect\",result=\"failure\",scope=\"local\"}",
           h);
  is_int((int)metric_value(&e, key), 1, "connect failure observed");
  snprintf(key, sizeof(key), "%s\"queue\",result=\"success\",scope=\"local\"}",
           h);
  is_int((int)metric_value(&e, key), 3, "queue stage observed per start");
  const char *t = metrics(&e);
  like(t, "proxyhost_direct_dials_active 0", "active gauge");
  like(t, "proxyhost_direct_dials_pending 0", "pending gauge");
  unlike_each(t, "no host name or address in metrics", "ok.test", "nope.test",
              "127.0.0.1");
  close(lfd);
  env_end(&e);
}

/* Stop refuses new opens with a retryable queue_full; destroy with work
 * in flight frees everything and calls nobody. */
static void test_stop_and_destroy(void) {
  int base = count_fds();
  env e;
  if (env_start(&e, "max_concurrent_dials = 2\nconnect_timeout = 5s\n") < 0) {
    ok(0, "direct starts");
    return;
  }
  int port = 0, filler = -1;
  int bh = blackhole(AF_INET, "127.0.0.1", 0, &port, &filler);
  slot s[4];
  open_to(&e, "x.hang.test", 80, &s[0]);
  open_to(&e, "127.0.0.1", port, &s[1]);
  open_to(&e, "ok.test", 80, &s[2]); /* queued */
  ph_mock_run_for(e.m, 50);
  is_int(ph_mock_stop(e.m), 0, "stop returns at once");
  slot late;
  open_to(&e, "ok.test", 80, &late);
  ph_mock_run_for(e.m, 20);
  expect_fail(&late, PH_STAGE_QUEUE, PH_OPEN_QUEUE_FULL, "open while stopping");
  ok(late.res.retryable && late.res.retry_after_ms > 0,
     "it may be retried elsewhere");
  open_to(&e, "bad name!", 80, &s[3]); /* an answer not yet delivered */
  env_end(&e);
  int called = 0;
  for (int i = 0; i < 4; i++)
    called += s[i].calls;
  is_int(called, 0, "destroy calls no callback");
  close(filler);
  close(bh);
  is_int(count_fds(), base, "every socket of the module is closed");
}

/* Configuration errors stop start-up; the defaults match the seed
 * (TM-CFG-14, TM-CFG-15, TM-CFG-16, TM-CFG-17). */
static void test_config(void) {
  const char *bad[] = {
      "deny_cidrs = 10.0.0.0/33\n", "allow_hosts = bad name\n",
      "deny_ports = 0\n",           "resolver_servers = not-an-ip\n",
      "max_concurrent_dials = 0\n", "max_pending_dials = 70000\n",
      "component = proxy\n",        "open_timeout = 0\n"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char ini[4096];
    ini_text(ini, sizeof(ini), bad[i]);
    err[0] = '\0';
    ph_mock *m = ph_mock_new(ini, err, sizeof err);
    int rc = m ? ph_mock_init(m, err, sizeof err) : -1;
    char name[128];
    snprintf(name, sizeof(name), "refused: %.*s", (int)strlen(bad[i]) - 1,
             bad[i]);
    is_int(rc, -1, name);
    ph_mock_free(m);
  }
  /* The sample documents every key with its default. */
  static char sample[16384];
  FILE *f =
      fopen(PH_TEST_LIBDIR "/../../modules/direct/direct.ini.sample", "r");
  size_t n = f ? fread(sample, 1, sizeof(sample) - 1, f) : 0;
  if (f)
    fclose(f);
  sample[n] = '\0';
  static char text[17000];
  snprintf(text, sizeof(text),
           "[proxyhost]\nmodule_path = " PH_BUILD_MODULES "\n%s",
           sample);
  err[0] = '\0';
  ph_mock *m = ph_mock_new(text, err, sizeof err);
  ok(n > 0 && m && ph_mock_init(m, err, sizeof err) == 0,
     "the sample configuration loads (system resolver, no query sent)");
  if (strlen(err))
    printf("# %s\n", err);
  int documented =
      mock_test_sample_has_keys(m ? ph_mock_module(m, NULL) : NULL, sample);
  ok(documented, "the sample sets every key");
  ph_mock_free(m);
  /* The built-in defaults are the seed's. */
  m = ph_mock_new("[proxyhost]\nmodules = " DIRECT_SO "\n", err, sizeof err);
  ok(m && ph_mock_init(m, err, sizeof err) == 0, "the defaults load");
  const char *want[] = {
      "max_concurrent_dials", "32",   "max_pending_dials", "128",
      "connect_timeout",      "5000", "open_timeout",      "8000"};
  for (size_t i = 0; m && i < sizeof(want) / sizeof(want[0]); i += 2) {
    long long v = conf_int(mock_core(m)->conf, "direct", want[i]);
    char name[128];
    snprintf(name, sizeof(name), "default %s", want[i]);
    is_int(v, atoll(want[i + 1]), name);
  }
  ph_mock_free(m);
}

/* Failed opens are logged at debug level with stage and code; the target
 * appears only there, and only with log_target (TM-SEC-9). */
static void test_debug_log(int log_target) {
  char path[128], ini[4096];
  snprintf(path, sizeof(path), "%s/direct%d.log", tmpdir, log_target);
  snprintf(ini, sizeof(ini),
           "[proxyhost]\nmodules = " DIRECT_SO "\n"
           "[log]\nlevel = debug\nfile = %s\n"
           "[direct]\nresolver_servers = 127.0.0.1:%d\nlog_target = %s\n",
           path, dns_port, log_target ? "true" : "false");
  env e;
  memset(&e, 0, sizeof(e));
  err[0] = '\0';
  e.m = ph_mock_new(ini, err, sizeof err);
  if (!e.m || ph_mock_init(e.m, err, sizeof err) < 0 ||
      ph_mock_start(e.m, err, sizeof err) < 0) {
    printf("# %s\n", err);
    ok(0, "direct starts with a debug log");
    ph_mock_free(e.m);
    return;
  }
  e.c = ph_mock_service(e.m, PH_CONNECTOR_SERVICE, NULL, PH_CONNECTOR_MAJOR, 0,
                        &e.self);
  slot s;
  open_to(&e, "nope.test", 80, &s);
  wait_one(&e, &s, 5000);
  env_end(&e);
  char log[16384] = "";
  FILE *f = fopen(path, "r");
  if (f) {
    size_t n = fread(log, 1, sizeof(log) - 1, f);
    log[n] = '\0';
    fclose(f);
  }
  like(log, "open failed", "a failed open is logged");
  like(log, "stage=dns", "with its stage");
  like(log, "code=host_unreachable", "and its stable code");
  if (log_target)
    like(log, "host=nope.test port=80", "log_target: the target at debug level");
  else
    unlike(log, "nope.test", "without log_target: no target, debug included");
}

int main(void) {
  plan_lazy();
  signal(SIGPIPE, SIG_IGN);
  err[0] = '\0';
  if (access(DIRECT_SO, R_OK) != 0) {
    skip("direct.so is not built (configure --disable-module-direct?)");
    return done_testing();
  }
  int p = 0, l6 = tcp_listen(AF_INET6, "::1", 0, 1, &p);
  have_v6 = l6 >= 0;
  if (l6 >= 0)
    close(l6);
  if (dnsd_start() < 0) {
    /* A missing test server is a failure, never a silent skip. */
    ok(0, "the test DNS server (python3 t/lib/dnsd.py) starts");
    dnsd_stop();
    return done_testing();
  }
  test_success();
  test_failures();
  test_policy();
  test_invalid();
  test_queue_full();
  test_32_concurrent();
  test_cancel();
  test_open_timeout();
  test_happy_eyeballs();
  test_metrics();
  test_stop_and_destroy();
  test_config();
  test_debug_log(0);
  test_debug_log(1);
  dnsd_stop();
  return done_testing();
}
