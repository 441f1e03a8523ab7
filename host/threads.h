/* SPDX-License-Identifier: BSD-2-Clause */
/* Module threads (ABI 1.2): host-owned, named, long-running threads a
 * module asks for with api->thread_start, each with its own bounded
 * delivery queue to the loop (a mailbox, so that one module's thread can
 * neither fill nor be refused by anybody else's queue), all joined by the
 * host before the module's destroy. The contract is in
 * sdk/proxyhost/host.h; the phase and thread checks are api.c's.
 *
 * Loop thread unless stated otherwise. */
#ifndef PH_THREADS_H
#define PH_THREADS_H

#include <signal.h>
#include <stddef.h>

#include <proxyhost/host.h>

/* Joining waits this long at least, whatever [proxyhost] drain_timeout
 * says: a thread asked to stop gets a fair chance to return. */
#define THREADS_JOIN_MIN_MS 1000

/* Validates the arguments and the limits, then starts the OS thread,
 * which waits for threads_release before it calls run. NULL with *why
 * set (static text, for the log) when refused. */
ph_thread *threads_start(ph_ctx *ctx, const char *name, ph_thread_fn run,
                         ph_call_fn stop, void *arg, size_t queue,
                         const char **why);
/* After the init or start callback that started them returned: lets the
 * module's new threads call run (the handles the module stored are then
 * visible to them). */
void threads_release(ph_ctx *ctx);
/* Any thread. mailbox_post on t's own queue. */
int threads_post(ph_thread *t, ph_call_fn fn, void *arg, ph_free_fn free_arg);
/* stop(arg), wait for run to return (at most the drain deadline, else the
 * process exits 5), join, discard what is queued (free_arg only), free t.
 * A t already being joined is left alone. */
void threads_join(ph_thread *t);
/* threads_join for every thread of the module, with one deadline: every
 * stop is called first, then the threads are waited for. */
void threads_join_all(ph_ctx *ctx);
/* The module that started t. */
ph_ctx *threads_ctx(const ph_thread *t);
/* Blocks every asynchronous signal in the calling thread (saved: the old
 * mask), for pthread_create: helper and module threads must never take
 * SIGTERM, SIGHUP, SIGCHLD...; the loop thread handles them. The
 * synchronous faults stay deliverable to the thread that caused them. */
void threads_block_signals(sigset_t *saved);

#endif
