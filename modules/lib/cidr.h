/* SPDX-License-Identifier: BSD-2-Clause */
/* IPv4/IPv6 addresses and CIDR prefixes: parse, convert from a socket
 * address, match. Pure (no I/O, no host API), shared by direct's target
 * policy and the frontends' client access list (client_acl.h).
 * IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) are IPv4 everywhere, so a
 * client of an IPv6 socket from 10.0.0.1 matches 10.0.0.0/8. */
#ifndef PH_CIDR_H
#define PH_CIDR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* An address of either family; IPv4 uses a[0..3]. */
typedef struct ip_addr {
  uint8_t fam; /* 4 or 6 */
  uint8_t a[16];
} ip_addr;

typedef struct ip_cidr {
  ip_addr net; /* host bits cleared */
  uint8_t bits;
} ip_cidr;

/* 16 IPv6 bytes; IPv4-mapped ones become IPv4. */
void ip_addr_from_v6(const uint8_t *b, ip_addr *out);
/* 0, or -1 for a family other than AF_INET/AF_INET6. port may be NULL. */
int ip_addr_from_sa(const struct sockaddr *sa, ip_addr *out, uint16_t *port);
/* A bare IPv4 or IPv6 address (no brackets). 0 or -1. */
int ip_addr_parse(const char *text, ip_addr *out);
static inline size_t ip_addr_len(const ip_addr *a) {
  return a->fam == 4 ? 4 : 16;
}
int ip_addr_eq(const ip_addr *x, const ip_addr *y);
int ip_addr_unspecified(const ip_addr *a);
/* 127.0.0.0/8 or ::1. */
int ip_addr_loopback(const ip_addr *a);
/* "10.0.0.0/8", "2001:db8::/32", "::ffff:10.0.0.0/104" (the IPv4
 * 10.0.0.0/8), or a bare address (/32, /128); at most 63 bytes. 0 or -1. */
int ip_cidr_parse(const char *text, ip_cidr *out);
int ip_cidr_match(const ip_cidr *c, const ip_addr *a);

#endif
