/* SPDX-License-Identifier: BSD-2-Clause */
/* The helper thread pool. Jobs run on helper threads; each accepted job's
 * done callback runs exactly once on the loop thread. The job queue is
 * bounded; completions have reserved room, so a finished job is never
 * dropped. */
#ifndef PH_POOL_H
#define PH_POOL_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/host.h>

#include "conf.h"

struct ev_loop;
typedef struct ph_pool ph_pool;

/* threads in 1..64, queue_cap >= 1. */
ph_pool *pool_new(struct ev_loop *loop, unsigned threads, size_t queue_cap);
/* pool_cancel: the job exists but another owner submitted it (the API
 * reports the misuse and answers PH_ENOENT). Not a ph_status. */
#define POOL_EFOREIGN (-100)

/* Loop thread. Job id > 0 or PH_EFULL. owner (the module's ctx, or any
 * pointer) is the only one that may cancel the job. */
int64_t pool_submit(ph_pool *p, const void *owner, ph_work_fn work,
                    ph_done_fn done, void *arg);
/* Loop thread. pool_submit for a job that reads configuration: an
 * accepted job holds a reference to conf (conf_hold), which
 * pool_job_conf() returns on the helper thread while work runs, and the
 * pool drops it (conf_free) after done ran, also when the job is
 * cancelled. Not accepted: no reference is taken. */
int64_t pool_submit_conf(ph_pool *p, const void *owner, ph_work_fn work,
                         ph_done_fn done, void *arg, ph_conf *conf);
/* On a helper thread inside a job's work: the configuration that job
 * holds (NULL for a job without one). NULL on every other thread. */
const ph_conf *pool_job_conf(void);
/* Loop thread. See ph_api.job_cancel; POOL_EFOREIGN when the job is
 * another owner's (it is left alone). */
int pool_cancel(ph_pool *p, const void *owner, int64_t id);
/* Loop thread: delivers finished jobs now (tests). */
void pool_drain(ph_pool *p);
/* Jobs accepted whose done has not run yet. */
size_t pool_outstanding(ph_pool *p);
/* Loop thread. Cancels queued jobs (done with PH_ECANCELED), waits for
 * running ones, delivers their done, joins the threads. */
void pool_free(ph_pool *p);

#endif
