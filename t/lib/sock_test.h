/* SPDX-License-Identifier: BSD-2-Clause */
/* Loopback TCP sockets for unit tests: a listener on a free port, a
 * connection to a port, a connected pair. */
#ifndef PH_SOCK_TEST_H
#define PH_SOCK_TEST_H

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

static inline void sock_test_nonblock(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* fd when ok (non-blocking when nonblock); else fd closed and -1. */
static inline int sock_test_ready_(int fd, int ok, int nonblock) {
  if (!ok) {
    if (fd >= 0)
      close(fd);
    return -1;
  }
  if (nonblock)
    sock_test_nonblock(fd);
  return fd;
}

/* A listener on 127.0.0.1 and a free port (stored in *port), with the
 * given backlog, non-blocking when nonblock. -1 when any step fails. */
static inline int sock_test_listen(int *port, int backlog, int nonblock) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof(a);
  int ok = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
           listen(fd, backlog) == 0 &&
           getsockname(fd, (struct sockaddr *)&a, &al) == 0;
  if (ok)
    *port = ntohs(a.sin_port);
  return sock_test_ready_(fd, ok, nonblock);
}

/* A connection to 127.0.0.1:port, connected blocking, then non-blocking
 * when nonblock. -1 when the socket or the connect fails. */
static inline int sock_test_dial(int port, int nonblock) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  return sock_test_ready_(
      fd, fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0,
      nonblock);
}

/* Two connected TCP sockets on loopback (blocking): sv[0] dialled,
 * sv[1] accepted. 0, or -1. */
static inline int sock_test_tcp_pair(int sv[2]) {
  int port;
  int l = sock_test_listen(&port, 1, 0);
  if (l < 0)
    return -1;
  sv[0] = sock_test_dial(port, 0);
  sv[1] = sv[0] < 0 ? -1 : accept(l, NULL, NULL);
  close(l);
  if (sv[1] < 0 && sv[0] >= 0)
    close(sv[0]);
  return sv[1] < 0 ? -1 : 0;
}

#endif
