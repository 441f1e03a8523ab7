/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The server's open executor (TM-P0-16, TM-SEC-6, TM-FAIL-2): how many
 * stream opens (authorization, selection, the agent's open) run at once
 * and which waiting one runs next. Pure and intrusive: no I/O, no
 * allocation, no clock; the caller embeds a job in each open and a group
 * in each client session, starts what submit/next hand it and measures
 * the queue wait itself.
 *
 * Bounds: at most max_running jobs run at once (stream.
 * max_concurrent_opens) and at most max_pending wait (stream.
 * max_pending_opens); a group (one client session) runs at most
 * per_group at once (stream.max_opens_per_session), and that cap is
 * applied first: a job of a group at its cap waits even when global
 * slots are free, so one client cannot take every slot. A job that can
 * neither run nor wait is refused at once (the caller answers
 * queue/queue_full). When a slot frees, the next job comes from the
 * groups with waiting jobs in round-robin order, skipping groups at
 * their cap; within a group, first come first served.
 *
 * Loop thread only (or any single thread).
 */
#ifndef TM_OPEN_EXEC_H
#define TM_OPEN_EXEC_H

#include <stdint.h>

typedef struct oexec_group oexec_group;

enum oexec_state { OEXEC_IDLE = 0, OEXEC_PENDING, OEXEC_RUNNING };

typedef struct oexec_job {
  struct oexec_job *next, *prev; /* the group's waiting list */
  oexec_group *group;
  int state; /* oexec_state */
} oexec_job;

struct oexec_group {
  oexec_job *head, *tail; /* waiting, oldest first */
  uint32_t running, pending;
  oexec_group *rnext, *rprev; /* the ring of groups with waiting jobs */
  int in_ring;
};

typedef struct oexec {
  uint32_t max_running, max_pending, per_group;
  uint32_t running, pending;
  oexec_group *ring; /* the group whose turn is next */
} oexec;

/* What submit did with a job. */
enum oexec_verdict {
  OEXEC_RUN = 1, /* a slot was free: the job is running, start it now */
  OEXEC_QUEUED,  /* it waits; next() hands it over later */
  OEXEC_FULL     /* refused: nothing changed (queue_full) */
};

/* Limits, each at least 1 (0 reads as 1). Changing them (reload) keeps
 * what runs and waits; a lower limit applies as jobs end. */
void oexec_init(oexec *x, uint32_t max_running, uint32_t max_pending,
                uint32_t per_group);
void oexec_set_limits(oexec *x, uint32_t max_running, uint32_t max_pending,
                      uint32_t per_group);
void oexec_group_init(oexec_group *g);

/* j must be idle (zeroed or finished). */
int oexec_submit(oexec *x, oexec_group *g, oexec_job *j);
/* A running job ended, or a waiting one was abandoned (cancel): its slot
 * or place is free and j is idle again. Nothing for an idle j. Call
 * next() afterwards to start what may run now. */
void oexec_remove(oexec *x, oexec_job *j);
/* The next waiting job allowed to run (now running), or NULL. The caller
 * loops until NULL. */
oexec_job *oexec_next(oexec *x);

#endif
