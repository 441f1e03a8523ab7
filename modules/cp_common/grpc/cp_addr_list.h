/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The controller's address as a client gives it (issue 26 "Several
 * controllers"): one "host:port", or a list "a:port,b:port" of at most
 * CP_ADDR_LIST_MAX addresses of one controller group. A list is given to
 * gRPC as one channel over a static address list ("ipv4:a,b" or
 * "ipv6:[a]:p,[b]:p"), whose pick_first policy keeps one connection and,
 * when it breaks, connects to the first address that answers, the dead
 * one skipped, under the channel's reconnect backoff. So the addresses
 * of a list must be IP literals of one family (a name would need gRPC's
 * dns resolver, which takes one name: a name that resolves to several
 * addresses fails over the same way). Pure: no I/O, no allocation.
 */
#ifndef PH_CP_ADDR_LIST_H
#define PH_CP_ADDR_LIST_H

#include <stddef.h>

#define CP_ADDR_LIST_MAX 4
/* One address's bound ("[v6]:port"), and a list's with its commas. */
#define CP_ADDR_ONE_MAX 261
#define CP_ADDR_LIST_CHARS (CP_ADDR_LIST_MAX * (CP_ADDR_ONE_MAX + 1) - 1)

/* The number of addresses of list (1..CP_ADDR_LIST_MAX), or -1 with *why
 * (a static sentence, never the value): empty, an empty entry, an entry
 * not host:port with a port 1..65535, too many, the same address twice,
 * or, in a list of several, a name or two families. */
int cp_addr_list_check(const char *list, const char **why);

/* The i-th address of list (0-based) into out: 0, or -1 (no such one, or
 * it does not fit). */
int cp_addr_list_nth(const char *list, size_t i, char *out, size_t cap);

/* The gRPC target of a checked list: the address itself when it is one,
 * else "ipv4:" or "ipv6:" and the list. 0, or -1 when it does not fit. */
int cp_addr_list_target(const char *list, char *out, size_t cap);

/* 1 when every address of list is a loopback IP address (plaintext may
 * go only there: CP-1-12), else 0. */
int cp_addr_list_loopback(const char *list);

#endif
