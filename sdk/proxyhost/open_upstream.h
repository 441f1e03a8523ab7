/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proxyhost SDK: the upstream hop of an open, an extension of its result
 * (open_ext.h; part of the connector contract, connector.h, since
 * connector 1.6).
 *
 * A connector that goes through a hop of its own choosing (the pool: an
 * upstream proxy picked for the request) names it, so that the caller
 * can say which one served or failed: in its access log, and in an
 * HTTP error's Proxy-Status next-hop (RFC 9209) where the operator
 * allows it. The connector puts a ph_open_upstream_res in the result's
 * chain (PH_OPEN_EXT_UPSTREAM), on a success or a failure, whenever it
 * had picked a hop; no request asks for it, and a caller that does not
 * know it skips it. A connector that dials the target itself adds none.
 *
 * id: the hop's name as the operator configured it (a pool proxy id:
 * [A-Za-z0-9._:-], 1..128 bytes, NUL-terminated); never an address or
 * a credential. The connector owns the struct and its bytes; they are
 * valid during the callback only: a caller that keeps the name copies
 * it.
 *
 * Threads: as connector.h (loop thread).
 */
#ifndef PROXYHOST_OPEN_UPSTREAM_H
#define PROXYHOST_OPEN_UPSTREAM_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/connector.h>
#include <proxyhost/open_ext.h>

/* The longest id a caller must take. */
#define PH_OPEN_UPSTREAM_ID_MAX 128

typedef struct ph_open_upstream_res {
  ph_open_ext ext;
  const char *id;
} ph_open_upstream_res;

/* The connector: links x, naming id (which must live until the callback
 * returns), into res's chain. */
static inline void ph_open_upstream_give(ph_open_result *res,
                                         ph_open_upstream_res *x,
                                         const char *id) {
  x->id = id;
  ph_open_ext_push(&res->ext, &x->ext, PH_OPEN_EXT_UPSTREAM, sizeof(*x));
}

/* The caller: the hop's id from the result's chain, or NULL (none
 * named, a connector older than 1.6, or an id out of bounds). */
static inline const char *ph_open_result_upstream(const ph_open_result *res) {
  const ph_open_upstream_res *x =
      (const ph_open_upstream_res *)ph_open_ext_find(
          ph_open_result_ext(res), PH_OPEN_EXT_UPSTREAM,
          sizeof(ph_open_upstream_res));
  if (!x || !x->id || !x->id[0])
    return NULL;
  size_t n = 0;
  while (x->id[n] && n <= PH_OPEN_UPSTREAM_ID_MAX)
    n++;
  return n <= PH_OPEN_UPSTREAM_ID_MAX ? x->id : NULL;
}

#endif
