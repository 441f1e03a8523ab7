/* SPDX-License-Identifier: BSD-2-Clause */
/* See core_panel.h. */
#include "core_panel.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


/* Descriptors counted at most: past it the panel shows the bound. */
#define PANEL_FDS_MAX 1048576

static long open_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  if (!d)
    return -1;
  long n = 0;
  struct dirent *e;
  while (n < PANEL_FDS_MAX && (e = readdir(d)) != NULL)
    if (e->d_name[0] != '.')
      n++;
  closedir(d);
  return n > 0 ? n - 1 : n; /* without the one opendir holds */
}

static long long rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "re");
  if (!f)
    return -1;
  long long size = 0, rss = -1;
  if (fscanf(f, "%lld %lld", &size, &rss) != 2)
    rss = -1;
  fclose(f);
  long page = sysconf(_SC_PAGESIZE);
  return rss < 0 || page <= 0 ? -1 : rss * page;
}

static void iso_utc(time_t t, char *out, size_t cap) {
  struct tm tm;
  if (t <= 0 || !gmtime_r(&t, &tm) ||
      strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
    out[0] = '\0';
}

static void fill(void *arg, ph_panel *p) {
  ph_core *c = arg;
  status_api_field(p, "version", PACKAGE_VERSION);
  status_api_field(p, "abi", PH_ABI_STRING);
  status_api_field(p, "config", c->config_path ? c->config_path : "");
  time_t now = time(NULL);
  status_api_field_int(p, "uptime_s",
                       now > c->started_wall ? now - c->started_wall : 0);
  ph_buf why;
  buf_init(&why, 4096);
  int ready = c->panel_ready && c->panel_ready(c, &why) == 1;
  status_api_field(p, "ready", ready ? "yes" : "no");
  /* One line per reason: joined with "; ". */
  ph_buf joined;
  buf_init(&joined, 4096);
  buf_puts(&joined, "");
  const char *r = why.data ? why.data : "";
  while (!ready && *r) {
    const char *nl = strchr(r, '\n');
    size_t n = nl ? (size_t)(nl - r) : strlen(r);
    if (n > 0) {
      if (joined.len > 0)
        buf_puts(&joined, "; ");
      buf_append(&joined, r, n);
    }
    r += n + (nl != NULL);
  }
  status_api_field(p, "ready_reasons", joined.data ? joined.data : "");
  buf_free(&joined);
  buf_free(&why);
  char at[32];
  iso_utc(c->last_reload, at, sizeof(at));
  status_api_field(p, "last_reload", at);
  status_api_field(p, "last_reload_result",
                   c->last_reload_result ? c->last_reload_result : "");
  long fds = open_fds();
  if (fds >= 0)
    status_api_field_int(p, "open_fds", fds);
  else
    status_api_field(p, "open_fds", NULL);
  long long rss = rss_bytes();
  if (rss >= 0)
    status_api_field_int(p, "rss_bytes", rss);
  else
    status_api_field(p, "rss_bytes", NULL);
  static const char *const cols[] = {"instance", "module", "version"};
  if (status_api_table(p, "modules", cols, 3, 0) != PH_OK)
    return;
  for (size_t i = 0; i < c->n_mods; i++) {
    const ph_ctx *x = c->mods[i];
    const char *row[] = {x->name, x->mod->name ? x->mod->name : "",
                         x->mod->version ? x->mod->version : ""};
    if (status_api_row(p, row, 3) == PH_ELIMIT)
      break;
  }
}

int core_panel_register(ph_core *c, admin_ready_fn ready) {
  c->panel_ready = ready;
  ph_buf err;
  buf_init(&err, 512);
  int rc = status_add(c->status, NULL, "proxyhost", "proxyhost", "process",
                      "Process", fill, c, &err);
  buf_free(&err);
  return rc;
}
