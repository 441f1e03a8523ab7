/* http_proxy: the connection buffers (grown on demand up to a limit,
 * freed while a connection idles) and the socket reads and writes that
 * fill and drain them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "http_proxy_int.h"

/* The first allocation of a connection buffer; buffers grow by doubling
 * up to their limit. */
#define BUF_FIRST 4096u

void buf_free(iobuf *b) {
  free(b->data);
  memset(b, 0, sizeof(*b));
}

void buf_compact(iobuf *b, size_t *scan) {
  if (b->off == 0)
    return;
  size_t n = pending(b);
  if (n)
    memmove(b->data, b->data + b->off, n);
  if (scan)
    *scan = *scan > b->off ? *scan - b->off : 0;
  b->off = 0;
  b->len = n;
}

/* Room for at least one more byte within max total bytes; 0 or -1. */
static int buf_room(iobuf *b, size_t max, size_t *scan) {
  if (b->len < b->cap)
    return 0;
  if (b->off > 0) {
    buf_compact(b, scan);
    if (b->len < b->cap)
      return 0;
  }
  if (b->cap >= max)
    return -1;
  size_t cap = b->cap ? b->cap * 2 : BUF_FIRST;
  if (cap > max)
    cap = max;
  char *d = realloc(b->data, cap);
  if (!d)
    return -1;
  b->data = d;
  b->cap = cap;
  return 0;
}

int buf_set(iobuf *b, const char *s, size_t n) {
  if (b->cap < n) {
    char *d = realloc(b->data, n);
    if (!d)
      return -1;
    b->data = d;
    b->cap = n;
  }
  memcpy(b->data, s, n);
  b->off = 0;
  b->len = n;
  return 0;
}

int buf_read(int fd, iobuf *b, size_t max, size_t *scan, size_t *got) {
  if (buf_room(b, max, scan) < 0)
    return RD_FULL;
  size_t want = (max < b->cap ? max : b->cap) - b->len;
  ssize_t n = recv(fd, b->data + b->len, want, 0);
  if (n > 0) {
    b->len += (size_t)n;
    *got = (size_t)n;
    return RD_DATA;
  }
  if (n == 0)
    return RD_EOF;
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
    return RD_AGAIN;
  return RD_ERROR;
}

ssize_t send_some(int fd, const char *data, size_t n) {
  ssize_t w = send(fd, data, n, MSG_NOSIGNAL);
  if (w >= 0)
    return w;
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
    return 0;
  return -1;
}
