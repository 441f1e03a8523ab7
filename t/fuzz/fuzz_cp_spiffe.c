/* SPDX-License-Identifier: BSD-2-Clause */
/* Fuzz target: the control plane's peer identity check and loopback rule
 * (modules/cp_common/grpc/cp_ident.c, cp_grpc.h). Input byte 0, bit 0 picks
 * the role (worker or checker); then three lines give the expected
 * trust domain, environment and id; the rest, NUL bytes included, is the
 * URI SAN as a certificate would carry it. It checks that the verdict is
 * deterministic and equals a plain reference (the expected parts valid,
 * and the URI byte for byte "spiffe://td/env/role/id"), so no case
 * folding, decoding, trailing slash or extra segment ever passes; that
 * cp_spiffe_id reads out exactly the ids the check accepts; and
 * that cp_addr_is_loopback on the same bytes is deterministic and only
 * accepts text ending in ":<1..5 digits>" without white space. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cp_common/grpc/cp_grpc.h"

#define CHECK(c)                                                               \
  do {                                                                         \
    if (!(c)) {                                                                \
      fprintf(stderr, "fuzz_cp_spiffe: %s\n", #c);                             \
      abort();                                                                 \
    }                                                                          \
  } while (0)

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static int part_ok(const char *s) {
  if (!*s)
    return 0;
  for (; *s; s++)
    if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f || *s == '/' ||
        *s == '%')
      return 0;
  return 1;
}

/* The next line of data (up to '\n' or the end) as a NUL-terminated copy;
 * lines longer than 200 bytes are cut. */
static void line(const unsigned char **p, size_t *n, char *out) {
  size_t i = 0;
  while (*n && **p != '\n') {
    if (i < 200)
      out[i++] = (char)**p;
    (*p)++;
    (*n)--;
  }
  if (*n) {
    (*p)++;
    (*n)--;
  }
  out[i] = '\0';
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  if (size < 1)
    return 0;
  const char *role = (data[0] & 1) ? "checker" : "worker";
  const unsigned char *p = data + 1;
  size_t n = size - 1;
  char td[201], env[201], id[201];
  line(&p, &n, td);
  line(&p, &n, env);
  line(&p, &n, id);
  const char *uri = (const char *)p;
  int v = cp_spiffe_check(uri, n, td, env, role, id);
  CHECK(v == 0 || v == 1);
  CHECK(v == cp_spiffe_check(uri, n, td, env, role, id));

  int want = 0;
  if (part_ok(td) && part_ok(env) && part_ok(id)) {
    char exp[1024];
    int l = snprintf(exp, sizeof(exp), "spiffe://%s/%s/%s/%s", td, env, role,
                     id);
    want = l > 0 && (size_t)l == n && memcmp(exp, uri, n) == 0;
  }
  CHECK(v == want);

  /* cp_spiffe_id follows the same rule: an id read out passes the check,
   * and an id that passes is what is read out. */
  char got[64];
  int r = cp_spiffe_id(uri, n, td, env, role, got, sizeof(got));
  CHECK(r == 0 || r == -1);
  if (r == 0) {
    CHECK(*got && strlen(got) < sizeof(got));
    CHECK(cp_spiffe_check(uri, n, td, env, role, got) == 1);
  } else {
    CHECK(got[0] == '\0');
  }
  if (v == 1 && strlen(id) < sizeof(got))
    CHECK(r == 0 && strcmp(got, id) == 0);

  char *s = malloc(n + 1);
  if (!s)
    return 0;
  memcpy(s, uri, n);
  s[n] = '\0';
  int lb = cp_addr_is_loopback(s);
  CHECK(lb == cp_addr_is_loopback(s));
  if (lb) {
    size_t sl = strlen(s);
    const char *colon = strrchr(s, ':');
    CHECK(colon && sl - (size_t)(colon - s) - 1 >= 1 &&
          sl - (size_t)(colon - s) - 1 <= 5);
    for (const char *c = colon + 1; *c; c++)
      CHECK(*c >= '0' && *c <= '9');
    for (const char *c = s; *c; c++)
      CHECK(*c != ' ' && *c != '\t' && *c != '\n');
  }
  free(s);
  return 0;
}
