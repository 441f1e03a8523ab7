/* The byte relay (relay.h).
 *
 * Each direction (up: client -> target, down: target -> client) moves
 * bytes from its source fd to its destination fd through either a user
 * buffer (read/send) or, once it carries bulk data between two TCP
 * sockets, a pipe (splice in, splice out: the bytes never enter user
 * space). The rules, identical for both ways of moving bytes:
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
 * fds or buffers at all. Starting a relay costs no system call beyond
 * the two watchers: sockets are read and written with MSG_DONTWAIT (no
 * fcntl to be sure they are non-blocking), and whether both ends are TCP
 * is asked only when bulk data shows up.
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

#include "guard.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
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

typedef struct rdir {
  struct rdir *other; /* the opposite direction */
  int src, dst;
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
} rdir;

struct ph_relay {
  const ph_api *api;
  ph_ctx *ctx;
  int cfd, tfd;
  ph_io *cio, *tio;
  ph_timer *idle;
  rdir up, down;
  int64_t last_ms; /* last time bytes moved */
  int64_t idle_ms;
  relay_opts o;
  guard g;
  unsigned first_down_sent : 1;
};

enum { STEP_OK = 0, STEP_ERROR = -1 };

/* Copy buffers are taken when bytes arrive and given back when they are
 * written (unless bulk data keeps flowing), so an idle stream holds none.
 * A few spare ones of the usual size are kept while any relay lives, so
 * a busy proxy does not go back to malloc for every message; the last
 * relay to end frees them. Loop thread only, like the relays. */
static struct {
  char *b[RELAY_SPARE_BUFFERS];
  size_t size;
  int n;
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
}

static void release_buf(rdir *d) {
  if (d->buf_cap == d->cap)
    buf_give(d->buf, d->buf_cap);
  else
    free(d->buf); /* an oversized one that held pre bytes */
  d->buf = NULL;
  d->buf_cap = 0;
}

static size_t pending(const rdir *d) { return d->len + d->in_pipe; }

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

static void close_fd(int *fd) {
  if (*fd >= 0) {
    close(*fd);
    *fd = -1;
  }
}

/* ---- moving bytes ------------------------------------------------------ */

/* Creates the direction's pipe; on failure, or when the ends are not
 * both TCP sockets, the direction stays in copy mode for good. Checked
 * here, when bulk data first shows up, so short streams pay nothing. */
static void make_pipe(rdir *d) {
  int p[2];
  d->may_splice = 0;
  if (!is_tcp(d->src) || !is_tcp(d->dst))
    return;
  /* splice(2) honours the socket's own blocking mode. */
  set_nonblock(d->src);
  set_nonblock(d->dst);
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

/* Writes what the direction holds. STEP_OK (maybe with bytes left: the
 * destination is full) or STEP_ERROR. Adds what it wrote to *n. */
static int flush(rdir *d, size_t *n) {
  while (d->len > 0) {
    ssize_t w = d->dst_file ? write(d->dst, d->buf + d->off, d->len)
                            : send(d->dst, d->buf + d->off, d->len,
                                   MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      if (errno == ENOTSOCK && !d->dst_file) {
        d->dst_file = 1; /* a pipe or a file: write(2) from now on */
        set_nonblock(d->dst);
        continue;
      }
      return errno == EAGAIN || errno == EWOULDBLOCK ? STEP_OK : STEP_ERROR;
    }
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
      return errno == EAGAIN ? STEP_OK : STEP_ERROR;
    }
    if (w == 0)
      return STEP_ERROR; /* cannot happen with bytes in the pipe */
    d->in_pipe -= (size_t)w;
    *n += (size_t)w;
  }
  return STEP_OK;
}

enum { FILL_DATA, FILL_FULL, FILL_AGAIN, FILL_EOF, FILL_ERROR };

/* Reads once from the source into the empty direction. FILL_FULL: the
 * read filled the whole space (more is probably waiting). */
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
      return FILL_ERROR;
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

/* Moves what it can in one direction: flush, then read and flush again,
 * for a bounded number of reads. Adds the bytes written to *n. */
static int pump(rdir *d, size_t *n) {
  size_t start = *n;
  for (int reads = 0;; reads++) {
    if (pending(d) > 0) {
      if (flush(d, n) != STEP_OK)
        return STEP_ERROR;
      if (pending(d) > 0)
        return STEP_OK; /* wait until the destination can take more */
    }
    if (d->eof) {
      if (!d->shut) {
        d->shut = 1;
        /* Half-close. When the other way is finished too, the relay
         * closes both sockets right away and close sends the FIN (their
         * input is all read), so the shutdown call is saved. ENOTCONN:
         * the peer is gone already; the other direction will see it. */
        if (!d->other->shut)
          shutdown(d->dst, SHUT_WR);
      }
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
      return STEP_ERROR;
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
  close_fd(&d->pipe_r);
  close_fd(&d->pipe_w);
}

/* Ends the relay: closes and frees everything it holds, marks it dead,
 * and frees the struct now when no entry runs (else the outermost
 * leave() does). The byte counts stay readable until then. */
static void end_relay(ph_relay *r) {
  const ph_api *api = r->api;
  api->io_free(r->cio);
  api->io_free(r->tio);
  api->timer_free(r->idle);
  r->cio = r->tio = NULL;
  r->idle = NULL;
  free_dir(&r->up);
  free_dir(&r->down);
  close_fd(&r->cfd);
  close_fd(&r->tfd);
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

/* Ends the relay and tells the owner, last: done may free the owner's
 * object, so nothing of the owner is touched after it. */
static void finish(ph_relay *r, int end) {
  void (*done)(void *, const relay_stats *, int) = r->o.done;
  void *arg = r->o.arg;
  relay_stats st = {r->up.moved, r->down.moved};
  end_relay(r);
  if (done)
    done(arg, &st, end);
}

/* Watches for what each side needs now. */
static void update_interest(ph_relay *r) {
  int c = 0, t = 0;
  if (!r->up.eof && pending(&r->up) == 0)
    c |= PH_READ;
  if (pending(&r->down) > 0)
    c |= PH_WRITE;
  if (!r->down.eof && pending(&r->down) == 0)
    t |= PH_READ;
  if (pending(&r->up) > 0)
    t |= PH_WRITE;
  r->api->io_set(r->cio, c);
  r->api->io_set(r->tio, t);
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

static void io_cb(ph_io *io, int fd, int revents, void *arg) {
  (void)fd;
  ph_relay *r = arg;
  enter(r);
  on_event(r, io == r->cio, revents);
  leave(r);
}

void relay_client_io(ph_relay *r, int revents) {
  if (!r)
    return;
  enter(r);
  on_event(r, 1, revents);
  leave(r);
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

static void init_dir(rdir *d, int src, int dst, size_t cap, int splice_ok) {
  d->src = src;
  d->dst = dst;
  d->cap = cap;
  d->pipe_r = d->pipe_w = -1;
  d->may_splice = (unsigned)splice_ok;
}

static size_t clamp_buffer(size_t n) {
  if (n < RELAY_MIN_BUFFER)
    return RELAY_MIN_BUFFER;
  return n > RELAY_MAX_BUFFER ? RELAY_MAX_BUFFER : n;
}

ph_relay *relay_start(const ph_api *api, ph_ctx *ctx, int client_fd,
                      int target_fd, const void *pre, size_t pre_len,
                      const relay_opts *o) {
  ph_relay *r = calloc(1, sizeof(*r));
  if (!r)
    goto fail;
  /* Taken over first, so that end_relay frees it on every failure. */
  r->cio = o->client_io;
  spare.relays++;
  r->api = api;
  r->ctx = ctx;
  r->cfd = client_fd;
  r->tfd = target_fd;
  r->o = *o;
  r->idle_ms = o->idle_timeout_ms;
  r->last_ms = api->now_ms(ctx);
  size_t cap = clamp_buffer(o->buffer_size);
  int splice_ok = !!o->use_splice; /* if both are TCP: see make_pipe */
  init_dir(&r->up, client_fd, target_fd, cap, splice_ok);
  init_dir(&r->down, target_fd, client_fd, cap, splice_ok);
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
  /* A handed-over watcher keeps libev's registration of client_fd: its
   * new events cost at most an epoll_ctl(MOD), where a second watcher
   * would cost an ADD that fails with EEXIST. */
  if (!r->cio)
    r->cio = api->io_new(ctx, client_fd, 0, io_cb, r);
  r->tio = api->io_new(ctx, target_fd, 0, io_cb, r);
  r->idle = api->timer_new(ctx, idle_cb, r);
  if (!r->cio || !r->tio || !r->idle)
    goto fail_r;
  if (r->idle_ms > 0) /* else no idle deadline */
    api->timer_set(r->idle, (uint64_t)r->idle_ms, 0);
  update_interest(r);
  return r;

fail_r:
  end_relay(r); /* closes both fds; no entry runs: frees r */
  return NULL;
fail:
  api->io_free(o->client_io);
  close(client_fd);
  close(target_fd);
  return NULL;
}

/* From first_down (inside an entry): released now, freed when the entry
 * leaves; from outside (a stop): freed now. An ended relay (from inside
 * done) has nothing left to abort. */
void relay_abort(ph_relay *r) {
  if (r && !guard_dead(&r->g))
    end_relay(r);
}

relay_stats relay_get_stats(const ph_relay *r) {
  relay_stats st = {0, 0};
  if (r) {
    st.up = r->up.moved;
    st.down = r->down.moved;
  }
  return st;
}
