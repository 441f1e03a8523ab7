/* SPDX-License-Identifier: BSD-2-Clause */
/* The one driver of the frontends' send/wait/expect sequences (issue 25
 * item 4; varnishtest's idea, in C): a case is a table of rows, each an
 * action on the client or the fake connector and what must follow, run
 * in order against a mock host; a row with a description is one TAP
 * line, named by it (cite the requirement ids there).
 *
 *   static const fs_row bind_rows[] = {
 *       FS_CONNECT(), FS_SEND_LIT("\x05\x01\x00"), FS_EXPECT_LIT("\x05\x00", NULL),
 *       FS_SEND_LIT("\x05\x02\x00\x01\x7f\x00\x00\x01\x00\x50"),
 *       FS_EXPECT_PREFIX_LIT("\x05\x07", 10, "TM-PROTO-7: BIND -> 0x07"),
 *       FS_CLOSED("then closed"), FS_END};
 *   fs_ctx s = {.m = M, .port = F.port, .fc = &FC};
 *   fs_run(&s, bind_rows);
 *
 * Rows:
 *   FS_CONNECT()              a new client to 127.0.0.1:port (the last
 *                             one is closed); a TAP line when described
 *   FS_SEND(p, n), FS_SEND_LIT(lit)   bytes from the client
 *   FS_SHUT()                 the client half-closes (SHUT_WR)
 *   FS_CLOSE()                the client leaves (close)
 *   FS_RUN(ms)                the loop runs ms
 *   FS_EXPECT(p, n, what)     exactly these n bytes come back
 *   FS_EXPECT_PREFIX(p, n, total, what)  total bytes come back, the first
 *                             n of them these
 *   FS_SILENT(ms, what)       no byte comes back within ms
 *   FS_CLOSED(what)           the server closes (bytes before EOF dropped)
 *   FS_METRIC(name, labels, delta, what)  the metric moved by delta since
 *                             the case began (ph_mock_metric; absent is 0)
 *   FS_PENDING(n, what)       the connector has n opens pending
 *   FS_CANCELS(delta, what)   the connector saw delta cancels since the
 *                             case began
 *   FS_RELEASE(n, what)       fake_connector_release answered n opens
 *   FS_LAST_HOST(h, what), FS_LAST_PRINCIPAL(p, what)  the connector's last
 *                             request asked for it
 *   FS_METRIC_IS(name, labels, v, what)  the metric's value is v now
 *   FS_CHECK(fn, what)        the test's condition fn(s) holds now
 *   FS_WAIT(fn, ms, what)     the loop runs until fn(s) holds, within ms
 *
 * Every wait is bounded (ms, 1000 when 0) by the mock loop's time; a row
 * that fails prints what it saw as "#" lines. fs_run yields how many
 * described rows failed; the client is closed at the end. Header only,
 * like loop_test.h: its TAP lines count in the test's tap.h. */
#ifndef PH_FRONTEND_SCRIPT_H
#define PH_FRONTEND_SCRIPT_H

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <proxyhost/mock.h>

#include "fake_connector.h"
#include "sock_test.h"
#include "tap.h"

typedef enum fs_op {
  FS_OP_END = 0,
  FS_OP_CONNECT,
  FS_OP_SEND,
  FS_OP_SHUT,
  FS_OP_CLOSE,
  FS_OP_RUN,
  FS_OP_EXPECT,
  FS_OP_SILENT,
  FS_OP_CLOSED,
  FS_OP_METRIC,
  FS_OP_PENDING,
  FS_OP_CANCELS,
  FS_OP_RELEASE,
  FS_OP_LAST_HOST,
  FS_OP_LAST_PRINCIPAL,
  FS_OP_CHECK,
  FS_OP_WAIT
} fs_op;

typedef struct fs_ctx fs_ctx;

typedef struct fs_row {
  fs_op op;
  const char *data; /* bytes, a host, a principal, a metric's name */
  size_t len;       /* of data; EXPECT: the bytes compared */
  size_t total;     /* EXPECT: the bytes read (0: len) */
  const char *labels;
  double n; /* a count or a delta */
  int ms;
  int absolute;                /* METRIC: n is the value, not a delta */
  int (*cond)(fs_ctx *s);      /* CHECK, WAIT: the condition */
  const char *what; /* the TAP line; NULL: none */
} fs_row;

#define FS_END {.op = FS_OP_END}
#define FS_CONNECT() {.op = FS_OP_CONNECT}
#define FS_SEND(p, n) {.op = FS_OP_SEND, .data = (p), .len = (n)}
#define FS_SEND_LIT(lit) FS_SEND((lit), sizeof(lit) - 1)
#define FS_SHUT() {.op = FS_OP_SHUT}
#define FS_CLOSE() {.op = FS_OP_CLOSE}
#define FS_RUN(t) {.op = FS_OP_RUN, .ms = (t)}
#define FS_EXPECT(p, n, w) {.op = FS_OP_EXPECT, .data = (p), .len = (n), .what = (w)}
#define FS_EXPECT_LIT(lit, w) FS_EXPECT((lit), sizeof(lit) - 1, (w))
#define FS_EXPECT_PREFIX(p, n, t, w)                                           \
  {.op = FS_OP_EXPECT, .data = (p), .len = (n), .total = (t), .what = (w)}
#define FS_EXPECT_PREFIX_LIT(lit, t, w)                                        \
  FS_EXPECT_PREFIX((lit), sizeof(lit) - 1, (t), (w))
#define FS_SILENT(t, w) {.op = FS_OP_SILENT, .ms = (t), .what = (w)}
#define FS_CLOSED(w) {.op = FS_OP_CLOSED, .ms = 1500, .what = (w)}
#define FS_METRIC(name, lab, d, w)                                             \
  {.op = FS_OP_METRIC, .data = (name), .labels = (lab), .n = (d), .what = (w)}
#define FS_PENDING(k, w) {.op = FS_OP_PENDING, .n = (k), .what = (w)}
#define FS_CANCELS(d, w) {.op = FS_OP_CANCELS, .n = (d), .what = (w)}
#define FS_RELEASE(k, w) {.op = FS_OP_RELEASE, .n = (k), .what = (w)}
#define FS_LAST_HOST(h, w) {.op = FS_OP_LAST_HOST, .data = (h), .what = (w)}
#define FS_METRIC_IS(name, lab, v, w)                                          \
  {.op = FS_OP_METRIC, .data = (name), .labels = (lab), .n = (v),              \
   .absolute = 1, .what = (w)}
#define FS_CHECK(fn, w) {.op = FS_OP_CHECK, .cond = (fn), .what = (w)}
#define FS_WAIT(fn, t, w) {.op = FS_OP_WAIT, .cond = (fn), .ms = (t), .what = (w)}
#define FS_LAST_PRINCIPAL(p, w)                                                \
  {.op = FS_OP_LAST_PRINCIPAL, .data = (p), .what = (w)}

#define FS_MAX_METRICS 64

struct fs_ctx {
  ph_mock *m;
  uint16_t port;        /* the frontend's listening port */
  fake_connector *fc;   /* NULL: the connector rows fail */
  int fd;               /* the client, -1 when none */
  /* The metrics' values when the case began (filled by fs_run). */
  double base[FS_MAX_METRICS];
  int cancels0;
  void *arg; /* the test's, for its CHECK and WAIT conditions */
  int mark;  /* the test's: a conditions's counter at a MARK row */
};

static inline double fs_metric_(fs_ctx *s, const fs_row *r) {
  double v = 0;
  if (ph_mock_metric(s->m, r->data, r->labels, &v) != PH_OK)
    v = 0;
  return v;
}

/* Reads until want bytes came, EOF or ms of loop time. The count. */
static inline size_t fs_read_(fs_ctx *s, char *buf, size_t want, int ms,
                              int *eof) {
  size_t got = 0;
  *eof = 0;
  for (int t = 0; s->fd >= 0 && t <= ms && got < want; t += 2) {
    ssize_t k = read(s->fd, buf + got, want - got);
    if (k > 0) {
      got += (size_t)k;
      continue;
    }
    if (k == 0 || errno != EAGAIN) {
      *eof = 1;
      break;
    }
    ph_mock_run_for(s->m, 2);
  }
  return got;
}

static inline void fs_hex_(const char *label, const char *p, size_t n) {
  printf("#   %s (%zu):", label, n);
  for (size_t i = 0; i < n && i < 48; i++)
    printf(" %02x", (unsigned char)p[i]);
  printf("\n");
}

/* One row; whether it held (an action holds unless it fails). */
static inline int fs_step_(fs_ctx *s, const fs_row *r, int i) {
  int ms = r->ms > 0 ? r->ms : 1000, eof = 0;
  char buf[4096];
  switch (r->op) {
  case FS_OP_CONNECT:
    if (s->fd >= 0)
      close(s->fd);
    s->fd = sock_test_dial(s->port, 1);
    return s->fd >= 0;
  case FS_OP_SEND:
    return s->fd >= 0 && write(s->fd, r->data, r->len) == (ssize_t)r->len;
  case FS_OP_SHUT:
    return s->fd >= 0 && shutdown(s->fd, SHUT_WR) == 0;
  case FS_OP_CLOSE:
    if (s->fd >= 0)
      close(s->fd);
    s->fd = -1;
    return 1;
  case FS_OP_RUN:
    ph_mock_run_for(s->m, r->ms);
    return 1;
  case FS_OP_EXPECT: {
    size_t total = r->total > r->len ? r->total : r->len;
    if (total > sizeof(buf))
      total = sizeof(buf);
    size_t got = fs_read_(s, buf, total, ms, &eof);
    int held = got == total && memcmp(buf, r->data, r->len) == 0;
    if (!held) {
      fs_hex_("want", r->data, r->len);
      fs_hex_(eof ? "got, then EOF" : "got", buf, got);
    }
    return held;
  }
  case FS_OP_SILENT: {
    size_t got = fs_read_(s, buf, 1, ms, &eof);
    return got == 0 && !eof;
  }
  case FS_OP_CLOSED:
    for (int t = 0; s->fd >= 0 && t <= ms; t += 2) {
      ssize_t k = read(s->fd, buf, sizeof(buf));
      if (k == 0 || (k < 0 && errno != EAGAIN))
        return 1;
      if (k < 0)
        ph_mock_run_for(s->m, 2);
    }
    return 0;
  case FS_OP_METRIC: {
    double v = fs_metric_(s, r) -
               (r->absolute ? 0 : i < FS_MAX_METRICS ? s->base[i] : 0);
    if (v != r->n)
      printf("#   %s{%s} is (or moved by) %g, not %g\n", r->data,
             r->labels ? r->labels : "", v, r->n);
    return v == r->n;
  }
  case FS_OP_PENDING:
    return s->fc && fake_connector_pending(s->fc) == (int)r->n;
  case FS_OP_CANCELS:
    return s->fc && s->fc->cancels - s->cancels0 == (int)r->n;
  case FS_OP_RELEASE:
    return s->fc && fake_connector_release(s->fc) == (int)r->n;
  case FS_OP_LAST_HOST:
    if (s->fc && strcmp(s->fc->last.host, r->data))
      printf("#   the connector was asked for %s\n", s->fc->last.host);
    return s->fc && strcmp(s->fc->last.host, r->data) == 0;
  case FS_OP_LAST_PRINCIPAL:
    if (s->fc && strcmp(s->fc->last.principal, r->data))
      printf("#   the connector's principal was %s\n", s->fc->last.principal);
    return s->fc && strcmp(s->fc->last.principal, r->data) == 0;
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

/* Runs rows in order; the number of described rows that failed (an
 * undescribed action that fails is printed as a "#" line). */
static inline int fs_run(fs_ctx *s, const fs_row *rows) {
  int failed = 0;
  s->fd = -1;
  s->cancels0 = s->fc ? s->fc->cancels : 0;
  for (int i = 0; rows[i].op != FS_OP_END; i++)
    if (rows[i].op == FS_OP_METRIC && i < FS_MAX_METRICS)
      s->base[i] = fs_metric_(s, &rows[i]);
  for (int i = 0; rows[i].op != FS_OP_END; i++) {
    int held = fs_step_(s, &rows[i], i);
    if (rows[i].what)
      failed += !tap_ok_(held, rows[i].what, __FILE__, __LINE__);
    else if (!held)
      printf("# row %d (op %d) failed\n", i, (int)rows[i].op);
  }
  if (s->fd >= 0)
    close(s->fd);
  s->fd = -1;
  return failed;
}

#endif
