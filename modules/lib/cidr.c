/* SPDX-License-Identifier: BSD-2-Clause */
/* Addresses and CIDR prefixes (cidr.h). */
#include "cidr.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

void ip_addr_from_v6(const uint8_t *b, ip_addr *out) {
  static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  memset(out, 0, sizeof(*out));
  if (memcmp(b, mapped, 12) == 0) {
    out->fam = 4;
    memcpy(out->a, b + 12, 4);
  } else {
    out->fam = 6;
    memcpy(out->a, b, 16);
  }
}

/* The socket address is copied with memcpy: callers hand in
 * sockaddr_storage objects written through other sockaddr types, which
 * must not be read through another struct type (strict aliasing). */
int ip_addr_from_sa(const struct sockaddr *sa, ip_addr *out, uint16_t *port) {
  sa_family_t fam;
  memcpy(&fam, (const char *)sa + offsetof(struct sockaddr, sa_family),
         sizeof(fam));
  memset(out, 0, sizeof(*out));
  if (fam == AF_INET) {
    struct sockaddr_in s4;
    memcpy(&s4, sa, sizeof(s4));
    out->fam = 4;
    memcpy(out->a, &s4.sin_addr, 4);
    if (port)
      *port = ntohs(s4.sin_port);
    return 0;
  }
  if (fam == AF_INET6) {
    struct sockaddr_in6 s6;
    memcpy(&s6, sa, sizeof(s6));
    ip_addr_from_v6(s6.sin6_addr.s6_addr, out);
    if (port)
      *port = ntohs(s6.sin6_port);
    return 0;
  }
  return -1;
}

int ip_addr_parse(const char *text, ip_addr *out) {
  memset(out, 0, sizeof(*out));
  if (inet_pton(AF_INET, text, out->a) == 1) {
    out->fam = 4;
    return 0;
  }
  uint8_t a6[16];
  if (inet_pton(AF_INET6, text, a6) == 1) {
    ip_addr_from_v6(a6, out);
    return 0;
  }
  return -1;
}

int ip_addr_eq(const ip_addr *x, const ip_addr *y) {
  return x->fam == y->fam && memcmp(x->a, y->a, ip_addr_len(x)) == 0;
}

int ip_addr_unspecified(const ip_addr *a) {
  static const uint8_t zero[16];
  return memcmp(a->a, zero, ip_addr_len(a)) == 0;
}

int ip_addr_loopback(const ip_addr *a) {
  static const uint8_t one6[16] = {0, 0, 0, 0, 0, 0, 0, 0,
                                   0, 0, 0, 0, 0, 0, 0, 1};
  if (a->fam == 4)
    return a->a[0] == 127;
  return memcmp(a->a, one6, 16) == 0;
}

int ip_cidr_match(const ip_cidr *c, const ip_addr *a) {
  if (c->net.fam != a->fam)
    return 0;
  size_t full = c->bits / 8;
  if (memcmp(c->net.a, a->a, full) != 0)
    return 0;
  unsigned rest = c->bits % 8;
  if (rest == 0)
    return 1;
  uint8_t mask = (uint8_t)(0xffu << (8 - rest));
  return (c->net.a[full] & mask) == (a->a[full] & mask);
}

int ip_cidr_parse(const char *text, ip_cidr *out) {
  char buf[64];
  size_t n = strlen(text);
  if (n == 0 || n >= sizeof(buf))
    return -1;
  memcpy(buf, text, n + 1);
  char *slash = strchr(buf, '/');
  long bits = -1;
  if (slash) {
    *slash = '\0';
    char *end;
    const char *digits = slash + 1;
    if (!isdigit((unsigned char)digits[0]) || strlen(digits) > 3)
      return -1;
    bits = strtol(digits, &end, 10);
    if (*end)
      return -1;
  }
  ip_cidr c;
  if (ip_addr_parse(buf, &c.net) < 0)
    return -1;
  long max = c.net.fam == 4 ? 32 : 128;
  /* "::ffff:10.0.0.0/104" is the IPv4 network 10.0.0.0/8. */
  if (slash && c.net.fam == 4 && strchr(buf, ':')) {
    if (bits < 96)
      return -1;
    bits -= 96;
  }
  if (bits < 0)
    bits = max;
  if (bits > max)
    return -1;
  c.bits = (uint8_t)bits;
  /* Clear the host bits so that matching only compares the prefix. */
  for (size_t i = 0; i < ip_addr_len(&c.net); i++) {
    long keep = bits - (long)i * 8;
    if (keep <= 0)
      c.net.a[i] = 0;
    else if (keep < 8)
      c.net.a[i] &= (uint8_t)(0xffu << (8 - keep));
  }
  *out = c;
  return 0;
}
