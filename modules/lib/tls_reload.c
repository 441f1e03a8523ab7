/* SPDX-License-Identifier: BSD-2-Clause */
/* The log line, the counter and the file poll of a TLS material reload
 * (tls_reload.h). */
#include "tls_reload.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <proxyhost/log.h>
#include <proxyhost/metrics.h>

#include "metric_table.h"

static const char *const modules[] = {
    "tunnel_server",       "tunnel_client",       "tunnel_agent",
    "controlplane_server", "controlplane_client", "checker", NULL};
static const char *const results[] = {"ok", "error", NULL};
static const ph_label_def labels[] = {{"module", modules},
                                      {"result", results}};
static const ph_metric_def def = {
    .name = "proxyhost_tls_reloads_total",
    .help = "re-reads of a role's TLS certificate, key or CA files (SIGHUP "
            "or a file change); error: the files in use stayed",
    .type = PH_METRIC_COUNTER,
    .labels = labels,
    .n_labels = 2,
};

int ph_tls_reload_init(ph_tls_reload *r, const ph_api *api, ph_ctx *ctx,
                       const char *module, const char *what) {
  memset(r, 0, sizeof(*r));
  r->api = api;
  r->ctx = ctx;
  r->what = what;
  /* Only this module's two series: a process shows the roles it runs. */
  const char *const combos[] = {module, NULL};
  ph_metric *m = ph_metric_register_only(api, ctx, &def, combos, 1);
  if (!m)
    return PH_EINVAL;
  r->ok = api->series(m, (const char *const[]){module, "ok"});
  r->err = api->series(m, (const char *const[]){module, "error"});
  return r->ok && r->err ? PH_OK : PH_EINVAL;
}

void ph_tls_reload_done(const ph_tls_reload *r, int rc, const char *trigger,
                        const char *why) {
  char msg[96];
  if (rc == 0) {
    snprintf(msg, sizeof(msg), "%s reloaded", r->what);
    r->api->inc(r->ok, 1);
    PH_LOG(r->api, r->ctx, PH_LOG_INFO, msg, PH_STR("trigger", trigger));
    return;
  }
  snprintf(msg, sizeof(msg), "%s not reloaded: the files in use stay",
           r->what);
  r->api->inc(r->err, 1);
  PH_LOG(r->api, r->ctx, PH_LOG_WARN, msg, PH_STR("trigger", trigger),
         PH_STR("reason", why ? why : "unknown"));
}

/* ---- the poll ------------------------------------------------------------ */

static int same(const struct stat *a, const struct stat *b) {
  return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
         a->st_size == b->st_size &&
         a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
         a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
         a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
         a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* Reads every file's state; 1 when one differs from the baseline or
 * appeared (a file that is missing now keeps its old baseline). */
static int scan(ph_tls_reload *r) {
  int changed = 0;
  for (int i = 0; i < PH_TLS_WATCH_FILES; i++) {
    struct stat st;
    if (!r->files[i] || stat(r->files[i], &st) < 0)
      continue;
    if (!r->have[i] || !same(&st, &r->seen[i]))
      changed = 1;
    r->seen[i] = st;
    r->have[i] = 1;
  }
  return changed;
}

static void tick(ph_timer *t, void *arg) {
  ph_tls_reload *r = arg;
  (void)t;
  if (scan(r) && r->fn)
    r->fn(r->arg, "file_change");
}

static void drop_files(ph_tls_reload *r) {
  for (int i = 0; i < PH_TLS_WATCH_FILES; i++) {
    free(r->files[i]);
    r->files[i] = NULL;
    r->have[i] = 0;
  }
}

int ph_tls_watch(ph_tls_reload *r, uint64_t interval_ms,
                 const char *const files[PH_TLS_WATCH_FILES],
                 ph_tls_reload_fn fn, void *arg) {
  drop_files(r);
  r->interval_ms = interval_ms;
  r->fn = fn;
  r->arg = arg;
  if (!interval_ms) {
    if (r->timer)
      r->api->timer_set(r->timer, 0, 0);
    return PH_OK;
  }
  for (int i = 0; i < PH_TLS_WATCH_FILES; i++)
    if (files[i] && *files[i] && !(r->files[i] = strdup(files[i])))
      return PH_ENOMEM;
  if (!r->timer && !(r->timer = r->api->timer_new(r->ctx, tick, r)))
    return PH_ENOMEM;
  (void)scan(r);
  r->api->timer_set(r->timer, interval_ms, interval_ms);
  return PH_OK;
}

int ph_tls_watch_key(ph_tls_reload *r,
                     const char *const files[PH_TLS_WATCH_FILES],
                     ph_tls_reload_fn fn, void *arg) {
  int any = 0;
  for (int i = 0; i < PH_TLS_WATCH_FILES; i++)
    any |= files[i] && *files[i];
  int64_t ms = any ? r->api->conf_int(r->ctx, "tls.reload_check_interval") : 0;
  return ph_tls_watch(r, ms > 0 ? (uint64_t)ms : 0, files, fn, arg);
}

void ph_tls_watch_rebase(ph_tls_reload *r) {
  if (r->interval_ms)
    (void)scan(r);
}

void ph_tls_reload_free(ph_tls_reload *r) {
  if (r->timer)
    r->api->timer_free(r->timer);
  r->timer = NULL;
  drop_files(r);
}
