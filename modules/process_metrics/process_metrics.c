/* SPDX-License-Identifier: BSD-2-Clause */
/* process_metrics: the process's own resource use under the standard
 * Prometheus names (resident and virtual memory, open and maximum file
 * descriptors and start time as gauges, CPU time as a counter), refreshed
 * on a timer from /proc/self. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <proxyhost/module.h>

#include "lib/metric_table.h"

typedef struct pm {
  ph_ctx *ctx;
  ph_timer *timer;
  ph_series *rss, *vsize, *fds, *max_fds, *cpu, *start;
} pm;

static const ph_api *api;

/* The key table, generated from process_metrics.ini.sample (its "; type:"
 * lines) by tools/gen_conf_keys.awk into process_metrics_keys.c. */
extern const ph_conf_key pm_keys[];

static long count_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  if (!d)
    return -1;
  long n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.')
      n++;
  closedir(d);
  return n - 1; /* the directory stream's own fd */
}

/* Reads /proc/self/stat; field numbers as in proc(5). */
static int read_stat(unsigned long long field[25]) {
  char buf[1024];
  FILE *f = fopen("/proc/self/stat", "r");
  if (!f)
    return -1;
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  char *s = strrchr(buf, ')'); /* the command name may hold spaces */
  if (!s)
    return -1;
  int i = 3;
  char *save = NULL;
  for (char *tok = strtok_r(s + 1, " ", &save); tok && i <= 24;
       tok = strtok_r(NULL, " ", &save))
    field[i++] = strtoull(tok, NULL, 10);
  return i > 24 ? 0 : -1;
}

static double boot_time(void) {
  FILE *f = fopen("/proc/stat", "r");
  char line[256];
  double bt = 0;
  while (f && fgets(line, sizeof(line), f))
    if (strncmp(line, "btime ", 6) == 0)
      bt = strtod(line + 6, NULL);
  if (f)
    fclose(f);
  return bt;
}

static void refresh(pm *p) {
  unsigned long long st[25] = {0};
  if (read_stat(st) == 0) {
    double tick = (double)sysconf(_SC_CLK_TCK);
    api->counter_set(p->cpu, (double)(st[14] + st[15]) / tick);
    api->gauge_set(p->vsize, (double)st[23]);
    api->gauge_set(p->rss, (double)st[24] * (double)sysconf(_SC_PAGESIZE));
  }
  long fds = count_fds();
  if (fds >= 0)
    api->gauge_set(p->fds, (double)fds);
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
    api->gauge_set(p->max_fds, (double)rl.rlim_cur);
}

static void tick_cb(ph_timer *t, void *arg) {
  (void)t;
  refresh(arg);
}

/* In registration order (the order /metrics shows them). The CPU
 * counter's total is the kernel's: set, not incremented. */
static const ph_metric_table pm_metrics[] = {
    PH_METRIC("process_resident_memory_bytes", PH_METRIC_GAUGE,
              "Resident memory size in bytes", PH_METRIC_NO_LABELS,
              PH_METRIC_NO_BUCKETS, pm, rss),
    PH_METRIC("process_virtual_memory_bytes", PH_METRIC_GAUGE,
              "Virtual memory size in bytes", PH_METRIC_NO_LABELS,
              PH_METRIC_NO_BUCKETS, pm, vsize),
    PH_METRIC("process_open_fds", PH_METRIC_GAUGE, "Open file descriptors",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, pm, fds),
    PH_METRIC("process_max_fds", PH_METRIC_GAUGE,
              "Maximum open file descriptors", PH_METRIC_NO_LABELS,
              PH_METRIC_NO_BUCKETS, pm, max_fds),
    PH_METRIC("process_cpu_seconds_total", PH_METRIC_COUNTER,
              "Total user and system CPU time spent in seconds",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, pm, cpu),
    PH_METRIC("process_start_time_seconds", PH_METRIC_GAUGE,
              "Start time since the Unix epoch in seconds",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, pm, start),
    PH_METRIC_END};

static int pm_init(ph_ctx *ctx, const ph_api *a, void **state) {
  api = a;
  pm *p = calloc(1, sizeof(*p));
  if (!p)
    return PH_ENOMEM;
  *state = p;
  p->ctx = ctx;
  if (ph_metric_table_register(api, ctx, pm_metrics, p) != PH_OK)
    return PH_EINVAL;
  p->timer = api->timer_new(ctx, tick_cb, p);
  return p->timer ? PH_OK : PH_ENOMEM;
}

static int pm_reload(void *state) {
  pm *p = state;
  uint64_t every = (uint64_t)api->conf_int(p->ctx, "interval");
  api->timer_set(p->timer, every, every);
  return PH_OK;
}

static int pm_start(void *state) {
  pm *p = state;
  unsigned long long st[25] = {0};
  if (read_stat(st) == 0)
    api->gauge_set(p->start, boot_time() + (double)st[22] /
                                               (double)sysconf(_SC_CLK_TCK));
  refresh(p);
  return pm_reload(p);
}

static int pm_stop(void *state) {
  pm *p = state;
  api->timer_set(p->timer, 0, 0);
  return PH_OK;
}

static void pm_destroy(void *state) {
  pm *p = state;
  if (!p)
    return;
  api->timer_free(p->timer);
  free(p);
}

PROXYHOST_MODULE = {
    PH_MODULE_HEADER("process_metrics", "1.0.0"),
    .description = "process memory, fds and CPU as metrics",
    .config = pm_keys,
    .init = pm_init,
    .start = pm_start,
    .reload = pm_reload,
    .stop = pm_stop,
    .destroy = pm_destroy,
};
