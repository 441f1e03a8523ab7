/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The controller's side of the CheckerControlPlane (issue 26, CP-1-3,
 * CP-6-1, CP-6-2): checkers, their tasks and the scheduler, one struct
 * cs_checkers per controller (cs.checkers), loop thread only.
 *
 *  cs_checker_register.c  RegisterChecker: a checker session in Redis
 *  cs_checker_watch.c     WatchCheckTasks: a checker's live stream, the
 *                         tasks it was given, its session kept alive
 *  cs_checker_report.c    ReportObservations: the fenced stream
 *                         (cs_fenced.c), each observation matched to a
 *                         task given to that checker, then the reducer
 *  cs_sched.c             the scheduler: (proxy, tier, group) items,
 *                         due times, tasks out, deadlines
 *  cs_checker_metrics.c   the metrics and the struct's life
 *
 * A task belongs to one checker and one item; it ends answered (an
 * observation in time), expired (its deadline passed: a checker failure,
 * the item is given to another checker at once) or released (its
 * checker's stream ended: the same).
 */
#ifndef CS_CHECKER_H
#define CS_CHECKER_H

#include "cs.h"
#include "cs_sched_plan.h"
#include "lib/idtab.h"

#define CS_LATE_RING 16

typedef struct cs_item cs_item;
typedef struct cs_checker cs_checker;

typedef struct cs_task {
  ilist_node node; /* in its checker's tasks, in deadline order */
  idtab_node hnode; /* in its checker's task_ids, keyed by cs_task_key(id) */
  cs_checker *owner;
  cs_item *item;
  char id[CS_TASK_ID_HEX + 1];
  int64_t deadline_ms; /* wall clock */
} cs_task;

/* One (proxy, tier, target group) to check. */
struct cs_item {
  char proxy_id[PH_POOL_ID_MAX + 1];
  int tier;                          /* CONTROLPLANE__V1__CHECK_TIER__* */
  char group[PH_POOL_GROUP_MAX + 1]; /* "" unless TARGET */
  cs_probe *probe;                   /* TARGET */
  size_t row;                        /* in the scheduler's pool */
  int64_t due_ms;
  cs_task *task; /* the task out, or NULL */
  uint64_t avoid; /* the checker (serial) that last missed it */
};

/* A packed CheckTask waiting for its stream (credentials inside: wiped
 * when freed). */
typedef struct cs_out {
  ilist_node node;
  size_t len;
  uint8_t data[];
} cs_out;

struct cs_checker {
  ilist_node node; /* in cs_checkers.live */
  cs *m;
  cp_grpc_call *call; /* the WatchCheckTasks stream */
  int64_t start_ms;
  uint64_t serial;
  char id[PH_POOL_ID_MAX + 1], session[PH_POOL_ID_MAX + 1];
  char zone[PH_POOL_ID_MAX + 1]; /* the session's, from checker_alive */
  uint32_t max_concurrency, tiers;
  uint32_t batch_max; /* tasks per stream message it reads (>= 1) */
  int claimed; /* Redis confirmed its session: it takes tasks */
  int missed;  /* deadlines passed since its last accepted batch */
  int64_t renewed_ms; /* the session's TTL was last renewed (wall) */
  int64_t report_ms;  /* its last accepted observations (mono_ms), 0 none */
  int64_t auth_call;
  ph_timer *timer; /* renewals */
  ilist tasks;     /* cs_task, outstanding */
  idtab task_ids;  /* the same tasks by id (sized once claimed) */
  ilist sendq;     /* cs_out */
  int sending;
  char late[CS_LATE_RING][CS_TASK_ID_HEX + 1]; /* tasks expired lately */
  unsigned n_late;
};

enum { CS_TIER_N = 3 };                  /* basic, egress, target */
enum { CS_TASK_ISSUED = 0, CS_TASK_ANSWERED, CS_TASK_EXPIRED,
       CS_TASK_RELEASED, CS_TASK_RESULT_N };
enum { CS_OBS_ACCEPTED = 0, CS_OBS_NOT_GIVEN, CS_OBS_LATE, CS_OBS_N };

struct cs_checkers {
  cs *m;
  ilist live; /* cs_checker with a stream */
  uint64_t next_serial;
  /* the scheduler */
  ph_timer *tick;
  cs_pool *pool;  /* the rows the items were made from */
  int pool_wait;  /* a cs_pool_get in flight */
  cs_item *items; /* sorted by (proxy, tier, group) */
  size_t n_items;
  uint32_t outstanding; /* tasks out, all checkers */
  int corked;           /* a tick issuing: sends wait for cs_checkers_uncork */
  cs_probe probes[CS_PROBES_MAX];
  size_t n_probes;
  /* metrics */
  ph_series *m_tasks[CS_TIER_N][CS_TASK_RESULT_N];
  ph_series *m_obs[CS_OBS_N];
  ph_series *m_checkers;
  ph_series *m_no_credential;
};

/* cs_checker_metrics.c: made in init (PH_OK or an error), freed in
 * destroy; cs_checkers_stop ends every stream (stop). */
int cs_checkers_init(cs *m);
void cs_checkers_stop(cs *m);
void cs_checkers_free(cs *m);
/* The tier's metric index (0..2) of a CheckTier. */
int cs_tier_index(int tier);

/* cs_checker_watch.c */
/* Queues a packed task on c's stream (takes o). 0, or -1 when the send
 * failed: c's stream ended and c is freed (its tasks released). */
int cs_checker_send(cs_checker *c, cs_out *o);
/* Sends what the checkers' queues gathered while k->corked was set (the
 * scheduler's tick): a checker that asked for it (batch_max > 1) gets its
 * tasks in as few messages as its batch_max allows. */
void cs_checkers_uncork(cs *m);
/* c registered with session: its streams of other sessions end now. */
void cs_checker_replaced(cs *m, const char *checker, const char *session);
/* The live checker of (id, session), or NULL. */
cs_checker *cs_checker_find(cs *m, const char *id, const char *session);
/* Ends c's stream (status, why) and frees it; its tasks are released. */
void cs_checker_end(cs_checker *c, int status, const char *why);

/* cs_sched.c */
void cs_sched_start(cs *m);
void cs_sched_stop(cs *m);
/* A task ended: answered (its item due again after an interval),
 * expired or released (due now, elsewhere). Frees t. */
void cs_task_done(cs *m, cs_task *t, int result);
/* The task id of c's, or NULL: a lookup in c->task_ids (cs_task_key),
 * not a scan. */
cs_task *cs_task_find(cs_checker *c, const char *task_id);

#endif
