/* SPDX-License-Identifier: BSD-2-Clause */
/* Precedence: each declared key's effective value comes from --set, else
 * the environment (PROXYHOST_<SECTION>_<KEY>, then the key's alias), else
 * the files, else its default. conf_finalize sorts the raw entries onto
 * the declared keys, picks each key's source, parses it and reports every
 * error; conf_raw answers the same question before any declaration. */
#if !defined(_GNU_SOURCE) && !defined(_XOPEN_SOURCE)
#define _XOPEN_SOURCE 700 /* strdup */
#endif

#include "conf_int.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- environment and raw values ---------------------------------------- */

/* PROXYHOST_<SECTION>_<KEY>, upper-cased, '.' and '-' as '_', except
 * the '.' of an instance section, written "__" so that [socks5.public]
 * listen (PROXYHOST_SOCKS5__PUBLIC_LISTEN) is not [socks5] public_listen
 * (PROXYHOST_SOCKS5_PUBLIC_LISTEN). */
static char *env_name(const char *section, const char *key) {
  size_t n = 10 + 2 * strlen(section) + 1 + strlen(key); /* '.' takes 2 */
  char *s = malloc(n + 1);
  if (!s)
    return NULL;
  char *p = s + snprintf(s, n + 1, "PROXYHOST_");
  for (const char *q = section; *q; q++) {
    if (*q == '.')
      *p++ = '_';
    *p++ = *q == '.' || *q == '-' ? '_' : (char)toupper((unsigned char)*q);
  }
  *p++ = '_';
  for (const char *q = key; *q; q++)
    *p++ = *q == '.' || *q == '-' ? '_' : (char)toupper((unsigned char)*q);
  *p = '\0';
  return s;
}

static const char *env_get(char *const *env, const char *name) {
  if (!env || !name)
    return NULL;
  size_t n = strlen(name);
  for (; *env; env++)
    if (strncmp(*env, name, n) == 0 && (*env)[n] == '=')
      return *env + n + 1;
  return NULL;
}

/* The environment value for a key; *name gets the variable that set it
 * (malloc'd). The PROXYHOST_ name wins over the key's alias. */
static const char *env_lookup(char *const *env, const char *section,
                              const char *key, const char *alias, char **name) {
  *name = NULL;
  if (!env)
    return NULL;
  char *ours = env_name(section, key);
  const char *v = env_get(env, ours);
  if (v) {
    *name = ours;
    return v;
  }
  free(ours);
  v = env_get(env, alias);
  if (v)
    *name = strdup(alias);
  return v;
}

/* Whether e is a --set "a.b.c" recorded as [a.b] c that may mean
 * section a, key "b.c" (conf_set_cli). */
static int alt_matches(const ph_conf *c, const conf_entry *e,
                       const char *section, const char *key) {
  if (!e->alt)
    return 0;
  const char *sname = c->sects[e->sect].name;
  size_t sl = strlen(section);
  if (strncmp(sname, section, sl) != 0 || sname[sl] != '.')
    return 0;
  size_t il = strlen(sname + sl + 1);
  return strncmp(key, sname + sl + 1, il) == 0 && key[il] == '.' &&
         strcmp(key + il + 1, e->key) == 0;
}

const char *conf_raw(ph_conf *c, const char *section, const char *key,
                     char *const *env) {
  if (!c || !section || !key)
    return NULL;
  int si = conf_find_section(c, section, strlen(section));
  const char *alias = NULL;
  if (si >= 0 && c->sects[si].keys) {
    int k = conf_find_key(&c->sects[si], key);
    if (k >= 0)
      alias = c->sects[si].keys[k].env;
  }
  int cli = -1, first = -1;
  size_t n_file = 0;
  for (size_t i = 0; i < c->n_ents; i++) {
    const conf_entry *e = &c->ents[i];
    if (alt_matches(c, e, section, key)) {
      cli = (int)i; /* only --set entries have alternatives */
      continue;
    }
    if (si < 0 || e->sect != si || strcmp(e->key, key) != 0)
      continue;
    if (!e->file)
      cli = (int)i;
    else if (n_file++ == 0)
      first = (int)i;
  }
  if (cli >= 0)
    return c->ents[cli].value;
  char *name;
  const char *v = env_lookup(env, section, key, alias, &name);
  free(name);
  if (v)
    return v;
  if (first < 0)
    return NULL;
  conf_entry *f = &c->ents[first];
  if (n_file == 1)
    return f->value;
  /* Cached so repeated calls return the same pointer; rebuilt (and the
   * old text freed) only when a later load added lines for this key. */
  if (f->joined && f->joined_n == n_file)
    return f->joined;
  ph_buf b;
  buf_init(&b, 0);
  for (size_t i = (size_t)first; i < c->n_ents; i++) {
    const conf_entry *e = &c->ents[i];
    if (e->sect == si && e->file && strcmp(e->key, key) == 0)
      buf_printf(&b, "%s%s", b.len ? "," : "", e->value);
  }
  if (b.overflow || !b.data) {
    buf_free(&b);
    return NULL;
  }
  free(f->joined);
  f->joined = b.data; /* ownership moves to the cache */
  f->joined_n = n_file;
  return f->joined;
}

/* ---- finalize ----------------------------------------------------------- */

typedef struct fin {
  ph_conf *c;
  ph_buf *err;
  int nerr;
} fin;

static void fin_err(fin *f, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void fin_err(fin *f, const char *file, int line, const char *fmt, ...) {
  va_list ap;
  if (file)
    buf_printf(f->err, "%s:%d: ", file, line);
  va_start(ap, fmt);
  buf_vprintf(f->err, fmt, ap);
  va_end(ap);
  buf_puts(f->err, "\n");
  f->nerr++;
}

/* --set "a.b.c" was recorded as [a.b] c; when [a.b] is not declared but
 * [a] declares the key "b.c", it meant that. Both declared is ambiguous:
 * refused. */
static void resolve_alt_sets(fin *f) {
  ph_conf *c = f->c;
  for (size_t i = 0; i < c->n_ents; i++) {
    conf_entry *e = &c->ents[i];
    if (!e->alt)
      continue;
    e->alt = 0;
    const conf_section *s2 = &c->sects[e->sect];
    const char *dot = strchr(s2->name, '.');
    int s1 = dot ? conf_find_section(c, s2->name, (size_t)(dot - s2->name))
                 : -1;
    size_t n = strlen(dot ? dot + 1 : "") + 1 + strlen(e->key);
    char *dotted = s1 >= 0 ? malloc(n + 1) : NULL;
    if (!dotted)
      continue;
    snprintf(dotted, n + 1, "%s.%s", dot + 1, e->key);
    int in_s1 = c->sects[s1].keys && conf_find_key(&c->sects[s1], dotted) >= 0;
    if (in_s1 && !s2->keys) {
      free(e->key);
      e->key = dotted;
      e->sect = s1;
      continue;
    }
    if (in_s1 && conf_find_key(s2, e->key) >= 0)
      fin_err(f, NULL, 0,
              "--set: %s.%s: ambiguous: [%s] %s or [%s] %s; rename one",
              s2->name, e->key, s2->name, e->key, c->sects[s1].name, dotted);
    free(dotted);
  }
}

/* Whether any raw entry is in section si. */
static int section_has_entries(const ph_conf *c, size_t si) {
  for (size_t i = 0; i < c->n_ents; i++)
    if (c->ents[i].sect == (int)si)
      return 1;
  return 0;
}

/* Sorts every raw entry onto its declared key: --set (last one wins), the
 * first file entry, list lines appended; reports unknown and duplicate
 * keys and continuation lines on non-list keys. */
static void collect_entries(fin *f) {
  ph_conf *c = f->c;
  for (size_t i = 0; i < c->n_ents; i++) {
    const conf_entry *e = &c->ents[i];
    conf_section *s = &c->sects[e->sect];
    if (!s->keys)
      continue; /* reported once per section */
    int k = conf_find_key(s, e->key);
    if (k < 0) {
      if (!e->file)
        buf_puts(f->err, "--set: ");
      const char *near = conf_nearest_key(s, e->key);
      if (near)
        fin_err(f, e->file, e->line,
                "%s.%s: unknown key (did you mean \"%s\"?)", s->name, e->key,
                near);
      else
        fin_err(f, e->file, e->line, "%s.%s: unknown key", s->name, e->key);
      continue;
    }
    const ph_conf_key *key = &s->keys[k];
    conf_value *v = &s->vals[k];
    if (!e->file) {
      v->cli = (int)i;
      continue;
    }
    if (key->type != PH_CONF_LIST) {
      if (e->cont_line) {
        fin_err(f, e->file, e->cont_line,
                "%s.%s: continuation line (leading whitespace) is only "
                "allowed for list keys",
                s->name, e->key);
      } else if (v->first >= 0) {
        const conf_entry *p = &c->ents[v->first];
        fin_err(f, e->file, e->line, "%s.%s: duplicate key, first set at %s:%d",
                s->name, e->key, p->file, p->line);
      } else {
        v->first = (int)i;
      }
      continue;
    }
    /* LIST: check each line on its own so errors point at the right one. */
    long cnt = conf_list_scan(e->value, NULL);
    if (cnt < 0) {
      fin_err(f, e->file, e->line, "%s.%s: empty list item", s->name, e->key);
      continue;
    }
    if (v->first < 0)
      v->first = (int)i;
    if (cnt > 0)
      buf_printf(&v->list, "%s%s", v->list.len ? "," : "", e->value);
  }
}

/* Picks the source of one key, applies it, and checks the default. */
static void finalize_key(fin *f, conf_section *s, size_t ki, char *const *env) {
  const ph_conf_key *k = &s->keys[ki];
  conf_value *v = &s->vals[ki];
  char why[256];
  const char *def = k->def ? k->def : conf_null_default(k->type);
  /* A required key without a default never uses it: nothing to check. */
  if (k->def || !(k->flags & PH_CONF_REQUIRED)) {
    if (conf_value_parse(k, def, NULL, why, sizeof(why)) < 0)
      fin_err(f, NULL, 0, "%s.%s: invalid default: %s", s->name, k->name, why);
  }
  char *ename = NULL;
  const char *text, *ev = NULL;
  if (v->cli >= 0) {
    text = f->c->ents[v->cli].value;
    v->kind = SRC_CLI;
    v->flag = f->c->ents[v->cli].flag;
  } else if ((ev = env_lookup(env, s->name, k->name, k->env, &ename))) {
    v->kind = SRC_ENV;
    v->env_name = ename;
    text = ev;
  } else if (v->first >= 0) {
    const conf_entry *e = &f->c->ents[v->first];
    v->kind = SRC_FILE;
    v->file = e->file;
    v->line = e->line;
    text =
        k->type == PH_CONF_LIST ? (v->list.data ? v->list.data : "") : e->value;
  } else {
    v->kind = SRC_DEFAULT;
    if (k->flags & PH_CONF_REQUIRED) {
      /* Name the other ways to give it: an operator starting a role
       * from its flags or environment (000 section 9) reads what to
       * pass, not only the key's name. */
      char how[160] = "";
      if (k->flag || k->env)
        snprintf(how, sizeof(how), " (%s%s%s%s%s)", k->flag ? "flag -" : "",
                 k->flag ? k->flag : "", k->flag && k->env ? ", " : "",
                 k->env ? "environment " : "", k->env ? k->env : "");
      fin_err(f, s->hdr_file, s->hdr_line, "%s.%s: required key is not set%s",
              s->name, k->name, how);
      return;
    }
    if (conf_value_parse(k, def, v, why, sizeof(why)) < 0)
      conf_value_clear(v); /* already reported as an invalid default */
    return;
  }
  char *trimmed = NULL;
  if (v->kind == SRC_ENV) {
    /* Files and --set are trimmed on the way in; the environment is not. */
    trimmed = conf_dup_trim(text);
    if (!trimmed) {
      fin_err(f, NULL, 0, "out of memory");
      return;
    }
    text = trimmed;
  }
  if (conf_value_parse(k, text, v, why, sizeof(why)) < 0) {
    if (v->kind == SRC_CLI && v->flag)
      buf_printf(f->err, "-%s: ", v->flag);
    else if (v->kind == SRC_CLI)
      buf_puts(f->err, "--set: ");
    else if (v->kind == SRC_ENV)
      buf_printf(f->err, "env %s: ", v->env_name);
    fin_err(f, v->kind == SRC_FILE ? v->file : NULL, v->line, "%s.%s: %s",
            s->name, k->name, why);
  }
  free(trimmed);
}

int conf_finalize(ph_conf *c, char *const *env, ph_buf *err) {
  fin f = {.c = c, .err = err};
  c->ready = 0;
  if (c->decl_err.len || c->decl_err.overflow) {
    if (c->decl_err.data)
      buf_puts(err, c->decl_err.data);
    f.nerr++;
  }
  resolve_alt_sets(&f);
  f.nerr += conf_flags_resolve(c, err);
  for (size_t i = 0; i < c->n_sects; i++) {
    conf_section *s = &c->sects[i];
    conf_values_free(s);
    if (!s->keys && !s->hdr_file && !section_has_entries(c, i))
      continue; /* a --set's guess that resolve_alt_sets undid */
    if (!s->keys) {
      if (!s->hdr_file)
        buf_puts(err, "--set: ");
      /* Every section but the host's belongs to a module (instance). */
      fin_err(&f, s->hdr_file, s->hdr_line,
              "%s: unknown section: no module of that name is loaded; add "
              "%s to [proxyhost] modules",
              s->name, s->name);
      continue;
    }
    s->vals = calloc(s->n_keys + 1, sizeof(conf_value));
    if (!s->vals) {
      fin_err(&f, NULL, 0, "out of memory");
      return -1;
    }
    for (size_t k = 0; k < s->n_keys; k++) {
      s->vals[k].cli = s->vals[k].first = -1;
      buf_init(&s->vals[k].list, 0);
    }
  }
  collect_entries(&f);
  for (size_t o = 0; o < c->n_order; o++) {
    conf_section *s = &c->sects[c->order[o]];
    for (size_t k = 0; k < s->n_keys; k++) {
      finalize_key(&f, s, k, env);
      buf_free(&s->vals[k].list);
    }
  }
  c->ready = f.nerr == 0;
  return c->ready ? 0 : -1;
}
