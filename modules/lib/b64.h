/* SPDX-License-Identifier: BSD-2-Clause */
/* Base64 with the standard alphabet (RFC 4648 section 4): the Basic
 * credentials of http_proxy and the upstream kit, auth_local's password
 * hashes. Pure, any thread, no allocation. */
#ifndef PH_B64_H
#define PH_B64_H

#include <stddef.h>
#include <sys/types.h>

/* The characters b64_encode writes for n bytes, without the NUL. */
#define B64_LEN_PADDED(n) (4 * (((size_t)(n) + 2) / 3))
#define B64_LEN_UNPADDED(n) (((size_t)(n)*4 + 2) / 3)

/* Writes n bytes of in as base64 into out, padded with '=' to a multiple
 * of four characters when pad, else without padding, then a NUL: out
 * holds B64_LEN_PADDED(n) + 1 (or B64_LEN_UNPADDED(n) + 1) bytes. The
 * number of characters written, without the NUL. */
size_t b64_encode(const void *in, size_t n, char *out, int pad);

/* Decodes len characters of strict base64 into out (cap bytes): the
 * alphabet only, '=' padding optional at the end, no white space. The
 * number of bytes, or -1 on any other byte, a length no encoding has,
 * or when they do not fit in cap. */
ssize_t b64_decode(const char *in, size_t len, void *out, size_t cap);

#endif
