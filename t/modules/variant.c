/* SPDX-License-Identifier: BSD-2-Clause */
/* One source, several test modules (selected with -DVARIANT_*): each
 * breaks one rule the loader must enforce, or plays a simple part in a
 * lifecycle test. */
#include <stddef.h>

#include <proxyhost/module.h>

#if defined(VARIANT_NO_SYMBOL)

/* A shared object without the proxyhost_module descriptor. */
PH_EXPORT const int not_a_proxyhost_module = 1;

#else

static const ph_api *api;

static int variant_init(ph_ctx *ctx, const ph_api *a, void **state) {
  (void)ctx;
  (void)state;
  api = a;
  return PH_OK;
}

#if defined(VARIANT_USER)
typedef struct probe_echo_v1 {
  int (*echo)(void *self, int x);
} probe_echo_v1;
static const probe_echo_v1 *echo;
static void *echo_self;
static ph_ctx *my_ctx;

static int user_init(ph_ctx *ctx, const ph_api *a, void **state) {
  my_ctx = ctx;
  return variant_init(ctx, a, state);
}

/* Fails unless the provider started first (echo answers -1 before). */
static int user_start(void *state) {
  (void)state;
  echo = api->service_get(my_ctx, "probe.echo", 1, 0, &echo_self);
  if (!echo || echo->echo(echo_self, 41) != 42)
    return PH_ESTATE;
  PH_LOG(api, my_ctx, PH_LOG_INFO, "probe.echo answered", PH_INT("x", 42));
  return PH_OK;
}

static const char *const user_requires[] = {"probe.echo", NULL};
#endif

#if defined(VARIANT_NEEDS_PROVIDER)
static const char *const needs[] = {"no.such.service", NULL};
#endif

#if defined(VARIANT_MINOR1)
/* Declares ABI 1.1 (as a module built against the 1.1 headers does) and
 * uses only what 1.1 has: check, counter_set, service_provided, post. It
 * must load and run unchanged on a later minor. */
static ph_ctx *m1_ctx;
static ph_series *m1_calls, *m1_total;
static int m1_checked;

static int m1_check(ph_ctx *ctx, const ph_api *a, const char **key,
                    char *why, size_t whylen) {
  (void)key;
  (void)why;
  (void)whylen;
  m1_checked = a->service_provided(ctx, "no.such.service") == 0;
  return PH_OK;
}

static ph_series *m1_counter(const char *name) {
  ph_metric_def d = {name, "1.1 module", PH_METRIC_COUNTER, NULL, 0, NULL, 0};
  ph_metric *m = api->metric(m1_ctx, &d);
  return m ? api->series(m, NULL) : NULL;
}

static int m1_init(ph_ctx *ctx, const ph_api *a, void **state) {
  m1_ctx = ctx;
  variant_init(ctx, a, state);
  /* The 1.1 table is a prefix of the host's. */
  if (a->abi_major != PH_ABI_MAJOR || a->abi_minor < 1 ||
      a->size <= offsetof(ph_api, service_provided) || !m1_checked)
    return PH_EINVAL;
  m1_calls = m1_counter("minor1_calls_total");
  m1_total = m1_counter("minor1_external_total");
  return m1_calls && m1_total ? PH_OK : PH_EINVAL;
}

static void m1_call(void *arg) {
  (void)arg;
  api->inc(m1_calls, 1);
  api->counter_set(m1_total, 1.5);
}

static int m1_start(void *state) {
  (void)state;
  return api->post(m1_ctx, m1_call, NULL, NULL);
}
#endif

PROXYHOST_MODULE = {
#if defined(VARIANT_BAD_MAGIC)
    .magic = 0x12345678u,
    .abi_major = PH_ABI_MAJOR,
    .abi_minor = PH_ABI_MINOR,
    .name = "bad_magic",
    .version = "1.0",
#elif defined(VARIANT_BAD_MAJOR)
    .magic = PH_MODULE_MAGIC,
    .abi_major = PH_ABI_MAJOR + 1,
    .abi_minor = 0,
    .name = "bad_major",
    .version = "1.0",
#elif defined(VARIANT_NEW_MINOR)
    .magic = PH_MODULE_MAGIC,
    .abi_major = PH_ABI_MAJOR,
    .abi_minor = PH_ABI_MINOR + 1,
    .name = "new_minor",
    .version = "1.0",
#elif defined(VARIANT_MINOR1)
    .magic = PH_MODULE_MAGIC,
    .abi_major = PH_ABI_MAJOR,
    .abi_minor = 1,
    .name = "minor1",
    .version = "1.0",
    .check = m1_check,
    .start = m1_start,
#elif defined(VARIANT_DUP)
    PH_MODULE_HEADER("dup", "1.0"),
#elif defined(VARIANT_NEEDS_PROVIDER)
    PH_MODULE_HEADER("needs_provider", "1.0"),
    .requires = needs,
#elif defined(VARIANT_USER)
    PH_MODULE_HEADER("probe_user", "1.0"),
    .requires = user_requires,
    .start = user_start,
#else
#error "choose a VARIANT_*"
#endif
    .description = "loader test module",
#if defined(VARIANT_USER)
    .init = user_init,
#elif defined(VARIANT_MINOR1)
    .init = m1_init,
#else
    .init = variant_init,
#endif
};

#endif
