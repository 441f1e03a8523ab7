/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The agent's host-local guard (issue 22 item 5): an agent sits inside a
 * private network, and a server (or whoever holds a permissive policy on
 * it) must not reach the agent's own host through it. By default every
 * host-local destination is refused:
 *   - loopback (127.0.0.0/8, ::1),
 *   - unspecified / "this host" (0.0.0.0/8, ::),
 *   - link-local (169.254.0.0/16 with the cloud metadata address
 *     169.254.169.254, fe80::/10) and fd00:ec2::254 (the IPv6 metadata),
 *   - every address of this host's interfaces (getifaddrs, re-read at
 *     most every GUARD_REFRESH_MS).
 * IPv4-mapped IPv6 addresses are judged as the IPv4 address. The operator
 * opens what the agent must reach with targets.allow_host_local (CIDRs).
 *
 * The guard judges addresses, never names: the connector asks it about
 * each address it is about to connect to (ph_open_addr_filter), after DNS,
 * so a name that resolves to 127.0.0.1 is refused (DNS rebinding), and
 * the agent checks the connected socket's peer again (a connector that
 * ignores the filter). Loop thread only.
 */
#ifndef TM_TARGET_GUARD_H
#define TM_TARGET_GUARD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define GUARD_MAX_ALLOW 64        /* targets.allow_host_local entries */
#define GUARD_MAX_LOCAL 64        /* interface addresses remembered */
#define GUARD_REFRESH_MS 5000     /* interface addresses re-read */

typedef struct target_guard target_guard;

/* A guard without exceptions. NULL: no memory. */
target_guard *guard_new(void);
void guard_free(target_guard *g);
/* Adds one exception ("127.0.0.1", "10.0.0.0/8", "::1"). 0, -1 on bad
 * syntax, -2 when GUARD_MAX_ALLOW are already there. */
int guard_allow(target_guard *g, const char *cidr);
/* Replaces the host's own addresses (the caller reads the interfaces;
 * beyond GUARD_MAX_LOCAL they are ignored). */
void guard_clear_local(target_guard *g);
void guard_add_local(target_guard *g, const struct sockaddr *sa);
/* Re-reads the interfaces with getifaddrs when the last read is older
 * than GUARD_REFRESH_MS (now_ms: the loop's clock). */
void guard_refresh(target_guard *g, int64_t now_ms);

/* 1: sa may be dialled; 0: it is host-local and not opened (or not an
 * IP address at all). */
int guard_check(const target_guard *g, const struct sockaddr *sa);

#endif
