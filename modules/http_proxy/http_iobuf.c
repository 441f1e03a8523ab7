/* SPDX-License-Identifier: BSD-2-Clause */
/* http_proxy: the connection buffers (grown on demand up to a limit,
 * freed while a connection idles), the reads and writes that fill and
 * drain them (a socket, or an upstream stream: stream.h), and the bodies
 * decoded in them and framed again. A leaf: it calls no phase. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "http_proxy_int.h"

/* The first allocation of a connection buffer; buffers grow by doubling
 * up to their limit. */
#define BUF_FIRST 4096u

void hp_buf_free(iobuf *b) {
  free(b->data);
  memset(b, 0, sizeof(*b));
}

void hp_buf_wipe(iobuf *b) {
  if (b->data)
    explicit_bzero(b->data, b->cap);
  hp_buf_free(b);
}

void hp_buf_compact(iobuf *b, size_t *scan) {
  if (b->off == 0)
    return;
  size_t n = hp_pending(b);
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
    hp_buf_compact(b, scan);
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

int hp_buf_set(iobuf *b, const char *s, size_t n) {
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

/* A stream's bytes are copied into the buffer and consumed at once: the
 * buffer is bounded (buffer_size), so the stream's window reopens by at
 * most that before the bytes are forwarded. */
static int stream_read(ph_stream *st, iobuf *b, size_t want, size_t *got) {
  const void *p;
  ssize_t k = ph_stream_peek(st, &p);
  if (k == PH_EAGAIN)
    return RD_AGAIN;
  if (k == 0)
    return RD_EOF;
  if (k < 0)
    return RD_ERROR;
  size_t n = (size_t)k < want ? (size_t)k : want;
  memcpy(b->data + b->len, p, n);
  ph_stream_consume(st, n);
  b->len += n;
  *got = n;
  return RD_DATA;
}

int hp_buf_read(stream_end e, iobuf *b, size_t max, size_t *scan, size_t *got) {
  if (buf_room(b, max, scan) < 0)
    return RD_FULL;
  size_t want = (max < b->cap ? max : b->cap) - b->len;
  if (e.stream)
    return stream_read(e.stream, b, want, got);
  ssize_t n = recv(e.fd, b->data + b->len, want, 0);
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

/* Writes the pieces in order, as far as the end takes them: the bytes
 * written, or -1 on an error. A stream takes piece by piece (it copies). */
static ssize_t send_iov(stream_end e, struct iovec *iov, int n) {
  if (!e.stream) {
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
    ssize_t w = sendmsg(e.fd, &m, MSG_NOSIGNAL);
    if (w >= 0)
      return w;
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
  }
  size_t total = 0;
  for (int i = 0; i < n; i++) {
    ssize_t w = ph_stream_write(e.stream, iov[i].iov_base, iov[i].iov_len);
    if (w == PH_EAGAIN)
      break;
    if (w < 0)
      return -1;
    total += (size_t)w;
    if ((size_t)w < iov[i].iov_len)
      break; /* full */
  }
  return (ssize_t)total;
}

ssize_t hp_send_some(stream_end e, const char *data, size_t n) {
  struct iovec iov = {(void *)data, n};
  return send_iov(e, &iov, 1);
}

int hp_buf_decode(iobuf *b, size_t *dec, hp_body_decoder *d) {
  if (*dec >= b->len) /* nothing new (and maybe no buffer at all) */
    return d->failed ? HB_ERROR : d->done ? HB_DONE : HB_MORE;
  char *p = b->data + *dec;
  size_t n = b->len - *dec, used = 0, made = 0;
  int r = hp_body_decode(d, p, n, p, &used, &made);
  if (r == HB_ERROR)
    return r;
  if (used < n) /* the body ended: what follows moves up to the payload */
    memmove(p + made, p + used, n - used);
  b->len -= used - made;
  *dec += made;
  return r;
}

ssize_t hp_buf_send_body(stream_end out, iobuf *b, size_t dec,
                         hp_body_encoder *e, int end) {
  size_t total = 0;
  for (;;) {
    hp_body_plan p;
    hp_body_encode_plan(e, dec - b->off, end, &p);
    size_t want = p.pre_len + p.payload + p.post_len;
    if (want == 0)
      return (ssize_t)total;
    struct iovec iov[3];
    int n = 0;
    if (p.pre_len)
      iov[n++] = (struct iovec){(void *)p.pre, p.pre_len};
    if (p.payload)
      iov[n++] = (struct iovec){b->data + b->off, p.payload};
    if (p.post_len)
      iov[n++] = (struct iovec){(void *)p.post, p.post_len};
    ssize_t w = send_iov(out, iov, n);
    if (w < 0)
      return -1;
    b->off += hp_body_encode_sent(e, &p, (size_t)w);
    total += (size_t)w;
    if ((size_t)w < want)
      return (ssize_t)total; /* the socket is full */
  }
}

int hp_flush_client(conn *c) {
  while (hp_pending(&c->cout)) {
    ssize_t w = hp_send_some(hp_client_end(c), c->cout.data + c->cout.off,
                             hp_pending(&c->cout));
    if (w < 0)
      return -1;
    if (w == 0)
      return 0;
    c->cout.off += (size_t)w;
    c->last_ms = hp_api->now_ms(c->hp->ctx);
    if (c->state == S_EXCHANGE) { /* a response head from the upstream */
      c->x.resp_started = 1;
      hp_up_first_byte(c);
      c->bytes_down += (uint64_t)w;
      hp_api->inc(c->hp->sm.bytes[SM_HTTP][SM_DOWN], (uint64_t)w);
    }
  }
  c->cout.off = c->cout.len = 0;
  return 1;
}
