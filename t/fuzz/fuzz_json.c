/* SPDX-License-Identifier: BSD-2-Clause */
/* libFuzzer target for modules/lib/json.c.
 *
 * Besides memory safety it checks the reader's contract: tokens lie
 * inside the input, a container's subtree ends where its next says,
 * decoded strings are valid UTF-8 without NUL, and a document the reader
 * accepts, written again by the writer from its tokens, parses again to
 * the same shape (round trip). Input byte 0 picks the depth bound (1-16)
 * and byte 1 the token bound (1-256); the rest is the document. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"

static void check(int cond) {
  if (!cond)
    abort();
}

/* Writes token i and its subtree with the writer; the next index. */
static size_t rewrite(const json_doc *d, size_t i, json_w *w, char *scratch,
                      size_t cap) {
  const json_tok *t = &d->toks[i];
  switch (t->type) {
  case JSON_OBJECT:
  case JSON_ARRAY: {
    if (t->type == JSON_OBJECT)
      json_w_obj(w);
    else
      json_w_arr(w);
    size_t k = i + 1;
    for (uint32_t m = 0; m < t->size; m++) {
      if (t->type == JSON_OBJECT) {
        long n = json_str(d, k, scratch, cap);
        if (n < 0)
          w->failed = 1; /* a key holding NUL: not writable as C string */
        else
          json_w_key(w, scratch);
        k++;
      }
      k = rewrite(d, k, w, scratch, cap);
    }
    check(k == t->next);
    if (t->type == JSON_OBJECT)
      json_w_obj_end(w);
    else
      json_w_arr_end(w);
    return k;
  }
  case JSON_STRING: {
    long n = json_str(d, i, scratch, cap);
    if (n < 0)
      w->failed = 1;
    else
      json_w_strn(w, scratch, (size_t)n);
    return i + 1;
  }
  case JSON_NUMBER: {
    int64_t v;
    if (json_int(d, i, &v) == 0)
      json_w_int(w, v);
    else
      json_w_null(w); /* fractions: the writer has no doubles */
    return i + 1;
  }
  case JSON_TRUE:
  case JSON_FALSE:
    json_w_bool(w, t->type == JSON_TRUE);
    return i + 1;
  default:
    json_w_null(w);
    return i + 1;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2)
    return 0;
  size_t depth = (size_t)(data[0] % 16) + 1;
  size_t max_toks = (size_t)data[1] + 1;
  size_t len = size - 2;
  char *p = malloc(len ? len : 1);
  json_tok *toks = malloc(max_toks * sizeof(*toks));
  char *scratch = malloc(len + 1);
  char *out = malloc(4 * len + 64);
  json_tok *toks2 = malloc(max_toks * sizeof(*toks2));
  if (!p || !toks || !scratch || !out || !toks2)
    goto done;
  memcpy(p, data + 2, len);
  json_doc d;
  size_t off = 0;
  int rc = json_parse(&d, p, len, toks, max_toks, depth, &off);
  check(rc <= 0 && rc >= JSON_EDUP);
  if (rc != JSON_OK) {
    check(off <= len);
    goto done;
  }
  check(d.n >= 1 && d.n <= max_toks && d.toks[0].next == d.n);
  for (size_t i = 0; i < d.n; i++) {
    const json_tok *t = &d.toks[i];
    check(t->start <= t->end && t->end <= len);
    check(t->next > i && t->next <= d.n);
    if (t->type == JSON_STRING) {
      long n = json_str(&d, i, scratch, len + 1);
      if (n >= 0)
        check((size_t)n == strlen(scratch) && json_str_eq(&d, i, scratch));
    }
  }
  json_w w;
  json_w_init(&w, out, 4 * len + 64);
  rewrite(&d, 0, &w, scratch, len + 1);
  long n = json_w_finish(&w);
  if (n >= 0) {
    json_doc d2;
    check(json_parse(&d2, out, (size_t)n, toks2, max_toks, depth, NULL) ==
          JSON_OK);
    check(d2.n == d.n);
    for (size_t i = 0; i < d.n; i++)
      check(d2.toks[i].size == d.toks[i].size &&
            d2.toks[i].next == d.toks[i].next);
  }
done:
  free(p);
  free(toks);
  free(scratch);
  free(out);
  free(toks2);
  return 0;
}
