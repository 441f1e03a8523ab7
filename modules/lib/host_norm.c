/* SPDX-License-Identifier: BSD-2-Clause */
/* Target host normal form (host_norm.h). */
#include "host_norm.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <string.h>

/* An address literal, printed back in its standard form. 0 or -1. */
static int norm_literal(const char *in, size_t n, char *out) {
  char lit[INET6_ADDRSTRLEN + 1];
  unsigned char addr[16];
  int bracketed = n >= 2 && in[0] == '[' && in[n - 1] == ']';
  const char *p = bracketed ? in + 1 : in;
  size_t len = bracketed ? n - 2 : n;
  if (len == 0 || len >= sizeof(lit))
    return -1;
  memcpy(lit, p, len);
  lit[len] = '\0';
  if (!bracketed && inet_pton(AF_INET, lit, addr) == 1)
    return inet_ntop(AF_INET, addr, out, HOST_NORM_MAX + 1) ? 0 : -1;
  if (inet_pton(AF_INET6, lit, addr) == 1)
    return inet_ntop(AF_INET6, addr, out, HOST_NORM_MAX + 1) ? 0 : -1;
  return -1;
}

int host_norm_name(const char *in, size_t n, char *out) {
  if (n > 0 && in[n - 1] == '.')
    n--;
  if (n == 0)
    return -1;
  size_t label = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)in[i];
    if (ch == '.') {
      if (label == 0)
        return -1;
      label = 0;
    } else if (isalnum(ch) || ch == '-' || ch == '_') {
      if (++label > 63)
        return -1;
    } else {
      return -1;
    }
    if (out)
      out[i] = (char)tolower(ch);
  }
  if (label == 0)
    return -1;
  if (out)
    out[n] = '\0';
  return 0;
}

int host_norm(const char *in, char *out) {
  if (!in || !out)
    return -1;
  size_t n = strnlen(in, HOST_NORM_MAX + 1);
  if (n == 0 || n > HOST_NORM_MAX)
    return -1;
  /* A name has no ':' and an all-digit last label is no name (RFC 1123
   * 2.1): try the literal first, so "1.2.3.4" is an address. */
  if (norm_literal(in, n, out) == 0)
    return 0;
  if (strchr(in, ':') || in[0] == '[')
    return -1;
  return host_norm_name(in, n, out);
}

int host_norm_ok(const char *h) {
  char out[HOST_NORM_MAX + 1];
  return host_norm(h, out) == 0 && strcmp(out, h) == 0;
}
