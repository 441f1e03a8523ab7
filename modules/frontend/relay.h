/* SPDX-License-Identifier: BSD-2-Clause */
/* The byte relay between a client end and a target end, each a socket or
 * a stream (<proxyhost/stream.h>): full duplex,
 * backpressure (a side is read only while the other can take the bytes),
 * half-close (EOF on one side becomes shutdown(SHUT_WR) on the other),
 * idle timeout, and splice(2) through a pipe per direction when both ends
 * are plain TCP sockets (zero copy), with a buffered copy between sockets
 * otherwise; a stream's bytes are written from the stream's own buffer
 * and consumed as the other end takes them.
 *
 * Loop thread only. A relay owns both ends from relay_start on and closes
 * them (close(2), ph_stream_close), with every pipe, buffer, watcher and
 * timer, before calling done.
 *
 * Ending follows the rule of guard.h: every entry into a relay (its own
 * watchers and timer, relay_client_io) runs between guard_enter and
 * guard_leave; ending it releases everything at once and marks it dead,
 * and its memory is freed when the outermost entry returns (at once when
 * none runs). So inside first_down or done the owner may call relay_abort
 * and free its own object: the relay touches neither afterwards.
 */
#ifndef PH_RELAY_H
#define PH_RELAY_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/connector.h>
#include <proxyhost/host.h>
#include <proxyhost/stream.h>

typedef struct ph_relay ph_relay;

enum relay_end {
  RELAY_END_CLOSED = 0,  /* both directions finished (EOF both ways) */
  RELAY_END_IDLE,        /* idle timeout */
  RELAY_END_ERROR,       /* a read/write/splice error on either side:
                            relay_stats.error_side says which */
  RELAY_END_ABORTED      /* relay_abort */
};

/* Which end failed when a relay ends with RELAY_END_ERROR. */
enum relay_side {
  RELAY_SIDE_NONE = 0, /* no error; or one of the relay's own (no memory
                          for a buffer): neither end is to blame */
  RELAY_SIDE_CLIENT,   /* reading or writing the client's end failed (a
                          reset, a client gone) */
  RELAY_SIDE_TARGET    /* reading or writing the target's end failed (a
                          reset socket, a reset stream) */
};

typedef struct relay_stats {
  uint64_t up;    /* bytes client -> target */
  uint64_t down;  /* bytes target -> client */
  int error_side; /* enum relay_side: the first end that failed, with
                     RELAY_END_ERROR; RELAY_SIDE_NONE otherwise */
} relay_stats;

/* first_down: optional, called once when the first target byte reaches
 * the client (for TTFB); it may call relay_abort, and then free arg.
 * done: called exactly once, after everything was closed and released,
 * as the relay's last use of arg (done may free it); not called when
 * relay_abort ended the relay. The ph_relay pointer is dead from done on:
 * the owner drops it there (relay_abort on it inside done does nothing). */
typedef struct relay_opts {
  int64_t idle_timeout_ms; /* no bytes either way for this long: end */
  size_t buffer_size;      /* per direction, copy mode; also the splice
                              chunk; 4 KiB .. 1 MiB */
  int use_splice;          /* 1: splice when both fds are TCP sockets */
  void (*first_down)(void *arg);
  void (*done)(void *arg, const relay_stats *st, int end);
  /* Optional: called once when the relay ended by itself (not by
   * relay_abort), just before it closes its ends: how it ended (enum
   * relay_end), the side that failed (enum relay_side, with
   * RELAY_END_ERROR) and, when that side is a socket, the errno of its
   * failed call (else 0). The owner may set what closing a stream end
   * sends (the reset code, see relay_reset_code); it must not call the
   * relay or free arg there. */
  void (*ending)(void *arg, int end, int error_side, int err);
  void *arg;
  /* Optional (NULL: the relay makes its own watcher): the caller's
   * watcher on the client's socket. The relay takes it over from relay_start on,
   * even when that fails: it sets its events and frees it. The caller's
   * callback must then pass each of its events to relay_client_io and
   * touch nothing after that. Handing the watcher over saves the
   * epoll_ctl that a new watcher on an already watched fd costs. */
  ph_io *client_io;
} relay_opts;

/* One end of a byte stream: a socket (fd >= 0, stream NULL) or a stream
 * (stream set; fd is then ignored). The relay joins two; a frontend
 * reads and writes one. */
typedef struct stream_end {
  int fd;
  ph_stream *stream;
} stream_end;

static inline stream_end end_fd(int fd) {
  stream_end e = {fd, NULL};
  return e;
}

/* Takes what an open result hands over. A success gives its socket or
 * its stream in *end and returns PH_OPEN_OK, or PH_OPEN_INTERNAL_ERROR
 * when it carries neither (a connector's bug: nothing is taken). A
 * failure returns its code and closes whatever it carries (nothing
 * should be there). */
int relay_take_open(const ph_open_result *res, stream_end *end);

/* Starts relaying. `pre` holds bytes the client already sent past the
 * protocol head (pipelined); they go to the target first. Returns NULL
 * (and closes both ends) when resources run out. The relay watches a
 * stream end with ph_stream_watch, setting its callback. */
ph_relay *relay_start(const ph_api *api, ph_ctx *ctx, stream_end client,
                      stream_end target, const void *pre, size_t pre_len,
                      const relay_opts *o);
/* An event of the watcher handed over in relay_opts.client_io: an entry
 * into the relay. It may end (and call done) inside; the relay's memory is
 * freed on the way out, the caller's object only if done freed it. */
void relay_client_io(ph_relay *r, int revents);
/* Ends a relay now (shutdown/drain, or from first_down): closes and
 * releases everything at once; done is not called. Outside any entry the
 * relay is freed at once; inside one (from first_down) when it returns. */
void relay_abort(ph_relay *r);
/* Bytes so far (and the failed side, once one failed). */
relay_stats relay_get_stats(const ph_relay *r);

/* How a lease of the target's end (connector.h, enum ph_lease_end) ends
 * when its relay ended with end (enum relay_end) and error_side
 * (relay_stats): RELAY_END_CLOSED is CLOSED, RELAY_END_IDLE is TIMEOUT,
 * an error of the target's end TARGET_ERROR, and everything that says
 * nothing about the target (an error of the client's end or of the
 * relay itself, relay_abort: the owner cut it) CLIENT_ERROR. Pure. */
int relay_lease_end(int end, int error_side);

/* The reset code (ph_open_code) that tells the peer of a stream end why
 * the relay ended (issue 22 item 8): RELAY_END_IDLE is timeout; an error
 * by the errno of the socket that failed (err, as given to ending):
 * ECONNRESET, EPIPE and ECONNREFUSED (the target's TCP reset)
 * connection_refused, ETIMEDOUT timeout, EHOSTUNREACH/EHOSTDOWN
 * host_unreachable, ENETUNREACH/ENETDOWN network_unreachable, anything
 * else (a stream's own reset, no memory) internal_error;
 * RELAY_END_CLOSED and RELAY_END_ABORTED are PH_OPEN_OK (code 0: nothing
 * failed). Pure. */
int relay_reset_code(int end, int err);

/* Empty splice pipes kept for reuse while any relay lives, 2 fds each
 * (their size counts against the user's pipe-user-pages limits); the
 * last relay to end closes them. */
#define RELAY_SPARE_PIPES 8
/* How many are kept now (loop thread; for tests and metrics). */
int relay_spare_pipes(void);

#endif
