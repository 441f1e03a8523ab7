/* SPDX-License-Identifier: BSD-2-Clause */
/* What a connector's failed open says about a check (issue 26): the
 * checker dials proxies and its echo endpoint through a connector (a
 * `direct` instance: c-ares on the loop, happy eyeballs, its target
 * policy), as the gateway's pool dials upstreams (modules/pool/
 * pool_dial.c). Its failure, by stage and code (connector.h), becomes
 * the observation's status and reason:
 *  - dns, host_unreachable, not retryable (NXDOMAIN, no address): FAILED
 *    dial_unresolved: the proxy's name leads nowhere, the proxy's fault;
 *  - dns otherwise (SERVFAIL, REFUSED, no answer in dns_timeout):
 *    CHECKER_ERROR resolver_failed: the checker's resolver, no verdict;
 *  - policy: CHECKER_ERROR dial_forbidden (the checker's own policy);
 *  - queue, internal_error: CHECKER_ERROR no_resources;
 *  - connect: FAILED dial_refused / dial_unreachable, TIMEOUT
 *    dial_timeout, else FAILED dial_failed.
 * Pure; no I/O. */
#ifndef PH_CHK_DIAL_H
#define PH_CHK_DIAL_H

void chk_dial_verdict(int stage, int code, int retryable, int *status,
                      int *reason);

#endif
