/* SPDX-License-Identifier: BSD-2-Clause */
/* Listen addresses: the one parser for the host's [admin] listen and,
 * through ph_api.parse_listen_addr, for every module's listen keys. */
#ifndef PH_ADDR_H
#define PH_ADDR_H

#include <stddef.h>
#include <sys/socket.h>

/* "IPv4:PORT" or "[IPv6]:PORT", numeric only (no DNS at start-up), port
 * 0-65535. Fills *ss and *len and returns 0, or returns PH_EINVAL with a
 * one-line reason quoting the address in why (truncated to whylen).
 * Pure: any thread. */
int addr_parse_listen(const char *s, struct sockaddr_storage *ss,
                      socklen_t *len, char *why, size_t whylen);

#endif
