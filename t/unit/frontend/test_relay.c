/* SPDX-License-Identifier: BSD-2-Clause */
/* The relay (modules/frontend/relay.c) through the real host API of the
 * mock host: data both ways, pre bytes first, half-close, idle timeout,
 * backpressure with a reader that stops, errors, abort, the splice path
 * (pipes appear for bulk TCP data) and the copy path (never a pipe), the
 * bounded set of spare pipes, every fd closed afterwards, and the guard
 * rule (modules/lib/guard.h):
 * an owner may end the relay, and free its own object, inside first_down
 * or done (run under ASan to see a use-after-free). An error ends the
 * relay saying which end failed (relay_stats.error_side: the client's or
 * the target's, in copy and splice modes), and relay_lease_end turns the
 * end into a lease's (connector.h; issue 13, the pool's outcomes of
 * CP-5-4/CP-5-5). Covers TM-PROTO-6 (a transparent byte stream),
 * TM-P0-10 (a target socket error ends only its stream) and TM-SEC-7
 * (nothing left after close). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <proxyhost/mock.h>

#include "host_test.h"
#include "loop_test.h"
#include "frontend/relay.h"
#include "sock_test.h"
#include "tap.h"

HOST_TEST_MODULE("relay_host");

/* What the done callback saw. */
typedef struct outcome {
  int done_calls;
  int end;
  relay_stats st;
  int first_down_calls;
  /* the ending hook: calls (before done), and what it was told */
  int ending_calls, ending_before_done, ending_end, ending_side, ending_err;
} outcome;

static void on_ending(void *arg, int end, int error_side, int err) {
  outcome *o = arg;
  o->ending_calls++;
  o->ending_before_done = o->done_calls == 0;
  o->ending_end = end;
  o->ending_side = error_side;
  o->ending_err = err;
}

static void on_done(void *arg, const relay_stats *st, int end) {
  outcome *o = arg;
  o->done_calls++;
  o->end = end;
  o->st = *st;
}

static void on_first_down(void *arg) { ((outcome *)arg)->first_down_calls++; }

static relay_opts opts(outcome *o, int use_splice, int64_t idle_ms) {
  relay_opts r = {.idle_timeout_ms = idle_ms,
                  .buffer_size = 16384,
                  .use_splice = use_splice,
                  .first_down = on_first_down,
                  .done = on_done,
                  .ending = on_ending,
                  .arg = o};
  return r;
}

/* ---- fds ----------------------------------------------------------------- */

static int count_fds(int *pipes) {
  DIR *d = opendir("/proc/self/fd");
  int n = 0, np = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    char path[300], link[64];
    snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
    ssize_t l = readlink(path, link, sizeof(link) - 1);
    if (l > 0) {
      link[l] = '\0';
      if (strncmp(link, "pipe:", 5) == 0)
        np++;
    }
    n++;
  }
  if (d)
    closedir(d);
  if (pipes)
    *pipes = np;
  return n - 1; /* the directory stream */
}

static int fd_open(int fd) { return fcntl(fd, F_GETFD) >= 0; }

/* Client app <-> relay <-> target app. app_c and app_t are the test's
 * ends; the relay gets the other two. */
typedef struct rig {
  int app_c, app_t;
  int rc, rt; /* the relay's fds (for checking they are closed) */
} rig;

static int make_rig(rig *g, int tcp) {
  int a[2], b[2];
  if (tcp ? sock_test_tcp_pair(a) < 0 || sock_test_tcp_pair(b) < 0
          : socketpair(AF_UNIX, SOCK_STREAM, 0, a) < 0 ||
                socketpair(AF_UNIX, SOCK_STREAM, 0, b) < 0)
    return -1;
  g->app_c = a[0];
  g->rc = a[1];
  g->rt = b[0];
  g->app_t = b[1];
  return 0;
}

static int is_done(void *arg) { return ((outcome *)arg)->done_calls > 0; }

/* Reads what is available now (non-blocking) into buf. */
static ssize_t read_now(int fd, char *buf, size_t cap) {
  sock_test_nonblock(fd);
  ssize_t n = read(fd, buf, cap);
  return n < 0 && errno == EAGAIN ? -2 : n;
}

/* ---- tests ------------------------------------------------------------- */

static void test_both_ways_and_half_close(ph_mock *m, int tcp, int splice) {
  char name[128];
  const char *kind = tcp ? (splice ? "tcp/splice" : "tcp/copy") : "unix";
  int base = count_fds(NULL);
  rig g;
  if (make_rig(&g, tcp) < 0) {
    ok(0, "rig");
    return;
  }
  outcome o = {0};
  relay_opts ro = opts(&o, splice, 5000);
  ph_relay *r = relay_start(api, hctx, end_fd(g.rc), end_fd(g.rt), "PRE:", 4, &ro);
  snprintf(name, sizeof(name), "%s: relay starts", kind);
  ok(r != NULL, name);

  write(g.app_c, "hello", 5);
  ph_mock_run_for(m, 20);
  char buf[64] = {0};
  ssize_t n = read_now(g.app_t, buf, sizeof(buf));
  snprintf(name, sizeof(name), "%s: pre bytes reach the target first", kind);
  ok(n == 9 && memcmp(buf, "PRE:hello", 9) == 0, name);

  write(g.app_t, "world", 5);
  ph_mock_run_for(m, 20);
  memset(buf, 0, sizeof(buf));
  n = read_now(g.app_c, buf, sizeof(buf));
  snprintf(name, sizeof(name), "%s: the target's answer reaches the client",
           kind);
  ok(n == 5 && memcmp(buf, "world", 5) == 0, name);
  snprintf(name, sizeof(name), "%s: first_down called once", kind);
  write(g.app_t, "again", 5);
  ph_mock_run_for(m, 20);
  read_now(g.app_c, buf, sizeof(buf));
  is_int(o.first_down_calls, 1, name);

  /* The client half-closes: the target sees EOF and may still answer. */
  shutdown(g.app_c, SHUT_WR);
  ph_mock_run_for(m, 20);
  n = read_now(g.app_t, buf, sizeof(buf));
  snprintf(name, sizeof(name), "%s: client EOF becomes target EOF", kind);
  is_int(n, 0, name);
  write(g.app_t, "late", 4);
  ph_mock_run_for(m, 20);
  n = read_now(g.app_c, buf, sizeof(buf));
  snprintf(name, sizeof(name), "%s: the other direction still flows", kind);
  ok(n == 4 && memcmp(buf, "late", 4) == 0, name);
  snprintf(name, sizeof(name), "%s: not done while one direction is open",
           kind);
  is_int(o.done_calls, 0, name);

  shutdown(g.app_t, SHUT_WR);
  wait_until(loop, is_done(&o), 1000);
  n = read_now(g.app_c, buf, sizeof(buf));
  snprintf(name, sizeof(name), "%s: target EOF reaches the client", kind);
  is_int(n, 0, name);
  snprintf(name, sizeof(name), "%s: done once, both directions closed", kind);
  ok(o.done_calls == 1 && o.end == RELAY_END_CLOSED, name);
  snprintf(name, sizeof(name), "%s: a clean end blames no side", kind);
  is_int(o.st.error_side, RELAY_SIDE_NONE, name);
  snprintf(name, sizeof(name), "%s: stats count both ways", kind);
  ok(o.st.up == 9 && o.st.down == 14, name);
  snprintf(name, sizeof(name), "%s: the relay closed its fds", kind);
  ok(!fd_open(g.rc) && !fd_open(g.rt), name);
  close(g.app_c);
  close(g.app_t);
  snprintf(name, sizeof(name), "%s: fd count back to the baseline", kind);
  is_int(count_fds(NULL), base, name);
}

/* Bulk: a thread writes N bytes into the client end and closes, another
 * reads them at the target end; the loop runs in this thread. */
typedef struct bulk {
  int fd;
  size_t total;
  size_t got;
  uint32_t sum;
  int finished;
  int slow; /* reader pauses between reads */
} bulk;

static uint8_t pattern(size_t i) { return (uint8_t)((i * 131u) >> 3); }

static void *bulk_writer(void *arg) {
  bulk *b = arg;
  uint8_t chunk[65536];
  size_t off = 0;
  while (off < b->total) {
    size_t n = b->total - off < sizeof(chunk) ? b->total - off : sizeof(chunk);
    for (size_t i = 0; i < n; i++)
      chunk[i] = pattern(off + i);
    ssize_t w = write(b->fd, chunk, n);
    if (w <= 0)
      break;
    off += (size_t)w;
  }
  shutdown(b->fd, SHUT_WR);
  return NULL;
}

static void *bulk_reader(void *arg) {
  bulk *b = arg;
  uint8_t chunk[65536];
  int bad = 0;
  for (;;) {
    ssize_t n = read(b->fd, chunk, sizeof(chunk));
    if (n <= 0)
      break;
    for (ssize_t i = 0; i < n; i++)
      if (chunk[i] != pattern(b->got + (size_t)i))
        bad = 1;
    b->got += (size_t)n;
    if (b->slow)
      usleep(2000);
  }
  b->sum = (uint32_t)bad;
  __atomic_store_n(&b->finished, 1, __ATOMIC_SEQ_CST);
  return NULL;
}

typedef struct bulk_watch {
  bulk *rd;
  int max_pipes;
} bulk_watch;

static int bulk_done(void *arg) {
  bulk_watch *w = arg;
  int pipes = 0;
  count_fds(&pipes);
  if (pipes > w->max_pipes)
    w->max_pipes = pipes;
  return __atomic_load_n(&w->rd->finished, __ATOMIC_SEQ_CST);
}

static void test_bulk(ph_mock *m, int splice) {
  const char *kind = splice ? "splice" : "copy";
  char name[128];
  int base = count_fds(NULL);
  rig g;
  if (make_rig(&g, 1) < 0) {
    ok(0, "rig");
    return;
  }
  int pipes_before = 0;
  count_fds(&pipes_before);
  outcome o = {0};
  relay_opts ro = opts(&o, splice, 5000);
  relay_start(api, hctx, end_fd(g.rc), end_fd(g.rt), NULL, 0, &ro);
  bulk wr = {.fd = g.app_c, .total = 32u << 20};
  bulk rd = {.fd = g.app_t};
  pthread_t tw, tr;
  pthread_create(&tw, NULL, bulk_writer, &wr);
  pthread_create(&tr, NULL, bulk_reader, &rd);
  bulk_watch w = {&rd, 0};
  wait_until(loop, bulk_done(&w), 20000);
  pthread_join(tw, NULL);
  /* The target answers EOF too, so the relay can end. */
  shutdown(g.app_t, SHUT_WR);
  wait_until(loop, is_done(&o), 2000);
  pthread_join(tr, NULL);
  snprintf(name, sizeof(name), "%s: 32 MiB arrive intact, in order", kind);
  ok(rd.got == wr.total && rd.sum == 0, name);
  if (splice) {
    ok(w.max_pipes > pipes_before, "splice: bulk TCP data goes through a pipe");
  } else {
    is_int(w.max_pipes, pipes_before, "copy: no pipe is ever made");
  }
  snprintf(name, sizeof(name), "%s: relay ends closed with the byte count",
           kind);
  ok(o.done_calls == 1 && o.end == RELAY_END_CLOSED && o.st.up == wr.total,
     name);
  close(g.app_c);
  close(g.app_t);
  int pipes_after = 0;
  snprintf(name, sizeof(name), "%s: fds (pipes too) back to the baseline",
           kind);
  ok(count_fds(&pipes_after) == base && pipes_after == pipes_before, name);
}

/* A client that stops reading: the relay stops reading the target, so the
 * target's writes hit EAGAIN after a bounded amount (kernel buffers plus
 * one relay buffer or pipe), and nothing is lost when the client reads. */
static void test_backpressure(ph_mock *m, int splice) {
  const char *kind = splice ? "splice" : "copy";
  char name[128];
  rig g;
  if (make_rig(&g, 1) < 0) {
    ok(0, "rig");
    return;
  }
  outcome o = {0};
  relay_opts ro = opts(&o, splice, 5000);
  relay_start(api, hctx, end_fd(g.rc), end_fd(g.rt), NULL, 0, &ro);
  sock_test_nonblock(g.app_t);
  static uint8_t chunk[65536];
  size_t sent = 0;
  int blocked = 0;
  for (int i = 0; i < 2000 && !blocked; i++) {
    for (;;) {
      for (size_t k = 0; k < sizeof(chunk); k++)
        chunk[k] = pattern(sent + k);
      ssize_t n = write(g.app_t, chunk, sizeof(chunk));
      if (n <= 0)
        break;
      sent += (size_t)n;
    }
    ph_mock_run_for(m, 2);
    /* Blocked: even after the loop ran, the target cannot write. */
    chunk[0] = pattern(sent);
    ssize_t n = write(g.app_t, chunk, 1);
    if (n == 1)
      sent++;
    else if (n < 0 && errno == EAGAIN)
      blocked = 1;
  }
  snprintf(name, sizeof(name),
           "%s: a stalled client stops the relay reading the target", kind);
  ok(blocked, name);
  snprintf(name, sizeof(name), "%s: bounded in flight (%zu KiB)", kind,
           sent >> 10);
  ok(sent < (32u << 20), name);
  ok(o.done_calls == 0, "the relay keeps waiting, it does not fail");
  /* The client reads again: everything arrives, in order. */
  size_t got = 0;
  int intact = 1;
  for (int i = 0; i < 5000 && got < sent; i++) {
    ph_mock_run_for(m, 1);
    for (;;) {
      ssize_t n = read_now(g.app_c, (char *)chunk, sizeof(chunk));
      if (n <= 0)
        break;
      for (ssize_t k = 0; k < n; k++)
        if (chunk[k] != pattern(got + (size_t)k))
          intact = 0;
      got += (size_t)n;
    }
  }
  snprintf(name, sizeof(name), "%s: once the client reads, nothing was lost",
           kind);
  if (!ok(got == sent && intact, name))
    printf("#   got %zu of %zu bytes, intact %d\n", got, sent, intact);
  shutdown(g.app_t, SHUT_WR);
  shutdown(g.app_c, SHUT_WR);
  wait_until(loop, is_done(&o), 1000);
  ok(o.done_calls == 1 && o.end == RELAY_END_CLOSED, "then it ends cleanly");
  close(g.app_c);
  close(g.app_t);
}

/* Regression: EOF read in the last round a callback allows (after
 * many full reads) must still become shutdown on the other side. The
 * client's bytes and its FIN are all queued before the relay starts, so
 * one callback reads them back to back. */
static void test_eof_after_full_reads(ph_mock *m) {
  for (int chunks = 1; chunks <= 40; chunks++) {
    rig g;
    if (make_rig(&g, 1) < 0) {
      ok(0, "rig");
      return;
    }
    static char data[40 * 4096];
    size_t total = (size_t)chunks * 4096;
    if (write(g.app_c, data, total) != (ssize_t)total) {
      ok(0, "queue the client's bytes");
      return;
    }
    shutdown(g.app_c, SHUT_WR);
    ph_mock_run_for(m, 5); /* let loopback deliver data and FIN */
    outcome o = {0};
    relay_opts ro = opts(&o, 0, 5000);
    ro.buffer_size = 4096;
    relay_start(api, hctx, end_fd(g.rc), end_fd(g.rt), NULL, 0, &ro);
    size_t got = 0;
    int eof = 0;
    for (int i = 0; i < 500 && !eof; i++) {
      ph_mock_run_for(m, 1);
      char b[65536];
      ssize_t n;
      while ((n = read_now(g.app_t, b, sizeof(b))) > 0)
        got += (size_t)n;
      eof = n == 0;
    }
    if (!eof || got != total) {
      ok(0, "EOF after full reads reaches the target");
      printf("#   %d chunks: got %zu of %zu, eof %d\n", chunks, got, total,
             eof);
      close(g.app_c);
      close(g.app_t);
      poll_until(loop, is_done(&o), 100);
      return;
    }
    shutdown(g.app_t, SHUT_WR);
    wait_until(loop, is_done(&o), 1000);
    close(g.app_c);
    close(g.app_t);
  }
  ok(1, "EOF after 1..40 full reads always reaches the target");
}

/* The client's side never drains: idle timeout ends it. */
static void test_idle(ph_mock *m) {
  int base = count_fds(NULL);
  rig g;
  if (make_rig(&g, 1) < 0) {
    ok(0, "rig");
    return;
  }
  outcome o = {0};
  /* Wide margins: a loaded machine may wake the loop late, and a late
   * wake-up must not look like idleness. */
  relay_opts ro = opts(&o, 1, 1000);
  relay_start(api, hctx, end_fd(g.rc), end_fd(g.rt), NULL, 0, &ro);
  ph_mock_run_for(m, 300);
  write(g.app_c, "x", 1); /* activity pushes the deadline back */
  ph_mock_run_for(m, 300);
  is_int(o.done_calls, 0, "activity keeps an idle relay alive");
  wait_until(loop, is_done(&o), 5000);
  ok(o.done_calls == 1 && o.end == RELAY_END_IDLE,
     "no bytes for idle_timeout: the relay ends idle");
  is_int(o.st.error_side, RELAY_SIDE_NONE, "an idle end blames no side");
  ok(o.ending_calls == 1 && o.ending_before_done &&
         o.ending_end == RELAY_END_IDLE,
     "issue 22 item 8: ending told the owner first (RESET timeout)");
  ok(!fd_open(g.rc) && !fd_open(g.rt), "and closed both sockets");
  char b[4];
  is_int(read_now(g.app_c, b, sizeof(b)), 0, "the client sees the close");
  close(g.app_c);
  close(g.app_t);
  is_int(count_fds(NULL), base, "fds back to the baseline after idle");
}

/* The client resets while the target sends: an error ends it, on the
 * client's side. */
static void test_error(ph_mock *m, int splice) {
  char name[128];
  const char *kind = splice ? "splice" : "copy";
  rig g;
  if (make_rig(&g, 1) < 0) {
    ok(0, "rig");
    return;
  }
  outcome o = {0};
  relay_opts ro = opts(&o, splice, 5000);
  relay_start(api, hctx, end_fd(g.rc), end_fd(g.rt), NULL, 0, &ro);
  struct linger lg = {1, 0};
  setsockopt(g.app_c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
  close(g.app_c); /* RST */
  ph_mock_run_for(m, 10);
  static char data[65536];
  sock_test_nonblock(g.app_t);
  for (int i = 0; i < 50 && !o.done_calls; i++) {
    write(g.app_t, data, sizeof(data));
    ph_mock_run_for(m, 5);
  }
  snprintf(name, sizeof(name), "%s: a reset client ends the relay with an "
           "error", kind);
  ok(o.done_calls == 1 && o.end == RELAY_END_ERROR, name);
  snprintf(name, sizeof(name), "%s: the client's side failed", kind);
  is_int(o.st.error_side, RELAY_SIDE_CLIENT, name);
  ok(!fd_open(g.rc) && !fd_open(g.rt), "both sockets closed");
  close(g.app_t);
}

/* The target resets, in the middle of what it sends or while the client
 * sends: an error on the target's side (the client keeps reading, so
 * only the target can be blamed). */
static void test_target_error(ph_mock *m, int splice, int client_sends) {
  char name[160];
  const char *kind = splice ? "splice" : "copy";
  const char *what = client_sends ? "while the client sends"
                                  : "in the middle of a response";
  rig g;
  if (make_rig(&g, 1) < 0) {
    ok(0, "rig");
    return;
  }
  outcome o = {0};
  relay_opts ro = opts(&o, splice, 5000);
  relay_start(api, hctx, end_fd(g.rc), end_fd(g.rt), NULL, 0, &ro);
  static char data[65536];
  sock_test_nonblock(g.app_c);
  sock_test_nonblock(g.app_t);
  if (!client_sends)
    (void)write(g.app_t, data, sizeof(data)); /* bulk: splices */
  ph_mock_run_for(m, 10);
  struct linger lg = {1, 0};
  setsockopt(g.app_t, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
  close(g.app_t); /* RST */
  char sink[65536];
  for (int i = 0; i < 100 && !o.done_calls; i++) {
    if (client_sends)
      (void)write(g.app_c, data, sizeof(data));
    while (read_now(g.app_c, sink, sizeof(sink)) > 0)
      ;
    ph_mock_run_for(m, 5);
  }
  snprintf(name, sizeof(name), "%s: a target reset %s ends with an error",
           kind, what);
  ok(o.done_calls == 1 && o.end == RELAY_END_ERROR, name);
  snprintf(name, sizeof(name), "%s: the target's side failed (%s)", kind,
           what);
  is_int(o.st.error_side, RELAY_SIDE_TARGET, name);
  ok(!fd_open(g.rc) && !fd_open(g.rt), "both sockets closed");
  /* Issue 22 item 8: the owner hears why before the ends are closed, and
   * the target's reset is told to a stream end as connection_refused. */
  snprintf(name, sizeof(name),
           "%s: ending ran once, before done, with the target's errno (%s)",
           kind, what);
  ok(o.ending_calls == 1 && o.ending_before_done &&
         o.ending_end == RELAY_END_ERROR &&
         o.ending_side == RELAY_SIDE_TARGET &&
         (o.ending_err == ECONNRESET || o.ending_err == EPIPE),
     name);
  is_int(relay_reset_code(o.ending_end, o.ending_err),
         PH_OPEN_CONNECTION_REFUSED, "... which is RESET connection_refused");
  close(g.app_c);
}

/* relay_reset_code: why a relay ended, as a stream's RESET code. */
static void test_reset_code_map(void) {
  is_int(relay_reset_code(RELAY_END_CLOSED, 0), PH_OPEN_OK,
         "reset code: closed is 0 (nothing failed)");
  is_int(relay_reset_code(RELAY_END_ABORTED, 0), PH_OPEN_OK,
         "reset code: aborted is 0");
  is_int(relay_reset_code(RELAY_END_IDLE, 0), PH_OPEN_TIMEOUT,
         "reset code: idle is timeout");
  is_int(relay_reset_code(RELAY_END_ERROR, ETIMEDOUT), PH_OPEN_TIMEOUT,
         "reset code: ETIMEDOUT is timeout");
  is_int(relay_reset_code(RELAY_END_ERROR, EHOSTUNREACH),
         PH_OPEN_HOST_UNREACHABLE, "reset code: EHOSTUNREACH");
  is_int(relay_reset_code(RELAY_END_ERROR, ENETUNREACH),
         PH_OPEN_NETWORK_UNREACHABLE, "reset code: ENETUNREACH");
  is_int(relay_reset_code(RELAY_END_ERROR, 0), PH_OPEN_INTERNAL_ERROR,
         "reset code: a stream's reset or no memory is internal_error");
}

/* relay_lease_end: the relay's end as a lease's (connector.h). */
static void test_lease_end_map(void) {
  is_int(relay_lease_end(RELAY_END_CLOSED, RELAY_SIDE_NONE),
         PH_LEASE_END_CLOSED, "lease: EOF both ways is CLOSED");
  is_int(relay_lease_end(RELAY_END_IDLE, RELAY_SIDE_NONE),
         PH_LEASE_END_TIMEOUT, "lease: the idle timeout is TIMEOUT");
  is_int(relay_lease_end(RELAY_END_ERROR, RELAY_SIDE_TARGET),
         PH_LEASE_END_TARGET_ERROR,
         "lease: an error of the target's end is TARGET_ERROR");
  is_int(relay_lease_end(RELAY_END_ERROR, RELAY_SIDE_CLIENT),
         PH_LEASE_END_CLIENT_ERROR,
         "lease: an error of the client's end is CLIENT_ERROR");
  is_int(relay_lease_end(RELAY_END_ERROR, RELAY_SIDE_NONE),
         PH_LEASE_END_CLIENT_ERROR,
         "lease: the relay's own failure says nothing about the target");
  is_int(relay_lease_end(RELAY_END_ABORTED, RELAY_SIDE_NONE),
         PH_LEASE_END_CLIENT_ERROR,
         "lease: an abort by the owner says nothing about the target");
  is_int(relay_lease_end(99, RELAY_SIDE_TARGET), PH_LEASE_END_CLIENT_ERROR,
         "lease: an unknown end blames nobody");
}

static void test_abort(ph_mock *m) {
  int base = count_fds(NULL);
  rig g;
  if (make_rig(&g, 1) < 0) {
    ok(0, "rig");
    return;
  }
  outcome o = {0};
  relay_opts ro = opts(&o, 1, 5000);
  ph_relay *r = relay_start(api, hctx, end_fd(g.rc), end_fd(g.rt), "x", 1, &ro);
  ph_mock_run_for(m, 10);
  relay_stats st = relay_get_stats(r);
  is_int(st.up, 1, "relay_get_stats counts the pre byte");
  relay_abort(r);
  ph_mock_run_for(m, 10);
  is_int(o.done_calls, 0, "relay_abort does not call done");
  ok(!fd_open(g.rc) && !fd_open(g.rt), "relay_abort closes both sockets");
  close(g.app_c);
  close(g.app_t);
  is_int(count_fds(NULL), base, "fds back to the baseline after abort");
}

/* An owner whose object lives on the heap, as a frontend's connection
 * does: it ends the relay and frees itself from inside the callbacks. */
typedef struct owner {
  ph_relay *r;
  int abort_in_first_down; /* first_down: relay_abort, then free */
  int abort_in_done;       /* done: relay_abort (its close path), free */
} owner;

static int owner_done_calls, owner_freed;

static void owner_first_down(void *arg) {
  owner *w = arg;
  if (w->abort_in_first_down) {
    relay_abort(w->r);
    free(w);
    owner_freed++;
  }
}

static void owner_done(void *arg, const relay_stats *st, int end) {
  (void)st;
  (void)end;
  owner *w = arg;
  owner_done_calls++;
  if (w->abort_in_done)
    relay_abort(w->r); /* ended already: nothing to do */
  free(w);
  owner_freed++;
}

static int owner_gone(void *arg) { return owner_freed > *(int *)arg; }

static ph_relay *owner_start(rig *g, owner *w) {
  relay_opts ro = {.idle_timeout_ms = 5000,
                   .buffer_size = 16384,
                   .use_splice = 1,
                   .first_down = owner_first_down,
                   .done = owner_done,
                   .arg = w};
  w->r = relay_start(api, hctx, end_fd(g->rc), end_fd(g->rt), NULL, 0, &ro);
  return w->r;
}

static void test_owner_ends_inside(ph_mock *m) {
  int base = count_fds(NULL);
  rig g;
  if (make_rig(&g, 1) < 0) {
    ok(0, "rig");
    return;
  }
  int freed = owner_freed, done = owner_done_calls;
  owner *w = calloc(1, sizeof(*w));
  w->abort_in_first_down = 1;
  ok(owner_start(&g, w) != NULL, "a relay whose owner is on the heap");
  write(g.app_t, "hi", 2);
  wait_until(loop, owner_gone(&freed), 1000);
  ok(owner_freed == freed + 1 && owner_done_calls == done,
     "relay_abort inside first_down, the owner freed there too: no "
     "use-after-free, done not called");
  ok(!fd_open(g.rc) && !fd_open(g.rt), "and both sockets closed");
  char b[8];
  ssize_t n = read_now(g.app_c, b, sizeof(b));
  ok(n == 2 && memcmp(b, "hi", 2) == 0,
     "the first bytes reached the client before first_down");
  close(g.app_c);
  close(g.app_t);
  is_int(count_fds(NULL), base, "fds back to the baseline");

  if (make_rig(&g, 1) < 0) {
    ok(0, "rig");
    return;
  }
  freed = owner_freed;
  done = owner_done_calls;
  w = calloc(1, sizeof(*w));
  w->abort_in_done = 1;
  owner_start(&g, w);
  shutdown(g.app_c, SHUT_WR);
  shutdown(g.app_t, SHUT_WR);
  wait_until(loop, owner_gone(&freed), 1000);
  ok(owner_done_calls == done + 1 && owner_freed == freed + 1,
     "the owner freed its object inside done, after relay_abort on the "
     "ended relay: no use-after-free, done once");
  ok(!fd_open(g.rc) && !fd_open(g.rt), "both sockets closed before done");
  close(g.app_c);
  close(g.app_t);
  is_int(count_fds(NULL), base, "fds back to the baseline after done");
}

/* Many relays at once, idle: closing them all frees everything. */
static void test_many(ph_mock *m) {
  int base = count_fds(NULL);
  enum { N = 200 };
  static rig g[N];
  static outcome o[N];
  int okc = 1;
  for (int i = 0; i < N; i++) {
    memset(&o[i], 0, sizeof(o[i]));
    if (make_rig(&g[i], 1) < 0) {
      okc = 0;
      break;
    }
    relay_opts ro = opts(&o[i], 1, 60000);
    if (!relay_start(api, hctx, end_fd(g[i].rc), end_fd(g[i].rt), NULL, 0, &ro))
      okc = 0;
    write(g[i].app_c, "ping", 4);
  }
  ok(okc, "200 relays started");
  /* Run the loop until every relay delivered (bounded: 10 s), not for a
   * fixed time: a loaded machine may need several rounds. */
  static int got[N];
  memset(got, 0, sizeof(got));
  int delivered = 0;
  for (int round = 0; round < 500 && delivered < N; round++) {
    ph_mock_run_for(m, 20);
    for (int i = 0; i < N; i++) {
      char b[8];
      ssize_t n = got[i] < 4 ? read_now(g[i].app_t, b, sizeof(b)) : 0;
      if (n > 0) {
        got[i] += (int)n;
        if (got[i] == 4)
          delivered++;
      }
    }
  }
  is_int(delivered, N, "each relay delivered its bytes");
  for (int i = 0; i < N; i++) {
    close(g[i].app_c);
    close(g[i].app_t);
  }
  int all = 0;
  for (int t = 0; t < 500 && all < N; t += 5) {
    ph_mock_run_for(m, 5);
    all = 0;
    for (int i = 0; i < N; i++)
      all += o[i].done_calls;
  }
  is_int(all, N, "every relay ended once its peers closed");
  is_int(count_fds(NULL), base, "and every fd was closed");
}

/* Spare pipes (relay.h): a bulk direction's pipe is kept for the next
 * one while relays live, at most RELAY_SPARE_PIPES of them, and all are
 * closed with the last relay. Each relay here gets 64 KiB from its client
 * in one go, so its first read fills the 16 KiB buffer and it splices. */
#define POOL_RELAYS (RELAY_SPARE_PIPES + 3)
#define POOL_SLOTS (POOL_RELAYS + 1) /* and one more afterwards */
#define POOL_BYTES 65536

typedef struct pool_relay {
  rig g;
  ph_relay *r;
  outcome o;
} pool_relay;

static int pool_moved(void *arg) {
  pool_relay *p = arg;
  for (int i = 0; i < POOL_SLOTS; i++)
    if (p[i].r && relay_get_stats(p[i].r).up < POOL_BYTES)
      return 0;
  return 1;
}

static int pool_done(void *arg) {
  pool_relay *p = arg;
  for (int i = 0; i < POOL_SLOTS; i++)
    if (p[i].r && p[i].o.done_calls == 0)
      return 0;
  return 1;
}

/* Starts relays [from, to) with 64 KiB waiting at each client end. */
static int pool_start(pool_relay *p, int from, int to) {
  static char data[POOL_BYTES];
  for (int i = from; i < to; i++) {
    if (make_rig(&p[i].g, 1) < 0 ||
        write(p[i].g.app_c, data, sizeof(data)) != (ssize_t)sizeof(data))
      return -1;
    relay_opts ro = opts(&p[i].o, 1, 5000);
    p[i].r = relay_start(api, hctx, end_fd(p[i].g.rc), end_fd(p[i].g.rt), NULL,
                         0, &ro);
    if (!p[i].r)
      return -1;
  }
  return 0;
}

/* Drains what arrived, half-closes both app ends, waits for the ends. */
static size_t pool_end(ph_mock *m, pool_relay *p, int from, int to) {
  static char sink[POOL_BYTES];
  size_t got = 0;
  for (int i = from; i < to; i++) {
    ssize_t n;
    while ((n = read_now(p[i].g.app_t, sink, sizeof(sink))) > 0)
      got += (size_t)n;
    shutdown(p[i].g.app_c, SHUT_WR);
    shutdown(p[i].g.app_t, SHUT_WR);
  }
  wait_until(loop, pool_done(p), 5000);
  for (int i = from; i < to; i++) {
    close(p[i].g.app_c);
    close(p[i].g.app_t);
    p[i].r = NULL;
  }
  return got;
}

static void test_spare_pipes(ph_mock *m) {
  int base_pipes = 0, base = count_fds(&base_pipes);
  /* An idle relay keeps the spares alive between the bulk ones. */
  rig k;
  outcome ko = {0};
  relay_opts kro = opts(&ko, 1, 0);
  if (make_rig(&k, 0) < 0 ||
      !relay_start(api, hctx, end_fd(k.rc), end_fd(k.rt), NULL, 0, &kro)) {
    ok(0, "keep-alive relay");
    return;
  }
  is_int(relay_spare_pipes(), 0, "spare pipes: none before any bulk data");
  pool_relay p[POOL_SLOTS];
  memset(p, 0, sizeof(p));
  if (pool_start(p, 0, POOL_RELAYS) < 0) {
    ok(0, "spare pipes: relays start");
    return;
  }
  wait_until(loop, pool_moved(p), 5000);
  int held = 0;
  count_fds(&held);
  is_int(held - base_pipes, 2 * POOL_RELAYS,
         "spare pipes: each bulk relay splices through a pipe of its own");
  size_t got = pool_end(m, p, 0, POOL_RELAYS);
  ok(got == (size_t)POOL_RELAYS * POOL_BYTES, "spare pipes: every byte came");
  is_int(relay_spare_pipes(), RELAY_SPARE_PIPES,
         "spare pipes: at most RELAY_SPARE_PIPES are kept, the rest closed");
  int kept = 0;
  count_fds(&kept);
  is_int(kept - base_pipes, 2 * RELAY_SPARE_PIPES,
         "spare pipes: 2 fds each, no more");
  /* The next bulk relay takes a spare: no new pipe. */
  if (pool_start(p, POOL_RELAYS, POOL_RELAYS + 1) < 0) {
    ok(0, "spare pipes: one more relay starts");
    return;
  }
  pool_relay *last = &p[POOL_RELAYS];
  for (int t = 0; t < 5000 && relay_get_stats(last->r).up < POOL_BYTES; t += 2)
    ph_mock_run_for(m, 2);
  int reused = 0;
  count_fds(&reused);
  ok(reused == kept && relay_spare_pipes() == RELAY_SPARE_PIPES - 1,
     "spare pipes: a new bulk direction reuses a spare one");
  /* pool_end on the last one alone (its done was not called yet). */
  for (int i = 0; i < POOL_RELAYS; i++)
    p[i].r = NULL;
  got = pool_end(m, p, POOL_RELAYS, POOL_RELAYS + 1);
  ok(got == POOL_BYTES && last->o.end == RELAY_END_CLOSED,
     "spare pipes: its bytes came and it ended closed");
  is_int(relay_spare_pipes(), RELAY_SPARE_PIPES, "spare pipes: given back");
  /* The last relay to end closes them. */
  close(k.app_c);
  close(k.app_t);
  wait_until(loop, is_done(&ko), 2000);
  int after = 0;
  is_int(count_fds(&after), base, "spare pipes: fds back to the baseline");
  ok(after == base_pipes && relay_spare_pipes() == 0,
     "spare pipes: none left once no relay lives");
}

int main(void) {
  plan_lazy();
  signal(SIGPIPE, SIG_IGN); /* as the host does */
  ph_mock *m = host_test_start(&host_mod, "[proxyhost]\n");
  test_both_ways_and_half_close(m, 0, 0);
  test_both_ways_and_half_close(m, 1, 0);
  test_both_ways_and_half_close(m, 1, 1);
  test_bulk(m, 1);
  test_bulk(m, 0);
  test_backpressure(m, 1);
  test_backpressure(m, 0);
  test_eof_after_full_reads(m);
  test_idle(m);
  test_error(m, 0);
  test_error(m, 1);
  test_target_error(m, 0, 0);
  test_target_error(m, 1, 0);
  test_target_error(m, 0, 1);
  test_target_error(m, 1, 1);
  test_lease_end_map();
  test_reset_code_map();
  test_abort(m);
  test_owner_ends_inside(m);
  test_many(m);
  test_spare_pipes(m);
  ph_mock_stop(m);
  ph_mock_free(m);
  return done_testing();
}
