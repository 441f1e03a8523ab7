/* SPDX-License-Identifier: BSD-2-Clause */
/* The service registry: named, versioned vtables registered by provider
 * modules, looked up by users, with use tracking so a provider cannot go
 * away under a user. Since ABI 1.2 a service name may have several
 * providers, told apart by the provider's instance name (socks5.public):
 * the registry is keyed by (service name, provider). Loop thread only. */
#ifndef PH_SERVICES_H
#define PH_SERVICES_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

typedef struct ph_services ph_services;

/* Bound on a provider (module instance) name, as the loader's. */
#define SERVICE_PROVIDER_MAX 97

ph_services *services_new(void);
void services_free(ph_services *s);

/* owner is an opaque provider identity (the module ctx); provider its
 * instance name, 1..SERVICE_PROVIDER_MAX bytes, copied. PH_EEXIST when
 * this provider already registered the name; PH_EINVAL on a bad service
 * name, a bad provider name or a NULL vtable; PH_ELIMIT when the table is
 * full. */
int services_register(ph_services *s, void *owner, const char *provider,
                      const char *name, uint16_t major, uint16_t minor,
                      const void *vtable, void *self);
/* The provider of name called `provider`, or (provider NULL or "") the
 * only provider of name. NULL when there is none, when the version does
 * not fit (major equal, minor >= min_minor), or when provider is NULL and
 * several are registered (fail closed); then, if why is not NULL, one line
 * (no newline) naming the providers is appended to why. Records user once
 * per user and provider. */
const void *services_get_named(ph_services *s, void *user, const char *name,
                               const char *provider, uint16_t major,
                               uint16_t min_minor, void **self, ph_buf *why);
/* services_get_named with provider NULL and no reason. */
const void *services_get(ph_services *s, void *user, const char *name,
                         uint16_t major, uint16_t min_minor, void **self);
/* Drops user's use of every provider of name it got. */
void services_release(ph_services *s, void *user, const char *name);
/* Removes owner's own registration of name. PH_ENOENT (no provider of
 * that name), PH_EINVAL (owner is not one of its providers), PH_EBUSY
 * (users other than the owner remain) or PH_OK. */
int services_unregister(ph_services *s, void *owner, const char *name);
/* The owner of name's provider `provider` (NULL or "": of the only
 * provider; NULL when there is none or several). */
void *services_owner(ph_services *s, const char *name, const char *provider);
/* Distinct users of that provider (same provider rule); 0 when none. */
int services_users(ph_services *s, const char *name, const char *provider);
/* How many providers registered name. */
size_t services_count(ph_services *s, const char *name);

#endif
