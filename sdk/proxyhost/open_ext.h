/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proxyhost SDK: extensions of an open's request and result (connector
 * 1.5).
 *
 * What only some callers and some connectors share (a lease, HTTP
 * forwarding) is not a field of ph_open_request or ph_open_result: it is
 * a struct of its own, defined in its own header (open_lease.h,
 * open_http_forward.h), that begins with a ph_open_ext and is linked
 * into the request's or the result's chain (their `ext`). The idea is
 * Vulkan's pNext chain:
 *
 *  - type names the struct (PH_OPEN_EXT_*, below: one number per struct,
 *    never reused); size is sizeof that struct, header included, as its
 *    writer was built. A struct grows only at its end; a reader asks for
 *    the size it needs (ph_open_ext_find's min_size) and treats a
 *    shorter one as absent.
 *  - A reader skips a type it does not know. So a connector that does
 *    not know an extension ignores it, and a caller reading a result
 *    finds only what the connector knew.
 *  - The writer owns the structs: a request's chain is the caller's and
 *    is read during open() only (unless its header says longer); a
 *    result's is the connector's and is read during the callback (an
 *    extension's header says what outlives it).
 *  - At most PH_OPEN_EXT_MAX structs of a chain are looked at; the
 *    first of a type counts.
 *
 * Threads: as connector.h (loop thread).
 */
#ifndef PROXYHOST_OPEN_EXT_H
#define PROXYHOST_OPEN_EXT_H

#include <stddef.h>
#include <stdint.h>

typedef struct ph_open_ext {
  uint32_t type; /* PH_OPEN_EXT_*: the struct this header begins */
  uint32_t size; /* sizeof that struct, this header included */
  const struct ph_open_ext *next; /* the next in the chain, or NULL */
} ph_open_ext;

/* The types, one per struct. 0 is never a type. */
enum ph_open_ext_type {
  PH_OPEN_EXT_LEASE_ASK = 1,    /* request: open_lease.h */
  PH_OPEN_EXT_LEASE = 2,        /* result: open_lease.h */
  PH_OPEN_EXT_HTTP_FORWARD_ASK = 3, /* request: open_http_forward.h */
  PH_OPEN_EXT_HTTP_FORWARD = 4, /* result: open_http_forward.h */
  PH_OPEN_EXT_UPSTREAM = 5      /* result: open_upstream.h (connector 1.6) */
};

#define PH_OPEN_EXT_MAX 32

/* How a request asked for an extension (the connector's side of the
 * helpers in open_lease.h and open_http_forward.h): by its struct in the
 * chain, and/or by the flag of connector 1.4 and older, which a caller
 * also sets so that a connector built before the extension serves it.
 * A connector answers in each form asked. */
enum ph_open_asked {
  PH_OPEN_ASKED_EXT = 1, /* the extension's struct is in the chain */
  PH_OPEN_ASKED_FLAG = 2 /* the old request flag is set */
};

/* The first struct of type in chain, when it is at least min_size bytes
 * long; NULL when there is none, or it is shorter (a writer built before
 * the member the reader needs). */
static inline const ph_open_ext *ph_open_ext_find(const ph_open_ext *chain,
                                                  uint32_t type,
                                                  size_t min_size) {
  for (int n = 0; chain && n < PH_OPEN_EXT_MAX; chain = chain->next, n++)
    if (chain->type == type)
      return chain->size >= min_size ? chain : NULL;
  return NULL;
}

/* Links x (type, size) at the head of *chain. */
static inline void ph_open_ext_push(const ph_open_ext **chain, ph_open_ext *x,
                                    uint32_t type, size_t size) {
  x->type = type;
  x->size = (uint32_t)size;
  x->next = *chain;
  *chain = x;
}

#endif
