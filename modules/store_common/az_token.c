/* SPDX-License-Identifier: BSD-2-Clause */
/* Token ids, secrets, bearers and their hashes (az_token.h). */
#include "az_token.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#define ID_HEX 16

static const char b64url[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* n random bytes or -1: getrandom may return short reads on signals. */
static int random_bytes(unsigned char *out, size_t n) {
  size_t got = 0;
  for (int tries = 0; got < n && tries < 16; tries++) {
    ssize_t r = getrandom(out + got, n - got, 0);
    if (r > 0)
      got += (size_t)r;
    else if (r < 0 && errno != EINTR)
      break;
  }
  return got == n ? 0 : -1;
}

static int is_lower_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static int b64url_value(char c) {
  const char *p = c ? memchr(b64url, c, 64) : NULL;
  return p ? (int)(p - b64url) : -1;
}

int az_id_new(const char *prefix, char out[PH_AZ_ID_LEN + 1]) {
  static const char hex[] = "0123456789abcdef";
  unsigned char r[ID_HEX / 2];
  size_t pl = strlen(prefix);
  out[0] = '\0';
  if (pl + ID_HEX != PH_AZ_ID_LEN || random_bytes(r, sizeof(r)) < 0)
    return -1;
  memcpy(out, prefix, pl);
  for (size_t i = 0; i < sizeof(r); i++) {
    out[pl + 2 * i] = hex[r[i] >> 4];
    out[pl + 2 * i + 1] = hex[r[i] & 15];
  }
  out[PH_AZ_ID_LEN] = '\0';
  return 0;
}

int az_id_valid(const char *id, const char *prefix) {
  size_t pl = strlen(prefix);
  if (!id || strncmp(id, prefix, pl) != 0)
    return 0;
  for (size_t i = pl; i < PH_AZ_ID_LEN; i++)
    if (!is_lower_hex(id[i]))
      return 0;
  return id[PH_AZ_ID_LEN] == '\0';
}

int az_secret_new(char out[AZ_SECRET_LEN + 1]) {
  unsigned char r[AZ_SECRET_BYTES + 1]; /* 33 bytes: 44 chars, 43 kept */
  if (random_bytes(r, AZ_SECRET_BYTES) < 0) {
    az_wipe(out, AZ_SECRET_LEN + 1);
    az_wipe(r, sizeof(r));
    return -1;
  }
  r[AZ_SECRET_BYTES] = 0;
  /* 32 bytes = 10 groups of 3 (40 chars) + 2 bytes (3 chars). */
  size_t o = 0;
  for (size_t i = 0; i < 33; i += 3) {
    unsigned v = (unsigned)r[i] << 16 | (unsigned)r[i + 1] << 8 |
                 (i + 2 < 33 ? r[i + 2] : 0);
    char q[4] = {b64url[v >> 18 & 63], b64url[v >> 12 & 63],
                 b64url[v >> 6 & 63], b64url[v & 63]};
    for (int k = 0; k < 4 && o < AZ_SECRET_LEN; k++)
      out[o++] = q[k];
  }
  out[AZ_SECRET_LEN] = '\0';
  az_wipe(r, sizeof(r));
  return 0;
}

int az_secret_hash(const char *secret, size_t len,
                   char out[AZ_HASH_HEX_LEN + 1]) {
  static const char hex[] = "0123456789abcdef";
  unsigned char md[32];
  unsigned int n = 0;
  out[0] = '\0';
  EVP_MD_CTX *c = EVP_MD_CTX_new();
  int ok = c && EVP_DigestInit_ex(c, EVP_sha256(), NULL) == 1 &&
           EVP_DigestUpdate(c, secret, len) == 1 &&
           EVP_DigestFinal_ex(c, md, &n) == 1 && n == sizeof(md);
  EVP_MD_CTX_free(c);
  if (!ok)
    return -1;
  for (size_t i = 0; i < sizeof(md); i++) {
    out[2 * i] = hex[md[i] >> 4];
    out[2 * i + 1] = hex[md[i] & 15];
  }
  out[AZ_HASH_HEX_LEN] = '\0';
  return 0;
}

/* 43 base64url characters that are the one spelling of 32 bytes: the
 * last character holds 2 bits of padding, which must be zero. */
static int secret_valid(const char *s) {
  for (size_t i = 0; i < AZ_SECRET_LEN; i++)
    if (b64url_value(s[i]) < 0)
      return 0;
  return (b64url_value(s[AZ_SECRET_LEN - 1]) & 3) == 0;
}

int az_bearer_format(const char *id, const char *secret,
                     char out[AZ_BEARER_LEN + 1]) {
  out[0] = '\0';
  if (!az_id_valid(id, AZ_TOKEN_PREFIX) || !secret ||
      strnlen(secret, AZ_SECRET_LEN + 1) != AZ_SECRET_LEN ||
      !secret_valid(secret))
    return -1;
  memcpy(out, id, PH_AZ_ID_LEN);
  out[PH_AZ_ID_LEN] = '.';
  memcpy(out + PH_AZ_ID_LEN + 1, secret, AZ_SECRET_LEN);
  out[AZ_BEARER_LEN] = '\0';
  return 0;
}

int az_bearer_parse(const char *bearer, size_t len,
                    char id[PH_AZ_ID_LEN + 1],
                    char hash_hex[AZ_HASH_HEX_LEN + 1]) {
  char tmp[PH_AZ_ID_LEN + 1];
  id[0] = '\0';
  hash_hex[0] = '\0';
  if (!bearer || len != AZ_BEARER_LEN || bearer[PH_AZ_ID_LEN] != '.')
    return -1;
  memcpy(tmp, bearer, PH_AZ_ID_LEN);
  tmp[PH_AZ_ID_LEN] = '\0';
  const char *secret = bearer + PH_AZ_ID_LEN + 1;
  if (!az_id_valid(tmp, AZ_TOKEN_PREFIX) || !secret_valid(secret) ||
      az_secret_hash(secret, AZ_SECRET_LEN, hash_hex) < 0) {
    hash_hex[0] = '\0';
    return -1;
  }
  memcpy(id, tmp, sizeof(tmp));
  return 0;
}

int az_hash_eq(const char *a, const char *b) {
  if (!a || !b || strnlen(a, AZ_HASH_HEX_LEN + 1) != AZ_HASH_HEX_LEN ||
      strnlen(b, AZ_HASH_HEX_LEN + 1) != AZ_HASH_HEX_LEN)
    return 0;
  return CRYPTO_memcmp(a, b, AZ_HASH_HEX_LEN) == 0;
}

void az_wipe(void *p, size_t n) {
  if (p && n)
    OPENSSL_cleanse(p, n);
}
