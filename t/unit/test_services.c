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
  is_int(services_register(s, &provider, "greeter", 1, 2, &vt, &state),
         PH_OK, "register");
  is_int(services_register(s, &user_a, "greeter", 1, 3, &vt, NULL),
         PH_EEXIST, "duplicate name is PH_EEXIST");
  ok(services_owner(s, "greeter") == &provider, "owner recorded");
  ok(services_owner(s, "other") == NULL, "no owner for a missing name");

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
  is_int(services_users(s, "greeter"), 1,
         "user counted once; refused lookups record nothing");
  services_free(s);
}

static void test_names(void) {
  ph_services *s = services_new();
  int x = 0;
  is_int(services_register(s, &provider, "", 1, 0, &vt, &x), PH_EINVAL,
         "empty name refused");
  is_int(services_register(s, &provider, "Greeter", 1, 0, &vt, &x),
         PH_EINVAL, "upper case refused");
  is_int(services_register(s, &provider, "a b", 1, 0, &vt, &x), PH_EINVAL,
         "space refused");
  is_int(services_register(s, &provider, "ok", 1, 0, NULL, &x), PH_EINVAL,
         "NULL vtable refused");
  is_int(services_register(s, &provider, "a-z_0.9", 1, 0, &vt, &x), PH_OK,
         "[a-z0-9_.-] accepted");
  char name[66];
  memset(name, 'n', 65);
  name[65] = '\0';
  is_int(services_register(s, &provider, name, 1, 0, &vt, &x), PH_EINVAL,
         "65-byte name refused");
  name[64] = '\0';
  is_int(services_register(s, &provider, name, 1, 0, &vt, &x), PH_OK,
         "64-byte name accepted");
  services_free(s);
}

static void test_limit(void) {
  ph_services *s = services_new();
  int x = 0, n = 0, rc = PH_OK;
  for (int i = 0; i < 300 && rc == PH_OK; i++) {
    char name[16];
    snprintf(name, sizeof name, "svc%d", i);
    rc = services_register(s, &provider, name, 1, 0, &vt, &x);
    if (rc == PH_OK)
      n++;
  }
  is_int(n, 256, "at most 256 services");
  is_int(rc, PH_ELIMIT, "the 257th is PH_ELIMIT");
  is_int(services_unregister(s, &provider, "svc0"), PH_OK, "make room");
  is_int(services_register(s, &provider, "again", 1, 0, &vt, &x), PH_OK,
         "room after an unregister");
  services_free(s);
}

static void test_unregister(void) {
  ph_services *s = services_new();
  int state = 7;
  services_register(s, &provider, "cache", 3, 1, &vt, &state);
  ok(services_get(s, &user_a, "cache", 3, 0, NULL) != NULL, "a uses it");
  ok(services_get(s, &user_a, "cache", 3, 1, NULL) != NULL, "a again");
  ok(services_get(s, &user_b, "cache", 3, 1, NULL) != NULL, "b uses it");
  is_int(services_users(s, "cache"), 2, "two distinct users");

  is_int(services_unregister(s, &user_a, "cache"), PH_EINVAL,
         "not the owner: PH_EINVAL");
  is_int(services_unregister(s, &provider, "nope"), PH_ENOENT,
         "missing: PH_ENOENT");
  is_int(services_unregister(s, &provider, "cache"), PH_EBUSY,
         "refused while in use");
  services_release(s, &user_a, "cache");
  is_int(services_users(s, "cache"), 1, "one release drops a's use");
  is_int(services_unregister(s, &provider, "cache"), PH_EBUSY,
         "still refused while b uses it");
  services_release(s, &user_b, "cache");
  services_release(s, &user_b, "cache"); /* harmless twice */
  is_int(services_users(s, "cache"), 0, "no users left");

  /* The owner using its own service does not block it. */
  ok(services_get(s, &provider, "cache", 3, 0, NULL) != NULL,
     "the owner may use its own service");
  is_int(services_unregister(s, &provider, "cache"), PH_OK,
         "allowed after release");
  ok(services_get(s, &user_a, "cache", 3, 0, NULL) == NULL,
     "gone after unregister");
  ok(services_owner(s, "cache") == NULL, "no owner after unregister");
  is_int(services_register(s, &user_a, "cache", 4, 0, &vt, NULL), PH_OK,
         "the name can be registered again");
  services_free(s);
}

int main(void) {
  plan_lazy();
  test_register_get();
  test_names();
  test_limit();
  test_unregister();
  return done_testing();
}
