/* SPDX-License-Identifier: BSD-2-Clause */
/* The service manager's readiness protocol (sd_notify(3)) without
 * libsystemd: one datagram per state change to the AF_UNIX socket named
 * by $NOTIFY_SOCKET (a path, or "@name" for the abstract namespace).
 * Without $NOTIFY_SOCKET every call does nothing. Loop thread only. */
#ifndef PH_HOST_NOTIFY_H
#define PH_HOST_NOTIFY_H

#include <ev.h>

/* Opens the socket (before a privilege drop, which could forbid it). 0,
 * or -1 when $NOTIFY_SOCKET is set but unusable (logged; the host runs
 * on, unannounced). */
int notify_open(void);
/* Sends the newline-separated assignments in state ("READY=1\nSTATUS=..").
 * 0 or -1 (a full socket is not waited for). */
int notify_send(const char *state);
/* READY=1 with a STATUS line once ready(arg) says so: checked now and
 * every 20 ms on loop until then. */
void notify_when_ready(struct ev_loop *loop, int (*ready)(void *arg),
                       void *arg);
/* RELOADING=1 with MONOTONIC_USEC (what systemd wants with it). */
void notify_reloading(void);
void notify_stopping(void);
void notify_close(void);

#endif
