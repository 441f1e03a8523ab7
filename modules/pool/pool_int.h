/* SPDX-License-Identifier: BSD-2-Clause */
/* The pool module's private types (issue 13): the gateway's dispatch.
 *
 *   pool      the module: its configuration, the services it uses, the
 *             current generation, the waiters, the answers due.
 *   pool_gen  one installed view with what the pool keeps beside it: the
 *             per-proxy load arrays the strategies read, the strategies'
 *             state, the rule -> strategy table. Held by reference: the
 *             current one, and every attempt that picked from it.
 *   pool_px   one proxy's counts (active, reserved), by proxy_id, across
 *             views: the truth the runtime report carries. A generation
 *             mirrors them in its arrays for the proxies it has; a proxy
 *             that left the view stays on the "left" list, draining,
 *             until its counts reach zero (CP-4-2, CP-4-3).
 *   pool_attempt  one open(): match, pick, reserve (pool_match.c), or
 *             wait (pool_wait.c); dial the proxy, handshake (or, for a
 *             request forwarded in absolute form to an `http` upstream,
 *             none) (pool_dial.c); hand over the socket with a lease
 *             (pool_lease.c); the attempts by id, their answers and the
 *             outcome of every attempt (pool_attempt.c).
 *   the drain (pool_drain.c): a proxy that leaves the view (removed,
 *             marked draining, revoked, past its expires_at) or a view
 *             past its valid_until or max_stale_age: its leased streams
 *             are cut after drain_timeout (issue 22 item 14).
 */
#ifndef PH_POOL_INT_H
#define PH_POOL_INT_H

#include <stdint.h>

#include <proxyhost/connector.h>
#include <proxyhost/open_http_forward.h>
#include <proxyhost/open_lease.h>
#include <proxyhost/open_upstream.h>
#include <proxyhost/stream.h>
#include <proxyhost/module.h>
#include <proxyhost/outcome_sink.h>
#include <proxyhost/pool_view.h>
#include <proxyhost/strategy.h>

#include "lib/clocks.h"
#include "lib/minute_ring.h"
#include "lib/guard.h"
#include "lib/idtab.h"
#include "lib/ilist.h"
#include "contracts/pool_runtime.h"
#include "frontend/traffic_gate.h"
#include "upstream/up_hs.h"

#define POOL_STRATS_MAX 16
#define POOL_HOST_MAX 255
#define POOL_KEY_MAX 256 /* a sticky key (a user name, a header value) */

typedef struct pool pool;
typedef struct pool_gen pool_gen;
typedef struct pool_px pool_px;
typedef struct pool_attempt pool_attempt;

struct pool_px {
  char id[PH_POOL_ID_MAX + 1];
  uint32_t active, reserved;
  uint32_t idx;  /* its index in the current generation, or
                    PH_POOL_VIEW_NONE once it left (then on p->left) */
  pool_px *lprev, *lnext;
  /* The drain (pool_drain.c): the leased streams through it, and when
   * they are cut (api now_ms; 0: it may carry streams) and why; its
   * expires_at in the last view that had it (wall ms; 0: none yet). */
  ilist streams;
  int64_t cut_at_ms;
  int cut_reason; /* enum pool_cut_reason */
  int64_t expires_at_ms;
};

typedef struct pool_strat {
  const char *name; /* the provider (instance) name, our own copy */
  const ph_strategy_v1 *vt;
  void *self;
} pool_strat;

struct pool_gen {
  pool *p;
  const ph_pool_view *view; /* a reference (pool.view acquire) */
  const ph_pool_view *base; /* the view it was prepared after (no
                               reference: compared only) */
  uint32_t *map;            /* base's proxies -> ours (NULL: no base) */
  uint32_t refs;            /* +1 while current, +1 per attempt */
  uint32_t n;               /* view->n_proxies */
  uint32_t *active, *reserved;
  uint8_t *revoked;         /* revoke_proxy_ids, and draining proxies */
  /* What a pick avoids (CP-6-7): [0] revoked, UNHEALTHY and SUSPECT
   * proxies (the first pick); [1] revoked and UNHEALTHY (the second,
   * only when the first found nothing and n_suspect > 0). */
  uint8_t *avoid[2];
  uint32_t n_suspect;       /* SUSPECT proxies in the view */
  pool_px **px;             /* n */
  void *sstate[POOL_STRATS_MAX]; /* per p->strats, NULL when unused */
  int8_t *rule_strat;       /* per rule: index in p->strats, -1: none */
  ph_pool_load load;
};

enum attempt_state {
  AT_NEW = 0,
  AT_WAITING,   /* in p's wait queue (WAIT), with its deadline */
  AT_DIALING,   /* the upstream connector dials the proxy */
  AT_HANDSHAKE, /* CONNECT or SOCKS5 with the proxy */
  AT_DIRECT,    /* DIRECT: the direct connector dials the target */
  AT_DONE,      /* answered or about to be (on p's done list) */
  AT_LEASED     /* the caller holds the socket and the lease */
};

struct pool_attempt {
  ph_open_lease lease; /* first: the lease the caller gets */
  pool *p;
  int64_t id;
  idtab_node hn;                /* in pool.ids */
  ilist_node qlink;             /* the wait queue or the done list */
  int state;
  ph_open_cb cb;
  void *arg;
  /* The request, copied. */
  char host[POOL_HOST_MAX + 1];
  uint16_t port;
  char principal[PH_POOL_NAME_MAX + 1];
  int has_principal;
  char listener[PH_POOL_NAME_MAX + 1];
  int has_listener;
  char key[POOL_KEY_MAX];
  uint32_t key_len;
  int has_key;
  /* How the request asked for a lease and for HTTP forwarding (enum
   * ph_open_asked bits; 0: it did not): the answer takes each form. */
  int lease_asked, fwd_asked;
  int leased; /* the answer is a success with the lease */
  /* The selection. */
  pool_gen *gen;    /* a reference, from the first match on */
  uint32_t rule;    /* in gen->view->rules */
  char rule_id[PH_POOL_ID_MAX + 1];
  uint32_t tried[PH_STRATEGY_TRIED_MAX];
  uint32_t n_tried;
  uint32_t attempts;
  pool_px *px;      /* the proxy reserved or active (a reference) */
  uint32_t pidx;    /* its index in gen when picked */
  int64_t wait_deadline_ms; /* monotonic; 0 before it first waits */
  int64_t hs_deadline_ms;   /* monotonic: the handshake's deadline */
  ph_timer *timer;  /* the WAIT deadline, the handshake's */
  /* The connection to the proxy. */
  int64_t sub;      /* the upstream or direct connector's open id */
  int fd;
  ph_io *io;
  up_hs hs;
  uint32_t peek_delay_ms; /* a partial head: re-peek after this */
  int64_t stage_us; /* monotonic µs when the current stage began */
  int first_byte;   /* the lease saw the target's first byte */
  /* Leased: its place on px->streams or p->cutq (or on neither), and
   * the caller's cut (ph_open_lease_on_cut). */
  ilist_node slink;
  void (*cut)(void *arg);
  void *cut_arg;
  /* The lease's extension in the answer's chain (open_lease.h). */
  ph_open_lease_res lease_x;
  /* Absolute-form forwarding through an `http` upstream (the request
   * asked, open_http_forward.h): what the answer says in each form asked
   * (its chain's fwd_x, the old res.http_forward's fwd), with the
   * Proxy-Authorization value "Basic <token>" (fwd_auth_len bytes; 0:
   * none) made from the view's credentials here, in the attempt's own
   * memory and nowhere else; wiped (OPENSSL_cleanse) when the attempt is
   * freed: at the lease's end, or when a success is never delivered. */
  ph_open_http_forward_res fwd_x;
  /* The proxy the answer comes from (open_upstream.h, connector 1.6):
   * named in the result's chain on a success or a failure; "" once the
   * answer is DIRECT's. */
  char hop_id[PH_POOL_ID_MAX + 1];
  ph_open_upstream_res hop_x;
  ph_open_http_forward fwd;
  char fwd_auth[UP_HS_PROXY_AUTH_MAX + 1];
  uint32_t fwd_auth_len;
  /* The answer. */
  ph_open_result res;
  int fail_stage, fail_code; /* the last upstream failure, for the
                                answer when no candidate is left */
};

typedef struct pool_conf {
  uint32_t max_opens;     /* attempts in progress (not leased) */
  uint32_t max_waiters;   /* WAIT queue */
  uint32_t max_attempts;  /* candidates tried per request */
  uint32_t handshake_timeout_ms;
  uint32_t drain_timeout_ms; /* a leaving proxy's streams, then cut */
  const char *view_provider, *sink_provider, *upstream_connector,
      *direct_connector;
} pool_conf;

/* How an open ended: the result label of proxyhost_pool_opens_total. */
enum pool_result {
  PR_OK = 0,       /* through an upstream proxy */
  PR_DIRECT,       /* DIRECT, opened by the direct connector */
  PR_NO_VIEW,      /* no live view: no candidates (CP-3-9, CP-3-18) */
  PR_NO_RULE,      /* no rule matched */
  PR_NO_STRATEGY,  /* the rule's strategy is not loaded */
  PR_NO_CAPACITY,  /* no candidate takes it, on_unavailable REJECT */
  PR_WAIT_FULL,    /* WAIT, and the wait queue is full */
  PR_WAIT_TIMEOUT, /* WAIT, and wait_timeout passed */
  PR_UPSTREAM,     /* every proxy tried failed */
  PR_DIRECT_FAILED,/* DIRECT, and the direct connector failed */
  PR_REFUSED,      /* the caller takes no lease, or the pool stops */
  N_PR
};
/* Why a proxy's streams were cut: the reason label of
 * proxyhost_pool_streams_cut_total. */
enum pool_cut_reason {
  PC_REMOVED = 0, /* a snapshot no longer has it (extracted, deleted) */
  PC_DRAINING,    /* a snapshot marks it draining (CP-4-2) */
  PC_REVOKED,     /* revoke_proxy_ids named it (CP-4-7) */
  PC_EXPIRED,     /* its expires_at passed (the ownership's lease) */
  PC_STALE,       /* the view passed valid_until or max_stale_age
                     (CP-3-9, CP-3-18) */
  N_PC
};
#define POOL_CUT_NAMES "removed", "draining", "revoked", "expired", "stale"

#define POOL_RESULT_NAMES                                                  \
  "ok", "direct", "no_view", "no_rule", "no_strategy", "no_capacity",      \
      "wait_full", "wait_timeout", "upstream_failed", "direct_failed",     \
      "refused"

struct pool {
  ph_ctx *ctx;
  pool_conf conf;
  int stopping;
  int subscribed; /* to pool.view (pool_view_install) */
  /* traffic.gate (pool_gate.c): closed while the view is stale. */
  int gate_closed;
  traffic_gate_watch *gate_watchers;
  const ph_pool_view_v1 *view;
  void *view_self;
  const ph_outcome_sink_v1 *sink;
  void *sink_self;
  const ph_connector_v1 *up;
  void *up_self;
  const ph_connector_v1 *direct;
  void *direct_self;
  pool_strat strats[POOL_STRATS_MAX];
  uint32_t n_strats;
  pool_gen *cur;
  pool_px *left; /* proxies no longer in the view that still carry counts */
  /* Attempts by id (cancel), the wait queue, the answers due. */
  idtab ids; /* pool_attempt by id */
  uint32_t n_open;  /* attempts not yet leased */
  int64_t next_id;
  ilist wq;
  uint32_t n_waiting;
  ilist dq;
  ph_defer *deliver; /* answers made inside a call, on the next turn */
  ph_timer *drain_timer; /* the next cut, or the next view deadline */
  ilist cutq;            /* streams being cut now (pool_drain.c) */
  guard entered; /* open/cancel/lease calls on the stack: answer later */
  int waking, wake_again; /* pool_wake on the stack; one more round due */
  uint64_t rng;
  /* runtime() output, reused */
  pool_runtime_counter *rt;
  uint32_t rt_cap;
  /* metrics */
  ph_series *m_result[N_PR], *m_retries, *m_waiting, *m_reserved,
      *m_active, *m_outcome_full;
  ph_series *m_outcome[4][3]; /* [stage - 1][result - 1] */
  ph_series *m_cut[N_PC];
  ph_series *m_accepting; /* the gate: 1 open, 0 closed */
  ph_series *m_suspect_picks; /* a SUSPECT proxy picked: nothing else */
  minute_ring fails; /* opens answered with a failure (pool_status.c) */
};

/* The one API table (set by init). */
extern const ph_api *pool_api;

/* ---- pool_gen.c ------------------------------------------------------- */

/* The current generation, installed with the view's swap; built here only
 * when that failed (memory). NULL while there is no view. Loop thread. */
pool_gen *pool_gen_current(pool *p);
/* The pool's ph_pool_view_sub (CP-3-17, issue 23 item 13): prepare (any
 * thread) and install (the loop, right after the swap); arg is the pool. */
void *pool_view_prepare(void *arg, const ph_pool_view *v,
                        const ph_pool_view *base);
void pool_view_install(void *arg, const ph_pool_view *v, void *prepared);
void pool_gen_hold(pool_gen *g);
void pool_gen_release(pool_gen *g);
/* Count changes on px, mirrored in the current generation. A record that
 * left the view is freed when both reach zero: px is then dead. */
void pool_px_add(pool *p, pool_px *px, int d_active, int d_reserved);
/* Drops the current generation and every proxy record (stop/destroy). */
void pool_gen_clear(pool *p);
/* "pool.runtime". */
extern const pool_runtime_v1 pool_runtime_service;
uint64_t pool_random(pool *p);

/* ---- pool_attempt.c: open(), cancel(), what the steps share ------------- */
/* Every function of the attempt's files runs on the loop thread. */

extern const ph_connector_v1 pool_connector_service;
/* pool_status.c: the status panels "view" and "failures" (init), and
 * one failed open counted for "failures". */
int pool_status_register(pool *p);
void pool_status_fail(pool *p, int stage, int code);

/* Answers every attempt in progress (stop): stage queue, queue_full. */
void pool_attempts_abort(pool *p);
void pool_on_deliver(ph_defer *t, void *arg);
/* The loop's monotonic clock, ms (pool_api->now_ms). */
int64_t pool_mono_ms(pool *p);
/* Hands the outcome of a stage of the attempt through a->px to
 * outcome.sink (nothing without a proxy); result: PH_OUTCOME_*. */
void pool_outcome(pool_attempt *a, int stage, int result);
/* Gives up a's reservation (nothing reached the target), waking waiters
 * for its proxy. No-op without one. */
void pool_unreserve(pool_attempt *a);
/* Frees a (its forwarding credential wiped, its timer, its generation). */
void pool_attempt_free(pool_attempt *a);
/* Ends a with a failure: result (enum pool_result) counted, answered
 * from the deliver timer. */
void pool_fail(pool_attempt *a, int result, int stage, int code,
               int retryable);
/* Answers a with a->res: at once, or from the deliver timer while an
 * open/cancel/lease call is on the stack (guard_inside(&p->entered)). */
void pool_answer(pool_attempt *a);
/* a's one timer (WAIT's deadline, the handshake's): created on first use.
 * 1, or 0 when out of memory. */
int pool_attempt_timer(pool_attempt *a);
/* Arms a's timer for deadline_ms (monotonic), or sooner: at_most_ms (a
 * re-peek) when not 0. */
void pool_arm_deadline(pool_attempt *a, int64_t deadline_ms,
                       uint32_t at_most_ms);

/* ---- pool_match.c: the rule, the candidate, its reservation ------------- */

/* 1 when proxy idx is a candidate of rule r (candidates are ascending). */
int pool_rule_has(const ph_pool_view_rule *r, uint32_t idx);
/* Matches a (again, after a view swap), picks the next candidate,
 * reserves and dials it (pool_dial), or applies on_unavailable; a may be
 * answered on return. req: the request while open() runs (its headers
 * give the session key), NULL after. a holds no reservation. */
void pool_select(pool_attempt *a, const ph_open_request *req);

/* ---- pool_wait.c: no candidate now ------------------------------------- */

/* The rule's on_unavailable: WAIT (enqueue, or keep a's place), DIRECT,
 * or REJECT (answered). */
void pool_unavailable(pool_attempt *a, const ph_pool_view_rule *rule);
/* Takes a out of the wait queue (no-op when not waiting). */
void pool_wait_leave(pool_attempt *a);
/* Capacity of proxy idx (in the current generation) was freed, or, with
 * PH_POOL_VIEW_NONE, a new view came: waiters may go on, in order. */
void pool_wake(pool *p, uint32_t idx);
/* a's timer while AT_WAITING: its wait_timeout passed, or not yet. */
void pool_wait_on_timer(pool_attempt *a);

/* ---- pool_dial.c: the connection to the proxy, or DIRECT --------------- */

/* Dials a's reserved proxy (a->pidx in a->gen); the handshake, a lease
 * or another candidate follow. */
void pool_dial(pool_attempt *a);
/* a's timer while AT_HANDSHAKE: the deadline, or a re-peek. */
void pool_dial_on_timer(pool_attempt *a);
/* Closes a's connection to the proxy, wiping the handshake. */
void pool_dial_close(pool_attempt *a);
/* DIRECT: the direct connector opens a's target; its answer is a's. */
void pool_go_direct(pool_attempt *a);

/* ---- pool_lease.c: the caller's socket and lease ----------------------- */

/* The stream is up: the reservation becomes active and the caller gets
 * the socket and the lease (with http_proxy 1: the socket goes to an
 * HTTP forward proxy). */
void pool_lease_out(pool_attempt *a, int http_proxy);
/* The leased stream is over (its lease ended, or a success never
 * delivered): off the drain's lists, its proxy's active count down,
 * waiters woken. */
void pool_lease_release(pool_attempt *a);

/* ---- pool_gate.c ------------------------------------------------------ */

extern const traffic_gate_v1 pool_gate_service;
/* Opens or closes the gate; on a change: the gauge, one log line, every
 * watcher. Loop thread. */
void pool_gate_set(pool *p, int open);

/* ---- pool_drain.c ----------------------------------------------------- */

/* Looks at every proxy of the current view and every one that left it:
 * one that may no longer carry streams gets its cut time (now +
 * drain_timeout), one back in good standing loses it; arms the drain
 * timer for the next cut or view deadline. Called after a view is
 * installed and after revoke_proxy_ids. Loop thread. */
void pool_drain_scan(pool *p);
/* a's stream is leased out through a->px / is over (its lease ended, or
 * a success never delivered). */
void pool_drain_add(pool_attempt *a);
void pool_drain_remove(pool_attempt *a);
/* The caller's cut for a's lease (NULL: none). */
void pool_drain_on_cut(pool_attempt *a, void (*cut)(void *), void *arg);
void pool_on_drain_timer(ph_timer *t, void *arg);

#endif
