/* SPDX-License-Identifier: BSD-2-Clause */
/* The session layer's insides, shared by tm_session.c (lifecycle, the
 * reader, errors, heartbeats, GOAWAY), tm_stream.c (the ph_stream, the
 * queues, open/accept/reject) and tm_writer.c (the control queue and the
 * one writer). Not for the roles: they use tm_session.h.
 *
 * Lifetime rule (modules/lib/guard.h's, per session): every entry
 * from outside (a transport event, a timer, the kick that delivers stream
 * events) runs between sess_enter and sess_leave; an object ended inside
 * is released at once and marked dead, and its memory is freed where the
 * outermost entry leaves. A closed session stays as a husk (no transport,
 * no timers but the kick) while its users still hold streams, so those
 * read PH_ERESET and close them; it is freed with the last one. */
#ifndef TM_SESSION_INT_H
#define TM_SESSION_INT_H

#include <ev.h>

#include <proxyhost/connector.h>

#include "lib/clocks.h"
#include "lib/guard.h"
#include "lib/idtab.h"
#include "lib/ilist.h"
#include "lib/lat_window.h"
#include "tm_metrics.h"
#include "tm_session.h"
#include "tunnel_common/proto/tm_drr.h"
#include "tunnel_common/proto/tm_open.h"
#include "tunnel_common/proto/tm_window.h"

/* A queued control frame: headroom, then the 10-byte header and payload. */
typedef struct tm_fbuf {
  ilist_node link; /* in the session's cq */
  size_t len;   /* header + payload */
  int64_t t_us; /* when queued: the writer's queue wait */
  uint8_t data[];
} tm_fbuf;

/* Inbound DATA, copied once on arrival: small payloads share the tail
 * chunk (TM-P2-7: no regrowth, no second copy). */
typedef struct tm_chunk {
  ilist_node link;        /* in the stream's in */
  uint32_t off, len, cap; /* unread bytes are data[off .. off+len) */
  uint8_t data[];
} tm_chunk;
#define TM_CHUNK_MIN 4096u

struct tm_stream {
  ph_stream base; /* first: ph_stream * casts to tm_stream * */
  tm_session *s;
  idtab_node hn;          /* in the session's id map */
  ilist_node slink;       /* on s->streams */
  ilist_node klink;       /* on the kick list while kicked */
  tm_drr_node drr;        /* the writer's ring (outbound bytes or a FIN) */
  uint32_t id;
  int state; /* tm_state */
  unsigned strict : 1, fc : 1;
  unsigned local : 1;        /* we opened it */
  unsigned owes : 1;         /* the peer's open, counted in s->owed */
  unsigned answered : 1;     /* the open was decided (cb ran / accepted) */
  unsigned owned : 1;        /* a user holds the ph_stream */
  unsigned user_closed : 1;  /* ph_stream_close was called */
  unsigned shut : 1;         /* ph_stream_shutdown was called */
  unsigned fin_sent : 1, fin_rcvd : 1;
  unsigned reset : 1;        /* the user reads PH_ERESET */
  unsigned kicked : 1, dead : 1;
  unsigned legacy_cb : 1;    /* the legacy open's cb is still to run */
  unsigned stalled : 1;      /* a write found no send window */
  uint32_t peer_window;      /* acceptor: the opener's window, until accept */
  tm_window win;
  ilist in; /* tm_chunk, oldest first (its length: the entries) */
  uint32_t in_bytes;
  uint8_t *out; /* ring of out_cap bytes, allocated at the first write */
  uint32_t out_off, out_len;
  int64_t out_since_us, stall_since_us;
  int want;
  ph_stream_fn fn;
  void *fn_arg;
  tm_open_cb cb;
  void *cb_arg;
  ph_timer *open_timer;
  void *user;
  /* Reset codes (issue 22 item 8): the one this stream was reset with
   * (sent or received; -1 while it was not), and the one the owner's
   * close sends when that close resets it (TM_RESET_CANCEL unless the
   * owner or a linked stream said otherwise). */
  int reset_code, close_code;
  tm_stream *link; /* tm_stream_link: its reset code becomes our close's */
};

struct tm_session {
  const ph_api *api;
  ph_ctx *ctx;
  struct ev_loop *loop;
  tm_session_cfg cfg;
  tm_transport t;
  void *targ;
  tm_session_ops ops;
  void *arg;
  tm_metrics *m;
  /* streams */
  idtab ids;    /* the streams by id (not finished) */
  uint32_t live; /* in the map */
  ilist streams; /* every stream object, dead ones included */
  uint32_t next_id, peer_max_id;
  uint32_t in_entries_max;
  /* the writer */
  ilist cq; /* tm_fbuf, oldest first (its length: the frames) */
  size_t cq_bytes;
  /* Answers owed: the peer's opens not answered yet, each of which will
   * put one frame (OPEN_RESULT or RESET) of at most owed_frame_bytes in
   * the control queue; the reader pauses while the queue could not take
   * them all and a margin (issue 22 item 7). */
  uint32_t owed;
  uint32_t owed_frame_bytes;
  tm_drr drr;
  uint8_t *scratch; /* headroom + header + max_frame_payload */
  lat_window wwait; /* writer queue waits since the last take */
  /* event delivery from the loop */
  ev_timer kick;
  ilist kicks;
  /* heartbeat */
  ph_timer *ping_timer, *pong_timer;
  uint64_t ping_seq, rtt_us;
  int64_t ping_sent_us;
  int ping_out;
  /* violations (TM-FAIL-7) */
  uint32_t viol_count;
  int64_t viol_start_ms;
  guard entries;     /* lib/guard.h: the depth only (closed is not dead) */
  int close_reason;  /* a close is pending (or done) for this reason */
  unsigned closed : 1;         /* torn down: a husk for orphan streams */
  unsigned transport_gone : 1; /* never call t again */
  unsigned write_wanted : 1;
  unsigned read_paused : 1; /* pause_read(1) is in force */
  unsigned goaway_sent : 1, goaway_rcvd : 1;
  unsigned kick_armed : 1;
  unsigned dead_streams : 1; /* some stream waits for the outer leave */
};

/* tm_session.c */
void sess_enter(tm_session *s);
void sess_leave(tm_session *s); /* may free s */
void sess_maybe_free(tm_session *s); /* a husk with no stream left */
void sess_fail(tm_session *s, int reason);   /* session error: close soon */
void sess_violation(tm_session *s);          /* one stream violation */
void sess_kick(tm_session *s, tm_stream *st); /* deliver st's events soon */
void sess_drain_check(tm_session *s);        /* GOAWAY: close when idle */
tm_stream *sess_lookup(tm_session *s, uint32_t id);
void sess_map_add(tm_session *s, tm_stream *st);
void sess_map_del(tm_session *s, tm_stream *st);

/* tm_stream.c */
tm_stream *st_new(tm_session *s, uint32_t id, int local);
/* Ends the stream's use by the session (reset: code sent when send). */
void st_reset(tm_stream *st, int code, int send, int bp_reason);
/* The peer's frames for st. */
void st_on_data(tm_stream *st, const tm_frame *f);
void st_on_window_update(tm_stream *st, const tm_frame *f);
void st_on_reset(tm_stream *st, int code);
void st_on_result(tm_stream *st, const tm_frame *f);
/* Runs st's pending events (from the kick). */
void st_deliver(tm_stream *st);
/* The writer sent everything up to the FIN. */
void st_fin_sent(tm_stream *st);
/* Frees st now, or marks it for the outer leave. */
void st_release(tm_stream *st);
void st_free_mem(tm_stream *st);
/* The session ends: st's cb / on_abandon / PH_ERESET. */
void st_session_closed(tm_stream *st);
/* Whether a stream's user could write now. */
int st_writable(const tm_stream *st);

/* tm_writer.c */
/* Queues a control frame; -1 when the queue is full (the caller decides:
 * a session error for what the peer made us send, PH_EFULL for the
 * role's own frames). */
int cq_push(tm_session *s, uint8_t type, uint32_t id, const uint8_t *p,
            size_t len);
int cq_room(const tm_session *s, size_t len);
void cq_free_all(tm_session *s);
/* A control frame the peer's behaviour requires (RESET, PONG,
 * WINDOW_UPDATE, OPEN_RESULT): overflow is TM_CLOSE_CONTROL_FULL. */
void cq_must(tm_session *s, uint8_t type, uint32_t id, const uint8_t *p,
             size_t len);
void wr_need(tm_session *s); /* asks the transport for on_writable */
/* Pauses or resumes reading by what the control queue can still take
 * (the frames queued, the answers owed, a margin): after a message is
 * handled, a control frame sent or an answer settled. */
void cq_pressure(tm_session *s);
/* tm_stream.c: st's answer is queued (or no longer owed). */
void st_settle(tm_stream *st);
void wr_one(tm_session *s);  /* one frame */

#endif
