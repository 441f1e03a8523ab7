/* SPDX-License-Identifier: BSD-2-Clause */
/* A test driver for the upstream handshakes (modules/upstream/up_hs.h) over
 * blocking sockets, for t/integration/upstream_hs.sh: it connects to a
 * real proxy, asks it for a tunnel to a target following the codec's I/O
 * rule (peek at most want(), consume what feed() says), and then checks
 * the tunnel: the target's banner must be the first bytes after the
 * handshake (none eaten by it), and "ping" must come back.
 *
 *   up_hs_probe --proxy 127.0.0.1:PORT --protocol connect|socks5
 *               --target HOST:PORT [--user U --pass P]
 *               [--banner TEXT]
 *
 * Prints one line: "done banner=ok|bad echo=ok|bad", or the state and
 * the status ("refused status=5", "auth status=407", "malformed
 * status=-1"), and exits 0; 2 on a usage or socket error (its reason on
 * stderr, never a credential). Every socket operation has a 5 s timeout
 * and every loop a bound. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <proxyhost/abi.h>
#include <proxyhost/pool_store.h>

#include "upstream/up_hs.h"

#define STEPS_MAX 10000

static int fail(const char *what) {
  fprintf(stderr, "up_hs_probe: %s%s%s\n", what, errno ? ": " : "",
          errno ? strerror(errno) : "");
  return 2;
}

/* host:port, with an IPv6 host in brackets; host is written into out. */
static int split_hostport(const char *s, char *out, size_t cap,
                          uint16_t *port) {
  const char *colon = strrchr(s, ':');
  if (!colon || colon == s)
    return -1;
  size_t n = (size_t)(colon - s);
  if (n >= cap)
    return -1;
  memcpy(out, s, n);
  out[n] = '\0';
  char *end;
  long p = strtol(colon + 1, &end, 10);
  if (*end || p < 1 || p > 65535)
    return -1;
  *port = (uint16_t)p;
  return 0;
}

static int dial(const char *hostport) {
  char host[64];
  uint16_t port;
  if (split_hostport(hostport, host, sizeof(host), &port) != 0)
    return -1;
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof(sa));
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
    return -1;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return -1;
  struct timeval tv = {5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

static int write_all(int fd, const uint8_t *p, size_t n) {
  for (int steps = 0; n > 0 && steps < STEPS_MAX; steps++) {
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return -1;
    p += k;
    n -= (size_t)k;
  }
  return n == 0 ? 0 : -1;
}

/* Reads exactly n bytes (or fewer at EOF): how many. */
static size_t read_exact(int fd, uint8_t *p, size_t n) {
  size_t got = 0;
  for (int steps = 0; got < n && steps < STEPS_MAX; steps++) {
    ssize_t k = recv(fd, p + got, n - got, 0);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      break;
    got += (size_t)k;
  }
  return got;
}

/* The handshake, by the I/O rule of up_hs.h. -1 on a socket error. */
static int handshake(int fd, up_hs *h, up_hs_state *st) {
  static uint8_t buf[UP_HS_HEAD_MAX];
  *st = UP_HS_MORE;
  for (int steps = 0; steps < STEPS_MAX && *st == UP_HS_MORE; steps++) {
    const uint8_t *d;
    size_t n = up_hs_pending_out(h, &d);
    if (n > 0) {
      if (write_all(fd, d, n) != 0)
        return -1;
      up_hs_sent(h, n);
    }
    size_t want = up_hs_want(h);
    if (want == 0)
      continue;
    if (want > sizeof(buf))
      want = sizeof(buf);
    ssize_t k = recv(fd, buf, want, MSG_PEEK);
    if (k < 0 && errno == EINTR)
      continue;
    if (k < 0)
      return -1;
    size_t consume = 0;
    *st = up_hs_feed(h, buf, (size_t)k, k == 0, &consume);
    if (consume > 0 && read_exact(fd, buf, consume) != consume)
      return -1;
  }
  return *st == UP_HS_MORE ? -1 : 0;
}

int main(int argc, char **argv) {
  const char *proxy = NULL, *protocol = NULL, *target = NULL, *user = NULL,
             *pass = NULL, *banner = NULL;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--proxy"))
      proxy = argv[i + 1];
    else if (!strcmp(argv[i], "--protocol"))
      protocol = argv[i + 1];
    else if (!strcmp(argv[i], "--target"))
      target = argv[i + 1];
    else if (!strcmp(argv[i], "--user"))
      user = argv[i + 1];
    else if (!strcmp(argv[i], "--pass"))
      pass = argv[i + 1];
    else if (!strcmp(argv[i], "--banner"))
      banner = argv[i + 1];
    else
      return fail("unknown option");
  }
  errno = 0;
  if (!proxy || !protocol || !target)
    return fail("usage: --proxy H:P --protocol connect|socks5 --target H:P");
  int proto = !strcmp(protocol, "socks5")    ? PH_POOL_UPSTREAM_SOCKS5
              : !strcmp(protocol, "connect") ? PH_POOL_UPSTREAM_HTTP_CONNECT
                                             : 0;
  char host[300];
  uint16_t port;
  if (split_hostport(target, host, sizeof(host), &port) != 0)
    return fail("bad --target");
  up_hs h;
  if (up_hs_init(&h, proto, host, port, user, user ? (uint32_t)strlen(user) : 0,
                 pass, pass ? (uint32_t)strlen(pass) : 0) != PH_OK)
    return fail("up_hs_init refused the arguments");
  int fd = dial(proxy);
  if (fd < 0) {
    up_hs_wipe(&h);
    return fail("cannot connect to the proxy");
  }
  up_hs_state st;
  errno = 0;
  if (handshake(fd, &h, &st) != 0) {
    up_hs_wipe(&h);
    close(fd);
    return fail("socket error during the handshake");
  }
  up_hs_wipe(&h);
  if (st != UP_HS_DONE) {
    printf("%s status=%d\n", up_hs_state_name(st), h.status);
    close(fd);
    return 0;
  }
  /* The tunnel: the target speaks first, then echoes. */
  int banner_ok = 1;
  if (banner) {
    uint8_t got[256];
    size_t n = strlen(banner);
    banner_ok = n < sizeof(got) && read_exact(fd, got, n) == n &&
                memcmp(got, banner, n) == 0;
  }
  uint8_t echo[5];
  int echo_ok = write_all(fd, (const uint8_t *)"ping\n", 5) == 0 &&
                read_exact(fd, echo, 5) == 5 && memcmp(echo, "ping\n", 5) == 0;
  printf("done banner=%s echo=%s\n", banner_ok ? "ok" : "bad",
         echo_ok ? "ok" : "bad");
  close(fd);
  return 0;
}
