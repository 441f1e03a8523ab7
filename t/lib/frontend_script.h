/* SPDX-License-Identifier: BSD-2-Clause */
/* The one driver of the frontends' send/wait/expect sequences (issue 25
 * item 4; varnishtest's idea, in C): a case is a table of rows, each an
 * action of the client, of the target (the origin the fake connector
 * dialled) or of the fake connector, or what must hold then, run in
 * order against a mock host. A row with a description is one TAP line
 * named by it (cite the requirement ids there); one without is a step,
 * silent unless it fails (then a "not ok" line naming its row).
 *
 *   static const fs_row bind_rows[] = {
 *       FS_CONNECT(), FS_SEND_LIT("\x05\x01\x00"), FS_EXPECT_LIT("\x05\x00", NULL),
 *       FS_SEND_LIT("\x05\x02\x00\x01\x7f\x00\x00\x01\x00\x50"),
 *       FS_EXPECT_PREFIX_LIT("\x05\x07", 10, "TM-PROTO-7: BIND -> 0x07"),
 *       FS_CLOSED("then closed"), FS_END};
 *   fs_ctx s = {.m = M, .port = F.port, .fc = &FC, .target_l = -1};
 *   fs_run(&s, bind_rows);
 *
 * Rows of the client (FS_T_... of the target: the same on the socket the
 * last FS_ACCEPT took from target_l; FS_C2_... of a second client):
 *   FS_CONNECT()              a new client to 127.0.0.1:port (the last
 *                             one is closed)
 *   FS_ACCEPT(what)           the connector's connection to target_l
 *                             arrives (the last one stays open until the
 *                             run ends: FS_T_CLOSE it before if need be)
 *   FS_SEND(p, n), FS_SEND_LIT(lit), FS_SEND_STR(s)   bytes sent; in
 *                             FS_SEND_STR "$TPORT" is target_port
 *   FS_SHUT(), FS_CLOSE()     half-close (SHUT_WR), close
 *   FS_EXPECT(p, n, what)     exactly these n bytes come next
 *   FS_EXPECT_PREFIX(p, n, total, what)  total bytes come next, the
 *                             first n of them these
 *   FS_SILENT(ms, what)       no byte comes within ms
 *   FS_CLOSED(what)           the peer closes (what came before EOF is
 *                             added to the message FS_HAS looks at)
 *   FS_KEPT_CLOSED(ms, what)  the target the last FS_ACCEPT replaced is
 *                             closed by the proxy
 *   FS_MSG()                  one whole HTTP message comes (a response to
 *                             the client, a request to the target; or
 *                             EOF): what the next rows look at (an
 *                             EXPECT reads what comes after it)
 *   FS_STARTS(s, what), FS_HAS(s, what), FS_LACKS(s, what)  that message
 *                             starts with, holds, lacks s ("$TPORT" too)
 *   FS_BODY(s, what)          what follows its head is s exactly
 *   FS_EOF(what), FS_OPEN(what)  it ended at EOF, or not
 *   FS_UNTIL(s, what), FS_UNTIL_EOF(what)  more is read into that message
 *                             until it holds s, until EOF
 * Rows of the loop, the connector and the metrics:
 *   FS_RUN(ms)                the loop runs ms
 *   FS_METRIC(name, labels, delta, what)  the series moved by delta
 *                             since the run began (ph_mock_metric; a
 *                             series not rendered is 0)
 *   FS_METRIC_IS(name, labels, v, what)  its value is v
 *   FS_PENDING(n, what)       the connector has n opens pending
 *   FS_OPENS(d, what), FS_CANCELS(d, what)  the connector saw d opens,
 *                             d cancels since the run began
 *   FS_RELEASE(n, what)       fake_connector_release answered n opens
 *   FS_LAST_HOST(h, what), FS_LAST_PRINCIPAL(p, what),
 *   FS_LAST_LISTENER(l, what), FS_LAST_SESSION("[v]", what)  the
 *                             connector's last request had it
 *   FS_COUNTER_IS(&x, v, what)  the test's int x is v (FA.checks, say)
 *   FS_CHECK(fn, what)        the test's condition fn(s) holds
 *   FS_WAIT(fn, ms, what)     the loop runs until fn(s) holds, within ms
 *
 * Every wait is bounded by loop time (ms, 1000 when 0; a safety bound,
 * never what is asserted). fs_run yields how many rows failed; both
 * sockets are closed at the end. Header only, like loop_test.h: its TAP
 * lines count in the test's tap.h. */
#ifndef PH_FRONTEND_SCRIPT_H
#define PH_FRONTEND_SCRIPT_H

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <proxyhost/mock.h>

#include "fake_connector.h"
#include "sock_test.h"
#include "tap.h"

typedef enum fs_op {
  FS_OP_END = 0,
  FS_OP_CONNECT,
  FS_OP_ACCEPT,
  FS_OP_SEND,
  FS_OP_SHUT,
  FS_OP_CLOSE,
  FS_OP_RUN,
  FS_OP_EXPECT,
  FS_OP_SILENT,
  FS_OP_CLOSED,
  FS_OP_KEPT_CLOSED,
  FS_OP_MSG,
  FS_OP_UNTIL,
  FS_OP_STARTS,
  FS_OP_HAS,
  FS_OP_LACKS,
  FS_OP_EOF,
  FS_OP_BODY,
  FS_OP_METRIC,
  FS_OP_PENDING,
  FS_OP_OPENS,
  FS_OP_CANCELS,
  FS_OP_RELEASE,
  FS_OP_LAST_HOST,
  FS_OP_LAST_PRINCIPAL,
  FS_OP_LAST_LISTENER,
  FS_OP_LAST_SESSION,
  FS_OP_COUNTER,
  FS_OP_CHECK,
  FS_OP_WAIT
} fs_op;

typedef struct fs_ctx fs_ctx;

typedef struct fs_row {
  fs_op op;
  int peer;         /* 0: the client, 1: the target, 2: a second client */
  const char *data; /* bytes, a host, a principal, a metric's name */
  size_t len;       /* of data (0: strlen); EXPECT: the bytes compared */
  size_t total;     /* EXPECT: the bytes read (0: len) */
  const char *labels;
  double n;                /* a count, a value or a delta */
  int ms;                  /* a bound; 0: 1000 */
  int flag;                /* METRIC: absolute; EOF: want it open */
  int (*cond)(fs_ctx *s);  /* CHECK, WAIT */
  const int *counter;      /* COUNTER */
  const char *what;        /* the TAP line; NULL: a step */
} fs_row;

#define FS_END {.op = FS_OP_END}
#define FS_CONNECT() {.op = FS_OP_CONNECT}
#define FS_ACCEPT(w) {.op = FS_OP_ACCEPT, .peer = 1, .what = (w)}
#define FS_SEND(p, n) {.op = FS_OP_SEND, .data = (p), .len = (n)}
#define FS_SEND_LIT(lit) FS_SEND((lit), sizeof(lit) - 1)
#define FS_SEND_STR(s) {.op = FS_OP_SEND, .data = (s), .flag = 1}
#define FS_SHUT() {.op = FS_OP_SHUT}
#define FS_CLOSE() {.op = FS_OP_CLOSE}
#define FS_RUN(t) {.op = FS_OP_RUN, .ms = (t)}
#define FS_EXPECT(p, n, w)                                                     \
  {.op = FS_OP_EXPECT, .data = (p), .len = (n), .what = (w)}
#define FS_EXPECT_LIT(lit, w) FS_EXPECT((lit), sizeof(lit) - 1, (w))
#define FS_EXPECT_PREFIX(p, n, t, w)                                           \
  {.op = FS_OP_EXPECT, .data = (p), .len = (n), .total = (t), .what = (w)}
#define FS_EXPECT_PREFIX_LIT(lit, t, w)                                        \
  FS_EXPECT_PREFIX((lit), sizeof(lit) - 1, (t), (w))
#define FS_SILENT(t, w) {.op = FS_OP_SILENT, .ms = (t), .what = (w)}
#define FS_CLOSED(w) {.op = FS_OP_CLOSED, .ms = 1500, .what = (w)}
#define FS_MSG() {.op = FS_OP_MSG}
#define FS_STARTS(s, w) {.op = FS_OP_STARTS, .data = (s), .what = (w)}
#define FS_HAS(s, w) {.op = FS_OP_HAS, .data = (s), .what = (w)}
#define FS_LACKS(s, w) {.op = FS_OP_LACKS, .data = (s), .what = (w)}
#define FS_EOF(w) {.op = FS_OP_EOF, .what = (w)}
#define FS_BODY(s, w) {.op = FS_OP_BODY, .data = (s), .what = (w)}
#define FS_UNTIL(s, w) {.op = FS_OP_UNTIL, .data = (s), .what = (w)}
#define FS_UNTIL_EOF(w) {.op = FS_OP_UNTIL, .what = (w)}
#define FS_OPEN(w) {.op = FS_OP_EOF, .flag = 1, .what = (w)}
/* The target's: the same rows on the socket FS_ACCEPT took. */
#define FS_T_SEND_STR(s) {.op = FS_OP_SEND, .peer = 1, .data = (s), .flag = 1}
#define FS_T_CLOSE() {.op = FS_OP_CLOSE, .peer = 1}
#define FS_T_EXPECT_LIT(lit, w)                                                \
  {.op = FS_OP_EXPECT, .peer = 1, .data = (lit), .len = sizeof(lit) - 1,       \
   .what = (w)}
#define FS_T_CLOSED(w) {.op = FS_OP_CLOSED, .peer = 1, .ms = 1500, .what = (w)}
#define FS_T_MSG() {.op = FS_OP_MSG, .peer = 1}
#define FS_T_STARTS(s, w)                                                      \
  {.op = FS_OP_STARTS, .peer = 1, .data = (s), .what = (w)}
#define FS_T_HAS(s, w) {.op = FS_OP_HAS, .peer = 1, .data = (s), .what = (w)}
#define FS_T_LACKS(s, w)                                                       \
  {.op = FS_OP_LACKS, .peer = 1, .data = (s), .what = (w)}
/* A second client's: connected, sending, reading beside the first. */
#define FS_C2_CONNECT() {.op = FS_OP_CONNECT, .peer = 2}
#define FS_C2_SEND_STR(s) {.op = FS_OP_SEND, .peer = 2, .data = (s), .flag = 1}
#define FS_C2_CLOSE() {.op = FS_OP_CLOSE, .peer = 2}
#define FS_C2_MSG() {.op = FS_OP_MSG, .peer = 2}
#define FS_C2_STARTS(s, w)                                                     \
  {.op = FS_OP_STARTS, .peer = 2, .data = (s), .what = (w)}
#define FS_C2_HAS(s, w) {.op = FS_OP_HAS, .peer = 2, .data = (s), .what = (w)}
/* The same rows with another bound than 1000 (CLOSED: 1500) ms. */
#define FS_MSG_WITHIN(t) {.op = FS_OP_MSG, .ms = (t)}
#define FS_CLOSED_WITHIN(t, w) {.op = FS_OP_CLOSED, .ms = (t), .what = (w)}
/* The target the last FS_ACCEPT replaced is closed by the proxy. */
#define FS_KEPT_CLOSED(t, w) {.op = FS_OP_KEPT_CLOSED, .ms = (t), .what = (w)}
#define FS_T_CLOSED_WITHIN(t, w)                                               \
  {.op = FS_OP_CLOSED, .peer = 1, .ms = (t), .what = (w)}
#define FS_METRIC(name, lab, d, w)                                             \
  {.op = FS_OP_METRIC, .data = (name), .labels = (lab), .n = (d), .what = (w)}
#define FS_METRIC_IS(name, lab, v, w)                                          \
  {.op = FS_OP_METRIC, .data = (name), .labels = (lab), .n = (v), .flag = 1,   \
   .what = (w)}
#define FS_PENDING(k, w) {.op = FS_OP_PENDING, .n = (k), .what = (w)}
#define FS_OPENS(d, w) {.op = FS_OP_OPENS, .n = (d), .what = (w)}
#define FS_CANCELS(d, w) {.op = FS_OP_CANCELS, .n = (d), .what = (w)}
#define FS_RELEASE(k, w) {.op = FS_OP_RELEASE, .n = (k), .what = (w)}
#define FS_LAST_HOST(h, w) {.op = FS_OP_LAST_HOST, .data = (h), .what = (w)}
#define FS_LAST_PRINCIPAL(p, w)                                                \
  {.op = FS_OP_LAST_PRINCIPAL, .data = (p), .what = (w)}
#define FS_COUNTER_IS(p, v, w)                                                 \
  {.op = FS_OP_COUNTER, .counter = (p), .n = (v), .what = (w)}
#define FS_LAST_LISTENER(l, w)                                                 \
  {.op = FS_OP_LAST_LISTENER, .data = (l), .what = (w)}
#define FS_LAST_SESSION(v, w)                                                  \
  {.op = FS_OP_LAST_SESSION, .data = (v), .what = (w)}
#define FS_CHECK(fn, w) {.op = FS_OP_CHECK, .cond = (fn), .what = (w)}
#define FS_WAIT(fn, t, w)                                                      \
  {.op = FS_OP_WAIT, .cond = (fn), .ms = (t), .what = (w)}

#define FS_MAX_ROWS 256
#define FS_MAX_KEPT 16

/* What one side has read: data[pos..len) is not consumed yet. */
typedef struct fs_rx {
  char data[65536];
  size_t len, pos;
  int eof;
} fs_rx;

struct fs_ctx {
  ph_mock *m;
  uint16_t port;       /* the frontend's listening port */
  fake_connector *fc;  /* NULL: the connector's rows fail */
  int target_l;        /* where the connector dials (-1: none) */
  uint16_t target_port;
  void *arg;           /* the test's, for its CHECK and WAIT conditions */
  int mark;            /* the test's: a counter its conditions compare */
  /* The driver's. */
  int fd[3];
  fs_rx rx[3];
  double base[FS_MAX_ROWS];
  int opens0, cancels0;
  int kept[FS_MAX_KEPT], n_kept; /* targets an ACCEPT replaced */
  char text[8192];
};

/* data with each "$TPORT" replaced by the target's port, in s->text. */
static inline const char *fs_subst_(fs_ctx *s, const char *in, size_t *n) {
  char port[8];
  size_t o = 0, pl = (size_t)snprintf(port, sizeof(port), "%u",
                                      (unsigned)s->target_port);
  while (*in && o + pl < sizeof(s->text) - 1) {
    if (strncmp(in, "$TPORT", 6) == 0) {
      memcpy(s->text + o, port, pl);
      o += pl;
      in += 6;
    } else {
      s->text[o++] = *in++;
    }
  }
  s->text[o] = '\0';
  *n = o;
  return s->text;
}

/* Reads what is there into x; 0 once EOF or an error. */
static inline int fs_pull_(int fd, fs_rx *x) {
  for (;;) {
    if (x->len >= sizeof(x->data) - 1)
      return 1;
    ssize_t k = recv(fd, x->data + x->len, sizeof(x->data) - 1 - x->len, 0);
    if (k > 0) {
      x->len += (size_t)k;
      x->data[x->len] = '\0';
      continue;
    }
    if (k == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
      x->eof = 1;
    return !x->eof;
  }
}

/* Whether x holds one whole HTTP message: a head and the body its
 * Content-Length or chunked framing says (with neither, a request or a
 * bodiless status is whole at the head, other responses at EOF). */
static inline int fs_http_whole(const fs_rx *x, int response) {
  const char *end = memmem(x->data, x->len, "\r\n\r\n", 4);
  if (!end)
    return x->eof;
  size_t head = (size_t)(end - x->data) + 4;
  char h[8192];
  size_t hl = head < sizeof(h) - 1 ? head : sizeof(h) - 1;
  memcpy(h, x->data, hl);
  h[hl] = '\0';
  const char *cl = strcasestr(h, "\r\ncontent-length:");
  if (response && (strstr(h, " 204 ") || strstr(h, " 304 ") ||
                   strstr(h, " 200 Connection established")))
    return 1;
  if (cl)
    return x->len >= head + strtoul(cl + 17, NULL, 10) || x->eof;
  if (strcasestr(h, "\r\ntransfer-encoding: chunked"))
    return memmem(x->data + head, x->len - head, "0\r\n\r\n", 5) != NULL ||
           x->eof;
  return !response || x->eof;
}

static inline double fs_metric_(fs_ctx *s, const fs_row *r) {
  double v = 0;
  if (ph_mock_metric(s->m, r->data, r->labels, &v) != PH_OK)
    v = 0;
  return v;
}

static inline void fs_hex_(const char *label, const char *p, size_t n) {
  printf("#   %s (%zu):", label, n);
  for (size_t i = 0; i < n && i < 48; i++)
    printf(" %02x", (unsigned char)p[i]);
  printf("\n");
}

static inline void fs_close_(fs_ctx *s, int peer) {
  if (s->fd[peer] >= 0)
    close(s->fd[peer]);
  s->fd[peer] = -1;
  s->rx[peer].len = s->rx[peer].pos = 0;
  s->rx[peer].eof = 0;
}

/* One row; whether it held. */
static inline int fs_step_(fs_ctx *s, const fs_row *r, int i) {
  int ms = r->ms > 0 ? r->ms : 1000, fd = s->fd[r->peer];
  fs_rx *x = &s->rx[r->peer];
  size_t n = r->len;
  const char *d = r->data;
  if (d && (r->flag || r->op == FS_OP_STARTS || r->op == FS_OP_HAS ||
            r->op == FS_OP_LACKS || r->op == FS_OP_UNTIL ||
            r->op == FS_OP_BODY) &&
      r->op != FS_OP_METRIC)
    d = fs_subst_(s, d, &n);
  switch (r->op) {
  case FS_OP_CONNECT:
    fs_close_(s, r->peer);
    s->fd[r->peer] = sock_test_dial(s->port, 1);
    return s->fd[r->peer] >= 0;
  case FS_OP_ACCEPT:
    if (s->fd[1] >= 0 && s->n_kept < FS_MAX_KEPT)
      s->kept[s->n_kept++] = s->fd[1]; /* open until the run ends */
    else if (s->fd[1] >= 0)
      close(s->fd[1]);
    s->fd[1] = -1;
    fs_close_(s, 1);
    for (int t = 0; s->target_l >= 0 && t <= ms; t += 2) {
      s->fd[1] = accept4(s->target_l, NULL, NULL, SOCK_NONBLOCK);
      if (s->fd[1] >= 0)
        return 1;
      ph_mock_run_for(s->m, 2);
    }
    return 0;
  case FS_OP_SEND:
    for (size_t off = 0; fd >= 0 && off < n;) {
      ssize_t w = send(fd, d + off, n - off, MSG_NOSIGNAL);
      if (w > 0)
        off += (size_t)w;
      else if (w < 0 && errno != EAGAIN)
        return 0;
    }
    return fd >= 0;
  case FS_OP_SHUT:
    return fd >= 0 && shutdown(fd, SHUT_WR) == 0;
  case FS_OP_CLOSE:
    fs_close_(s, r->peer);
    return 1;
  case FS_OP_RUN:
    ph_mock_run_for(s->m, r->ms);
    return 1;
  case FS_OP_EXPECT: {
    size_t total = r->total > n ? r->total : n;
    for (int t = 0; fd >= 0 && t <= ms && x->len - x->pos < total; t += 2)
      if (fs_pull_(fd, x) && x->len - x->pos < total)
        ph_mock_run_for(s->m, 2);
      else if (x->eof)
        break;
    size_t got = x->len - x->pos;
    int held = got >= total && memcmp(x->data + x->pos, d, n) == 0;
    if (!held) {
      fs_hex_("want", d, n);
      fs_hex_(x->eof ? "got, then EOF" : "got", x->data + x->pos,
              got < total ? got : total);
    }
    x->pos += got < total ? got : total;
    return held;
  }
  case FS_OP_SILENT: {
    size_t before = x->len;
    for (int t = 0; fd >= 0 && t <= ms && x->len == before && !x->eof; t += 2)
      if (fs_pull_(fd, x) && x->len == before)
        ph_mock_run_for(s->m, 2);
    return fd >= 0 && x->len == before && !x->eof;
  }
  case FS_OP_CLOSED:
    for (int t = 0; fd >= 0 && t <= ms; t += 2) {
      if (x->len >= sizeof(x->data) - 1)
        x->len = x->pos = 0; /* full: what came first is dropped */
      if (!fs_pull_(fd, x))
        return 1;
      ph_mock_run_for(s->m, 2);
    }
    return 0;
  case FS_OP_KEPT_CLOSED: {
    fs_rx old = {.len = 0};
    int kfd = s->n_kept > 0 ? s->kept[s->n_kept - 1] : -1;
    for (int t = 0; kfd >= 0 && t <= ms; t += 2) {
      old.len = 0;
      if (!fs_pull_(kfd, &old))
        return 1;
      ph_mock_run_for(s->m, 2);
    }
    return 0;
  }
  case FS_OP_MSG:
    x->len = x->pos = 0;
    x->eof = 0;
    x->data[0] = '\0';
    for (int t = 0; fd >= 0 && t < ms; t += 5) {
      ph_mock_run_for(s->m, 5);
      fs_pull_(fd, x);
      if ((x->len > 0 && fs_http_whole(x, r->peer != 1)) || x->eof)
        break;
    }
    x->pos = x->len; /* EXPECT reads what comes after */
    return 1;
  case FS_OP_UNTIL:
    for (int t = 0; fd >= 0 && t < ms; t += 5) {
      if (d ? memmem(x->data, x->len, d, n) != NULL : x->eof)
        break;
      if (x->eof)
        break;
      ph_mock_run_for(s->m, 5);
      fs_pull_(fd, x);
    }
    return d ? memmem(x->data, x->len, d, n) != NULL : x->eof;
  case FS_OP_STARTS:
    if (strncmp(x->data, d, n) != 0)
      printf("#   got: %.200s\n", x->data);
    return strncmp(x->data, d, n) == 0;
  case FS_OP_HAS:
  case FS_OP_LACKS: {
    int has = memmem(x->data, x->len, d, n) != NULL;
    if (has != (r->op == FS_OP_HAS))
      printf("#   in: %.400s\n", x->data);
    return has == (r->op == FS_OP_HAS);
  }
  case FS_OP_BODY: {
    const char *b = memmem(x->data, x->len, "\r\n\r\n", 4);
    int held = b && (size_t)(x->data + x->len - (b + 4)) == n &&
               memcmp(b + 4, d, n) == 0;
    if (!held)
      printf("#   in: %.400s\n", x->data);
    return held;
  }
  case FS_OP_EOF:
    return x->eof == !r->flag;
  case FS_OP_METRIC: {
    double v = fs_metric_(s, r) - (r->flag || i >= FS_MAX_ROWS ? 0 : s->base[i]);
    if (v != r->n)
      printf("#   %s{%s} is (or moved by) %g, not %g\n", r->data,
             r->labels ? r->labels : "", v, r->n);
    return v == r->n;
  }
  case FS_OP_PENDING:
    return s->fc && fake_connector_pending(s->fc) == (int)r->n;
  case FS_OP_OPENS:
    if (s->fc && s->fc->opens - s->opens0 != (int)r->n)
      printf("#   %d opens\n", s->fc->opens - s->opens0);
    return s->fc && s->fc->opens - s->opens0 == (int)r->n;
  case FS_OP_CANCELS:
    return s->fc && s->fc->cancels - s->cancels0 == (int)r->n;
  case FS_OP_RELEASE:
    return s->fc && fake_connector_release(s->fc) == (int)r->n;
  case FS_OP_LAST_HOST:
  case FS_OP_LAST_PRINCIPAL:
  case FS_OP_LAST_LISTENER:
  case FS_OP_LAST_SESSION: {
    const char *got = !s->fc                         ? "(no connector)"
                      : r->op == FS_OP_LAST_HOST     ? s->fc->last.host
                      : r->op == FS_OP_LAST_LISTENER ? s->fc->last.listener
                      : r->op == FS_OP_LAST_SESSION  ? s->fc->last.session
                                                     : s->fc->last.principal;
    if (strcmp(got, r->data) != 0)
      printf("#   the connector's last request had %s\n", got);
    return strcmp(got, r->data) == 0;
  }
  case FS_OP_COUNTER:
    if (*r->counter != (int)r->n)
      printf("#   the counter is %d\n", *r->counter);
    return *r->counter == (int)r->n;
  case FS_OP_CHECK:
    return r->cond(s);
  case FS_OP_WAIT:
    for (int t = 0; t <= ms; t += 2) {
      if (r->cond(s))
        return 1;
      ph_mock_run_for(s->m, 2);
    }
    return r->cond(s);
  case FS_OP_END:
    break;
  }
  return 0;
}

/* Runs rows in order; the number of rows that failed. */
static inline int fs_run(fs_ctx *s, const fs_row *rows) {
  int failed = 0;
  for (int p = 0; p < 3; p++) {
    s->fd[p] = -1;
    fs_close_(s, p);
  }
  s->n_kept = 0;
  s->opens0 = s->fc ? s->fc->opens : 0;
  s->cancels0 = s->fc ? s->fc->cancels : 0;
  for (int i = 0; rows[i].op != FS_OP_END && i < FS_MAX_ROWS; i++)
    if (rows[i].op == FS_OP_METRIC)
      s->base[i] = fs_metric_(s, &rows[i]);
  for (int i = 0; rows[i].op != FS_OP_END; i++) {
    int held = fs_step_(s, &rows[i], i);
    if (!held)
      failed++;
    if (rows[i].what) {
      if (!ok(held, rows[i].what))
        printf("#   at row %d of the script\n", i);
    } else if (!held) {
      char name[64];
      snprintf(name, sizeof(name), "the script's step %d (op %d)", i,
               (int)rows[i].op);
      ok(0, name);
    }
  }
  for (int p = 0; p < 3; p++)
    fs_close_(s, p);
  while (s->n_kept > 0)
    close(s->kept[--s->n_kept]);
  return failed;
}

#endif
