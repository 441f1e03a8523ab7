/* SPDX-License-Identifier: BSD-2-Clause */
/* The module loader: what it accepts, what it refuses and how it says so,
 * and the start order it derives from provides/requires. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "tap.h"

#define MOD(name) PH_TEST_MODDIR "/" name ".so"

/* Loads the modules listed in `modules` (comma-separated spec); returns
 * the load status and leaves the error text in err. */
static int load(const char *modules, const char *extra, ph_core **out,
                ph_buf *err) {
  char text[4096];
  snprintf(text, sizeof(text), "[proxyhost]\nmodules = %s\n%s", modules,
           extra ? extra : "");
  ph_core *c = core_new();
  buf_reset(err);
  int rc = core_read_config(c, NULL, text, NULL, 0, NULL, err);
  if (rc == 0)
    rc = core_load_modules(c, err);
  if (out)
    *out = c;
  else
    core_free(c);
  return rc;
}

static void test_good_module(ph_buf *err) {
  ph_core *c;
  is_int(load(MOD("probe"), NULL, &c, err), 0, "a good module loads");
  is_int(c->n_mods, 1, "one module loaded");
  is_str(c->mods[0]->mod->name, "probe", "descriptor name read");
  core_free(c);
}

static void test_refusals(ph_buf *err) {
  is_int(load(MOD("bad_magic"), NULL, NULL, err), -1, "wrong magic refused");
  like(err->data, "bad_magic.so: not a proxyhost module (bad magic",
       "wrong magic: one clear line naming the file");

  char want[160];
  is_int(load(MOD("bad_major"), NULL, NULL, err), -1, "wrong major refused");
  snprintf(want, sizeof(want),
           "bad_major.so: module ABI %d.0 is not compatible with host ABI %s",
           PH_ABI_MAJOR + 1, PH_ABI_STRING);
  like(err->data, want, "wrong major: both versions and the file in one line");

  is_int(load(MOD("new_minor"), NULL, NULL, err), -1, "newer minor refused");
  snprintf(want, sizeof(want),
           "new_minor.so: module ABI %d.%d is not compatible with host ABI %s",
           PH_ABI_MAJOR, PH_ABI_MINOR + 1, PH_ABI_STRING);
  like(err->data, want, "newer minor: both versions and the file");

  is_int(load(MOD("no_symbol"), NULL, NULL, err), -1,
         "shared object without descriptor refused");
  like(err->data, "no_symbol.so: no proxyhost_module symbol",
       "missing symbol named");

  is_int(load(MOD("dup_a") "," MOD("dup_b"), NULL, NULL, err), -1,
         "duplicate module names refused");
  like(err->data, "duplicate module name \"dup\"", "duplicate name named");

  is_int(load("nosuch", "module_path = " PH_TEST_MODDIR "\n", NULL, err), -1,
         "unknown module name refused");
  like(err->data, "module \"nosuch\": not found in the module path",
       "missing module named");

  is_int(load("../probe", NULL, NULL, err), -1, "path-like name refused");

  is_int(load("probe", "module_path = " PH_TEST_MODDIR "\n", NULL, err), 0,
         "a name is found along module_path");
}

static void test_missing_provider(ph_buf *err) {
  ph_core *c;
  is_int(load(MOD("needs_provider"), NULL, &c, err), 0,
         "module with an unmet requirement loads");
  is_int(core_validate(c, err), 0, "its configuration validates");
  is_int(core_setup(c, err), 0, "host services start");
  is_int(core_init_modules(c, err), -1, "init refuses a missing provider");
  like(err->data,
       "module needs_provider requires service \"no.such.service\", which "
       "no loaded module provides",
       "missing provider named");
  core_free(c);
}

static void test_dependency_order(ph_buf *err) {
  ph_core *c;
  /* probe_user is listed first but needs probe.echo, which answers only
   * after probe started: start fails unless the host reorders. */
  is_int(load(MOD("probe_user") "," MOD("probe"), NULL, &c, err), 0,
         "user and provider load");
  is_int(core_validate(c, err), 0, "configuration validates");
  is_int(core_setup(c, err), 0, "host services start");
  is_int(core_init_modules(c, err), 0, "init in dependency order");
  is_int(c->order[0], 1, "provider starts first");
  is_int(core_start_modules(c, err), 0,
         "start in dependency order (the user found a started provider)");
  ok(err->len == 0, "no errors");
  core_free(c);
}

/* Modules linked into the test that require each other. */
static int nop_init(ph_ctx *ctx, const ph_api *api, void **state) {
  (void)ctx;
  (void)api;
  (void)state;
  return PH_OK;
}
static const char *const svc_a[] = {"svc.a", NULL};
static const char *const svc_b[] = {"svc.b", NULL};
static const ph_module cyc_a = {PH_MODULE_HEADER("cyc_a", "1"),
                                .provides = svc_a, .requires = svc_b,
                                .init = nop_init};
static const ph_module cyc_b = {PH_MODULE_HEADER("cyc_b", "1"),
                                .provides = svc_b, .requires = svc_a,
                                .init = nop_init};
static const ph_module no_init = {PH_MODULE_HEADER("no_init", "1")};

static void test_cycle_and_callbacks(ph_buf *err) {
  ph_core *c = core_new();
  buf_reset(err);
  core_read_config(c, NULL, "", NULL, 0, NULL, err);
  is_int(core_add_module(c, &cyc_a, err), 0, "cyc_a added");
  is_int(core_add_module(c, &cyc_b, err), 0, "cyc_b added");
  is_int(core_add_module(c, &no_init, err), -1,
         "a module without init is refused");
  like(err->data, "module no_init has no init callback", "reason given");
  size_t order[PH_MAX_MODULES];
  buf_reset(err);
  is_int(loader_order(c->mods, c->n_mods, order, err), -1,
         "a requirement cycle is refused");
  like(err->data, "cycle: cyc_a cyc_b", "cycle members named");
  core_free(c);
}

/* ---- descriptor slots and the optional check callback (ABI 1.1) ---- */

/* A module built against ABI 1.0: the check slot was reserved[0], zero. */
static const ph_module old_minor = {.magic = PH_MODULE_MAGIC,
                                    .abi_major = PH_ABI_MAJOR,
                                    .abi_minor = 0,
                                    .name = "old_minor",
                                    .version = "1",
                                    .init = nop_init};

static const ph_conf_key word_keys[] = {
    PH_CONF_KEY("word", PH_CONF_STRING, "ok", 0, 32, 0, NULL,
                "lower-case letters", NULL),
    PH_CONF_KEY("other", PH_CONF_INT, "1", 0, 9, 0, NULL, "not checked", NULL),
    PH_CONF_END};

static int check_calls;

/* A check that reads only its configuration: word must be [a-z]*. */
static int word_check(ph_ctx *ctx, const ph_api *api, const char **key,
                      char *why, size_t whylen) {
  check_calls++;
  const char *w = api->conf_str(ctx, "word");
  for (const char *p = w; p && *p; p++)
    if (*p < 'a' || *p > 'z') {
      *key = "word";
      snprintf(why, whylen, "\"%s\" is not lower-case letters", w);
      return PH_EINVAL;
    }
  return PH_OK;
}

/* A failure that no single key explains. */
static int keyless_check(ph_ctx *ctx, const ph_api *api, const char **key,
                         char *why, size_t whylen) {
  (void)key;
  if (api->conf_int(ctx, "other") == 9) {
    snprintf(why, whylen, "other = 9 needs a word");
    return PH_EINVAL;
  }
  return PH_OK;
}

static const ph_module chk_a = {PH_MODULE_HEADER("chk_a", "1"),
                                .config = word_keys, .init = nop_init,
                                .check = word_check};
static const ph_module chk_b = {PH_MODULE_HEADER("chk_b", "1"),
                                .config = word_keys, .init = nop_init,
                                .check = word_check};
static const ph_module chk_k = {PH_MODULE_HEADER("chk_k", "1"),
                                .config = word_keys, .init = nop_init,
                                .check = keyless_check};

/* Old minor, but something in the slot it saw as reserved[0]. */
static const ph_module old_minor_slot = {.magic = PH_MODULE_MAGIC,
                                         .abi_major = PH_ABI_MAJOR,
                                         .abi_minor = 0,
                                         .name = "old_minor_slot",
                                         .version = "1",
                                         .init = nop_init,
                                         .check = word_check};
static const ph_module last_reserved = {
    PH_MODULE_HEADER("last_reserved", "1"), .init = nop_init,
    .reserved = {[sizeof(((ph_module *)0)->reserved) / sizeof(void *) - 1] =
                     (void *)1}};
static const ph_module first_reserved = {PH_MODULE_HEADER("first_reserved",
                                                          "1"),
                                         .init = nop_init,
                                         .reserved = {[0] = (void *)1}};

static void test_descriptor_slots(ph_buf *err) {
  ok(sizeof(ph_module) == offsetof(ph_module, destroy) + 9 * sizeof(void *),
     "the descriptor keeps its 1.0 size: check took a reserved slot");
  ph_core *c = core_new();
  buf_reset(err);
  core_read_config(c, NULL, "", NULL, 0, NULL, err);
  is_int(core_add_module(c, &old_minor, err), 0,
         "a module built for minor 0 (no check) loads");
  is_int(core_add_module(c, &last_reserved, err), -1,
         "a set remaining reserved slot (the last) is refused");
  like(err->data, "module last_reserved uses reserved descriptor fields",
       "reserved slot: reason given");
  buf_reset(err);
  is_int(core_add_module(c, &first_reserved, err), -1,
         "a set remaining reserved slot (the first) is refused");
  buf_reset(err);
  is_int(core_add_module(c, &old_minor_slot, err), -1,
         "a minor-0 module with its reserved[0] (now check) set is refused");
  like(err->data, "module old_minor_slot uses reserved descriptor fields",
       "old minor slot: reason given");
  buf_reset(err);
  is_int(core_validate(c, err), 0, "the old module's configuration validates");
  is_int(core_check_modules(c, c->conf, err), 0,
         "check passes over a module without a check callback");
  core_free(c);
}

/* A core with chk_a, chk_b, chk_k and old_minor on config text. */
static ph_core *check_core(const char *text, const char *const *sets,
                           size_t n_sets, ph_buf *err) {
  ph_core *c = core_new();
  buf_reset(err);
  if (core_read_config(c, NULL, text, sets, n_sets, NULL, err) < 0 ||
      core_add_module(c, &chk_a, err) < 0 ||
      core_add_module(c, &chk_b, err) < 0 ||
      core_add_module(c, &chk_k, err) < 0 ||
      core_add_module(c, &old_minor, err) < 0 || core_validate(c, err) < 0) {
    printf("# setup failed: %s\n", err->data ? err->data : "?");
    core_free(c);
    return NULL;
  }
  return c;
}

static void test_check_reports(ph_buf *err) {
  check_calls = 0;
  ph_core *c = check_core("[chk_a]\nword = fine\n", NULL, 0, err);
  ok(c != NULL, "modules with check callbacks load");
  if (!c)
    return;
  is_int(core_check_modules(c, c->conf, err), 0, "good values pass");
  is_int(check_calls, 2, "each module's check ran once");
  ok(err->len == 0, "no errors");
  core_free(c);

  c = check_core("[chk_a]\nword = Bad\n[chk_b]\n\nword = bad too\n"
                 "[chk_k]\nother = 9\n",
                 NULL, 0, err);
  if (!c)
    return;
  is_int(core_check_modules(c, c->conf, err), -1, "bad values fail");
  like(err->data, "(config):2: chk_a.word: \"Bad\" is not lower-case letters\n",
       "file:line: section.key: reason");
  like(err->data, "(config):5: chk_b.word: \"bad too\" is not lower-case",
       "every failing module is reported");
  like(err->data, "(config):6: chk_k: other = 9 needs a word\n",
       "a failure without a key names the section at its header");
  core_free(c);

  const char *sets[] = {"chk_b.word=X"};
  c = check_core("", sets, 1, err);
  if (!c)
    return;
  is_int(core_check_modules(c, c->conf, err), -1, "a bad --set value fails");
  like(err->data, "--set: chk_b.word: \"X\" is not lower-case letters",
       "a --set value names --set");
  core_free(c);
}

static int64_t g_submit, g_post;
static int g_timer, g_io, g_service, g_read;
static void nop_work(void *arg) { (void)arg; }
static void nop_done(void *arg, int status) {
  (void)arg;
  (void)status;
}
static void nop_call(void *arg) { (void)arg; }
static void nop_timer(ph_timer *t, void *arg) {
  (void)t;
  (void)arg;
}
static void nop_io(ph_io *io, int fd, int revents, void *arg) {
  (void)io;
  (void)fd;
  (void)revents;
  (void)arg;
}

/* A check that breaks the contract: everything but reading must fail. */
static int greedy_check(ph_ctx *ctx, const ph_api *api, const char **key,
                        char *why, size_t whylen) {
  (void)key;
  (void)why;
  (void)whylen;
  void *self;
  g_read = api->conf_int(ctx, "other") == 1;
  ph_timer *t = api->timer_new(ctx, nop_timer, NULL);
  g_timer = t != NULL;
  api->timer_free(t);
  ph_io *io = api->io_new(ctx, 0, 0, nop_io, NULL);
  g_io = io != NULL;
  api->io_free(io);
  g_submit = api->submit(ctx, nop_work, nop_done, NULL);
  g_post = api->post(ctx, nop_call, NULL, NULL);
  g_service = api->service_get(ctx, "greedy.svc", 1, 0, &self) != NULL;
  if (g_service)
    api->service_release(ctx, "greedy.svc");
  return PH_OK;
}

static const int greedy_vt = 1;
static int greedy_init(ph_ctx *ctx, const ph_api *api, void **state) {
  (void)state;
  return api->service_register(ctx, "greedy.svc", 1, 0, &greedy_vt, NULL);
}

static const ph_module greedy = {PH_MODULE_HEADER("greedy", "1"),
                                 .config = word_keys, .init = greedy_init,
                                 .check = greedy_check};

static void expect_refused(const char *when) {
  char name[128];
  snprintf(name, sizeof(name), "%s: conf_* read", when);
  ok(g_read, name);
  snprintf(name, sizeof(name), "%s: timer_new refused", when);
  ok(!g_timer, name);
  snprintf(name, sizeof(name), "%s: io_new refused", when);
  ok(!g_io, name);
  snprintf(name, sizeof(name), "%s: submit refused", when);
  is_int(g_submit, PH_ESTATE, name);
  snprintf(name, sizeof(name), "%s: post refused", when);
  is_int(g_post, PH_ESTATE, name);
  snprintf(name, sizeof(name), "%s: service_get refused", when);
  ok(!g_service, name);
}

static void test_check_is_pure(ph_buf *err) {
  ph_core *c = core_new();
  buf_reset(err);
  core_read_config(c, NULL, "", NULL, 0, NULL, err);
  core_add_module(c, &greedy, err);
  core_validate(c, err);
  /* --check-config: no loop, no pool, no mailbox exist yet. */
  is_int(core_check_modules(c, c->conf, err), 0, "check before setup");
  expect_refused("before setup");
  /* A reload: the loop and the pool run, services can be looked up. */
  ok(core_setup(c, err) == 0 && core_init_modules(c, err) == 0 &&
         core_start_modules(c, err) == 0,
     "the module starts and registers greedy.svc");
  is_int(core_check_modules(c, c->conf, err), 0, "check with a running host");
  expect_refused("running host");
  core_free(c);
}

/* SIGHUP: the new configuration is checked before it replaces the old. */
static void test_check_on_reload(ph_buf *err) {
  ph_core *c = check_core("[chk_a]\nword = first\n", NULL, 0, err);
  if (!c)
    return;
  ok(core_check_modules(c, c->conf, err) == 0 && core_setup(c, err) == 0 &&
         core_init_modules(c, err) == 0 && core_start_modules(c, err) == 0,
     "modules with checks start");
  free(c->config_text);
  c->config_text = strdup("[chk_a]\nword = second\n[chk_b]\nword = B4d\n"
                          "other = 5\n");
  check_calls = 0;
  is_int(core_reload(c), -1, "a reload with a value its check refuses fails");
  ok(check_calls >= 2, "the checks ran on the new configuration");
  is_str(conf_str(c->conf, "chk_a", "word"), "first",
         "all or nothing: the valid new value is not applied either");
  is_int(conf_int(c->conf, "chk_b", "other"), 1, "nor another key's value");
  free(c->config_text);
  c->config_text = strdup("[chk_a]\nword = second\n");
  is_int(core_reload(c), 0, "a reload with good values is applied");
  is_str(conf_str(c->conf, "chk_a", "word"), "second", "the new value is in");
  core_free(c);
}

/* ---- key tables: the layout of the module's minor (ABI 1.2) ---------- */

static const ph_conf_key reserved_keys[] = {
    {.name = "fine", .type = PH_CONF_INT},
    {.name = "taken", .type = PH_CONF_INT, .reserved = {[2] = (void *)1}},
    PH_CONF_END};
static const ph_module reserved_key = {PH_MODULE_HEADER("reserved_key", "1"),
                                       .config = reserved_keys,
                                       .init = nop_init};

/* The 1.0/1.1 element: what a module built then has in its table. */
typedef struct key_v1 {
  const char *name;
  ph_conf_type type;
  const char *def;
  int64_t min, max;
  uint32_t flags;
  const char *env, *help, *choices;
} key_v1;

static const key_v1 v10_keys[] = {
    {"word", PH_CONF_STRING, "v10", 0, 8, 0, NULL, "a word", NULL},
    {"n", PH_CONF_INT, "2", 1, 5, 0, NULL, "a number", NULL},
    {NULL, (ph_conf_type)0, NULL, 0, 0, 0, NULL, NULL, NULL}};
static const ph_module v10_mod = {
    .magic = PH_MODULE_MAGIC,
    .abi_major = PH_ABI_MAJOR,
    .abi_minor = 0,
    .name = "v10_mod",
    .version = "1",
    .config = (const ph_conf_key *)(const void *)v10_keys,
    .init = nop_init};

/* ABI 1.4's .flag: read from 1.4 modules only, checked at load. */
static const ph_conf_key flag_keys[] = {
    PH_CONF_KEY_FLAG("worker-id", "worker_id", PH_CONF_STRING, "w", 1, 64, 0,
                     NULL, "a key with a flag", NULL),
    PH_CONF_END};
static const ph_conf_key bad_flag_keys[] = {
    PH_CONF_KEY_FLAG("Worker_ID", "worker_id", PH_CONF_STRING, "w", 1, 64, 0,
                     NULL, "a flag that is not [a-z0-9-]", NULL),
    PH_CONF_END};
static const ph_conf_key host_flag_keys[] = {
    PH_CONF_KEY_FLAG("config", "path", PH_CONF_STRING, "w", 1, 64, 0, NULL,
                     "a flag that is a host option", NULL),
    PH_CONF_END};
static const ph_conf_key dup_flag_keys[] = {
    PH_CONF_KEY_FLAG("zone", "zone", PH_CONF_STRING, "z", 1, 64, 0, NULL, "",
                     NULL),
    PH_CONF_KEY_FLAG("zone", "zone2", PH_CONF_STRING, "z", 1, 64, 0, NULL, "",
                     NULL),
    PH_CONF_END};

static void test_key_flags(ph_buf *err) {
  ph_module good = {PH_MODULE_HEADER("flagged", "1"), .config = flag_keys,
                    .init = nop_init};
  ph_module old = good;
  old.name = "flagged_old";
  old.abi_minor = 3;
  ph_module bad = {PH_MODULE_HEADER("bad_flag", "1"), .config = bad_flag_keys,
                   .init = nop_init};
  ph_module hostopt = {PH_MODULE_HEADER("host_flag", "1"),
                       .config = host_flag_keys, .init = nop_init};
  ph_module dup = {PH_MODULE_HEADER("dup_flag", "1"), .config = dup_flag_keys,
                   .init = nop_init};
  ph_core *c = core_new();
  buf_reset(err);
  core_read_config(c, NULL, "", NULL, 0, NULL, err);
  is_int(core_add_module(c, &good, err), 0, "a 1.4 module with a flag loads");
  buf_reset(err);
  is_int(core_add_module(c, &old, err), -1,
         "a 1.3 module that sets .flag (its reserved[0]) is refused");
  like(err->data, "key \"worker_id\" uses reserved ph_conf_key fields",
       "and the key is named");
  buf_reset(err);
  is_int(core_add_module(c, &bad, err), -1, "a malformed flag is refused");
  like(err->data, "flag \"Worker_ID\" is not [a-z][a-z0-9-]{1,63}",
       "and the flag is named");
  buf_reset(err);
  is_int(core_add_module(c, &hostopt, err), -1,
         "a flag that is a host option is refused");
  buf_reset(err);
  is_int(core_add_module(c, &dup, err), -1,
         "two keys of one module with one flag are refused");
  like(err->data, "keys \"zone\" and \"zone2\" share the flag \"zone\"",
       "and both keys are named");
  core_free(c);

  /* The flag reaches its key through the configuration. */
  c = core_new();
  buf_reset(err);
  core_read_config(c, NULL, "[flagged]\nworker_id = file\n", NULL, 0, NULL,
                   err);
  const char *names[] = {"worker-id"}, *values[] = {"from-flag"};
  is_int(core_add_flags(c, names, values, 1, err), 0, "the flag is taken");
  is_int(core_add_module(c, &good, err), 0, "the module loads");
  is_int(core_validate(c, err), 0, "and validates");
  is_str(conf_str(c->conf, "flagged", "worker_id"), "from-flag",
         "the flag's value beats the file");
  core_free(c);
}

static void test_key_layouts(ph_buf *err) {
  ph_core *c = core_new();
  buf_reset(err);
  core_read_config(c, NULL, "[v10_mod]\nn = 5\n", NULL, 0, NULL, err);
  is_int(core_add_module(c, &reserved_key, err), -1,
         "a 1.2 key table that sets reserved[] is refused");
  like(err->data,
       "(builtin): module reserved_key: key \"taken\" uses reserved "
       "ph_conf_key fields",
       "reserved key fields: the module and the key are named");
  buf_reset(err);
  is_int(core_add_module(c, &v10_mod, err), 0,
         "a 1.0 module's key table (the 1.1 layout) loads");
  is_int(core_validate(c, err), 0, "and validates");
  is_str(conf_str(c->conf, "v10_mod", "word"), "v10",
         "1.0 table: default read with the old element size");
  is_int(conf_int(c->conf, "v10_mod", "n"), 5, "1.0 table: value read");
  core_free(c);

  /* A table without PH_CONF_END in reach: a clear refusal, not a walk
   * through the rest of memory. */
  enum { MANY = 1100 };
  ph_conf_key *many = calloc(MANY, sizeof(*many));
  for (size_t i = 0; i < MANY - 1; i++) {
    many[i].name = "k";
    many[i].type = PH_CONF_INT;
  }
  ph_module endless = {PH_MODULE_HEADER("endless", "1"), .config = many,
                       .init = nop_init};
  c = core_new();
  buf_reset(err);
  core_read_config(c, NULL, "", NULL, 0, NULL, err);
  is_int(core_add_module(c, &endless, err), -1,
         "a key table longer than 1024 entries is refused");
  like(err->data, "module endless: key table has no PH_CONF_END within 1024",
       "endless table: reason given");
  core_free(c);
  free(many);
}

int main(void) {
  plan_lazy();
  ph_buf err;
  buf_init(&err, 65536);
  test_good_module(&err);
  test_key_flags(&err);
  test_refusals(&err);
  test_missing_provider(&err);
  test_dependency_order(&err);
  test_cycle_and_callbacks(&err);
  test_descriptor_slots(&err);
  test_key_layouts(&err);
  test_check_reports(&err);
  test_check_is_pure(&err);
  test_check_on_reload(&err);
  buf_free(&err);
  return done_testing();
}
