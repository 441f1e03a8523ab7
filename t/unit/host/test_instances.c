/* SPDX-License-Identifier: BSD-2-Clause */
/* Named module instances (ABI 1.2) through the mock host: several
 * instances of one module, each with its own section, state and
 * lifecycle; several providers of one service told apart by instance
 * name; a 1.1 module (keys_v11) loaded as two instances. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mock_core.h"
#include "mock_test.h"
#include "tap.h"

static char err[8192];

/* ---- a provider with instances, and a user naming one ----------------- */

#define GREET "greet"
typedef struct greet_v1 {
  const char *(*who)(void *self);
} greet_v1;

typedef struct greeter {
  ph_ctx *ctx;
  char name[128]; /* its instance, as module_name said */
  char word[64];  /* its own section's value */
} greeter;

static char events[1024]; /* "init:greeter start:greeter.two ..." */
static void event(const char *what, const char *who) {
  size_t n = strlen(events);
  snprintf(events + n, sizeof(events) - n, "%s:%s ", what, who);
}

static const char *greeter_who(void *self) { return ((greeter *)self)->word; }
static const greet_v1 greet_vt = {greeter_who};

static const ph_conf_key greeter_keys[] = {PH_CONF_KEY("word", PH_CONF_STRING,
                                                       "hello", 1, 32, 0, NULL,
                                                       "a word", NULL),
                                           PH_CONF_END};
static const ph_api *g_api;

static int greeter_init(ph_ctx *ctx, const ph_api *api, void **state) {
  g_api = api;
  greeter *g = calloc(1, sizeof(*g));
  if (!g)
    return PH_ENOMEM;
  g->ctx = ctx;
  snprintf(g->name, sizeof(g->name), "%s", api->module_name(ctx));
  snprintf(g->word, sizeof(g->word), "%s", api->conf_str(ctx, "word"));
  *state = g;
  event("init", g->name);
  return api->service_register(ctx, GREET, 1, 0, &greet_vt, g);
}
static int greeter_start(void *state) {
  event("start", ((greeter *)state)->name);
  return PH_OK;
}
static int greeter_reload(void *state) {
  greeter *g = state;
  snprintf(g->word, sizeof(g->word), "%s", g_api->conf_str(g->ctx, "word"));
  event("reload", g->name);
  return PH_OK;
}
static int greeter_stop(void *state) {
  event("stop", ((greeter *)state)->name);
  return PH_OK;
}
static void greeter_destroy(void *state) {
  event("destroy", ((greeter *)state)->name);
  free(state);
}
MOCK_TEST_MODULE(greeter_mod, "greeter", "1.0",
                 .provides = MOCK_TEST_NAMES(GREET), .config = greeter_keys,
                 .init = greeter_init, .start = greeter_start,
                 .reload = greeter_reload, .stop = greeter_stop,
                 .destroy = greeter_destroy);

typedef struct user {
  ph_ctx *ctx;
  const greet_v1 *g;
  void *gself;
} user;
static const char *user_got; /* what the named provider said */
static int user_plain_null;  /* service_get failed closed */
static int user_loaded_self; /* service_provider_loaded(greet, user) */

static const ph_conf_key user_keys[] = {PH_CONF_KEY("provider", PH_CONF_STRING,
                                                    "", 0, 97, 0, NULL,
                                                    "greeter instance", NULL),
                                        PH_CONF_END};

static int user_check(ph_ctx *ctx, const ph_api *api, const char **key,
                      char *why, size_t whylen) {
  const char *p = api->conf_str(ctx, "provider");
  user_loaded_self = api->service_provider_loaded(ctx, GREET, "user");
  if (*p && !api->service_provider_loaded(ctx, GREET, p)) {
    *key = "provider";
    snprintf(why, whylen, "no loaded instance %s provides " GREET, p);
    return PH_EINVAL;
  }
  return PH_OK;
}
static int user_init(ph_ctx *ctx, const ph_api *api, void **state) {
  (void)api;
  user *u = calloc(1, sizeof(*u));
  if (!u)
    return PH_ENOMEM;
  u->ctx = ctx;
  *state = u;
  event("init", "user");
  return PH_OK;
}
static int user_start(void *state) {
  user *u = state;
  event("start", "user");
  void *self = NULL;
  user_plain_null = g_api->service_get(u->ctx, GREET, 1, 0, &self) == NULL;
  const char *p = g_api->conf_str(u->ctx, "provider");
  u->g = g_api->service_get_named(u->ctx, GREET, p, 1, 0, &u->gself);
  if (!u->g)
    return PH_ENOENT;
  user_got = u->g->who(u->gself);
  return PH_OK;
}
static void user_destroy(void *state) {
  user *u = state;
  if (u->g)
    g_api->service_release(u->ctx, GREET);
  free(u);
}
MOCK_TEST_MODULE(user_mod, "user", "1.0", .requires = MOCK_TEST_NAMES(GREET),
                 .config = user_keys, .check = user_check, .init = user_init,
                 .start = user_start, .destroy = user_destroy);

/* greeter, greeter.two and user (user first: the start order must put it
 * after both providers). */
static ph_mock *three(const char *text) {
  err[0] = '\0';
  events[0] = '\0';
  user_got = NULL;
  ph_mock *m = ph_mock_new(text, err, sizeof err);
  if (!m || ph_mock_add(m, &user_mod, err, sizeof err) < 0 ||
      ph_mock_add(m, &greeter_mod, err, sizeof err) < 0 ||
      ph_mock_add_instance(m, &greeter_mod, "two", err, sizeof err) < 0) {
    printf("# setup failed: %s\n", err);
    ph_mock_free(m);
    return NULL;
  }
  return m;
}

/* The word greeter.two holds now (its state). */
static const char *u_two_word(ph_core *c) {
  return ((greeter *)c->mods[2]->state)->word;
}

static void test_two_providers(void) {
  ph_mock *m = three("[greeter]\nword = one\n[greeter.two]\nword = deux\n"
                     "[user]\nprovider = greeter.two\n");
  if (!m) {
    ok(0, "setup");
    return;
  }
  is_int(ph_mock_init(m, err, sizeof err), 0,
         "two instances of one module init");
  is_int(user_loaded_self, 0,
         "service_provider_loaded: 0 for an instance that does not provide");
  is_int(ph_mock_start(m, err, sizeof err), 0, "and start");
  is_str(events,
         "init:greeter init:greeter.two init:user start:greeter "
         "start:greeter.two start:user ",
         "each instance has its lifecycle; the user after both providers");
  is_int(user_plain_null, 1,
         "service_get with two providers fails closed (NULL)");
  is_str(user_got ? user_got : "(null)", "deux",
         "service_get_named reaches the named instance, with its section");
  ph_core *c = mock_core(m);
  is_str(c->mods[2]->name, "greeter.two", "the instance's full name");
  ok(c->mods[1]->mod == c->mods[2]->mod, "one descriptor for both");
  is_int(services_users(c->services, GREET, "greeter.two"), 1,
         "the use is recorded on the named provider");
  is_int(services_users(c->services, GREET, "greeter"), 0, "and only there");
  /* Reload: each instance reloads, reading its own section again. */
  events[0] = '\0';
  is_int(ph_mock_reload(m,
                        "[greeter]\nword = one\n[greeter.two]\nword = trois\n"
                        "[user]\nprovider = greeter.two\n",
                        NULL, 0),
         0, "reload");
  is_str(events, "reload:greeter reload:greeter.two ",
         "each instance's reload runs");
  is_str(u_two_word(c), "trois", "and reads its own new value");
  is_int(ph_mock_reload(m, "[greeter.two]\nword = trois\nnope = 1\n", NULL, 0),
         -1, "a bad key in an instance section refuses the reload");
  is_str(u_two_word(c), "trois", "the old configuration stays");
  const char *metrics = ph_mock_metrics_text(m);
  like(metrics, "proxyhost_module_threads{module=\"greeter.two\"} 0",
       "host metrics are labelled by instance");
  like(metrics, "proxyhost_module_threads{module=\"greeter\"} 0",
       "and the default instance by its name");
  is_int(ph_mock_stop(m), 0, "stop");
  ph_mock_free(m);
  like(events, "reload:greeter.two stop:greeter.two stop:greeter ",
       "stopped in reverse order, each instance");
  like(events, "destroy:greeter.two destroy:greeter ", "destroyed each");
}

static void test_ambiguous_and_unknown(void) {
  ph_mock *m = three("[greeter.two]\nword = deux\n");
  if (!m) {
    ok(0, "setup");
    return;
  }
  is_int(ph_mock_init(m, err, sizeof err), 0, "init without a named provider");
  is_int(ph_mock_start(m, err, sizeof err), -1,
         "the user fails at start: two providers, none named");
  like(err, "module user: start failed", "the user is named");
  ph_mock_free(m);

  m = three("[user]\nprovider = greeter.three\n");
  if (!m) {
    ok(0, "setup");
    return;
  }
  is_int(ph_mock_init(m, err, sizeof err), -1,
         "a named provider not loaded fails check");
  like(err, "(config):2: user.provider: no loaded instance greeter.three",
       "with file:line");
  ph_mock_free(m);

  m = three("[greeter.three]\nword = x\n");
  is_int(m ? ph_mock_init(m, err, sizeof err) : 0, -1,
         "a section for an instance not loaded fails");
  like(err, "(config):1: greeter.three: unknown section",
       "as an unknown section");
  ph_mock_free(m);
}

static void test_public_add_instance(void) {
  char e[1024];
  ph_mock *m = ph_mock_new("[greeter.b]\nword = bee\n", e, sizeof(e));
  ok(m != NULL, "public: new");
  is_int(ph_mock_add_instance(m, &greeter_mod, "B", e, sizeof(e)), PH_EINVAL,
         "public: a bad instance name is refused");
  like(e, "invalid instance name", "public: with the reason");
  is_int(ph_mock_add_instance(m, &greeter_mod, "b", e, sizeof(e)), PH_OK,
         "public: an instance is added");
  is_int(ph_mock_add_instance(m, &greeter_mod, "b", e, sizeof(e)), PH_EINVAL,
         "public: the same instance twice is refused");
  like(e, "duplicate module name \"greeter.b\"", "public: named");
  is_int(ph_mock_add_instance(m, &greeter_mod, "", e, sizeof(e)), PH_OK,
         "public: \"\" adds the default instance");
  is_int(ph_mock_add_instance(m, NULL, "c", e, sizeof(e)), PH_EINVAL,
         "public: NULL module");
  is_int(ph_mock_init(m, e, sizeof(e)), PH_OK, "public: init");
  is_int(ph_mock_add_instance(m, &greeter_mod, "c", e, sizeof(e)), PH_ESTATE,
         "public: not after init");
  ph_mock_free(m);
  is_int(ph_mock_add_instance(NULL, &greeter_mod, "c", e, sizeof(e)), PH_EINVAL,
         "public: NULL mock");
}

/* ---- a 1.1 module as two instances ------------------------------------- */

#define V11 "[proxyhost]\nmodule_path = " PH_TEST_MODDIR "\n"

static void test_v11_two_instances(void) {
  err[0] = '\0';
  ph_mock *m = ph_mock_new(V11 "modules = keys_v11, keys_v11.b\n"
                               "[keys_v11]\ncount = 7\n"
                               "[keys_v11.b]\ncount = 9\ngreeting = yo\n",
                           err, sizeof err);
  ok(m != NULL, "a 1.1 module loads as two instances");
  if (!m) {
    printf("# %s\n", err);
    return;
  }
  is_int(ph_mock_init(m, err, sizeof err), 0, "both check and init");
  is_int(ph_mock_start(m, err, sizeof err), 0, "both start");
  ph_core *c = mock_core(m);
  is_int((int)c->n_mods, 2, "two instances");
  ok(c->mods[0]->mod == c->mods[1]->mod, "one descriptor");
  ok(c->mods[0]->dl != NULL && c->mods[1]->dl == NULL,
     "the file is opened once");
  is_int(c->mods[1]->mod->abi_minor, 1, "built for 1.1");
  is_str(ph_host_api.module_name(c->mods[1]), "keys_v11.b",
         "module_name is the instance's full name");
  is_int(ph_host_api.conf_int(c->mods[0], "count"), 7,
         "the default instance reads [keys_v11]");
  is_int(ph_host_api.conf_int(c->mods[1], "count"), 9,
         "the instance reads [keys_v11.b]");
  is_str(ph_host_api.conf_str(c->mods[1], "greeting"), "yo",
         "with its converted 1.1 key table");
  /* Same metric, same definition: shared, one series (the last set). */
  like(ph_mock_metrics_text(m), "\nkeys_v11_count 9\n",
       "two instances registering one metric share it");
  is_int(ph_mock_stop(m), 0, "stop");
  ph_mock_free(m);
}

static void test_entries(void) {
  static const struct {
    const char *modules, *want, *what;
  } bad[] = {
      {"keys_v11, keys_v11", "duplicate module name \"keys_v11\"",
       "the same entry twice"},
      {"keys_v11.b, keys_v11.b", "duplicate module name \"keys_v11.b\"",
       "the same instance twice"},
      {"keys_v11.B", "invalid instance name", "upper case instance"},
      {"keys_v11.", "invalid instance name", "empty instance"},
      {"keys_v11.a.b", "invalid instance name", "two dots"},
      {"keys_v11.abcdefghijabcdefghijabcdefghijabc", "invalid instance name",
       "a 33-byte instance"},
      {".b", "invalid module name", "no module"},
      {PH_TEST_MODDIR "/keys_v11.so.b", "an instance is not given with a path",
       "an instance on a path"},
      {"nosuchmodule.b", "not found in the module path",
       "an instance of a module that is not there"},
      {PH_TEST_MODDIR "/dup_a.so, " PH_TEST_MODDIR "/dup_b.so",
       "every instance of a module comes from one file",
       "one module name from two files"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    /* two module paths and module_path: sized from the build path */
    char text[sizeof(V11) + 2 * sizeof(PH_TEST_MODDIR) + 512];
    snprintf(text, sizeof(text), V11 "modules = %s\n", bad[i].modules);
    err[0] = '\0';
    ph_mock *m = ph_mock_new(text, err, sizeof err);
    char name[128];
    snprintf(name, sizeof(name), "refused: %s", bad[i].what);
    ok(m == NULL, name);
    snprintf(name, sizeof(name), "with the reason: %s", bad[i].what);
    like(err, bad[i].want, name);
    ph_mock_free(m);
  }
  err[0] = '\0';
  ph_mock *m = ph_mock_new(V11 "modules = " PH_TEST_MODDIR "/keys_v11.so, "
                               "keys_v11.b\n",
                           err, sizeof err);
  ok(m != NULL, "a path entry is the default instance; a name adds one");
  if (m) {
    ok(ph_mock_module(m, NULL) == mock_core(m)->mods[1]->mod &&
           mock_core(m)->mods[1]->dl == NULL,
       "from the same file, opened once");
    is_str(mock_core(m)->mods[0]->name, "keys_v11", "named by the module");
  }
  ph_mock_free(m);
  err[0] = '\0';
  m = ph_mock_new(V11 "modules = keys_v11.only\n[keys_v11.only]\ncount = 1\n",
                  err, sizeof err);
  ok(m != NULL && ph_mock_init(m, err, sizeof err) == 0,
     "an instance without the default one");
  ph_mock_free(m);
}

int main(void) {
  plan_lazy();
  err[0] = '\0';
  test_two_providers();
  test_ambiguous_and_unknown();
  test_public_add_instance();
  test_v11_two_instances();
  test_entries();
  return done_testing();
}
