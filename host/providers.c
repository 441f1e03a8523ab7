/* SPDX-License-Identifier: BSD-2-Clause */
/* A loaded module that requires a service no loaded module provides: a
 * configuration error (exit 2), found before anything starts, naming the
 * modules in the module path that would provide it. Their descriptors are
 * read after dlopen (provides), never initialised; the scan is bounded. */
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core.h"

#define PROVIDERS_MAX_FILES 128 /* module files opened per service */

static int list_has(const char *const *list, const char *name) {
  for (; list && *list; list++)
    if (strcmp(*list, name) == 0)
      return 1;
  return 0;
}

/* Appends ", NAME" (or "NAME") when the module in path provides service
 * and NAME is not in out yet. */
static void probe_file(const char *path, const char *service, ph_buf *out) {
  void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!dl)
    return;
  const ph_module *m = dlsym(dl, PH_MODULE_SYMBOL);
  ph_buf quiet;
  buf_init(&quiet, 1024);
  if (m && loader_check(m, path, &quiet) == 0 &&
      list_has(m->provides, service)) {
    size_t n = strlen(m->name);
    const char *p = out->data;
    int seen = 0;
    for (; p && (p = strstr(p, m->name)); p += n)
      if ((p == out->data || p[-1] == ' ') && (p[n] == ',' || !p[n]))
        seen = 1;
    if (!seen)
      buf_printf(out, "%s%s", out->len ? ", " : "", m->name);
  }
  buf_free(&quiet);
  dlclose(dl);
}

static int regular(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* DIR/x.so and, in a build tree, DIR/x/.libs/x.so, in name order. */
static void scan_dir(const char *dir, const char *service, ph_buf *out,
                     size_t *budget) {
  struct dirent **ents;
  int n = scandir(dir, &ents, NULL, alphasort);
  if (n < 0)
    return;
  ph_buf path;
  buf_init(&path, 4096);
  for (int i = 0; i < n; i++) {
    const char *e = ents[i]->d_name;
    size_t len = strlen(e);
    if (e[0] != '.' && *budget > 0) {
      buf_reset(&path);
      if (len > 3 && strcmp(e + len - 3, ".so") == 0)
        buf_printf(&path, "%s/%s", dir, e);
      else
        buf_printf(&path, "%s/%s/.libs/%s.so", dir, e, e);
      if (!path.overflow && path.data && regular(path.data)) {
        (*budget)--;
        probe_file(path.data, service, out);
      }
    }
    free(ents[i]);
  }
  free(ents);
  buf_free(&path);
}

int core_check_requires(ph_core *c, ph_buf *err) {
  int rc = 0;
  const char *dirs[16];
  size_t n_dirs = core_module_dirs(c, dirs, 16);
  for (size_t i = 0; i < c->n_mods; i++)
    for (const char *const *r = c->mods[i]->mod->requires; r && *r; r++) {
      int found = 0;
      for (size_t j = 0; j < c->n_mods && !found; j++)
        found = list_has(c->mods[j]->mod->provides, *r);
      if (found)
        continue;
      ph_buf who;
      buf_init(&who, 1024);
      size_t budget = PROVIDERS_MAX_FILES;
      for (size_t d = 0; d < n_dirs; d++)
        scan_dir(dirs[d], *r, &who, &budget);
      conf_where_item(c->conf, "proxyhost", "modules", c->mods[i]->name,
                      err);
      buf_printf(err,
                 "proxyhost.modules: %s requires the \"%s\" service, which no "
                 "loaded module provides; ",
                 c->mods[i]->name, *r);
      if (who.len)
        buf_printf(err, "add one to [proxyhost] modules: %s\n", who.data);
      else
        buf_puts(err, "no module in the module path provides it\n");
      buf_free(&who);
      rc = -1;
    }
  return rc;
}
