/* SPDX-License-Identifier: BSD-2-Clause */
/* Base64 (b64.h). */
#include "b64.h"

#include <stdint.h>

static const char alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t b64_encode(const void *in, size_t n, char *out, int pad) {
  const unsigned char *p = in;
  size_t o = 0;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)p[i] << 16;
    if (i + 1 < n)
      v |= (uint32_t)p[i + 1] << 8;
    if (i + 2 < n)
      v |= p[i + 2];
    out[o++] = alphabet[(v >> 18) & 63];
    out[o++] = alphabet[(v >> 12) & 63];
    if (i + 1 < n)
      out[o++] = alphabet[(v >> 6) & 63];
    else if (pad)
      out[o++] = '=';
    if (i + 2 < n)
      out[o++] = alphabet[v & 63];
    else if (pad)
      out[o++] = '=';
  }
  out[o] = '\0';
  return o;
}

static int value(unsigned char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+')
    return 62;
  if (c == '/')
    return 63;
  return -1;
}

ssize_t b64_decode(const char *in, size_t len, void *out, size_t cap) {
  unsigned char *o = out;
  while (len > 0 && in[len - 1] == '=' && len % 4 != 1)
    len--;
  if (len % 4 == 1)
    return -1;
  size_t n = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < len; i++) {
    int v = value((unsigned char)in[i]);
    if (v < 0)
      return -1;
    acc = (acc << 6) | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      if (n >= cap)
        return -1;
      o[n++] = (unsigned char)((acc >> bits) & 0xff);
    }
  }
  return (ssize_t)n;
}
