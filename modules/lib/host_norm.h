/* SPDX-License-Identifier: BSD-2-Clause */
/* The normal form of a target host (TM-P1-4), the one the "access"
 * contract asks for (<proxyhost/access.h>): a DNS name in lower case
 * without a trailing dot, or an IP address in its standard text form
 * (what inet_ntop prints; IPv6 without brackets). Two spellings of one
 * target have one normal form, so a cache keyed by it is exact.
 * Pure functions, any thread. */
#ifndef PH_HOST_NORM_H
#define PH_HOST_NORM_H

#include <stddef.h>

/* The longest host, in bytes, without the NUL (the contract's bound). */
#define HOST_NORM_MAX 255

/* Writes the normal form of in into out (HOST_NORM_MAX + 1 bytes): an
 * IPv4 or IPv6 literal (brackets allowed around IPv6) as inet_ntop
 * prints it, or a name (letters, digits, '-', '_', labels of 1..63
 * bytes, one trailing dot allowed) lower-cased without the dot.
 * 0, or -1 when in is NULL, empty, too long or neither. */
int host_norm(const char *in, char *out);

/* The name rules (the direct connector's target policy uses them too):
 * in[0..n) without one trailing dot is letters, digits, '-' and '_' in
 * dot-separated labels of 1..63 bytes; written lower-case into out (n + 1
 * bytes; NULL: only checked). 0, or -1 when it is not such a name. */
int host_norm_name(const char *in, size_t n, char *out);

/* 1 when h is already in normal form (host_norm(h) == h), else 0. */
int host_norm_ok(const char *h);

#endif
