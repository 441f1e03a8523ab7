/* SPDX-License-Identifier: BSD-2-Clause */
/* Finding, opening and checking module files, reading their key tables
 * with the layout of the ABI they were built for, and ordering their
 * start. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core.h"

static int valid_name(const char *s) {
  if (!s || !*s || strlen(s) > 64)
    return 0;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
      return 0;
  return 1;
}

int loader_valid_instance(const char *s) {
  return valid_name(s) && strlen(s) <= PH_INSTANCE_NAME_MAX;
}

int loader_entry(const char *entry, char *module, size_t modlen,
                 const char **instance, ph_buf *err) {
  *instance = NULL;
  module[0] = '\0';
  if (strchr(entry, '/')) {
    const char *base = strrchr(entry, '/') + 1;
    const char *so = strstr(base, ".so.");
    if (so && loader_valid_instance(so + 4)) {
      buf_printf(err,
                 "module \"%.200s\": an instance is not given with a path; "
                 "put the directory in [proxyhost] module_path and name it "
                 "NAME.%s\n",
                 entry, so + 4);
      return -1;
    }
    return 0;
  }
  const char *dot = strchr(entry, '.');
  size_t n = dot ? (size_t)(dot - entry) : strlen(entry);
  if (n == 0 || n > PH_MODULE_NAME_MAX || n >= modlen) {
    buf_printf(err, "module \"%.100s\": invalid module name\n", entry);
    return -1;
  }
  memcpy(module, entry, n);
  module[n] = '\0';
  if (!valid_name(module)) {
    buf_printf(err, "module \"%.100s\": invalid module name\n", entry);
    return -1;
  }
  if (dot) {
    if (!loader_valid_instance(dot + 1)) {
      buf_printf(err,
                 "module \"%.100s\": invalid instance name (use NAME.INSTANCE, "
                 "INSTANCE [a-z0-9_], 1-%d bytes)\n",
                 entry, PH_INSTANCE_NAME_MAX);
      return -1;
    }
    *instance = dot + 1;
  }
  return 0;
}

int loader_check(const ph_module *m, const char *file, ph_buf *err) {
  if (m->magic != PH_MODULE_MAGIC) {
    buf_printf(err, "%s: not a proxyhost module (bad magic 0x%08x)\n", file,
               (unsigned)m->magic);
    return -1;
  }
  if (m->abi_major != PH_ABI_MAJOR || m->abi_minor > PH_ABI_MINOR) {
    buf_printf(err,
               "%s: module ABI %u.%u is not compatible with host ABI %u.%u "
               "(major must match, module minor must not exceed the host's)\n",
               file, (unsigned)m->abi_major, (unsigned)m->abi_minor,
               (unsigned)PH_ABI_MAJOR, (unsigned)PH_ABI_MINOR);
    return -1;
  }
  if (!valid_name(m->name)) {
    buf_printf(err, "%s: invalid module name (use [a-z0-9_], 1-64 bytes)\n",
               file);
    return -1;
  }
  if (!m->init) {
    buf_printf(err, "%s: module %s has no init callback\n", file, m->name);
    return -1;
  }
  /* A slot a later minor gave a meaning to was reserved, hence zero, for
   * a module built before that minor: check is reserved[0] of ABI 1.0. */
  int reserved_set = m->abi_minor < 1 && m->check != NULL;
  for (size_t i = 0; i < sizeof(m->reserved) / sizeof(m->reserved[0]); i++)
    reserved_set |= m->reserved[i] != NULL;
  if (reserved_set) {
    buf_printf(err, "%s: module %s uses reserved descriptor fields\n", file,
               m->name);
    return -1;
  }
  return 0;
}

/* ---- key tables: each minor's element layout --------------------------- */

/* ph_conf_key as ABI 1.0 and 1.1 laid it out: 1.2 appended reserved[4].
 * Never in the SDK: only the host reads old tables. */
typedef struct conf_key_v1 {
  const char *name;
  ph_conf_type type;
  const char *def;
  int64_t min, max;
  uint32_t flags;
  const char *env;
  const char *help;
  const char *choices;
} conf_key_v1;

/* 1.2 only appended: every field a 1.1 table has sits where it was. */
#define SAME_OFFSET(f)                                                         \
  _Static_assert(offsetof(conf_key_v1, f) == offsetof(ph_conf_key, f),         \
                 "ph_conf_key." #f " moved")
SAME_OFFSET(name);
SAME_OFFSET(type);
SAME_OFFSET(def);
SAME_OFFSET(min);
SAME_OFFSET(max);
SAME_OFFSET(flags);
SAME_OFFSET(env);
SAME_OFFSET(help);
SAME_OFFSET(choices);
_Static_assert(sizeof(ph_conf_key) == sizeof(conf_key_v1) + 4 * sizeof(void *),
               "ph_conf_key 1.2 is the 1.1 layout plus reserved[4]");
/* 1.4 named the first of them: .flag. */
_Static_assert(offsetof(ph_conf_key, flag) == sizeof(conf_key_v1),
               "ph_conf_key.flag is 1.2's reserved[0]");

/* A walk past this many entries means a table without PH_CONF_END. */
#define KEYS_MAX 1024

static int key_reserved_set(const ph_conf_key *k) {
  for (size_t i = 0; i < sizeof(k->reserved) / sizeof(k->reserved[0]); i++)
    if (k->reserved[i])
      return 1;
  return 0;
}

/* A key's .flag: NULL before ABI 1.4 (it was reserved[0]); a valid name,
 * unique in the table, from 1.4 on. */
static int key_flag_check(ph_ctx *ctx, const ph_conf_key *k, size_t i,
                          const char *file, ph_buf *err) {
  const char *f = k[i].flag;
  if (!f)
    return 0;
  if (ctx->mod->abi_minor < 4) {
    buf_printf(err,
               "%s: module %s: key \"%.64s\" uses reserved ph_conf_key "
               "fields\n",
               file, ctx->mod->name, k[i].name);
    return -1;
  }
  if (!conf_flag_name_ok(f)) {
    buf_printf(err,
               "%s: module %s: key \"%.64s\": flag \"%.64s\" is not "
               "[a-z][a-z0-9-]{1,63} or is a host option\n",
               file, ctx->mod->name, k[i].name, f);
    return -1;
  }
  for (size_t j = 0; j < i; j++)
    if (k[j].flag && strcmp(k[j].flag, f) == 0) {
      buf_printf(err,
                 "%s: module %s: keys \"%.64s\" and \"%.64s\" share the "
                 "flag \"%.64s\"\n",
                 file, ctx->mod->name, k[j].name, k[i].name, f);
      return -1;
    }
  return 0;
}

/* A table in today's layout: used in place, once its reserved fields are
 * seen to be zero and its flags valid. */
static int keys_current(ph_ctx *ctx, const char *file, ph_buf *err) {
  const ph_conf_key *k = ctx->mod->config;
  size_t n = 0;
  for (; n < KEYS_MAX && k[n].name; n++) {
    if (key_reserved_set(&k[n])) {
      buf_printf(err,
                 "%s: module %s: key \"%.64s\" uses reserved ph_conf_key "
                 "fields\n",
                 file, ctx->mod->name, k[n].name);
      return -1;
    }
    if (key_flag_check(ctx, k, n, file, err) < 0)
      return -1;
  }
  if (n == KEYS_MAX) {
    buf_printf(err,
               "%s: module %s: key table has no PH_CONF_END within %d "
               "entries\n",
               file, ctx->mod->name, KEYS_MAX);
    return -1;
  }
  ctx->keys = k;
  return 0;
}

/* A 1.0 or 1.1 table: walked with its own element size and copied into
 * today's layout (reserved zero), which the ctx owns. */
static int keys_convert_v1(ph_ctx *ctx, const char *file, ph_buf *err) {
  const conf_key_v1 *old = (const conf_key_v1 *)(const void *)ctx->mod->config;
  size_t n = 0;
  while (n < KEYS_MAX && old[n].name)
    n++;
  if (n == KEYS_MAX) {
    buf_printf(err,
               "%s: module %s: key table has no PH_CONF_END within %d "
               "entries\n",
               file, ctx->mod->name, KEYS_MAX);
    return -1;
  }
  ph_conf_key *k = calloc(n + 1, sizeof(*k)); /* the last is the end */
  if (!k) {
    buf_printf(err, "%s: out of memory\n", file);
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    k[i].name = old[i].name;
    k[i].type = old[i].type;
    k[i].def = old[i].def;
    k[i].min = old[i].min;
    k[i].max = old[i].max;
    k[i].flags = old[i].flags;
    k[i].env = old[i].env;
    k[i].help = old[i].help;
    k[i].choices = old[i].choices;
  }
  ctx->keys = k;
  ctx->keys_owned = k;
  return 0;
}

int loader_keys(ph_ctx *ctx, const char *file, ph_buf *err) {
  static const ph_conf_key none[] = {PH_CONF_END};
  ctx->keys = none;
  ctx->keys_owned = NULL;
  if (!ctx->mod->config)
    return 0;
  if (ctx->mod->abi_minor < 2)
    return keys_convert_v1(ctx, file, err);
  return keys_current(ctx, file, err);
}

/* ---- module files ---------------------------------------------------------
 */

static int is_file(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* name -> first existing file among DIR/name.so, DIR/name/.libs/name.so
 * (a libtool build tree) and DIR/.libs/name.so. */
static char *find_module(const char *name, const char *const *dirs,
                         size_t n_dirs) {
  static const char *const shapes[] = {"%s/%s.so", "%s/%s/.libs/%s.so",
                                       "%s/.libs/%s.so"};
  ph_buf p;
  buf_init(&p, 4096);
  for (size_t d = 0; d < n_dirs; d++)
    for (size_t s = 0; s < 3; s++) {
      buf_reset(&p);
      if (s == 1)
        buf_printf(&p, shapes[s], dirs[d], name, name);
      else
        buf_printf(&p, shapes[s], dirs[d], name);
      if (!p.overflow && is_file(p.data))
        return p.data; /* ownership passes to the caller */
    }
  buf_free(&p);
  return NULL;
}

int loader_open(const char *spec, const char *const *dirs, size_t n_dirs,
                ph_ctx *out, ph_buf *err) {
  char *path;
  if (strchr(spec, '/')) {
    path = strdup(spec);
  } else {
    if (!valid_name(spec)) {
      buf_printf(err, "module \"%s\": invalid module name\n", spec);
      return -1;
    }
    path = find_module(spec, dirs, n_dirs);
    if (!path) {
      buf_printf(err, "module \"%s\": not found in the module path (", spec);
      for (size_t d = 0; d < n_dirs; d++)
        buf_printf(err, "%s%s", d ? ":" : "", dirs[d]);
      buf_puts(err, ")\n");
      return -1;
    }
  }
  if (!path)
    return -1;
  void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    buf_printf(err, "%s: cannot load: %s\n", path, dlerror());
    free(path);
    return -1;
  }
  const ph_module *m = dlsym(dl, PH_MODULE_SYMBOL);
  if (!m) {
    buf_printf(err, "%s: no %s symbol: not a proxyhost module\n", path,
               PH_MODULE_SYMBOL);
    dlclose(dl);
    free(path);
    return -1;
  }
  if (loader_check(m, path, err) < 0) {
    dlclose(dl);
    free(path);
    return -1;
  }
  if (!strchr(spec, '/') && strcmp(m->name, spec) != 0) {
    buf_printf(err, "%s: file for module \"%s\" declares the name \"%s\"\n",
               path, spec, m->name);
    dlclose(dl);
    free(path);
    return -1;
  }
  out->mod = m;
  out->dl = dl;
  out->path = path;
  return 0;
}

static int list_has(const char *const *list, const char *name) {
  for (; list && *list; list++)
    if (strcmp(*list, name) == 0)
      return 1;
  return 0;
}

/* Kahn's algorithm over "requires a service another module provides";
 * ties keep configuration order. Missing providers and cycles are errors. */
int loader_order(ph_ctx *const *mods, size_t n, size_t *order, ph_buf *err) {
  int bad = 0;
  for (size_t i = 0; i < n; i++)
    for (const char *const *r = mods[i]->mod->requires; r && *r; r++) {
      int found = 0;
      for (size_t j = 0; j < n && !found; j++)
        found = list_has(mods[j]->mod->provides, *r);
      if (!found) {
        buf_printf(err,
                   "module %s requires service \"%s\", which no loaded "
                   "module provides\n",
                   mods[i]->name, *r);
        bad = 1;
      }
    }
  if (bad)
    return -1;
  char placed[PH_MAX_MODULES] = {0};
  size_t done = 0;
  while (done < n) {
    size_t pick = n;
    for (size_t i = 0; i < n && pick == n; i++) {
      if (placed[i])
        continue;
      int ready = 1;
      for (const char *const *r = mods[i]->mod->requires; r && *r && ready;
           r++)
        for (size_t j = 0; j < n; j++)
          if (j != i && !placed[j] && list_has(mods[j]->mod->provides, *r))
            ready = 0;
      if (ready)
        pick = i;
    }
    if (pick == n) {
      buf_puts(err, "modules require each other's services in a cycle:");
      for (size_t i = 0; i < n; i++)
        if (!placed[i])
          buf_printf(err, " %s", mods[i]->name);
      buf_puts(err, "\n");
      return -1;
    }
    placed[pick] = 1;
    order[done++] = pick;
  }
  return 0;
}
