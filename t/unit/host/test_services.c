/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for host/services.c. */
#include <stdio.h>
#include <string.h>

#include <proxyhost/abi.h>

#include "services.h"
#include "tap.h"

typedef struct greeter_v1 {
  int (*greet)(void *self);
} greeter_v1;

static int greet(void *self) { return *(int *)self; }

static const greeter_v1 vt = {greet};

/* Opaque identities, as module ctx pointers would be. */
static int provider, user_a, user_b;

static void test_register_get(void) {
  ph_services *s = services_new();
  int state = 42;
  is_int(services_register(s, &provider, "prov", "greeter", 1, 2, &vt, &state),
         PH_OK, "register");
  is_int(services_register(s, &user_a, "prov", "greeter", 1, 3, &vt, NULL),
         PH_EEXIST, "duplicate name is PH_EEXIST");
  ok(services_owner(s, "greeter", NULL) == &provider, "owner recorded");
  ok(services_owner(s, "other", NULL) == NULL, "no owner for a missing name");

  void *self = NULL;
  const greeter_v1 *g = services_get(s, &user_a, "greeter", 1, 2, &self);
  ok(g == &vt, "get returns the vtable");
  ok(self == &state, "get stores the provider's self");
  is_int(g ? g->greet(self) : -1, 42, "calls go through the vtable");

  ok(services_get(s, &user_a, "greeter", 1, 0, NULL) == &vt,
     "an older minor is fine (and self may be NULL)");
  ok(services_get(s, &user_b, "greeter", 1, 3, NULL) == NULL,
     "a newer minor than provided is refused");
  ok(services_get(s, &user_b, "greeter", 2, 0, NULL) == NULL,
     "another major is refused");
  ok(services_get(s, &user_b, "greeter", 0, 0, NULL) == NULL,
     "an older major is refused");
  ok(services_get(s, &user_b, "missing", 1, 0, NULL) == NULL,
     "a missing service is NULL");
  is_int(services_users(s, "greeter", NULL), 1,
         "user counted once; refused lookups record nothing");
  services_free(s);
}

static void test_names(void) {
  ph_services *s = services_new();
  int x = 0;
  is_int(services_register(s, &provider, "prov", "", 1, 0, &vt, &x), PH_EINVAL,
         "empty name refused");
  is_int(services_register(s, &provider, "prov", "Greeter", 1, 0, &vt, &x),
         PH_EINVAL, "upper case refused");
  is_int(services_register(s, &provider, "prov", "a b", 1, 0, &vt, &x), PH_EINVAL,
         "space refused");
  is_int(services_register(s, &provider, "prov", "ok", 1, 0, NULL, &x), PH_EINVAL,
         "NULL vtable refused");
  is_int(services_register(s, &provider, "prov", "a-z_0.9", 1, 0, &vt, &x), PH_OK,
         "[a-z0-9_.-] accepted");
  char name[66];
  memset(name, 'n', 65);
  name[65] = '\0';
  is_int(services_register(s, &provider, "prov", name, 1, 0, &vt, &x), PH_EINVAL,
         "65-byte name refused");
  name[64] = '\0';
  is_int(services_register(s, &provider, "prov", name, 1, 0, &vt, &x), PH_OK,
         "64-byte name accepted");
  services_free(s);
}

static void test_limit(void) {
  ph_services *s = services_new();
  int x = 0, n = 0, rc = PH_OK;
  for (int i = 0; i < 300 && rc == PH_OK; i++) {
    char name[16];
    snprintf(name, sizeof name, "svc%d", i);
    rc = services_register(s, &provider, "prov", name, 1, 0, &vt, &x);
    if (rc == PH_OK)
      n++;
  }
  is_int(n, 256, "at most 256 services");
  is_int(rc, PH_ELIMIT, "the 257th is PH_ELIMIT");
  is_int(services_unregister(s, &provider, "svc0"), PH_OK, "make room");
  is_int(services_register(s, &provider, "prov", "again", 1, 0, &vt, &x), PH_OK,
         "room after an unregister");
  services_free(s);
}

static void test_unregister(void) {
  ph_services *s = services_new();
  int state = 7;
  services_register(s, &provider, "prov", "cache", 3, 1, &vt, &state);
  ok(services_get(s, &user_a, "cache", 3, 0, NULL) != NULL, "a uses it");
  ok(services_get(s, &user_a, "cache", 3, 1, NULL) != NULL, "a again");
  ok(services_get(s, &user_b, "cache", 3, 1, NULL) != NULL, "b uses it");
  is_int(services_users(s, "cache", NULL), 2, "two distinct users");

  is_int(services_unregister(s, &user_a, "cache"), PH_EINVAL,
         "not the owner: PH_EINVAL");
  is_int(services_unregister(s, &provider, "nope"), PH_ENOENT,
         "missing: PH_ENOENT");
  is_int(services_unregister(s, &provider, "cache"), PH_EBUSY,
         "refused while in use");
  services_release(s, &user_a, "cache");
  is_int(services_users(s, "cache", NULL), 1, "one release drops a's use");
  is_int(services_unregister(s, &provider, "cache"), PH_EBUSY,
         "still refused while b uses it");
  services_release(s, &user_b, "cache");
  services_release(s, &user_b, "cache"); /* harmless twice */
  is_int(services_users(s, "cache", NULL), 0, "no users left");

  /* The owner using its own service does not block it. */
  ok(services_get(s, &provider, "cache", 3, 0, NULL) != NULL,
     "the owner may use its own service");
  is_int(services_unregister(s, &provider, "cache"), PH_OK,
         "allowed after release");
  ok(services_get(s, &user_a, "cache", 3, 0, NULL) == NULL,
     "gone after unregister");
  ok(services_owner(s, "cache", NULL) == NULL, "no owner after unregister");
  is_int(services_register(s, &user_a, "prov", "cache", 4, 0, &vt, NULL), PH_OK,
         "the name can be registered again");
  services_free(s);
}


/* ABI 1.2: several providers of one name, told apart by instance name. */
static int prov_a, prov_b;
static int greet_a_state = 1, greet_b_state = 2;

static ph_services *two_providers(void) {
  ph_services *s = services_new();
  is_int(services_register(s, &prov_a, "direct", "connector", 1, 1, &vt,
                           &greet_a_state),
         PH_OK, "first provider of connector");
  is_int(services_register(s, &prov_b, "direct.lab", "connector", 1, 0, &vt,
                           &greet_b_state),
         PH_OK, "a second provider of the same name");
  return s;
}

static void test_several_providers(void) {
  ph_services *s = two_providers();
  is_int(services_register(s, &prov_b, "direct.lab", "connector", 1, 0, &vt,
                           NULL),
         PH_EEXIST, "the same provider twice is PH_EEXIST");
  is_int(services_register(s, &prov_a, "bad name", "connector", 1, 0, &vt,
                           NULL),
         PH_EINVAL, "a bad provider name is refused");
  is_int(services_register(s, &prov_a, "", "connector", 1, 0, &vt, NULL),
         PH_EINVAL, "an empty provider name is refused");
  is_int((int)services_count(s, "connector"), 2, "two providers counted");

  ph_buf why;
  buf_init(&why, 1024);
  void *self = &why;
  ok(services_get_named(s, &user_a, "connector", NULL, 1, 0, &self, &why) ==
         NULL,
     "ambiguous get (provider NULL) fails closed");
  ok(self == &why, "self untouched on failure");
  ok(why.data && strstr(why.data, "direct, direct.lab") &&
         strstr(why.data, "name the one"),
     "the reason names both providers and asks to name one");
  buf_reset(&why);
  ok(services_get_named(s, &user_a, "connector", "", 1, 0, &self, &why) ==
         NULL,
     "provider \"\" is the only provider: ambiguous too");
  ok(services_get(s, &user_a, "connector", 1, 0, &self) == NULL,
     "services_get is ambiguous too");
  is_int(services_users(s, "connector", "direct"), 0,
         "refused lookups record no use");
  ok(services_owner(s, "connector", NULL) == NULL,
     "no single owner of an ambiguous name");

  ok(services_get_named(s, &user_a, "connector", "direct.lab", 1, 0, &self,
                        NULL) == &vt,
     "named get");
  ok(self == &greet_b_state, "named get returns that provider's self");
  ok(services_get_named(s, &user_a, "connector", "direct", 1, 1, &self,
                        NULL) == &vt &&
         self == &greet_a_state,
     "the other one by name");
  ok(services_get_named(s, &user_b, "connector", "direct.lab", 1, 1, &self,
                        NULL) == NULL,
     "the version is checked per provider");
  ok(services_get_named(s, &user_b, "connector", "nope", 1, 0, &self, NULL) ==
         NULL,
     "an unknown provider is NULL");
  ok(services_owner(s, "connector", "direct.lab") == &prov_b,
     "owner per provider");
  is_int(services_users(s, "connector", "direct"), 1, "a uses direct");
  is_int(services_users(s, "connector", "direct.lab"), 1,
         "a uses direct.lab");

  /* unregister per provider, refused while used */
  is_int(services_unregister(s, &prov_b, "connector"), PH_EBUSY,
         "direct.lab in use: PH_EBUSY");
  is_int(services_unregister(s, &user_b, "connector"), PH_EINVAL,
         "a foreign id cannot unregister either provider");
  services_release(s, &user_b, "connector"); /* never got one: harmless */
  is_int(services_users(s, "connector", "direct"), 1,
         "a foreign release drops nothing");
  services_release(s, &user_a, "connector");
  is_int(services_users(s, "connector", "direct") +
             services_users(s, "connector", "direct.lab"),
         0, "one release drops the use of every provider of the name");
  is_int(services_unregister(s, &prov_b, "connector"), PH_OK,
         "unregister the second provider");
  is_int((int)services_count(s, "connector"), 1, "one provider left");
  ok(services_get(s, &user_a, "connector", 1, 0, &self) == &vt &&
         self == &greet_a_state,
     "with one provider left the plain get works again");
  ok(services_get_named(s, &user_a, "connector", "direct.lab", 1, 0, &self,
                        NULL) == NULL,
     "the unregistered provider is gone");
  is_int(services_unregister(s, &prov_b, "connector"), PH_EINVAL,
         "the former provider is now foreign");
  services_release(s, &user_a, "connector");
  is_int(services_unregister(s, &prov_a, "connector"), PH_OK,
         "the first provider leaves too");
  is_int(services_unregister(s, &prov_a, "connector"), PH_ENOENT,
         "then the name is unknown");
  buf_free(&why);
  services_free(s);
}

int main(void) {
  plan_lazy();
  test_register_get();
  test_names();
  test_limit();
  test_unregister();
  test_several_providers();
  return done_testing();
}
