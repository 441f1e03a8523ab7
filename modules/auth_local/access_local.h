/* SPDX-License-Identifier: BSD-2-Clause */
/* auth_local's "access" service (<proxyhost/access.h>): any principal
 * auth_local knows may open any target; everyone else is denied with
 * "forbidden". The answer is computed when the check starts, under the
 * revision current then, and delivered on the next loop turn (the
 * host's defer, through lib/sflight). The revision is a counter auth_local bumps when a reload
 * changes its users. Loop thread only. */
#ifndef PH_AUTH_LOCAL_ACCESS_H
#define PH_AUTH_LOCAL_ACCESS_H

#include <stdint.h>

#include <proxyhost/access.h>
#include <proxyhost/module.h>

typedef struct auth_local_access auth_local_access;

/* Whether name is a known principal; owner as given to _new. */
typedef int (*auth_local_known_fn)(const void *owner, const char *name);

/* Declares the metric and the deferred call; revision starts at 1. NULL on
 * failure. */
auth_local_access *auth_local_access_new(ph_ctx *ctx, const ph_api *api,
                                         auth_local_known_fn known,
                                         const void *owner);
/* Drops undelivered answers without calling them (the host destroys the
 * users of a service first) and frees. NULL is ignored. */
void auth_local_access_free(auth_local_access *s);
/* The bound on checks waiting for their answer, and the ttl_ms of
 * verdicts from now on. */
void auth_local_access_configure(auth_local_access *s, int64_t max_pending,
                                 uint32_t ttl_ms);
/* The users changed: verdicts given so far are stale. */
void auth_local_access_bump(auth_local_access *s);
uint64_t auth_local_access_revision(const auth_local_access *s);

/* The vtable to register, with the auth_local_access as self. */
extern const ph_access_v1 auth_local_access_vt;

#endif
