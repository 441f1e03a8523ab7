/* SPDX-License-Identifier: BSD-2-Clause */
/* keys_v11: a module as an SDK 1.1 build made it. Its descriptor says ABI
 * 1.1, and its key table has the 1.1 element layout: ph_conf_key without
 * the reserved[] that 1.2 appended, written here with a test-only copy of
 * that struct. The host must walk the table with the 1.1 element size and
 * convert it. init reads every key back through the API and reports what
 * it got as gauges and in one log line, so tests see what the host gave
 * the module. */
#include <stdlib.h>
#include <string.h>

#include <proxyhost/module.h>

/* ph_conf_key of ABI 1.0 and 1.1, field for field. */
typedef struct key_v11 {
  const char *name;
  ph_conf_type type;
  const char *def;
  int64_t min, max;
  uint32_t flags;
  const char *env;
  const char *help;
  const char *choices;
} key_v11;

static const key_v11 v11_keys[] = {
    {"greeting", PH_CONF_STRING, "hi", 1, 32, 0, NULL, "a string", NULL},
    {"count", PH_CONF_INT, "3", 0, 100, 0, NULL, "a bounded integer", NULL},
    {"tags", PH_CONF_LIST, "a,b", 0, 8, 0, NULL, "a list", NULL},
    {"mode", PH_CONF_ENUM, "fast", 0, 0, 0, NULL, "an enum", "fast|safe"},
    {"secret", PH_CONF_STRING, "", 0, 64, PH_CONF_SENSITIVE, "KEYS_V11_SECRET",
     "a secret", NULL},
    {"timeout", PH_CONF_DURATION, "5s", 100, 60000, PH_CONF_RESTART, NULL,
     "read at start only", NULL},
    {NULL, (ph_conf_type)0, NULL, 0, 0, 0, NULL, NULL, NULL}};

static const ph_api *api;

static int gauge(ph_ctx *ctx, const char *name, double v) {
  ph_metric_def d = {name, "what keys_v11 read", PH_METRIC_GAUGE, NULL, 0, NULL,
                     0};
  ph_metric *m = api->metric(ctx, &d);
  if (!m)
    return -1;
  api->gauge_set(api->series(m, NULL), v);
  return 0;
}

static int v11_init(ph_ctx *ctx, const ph_api *a, void **state) {
  (void)state;
  api = a;
  const char *greeting = api->conf_str(ctx, "greeting");
  const char *mode = api->conf_str(ctx, "mode");
  const char *tags = api->conf_str(ctx, "tags");
  size_t n_tags = api->conf_list_len(ctx, "tags");
  const char *last = n_tags ? api->conf_list_at(ctx, "tags", n_tags - 1) : "";
  if (!greeting || !mode || !tags || !last)
    return PH_EINVAL;
  if (gauge(ctx, "keys_v11_count", (double)api->conf_int(ctx, "count")) < 0 ||
      gauge(ctx, "keys_v11_tags", (double)n_tags) < 0 ||
      gauge(ctx, "keys_v11_greeting_bytes", (double)strlen(greeting)) < 0 ||
      gauge(ctx, "keys_v11_timeout_ms", (double)api->conf_int(ctx, "timeout")) <
          0 ||
      gauge(ctx, "keys_v11_secret_bytes",
            (double)strlen(api->conf_str(ctx, "secret"))) < 0 ||
      gauge(ctx, "keys_v11_safe", strcmp(mode, "safe") == 0) < 0)
    return PH_EINVAL;
  PH_LOG(api, ctx, PH_LOG_INFO, "keys_v11 read", PH_STR("greeting", greeting),
         PH_STR("mode", mode), PH_STR("tags", tags), PH_STR("last_tag", last));
  return PH_OK;
}

/* Written out as a 1.1 build of PROXYHOST_MODULE would have filled it. */
PROXYHOST_MODULE = {
    .magic = PH_MODULE_MAGIC,
    .abi_major = 1,
    .abi_minor = 1,
    .name = "keys_v11",
    .version = "1.1.0",
    .description = "a module built against SDK 1.1 (1.1 key table layout)",
    .config = (const ph_conf_key *)(const void *)v11_keys,
    .init = v11_init,
};
