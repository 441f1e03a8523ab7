/* SPDX-License-Identifier: BSD-2-Clause */
/* libFuzzer target for the status reader's path and query parser
 * (host/status_query.c, status_parse): the input is "PATH?QUERY" after
 * "/v1/status". Besides memory safety: an accepted query names segments
 * of [a-z0-9_.], an offset within 0..10^9, a limit within 1..rows, a key
 * within PH_STATUS_VALUE_MAX bytes, every string inside the store; the
 * verdict is 0, 400 or 404. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void in_store(const char *s, const char *store, size_t cap) {
  if (s && (s < store || s + strlen(s) >= store + cap))
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *in = malloc(size ? size : 1);
  if (!in)
    return 0;
  memcpy(in, data, size);
  const char *q = memchr(in, '?', size);
  size_t plen = q ? (size_t)(q - in) : size;
  status_query sq;
  char store[512];
  int rc = status_parse(in, plen, q ? q + 1 : NULL,
                        q ? size - plen - 1 : 0, 7, &sq, store,
                        sizeof(store));
  if (rc != 0 && rc != 400 && rc != 404)
    abort();
  if (rc == 0) {
    in_store(sq.instance, store, sizeof(store));
    in_store(sq.panel, store, sizeof(store));
    in_store(sq.table, store, sizeof(store));
    if (sq.offset > STATUS_OFFSET_MAX || sq.limit < 1 || sq.limit > 7 ||
        sq.key_len > PH_STATUS_VALUE_MAX || (sq.key && !sq.table) ||
        (sq.panel && !sq.instance) || (sq.table && !sq.panel))
      abort();
    if (sq.key && (sq.key < store || sq.key + sq.key_len > store + sizeof(store)))
      abort();
  }
  free(in);
  return 0;
}
