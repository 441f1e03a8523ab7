/* SPDX-License-Identifier: BSD-2-Clause */
/* The byte relay (relay.h).
 *
 * Each direction (up: client -> target, down: target -> client) moves
 * bytes from its source end to its destination end. An end is a socket
 * or a stream (stream.h). From a socket, bytes go through a user buffer
 * (read/send) or, once they are bulk data between two TCP sockets, a
 * pipe (splice in, splice out: the bytes never enter user space). From a
 * stream, they are written from the stream's own buffer (peek) and
 * consumed only once the destination took them, so a stream's receive
 * window reopens when its bytes reached the other end, not before. The
 * rules, identical for every way of moving bytes:
 *
 *  - a direction reads its source only while it holds nothing (buffer and
 *    pipe empty); what it read is written at once, and what the
 *    destination does not take waits for the destination to be writable.
 *    A slow reader therefore stops reading on the other side: the kernel's
 *    socket buffers carry the backpressure to the sender.
 *  - EOF on the source, once everything before it was written, becomes
 *    shutdown(SHUT_WR) on the destination; the relay ends when both
 *    directions got there.
 *  - bytes moved either way push the idle deadline back; the timer only
 *    compares times when it fires, so the hot path never touches it.
 *
 * Pipes are made lazily: a direction switches to splice after a read
 * filled its whole buffer (bulk data), so short exchanges (the usual
 * request/response) cost no pipe syscalls and idle streams hold no pipe
 * fds or buffers at all. An empty pipe goes back to a bounded set of
 * spares when its direction ends, so the next bulk direction skips pipe2,
 * F_SETPIPE_SZ and the two closes. Starting a relay costs no system call
 * beyond the two watchers: sockets are read and written with MSG_DONTWAIT
 * (no fcntl to be sure they are non-blocking), and whether both ends are
 * TCP is asked only when bulk data shows up, once per end.
 *
 * Ending, and freeing (guard.h): a relay is entered from outside only by
 * its loop callbacks (io_cb, idle_cb) and by the owner passing it the
 * handed-over watcher's events (relay_client_io); each runs between
 * guard_enter and guard_leave. Ending the relay (finish, or relay_abort)
 * releases everything at once (fds, pipes, buffers, watchers, timer) and
 * marks it dead; its memory is freed where the outermost entry leaves, or
 * at once when none runs (relay_abort from a stop). So the owner may end
 * the relay, or its own object, inside first_down or done: the code that
 * runs after those calls checks guard_dead and touches neither the owner
 * (done may have freed it) nor anything released.
 *
 * Measured on loopback (Linux 6.x, 2 cores, one bulk stream): splice and
 * copy cost about the same per byte; the chunk size matters more (64 KiB
 * ~0.47x of a direct connection, 256 KiB ~0.65x). splice avoids the two
 * copies through user space, which pays off with real NICs.
 */
#include "relay.h"

#include "lib/guard.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define RELAY_MIN_BUFFER 4096u
#define RELAY_MAX_BUFFER (1024u * 1024u)
/* Reads, and bytes, per direction per callback: fairness between streams
 * (a fast pair cannot hold the loop for long). */
#define RELAY_ROUNDS 16
#define RELAY_BUDGET (1024u * 1024u)
/* Spare copy buffers kept for reuse while relays exist. */
#define RELAY_SPARE_BUFFERS 16

/* One end of the relay: a socket with its watcher, or a stream. */
typedef struct rside {
  struct ph_relay *r;
  int fd;        /* a socket, or -1 */
  ph_stream *st; /* a stream, or NULL */
  ph_io *io;     /* the socket's watcher */
  int client;    /* 1: the client's end */
  /* Asked once per end, when bulk data first needs a pipe: */
  unsigned tcp_known : 1, tcp : 1; /* is it a TCP socket */
  unsigned nonblock : 1;           /* O_NONBLOCK made sure of */
} rside;

typedef struct rdir {
  struct rdir *other; /* the opposite direction */
  rside *in, *out;    /* source and destination ends */
  int src, dst;       /* their fds (-1 for a stream) */
  char *buf;          /* copy mode; held only while it holds bytes or bulk
                         data flows */
  size_t cap;         /* bytes one read may take (the configured size) */
  size_t buf_cap;     /* size of buf (larger than cap for big pre bytes) */
  size_t off, len;    /* pending bytes: buf[off .. off+len) */
  int pipe_r, pipe_w; /* splice mode when pipe_r >= 0 */
  size_t pipe_cap;    /* bytes one splice-in may move */
  size_t in_pipe;     /* bytes in the pipe */
  uint64_t moved;     /* bytes written to dst */
  unsigned eof : 1;   /* src said EOF */
  unsigned shut : 1;  /* dst shut down: this direction is finished */
  unsigned may_splice : 1;
  unsigned src_file : 1; /* src is not a socket: read(2) */
  unsigned dst_file : 1; /* dst is not a socket: write(2) */
  unsigned bulk : 1;     /* the last read filled the buffer */
  unsigned blocked : 1;  /* a stream source's bytes wait for out */
} rdir;

struct ph_relay {
  const ph_api *api;
  ph_ctx *ctx;
  rside cs, ts; /* the client's and the target's ends */
  ph_timer *idle;
  rdir up, down;
  int64_t last_ms; /* last time bytes moved */
  int64_t idle_ms;
  relay_opts o;
  guard g;
  int error_side; /* enum relay_side: the first end that failed */
  int error_errno; /* its failed call's errno when it is a socket, else 0 */
  unsigned first_down_sent : 1;
};

enum { STEP_OK = 0, STEP_ERROR = -1 };

/* A step failed on end e (its read or its write): remembered for
 * relay_stats.error_side, the first failure only. Returns STEP_ERROR. */
static int fail_on(rside *e) {
  if (e->r->error_side == RELAY_SIDE_NONE) {
    e->r->error_side = e->client ? RELAY_SIDE_CLIENT : RELAY_SIDE_TARGET;
    e->r->error_errno = e->st ? 0 : errno;
  }
  return STEP_ERROR;
}

/* Copy buffers are taken when bytes arrive and given back when they are
 * written (unless bulk data keeps flowing), so an idle stream holds none.
 * A few spare ones of the usual size are kept while any relay lives, so
 * a busy proxy does not go back to malloc for every message; the last
 * relay to end frees them. Empty pipes are kept the same way: a bulk
 * direction then starts splicing without pipe2 and F_SETPIPE_SZ, and
 * ends without two closes. At most RELAY_SPARE_PIPES (2 fds each), only
 * of one requested size, and none once no relay lives. Loop thread only,
 * like the relays. */
static struct {
  char *b[RELAY_SPARE_BUFFERS];
  size_t size;
  int n;
  int pipe_r[RELAY_SPARE_PIPES], pipe_w[RELAY_SPARE_PIPES];
  size_t pipe_size[RELAY_SPARE_PIPES]; /* what the kernel gave each */
  size_t pipe_req; /* the size they were made for (the direction's cap) */
  int np;
  long relays; /* relays alive */
} spare;

static char *buf_take(size_t size) {
  if (spare.n > 0 && spare.size == size)
    return spare.b[--spare.n];
  return malloc(size);
}

static void buf_give(char *b, size_t size) {
  if (!b)
    return;
  if (spare.n == 0)
    spare.size = size;
  if (spare.n < RELAY_SPARE_BUFFERS && spare.size == size)
    spare.b[spare.n++] = b;
  else
    free(b);
}

static void spare_flush(void) {
  while (spare.n > 0)
    free(spare.b[--spare.n]);
  while (spare.np > 0) {
    spare.np--;
    close(spare.pipe_r[spare.np]);
    close(spare.pipe_w[spare.np]);
  }
}

int relay_spare_pipes(void) { return spare.np; }

static void release_buf(rdir *d) {
  if (d->buf_cap == d->cap)
    buf_give(d->buf, d->buf_cap);
  else
    free(d->buf); /* an oversized one that held pre bytes */
  d->buf = NULL;
  d->buf_cap = 0;
}

static size_t pending(const rdir *d) { return d->len + d->in_pipe; }

/* The direction waits for its destination: bytes it holds, or a stream
 * source's bytes the destination did not take. */
static int waits_out(const rdir *d) { return pending(d) > 0 || d->blocked; }

/* The direction may read its source now. */
static int wants_in(const rdir *d) { return !d->eof && !waits_out(d); }

static int is_tcp(int fd) {
  int proto = 0;
  socklen_t len = sizeof(proto);
  return getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &len) == 0 &&
         proto == IPPROTO_TCP;
}

static void set_nonblock(int fd) {
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0 && !(fl & O_NONBLOCK))
    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* An end's answers for splice, asked once for both directions. */
static int side_is_tcp(rside *e) {
  if (!e->tcp_known) {
    e->tcp_known = 1;
    e->tcp = (unsigned)is_tcp(e->fd);
  }
  return e->tcp;
}

static void side_nonblock(rside *e) {
  if (!e->nonblock) {
    e->nonblock = 1;
    set_nonblock(e->fd);
  }
}

static void close_fd(int *fd) {
  if (*fd >= 0) {
    close(*fd);
    *fd = -1;
  }
}

/* ---- moving bytes ------------------------------------------------------ */

/* Gives the direction a pipe: a spare one, else a new one. On failure
 * it has none (copy mode). */
static void take_pipe(rdir *d) {
  if (spare.np > 0 && spare.pipe_req == d->cap) {
    spare.np--;
    d->pipe_r = spare.pipe_r[spare.np];
    d->pipe_w = spare.pipe_w[spare.np];
    d->pipe_cap = spare.pipe_size[spare.np];
    return;
  }
  int p[2];
  if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
    return;
  /* Best effort: a bigger pipe moves more per splice. */
  int sz = fcntl(p[1], F_SETPIPE_SZ, (int)d->cap);
  if (sz <= 0)
    sz = fcntl(p[1], F_GETPIPE_SZ);
  d->pipe_r = p[0];
  d->pipe_w = p[1];
  d->pipe_cap = sz > 0 ? (size_t)sz : 65536;
}

/* The direction's pipe goes back to the spares when it is empty (bytes
 * left in it belong to this stream only) and there is room; else it is
 * closed. */
static void give_pipe(rdir *d) {
  if (d->pipe_r < 0)
    return;
  if (d->in_pipe == 0 && spare.np < RELAY_SPARE_PIPES &&
      (spare.np == 0 || spare.pipe_req == d->cap)) {
    spare.pipe_req = d->cap;
    spare.pipe_size[spare.np] = d->pipe_cap;
    spare.pipe_r[spare.np] = d->pipe_r;
    spare.pipe_w[spare.np] = d->pipe_w;
    spare.np++;
  } else {
    close(d->pipe_r);
    close(d->pipe_w);
  }
  d->pipe_r = d->pipe_w = -1;
  d->in_pipe = 0;
}

/* Switches the direction to splice; on failure, or when the ends are not
 * both TCP sockets, the direction stays in copy mode for good. Checked
 * here, when bulk data first shows up, so short streams pay nothing. */
static void make_pipe(rdir *d) {
  d->may_splice = 0;
  if (!side_is_tcp(d->in) || !side_is_tcp(d->out))
    return;
  /* splice(2) honours the socket's own blocking mode. */
  side_nonblock(d->in);
  side_nonblock(d->out);
  take_pipe(d);
}

/* Writes p[0..len) to the destination: the bytes taken (0 when it is
 * full), or -1 on an error. */
static ssize_t put_out(rdir *d, const void *p, size_t len) {
  if (d->out->st) {
    ssize_t w = ph_stream_write(d->out->st, p, len);
    return w == PH_EAGAIN ? 0 : w < 0 ? -1 : w;
  }
  for (;;) {
    ssize_t w = d->dst_file ? write(d->dst, p, len)
                            : send(d->dst, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w >= 0)
      return w;
    if (errno == EINTR)
      continue;
    if (errno == ENOTSOCK && !d->dst_file) {
      d->dst_file = 1; /* a pipe or a file: write(2) from now on */
      set_nonblock(d->dst);
      continue;
    }
    return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
  }
}

/* Half-closes the destination. ENOTCONN on a socket: the peer is gone
 * already; the other direction will see it. */
static void shut_out(rdir *d) {
  if (d->out->st)
    ph_stream_shutdown(d->out->st);
  else
    shutdown(d->dst, SHUT_WR);
}

/* Writes what the direction holds. STEP_OK (maybe with bytes left: the
 * destination is full) or STEP_ERROR. Adds what it wrote to *n. */
static int flush(rdir *d, size_t *n) {
  while (d->len > 0) {
    ssize_t w = put_out(d, d->buf + d->off, d->len);
    if (w < 0)
      return fail_on(d->out);
    if (w == 0)
      return STEP_OK;
    d->off += (size_t)w;
    d->len -= (size_t)w;
    *n += (size_t)w;
    if (d->len == 0) {
      d->off = 0;
      /* Spliced from now on, or a message that was all there was:
       * the buffer goes back. */
      if (d->pipe_r >= 0 || !d->bulk)
        release_buf(d);
    }
  }
  while (d->in_pipe > 0) {
    ssize_t w = splice(d->pipe_r, NULL, d->dst, NULL, d->in_pipe,
                       SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return errno == EAGAIN ? STEP_OK : fail_on(d->out);
    }
    if (w == 0)
      return fail_on(d->out); /* cannot happen with bytes in the pipe */
    d->in_pipe -= (size_t)w;
    *n += (size_t)w;
  }
  return STEP_OK;
}

enum { FILL_DATA, FILL_FULL, FILL_AGAIN, FILL_EOF, FILL_ERROR, FILL_NOMEM };

/* Reads once from the source into the empty direction. FILL_FULL: the
 * read filled the whole space (more is probably waiting); FILL_ERROR:
 * the source failed; FILL_NOMEM: no buffer (the relay's own failure). */
static int fill(rdir *d) {
  if (d->pipe_r >= 0) {
    for (;;) {
      ssize_t r = splice(d->src, NULL, d->pipe_w, NULL, d->pipe_cap,
                         SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (r > 0) {
        d->in_pipe = (size_t)r;
        return (size_t)r == d->pipe_cap ? FILL_FULL : FILL_DATA;
      }
      if (r == 0)
        return FILL_EOF;
      if (errno == EINTR)
        continue;
      /* The pipe is empty, so EAGAIN means the socket is. */
      return errno == EAGAIN ? FILL_AGAIN : FILL_ERROR;
    }
  }
  if (!d->buf) {
    d->buf = buf_take(d->cap);
    if (!d->buf)
      return FILL_NOMEM;
    d->buf_cap = d->cap;
  }
  for (;;) {
    /* recv with MSG_DONTWAIT: no fcntl per stream to make sure the
     * socket is non-blocking. */
    ssize_t r = d->src_file ? read(d->src, d->buf, d->buf_cap)
                            : recv(d->src, d->buf, d->buf_cap, MSG_DONTWAIT);
    if (r > 0) {
      d->off = 0;
      d->len = (size_t)r;
      d->bulk = (size_t)r == d->buf_cap;
      return d->bulk ? FILL_FULL : FILL_DATA;
    }
    d->bulk = 0;
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0 && errno == ENOTSOCK && !d->src_file) {
      d->src_file = 1;
      set_nonblock(d->src);
      continue;
    }
    release_buf(d); /* nothing came: an idle stream holds no buffer */
    if (r == 0)
      return FILL_EOF;
    return errno == EAGAIN || errno == EWOULDBLOCK ? FILL_AGAIN : FILL_ERROR;
  }
}

/* The source said EOF and everything before it was written: half-close.
 * When the other way is finished too, the relay closes both ends right
 * away and a socket's close sends the FIN (its input is all read), so the
 * shutdown call is saved. */
static void finish_dir(rdir *d) {
  if (d->shut)
    return;
  d->shut = 1;
  if (!d->other->shut)
    shut_out(d);
}

/* A stream source: its bytes are written from the stream's buffer and
 * consumed as the destination takes them, for a bounded number of
 * rounds. Adds the bytes written to *n. */
static int pump_stream(rdir *d, size_t *n) {
  size_t start = *n;
  d->blocked = 0;
  if (d->len > 0) { /* pre bytes go first */
    if (flush(d, n) != STEP_OK)
      return STEP_ERROR; /* its side is noted */
    if (d->len > 0)
      return STEP_OK;
  }
  for (int rounds = 0; rounds < RELAY_ROUNDS && *n - start < RELAY_BUDGET;
       rounds++) {
    const void *p;
    ssize_t k = ph_stream_peek(d->in->st, &p);
    if (k == PH_EAGAIN)
      return STEP_OK;
    if (k == 0) {
      d->eof = 1;
      finish_dir(d);
      return STEP_OK;
    }
    if (k < 0)
      return fail_on(d->in); /* reset */
    ssize_t w = put_out(d, p, (size_t)k);
    if (w < 0)
      return fail_on(d->out);
    ph_stream_consume(d->in->st, (size_t)w);
    *n += (size_t)w;
    if (w < k) {
      d->blocked = 1; /* the rest waits in the stream for out */
      return STEP_OK;
    }
  }
  return STEP_OK; /* fairness: the source is still readable */
}

/* Moves what it can in one direction: flush, then read and flush again,
 * for a bounded number of reads. Adds the bytes written to *n. */
static int pump(rdir *d, size_t *n) {
  if (d->in->st)
    return pump_stream(d, n);
  size_t start = *n;
  for (int reads = 0;; reads++) {
    if (pending(d) > 0) {
      if (flush(d, n) != STEP_OK)
        return STEP_ERROR;
      if (pending(d) > 0)
        return STEP_OK; /* wait until the destination can take more */
    }
    if (d->eof) {
      finish_dir(d);
      return STEP_OK;
    }
    if (reads == RELAY_ROUNDS || *n - start >= RELAY_BUDGET)
      return STEP_OK; /* fairness: the source is still readable */
    switch (fill(d)) {
    case FILL_EOF:
      d->eof = 1;
      break;
    case FILL_AGAIN:
      return STEP_OK;
    case FILL_ERROR:
      return fail_on(d->in);
    case FILL_NOMEM:
      return STEP_ERROR; /* neither end's fault */
    case FILL_FULL:
      /* Bulk data between TCP sockets: splice from the next read on
       * (what this read brought is written from the buffer first). */
      if (d->may_splice && d->pipe_r < 0)
        make_pipe(d);
      break;
    default: /* a short read: the socket is drained, write and stop */
      return flush(d, n);
    }
  }
}

/* ---- lifecycle ---------------------------------------------------------- */

static void free_dir(rdir *d) {
  release_buf(d);
  give_pipe(d);
}

static void close_side(const ph_api *api, rside *e) {
  api->io_free(e->io);
  e->io = NULL;
  close_fd(&e->fd);
  if (e->st)
    ph_stream_close(e->st); /* no callback after this */
  e->st = NULL;
}

/* Ends the relay: closes and frees everything it holds, marks it dead,
 * and frees the struct now when no entry runs (else the outermost
 * leave() does). The byte counts stay readable until then. */
static void end_relay(ph_relay *r) {
  const ph_api *api = r->api;
  api->timer_free(r->idle);
  r->idle = NULL;
  free_dir(&r->up);
  free_dir(&r->down);
  close_side(api, &r->cs);
  close_side(api, &r->ts);
  if (--spare.relays == 0)
    spare_flush();
  if (guard_end(&r->g))
    free(r);
}

static void enter(ph_relay *r) { guard_enter(&r->g); }

static void leave(ph_relay *r) {
  if (guard_leave(&r->g))
    free(r);
}

/* An error on either side (a socket error, a stream reset) must not look
 * like the end of the data on the other: its socket is closed abortively
 * (RST), so a client reading a body without a length sees the failure
 * instead of a clean EOF and a truncated download. A stream end is reset
 * by its close already (stream.h). */
static void close_abortively(rside *e) {
  if (e->fd < 0)
    return;
  struct linger lg = {.l_onoff = 1, .l_linger = 0};
  (void)setsockopt(e->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
}

/* Ends the relay and tells the owner, last: done may free the owner's
 * object, so nothing of the owner is touched after it. */
static void finish(ph_relay *r, int end) {
  void (*done)(void *, const relay_stats *, int) = r->o.done;
  void *arg = r->o.arg;
  relay_stats st = {r->up.moved, r->down.moved,
                    end == RELAY_END_ERROR ? r->error_side : RELAY_SIDE_NONE};
  if (end == RELAY_END_ERROR) {
    close_abortively(&r->cs);
    close_abortively(&r->ts);
  }
  if (r->o.ending)
    r->o.ending(arg, end, st.error_side,
                end == RELAY_END_ERROR ? r->error_errno : 0);
  end_relay(r);
  if (done)
    done(arg, &st, end);
}

static void stream_cb(ph_stream *st, int revents, void *arg);

/* Asks an end for events: its watcher's, or the stream's. */
static void want(ph_relay *r, rside *e, int events) {
  if (e->st)
    ph_stream_watch(e->st, events, stream_cb, e);
  else
    r->api->io_set(e->io, events);
}

/* Watches for what each end needs now: a side is read while its
 * direction may read, and written while the other direction waits. */
static void update_interest(ph_relay *r) {
  want(r, &r->cs, (wants_in(&r->up) ? PH_READ : 0) |
                      (waits_out(&r->down) ? PH_WRITE : 0));
  want(r, &r->ts, (wants_in(&r->down) ? PH_READ : 0) |
                      (waits_out(&r->up) ? PH_WRITE : 0));
}

/* Ends the relay when a direction failed or both are finished, else
 * watches for what each side needs now. */
static void settle(ph_relay *r, int rc, size_t nu, size_t nd) {
  r->up.moved += nu;
  r->down.moved += nd;
  if (nu || nd)
    r->last_ms = r->api->now_ms(r->ctx);
  if (nd && !r->first_down_sent) {
    r->first_down_sent = 1;
    if (r->o.first_down)
      r->o.first_down(r->o.arg);
    if (guard_dead(&r->g))
      return; /* relay_abort inside first_down */
  }
  if (rc != STEP_OK) {
    finish(r, RELAY_END_ERROR);
    return;
  }
  if (r->up.shut && r->down.shut) {
    finish(r, RELAY_END_CLOSED);
    return;
  }
  update_interest(r);
}

/* A side is readable and/or writable: run only the directions that
 * event concerns (the other one would just meet EAGAIN). */
static void on_event(ph_relay *r, int client_side, int revents) {
  rdir *rd = client_side ? &r->up : &r->down; /* reads this side */
  rdir *wr = client_side ? &r->down : &r->up; /* writes this side */
  size_t n_rd = 0, n_wr = 0;
  int rc = STEP_OK;
  if (revents & PH_WRITE)
    rc = pump(wr, &n_wr);
  if (rc == STEP_OK && (revents & PH_READ))
    rc = pump(rd, &n_rd);
  if (client_side)
    settle(r, rc, n_rd, n_wr);
  else
    settle(r, rc, n_wr, n_rd);
}

static void side_event(rside *e, int revents) {
  ph_relay *r = e->r;
  enter(r);
  on_event(r, e->client, revents);
  leave(r);
}

static void io_cb(ph_io *io, int fd, int revents, void *arg) {
  (void)io;
  (void)fd;
  side_event(arg, revents);
}

static void stream_cb(ph_stream *st, int revents, void *arg) {
  (void)st;
  side_event(arg, revents);
}

void relay_client_io(ph_relay *r, int revents) {
  if (r)
    side_event(&r->cs, revents);
}

static void idle_cb(ph_timer *t, void *arg) {
  (void)t;
  ph_relay *r = arg;
  enter(r);
  int64_t quiet = r->api->now_ms(r->ctx) - r->last_ms;
  if (quiet >= r->idle_ms)
    finish(r, RELAY_END_IDLE);
  else
    r->api->timer_set(r->idle, (uint64_t)(r->idle_ms - quiet), 0);
  leave(r);
}

static void init_dir(rdir *d, rside *in, rside *out, size_t cap,
                     int splice_ok) {
  d->in = in;
  d->out = out;
  d->src = in->fd;
  d->dst = out->fd;
  d->cap = cap;
  d->pipe_r = d->pipe_w = -1;
  /* splice(2) needs two fds (make_pipe checks they are TCP sockets). */
  d->may_splice = (unsigned)(splice_ok && !in->st && !out->st);
}

static void init_side(rside *e, ph_relay *r, stream_end end, int client) {
  e->r = r;
  e->fd = end.stream ? -1 : end.fd;
  e->st = end.stream;
  e->client = client;
}

/* An end that could not be handed to a relay: closed. */
static void close_end(stream_end e) {
  if (e.stream)
    ph_stream_close(e.stream);
  else if (e.fd >= 0)
    close(e.fd);
}

static size_t clamp_buffer(size_t n) {
  if (n < RELAY_MIN_BUFFER)
    return RELAY_MIN_BUFFER;
  return n > RELAY_MAX_BUFFER ? RELAY_MAX_BUFFER : n;
}

ph_relay *relay_start(const ph_api *api, ph_ctx *ctx, stream_end client,
                      stream_end target, const void *pre, size_t pre_len,
                      const relay_opts *o) {
  ph_relay *r = calloc(1, sizeof(*r));
  if (!r)
    goto fail;
  init_side(&r->cs, r, client, 1);
  init_side(&r->ts, r, target, 0);
  /* Taken over first, so that end_relay frees it on every failure. */
  r->cs.io = o->client_io;
  spare.relays++;
  r->api = api;
  r->ctx = ctx;
  r->o = *o;
  r->idle_ms = o->idle_timeout_ms;
  r->last_ms = api->now_ms(ctx);
  size_t cap = clamp_buffer(o->buffer_size);
  int splice_ok = !!o->use_splice; /* if both are TCP: see make_pipe */
  init_dir(&r->up, &r->cs, &r->ts, cap, splice_ok);
  init_dir(&r->down, &r->ts, &r->cs, cap, splice_ok);
  r->up.other = &r->down;
  r->down.other = &r->up;
  if (pre_len > 0) {
    /* The pipelined bytes go first; the buffer grows to hold them. */
    r->up.buf_cap = pre_len > cap ? pre_len : cap;
    r->up.buf = r->up.buf_cap == cap ? buf_take(cap) : malloc(pre_len);
    if (!r->up.buf)
      goto fail_r;
    memcpy(r->up.buf, pre, pre_len);
    r->up.len = pre_len;
  }
  /* A handed-over watcher keeps libev's registration of the client's
   * fd: its new events cost at most an epoll_ctl(MOD), where a second
   * watcher would cost an ADD that fails with EEXIST. */
  if (!r->cs.st && !r->cs.io)
    r->cs.io = api->io_new(ctx, r->cs.fd, 0, io_cb, &r->cs);
  if (!r->ts.st)
    r->ts.io = api->io_new(ctx, r->ts.fd, 0, io_cb, &r->ts);
  r->idle = api->timer_new(ctx, idle_cb, r);
  if ((!r->cs.st && !r->cs.io) || (!r->ts.st && !r->ts.io) || !r->idle)
    goto fail_r;
  if (r->idle_ms > 0) /* else no idle deadline */
    api->timer_set(r->idle, (uint64_t)r->idle_ms, 0);
  update_interest(r);
  return r;

fail_r:
  end_relay(r); /* closes both ends; no entry runs: frees r */
  return NULL;
fail:
  api->io_free(o->client_io);
  close_end(client);
  close_end(target);
  return NULL;
}

/* From first_down (inside an entry): released now, freed when the entry
 * leaves; from outside (a stop): freed now. An ended relay (from inside
 * done) has nothing left to abort. */
void relay_abort(ph_relay *r) {
  if (r && !guard_dead(&r->g))
    end_relay(r);
}

int relay_take_open(const ph_open_result *res, stream_end *end) {
  stream_end none = {-1, NULL};
  *end = none;
  int has_stream = res->size >= offsetof(ph_open_result, stream) +
                                     sizeof(res->stream) &&
                   res->stream != NULL;
  stream_end got = {res->fd, has_stream ? res->stream : NULL};
  if (res->code != PH_OPEN_OK) {
    close_end(got);
    return res->code;
  }
  if (!has_stream && res->fd < 0)
    return PH_OPEN_INTERNAL_ERROR;
  if (has_stream && res->fd >= 0)
    close(res->fd); /* both: the stream answers (connector.h) */
  got.fd = has_stream ? -1 : res->fd;
  *end = got;
  return PH_OPEN_OK;
}

relay_stats relay_get_stats(const ph_relay *r) {
  relay_stats st = {0, 0, RELAY_SIDE_NONE};
  if (r) {
    st.up = r->up.moved;
    st.down = r->down.moved;
    st.error_side = r->error_side;
  }
  return st;
}

int relay_lease_end(int end, int error_side) {
  switch (end) {
  case RELAY_END_CLOSED:
    return PH_LEASE_END_CLOSED;
  case RELAY_END_IDLE:
    return PH_LEASE_END_TIMEOUT;
  case RELAY_END_ERROR:
    return error_side == RELAY_SIDE_TARGET ? PH_LEASE_END_TARGET_ERROR
                                           : PH_LEASE_END_CLIENT_ERROR;
  default: /* aborted by its owner, or unknown: nothing about the target */
    return PH_LEASE_END_CLIENT_ERROR;
  }
}

int relay_reset_code(int end, int err) {
  if (end == RELAY_END_IDLE)
    return PH_OPEN_TIMEOUT;
  if (end != RELAY_END_ERROR)
    return PH_OPEN_OK;
  switch (err) {
  case ECONNRESET:
  case EPIPE:
  case ECONNREFUSED:
    return PH_OPEN_CONNECTION_REFUSED;
  case ETIMEDOUT:
    return PH_OPEN_TIMEOUT;
  case EHOSTUNREACH:
  case EHOSTDOWN:
    return PH_OPEN_HOST_UNREACHABLE;
  case ENETUNREACH:
  case ENETDOWN:
    return PH_OPEN_NETWORK_UNREACHABLE;
  default:
    return PH_OPEN_INTERNAL_ERROR;
  }
}
