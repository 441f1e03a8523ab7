/* SPDX-License-Identifier: BSD-2-Clause */
/* The checker's probe engine (modules/checker/chk_probe.h, issue 26)
 * against real sockets on loopback: scripted servers (a thread each)
 * play the upstream proxy and the echo endpoint, byte for byte. Every
 * wait is bounded (poll with a limit, a bounded number of rounds). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <fcntl.h>

#include <proxyhost/connector.h>
#include <proxyhost/pool_store.h>

#include "checker/chk_dial.h"
#include "checker/chk_probe.h"
#include "tap.h"

/* A server that answers each request head (up to the empty line) with
 * the next of its answers, then closes; NULL answers: it reads and
 * never answers (a proxy stopped with SIGSTOP, as seen from outside). */
typedef struct script {
  int lfd, port;
  const char *answers[3];
  int n, silent;
  char got[4096]; /* what it read, for the checks */
  size_t got_len;
  pthread_t th;
} script;

static void *serve(void *arg) {
  script *s = arg;
  int fd = accept(s->lfd, NULL, NULL);
  if (fd < 0)
    return NULL;
  struct timeval tv = {5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  for (int i = 0; i < s->n || s->silent; i++) {
    size_t start = s->got_len;
    while (s->got_len < sizeof(s->got) - 1) {
      ssize_t r = recv(fd, s->got + s->got_len, 1, 0);
      if (r <= 0)
        goto out;
      s->got_len++;
      s->got[s->got_len] = 0;
      if (s->got_len - start >= 4 &&
          !memcmp(s->got + s->got_len - 4, "\r\n\r\n", 4))
        break;
    }
    if (s->silent) {
      char c;
      (void)recv(fd, &c, 1, 0); /* until the client gives up */
      goto out;
    }
    if (send(fd, s->answers[i], strlen(s->answers[i]), MSG_NOSIGNAL) < 0)
      goto out;
  }
out:
  close(fd);
  return NULL;
}

static void script_start(script *s) {
  s->lfd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(s->lfd, (struct sockaddr *)&a, sizeof(a));
  socklen_t l = sizeof(a);
  getsockname(s->lfd, (struct sockaddr *)&a, &l);
  s->port = ntohs(a.sin_port);
  listen(s->lfd, 4);
  pthread_create(&s->th, NULL, serve, s);
}

static void script_end(script *s) {
  shutdown(s->lfd, SHUT_RDWR);
  pthread_join(s->th, NULL);
  close(s->lfd);
}

/* Drives the probe from ev to its end; deadline_ms: when to time it
 * out. */
static void drive(chk_probe *p, int ev, int deadline_ms) {
  int waited = 0;
  for (int rounds = 0; ev && rounds < 1000; rounds++) {
    struct pollfd pf = {p->fd, (short)((ev & CHK_EV_READ ? POLLIN : 0) |
                                       (ev & CHK_EV_WRITE ? POLLOUT : 0)),
                        0};
    int r = poll(&pf, 1, 50);
    if (r == 0) {
      waited += 50;
      if (waited >= deadline_ms) {
        chk_probe_timeout(p);
        ev = 0;
        break;
      }
      continue;
    }
    ev = chk_probe_io(p, ev);
  }
  chk_probe_end(p);
}

/* Runs the probe to its end, dialling literals itself. */
static void run(chk_probe *p, const chk_probe_spec *spec, int deadline_ms) {
  drive(p, chk_probe_start(p, spec), deadline_ms);
}

/* A connected non-blocking socket to 127.0.0.1:port, as a connector
 * hands one over. */
static int dial_loopback(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons((uint16_t)port);
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
    if (fd >= 0)
      close(fd);
    return -1;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}


static char echo_ok[1024];

static const char *echo_answer_of(const char *nonce, const char *headers) {
  char body[512];
  snprintf(body, sizeof(body),
           "{\"remote_addr\":\"198.51.100.9\",\"nonce\":\"%s\","
           "\"method\":\"GET\",\"headers\":[%s]}\n",
           nonce, headers);
  snprintf(echo_ok, sizeof(echo_ok),
           "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
           "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
           strlen(body), body);
  return echo_ok;
}

static chk_probe_spec spec_for(int tier, int protocol, int port) {
  chk_probe_spec s = {0};
  s.tier = tier;
  s.protocol = protocol;
  s.proxy_host = "127.0.0.1";
  s.proxy_port = (uint16_t)port;
  s.echo_url = "http://127.0.0.1:9/echo";
  s.nonce = "n0nce";
  s.target = "";
  s.resp_max = 65536;
  return s;
}

static const char *reason(const chk_probe *p) {
  return chk_reason_names[p->res.reason];
}

/* The connector's way (chk_probe_prepare, chk_dial.h): names are the
 * connector's to resolve; the probe takes the connected socket or the
 * dial's verdict. */
static void connector_way(void) {
  static chk_probe p;
  const char *host = NULL;
  uint16_t port = 0;
  chk_probe_spec sp = {0};
  sp.tier = CHK_TIER_BASIC;
  sp.protocol = PH_POOL_UPSTREAM_HTTP_CONNECT;
  sp.proxy_host = "px.example";
  sp.proxy_port = 3128;
  sp.echo_url = "http://echo.example:8089/echo";
  sp.target = "";
  sp.resp_max = 65536;
  ok(chk_probe_prepare(&p, &sp, &host, &port) == 1 && host &&
         !strcmp(host, "px.example") && port == 3128,
     "prepare: a proxy by name is dialled by the connector, by name");
  int st, rs;
  chk_dial_verdict(PH_STAGE_DNS, PH_OPEN_HOST_UNREACHABLE, 0, &st, &rs);
  chk_probe_fail(&p, st, rs);
  ok(p.res.status == CHK_FAILED && !strcmp(reason(&p), "dial_unresolved"),
     "a name without an address: FAILED dial_unresolved (the proxy's)");
  chk_probe_end(&p);

  chk_probe_spec d = sp;
  d.protocol = 0; /* the echo's direct probe */
  d.tier = CHK_TIER_EGRESS;
  d.nonce = "n0nce";
  ok(chk_probe_prepare(&p, &d, &host, &port) == 1 &&
         !strcmp(host, "echo.example") && port == 8089,
     "prepare: the echo's direct probe dials the echo URL's name");
  chk_probe_fail(&p, st, rs);
  ok(p.res.status == CHK_CHECKER_ERROR &&
         !strcmp(reason(&p), "echo_unreachable"),
     "... and its failure is the checker's: echo_unreachable");
  chk_probe_end(&p);

  script s = {.answers = {"HTTP/1.1 200 Connection established\r\n\r\n"},
              .n = 1};
  script_start(&s);
  ok(chk_probe_prepare(&p, &sp, &host, &port) == 1, "prepare again");
  int fd = dial_loopback(s.port);
  drive(&p, fd >= 0 ? chk_probe_connected(&p, fd) : 0, 2000);
  script_end(&s);
  ok(p.res.status == CHK_OK && p.fd < 0,
     "CP-6-3 BASIC on the connector's socket passes, the socket closed");
  ok(strstr(s.got, "CONNECT echo.example:8089 HTTP/1.1") != NULL,
     "... the tunnel to the echo's name (the proxy resolves it)");

  ok(chk_probe_prepare(&p, &sp, &host, &port) == 1, "prepare once more");
  chk_probe_fail(&p, CHK_CHECKER_ERROR, CHK_R_RESOLVER);
  ok(chk_probe_connected(&p, -1) == 0 && !strcmp(reason(&p), "resolver_failed"),
     "a probe already ended ignores a late socket");

  static const struct {
    int stage, code, retryable, status;
    const char *reason;
  } v[] = {
      {PH_STAGE_DNS, PH_OPEN_HOST_UNREACHABLE, 0, CHK_FAILED,
       "dial_unresolved"},
      {PH_STAGE_DNS, PH_OPEN_HOST_UNREACHABLE, 1, CHK_CHECKER_ERROR,
       "resolver_failed"},
      {PH_STAGE_DNS, PH_OPEN_TIMEOUT, 0, CHK_CHECKER_ERROR,
       "resolver_failed"},
      {PH_STAGE_POLICY, PH_OPEN_FORBIDDEN, 0, CHK_CHECKER_ERROR,
       "dial_forbidden"},
      {PH_STAGE_QUEUE, PH_OPEN_QUEUE_FULL, 1, CHK_CHECKER_ERROR,
       "no_resources"},
      {PH_STAGE_QUEUE, PH_OPEN_TIMEOUT, 0, CHK_CHECKER_ERROR,
       "no_resources"},
      {PH_STAGE_CONNECT, PH_OPEN_CONNECTION_REFUSED, 0, CHK_FAILED,
       "dial_refused"},
      {PH_STAGE_CONNECT, PH_OPEN_NETWORK_UNREACHABLE, 0, CHK_FAILED,
       "dial_unreachable"},
      {PH_STAGE_CONNECT, PH_OPEN_TIMEOUT, 0, CHK_TIMEOUT, "dial_timeout"},
      {PH_STAGE_CONNECT, PH_OPEN_INTERNAL_ERROR, 0, CHK_CHECKER_ERROR,
       "no_resources"},
  };
  int all = 1;
  for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
    chk_dial_verdict(v[i].stage, v[i].code, v[i].retryable, &st, &rs);
    if (st != v[i].status || strcmp(chk_reason_names[rs], v[i].reason)) {
      diag("verdict %zu: %d %s", i, st, chk_reason_names[rs]);
      all = 0;
    }
  }
  ok(all, "the connector's failures map to status and reason (chk_dial.h)");
}

int main(void) {
  plan_lazy();
  static chk_probe p;

  /* BASIC through CONNECT: the tunnel's answer decides. */
  script s = {.answers = {"HTTP/1.1 200 Connection established\r\n\r\n"},
              .n = 1};
  script_start(&s);
  chk_probe_spec sp = spec_for(CHK_TIER_BASIC, PH_POOL_UPSTREAM_HTTP_CONNECT,
                               s.port);
  sp.user = "u";
  sp.user_len = 1;
  sp.pass = "secret-pw";
  sp.pass_len = 9;
  run(&p, &sp, 2000);
  script_end(&s);
  ok(p.res.status == CHK_OK, "CP-6-3 BASIC: CONNECT answered 200 passes");
  ok(strstr(s.got, "CONNECT 127.0.0.1:9 HTTP/1.1") != NULL,
     "CP-6-3 BASIC without a target tunnels to the echo's host:port");
  ok(strstr(s.got, "Proxy-Authorization: Basic dTpzZWNyZXQtcHc=") != NULL,
     "CP-6-3 the task's credentials go in the handshake");
  ok(p.fd < 0 && !p.s.user, "the probe forgets the credentials at its end");

  s = (script){.answers = {"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n"},
               .n = 1};
  script_start(&s);
  sp = spec_for(CHK_TIER_BASIC, PH_POOL_UPSTREAM_HTTP_CONNECT, s.port);
  run(&p, &sp, 2000);
  script_end(&s);
  ok(p.res.status == CHK_FAILED && !strcmp(reason(&p), "auth_failed"),
     "CP-6-3 wrong credentials: FAILED auth_failed");

  s = (script){.answers = {"HTTP/1.1 403 Forbidden\r\n\r\n"}, .n = 1};
  script_start(&s);
  sp = spec_for(CHK_TIER_BASIC, PH_POOL_UPSTREAM_HTTP_CONNECT, s.port);
  run(&p, &sp, 2000);
  script_end(&s);
  ok(p.res.status == CHK_FAILED && !strcmp(reason(&p), "handshake_rejected"),
     "CP-6-3 a refused CONNECT: FAILED handshake_rejected");

  /* A port nobody listens on. */
  s = (script){.n = 0};
  script_start(&s);
  int dead = s.port;
  script_end(&s);
  sp = spec_for(CHK_TIER_BASIC, PH_POOL_UPSTREAM_SOCKS5, dead);
  run(&p, &sp, 2000);
  ok(p.res.status == CHK_FAILED && !strcmp(reason(&p), "dial_refused"),
     "CP-6-3 a killed proxy: FAILED dial_refused");

  /* A proxy that accepts and never answers. */
  s = (script){.silent = 1};
  script_start(&s);
  sp = spec_for(CHK_TIER_BASIC, PH_POOL_UPSTREAM_HTTP_CONNECT, s.port);
  run(&p, &sp, 300);
  script_end(&s);
  ok(p.res.status == CHK_TIMEOUT && !strcmp(reason(&p), "handshake_timeout"),
     "CP-6-3 a silent proxy: TIMEOUT handshake_timeout");

  sp = spec_for(CHK_TIER_BASIC, PH_POOL_UPSTREAM_HTTP_CONNECT, 3128);
  sp.proxy_host = "proxy.example";
  run(&p, &sp, 300);
  ok(p.res.status == CHK_CHECKER_ERROR && !strcmp(reason(&p), "name_not_supported"),
     "a proxy named by a DNS name without a connector: CHECKER_ERROR, no "
     "verdict");
  connector_way();

  /* EGRESS through CONNECT: the tunnel, then the echo. */
  s = (script){.answers = {"HTTP/1.1 200 OK\r\n\r\n",
                           echo_answer_of("n0nce", "")},
               .n = 2};
  script_start(&s);
  sp = spec_for(CHK_TIER_EGRESS, PH_POOL_UPSTREAM_HTTP_CONNECT, s.port);
  run(&p, &sp, 2000);
  script_end(&s);
  ok(p.res.status == CHK_OK && p.res.echo.anonymity == CHK_ANON_ELITE &&
         !strcmp(p.res.echo.egress_ip, "198.51.100.9"),
     "CP-6-4 EGRESS: the echo's address, no proxy header: elite");
  ok(strstr(s.got, "GET /echo?nonce=n0nce HTTP/1.1") &&
         strstr(s.got, "X-Proxyhost-Nonce: n0nce"),
     "CP-6-4 the nonce goes as a query parameter and a header");

  /* EGRESS through an `http` proxy in absolute form, which adds Via. */
  s = (script){.answers = {echo_answer_of("n0nce",
                                          "[\"Via\",\"1.1 tinyproxy\"]")},
               .n = 1};
  script_start(&s);
  sp = spec_for(CHK_TIER_EGRESS, PH_POOL_UPSTREAM_HTTP, s.port);
  sp.user = "u";
  sp.user_len = 1;
  sp.pass = "p";
  sp.pass_len = 1;
  run(&p, &sp, 2000);
  script_end(&s);
  ok(p.res.status == CHK_OK && p.res.echo.anonymity == CHK_ANON_ANONYMOUS,
     "CP-6-4 a proxy header without our address: anonymous");
  ok(strstr(s.got, "GET http://127.0.0.1:9/echo?nonce=n0nce HTTP/1.1") &&
         strstr(s.got, "Proxy-Authorization: Basic dTpw"),
     "CP-6-4 an `http` proxy gets the absolute form with its credentials");

  /* A slot's probe is reused check after check and reset only where a
   * check reads before it writes (issue 26 round 5): a probe left full
   * of another check's bytes runs a BASIC and an EGRESS check as a fresh
   * one does. */
  s = (script){.answers = {"HTTP/1.1 200 Connection established\r\n\r\n"},
               .n = 1};
  script_start(&s);
  memset(&p, 0xA5, sizeof(p));
  sp = spec_for(CHK_TIER_BASIC, PH_POOL_UPSTREAM_HTTP_CONNECT, s.port);
  run(&p, &sp, 2000);
  script_end(&s);
  ok(p.res.status == CHK_OK && !strcmp(reason(&p), "none") && p.fd < 0 &&
         strstr(s.got, "CONNECT 127.0.0.1:9 HTTP/1.1\r\n") == s.got,
     "CP-6-3 a reused probe (no full reset) runs a BASIC check as a fresh "
     "one");
  s = (script){.answers = {echo_answer_of("n0nce", "")}, .n = 1};
  script_start(&s);
  memset(&p, 0xA5, sizeof(p));
  sp = spec_for(CHK_TIER_EGRESS, PH_POOL_UPSTREAM_HTTP, s.port);
  run(&p, &sp, 2000);
  script_end(&s);
  ok(p.res.status == CHK_OK && p.res.echo.anonymity == CHK_ANON_ELITE &&
         !strcmp(p.res.echo.egress_ip, "198.51.100.9") && !p.resp &&
         strstr(s.got, "GET http://127.0.0.1:9/echo?nonce=n0nce HTTP/1.1") ==
             s.got &&
         !strstr(s.got, "Proxy-Authorization"),
     "CP-6-4 a reused probe runs an EGRESS check as a fresh one (no "
     "credentials left from the last)");

  s = (script){.answers = {echo_answer_of(
                   "n0nce", "[\"X-Forwarded-For\",\"127.0.0.1\"]")},
               .n = 1};
  script_start(&s);
  sp = spec_for(CHK_TIER_EGRESS, PH_POOL_UPSTREAM_HTTP, s.port);
  run(&p, &sp, 2000);
  script_end(&s);
  ok(p.res.status == CHK_OK && p.res.echo.anonymity == CHK_ANON_TRANSPARENT,
     "CP-6-4 our own address in X-Forwarded-For: transparent");

  s = (script){.answers = {"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\n"
                           "<html></html>"},
               .n = 1};
  script_start(&s);
  sp = spec_for(CHK_TIER_EGRESS, PH_POOL_UPSTREAM_HTTP, s.port);
  run(&p, &sp, 2000);
  script_end(&s);
  ok(p.res.status == CHK_FAILED && !strcmp(reason(&p), "bad_echo"),
     "CP-6-4 a canned page: FAILED bad_echo");

  s = (script){.answers = {echo_answer_of("stale", "")}, .n = 1};
  script_start(&s);
  sp = spec_for(CHK_TIER_EGRESS, PH_POOL_UPSTREAM_HTTP, s.port);
  run(&p, &sp, 2000);
  script_end(&s);
  ok(p.res.status == CHK_FAILED && !strcmp(reason(&p), "bad_echo"),
     "CP-6-4 a replayed answer (another nonce): FAILED bad_echo");

  static char huge[70000];
  snprintf(huge, sizeof(huge), "HTTP/1.1 200 OK\r\nContent-Length: 68000\r\n\r\n");
  memset(huge + strlen(huge), 'x', 68000);
  s = (script){.answers = {huge}, .n = 1};
  script_start(&s);
  sp = spec_for(CHK_TIER_EGRESS, PH_POOL_UPSTREAM_HTTP, s.port);
  sp.resp_max = 4096;
  run(&p, &sp, 2000);
  script_end(&s);
  ok(p.res.status == CHK_FAILED && !strcmp(reason(&p), "response_too_large"),
     "an answer over response_max: FAILED response_too_large");

  /* TARGET: a tunnel to host:port, a GET of a URL. */
  s = (script){.answers = {"HTTP/1.1 502 Bad Gateway\r\n\r\n"}, .n = 1};
  script_start(&s);
  sp = spec_for(CHK_TIER_TARGET, PH_POOL_UPSTREAM_HTTP_CONNECT, s.port);
  sp.target = "203.0.113.5:443";
  run(&p, &sp, 2000);
  script_end(&s);
  ok(p.res.status == CHK_FAILED && !strcmp(reason(&p), "target_unreachable") &&
         strstr(s.got, "CONNECT 203.0.113.5:443 "),
     "CP-6-5 TARGET host:port: the proxy's refusal is target_unreachable");

  s = (script){.answers = {"HTTP/1.1 204 No Content\r\n\r\n"}, .n = 1};
  script_start(&s);
  sp = spec_for(CHK_TIER_TARGET, PH_POOL_UPSTREAM_HTTP, s.port);
  sp.target = "http://203.0.113.5/health";
  run(&p, &sp, 2000);
  script_end(&s);
  ok(p.res.status == CHK_OK &&
         strstr(s.got, "GET http://203.0.113.5/health HTTP/1.1"),
     "CP-6-5 TARGET URL: a GET through the proxy, any answer below 500");

  /* The echo probed directly. */
  s = (script){.answers = {echo_answer_of("d1", "")}, .n = 1};
  script_start(&s);
  char url[64];
  snprintf(url, sizeof(url), "http://127.0.0.1:%d/", s.port);
  sp = spec_for(CHK_TIER_EGRESS, 0, 0);
  sp.echo_url = url;
  sp.nonce = "d1";
  run(&p, &sp, 2000);
  script_end(&s);
  ok(p.res.status == CHK_OK, "the direct probe of the echo passes");
  snprintf(url, sizeof(url), "http://127.0.0.1:%d/", dead);
  sp.echo_url = url;
  run(&p, &sp, 2000);
  ok(p.res.status == CHK_CHECKER_ERROR &&
         !strcmp(reason(&p), "echo_unreachable"),
     "CP-6-4 the echo down, probed directly: CHECKER_ERROR, the checker's "
     "own failure");

  /* Bad tasks. */
  sp = spec_for(CHK_TIER_TARGET, PH_POOL_UPSTREAM_HTTP, 1);
  sp.target = "";
  run(&p, &sp, 100);
  ok(p.res.status == CHK_CHECKER_ERROR && !strcmp(reason(&p), "bad_task"),
     "a TARGET task without a target: CHECKER_ERROR bad_task (never a "
     "failure of the proxy)");
  /* A BASIC task without a target before the checker knows an echo (its
   * first tasks, issue 26 round 2): nothing to tunnel to is the task's
   * fault, not the proxy's. */
  sp = spec_for(CHK_TIER_BASIC, PH_POOL_UPSTREAM_HTTP_CONNECT, 1);
  sp.echo_url = "";
  run(&p, &sp, 100);
  ok(p.res.status == CHK_CHECKER_ERROR && !strcmp(reason(&p), "bad_task"),
     "CP-6-7 a BASIC task with neither a target nor an echo URL: "
     "CHECKER_ERROR bad_task, no verdict on the proxy");
  return done_testing();
}
