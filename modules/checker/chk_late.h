/* SPDX-License-Identifier: BSD-2-Clause */
/* The checker's lateness at a check's deadline (issue 26: a checker's own
 * failure is never a verdict on the proxy). When the checker's loop is
 * busy (or stopped) past a check's deadline, the deadline's timer and the
 * proxy's answer become ready in the same turn of the loop, and the timer
 * runs first (libev invokes the last-queued first): without a last look
 * the check would be TIMEOUT with the proxy's answer waiting unread in the
 * socket (HAProxy and Envoy have the same problem: envoy#28699). So, at
 * the deadline, before a TIMEOUT:
 *  - chk_late_ready asks the probe's socket, without waiting, whether what
 *    the probe waits for (read or write) is ready now;
 *  - if it is, the checker reads it: a probe that then ends has its own
 *    result (OK, or the proxy's failure); one that would go on (the proxy
 *    answered a step and waits for the checker's next) was stalled by the
 *    checker, not by the proxy: CHECKER_ERROR loop_late;
 *  - if nothing is ready, the proxy was waited on: TIMEOUT (or
 *    short_budget, chk_budget.h).
 * No time threshold: the socket's state decides. */
#ifndef PH_CHK_LATE_H
#define PH_CHK_LATE_H

/* The CHK_EV_* of want (CHK_EV_READ, CHK_EV_WRITE) that fd is ready for
 * now (poll(2) with no wait; an error or a hang-up counts as ready: the
 * probe's read or write sees it); 0: none, or fd < 0. */
int chk_late_ready(int fd, int want);

#endif
