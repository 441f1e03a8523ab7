/* SPDX-License-Identifier: BSD-2-Clause */
/* The two pure checks of the control plane's transport (cp_grpc.h): a
 * loopback address (CP-1-12, CP-9-9) and a peer's SPIFFE id (CP-8-2). No
 * gRPC, no allocation, no I/O: unit-tested and fuzzed alone. */
#include "cp_grpc.h"

#include <stdlib.h>
#include <string.h>

#include "lib/cidr.h"

/* The host of "host:port" or "[v6]:port" into out (NUL-terminated), the
 * port checked as 1..65535 digits (0 too: a listen address may ask for
 * one). 0, or -1 when malformed. */
static int split_host_port(const char *addr, char *out, size_t outlen) {
  const char *colon, *host = addr;
  size_t hl;
  if (!addr || !*addr)
    return -1;
  if (addr[0] == '[') {
    const char *rb = strchr(addr, ']');
    if (!rb || rb[1] != ':')
      return -1;
    host = addr + 1;
    hl = (size_t)(rb - host);
    colon = rb + 1;
  } else {
    colon = strrchr(addr, ':');
    if (!colon || memchr(addr, ':', (size_t)(colon - addr)))
      return -1; /* a bare IPv6 address needs brackets */
    hl = (size_t)(colon - addr);
  }
  if (hl == 0 || hl >= outlen)
    return -1;
  const char *p = colon + 1;
  size_t pl = strlen(p);
  if (pl == 0 || pl > 5)
    return -1;
  long port = 0;
  for (size_t i = 0; i < pl; i++) {
    if (p[i] < '0' || p[i] > '9')
      return -1;
    port = port * 10 + (p[i] - '0');
  }
  if (port > 65535)
    return -1;
  memcpy(out, host, hl);
  out[hl] = '\0';
  return 0;
}

int cp_addr_is_loopback(const char *addr) {
  char host[64];
  ip_addr a;
  if (split_host_port(addr, host, sizeof(host)) < 0)
    return 0;
  if (ip_addr_parse(host, &a) < 0)
    return 0;
  return ip_addr_loopback(&a) ? 1 : 0;
}

/* A part that may appear in an id: non-empty printable ASCII without
 * '/', '%' (no percent-encoding is ever decoded) or space. */
static int part_ok(const char *s, size_t n) {
  if (n == 0)
    return 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c <= 0x20 || c >= 0x7f || c == '/' || c == '%')
      return 0;
  }
  return 1;
}

/* Matches part exactly at *p (length remaining *n) followed by end or
 * '/' as last says; advances. */
static int eat(const char **p, size_t *n, const char *part, int last) {
  size_t pl = strlen(part);
  if (*n < pl || memcmp(*p, part, pl) != 0)
    return 0;
  *p += pl;
  *n -= pl;
  if (last)
    return *n == 0;
  if (*n == 0 || **p != '/')
    return 0;
  (*p)++;
  (*n)--;
  return 1;
}

int cp_spiffe_check(const char *uri, size_t uri_len, const char *trust_domain,
                    const char *environment, const char *role,
                    const char *id) {
  static const char scheme[] = "spiffe://";
  if (!uri || !trust_domain || !environment || !role || !id)
    return 0;
  if (strcmp(role, "worker") != 0 && strcmp(role, "checker") != 0)
    return 0;
  if (!part_ok(trust_domain, strlen(trust_domain)) ||
      !part_ok(environment, strlen(environment)) ||
      !part_ok(id, strlen(id)))
    return 0;
  /* Every byte of uri is checked, so a NUL or control byte anywhere
   * refuses even where a part would otherwise match. */
  for (size_t i = 0; i < uri_len; i++) {
    unsigned char c = (unsigned char)uri[i];
    if (c <= 0x20 || c >= 0x7f || c == '%')
      return 0;
  }
  if (uri_len < sizeof(scheme) - 1 ||
      memcmp(uri, scheme, sizeof(scheme) - 1) != 0)
    return 0;
  const char *p = uri + sizeof(scheme) - 1;
  size_t n = uri_len - (sizeof(scheme) - 1);
  return eat(&p, &n, trust_domain, 0) && eat(&p, &n, environment, 0) &&
         eat(&p, &n, role, 0) && eat(&p, &n, id, 1);
}

int cp_spiffe_id(const char *uri, size_t uri_len, const char *trust_domain,
                 const char *environment, const char *role, char *out,
                 size_t outlen) {
  if (!out || outlen == 0)
    return -1;
  out[0] = '\0';
  if (!uri || !trust_domain || !environment || !role)
    return -1;
  size_t tl = strlen(trust_domain), el = strlen(environment),
         rl = strlen(role), pre = 9 + tl + 1 + el + 1 + rl + 1;
  if (uri_len <= pre || uri_len - pre >= outlen)
    return -1;
  memcpy(out, uri + pre, uri_len - pre);
  out[uri_len - pre] = '\0';
  /* One rule: the candidate id must make the whole URI pass the check
   * (which also refuses a NUL, which would have cut out short). */
  if (strlen(out) != uri_len - pre ||
      !cp_spiffe_check(uri, uri_len, trust_domain, environment, role, out)) {
    out[0] = '\0';
    return -1;
  }
  return 0;
}
