/* SPDX-License-Identifier: BSD-2-Clause */
/* What a checker makes of the echo endpoint's answer (issue 26, CP-6-4;
 * modules/echo/echo_answer.h writes it): the nonce must be the one sent
 * (a proxy that serves a canned page fails), the egress address is the
 * address the echo saw, and the anonymity level follows from the
 * headers the proxy added:
 *  - TRANSPARENT: one of the checker's own addresses appears, as a whole
 *    token, in a forwarding header (X-Forwarded-For, Forwarded,
 *    X-Real-IP, Via, Client-IP, True-Client-IP, X-Client-IP,
 *    X-Originating-IP, X-Cluster-Client-IP, Forwarded-For, X-ProxyUser-Ip,
 *    CF-Connecting-IP, X-Forwarded-Host, X-Forwarded-Proto,
 *    X-Forwarded-Server, X-Proxy-ID, X-BlueCoat-Via, X-Tinyproxy);
 *  - ANONYMOUS: such a header without the checker's address;
 *  - ELITE: none of them.
 * Pure: no I/O, no allocation; any thread. Fuzzed by
 * t/fuzz/fuzz_chk_echo.c. */
#ifndef PH_CHK_ECHO_H
#define PH_CHK_ECHO_H

#include <stddef.h>

/* The longest echo body read (larger: bad_echo), and its tokens. */
#define CHK_ECHO_BODY_MAX 65536u
#define CHK_ECHO_TOKENS_MAX 512u
#define CHK_ADDR_MAX 46 /* INET6_ADDRSTRLEN */

/* The protocol's Anonymity numbers. */
enum chk_anonymity {
  CHK_ANON_UNSPECIFIED = 0,
  CHK_ANON_TRANSPARENT = 1,
  CHK_ANON_ANONYMOUS = 2,
  CHK_ANON_ELITE = 3
};

typedef struct chk_echo_result {
  char egress_ip[CHK_ADDR_MAX];
  int anonymity; /* enum chk_anonymity */
} chk_echo_result;

/* Reads body[0..len) (the JSON object). nonce: the one sent. own[0..n):
 * the checker's own addresses (literals; empty ones are skipped). PH_OK
 * (0) with *r filled, or -1 when the body is not an echo answer or its
 * nonce differs (reason "bad_echo"). */
int chk_echo_read(const char *body, size_t len, const char *nonce,
                  const char *const *own, size_t n_own, chk_echo_result *r);

/* 1 when addr (a literal) appears in s[0..n) as a whole token (the bytes
 * around it are not hex digits, '.' or ':'), else 0. */
int chk_addr_in(const char *s, size_t n, const char *addr);

#endif
