/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proxyhost SDK: streams without a socket (ABI 1.2).
 *
 * A connector answers an open with a connected socket or with a stream:
 * a full-duplex byte stream that lives in the connector, such as one of
 * many streams multiplexed over a WebSocket with a flow-control window
 * each. The frontend, or the relay it hands the stream to, uses it the
 * way it uses a non-blocking socket with a watcher, through the functions
 * below; no socketpair, no extra copy.
 *
 * Reading is peek and consume: ph_stream_peek shows the bytes the stream
 * holds, in place, and ph_stream_consume says how many of them were
 * delivered (written to the socket or stream they are for). A provider
 * with a receive window reopens it by what was consumed, so the window
 * reopens only when the bytes reached their destination, never when they
 * were merely copied into a buffer on the way.
 *
 * Writing takes what the stream can hold now (its send window or queue,
 * bounded) and says how much; the rest waits for PH_WRITE.
 *
 * Events work like a ph_io watcher: the user says which events it wants
 * (PH_READ, PH_WRITE, both, or 0 to pause) and the stream calls its
 * callback on the loop thread, from the loop (never from inside a call
 * the user made), when it is readable (bytes, EOF, or a reset to read)
 * or writable. Level-triggered: the callback is called again while the
 * condition holds and the event is wanted. A provider may report a reset
 * even while nothing is wanted (as PH_READ), as poll(2) reports an error
 * on any descriptor: an owner that paused reading, because the other
 * side of its relay cannot take bytes, still learns at once that the
 * stream is gone.
 *
 * Ownership: whoever got the stream (from a ph_open_result) owns it and
 * closes it exactly once with ph_stream_close, also after EOF, a reset or
 * a failed call; no callback runs after that. A close before both
 * directions finished resets the stream towards the peer.
 *
 * Threads: loop thread only, for every function and the callback.
 *
 * Providers: embed a ph_stream as the first member of the provider's own
 * stream object, point its ops at a static ph_stream_ops, and cast back
 * in the functions. The inline wrappers below are the only way users call
 * them.
 */
#ifndef PROXYHOST_STREAM_H
#define PROXYHOST_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <proxyhost/abi.h>

typedef struct ph_stream ph_stream;

/* revents: PH_READ and/or PH_WRITE (enum ph_io_events in host.h). The
 * callback may call any function of the stream, ph_stream_close
 * included. */
typedef void (*ph_stream_fn)(ph_stream *s, int revents, void *arg);

typedef struct ph_stream_ops {
  uint32_t size; /* sizeof(ph_stream_ops) of the provider */
  void (*watch)(ph_stream *s, int events, ph_stream_fn fn, void *arg);
  ssize_t (*peek)(ph_stream *s, const void **data);
  void (*consume)(ph_stream *s, size_t n);
  ssize_t (*write)(ph_stream *s, const void *data, size_t len);
  int (*shutdown)(ph_stream *s);
  void (*close)(ph_stream *s);
  void *reserved[8]; /* zero */
} ph_stream_ops;

struct ph_stream {
  const ph_stream_ops *ops;
};

/* Sets the callback and the events wanted; events 0 pauses it (nothing
 * is delivered, and a provider with a window stops reopening it, so the
 * peer stops sending). May be called any number of times; the last call
 * wins. */
static inline void ph_stream_watch(ph_stream *s, int events, ph_stream_fn fn,
                                   void *arg) {
  s->ops->watch(s, events, fn, arg);
}

/* The bytes that can be read now: *data points at n > 0 contiguous bytes,
 * valid until the next call on the stream or the return to the loop
 * (there may be more after them: consume, then peek again). 0: the peer
 * finished sending (EOF; every byte before it was consumed). PH_EAGAIN:
 * nothing now, PH_READ will tell. PH_ERESET: the stream was reset (the
 * peer aborted it, or its transport was lost); nothing more will come. */
static inline ssize_t ph_stream_peek(ph_stream *s, const void **data) {
  return s->ops->peek(s, data);
}

/* n of the bytes the last peek showed (n at most that many) were
 * delivered: the stream drops them (and may reopen its window by n). */
static inline void ph_stream_consume(ph_stream *s, size_t n) {
  s->ops->consume(s, n);
}

/* Writes up to len bytes; returns how many the stream took (the stream
 * copies them): len, fewer (it is full: PH_WRITE tells when there is
 * room), or PH_EAGAIN when it takes nothing now. PH_ERESET: the stream was
 * reset, PH_ESTATE: written after ph_stream_shutdown. Never blocks. */
static inline ssize_t ph_stream_write(ph_stream *s, const void *data,
                                      size_t len) {
  return s->ops->write(s, data, len);
}

/* No more writes: the peer reads EOF after every byte written before.
 * Reading goes on (half-close). PH_OK, or PH_ERESET. */
static inline int ph_stream_shutdown(ph_stream *s) {
  return s->ops->shutdown(s);
}

/* Ends the owner's use of the stream and frees it; exactly once. No
 * callback runs afterwards, also when called from inside the callback. */
static inline void ph_stream_close(ph_stream *s) { s->ops->close(s); }

#endif
