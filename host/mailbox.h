/* SPDX-License-Identifier: BSD-2-Clause */
/* A bounded multi-producer queue of calls into the loop thread (ev_async).
 * Any thread may post; the loop runs the calls in posting order. */
#ifndef PH_MAILBOX_H
#define PH_MAILBOX_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/host.h>

struct ev_loop;
typedef struct ph_mailbox ph_mailbox;

/* capacity >= 1. full_counter (may be NULL) is incremented on PH_EFULL. */
ph_mailbox *mailbox_new(struct ev_loop *loop, size_t capacity,
                        ph_series *full_counter);
/* Any thread; never blocks. PH_OK (fn then free_arg will run on the loop)
 * or PH_EFULL (nothing taken). */
int mailbox_post(ph_mailbox *mb, ph_call_fn fn, void *arg,
                 ph_free_fn free_arg);
/* Loop thread: runs everything queued now (also what ev_async would). */
void mailbox_drain(ph_mailbox *mb);
uint64_t mailbox_full_count(const ph_mailbox *mb);
size_t mailbox_pending(ph_mailbox *mb);
/* Loop thread. Pending calls are not run; their free_arg is called. */
void mailbox_free(ph_mailbox *mb);

#endif
