/* SPDX-License-Identifier: BSD-2-Clause */
/* api->defer_* (ABI 1.6): calls for the loop's next turn, one FIFO per
 * core and two libev watchers. api.c checks the thread and the phase and
 * calls these. Loop thread only. */
#ifndef PH_DEFER_H
#define PH_DEFER_H

#include <proxyhost/host.h>

struct ev_loop;
typedef struct ph_defers ph_defers;

struct ph_defer {
  ph_defer *next, *prev; /* in the queue while queued */
  ph_defers *q;
  ph_ctx *ctx; /* the owner, for api.c's thread check */
  ph_defer_fn fn;
  void *arg;
  int queued;
};

/* NULL when out of memory. */
ph_defers *defers_new(struct ev_loop *loop);
/* Unlinks whatever is still queued (no call runs) and stops the
 * watchers; handles not freed stay their owners'. NULL is ignored. */
void defers_free(ph_defers *q);

/* A handle, created idle. NULL when out of memory. */
ph_defer *defer_new(ph_defers *q, ph_ctx *ctx, ph_defer_fn fn, void *arg);
/* Queues d at the end unless it is queued already (it keeps its place). */
void defer_post(ph_defer *d);
/* PH_OK: d was queued and is not any more; PH_ENOENT: it was not. */
int defer_cancel(ph_defer *d);
/* Cancels and frees; safe from inside d's own call. */
void defer_free(ph_defer *d);

#endif
