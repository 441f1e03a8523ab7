/* SPDX-License-Identifier: BSD-2-Clause */
/* phload: the benchmark's load generator. One libev (epoll) loop per
 * process, non-blocking sockets: the generator, the target and the proxy
 * under test share the machine's cores, so the generator must cost as
 * little as possible per operation. --procs N splits the operations in
 * flight over N forked processes (open-rate mode only), so that the
 * direct baseline is not bounded by one generator core.
 *
 * An operation is one whole stream: connect (to the target itself, or to
 * a proxy and open the stream with SOCKS5 no-auth CONNECT or HTTP
 * CONNECT to the target's IPv4 literal), send a small request, read the
 * whole response until the far end closes, close. Every operation is
 * checked: a refused connect, a failed handshake, a short response or a
 * timeout is an error, counted apart and never as a completed operation.
 *
 *   phload --mode direct|socks5|http-connect [--proxy HOST:PORT]
 *          --target HOST:PORT [--concurrency N] [--duration SECS]
 *          [--warmup SECS] [--response-size BYTES] [--timeout SECS]
 *          [--bulk BYTES | --idle N | --rounds N [--gap SECS]] [--procs N]
 *          [--sized]
 *   phload --free-port
 *
 * Open-rate mode (the default) keeps N operations in flight for the
 * duration and prints one line:
 *   ops=... ops_per_sec=... p50_us=... p95_us=... p99_us=... max_us=...
 *   errors=... err_connect=... err_handshake=... err_response=...
 *   err_timeout=... ops_all=... bytes=0 secs=... mbps=0 cpu_s=...
 *   ttfb_p50_us=... ttfb_p95_us=... ttfb_p99_us=...
 * (ops counts the operations completed inside the measured window;
 * ops_all also those of the warm-up and of the last moments, for the
 * script's CPU-per-operation figure; cpu_s is the generator's own user +
 * system time, all its processes; ttfb is the time from socket() to the
 * first byte of the target's response, of the same operations).
 * --rounds N starts --concurrency operations at once, waits until every
 * one has ended, pauses --gap seconds (default 0.05), and does that N
 * times: the shape of a page that opens its small requests together,
 * measured without keeping the machine saturated between bursts (every
 * operation counts, no warm-up; ops_per_sec is 0).
 * --bulk BYTES opens one stream and reads BYTES (0: without end) of
 * target-to-client data for at most the duration; mbps is 10^6 bytes/s.
 * --idle N opens N streams (at most --concurrency opening at once),
 * prints "idle_ready=N errors=E" when all are open, holds them for the
 * duration, then closes them and prints the usual line.
 *
 * --sized ends an operation when the response's BYTES have all arrived
 * (phload closes first) instead of at the far end's close: for proxies
 * that hold a stream open after the target closed it (v2ray's
 * uplinkOnly wait), whose close time would otherwise be measured.
 *
 * The target protocol is phtarget's: "GET /r/N HTTP/1.0" answers exactly
 * N bytes then closes; "GET /bulk/N HTTP/1.0" streams N bytes (0: until
 * the client closes). */
#include <arpa/inet.h>
#include <errno.h>
#include <ev.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONCURRENCY 100000
#define MAX_PROCS 16
#define MSG_MAX 256         /* a handshake message or a reply we parse */
#define SCRATCH (256 * 1024) /* one shared read buffer for response data */

enum mode { MODE_DIRECT, MODE_SOCKS5, MODE_HTTP };
enum kind { KIND_OPS, KIND_BULK, KIND_IDLE, KIND_ROUNDS };
enum err { ERR_CONNECT, ERR_HANDSHAKE, ERR_RESPONSE, ERR_TIMEOUT, ERR_N };
static const char *const err_names[ERR_N] = {"err_connect", "err_handshake",
                                             "err_response", "err_timeout"};

/* The steps of one operation. Each step writes a message and then reads
 * until that step's reply is complete. */
enum step {
  ST_FREE,
  ST_CONNECTING,  /* connect() issued, first message not written yet */
  ST_SOCKS_GREET, /* sent 05 01 00, want 05 00 */
  ST_SOCKS_REPLY, /* sent CONNECT, want a complete success reply */
  ST_HTTP_REPLY,  /* sent CONNECT, want "HTTP/1.x 200 ...\r\n\r\n" */
  ST_RESPONSE,    /* sent the request, reading until close */
  ST_HOLD         /* idle: stream open, nothing sent */
};

typedef struct slot {
  ev_io io;
  int fd;
  enum step step;
  const char *out; /* message being written for this step */
  size_t out_len, out_off;
  size_t in_len;   /* bytes of the reply read so far into in[] */
  uint64_t got;    /* response bytes counted */
  uint64_t t0_ns;  /* operation start */
  uint64_t ttfb_us; /* first response byte, from t0 (0: none yet) */
  int sent_any;    /* a byte went out: a failure is no longer a connect's */
  int retry;       /* failed: the tick starts the next operation */
  char in[MSG_MAX];
} slot;

static struct {
  enum mode mode;
  enum kind kind;
  struct sockaddr_in proxy, target;
  int have_proxy;
  int concurrency, idle_n, procs, rounds, sized;
  double duration, warmup, timeout, gap;
  uint64_t response_size, bulk_bytes;
} cfg = {MODE_DIRECT, KIND_OPS, {0}, {0}, 0, 32, 0, 1, 0, 0, 5.0, 0.5, 10.0, 0.05, 128, 0};

static struct ev_loop *loop;
static slot *slots;
static char scratch[SCRATCH];
static char msg_greet[3] = {5, 1, 0};
static char msg_connect[10];
static char msg_http[MSG_MAX];
static size_t msg_http_len;
static char msg_request[64];
static size_t msg_request_len;

static uint64_t t_start_ns, t_measure_ns, t_end_ns;
static int measuring, stopping;
static uint64_t ops, ops_all, errors[ERR_N], bulk_bytes_got;
static uint64_t bulk_t0_ns, bulk_t1_ns;
static int idle_open, idle_started, idle_reported;
static int rounds_done, round_running;
static uint64_t round_next_ns;

/* ---- latency histogram, microseconds, bounded memory: exact below
 * 64 us, then log-linear with 32 sub-buckets per power of two (a bucket
 * is at most about 3% wide). */
#define SUB 64
#define HBUCKETS (SUB * 40)
typedef struct histogram {
  uint64_t b[HBUCKETS];
  uint64_t n, max;
} histogram;
static histogram hist, hist_ttfb; /* whole cycle; first response byte */

static unsigned hist_index(uint64_t us) {
  if (us < SUB)
    return (unsigned)us;
  unsigned e = 63u - (unsigned)__builtin_clzll(us); /* us >= 2^e */
  unsigned shift = e - 5;                            /* keep 6 bits */
  unsigned idx = (shift + 1) * (SUB / 2) + (unsigned)(us >> shift);
  return idx < HBUCKETS ? idx : HBUCKETS - 1;
}

/* The upper edge of a bucket: idx = (shift + 1) * 32 + mant, with mant
 * in [32, 64), so idx / 32 = shift + 2. */
static uint64_t hist_value(unsigned idx) {
  if (idx < SUB)
    return idx;
  unsigned shift = idx / (SUB / 2) - 2;
  uint64_t mant = idx - (uint64_t)(shift + 1) * (SUB / 2);
  return ((mant + 1) << shift) - 1;
}

static void hist_add(histogram *h, uint64_t us) {
  h->b[hist_index(us)]++;
  h->n++;
  if (us > h->max)
    h->max = us;
}

static uint64_t hist_pct(const histogram *h, double p) {
  if (!h->n)
    return 0;
  uint64_t want = (uint64_t)ceil(p * (double)h->n);
  if (want < 1)
    want = 1;
  uint64_t seen = 0;
  for (unsigned i = 0; i < HBUCKETS; i++) {
    seen += h->b[i];
    if (seen >= want)
      return hist_value(i) < h->max ? hist_value(i) : h->max;
  }
  return h->max;
}

static void hist_merge(histogram *into, const histogram *from) {
  into->n += from->n;
  if (from->max > into->max)
    into->max = from->max;
  for (unsigned i = 0; i < HBUCKETS; i++)
    into->b[i] += from->b[i];
}

/* ---- helpers */

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what) {
  fprintf(stderr, "phload: %s\n", what);
  exit(2);
}

static int parse_addr(const char *s, struct sockaddr_in *sa) {
  char host[64];
  const char *colon = strrchr(s, ':');
  if (!colon || (size_t)(colon - s) >= sizeof host)
    return -1;
  memcpy(host, s, (size_t)(colon - s));
  host[colon - s] = '\0';
  char *end;
  long port = strtol(colon + 1, &end, 10);
  if (*end || port < 1 || port > 65535)
    return -1;
  memset(sa, 0, sizeof *sa);
  sa->sin_family = AF_INET;
  sa->sin_port = htons((uint16_t)port);
  return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

static void build_messages(void) {
  char ip[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &cfg.target.sin_addr, ip, sizeof ip);
  unsigned port = ntohs(cfg.target.sin_port);
  msg_connect[0] = 5, msg_connect[1] = 1, msg_connect[2] = 0;
  msg_connect[3] = 1; /* IPv4 literal */
  memcpy(msg_connect + 4, &cfg.target.sin_addr, 4);
  memcpy(msg_connect + 8, &cfg.target.sin_port, 2);
  msg_http_len = (size_t)snprintf(msg_http, sizeof msg_http,
                                  "CONNECT %s:%u HTTP/1.1\r\nHost: %s:%u\r\n\r\n",
                                  ip, port, ip, port);
  if (cfg.kind == KIND_BULK)
    msg_request_len = (size_t)snprintf(msg_request, sizeof msg_request,
                                       "GET /bulk/%" PRIu64 " HTTP/1.0\r\n\r\n",
                                       cfg.bulk_bytes);
  else
    msg_request_len = (size_t)snprintf(msg_request, sizeof msg_request,
                                       "GET /r/%" PRIu64 " HTTP/1.0\r\n\r\n",
                                       cfg.response_size);
}

/* ---- one operation */

static void slot_start(slot *s);

static void slot_close(slot *s) {
  if (s->fd >= 0) {
    ev_io_stop(loop, &s->io);
    close(s->fd);
    s->fd = -1;
  }
  s->step = ST_FREE;
}

/* The next operation on this slot, unless the run is over. */
static void slot_next(slot *s) {
  slot_close(s);
  if (!stopping && cfg.kind == KIND_OPS)
    slot_start(s);
}

/* Every error counts, warm-up included. A failed slot restarts from the
 * next tick, never recursively (a port refusing at once would otherwise
 * recurse without end) and never in a tight error loop. */
static void slot_fail(slot *s, enum err e) {
  errors[e]++;
  if (s->step == ST_HOLD)
    idle_open--;
  slot_close(s);
  s->retry = cfg.kind == KIND_OPS;
}

static void slot_done(slot *s) {
  uint64_t t = now_ns();
  ops_all++;
  if (measuring && t <= t_end_ns) {
    ops++;
    hist_add(&hist, (t - s->t0_ns) / 1000u);
    hist_add(&hist_ttfb, s->ttfb_us);
  }
  slot_next(s);
}

static void slot_watch(slot *s, int events) {
  if ((s->io.events & (EV_READ | EV_WRITE)) != events) {
    ev_io_stop(loop, &s->io);
    ev_io_set(&s->io, s->fd, events);
  }
  if (!ev_is_active(&s->io))
    ev_io_start(loop, &s->io);
}

/* Begin a step: write its message (usually all at once), then wait for
 * its reply. */
static void slot_send(slot *s, enum step next, const char *msg, size_t len) {
  s->step = next;
  s->out = msg;
  s->out_len = len;
  s->out_off = 0;
  s->in_len = 0;
  while (s->out_off < s->out_len) {
    ssize_t n = send(s->fd, s->out + s->out_off, s->out_len - s->out_off,
                     MSG_NOSIGNAL);
    if (n > 0) {
      s->out_off += (size_t)n;
      s->sent_any = 1;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      slot_watch(s, EV_WRITE);
      return;
    }
    slot_fail(s, !s->sent_any               ? ERR_CONNECT
                 : next == ST_RESPONSE ? ERR_RESPONSE
                                       : ERR_HANDSHAKE);
    return;
  }
  slot_watch(s, EV_READ);
}

/* The stream is open end to end: send the request (or hold it idle).
 * extra: response bytes that came with the proxy's reply (none expected:
 * the request is not sent yet). */
static void slot_opened(slot *s, size_t extra) {
  if (cfg.kind == KIND_IDLE) {
    if (extra) {
      slot_fail(s, ERR_RESPONSE);
      return;
    }
    s->step = ST_HOLD;
    idle_open++;
    slot_watch(s, EV_READ); /* any byte or close is an error */
    return;
  }
  if (cfg.kind == KIND_BULK)
    bulk_t0_ns = now_ns();
  slot_send(s, ST_RESPONSE, msg_request, msg_request_len);
  s->got = extra;
  if (extra)
    s->ttfb_us = (now_ns() - s->t0_ns) / 1000u;
}

static void slot_connected(slot *s) {
  switch (cfg.mode) {
  case MODE_DIRECT:
    slot_opened(s, 0);
    break;
  case MODE_SOCKS5:
    slot_send(s, ST_SOCKS_GREET, msg_greet, sizeof msg_greet);
    break;
  case MODE_HTTP:
    slot_send(s, ST_HTTP_REPLY, msg_http, msg_http_len);
    break;
  }
}

/* On loopback the connection is usually established by the time
 * connect() returns EINPROGRESS, so the first message is sent at once:
 * a send() in SYN_SENT answers EAGAIN and the slot then waits to be
 * writable. This saves a loop round per operation in every mode alike. */
static void slot_start(slot *s) {
  s->t0_ns = now_ns();
  s->ttfb_us = 0;
  s->sent_any = 0;
  s->retry = 0;
  s->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s->fd < 0) {
    slot_fail(s, ERR_CONNECT);
    return;
  }
  const struct sockaddr_in *to =
      cfg.mode == MODE_DIRECT ? &cfg.target : &cfg.proxy;
  ev_io_set(&s->io, s->fd, EV_WRITE);
  s->step = ST_CONNECTING;
  if (connect(s->fd, (const struct sockaddr *)to, sizeof *to) < 0 &&
      errno != EINPROGRESS) {
    slot_fail(s, ERR_CONNECT);
    return;
  }
  slot_connected(s);
}

/* How many bytes of a SOCKS5 reply are needed, once its head is known. */
static size_t socks_reply_len(const slot *s) {
  if (s->in_len < 5)
    return 5;
  switch ((unsigned char)s->in[3]) {
  case 1:
    return 10;
  case 4:
    return 22;
  case 3:
    return 7 + (unsigned char)s->in[4];
  default:
    return 0; /* malformed */
  }
}

/* Read what the proxy sent into in[]. Returns 1 with new bytes, 0 to
 * wait, -1 on error, close or a reply larger than any valid one. */
static int read_reply(slot *s) {
  if (s->in_len >= MSG_MAX - 1)
    return -1;
  ssize_t n = recv(s->fd, s->in + s->in_len, MSG_MAX - 1 - s->in_len, 0);
  if (n > 0) {
    s->in_len += (size_t)n;
    s->in[s->in_len] = '\0';
    return 1;
  }
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
    return 0;
  return -1;
}

static void on_socks_greet(slot *s) {
  int r = read_reply(s);
  if (r == 0 || (r > 0 && s->in_len < 2))
    return;
  /* More than the method reply is a protocol error: nothing was asked. */
  if (r < 0 || s->in_len != 2 || s->in[0] != 5 || s->in[1] != 0) {
    slot_fail(s, ERR_HANDSHAKE);
    return;
  }
  slot_send(s, ST_SOCKS_REPLY, msg_connect, sizeof msg_connect);
}

static void on_socks_reply(slot *s) {
  int r = read_reply(s);
  if (r == 0)
    return;
  size_t want = socks_reply_len(s);
  if (r < 0 || want == 0 || s->in[0] != 5 || (s->in_len >= 2 && s->in[1])) {
    slot_fail(s, ERR_HANDSHAKE);
    return;
  }
  if (s->in_len < want || (want == 5 && socks_reply_len(s) > 5))
    return;
  slot_opened(s, s->in_len - want);
}

static void on_http_reply(slot *s) {
  int r = read_reply(s);
  if (r == 0)
    return;
  if (r < 0) {
    slot_fail(s, ERR_HANDSHAKE);
    return;
  }
  char *end = strstr(s->in, "\r\n\r\n");
  if (!end)
    return;
  if (strncmp(s->in, "HTTP/1.", 7) != 0 || strncmp(s->in + 8, " 200", 4)) {
    slot_fail(s, ERR_HANDSHAKE);
    return;
  }
  slot_opened(s, s->in_len - (size_t)(end + 4 - s->in));
}

static void bulk_finish(void) {
  bulk_t1_ns = now_ns();
  stopping = 1;
  ev_break(loop, EVBREAK_ALL);
}

static void on_response(slot *s) {
  /* Bounded per wake-up so a fast bulk sender cannot starve the tick. */
  for (int i = 0; i < 64; i++) {
    ssize_t n = recv(s->fd, scratch, sizeof scratch, 0);
    if (n > 0) {
      if (!s->got)
        s->ttfb_us = (now_ns() - s->t0_ns) / 1000u;
      s->got += (uint64_t)n;
      if (cfg.kind == KIND_BULK) {
        bulk_bytes_got = s->got;
        if (cfg.bulk_bytes && s->got >= cfg.bulk_bytes) {
          bulk_finish();
          return;
        }
      } else if (cfg.sized && s->got >= cfg.response_size) {
        if (s->got > cfg.response_size)
          slot_fail(s, ERR_RESPONSE);
        else
          slot_done(s);
        return;
      }
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return;
    goto eof; /* end of stream (or reset) */
  }
  return;
eof:
  if (cfg.kind == KIND_BULK) {
    if (cfg.bulk_bytes && s->got < cfg.bulk_bytes)
      errors[ERR_RESPONSE]++;
    bulk_finish();
    return;
  }
  if (s->got != cfg.response_size) {
    slot_fail(s, ERR_RESPONSE);
    return;
  }
  slot_done(s);
}

static void on_io(struct ev_loop *l, ev_io *w, int revents) {
  slot *s = (slot *)w;
  (void)l;
  if (revents & EV_WRITE) { /* finish a message that did not fit at once */
    slot_send(s, s->step, s->out + s->out_off, s->out_len - s->out_off);
    return;
  }
  switch (s->step) {
  case ST_SOCKS_GREET:
    on_socks_greet(s);
    break;
  case ST_SOCKS_REPLY:
    on_socks_reply(s);
    break;
  case ST_HTTP_REPLY:
    on_http_reply(s);
    break;
  case ST_RESPONSE:
    on_response(s);
    break;
  case ST_HOLD:
    slot_fail(s, ERR_RESPONSE);
    break;
  default:
    break;
  }
}

/* ---- run control */

/* --rounds: start the next burst once the last one has ended and the gap
 * has passed; stop after the last. Called from the tick. */
static void rounds_tick(struct ev_loop *l, uint64_t t) {
  if (round_running) {
    for (int i = 0; i < cfg.concurrency; i++)
      if (slots[i].step != ST_FREE)
        return;
    round_running = 0;
    rounds_done++;
    round_next_ns = t + (uint64_t)(cfg.gap * 1e9);
  }
  if (rounds_done >= cfg.rounds) {
    stopping = 1;
    t_end_ns = t;
    ev_break(l, EVBREAK_ALL);
    return;
  }
  if (t < round_next_ns)
    return;
  round_running = 1;
  for (int i = 0; i < cfg.concurrency; i++)
    slot_start(&slots[i]);
}

static void on_tick(struct ev_loop *l, ev_timer *w, int revents) {
  (void)revents;
  (void)w;
  uint64_t t = now_ns();
  if (!measuring && t >= t_measure_ns) {
    measuring = 1;
    t_measure_ns = t;
    t_end_ns = t + (uint64_t)(cfg.duration * 1e9);
  }
  if (cfg.kind == KIND_IDLE && !idle_reported && idle_started >= cfg.idle_n) {
    int busy = 0;
    for (int i = 0; i < cfg.idle_n; i++)
      busy += slots[i].step != ST_FREE && slots[i].step != ST_HOLD;
    if (!busy) {
      uint64_t e = 0;
      for (int i = 0; i < ERR_N; i++)
        e += errors[i];
      printf("idle_ready=%d errors=%" PRIu64 "\n", idle_open, e);
      fflush(stdout);
      idle_reported = 1;
      t_end_ns = t + (uint64_t)(cfg.duration * 1e9);
    }
  }
  /* A stuck operation is an error, never a silent hang. */
  uint64_t limit = (uint64_t)(cfg.timeout * 1e9);
  int n = cfg.kind == KIND_IDLE ? cfg.idle_n : cfg.concurrency;
  for (int i = 0; i < n; i++) {
    slot *s = &slots[i];
    if (s->retry && !stopping)
      slot_start(s);
    else if (s->step != ST_FREE && s->step != ST_HOLD &&
             !(cfg.kind == KIND_BULK && s->step == ST_RESPONSE) &&
             t - s->t0_ns > limit)
      slot_fail(s, ERR_TIMEOUT);
  }
  if (cfg.kind == KIND_ROUNDS) {
    rounds_tick(l, t);
    return;
  }
  if (measuring && t >= t_end_ns && cfg.kind != KIND_IDLE) {
    if (cfg.kind == KIND_BULK) {
      bulk_finish();
      return;
    }
    stopping = 1;
    ev_break(l, EVBREAK_ALL);
  }
  if (cfg.kind == KIND_IDLE && idle_reported && t >= t_end_ns) {
    stopping = 1;
    ev_break(l, EVBREAK_ALL);
  }
}

/* Idle mode opens its streams at most --concurrency at a time: a slot
 * that reached ST_HOLD makes room for the next. */
static void on_idle_fill(struct ev_loop *l, ev_check *w, int revents) {
  (void)l;
  (void)revents;
  int opening = 0;
  for (int i = 0; i < idle_started; i++)
    opening += slots[i].step != ST_FREE && slots[i].step != ST_HOLD;
  while (idle_started < cfg.idle_n && opening < cfg.concurrency) {
    slot_start(&slots[idle_started++]);
    opening++;
  }
  if (idle_started >= cfg.idle_n)
    ev_check_stop(loop, w);
}

/* ---- several generator processes (--procs): each child runs its share
 * of the slots and sends its counters to the parent through a pipe; the
 * parent merges them and prints the one result line. */
typedef struct tally {
  uint64_t ops, ops_all, errors[ERR_N];
  histogram hist, hist_ttfb;
} tally;

static void tally_send(int fd) {
  static tally t;
  t.ops = ops, t.ops_all = ops_all, t.hist = hist, t.hist_ttfb = hist_ttfb;
  memcpy(t.errors, errors, sizeof errors);
  const char *p = (const char *)&t;
  for (size_t off = 0; off < sizeof t;) {
    ssize_t n = write(fd, p + off, sizeof t - off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      _exit(3);
    off += (size_t)n;
  }
}

static int tally_merge(int fd) {
  static tally t;
  char *p = (char *)&t;
  for (size_t off = 0; off < sizeof t;) {
    ssize_t n = read(fd, p + off, sizeof t - off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return -1; /* the child died before reporting */
    off += (size_t)n;
  }
  ops += t.ops, ops_all += t.ops_all;
  hist_merge(&hist, &t.hist);
  hist_merge(&hist_ttfb, &t.hist_ttfb);
  for (int i = 0; i < ERR_N; i++)
    errors[i] += t.errors[i];
  return 0;
}

static double cpu_seconds(int who) {
  struct rusage ru;
  if (getrusage(who, &ru) != 0)
    return 0;
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void print_result(void) {
  uint64_t e = 0;
  for (int i = 0; i < ERR_N; i++)
    e += errors[i];
  double secs = cfg.kind == KIND_ROUNDS ? (double)(t_end_ns - t_start_ns) / 1e9
                                        : cfg.duration;
  double mbps = 0;
  if (cfg.kind == KIND_BULK) {
    secs = bulk_t1_ns > bulk_t0_ns && bulk_t0_ns
               ? (double)(bulk_t1_ns - bulk_t0_ns) / 1e9
               : 0;
    mbps = secs > 0 ? (double)bulk_bytes_got / secs / 1e6 : 0;
  }
  printf("ops=%" PRIu64 " ops_per_sec=%.1f p50_us=%" PRIu64 " p95_us=%" PRIu64
         " p99_us=%" PRIu64 " max_us=%" PRIu64 " errors=%" PRIu64,
         ops, cfg.kind == KIND_OPS ? (double)ops / secs : 0.0,
         hist_pct(&hist, 0.50), hist_pct(&hist, 0.95), hist_pct(&hist, 0.99),
         hist.max, e);
  for (int i = 0; i < ERR_N; i++)
    printf(" %s=%" PRIu64, err_names[i], errors[i]);
  printf(" ops_all=%" PRIu64 " bytes=%" PRIu64 " secs=%.3f mbps=%.1f"
         " cpu_s=%.3f ttfb_p50_us=%" PRIu64 " ttfb_p95_us=%" PRIu64
         " ttfb_p99_us=%" PRIu64 "\n",
         ops_all, bulk_bytes_got, secs, mbps,
         cpu_seconds(RUSAGE_SELF) + cpu_seconds(RUSAGE_CHILDREN),
         hist_pct(&hist_ttfb, 0.50), hist_pct(&hist_ttfb, 0.95),
         hist_pct(&hist_ttfb, 0.99));
  fflush(stdout);
}

static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
      getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
    die("cannot find a free port");
  printf("%u\n", ntohs(sa.sin_port));
  close(fd);
  return 0;
}

static void usage(void) {
  fputs("usage: phload --mode direct|socks5|http-connect [--proxy HOST:PORT]\n"
        "              --target HOST:PORT [--concurrency N] [--duration S]\n"
        "              [--warmup S] [--response-size B] [--timeout S]\n"
        "              [--bulk BYTES | --idle N | --rounds N [--gap S]]\n"
        "              [--procs N] [--sized]\n"
        "       phload --free-port\n",
        stderr);
  exit(2);
}

static double parse_num(const char *s, double lo, double hi) {
  char *end;
  double v = strtod(s, &end);
  if (*end || !(v >= lo && v <= hi))
    usage();
  return v;
}

static void parse_args(int argc, char **argv) {
  static const struct option opts[] = {
      {"mode", 1, 0, 'm'},         {"proxy", 1, 0, 'p'},
      {"target", 1, 0, 't'},       {"concurrency", 1, 0, 'c'},
      {"duration", 1, 0, 'd'},     {"warmup", 1, 0, 'w'},
      {"response-size", 1, 0, 'r'}, {"timeout", 1, 0, 'T'},
      {"bulk", 1, 0, 'b'},         {"idle", 1, 0, 'i'},
      {"procs", 1, 0, 'P'},        {"free-port", 0, 0, 'F'},
      {"rounds", 1, 0, 'R'},       {"gap", 1, 0, 'g'},
      {"sized", 0, 0, 'S'},
      {0, 0, 0, 0}};
  int have_target = 0, c;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (c) {
    case 'm':
      if (!strcmp(optarg, "direct"))
        cfg.mode = MODE_DIRECT;
      else if (!strcmp(optarg, "socks5"))
        cfg.mode = MODE_SOCKS5;
      else if (!strcmp(optarg, "http-connect"))
        cfg.mode = MODE_HTTP;
      else
        usage();
      break;
    case 'p':
      if (parse_addr(optarg, &cfg.proxy))
        usage();
      cfg.have_proxy = 1;
      break;
    case 't':
      if (parse_addr(optarg, &cfg.target))
        usage();
      have_target = 1;
      break;
    case 'c':
      cfg.concurrency = (int)parse_num(optarg, 1, MAX_CONCURRENCY);
      break;
    case 'd':
      cfg.duration = parse_num(optarg, 0.1, 3600);
      break;
    case 'w':
      cfg.warmup = parse_num(optarg, 0, 60);
      break;
    case 'r':
      cfg.response_size = (uint64_t)parse_num(optarg, 64, 1 << 20);
      break;
    case 'T':
      cfg.timeout = parse_num(optarg, 0.1, 600);
      break;
    case 'b':
      cfg.kind = KIND_BULK;
      cfg.bulk_bytes = (uint64_t)parse_num(optarg, 0, 1e15);
      break;
    case 'i':
      cfg.kind = KIND_IDLE;
      cfg.idle_n = (int)parse_num(optarg, 1, MAX_CONCURRENCY);
      break;
    case 'P':
      cfg.procs = (int)parse_num(optarg, 1, MAX_PROCS);
      break;
    case 'R':
      cfg.kind = KIND_ROUNDS;
      cfg.rounds = (int)parse_num(optarg, 1, 100000);
      break;
    case 'g':
      cfg.gap = parse_num(optarg, 0, 60);
      break;
    case 'S':
      cfg.sized = 1;
      break;
    case 'F':
      exit(free_port());
    default:
      usage();
    }
  }
  if (!have_target || (cfg.mode != MODE_DIRECT && !cfg.have_proxy))
    usage();
  if (cfg.kind == KIND_BULK)
    cfg.concurrency = 1;
  if (cfg.procs > 1 && (cfg.kind != KIND_OPS || cfg.procs > cfg.concurrency))
    usage(); /* only open-rate runs split, at least one slot each */
}

/* One generator: its slots, its loop, until the run is over. */
static void generate(void) {
  loop = ev_default_loop(EVBACKEND_EPOLL);
  if (!loop)
    die("no epoll loop");
  int nslots = cfg.kind == KIND_IDLE ? cfg.idle_n : cfg.concurrency;
  slots = calloc((size_t)nslots, sizeof *slots);
  if (!slots)
    die("out of memory");
  for (int i = 0; i < nslots; i++) {
    slots[i].fd = -1;
    ev_init(&slots[i].io, on_io);
  }
  t_start_ns = now_ns();
  t_measure_ns = t_start_ns + (uint64_t)(cfg.warmup * 1e9);
  t_end_ns = UINT64_MAX;
  if (cfg.kind == KIND_IDLE) {
    measuring = 1; /* idle counts every error */
  } else if (cfg.kind == KIND_ROUNDS) {
    measuring = 1; /* every burst counts; the tick starts the first */
  } else if (cfg.kind == KIND_BULK) {
    measuring = 1; /* bulk has no warm-up: one stream from its start */
    t_end_ns = t_start_ns + (uint64_t)(cfg.duration * 1e9);
  } else if (cfg.warmup == 0) {
    measuring = 1;
    t_end_ns = t_start_ns + (uint64_t)(cfg.duration * 1e9);
  }
  ev_timer tick;
  ev_timer_init(&tick, on_tick, 0.01, 0.01);
  ev_timer_start(loop, &tick);
  ev_check fill;
  if (cfg.kind == KIND_IDLE) {
    ev_check_init(&fill, on_idle_fill);
    ev_check_start(loop, &fill);
  } else if (cfg.kind == KIND_OPS || cfg.kind == KIND_BULK) {
    for (int i = 0; i < cfg.concurrency; i++)
      slot_start(&slots[i]);
  }
  ev_run(loop, 0);
  /* An operation still open at the end is not counted, but its age so far
   * is a lower bound of its latency: max_us shows a stuck one. */
  uint64_t t_stop = now_ns();
  for (int i = 0; i < nslots; i++) {
    if (cfg.kind == KIND_OPS && slots[i].step != ST_FREE &&
        (t_stop - slots[i].t0_ns) / 1000u > hist.max)
      hist.max = (t_stop - slots[i].t0_ns) / 1000u;
    slot_close(&slots[i]);
  }
  free(slots);
}

/* --procs N: N children share the slots (the first ones take the
 * remainder); the parent only merges their counters. */
static void generate_forked(void) {
  int fds[MAX_PROCS];
  pid_t pids[MAX_PROCS];
  int total = cfg.concurrency;
  for (int i = 0; i < cfg.procs; i++) {
    int p[2];
    if (pipe(p) != 0)
      die("pipe failed");
    pids[i] = fork();
    if (pids[i] < 0)
      die("fork failed");
    if (pids[i] == 0) {
      close(p[0]);
      cfg.concurrency = total / cfg.procs + (i < total % cfg.procs);
      generate();
      tally_send(p[1]);
      _exit(0);
    }
    close(p[1]);
    fds[i] = p[0];
  }
  int lost = 0;
  for (int i = 0; i < cfg.procs; i++) {
    lost |= tally_merge(fds[i]) != 0;
    close(fds[i]);
    waitpid(pids[i], NULL, 0);
  }
  if (lost)
    die("a generator process died before reporting");
}

int main(int argc, char **argv) {
  parse_args(argc, argv);
  signal(SIGPIPE, SIG_IGN);
  build_messages();
  if (cfg.procs > 1)
    generate_forked();
  else
    generate();
  print_result();
  uint64_t e = 0;
  for (int i = 0; i < ERR_N; i++)
    e += errors[i];
  return e ? 1 : 0;
}
