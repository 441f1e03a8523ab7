/* SPDX-License-Identifier: BSD-2-Clause */
/* tm_memlink: two TunnelMesh sessions wired back to back in memory, for
 * the session layer's and the roles' unit tests (a tm_transport per end,
 * no WebSocket). Messages written by one end reach the other end from
 * the loop (a zero timer), one writable event per want_write, so the
 * sessions run exactly as over a real connection, and a test can:
 *   - hold the messages towards an end (tm_memlink_hold): a peer that is
 *     gone quiet;
 *   - never give an end its writable event (tm_memlink_block_writes): a
 *     peer that never reads, so that end's queues fill;
 *   - hand an end raw bytes as one message (tm_memlink_inject);
 *   - count the frames each end sent, by type, and see their order
 *     (tm_memlink_sent, tm_memlink_log);
 *   - break the connection (tm_memlink_fail).
 * Loop thread only. Ends are 0 and 1. */
#ifndef TM_MEMLINK_H
#define TM_MEMLINK_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/host.h>

#include "tunnel_common/session/tm_session.h"

typedef struct tm_memlink tm_memlink;

#define TM_MEMLINK_LOG 8192 /* frames remembered per end */

/* headroom: the transport's headroom (the memlink checks it is there by
 * writing into it). NULL: no memory. */
tm_memlink *tm_memlink_new(const ph_api *api, ph_ctx *ctx, size_t headroom);
/* Frees the link; its sessions must be gone (closed) first. */
void tm_memlink_free(tm_memlink *l);
/* The transport of end e, to give tm_session_new with targ = the link's
 * tm_memlink_targ(l, e). */
const tm_transport *tm_memlink_transport(tm_memlink *l);
void *tm_memlink_targ(tm_memlink *l, int e);
/* The session behind end e (after tm_session_new). */
void tm_memlink_attach(tm_memlink *l, int e, tm_session *s);

void tm_memlink_hold(tm_memlink *l, int e, int on);
void tm_memlink_block_writes(tm_memlink *l, int e, int on);
/* Calls end e's on_message now with len bytes (a test, not a callback). */
void tm_memlink_inject(tm_memlink *l, int e, const void *msg, size_t len);
/* Queues len bytes for end e as if its peer sent them: delivered from
 * the loop, in order, and held while e paused reading. */
void tm_memlink_queue(tm_memlink *l, int e, const void *msg, size_t len);
/* Frames end e sent so far: of one type (0: every type), their payload
 * bytes for DATA. */
uint64_t tm_memlink_sent(const tm_memlink *l, int e, int type);
uint64_t tm_memlink_data_bytes(const tm_memlink *l, int e);
/* The i-th frame end e sent (0-based, i < TM_MEMLINK_LOG): type, stream
 * id and payload length; 0 when there is none. */
int tm_memlink_log(const tm_memlink *l, int e, uint64_t i, uint32_t *id,
                   uint32_t *len);
/* Messages waiting for end e. */
size_t tm_memlink_pending(const tm_memlink *l, int e);
/* Whether end e's transport was closed by its session. */
int tm_memlink_closed(const tm_memlink *l, int e);
/* The connection fails: both sessions get on_transport_closed (those
 * still open). */
void tm_memlink_fail(tm_memlink *l);

#endif
