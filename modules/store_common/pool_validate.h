/* SPDX-License-Identifier: BSD-2-Clause */
/* Validation of "pool.store" requests (sdk/proxyhost/pool_store.h) before
 * anything touches a database: every field of a proxy, a route and a
 * credential reference against the PH_POOL_* bounds, and which actions
 * each kind takes. Pure, any thread; both stores and the admin API call
 * it, so one request is refused the same way by all three.
 *
 * Every function returns PH_OK, or PH_EINVAL with *detail (when detail is
 * not NULL) set to a short static reason naming the field ("port must be
 * 1..65535"); it never quotes the request (a refused value may be a
 * secret pasted in the wrong field). */
#ifndef PH_STORE_POOL_VALIDATE_H
#define PH_STORE_POOL_VALIDATE_H

#include <stddef.h>

#include <proxyhost/abi.h>
#include <proxyhost/pool_store.h>

/* An id or a name: 1..max bytes of [a-z0-9._-], the first a letter or a
 * digit (so a secret_ref is also a safe file name: no '/', no "..").
 * 1 or 0. */
int pool_name_valid(const char *s, size_t max);

/* A route's host pattern: "*", a host in normal form (host_norm.h), or
 * "*." and a name in normal form. 1 or 0. */
int pool_pattern_valid(const char *p);

/* A sticky key: "" (none), "username", or "header:<Name>" with Name an
 * HTTP token. 1 or 0. */
int pool_sticky_valid(const char *k);

/* Every field of a row (a proxy's credential_version is not read: it is
 * its credential's). */
int pool_validate_proxy(const ph_pool_proxy_row *p, const char **detail);
int pool_validate_route(const ph_pool_route_row *r, const char **detail);
int pool_validate_credential(const ph_pool_credential_ref *c,
                             const char **detail);

/* A write: size, kind, action, and the fields the action reads (a DELETE
 * only the key; MOVE the key and the position; SET_STATE the key and the
 * admin state; ROTATE the secret_ref). */
int pool_validate_write(const ph_pool_write *w, const char **detail);

/* A list: kind, limit, the cursors and the key. */
int pool_validate_list(const ph_pool_list *l, const char **detail);

#endif
