/* SPDX-License-Identifier: BSD-2-Clause */
/* The direct connector's target policy: pure decisions (no I/O, no host
 * API) about whether a target may be dialled.
 *
 * Rules, in this order:
 *  1. deny_ports, deny_hosts, deny_cidrs and the process's own listeners
 *     always deny;
 *  2. allow_ports, when not empty, must contain the port;
 *  3. allow_hosts and allow_cidrs, when either is not empty, restrict the
 *     destination: a name matching allow_hosts is allowed whatever it
 *     resolves to (rule 1 still applies to every address), otherwise each
 *     address must be inside allow_cidrs. IP literals are not names: only
 *     allow_cidrs can allow them.
 *
 * Host patterns: "example.com" matches that name only; ".example.com"
 * matches example.com and every name under it. Names compare
 * case-insensitively without a trailing dot. CIDRs: "10.0.0.0/8",
 * "2001:db8::/32", or a bare address (/32, /128). IPv4-mapped IPv6
 * addresses (::ffff:a.b.c.d) are checked as the IPv4 address.
 *
 * Own listeners (learned from PH_LISTENER_TOPIC): a listener on a given
 * address denies that address and port; a listener on 0.0.0.0 or :: denies
 * its port on every loopback, unspecified or local address (both
 * families). The unspecified destinations (0.0.0.0, ::) reach the local
 * host, so they are treated as every listener's address. The names
 * "localhost" and "*.localhost" are checked before DNS as loopback. */
#ifndef PH_DIRECT_POLICY_H
#define PH_DIRECT_POLICY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define POLICY_MAX_RULES 256    /* per list (cidrs, hosts, ports) */
#define POLICY_MAX_LISTENERS 64 /* own listeners remembered */
#define POLICY_MAX_LOCAL 64     /* local interface addresses */
#define POLICY_MAX_NAME 253     /* a DNS name without the trailing dot */

typedef struct policy policy;

enum policy_list { POLICY_ALLOW = 0, POLICY_DENY = 1 };

/* Name-level verdicts. */
enum policy_verdict {
  POLICY_DENIED = 0,
  POLICY_PASS = 1,        /* addresses decide */
  POLICY_PASS_BY_NAME = 2 /* allow_hosts matched: only deny rules remain */
};

/* What a request's host is. */
enum policy_host_kind {
  POLICY_HOST_BAD = -1, /* not a valid name or literal */
  POLICY_HOST_NAME = 0,
  POLICY_HOST_LITERAL = 1
};

policy *policy_new(void);
void policy_free(policy *p);

/* Adds one rule to the allow or deny list. 0, -1 on bad syntax, -2 when
 * the list already holds POLICY_MAX_RULES rules. */
int policy_add_cidr(policy *p, int list, const char *text);
int policy_add_host(policy *p, int list, const char *pattern);
/* "443" or "8000-8999". */
int policy_add_ports(policy *p, int list, const char *text);
/* Whether own listeners deny (default on). */
void policy_set_deny_own(policy *p, int on);

/* A listener was bound (bound = 1) or closed (0). 0, -1 for an address
 * that is not AF_INET/AF_INET6 of the right length, -2 when
 * POLICY_MAX_LISTENERS are already known. Duplicates are counted, so a
 * listener closed once of two identical ones still denies. */
int policy_listener(policy *p, const struct sockaddr *sa, size_t len,
                    int bound);
/* Replaces the local interface addresses (used for wildcard listeners);
 * extra ones beyond POLICY_MAX_LOCAL are ignored. */
void policy_clear_local(policy *p);
void policy_add_local(policy *p, const struct sockaddr *sa);
/* Copies the learned state (listeners, local addresses) from src. */
void policy_copy_learned(policy *dst, const policy *src);
size_t policy_listener_count(const policy *p);

/* Classifies a request's host. A literal ("192.0.2.1", "2001:db8::1",
 * "[2001:db8::1]") is stored in *ss with the port. A name is normalised
 * (lower case, trailing dot removed) into name (POLICY_MAX_NAME + 1
 * bytes). */
int policy_parse_host(const char *host, uint16_t port,
                      struct sockaddr_storage *ss, char *name);

/* Checks the port and, when name is not NULL, the (normalised) name. */
int policy_check_name(const policy *p, const char *name, uint16_t port);
/* Checks one address (with its port set), after policy_check_name gave
 * verdict (POLICY_PASS or POLICY_PASS_BY_NAME). 1 allowed, 0 denied. */
int policy_check_addr(const policy *p, const struct sockaddr *sa, int verdict);

#endif
