/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proxyhost SDK: the lease, an extension of an open (open_ext.h; part of
 * the connector contract, connector.h).
 *
 * A connector that keeps per-stream state (the pool: an upstream proxy's
 * capacity and outcome) needs to hear from the caller after a success
 * when the target's first byte reached the client and when the stream
 * ended. The caller says it will tell (ph_open_lease_ask in the
 * request's chain: ph_open_lease_request); a connector that needs a lease
 * refuses a caller without it with unsupported_capability, and answers a
 * success with the lease (ph_open_lease_res in the result's chain:
 * ph_open_result_lease reads it).
 *
 * Connector 1.3 to 1.4 carried the same as PH_OPEN_F_LEASE and
 * ph_open_result.lease; they stay for callers and connectors built
 * against them (SDK 1.6 and older): ph_open_lease_request sets the flag
 * as well, ph_open_result_lease reads the old field from an older
 * connector, and a connector answers the form asked (ph_open_lease_asked,
 * ph_open_lease_give).
 */
#ifndef PROXYHOST_OPEN_LEASE_H
#define PROXYHOST_OPEN_LEASE_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/connector.h>
#include <proxyhost/open_ext.h>

/* The caller owns the lease with the stream and calls, on the loop
 * thread:
 *  - first_byte(l), at most once: the target's first byte reached the
 *    client (the response began);
 *  - end(l, how), exactly once, when the stream is over (after or as the
 *    caller closes its socket or stream), also when it never relayed a
 *    byte. end frees the lease; the pointer is dead afterwards.
 * And, since connector 1.4, where the connector offers it (on_cut set):
 * on_cut(l, cut, arg) once the caller holds the stream, naming how the
 * connector may end it early: it calls cut(arg) at most once, on the
 * loop thread, never from inside a call into it (open, cancel, a lease
 * call), when the stream must not go on (the pool: its upstream proxy
 * left the gateway's view, or the view is stale, and the drain is over).
 * The caller then closes the stream and its client's connection at once
 * and ends the lease (CLIENT_ERROR: it says nothing about the target),
 * inside cut or soon after. A later on_cut replaces the earlier; cut
 * NULL withdraws it. */
enum ph_lease_end {
  PH_LEASE_END_CLOSED = 0,    /* finished cleanly (EOF both ways, or the
                                 caller was done with it) */
  PH_LEASE_END_TARGET_ERROR,  /* reading or writing the target's side
                                 failed (a reset, an error) */
  PH_LEASE_END_TIMEOUT,       /* nothing moved for the idle timeout */
  PH_LEASE_END_CLIENT_ERROR   /* the client's side failed or went away
                                 early: says nothing about the target */
};

typedef struct ph_open_lease_ops {
  uint32_t size; /* sizeof(ph_open_lease_ops) of the connector */
  void (*first_byte)(ph_open_lease *l);
  void (*end)(ph_open_lease *l, int how); /* enum ph_lease_end */
  /* Connector 1.4, was reserved[0]; NULL: the connector never cuts. */
  void (*on_cut)(ph_open_lease *l, void (*cut)(void *arg), void *arg);
  void *reserved[3];
} ph_open_lease_ops;

struct ph_open_lease {
  const ph_open_lease_ops *ops;
};

static inline void ph_open_lease_first_byte(ph_open_lease *l) {
  if (l)
    l->ops->first_byte(l);
}

/* NULL is a no-op. */
static inline void ph_open_lease_end(ph_open_lease *l, int how) {
  if (l)
    l->ops->end(l, how);
}

/* Tells the connector how to cut the stream (see on_cut above). 1 when
 * it took it, 0 when it never cuts (no hook, an older connector, NULL). */
static inline int ph_open_lease_on_cut(ph_open_lease *l,
                                       void (*cut)(void *arg), void *arg) {
  if (!l || l->ops->size < offsetof(ph_open_lease_ops, on_cut) +
                               sizeof(l->ops->on_cut) ||
      !l->ops->on_cut)
    return 0;
  l->ops->on_cut(l, cut, arg);
  return 1;
}

/* ---- the extension (connector 1.5) ------------------------------------ */

/* In a request's chain (PH_OPEN_EXT_LEASE_ASK): the caller honours a
 * lease. Nothing more; the caller's, read during open() only. */
typedef struct ph_open_lease_ask {
  ph_open_ext ext;
} ph_open_lease_ask;

/* In a success's chain (PH_OPEN_EXT_LEASE), to a request that asked: the
 * lease the caller must end. Ownership of the lease passes with the
 * socket or stream; the struct is the connector's, read during the
 * callback. */
typedef struct ph_open_lease_res {
  ph_open_ext ext;
  ph_open_lease *lease;
} ph_open_lease_res;

/* The caller: asks for a lease with x (which must live until open()
 * returns), and sets PH_OPEN_F_LEASE for a connector built against
 * connector 1.4 or older. */
static inline void ph_open_lease_request(ph_open_request *req,
                                         ph_open_lease_ask *x) {
  ph_open_ext_push(&req->ext, &x->ext, PH_OPEN_EXT_LEASE_ASK, sizeof(*x));
  req->flags |= PH_OPEN_F_LEASE;
}

/* The caller: a result's lease, from its chain or, from a connector
 * built against connector 1.4 or older, from its lease field; NULL when
 * it gave none. */
static inline ph_open_lease *ph_open_result_lease(const ph_open_result *res) {
  const ph_open_lease_res *x = (const ph_open_lease_res *)ph_open_ext_find(
      ph_open_result_ext(res), PH_OPEN_EXT_LEASE, sizeof(ph_open_lease_res));
  if (x)
    return x->lease;
  if (res->size >= offsetof(ph_open_result, lease) + sizeof(res->lease))
    return res->lease;
  return NULL;
}

/* The connector: how the request asked for a lease (enum ph_open_asked
 * bits); 0: the caller does not honour one. */
static inline int ph_open_lease_asked(const ph_open_request *req) {
  return ph_open_ext_asked(req, PH_OPEN_EXT_LEASE_ASK,
                           sizeof(ph_open_lease_ask), PH_OPEN_F_LEASE);
}

/* The connector: gives lease l in res in each form asked: x (the
 * connector's, living as long as the result) linked into its chain, and
 * the old field. */
static inline void ph_open_lease_give(ph_open_result *res,
                                      ph_open_lease_res *x, ph_open_lease *l,
                                      int asked) {
  if (asked & PH_OPEN_ASKED_EXT) {
    x->lease = l;
    ph_open_ext_push(&res->ext, &x->ext, PH_OPEN_EXT_LEASE, sizeof(*x));
  }
  if (asked & PH_OPEN_ASKED_FLAG)
    res->lease = l;
}

#endif
