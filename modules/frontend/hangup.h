/* SPDX-License-Identifier: BSD-2-Clause */
/* Noticing that a peer left while its socket is not read.
 *
 * A frontend stops reading a client whose buffer is full (while an open or
 * an authorization runs, say): the loop then never reports the client's
 * close, which sits behind the unread bytes. hangup_seen asks the kernel
 * directly; a frontend calls it every HANGUP_PROBE_MS while it does not
 * read, so a departing client frees its slot and cancels its open within
 * that time. (A client whose bytes also filled the kernel's receive window
 * cannot deliver its FIN at all until we read: that one is noticed when
 * the open ends, or at its timeout.) */
#ifndef PH_HANGUP_H
#define PH_HANGUP_H

/* How often a frontend that does not read a client asks hangup_seen. */
#define HANGUP_PROBE_MS 200

/* 1 when the peer of fd closed its side (or reset the connection), even
 * with unread bytes before the close; 0 otherwise. Does not block. */
int hangup_seen(int fd);

#endif
