/* The service registry: named, versioned vtables registered by provider
 * modules, looked up by users, with use tracking so a provider cannot go
 * away under a user. Loop thread only. */
#ifndef PH_SERVICES_H
#define PH_SERVICES_H

#include <stdint.h>

typedef struct ph_services ph_services;

ph_services *services_new(void);
void services_free(ph_services *s);

/* owner is an opaque provider identity (the module ctx). PH_EEXIST when the
 * name is taken; PH_EINVAL on a bad name or NULL vtable. */
int services_register(ph_services *s, void *owner, const char *name,
                      uint16_t major, uint16_t minor, const void *vtable,
                      void *self);
/* NULL when missing or the version does not fit (major equal, minor >=
 * min_minor). Records user (once per user and service). */
const void *services_get(ph_services *s, void *user, const char *name,
                         uint16_t major, uint16_t min_minor, void **self);
void services_release(ph_services *s, void *user, const char *name);
/* PH_ENOENT, PH_EINVAL (not the owner), PH_EBUSY (users other than the
 * owner remain) or PH_OK. */
int services_unregister(ph_services *s, void *owner, const char *name);
/* Whether a service of that name is registered, and by whom. */
void *services_owner(ph_services *s, const char *name);
int services_users(ph_services *s, const char *name);

#endif
