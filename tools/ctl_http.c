/* SPDX-License-Identifier: BSD-2-Clause */
/* See ctl_http.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "ctl_http.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* Splits "host:port" / "[v6]:port". 0 or -1. */
static int split(const char *addr, char *host, size_t hcap, char *port,
                 size_t pcap) {
  const char *colon;
  if (addr[0] == '[') {
    const char *close = strchr(addr, ']');
    if (!close || close[1] != ':' || (size_t)(close - addr - 1) >= hcap)
      return -1;
    memcpy(host, addr + 1, (size_t)(close - addr - 1));
    host[close - addr - 1] = '\0';
    colon = close + 1;
  } else {
    colon = strrchr(addr, ':');
    if (!colon || (size_t)(colon - addr) >= hcap || colon == addr)
      return -1;
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = '\0';
  }
  if (!colon[1] || strlen(colon + 1) >= pcap ||
      strspn(colon + 1, "0123456789") != strlen(colon + 1))
    return -1;
  snprintf(port, pcap, "%s", colon + 1);
  return 0;
}

/* The address's socket address (getaddrinfo's, to free), or NULL with
 * the reason. */
static struct addrinfo *resolve(const char *addr, char *err, size_t errlen) {
  char host[128], port[8];
  if (split(addr, host, sizeof(host), port, sizeof(port)) < 0) {
    snprintf(err, errlen, "bad admin address \"%s\": want IPv4:PORT or "
             "[IPv6]:PORT", addr);
    return NULL;
  }
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
                           .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV};
  struct addrinfo *ai = NULL;
  if (getaddrinfo(host, port, &hints, &ai) != 0 || !ai) {
    snprintf(err, errlen, "bad admin address \"%s\": numeric addresses "
             "only", addr);
    return NULL;
  }
  return ai;
}

int ctl_admin_check(const char *addr, char *err, size_t errlen) {
  struct addrinfo *ai = resolve(addr, err, errlen);
  if (!ai)
    return -1;
  freeaddrinfo(ai);
  return 0;
}

static int connect_to(const char *addr, int timeout_ms, char *err,
                      size_t errlen) {
  struct addrinfo *ai = resolve(addr, err, errlen);
  if (!ai)
    return -1;
  int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  if (fd >= 0) {
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  }
  if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
    snprintf(err, errlen, "cannot reach the admin listener at %s: %s", addr,
             strerror(errno));
    if (fd >= 0)
      close(fd);
    fd = -1;
  }
  freeaddrinfo(ai);
  return fd;
}

static int send_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

int ctl_request(const char *addr, const char *method, const char *path,
                const char *token, const char *body, int timeout_ms,
                ctl_response *r, char *err, size_t errlen) {
  memset(r, 0, sizeof(*r));
  int fd = connect_to(addr, timeout_ms, err, errlen);
  if (fd < 0)
    return -1;
  size_t blen = body ? strlen(body) : 0;
  size_t cap = 1024 + strlen(path) + (token ? strlen(token) : 0);
  char *head = malloc(cap);
  int n = head ? snprintf(head, cap,
                          "%s %s HTTP/1.1\r\nHost: %s\r\n"
                          "User-Agent: proxyhostctl\r\n"
                          "Accept: application/json\r\n"
                          "%s%s%s"
                          "%s"
                          "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                          method, path, addr, token ? "Authorization: Bearer " : "",
                          token ? token : "", token ? "\r\n" : "",
                          body ? "Content-Type: application/json\r\n" : "",
                          blen)
               : -1;
  int rc = -1;
  char *resp = NULL;
  size_t len = 0;
  if (n < 0 || (size_t)n >= cap || send_all(fd, head, (size_t)n) < 0 ||
      (blen && send_all(fd, body, blen) < 0)) {
    snprintf(err, errlen, "cannot send to the admin listener at %s: %s",
             addr, strerror(errno));
    goto out;
  }
  resp = malloc(CTL_RESPONSE_MAX + 1);
  if (!resp) {
    snprintf(err, errlen, "out of memory");
    goto out;
  }
  for (;;) {
    ssize_t got = recv(fd, resp + len, CTL_RESPONSE_MAX - len, 0);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      snprintf(err, errlen, "no answer from the admin listener at %s: %s",
               addr, errno == EAGAIN ? "timed out" : strerror(errno));
      goto out;
    }
    if (got == 0)
      break;
    len += (size_t)got;
    if (len == CTL_RESPONSE_MAX) {
      snprintf(err, errlen, "the answer is larger than %u bytes",
               CTL_RESPONSE_MAX);
      goto out;
    }
  }
  resp[len] = '\0';
  int status;
  char *end = strstr(resp, "\r\n\r\n");
  if (sscanf(resp, "HTTP/1.%*d %d ", &status) != 1 || !end) {
    snprintf(err, errlen, "the admin listener at %s did not answer HTTP",
             addr);
    goto out;
  }
  r->status = status;
  r->len = len - (size_t)(end + 4 - resp);
  r->body = malloc(r->len + 1);
  if (!r->body) {
    snprintf(err, errlen, "out of memory");
    goto out;
  }
  memcpy(r->body, end + 4, r->len);
  r->body[r->len] = '\0';
  rc = 0;
out:
  if (head)
    memset(head, 0, cap); /* it held the token */
  free(head);
  free(resp);
  close(fd);
  return rc;
}
