/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The gateway's session supervisor (CP-2-3, CP-3-12, CP-3-13, CP-3-14,
 * CP-3-18, CP-1-15, CP-1-27, CP-1-28, CP-5-17, CP-7-5): the order of the
 * control-plane calls and what each result leads to, as a pure state
 * machine. No I/O, no clock, no allocation: the driver (controlplane_client)
 * feeds it events with the time and performs the one action each event
 * returns.
 *
 *   BACKOFF --timer or channel ready--> REGISTERING --ok--> WATCHING --valid snapshot-->
 *   (driver builds the view off the loop and swaps it) --swapped-->
 *   ACKING --ok--> RUNNING (runtime heartbeats every interval; later
 *   snapshots on the same stream go through swap + ACK again)
 *
 * An ACK or a report refused only because the ownership epoch moved on
 * (CP_SUP_STALE_EPOCH, CP-2-6) is not a failure: the session waits in
 * WATCHING, without reports, for the snapshot the controller sends on
 * every epoch change, and ACKs it (issue 23 item 2).
 *
 * Any recoverable failure, and the end of the stream, cancel the
 * session's calls and go to BACKOFF (jittered, bounded exponential, reset
 * after a session that reached RUNNING). Argument, authentication,
 * permission and protocol-version errors go to FATAL: the driver logs the
 * message and stops retrying (the process keeps running, not ready).
 *
 * The view the driver swapped in stays in use through every failure
 * until its own valid_until or the max-stale deadline (CP-3-14, CP-3-18):
 * cp_sup_ready() says whether the gateway may take traffic.
 */
#ifndef PH_CP_SUPERVISOR_H
#define PH_CP_SUPERVISOR_H

#include <stdint.h>

#include "contracts/cp_status.h"

/* Which call a status came from: the same code means different things. */
typedef enum cp_call {
  CP_CALL_REGISTER = 1,
  CP_CALL_WATCH,
  CP_CALL_ACK,
  CP_CALL_RUNTIME,
  CP_CALL_OUTCOMES
} cp_call;

/* Not a gRPC code: a FAILED_PRECONDITION from AcknowledgeSnapshot or
 * ReportRuntime whose message says only that the ownership epoch moved on
 * (cp_status_stale_epoch, CP-2-6). The driver passes it to cp_sup_acked
 * and cp_sup_runtime_done in place of the status (issue 23 item 2). */
#define CP_SUP_STALE_EPOCH 100

/* What a status means for the session. */
typedef enum cp_status_class {
  CP_ST_OK = 0,
  CP_ST_RETRY,     /* transient: back off, then a new session */
  CP_ST_FATAL      /* argument, authentication, permission or protocol
                      version: not retried (CP-3-13) */
} cp_status_class;

/* Pure classification. FAILED_PRECONDITION from RegisterWorker is the
 * protocol-version refusal (fatal, CP-7-4); from any later call it is a
 * replaced or expired session (retry: a new session). UNIMPLEMENTED is a
 * controller that does not speak this API: fatal. */
cp_status_class cp_status_classify(cp_call call, int code);

typedef enum cp_sup_state {
  CP_SUP_IDLE = 0,    /* before cp_sup_start */
  CP_SUP_BACKOFF,     /* waiting for the timer */
  CP_SUP_REGISTERING, /* RegisterWorker in flight */
  CP_SUP_WATCHING,    /* WatchSnapshots open, no snapshot applied on it yet */
  CP_SUP_SWAPPING,    /* a valid snapshot is being built into a view */
  CP_SUP_ACKING,      /* AcknowledgeSnapshot(ACCEPTED) in flight */
  CP_SUP_NACKING,     /* AcknowledgeSnapshot(REJECTED) in flight */
  CP_SUP_RUNNING,     /* ACKed; heartbeats; the stream stays open */
  CP_SUP_FATAL        /* stopped; see cp_sup.fatal_call/fatal_code */
} cp_sup_state;

/* The one thing the driver does after an event. */
typedef enum cp_sup_action {
  CP_ACT_NONE = 0,
  CP_ACT_REGISTER,   /* call RegisterWorker */
  CP_ACT_WATCH,      /* open WatchSnapshots with the session */
  CP_ACT_BUILD,      /* build the view of the snapshot just validated, then
                        swap it and call cp_sup_swapped */
  CP_ACT_ACK,        /* AcknowledgeSnapshot(ACCEPTED) of cp_sup.ack_* */
  CP_ACT_NACK,       /* AcknowledgeSnapshot(REJECTED, reason) of the
                        rejected snapshot; the old view stays */
  CP_ACT_RUNTIME,    /* ReportRuntime with cp_sup.report_sequence; when
                        cp_sup.resend is set, the same content as the last
                        one (an idempotent replay, CP-2-10) */
  CP_ACT_BACKOFF,    /* cancel every call of the session, arm the timer for
                        cp_sup.wait_ms, then call cp_sup_timer */
  CP_ACT_FATAL       /* cancel everything, log cp_sup.fatal_*, stop */
} cp_sup_action;

/* A random source for the backoff's jitter: a uniform 32-bit value. */
typedef uint32_t (*cp_sup_rand_fn)(void *arg);

typedef struct cp_sup_limits {
  uint32_t backoff_min_ms, backoff_max_ms; /* 1 <= min <= max */
  uint32_t runtime_min_ms, runtime_max_ms; /* bounds on the controller's
                                              runtime_interval */
  uint32_t max_stale_max_ms;               /* bound on its max_stale_age */
  cp_sup_rand_fn rnd;                      /* NULL: no jitter (the top) */
  void *rnd_arg;
} cp_sup_limits;

typedef struct cp_sup {
  cp_sup_limits lim;
  cp_sup_state state;
  uint32_t attempt;       /* failures since the last RUNNING */
  uint32_t wait_ms;       /* CP_ACT_BACKOFF: how long */
  int64_t backoff_until_ms;
  /* The session (from RegisterWorker). */
  uint64_t epoch;
  uint32_t runtime_interval_ms; /* clipped to lim */
  uint32_t max_stale_ms;        /* clipped to lim */
  /* The snapshot being built and acknowledged (CP_ACT_ACK/NACK send it). */
  uint64_t ack_version, ack_epoch;
  uint8_t ack_checksum[32];
  /* The ACK baseline the controller accepted: every runtime report
   * carries it (CP-2-13). has_base 0 until the first accepted ACK. */
  int has_base;
  uint64_t base_version, base_epoch;
  int nack_reason;              /* CP_ACT_NACK: a RejectReason value */
  uint64_t report_sequence;     /* CP_ACT_RUNTIME: the sequence to send */
  int resend;                   /* CP_ACT_RUNTIME: same content again */
  int runtime_in_flight;
  uint64_t report_epoch;        /* the baseline epoch the last report
                                   carries (a stale answer to an older
                                   one changes nothing) */
  /* The view in use: its validity, and the max-stale deadline measured
   * from the last valid snapshot (CP-3-18). 0 = no view. */
  int64_t view_valid_until_ms;
  int64_t view_stale_at_ms;
  int64_t next_runtime_ms;      /* RUNNING: when the next report is due */
  cp_call fatal_call;           /* CP_SUP_FATAL: what failed, and how */
  int fatal_code;
} cp_sup;

/* Starts (IDLE -> REGISTERING): zeroes s, keeps a copy of lim, returns
 * CP_ACT_REGISTER. The driver reads the next stream message only while
 * the state is WATCHING or RUNNING, so one snapshot is in hand at a time;
 * runtime reports go only in RUNNING, never while an ACK is in flight. */
cp_sup_action cp_sup_start(cp_sup *s, const cp_sup_limits *lim);

/* RegisterWorker answered. On OK: the session's epoch, runtime interval
 * and max stale age (clipped to the limits) and CP_ACT_WATCH. */
cp_sup_action cp_sup_registered(cp_sup *s, int code, uint64_t epoch,
                                uint32_t runtime_interval_ms,
                                uint32_t max_stale_ms, int64_t now_ms);

/* A snapshot arrived on the stream and the driver validated it
 * (cp_snapshot_check): reject_reason 0 = valid. Valid: CP_ACT_BUILD (the
 * triple is kept for the ACK). Invalid: CP_ACT_NACK with the reason; the
 * stream stays open and the old view stays (CP-3-14). A delta the driver
 * could not apply is not an event here: it reopens the stream for a full
 * snapshot (CP_ACT_WATCH through cp_sup_stream_end with OK). */
cp_sup_action cp_sup_snapshot(cp_sup *s, int reject_reason, uint64_t version,
                              uint64_t epoch, const uint8_t checksum[32]);

/* The driver could not build the view of the snapshot cp_sup_snapshot
 * took (CP_ACT_BUILD): it passed its validation but is not a view this
 * worker can hold (what the view compiler refuses, or memory). SWAPPING
 * -> NACKING: CP_ACT_NACK of the same triple with reject_reason (a
 * RejectReason value; 0 is taken as MALFORMED, 3). The stream, the session
 * and the old view stay, as for a snapshot that failed its validation
 * (CP-3-14); a later snapshot on the stream is built again. In any other
 * state: CP_ACT_NONE. */
cp_sup_action cp_sup_build_failed(cp_sup *s, int reject_reason);

/* The driver swapped the new view in: it is valid until valid_until_ms;
 * the max-stale deadline restarts at now_ms. Returns CP_ACT_ACK (the ACK
 * only after the swap, CP-2-3). */
cp_sup_action cp_sup_swapped(cp_sup *s, int64_t now_ms,
                             int64_t valid_until_ms);

/* AcknowledgeSnapshot answered. A positive one accepted makes the session
 * RUNNING with that snapshot as the baseline, and heartbeats start
 * (CP-1-15): CP_ACT_RUNTIME with the next sequence. A negative one
 * accepted leaves the session WATCHING without heartbeats (the
 * controller's runtime fence is closed until a positive ACK, CP-1-10):
 * CP_ACT_NONE. CP_SUP_STALE_EPOCH: the epoch moved on while the ACK
 * travelled; the view stays, the session waits in WATCHING for the next
 * snapshot (CP_ACT_NONE). A failure: as cp_sup_failed. */
cp_sup_action cp_sup_acked(cp_sup *s, int code, int64_t now_ms);

/* The driver's timer: in BACKOFF it starts a new session
 * (CP_ACT_REGISTER); in RUNNING it returns CP_ACT_RUNTIME when a report
 * is due and none is in flight. */
cp_sup_action cp_sup_timer(cp_sup *s, int64_t now_ms);

/* The channel's connection became READY (cp_grpc_client_cfg.on_ready).
 * In BACKOFF the new session starts at once (CP_ACT_REGISTER): the
 * channel reconnects within backoff.max of the controller's return, and
 * waiting for the timer as well would make that up to two backoff.max
 * (issue 23 item 3). Not a tight loop: a connection that then drops
 * leaves the channel idle until the next call, which only the timer
 * makes. In any other state: CP_ACT_NONE. */
cp_sup_action cp_sup_channel_ready(cp_sup *s);

/* ReportRuntime answered. OK: the sequence is spent, CP_ACT_NONE. A
 * transient error: the same sequence and content are resent at the next
 * timer (CP_ACT_NONE now). CP_SUP_STALE_EPOCH: reports stop until the
 * next snapshot is ACKed (RUNNING -> WATCHING; nothing when a newer
 * baseline was ACKed since the report left), CP_ACT_NONE. Anything that
 * says the session is gone: CP_ACT_BACKOFF. */
cp_sup_action cp_sup_runtime_done(cp_sup *s, int code, int64_t now_ms);

/* The stream ended (OK when the controller closed it at valid_until,
 * CP-3-11) or failed; a unary call failed in a way its own event does not
 * cover; or the outcome reporter saw a session-fence error (CP-5-17: call
 * with CP_CALL_OUTCOMES). Returns CP_ACT_BACKOFF or CP_ACT_FATAL. */
cp_sup_action cp_sup_failed(cp_sup *s, cp_call call, int code,
                            int64_t now_ms);

/* Whether the gateway may take new traffic now (CP-1-28, CP-3-9,
 * CP-3-18): a view is held, now < its valid_until and now < the
 * max-stale deadline. Pure. */
int cp_sup_ready(const cp_sup *s, int64_t now_ms);

/* When the driver's timer must next fire: the backoff end, the next
 * runtime report, or the view's expiry (readiness changes then); -1 for
 * none. */
int64_t cp_sup_next_timer_ms(const cp_sup *s, int64_t now_ms);

#endif
