/* The service registry. A bounded table of services, each with a small set
 * of users: a user is recorded once however many times it calls
 * services_get, and one services_release drops it. Loop thread only. */
#include "services.h"

#include <stdlib.h>
#include <string.h>

#include <proxyhost/abi.h>

#define SERVICES_MAX 256
#define SERVICE_NAME_MAX 64

typedef struct service {
  char name[SERVICE_NAME_MAX + 1];
  uint16_t major, minor;
  void *owner;
  const void *vtable;
  void *self;
  void **users; /* distinct users, unordered */
  size_t n_users, cap_users;
} service;

struct ph_services {
  service *items[SERVICES_MAX];
  size_t n;
};

ph_services *services_new(void) { return calloc(1, sizeof(ph_services)); }

static void service_free(service *sv) {
  free(sv->users);
  free(sv);
}

void services_free(ph_services *s) {
  if (!s)
    return;
  for (size_t i = 0; i < s->n; i++)
    service_free(s->items[i]);
  free(s);
}

/* 1..64 bytes of [a-z0-9_.-]. */
static int service_name_ok(const char *name) {
  if (!name)
    return 0;
  size_t n = 0;
  for (const char *c = name; *c; c++, n++) {
    if (n >= SERVICE_NAME_MAX)
      return 0;
    int ok = (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
             *c == '_' || *c == '.' || *c == '-';
    if (!ok)
      return 0;
  }
  return n >= 1;
}

static size_t services_index(ph_services *s, const char *name) {
  for (size_t i = 0; i < s->n; i++)
    if (strcmp(s->items[i]->name, name) == 0)
      return i;
  return SIZE_MAX;
}

static service *services_lookup(ph_services *s, const char *name) {
  if (!s || !name)
    return NULL;
  size_t i = services_index(s, name);
  return i == SIZE_MAX ? NULL : s->items[i];
}

int services_register(ph_services *s, void *owner, const char *name,
                      uint16_t major, uint16_t minor, const void *vtable,
                      void *self) {
  if (!s || !vtable || !service_name_ok(name))
    return PH_EINVAL;
  if (services_lookup(s, name))
    return PH_EEXIST;
  if (s->n >= SERVICES_MAX)
    return PH_ELIMIT;
  service *sv = calloc(1, sizeof(*sv));
  if (!sv)
    return PH_ENOMEM;
  strcpy(sv->name, name); /* length checked by service_name_ok */
  sv->major = major;
  sv->minor = minor;
  sv->owner = owner;
  sv->vtable = vtable;
  sv->self = self;
  s->items[s->n++] = sv;
  return PH_OK;
}

/* ---- users ------------------------------------------------------------- */

static size_t service_user_index(const service *sv, const void *user) {
  for (size_t i = 0; i < sv->n_users; i++)
    if (sv->users[i] == user)
      return i;
  return SIZE_MAX;
}

/* Records user once. 0, or -1 when out of memory. */
static int service_add_user(service *sv, void *user) {
  if (service_user_index(sv, user) != SIZE_MAX)
    return 0;
  if (sv->n_users == sv->cap_users) {
    size_t cap = sv->cap_users ? sv->cap_users * 2 : 4;
    void **users = realloc(sv->users, cap * sizeof(*users));
    if (!users)
      return -1;
    sv->users = users;
    sv->cap_users = cap;
  }
  sv->users[sv->n_users++] = user;
  return 0;
}

static int service_has_other_users(const service *sv) {
  for (size_t i = 0; i < sv->n_users; i++)
    if (sv->users[i] != sv->owner)
      return 1;
  return 0;
}

const void *services_get(ph_services *s, void *user, const char *name,
                         uint16_t major, uint16_t min_minor, void **self) {
  service *sv = services_lookup(s, name);
  if (!sv || sv->major != major || sv->minor < min_minor)
    return NULL;
  /* Without a record of the use the provider could leave under the user,
   * so a failure to record is a failed lookup. */
  if (service_add_user(sv, user) != 0)
    return NULL;
  if (self)
    *self = sv->self;
  return sv->vtable;
}

void services_release(ph_services *s, void *user, const char *name) {
  service *sv = services_lookup(s, name);
  if (!sv)
    return;
  size_t i = service_user_index(sv, user);
  if (i == SIZE_MAX)
    return;
  sv->users[i] = sv->users[--sv->n_users];
}

int services_unregister(ph_services *s, void *owner, const char *name) {
  if (!s || !name)
    return PH_ENOENT;
  size_t i = services_index(s, name);
  if (i == SIZE_MAX)
    return PH_ENOENT;
  service *sv = s->items[i];
  if (sv->owner != owner)
    return PH_EINVAL;
  if (service_has_other_users(sv))
    return PH_EBUSY;
  service_free(sv);
  /* Keep registration order: lookups are linear anyway. */
  memmove(&s->items[i], &s->items[i + 1],
          (s->n - i - 1) * sizeof(s->items[0]));
  s->n--;
  return PH_OK;
}

void *services_owner(ph_services *s, const char *name) {
  service *sv = services_lookup(s, name);
  return sv ? sv->owner : NULL;
}

/* Distinct users (the owner included if it got its own service); 0 when
 * the service is not registered. */
int services_users(ph_services *s, const char *name) {
  service *sv = services_lookup(s, name);
  return sv ? (int)sv->n_users : 0;
}
