/* SPDX-License-Identifier: BSD-2-Clause */
/* libFuzzer target: what the authorization stores read from peers and
 * operators (modules/store_common): bearer tokens (az_bearer_parse, fed
 * by every authenticate call) and policy host patterns matched against
 * targets (az_pattern_valid, az_host_match).
 *
 * Input byte 0, bit 0: 0 parses the rest as a bearer; 1 splits the rest
 * at its first '\n' into a pattern and a target host. Contract checked:
 *   - a bearer parses only at exactly AZ_BEARER_LEN bytes, into a valid
 *     token id equal to its first 20 bytes and a 64-digit lower-case hex
 *     hash, and formatting that id with the secret gives the input back;
 *     a refused bearer leaves id and hash empty;
 *   - matching answers 0 or 1, the same when asked twice, the same for
 *     the lower-cased pattern and host; "*" matches every non-empty host;
 *     a valid pattern without '*' or '/' matches itself, and a valid
 *     "*.suffix" matches "a.suffix" but never "suffix". */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store_common/az_eval.h"
#include "store_common/az_token.h"
#include "store_common/az_validate.h"

#define FIELD_MAX 300

static void check_bearer(const char *b, size_t n) {
  char id[PH_AZ_ID_LEN + 1], hash[AZ_HASH_HEX_LEN + 1];
  int r = az_bearer_parse(b, n, id, hash);
  if (r != 0) {
    if (r != -1 || id[0] || hash[0])
      abort();
    return;
  }
  if (n != AZ_BEARER_LEN || !az_id_valid(id, AZ_TOKEN_PREFIX) ||
      memcmp(id, b, PH_AZ_ID_LEN) != 0 || strlen(hash) != AZ_HASH_HEX_LEN ||
      strspn(hash, "0123456789abcdef") != AZ_HASH_HEX_LEN)
    abort();
  char secret[AZ_SECRET_LEN + 1], again[AZ_BEARER_LEN + 1];
  memcpy(secret, b + PH_AZ_ID_LEN + 1, AZ_SECRET_LEN);
  secret[AZ_SECRET_LEN] = '\0';
  if (az_bearer_format(id, secret, again) != 0 ||
      memcmp(again, b, AZ_BEARER_LEN) != 0)
    abort();
  char h2[AZ_HASH_HEX_LEN + 1];
  if (az_secret_hash(secret, AZ_SECRET_LEN, h2) != 0 || !az_hash_eq(h2, hash))
    abort();
}

static void lower(char *s) {
  for (; *s; s++)
    *s = (char)tolower((unsigned char)*s);
}

static void check_match(const char *pattern, const char *host) {
  int m = az_host_match(pattern, host);
  if ((m != 0 && m != 1) || az_host_match(pattern, host) != m)
    abort();
  char lp[FIELD_MAX + 1], lh[FIELD_MAX + 1];
  strcpy(lp, pattern);
  strcpy(lh, host);
  lower(lp);
  lower(lh);
  if (az_host_match(lp, lh) != m)
    abort();
  if (*host && az_host_match("*", host) != 1)
    abort();
  if (!az_pattern_valid(pattern))
    return;
  if (!strchr(pattern, '*') && !strchr(pattern, '/') &&
      az_host_match(pattern, pattern) != 1)
    abort();
  if (pattern[0] == '*' && pattern[1] == '.') {
    char below[FIELD_MAX + 3] = "a";
    strcat(below, pattern + 1);
    if (az_host_match(pattern, below) != 1 ||
        az_host_match(pattern, pattern + 2) != 0)
      abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  const char *rest = (const char *)data + 1;
  size_t n = size - 1;
  if (!(data[0] & 1)) {
    /* A copy of exactly n bytes, so reading one more is caught. */
    char *b = malloc(n ? n : 1);
    if (!b)
      return 0;
    memcpy(b, rest, n);
    check_bearer(b, n);
    free(b);
    return 0;
  }
  const char *nl = memchr(rest, '\n', n);
  size_t pl = nl ? (size_t)(nl - rest) : n;
  size_t hl = nl ? n - pl - 1 : 0;
  if (pl > FIELD_MAX || hl > FIELD_MAX)
    return 0;
  char pattern[FIELD_MAX + 1], host[FIELD_MAX + 1];
  memcpy(pattern, rest, pl);
  pattern[pl] = '\0';
  if (hl)
    memcpy(host, nl + 1, hl);
  host[hl] = '\0';
  if (strlen(pattern) != pl || strlen(host) != hl)
    return 0; /* NULs inside: C strings cannot carry them */
  check_match(pattern, host);
  return 0;
}
