/* SPDX-License-Identifier: BSD-2-Clause */
/* One hexadecimal digit's value, for the parsers of network bytes (chunk
 * sizes, percent-escapes): 0..15, or -1 for anything else. */
#ifndef PH_LIB_HEX_H
#define PH_LIB_HEX_H

static inline int ph_hex_value(unsigned char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

#endif
