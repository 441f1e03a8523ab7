/* SPDX-License-Identifier: BSD-2-Clause */
/* hello: the smallest useful proxyhost module, built out of tree against
 * the installed SDK (see Makefile). It declares one configuration key,
 * registers a counter, subscribes to the host's reload notifications,
 * greets on start and on every reload, and shows its greeting on the
 * status page (ABI 1.7: a panel with one field). */
#include <stddef.h>
#include <stdlib.h>

#include <proxyhost/module.h>

typedef struct hello {
  ph_ctx *ctx;
  ph_series *greetings;
} hello;

static const ph_api *api;

static const ph_conf_key hello_keys[] = {
    /* name, type, default, min/max length, flags, env alias, help, choices */
    PH_CONF_KEY("greeting", PH_CONF_STRING, "hello, world", 1, 64, 0, NULL,
                "what the module says", NULL),
    PH_CONF_END};

static void greet(hello *h) {
  PH_LOG(api, h->ctx, PH_LOG_INFO, "greeting",
         PH_STR("text", api->conf_str(h->ctx, "greeting")));
  api->inc(h->greetings, 1);
}

static void on_reload(const ph_topic *t, const void *payload, void *arg) {
  (void)t;
  (void)payload;
  greet(arg);
}

/* The status panel: the host calls it for each page or /v1/status read
 * that shows it, and renders (and escapes) what it writes. */
static void fill_panel(void *arg, ph_panel *p) {
  hello *h = arg;
  api->status_field(p, "greeting", api->conf_str(h->ctx, "greeting"));
}

static int hello_init(ph_ctx *ctx, const ph_api *a, void **state) {
  api = a;
  hello *h = calloc(1, sizeof(*h));
  if (!h)
    return PH_ENOMEM;
  *state = h;
  h->ctx = ctx;
  ph_metric_def def = {"proxyhost_hello_greetings_total", "Greetings said",
                       PH_METRIC_COUNTER, NULL, 0, NULL, 0};
  ph_metric *m = api->metric(ctx, &def);
  if (!m)
    return PH_EINVAL;
  h->greetings = api->series(m, NULL);
  ph_topic *reload = api->topic(ctx, "host.reload", "ph.reload/1");
  if (!reload || api->subscribe(ctx, reload, on_reload, h) <= 0)
    return PH_EINVAL;
  /* Status panels came with ABI 1.7: an older host has none. */
  if (api->size > offsetof(ph_api, status_row) &&
      api->status_register(ctx, "hello", "Hello", fill_panel, h) != PH_OK)
    return PH_EINVAL;
  return PH_OK;
}

static int hello_start(void *state) {
  greet(state);
  return PH_OK;
}

static void hello_destroy(void *state) { free(state); }

PROXYHOST_MODULE = {
    PH_MODULE_HEADER("hello", "1.0.0"),
    .description = "example module: greets on start and reload",
    .config = hello_keys,
    .init = hello_init,
    .start = hello_start,
    .destroy = hello_destroy,
};
