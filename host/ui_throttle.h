/* SPDX-License-Identifier: BSD-2-Clause */
/* The status page's login throttle ([admin] login_failures): the times of
 * the last failed logins, at most UI_THROTTLE_MAX, in a ring. Once the
 * limit in force have failed within UI_THROTTLE_WINDOW seconds, the
 * listener's login form is shut until the oldest of them is that old
 * (a sliding window: never more than the limit of failures in any
 * minute). One window for the whole listener, not per peer: fixed
 * memory, nothing a flood of peers can grow. Pure: the caller gives the
 * time (seconds on a clock that does not jump); no allocation. Loop
 * thread only. */
#ifndef PH_UI_THROTTLE_H
#define PH_UI_THROTTLE_H

#define UI_THROTTLE_MAX 1000     /* the upper bound of login_failures */
#define UI_THROTTLE_WINDOW 60.0  /* seconds */

typedef struct ui_throttle {
  double t[UI_THROTTLE_MAX]; /* failure times; t[next] the oldest once full */
  int max;                   /* 1..UI_THROTTLE_MAX */
  int n;                     /* failures held, 0..max */
  int next;                  /* the slot the next failure takes */
} ui_throttle;

/* Forgets every failure and sets the limit (clamped to 1..UI_THROTTLE_MAX). */
void throttle_reset(ui_throttle *t, int max);
/* 0 when a login may be tried at now; else the whole seconds (1..60)
 * until one may, for Retry-After. */
int throttle_wait(const ui_throttle *t, double now);
/* Counts a failed login at now. */
void throttle_fail(ui_throttle *t, double now);

#endif
