/* SPDX-License-Identifier: BSD-2-Clause */
/* The service registry. A bounded table of (service, provider) entries,
 * each with a small set of users: a user is recorded once however many
 * times it gets that provider, and one services_release drops it. Loop
 * thread only. */
#include "services.h"

#include <stdlib.h>
#include <string.h>

#include <proxyhost/abi.h>

#define SERVICES_MAX 256
#define SERVICE_NAME_MAX 64
/* Providers named in one "several providers" reason. */
#define WHY_PROVIDERS_MAX 8

typedef struct service {
  char name[SERVICE_NAME_MAX + 1];
  char provider[SERVICE_PROVIDER_MAX + 1];
  uint16_t major, minor;
  void *owner;
  const void *vtable;
  void *self;
  void **users; /* distinct users, unordered */
  size_t n_users, cap_users;
} service;

struct ph_services {
  service *items[SERVICES_MAX]; /* registration order */
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

/* 1..max bytes of [a-z0-9_] plus the characters in extra. */
static int name_ok(const char *name, size_t max, const char *extra) {
  if (!name)
    return 0;
  size_t n = 0;
  for (const char *c = name; *c; c++, n++) {
    if (n >= max)
      return 0;
    int ok = (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
             *c == '_' || strchr(extra, *c) != NULL;
    if (!ok)
      return 0;
  }
  return n >= 1;
}

static int any_provider(const char *provider) {
  return !provider || !*provider;
}

/* Index of (name, provider), or SIZE_MAX. */
static size_t services_index(ph_services *s, const char *name,
                             const char *provider) {
  for (size_t i = 0; i < s->n; i++)
    if (strcmp(s->items[i]->name, name) == 0 &&
        strcmp(s->items[i]->provider, provider) == 0)
      return i;
  return SIZE_MAX;
}

size_t services_count(ph_services *s, const char *name) {
  size_t n = 0;
  for (size_t i = 0; s && name && i < s->n; i++)
    n += strcmp(s->items[i]->name, name) == 0;
  return n;
}

/* The only provider of name (NULL when none or several), or the named
 * one. */
static service *services_lookup(ph_services *s, const char *name,
                                const char *provider) {
  if (!s || !name)
    return NULL;
  if (!any_provider(provider)) {
    size_t i = services_index(s, name, provider);
    return i == SIZE_MAX ? NULL : s->items[i];
  }
  service *found = NULL;
  for (size_t i = 0; i < s->n; i++)
    if (strcmp(s->items[i]->name, name) == 0) {
      if (found)
        return NULL;
      found = s->items[i];
    }
  return found;
}

int services_register(ph_services *s, void *owner, const char *provider,
                      const char *name, uint16_t major, uint16_t minor,
                      const void *vtable, void *self) {
  if (!s || !vtable || !name_ok(name, SERVICE_NAME_MAX, ".-") ||
      !name_ok(provider, SERVICE_PROVIDER_MAX, "."))
    return PH_EINVAL;
  if (services_index(s, name, provider) != SIZE_MAX)
    return PH_EEXIST;
  if (s->n >= SERVICES_MAX)
    return PH_ELIMIT;
  service *sv = calloc(1, sizeof(*sv));
  if (!sv)
    return PH_ENOMEM;
  strcpy(sv->name, name); /* lengths checked by name_ok */
  strcpy(sv->provider, provider);
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

/* "service "connector" has 2 providers (direct, memconn): ..." */
static void why_several(ph_services *s, const char *name, size_t count,
                        ph_buf *why) {
  buf_printf(why, "service \"%s\" has %zu providers (", name, count);
  size_t shown = 0;
  for (size_t i = 0; i < s->n && shown < WHY_PROVIDERS_MAX; i++)
    if (strcmp(s->items[i]->name, name) == 0)
      buf_printf(why, "%s%s", shown++ ? ", " : "", s->items[i]->provider);
  buf_printf(why, "%s): name the one to use in the configuration",
             count > shown ? ", ..." : "");
}

const void *services_get_named(ph_services *s, void *user, const char *name,
                               const char *provider, uint16_t major,
                               uint16_t min_minor, void **self, ph_buf *why) {
  if (!s || !name)
    return NULL;
  service *sv = services_lookup(s, name, provider);
  if (!sv) {
    size_t count = any_provider(provider) ? services_count(s, name) : 0;
    if (count > 1 && why)
      why_several(s, name, count, why);
    return NULL;
  }
  if (sv->major != major || sv->minor < min_minor)
    return NULL;
  /* Without a record of the use the provider could leave under the user,
   * so a failure to record is a failed lookup. */
  if (service_add_user(sv, user) != 0)
    return NULL;
  if (self)
    *self = sv->self;
  return sv->vtable;
}

const void *services_get(ph_services *s, void *user, const char *name,
                         uint16_t major, uint16_t min_minor, void **self) {
  return services_get_named(s, user, name, NULL, major, min_minor, self, NULL);
}

void services_release(ph_services *s, void *user, const char *name) {
  for (size_t k = 0; s && name && k < s->n; k++) {
    service *sv = s->items[k];
    if (strcmp(sv->name, name) != 0)
      continue;
    size_t i = service_user_index(sv, user);
    if (i != SIZE_MAX)
      sv->users[i] = sv->users[--sv->n_users];
  }
}

int services_unregister(ph_services *s, void *owner, const char *name) {
  if (!s || !name || services_count(s, name) == 0)
    return PH_ENOENT;
  size_t i = 0;
  while (i < s->n &&
         !(strcmp(s->items[i]->name, name) == 0 && s->items[i]->owner == owner))
    i++;
  if (i == s->n)
    return PH_EINVAL; /* registered, but by others */
  service *sv = s->items[i];
  if (service_has_other_users(sv))
    return PH_EBUSY;
  service_free(sv);
  /* Keep registration order: lookups are linear anyway. */
  memmove(&s->items[i], &s->items[i + 1], (s->n - i - 1) * sizeof(s->items[0]));
  s->n--;
  return PH_OK;
}

void *services_owner(ph_services *s, const char *name, const char *provider) {
  service *sv = services_lookup(s, name, provider);
  return sv ? sv->owner : NULL;
}

/* Distinct users (the owner included if it got its own service). */
int services_users(ph_services *s, const char *name, const char *provider) {
  service *sv = services_lookup(s, name, provider);
  return sv ? (int)sv->n_users : 0;
}
