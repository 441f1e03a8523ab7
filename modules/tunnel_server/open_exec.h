/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The server's open executor (TM-P0-16, TM-SEC-6, TM-FAIL-2; issue 22
 * item 3): how many stream opens (authorization, selection, the agent's
 * open) run at once and which waiting one runs next. Pure and intrusive:
 * no I/O, no allocation, no clock; the caller embeds a job in each open,
 * a group in each client session and a principal in each tenant (the
 * user whose tokens the sessions hold), starts what submit/next hand it
 * and measures the queue wait itself.
 *
 * Bounds, all applied at once:
 *   running   max_running (stream.max_concurrent_opens) in all; a
 *             principal at most per_principal (stream.
 *             max_opens_per_principal), one of its sessions at most
 *             per_group (stream.max_opens_per_session): the session's cap
 *             first, under the principal's, under the server's (the seed:
 *             "第一版按 Client Session 设置并发上限,再受 Server 全局上限约束").
 *             A job over a cap waits even while other slots are free.
 *   waiting   max_pending (stream.max_pending_opens) in all, a principal
 *             at most pending_per_principal, a session at most
 *             pending_per_group. A job that can neither run nor wait is
 *             refused at once (the caller answers queue/queue_full), and
 *             submit says which bound refused it.
 * When a slot frees, the next job comes from the principals with waiting
 * jobs in round-robin order, and within the principal from its sessions
 * in round-robin order, skipping those at a cap; within a session, first
 * come first served. So one tenant with many connections gets one turn
 * per round like a tenant with one (TM-SEC-6: "不能由单个 Client 占满所有拨号槽").
 *
 * Loop thread only (or any single thread).
 */
#ifndef TM_OPEN_EXEC_H
#define TM_OPEN_EXEC_H

#include <stdint.h>

#include "lib/ilist.h"

typedef struct oexec_group oexec_group;
typedef struct oexec_principal oexec_principal;

enum oexec_state { OEXEC_IDLE = 0, OEXEC_PENDING, OEXEC_RUNNING };

typedef struct oexec_job {
  ilist_node link; /* the group's waiting list */
  oexec_group *group;
  int state; /* oexec_state */
} oexec_job;

/* A node of a round-robin ring (the principals with waiting jobs, or one
 * principal's sessions with waiting jobs). */
typedef struct oexec_ring {
  struct oexec_ring *next, *prev;
  int in;
} oexec_ring;

struct oexec_principal {
  oexec_ring node;    /* in the executor's ring */
  oexec_ring *groups; /* its groups with waiting jobs: the next turn */
  uint32_t running, pending;
};

struct oexec_group {
  oexec_ring node; /* in its principal's ring */
  oexec_principal *principal;
  ilist waiting; /* oldest first */
  uint32_t running, pending;
};

typedef struct oexec_limits {
  uint32_t max_running, max_pending;           /* the server's */
  uint32_t per_principal, pending_per_principal;
  uint32_t per_group, pending_per_group;
} oexec_limits;

typedef struct oexec {
  oexec_limits lim;
  uint32_t running, pending;
  oexec_ring *principals; /* with waiting jobs: the next turn */
} oexec;

/* What submit did with a job. */
enum oexec_verdict {
  OEXEC_RUN = 1,       /* a slot was free: the job is running, start it */
  OEXEC_QUEUED,        /* it waits; next() hands it over later */
  OEXEC_FULL,          /* refused, the server's waiting bound */
  OEXEC_FULL_PRINCIPAL, /* refused, the principal's waiting bound */
  OEXEC_FULL_GROUP     /* refused, the session's waiting bound */
};

/* Limits, each at least 1 (0 reads as 1). Changing them (reload) keeps
 * what runs and waits; a lower limit applies as jobs end. */
void oexec_init(oexec *x, const oexec_limits *lim);
void oexec_set_limits(oexec *x, const oexec_limits *lim);
void oexec_principal_init(oexec_principal *p);
/* A group of principal p (which must outlive the group's jobs). */
void oexec_group_init(oexec_group *g, oexec_principal *p);

/* j must be idle (zeroed or finished). Refused: nothing changed. */
int oexec_submit(oexec *x, oexec_group *g, oexec_job *j);
/* A running job ended, or a waiting one was abandoned (cancel): its slot
 * or place is free and j is idle again. Nothing for an idle j. Call
 * next() afterwards to start what may run now. */
void oexec_remove(oexec *x, oexec_job *j);
/* The next waiting job allowed to run (now running), or NULL. The caller
 * loops until NULL. */
oexec_job *oexec_next(oexec *x);

#endif
