/* SPDX-License-Identifier: BSD-2-Clause */
/* Reading configuration text: INI files and strings, includes and --set
 * assignments, recorded as raw entries (section, key, value, file:line).
 *
 * Loading decides nothing about keys: the key tables arrive later
 * (modules are loaded after the host reads a few keys), so duplicates,
 * list appending, types and bounds are all decided in conf_finalize
 * (conf_resolve.c). */
#if !defined(_GNU_SOURCE) && !defined(_XOPEN_SOURCE)
#define _XOPEN_SOURCE 700 /* realpath, glob, strdup, fileno */
#endif

#include "conf_int.h"

#include <ctype.h>
#include <errno.h>
#include <glob.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <ini.h>

/* ---- errors and entries ------------------------------------------------ */

static void lc_err(load_ctx *lc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void lc_err(load_ctx *lc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  buf_vprintf(lc->err, fmt, ap);
  va_end(ap);
  buf_puts(lc->err, "\n");
  lc->nerr++;
}

void conf_ld_err(loader *ld, const char *fmt, ...) {
  va_list ap;
  buf_printf(ld->lc->err, "%s:%d: ", ld->name, ld->line);
  va_start(ap, fmt);
  buf_vprintf(ld->lc->err, fmt, ap);
  va_end(ap);
  buf_puts(ld->lc->err, "\n");
  ld->lc->nerr++;
}

/* Counts one more entry or continuation line against the bound. */
static int take_line(loader *ld) {
  ph_conf *c = ld->lc->c;
  if (c->n_lines < CONF_MAX_ENTRIES) {
    c->n_lines++;
    return 0;
  }
  if (!ld->lc->full_reported)
    conf_ld_err(ld, "too many entries (max %d)", CONF_MAX_ENTRIES);
  else
    ld->lc->nerr++;
  ld->lc->full_reported = 1;
  return -1;
}

static int add_entry(ph_conf *c, int sect, const char *key, const char *val,
                     const char *file, int line) {
  if (c->n_ents == c->cap_ents) {
    size_t cap = c->cap_ents ? c->cap_ents * 2 : 32;
    conf_entry *e = realloc(c->ents, cap * sizeof(*e));
    if (!e)
      return -1;
    c->ents = e;
    c->cap_ents = cap;
  }
  conf_entry *e = &c->ents[c->n_ents];
  memset(e, 0, sizeof(*e));
  e->key = strdup(key);
  e->value = strdup(val);
  if (!e->key || !e->value) {
    free(e->key);
    free(e->value);
    return -1;
  }
  e->sect = sect;
  e->len = strlen(val);
  e->cap = e->len + 1;
  e->file = file;
  e->line = line;
  return (int)c->n_ents++;
}

/* Appends ",piece" to an entry (continuation lines of a list). */
static int entry_append(conf_entry *e, const char *piece) {
  size_t n = strlen(piece), need = e->len + 1 + n + 1;
  if (need > e->cap) {
    size_t cap = e->cap * 2 > need ? e->cap * 2 : need;
    char *p = realloc(e->value, cap);
    if (!p)
      return -1;
    e->value = p;
    e->cap = cap;
  }
  if (e->len)
    e->value[e->len++] = ',';
  memcpy(e->value + e->len, piece, n + 1);
  e->len += n;
  return 0;
}

/* ---- files, strings and includes -------------------------------------- */

static int load_path(load_ctx *lc, const char *path, int depth,
                     const loader *from);

/* Expands one include pattern, relative to the including file. */
static void do_include(loader *ld, const char *pattern) {
  if (!*pattern) {
    conf_ld_err(ld, "include: empty pattern");
    return;
  }
  ph_buf full;
  buf_init(&full, 8192);
  const char *slash = strrchr(ld->name, '/');
  if (pattern[0] != '/' && slash) {
    /* The directory is literal text: escape what glob would expand. */
    for (const char *p = ld->name; p < slash; p++) {
      if (strchr("*?[\\", *p))
        buf_append(&full, "\\", 1);
      buf_append(&full, p, 1);
    }
    buf_append(&full, "/", 1);
  }
  buf_puts(&full, pattern);
  if (full.overflow || !full.data) {
    conf_ld_err(ld, "include: pattern too long");
    buf_free(&full);
    return;
  }
  glob_t g;
  int r = glob(full.data, 0, NULL, &g);
  if (r == 0 && ld->depth + 1 > CONF_MAX_DEPTH) {
    conf_ld_err(ld, "include: nested deeper than %d files", CONF_MAX_DEPTH);
  } else if (r == 0) {
    for (size_t i = 0; i < g.gl_pathc; i++)
      load_path(ld->lc, g.gl_pathv[i], ld->depth + 1, ld);
  } else if (r == GLOB_NOMATCH && !strpbrk(pattern, "*?[")) {
    /* A plain file name that does not exist is a typo, not an empty
     * conf.d. */
    conf_ld_err(ld, "include: %s: no such file", full.data);
  } else if (r != GLOB_NOMATCH) {
    /* No match of a pattern is normal (an empty conf.d). */
    conf_ld_err(ld, "include: cannot expand %s", full.data);
  }
  globfree(&g);
  buf_free(&full);
}

/* A continuation line: inih passes it whole, inline comment included. */
static void on_continuation(loader *ld, const char *text) {
  char piece[CONF_MAX_LINE + 1];
  size_t n = (size_t)(conf_find_chars_or_comment(text, NULL) - text);
  if (n > CONF_MAX_LINE)
    n = CONF_MAX_LINE;
  while (n > 0 && isspace((unsigned char)text[n - 1]))
    n--;
  memcpy(piece, text, n);
  piece[n] = '\0';
  if (!n || ld->last == LAST_NONE)
    return; /* a comment, or the line continues a rejected key */
  if (take_line(ld) < 0)
    return;
  if (ld->last == LAST_INCLUDE) {
    do_include(ld, piece);
    return;
  }
  conf_entry *e = &ld->lc->c->ents[ld->last];
  if (entry_append(e, piece) < 0) {
    conf_ld_err(ld, "out of memory");
    return;
  }
  if (!e->cont_line)
    e->cont_line = ld->line;
}

/* inih's handler. Errors are reported here, so it always returns 1 (OK):
 * inih's own error count then only reflects what the reader missed. */
static int on_pair(void *user, const char *section, const char *name,
                   const char *value) {
  loader *ld = user;
  ph_conf *c = ld->lc->c;
  (void)section; /* tracked by classify(): inih truncates long names */
  if (!value)
    value = "";
  if (ld->cont) {
    on_continuation(ld, value);
    return 1;
  }
  ld->last = LAST_NONE;
  if (ld->sect == SECT_BAD)
    return 1;
  if (ld->sect == SECT_NONE) {
    conf_ld_err(ld, "%s: key outside any section", name);
    return 1;
  }
  if (!*name) {
    conf_ld_err(ld, "missing key name before '='");
    return 1;
  }
  if (take_line(ld) < 0)
    return 1;
  if (strcmp(c->sects[ld->sect].name, "proxyhost") == 0 &&
      strcmp(name, "include") == 0) {
    ld->last = LAST_INCLUDE;
    do_include(ld, value);
    return 1;
  }
  int i = add_entry(c, ld->sect, name, value, ld->name, ld->line);
  if (i < 0) {
    conf_ld_err(ld, "out of memory");
    return 1;
  }
  ld->last = i;
  return 1;
}

static void parse(loader *ld) {
  ld->prev = 0;
  ld->sect = SECT_NONE;
  ld->last = LAST_NONE;
  conf_inih_pin();
  int r = ini_parse_stream(conf_read_line, ld, on_pair, ld);
  if (r > 0 && !ld->syntax) {
    ld->line = r;
    conf_ld_err(ld, "syntax error");
  } else if (r < 0) {
    lc_err(ld->lc, "%s: cannot parse (inih error %d)", ld->name, r);
  }
}

static int add_source(ph_conf *c, const char *name, char *real) {
  if (c->n_srcs == CONF_MAX_SOURCES)
    return -1;
  char *copy = strdup(name);
  if (!copy)
    return -1;
  c->srcs[c->n_srcs].name = copy;
  c->srcs[c->n_srcs].real = real;
  c->n_srcs++;
  return (int)c->n_srcs - 1;
}

/* Reports a problem with a file to read, naming the include line that
 * asked for it (from), if any. */
static void file_err(load_ctx *lc, const loader *from, const char *path,
                     const char *what) {
  if (from)
    buf_printf(lc->err, "%s:%d: include: ", from->name, from->line);
  lc_err(lc, "%s: %s", path, what);
}

/* Reads one file; from is the including file, NULL at the top. */
static int load_path(load_ctx *lc, const char *path, int depth,
                     const loader *from) {
  ph_conf *c = lc->c;
  int nerr = lc->nerr;
  char *real = realpath(path, NULL);
  if (!real) {
    file_err(lc, from, path, strerror(errno));
    return -1;
  }
  for (size_t i = 0; i < c->n_srcs; i++)
    if (c->srcs[i].real && strcmp(c->srcs[i].real, real) == 0) {
      file_err(lc, from, path, "already read (include cycle?)");
      free(real);
      return -1;
    }
  FILE *fp = fopen(path, "r");
  if (!fp) {
    file_err(lc, from, path, strerror(errno));
    free(real);
    return -1;
  }
  struct stat st;
  if (fstat(fileno(fp), &st) < 0 || !S_ISREG(st.st_mode)) {
    file_err(lc, from, path, "not a regular file");
    fclose(fp);
    free(real);
    return -1;
  }
  int si = add_source(c, path, real);
  if (si < 0) {
    file_err(lc, from, path, "too many files or out of memory");
    fclose(fp);
    free(real);
    return -1;
  }
  loader ld = {.lc = lc, .name = c->srcs[si].name, .depth = depth, .fp = fp};
  parse(&ld);
  if (ferror(fp))
    lc_err(lc, "%s: read error", ld.name);
  fclose(fp);
  return lc->nerr > nerr ? -1 : 0;
}

int conf_load_file(ph_conf *c, const char *path, ph_buf *err) {
  load_ctx lc = {.c = c, .err = err};
  c->ready = 0;
  load_path(&lc, path, 0, NULL);
  return lc.nerr ? -1 : 0;
}

int conf_load_string(ph_conf *c, const char *name, const char *text,
                     ph_buf *err) {
  load_ctx lc = {.c = c, .err = err};
  c->ready = 0;
  int si = add_source(c, name, NULL);
  if (si < 0) {
    lc_err(&lc, "%s: too many sources or out of memory", name);
    return -1;
  }
  loader ld = {.lc = &lc, .name = c->srcs[si].name, .s = text ? text : ""};
  parse(&ld);
  return lc.nerr ? -1 : 0;
}

int conf_set_cli(ph_conf *c, const char *assignment, ph_buf *err) {
  const char *eq = strchr(assignment, '=');
  const char *dot = strchr(assignment, '.');
  c->ready = 0;
  /* Only the part before '=' is quoted: the value may be a secret. */
  if (!eq || !dot || dot > eq) {
    if (eq)
      buf_printf(err, "--set: %.*s: expected section.key=value\n",
                 (int)(eq - assignment > ECHO_MAX ? ECHO_MAX : eq - assignment),
                 assignment);
    else
      buf_puts(err, "--set: expected section.key=value\n");
    return -1;
  }
  /* "a.b.c=v": section "a.b" (instance b of module a), key "c"; finalize
   * falls back to section "a", key "b.c" when only that is declared. */
  const char *dot2 = memchr(dot + 1, '.', (size_t)(eq - dot - 1));
  int alt = dot2 && dot2 + 1 < eq &&
            conf_valid_section_name(assignment, (size_t)(dot2 - assignment));
  if (alt)
    dot = dot2;
  char *key = conf_dup_n(dot + 1, (size_t)(eq - dot - 1));
  char *tkey = key ? conf_dup_trim(key) : NULL;
  char *val = conf_dup_trim(eq + 1);
  int rc = -1;
  size_t slen = (size_t)(dot - assignment);
  if (!tkey || !val) {
    buf_puts(err, "--set: out of memory\n");
  } else if (!conf_valid_section_name(assignment, slen) || !*tkey) {
    buf_printf(err,
               "--set: %.*s: expected section.key=value "
               "(section is [a-z0-9_]+ or NAME.INSTANCE)\n",
               (int)(eq - assignment > ECHO_MAX ? ECHO_MAX : eq - assignment),
               assignment);
  } else if (slen == 9 && memcmp(assignment, "proxyhost", 9) == 0 &&
             strcmp(tkey, "include") == 0) {
    buf_puts(err, "--set: proxyhost.include: include is only allowed in a "
                  "file\n");
  } else if (c->n_lines >= CONF_MAX_ENTRIES) {
    buf_printf(err, "--set: too many entries (max %d)\n", CONF_MAX_ENTRIES);
  } else {
    int si = conf_get_section(c, assignment, slen);
    if (si < 0)
      buf_printf(err, "--set: %.*s: too many sections (max %d)\n", (int)slen,
                 assignment, CONF_MAX_SECTIONS);
    else if ((si = add_entry(c, si, tkey, val, NULL, 0)) < 0)
      buf_puts(err, "--set: out of memory\n");
    else {
      c->ents[si].alt = alt;
      c->n_lines++;
      rc = 0;
    }
  }
  free(key);
  free(tkey);
  free(val);
  return rc;
}

/* ---- command-line flags (ABI 1.4) -------------------------------------- */

int conf_flag_name_ok(const char *f) {
  static const char *const host_opts[] = {
      "config", "set", "check-config", "print-config", "list-modules",
      "version", "help", NULL};
  size_t n = f ? strlen(f) : 0;
  if (n < 2 || n > 64 || f[0] < 'a' || f[0] > 'z')
    return 0;
  for (size_t i = 1; i < n; i++)
    if (!((f[i] >= 'a' && f[i] <= 'z') || (f[i] >= '0' && f[i] <= '9') ||
          f[i] == '-'))
      return 0;
  for (size_t i = 0; host_opts[i]; i++)
    if (strcmp(f, host_opts[i]) == 0)
      return 0;
  return 1;
}

int conf_set_flag(ph_conf *c, const char *name, const char *value,
                  ph_buf *err) {
  c->ready = 0;
  if (!conf_flag_name_ok(name)) {
    /* The name is echoed, bounded; the value never is (a secret?). */
    buf_printf(err, "-%.*s: unknown option\n", ECHO_MAX, name ? name : "");
    return -1;
  }
  if (c->n_flags == c->cap_flags) {
    size_t cap = c->cap_flags ? c->cap_flags * 2 : 8;
    conf_flag *fl = realloc(c->flags, cap * sizeof(*fl));
    if (!fl) {
      buf_puts(err, "command line: out of memory\n");
      return -1;
    }
    c->flags = fl;
    c->cap_flags = cap;
  }
  conf_flag *fl = &c->flags[c->n_flags];
  fl->name = strdup(name);
  fl->value = conf_dup_trim(value ? value : "");
  fl->ent = -1;
  if (!fl->name || !fl->value) {
    free(fl->name);
    free(fl->value);
    buf_puts(err, "command line: out of memory\n");
    return -1;
  }
  c->n_flags++;
  return 0;
}

int conf_flags_resolve(ph_conf *c, ph_buf *err) {
  int nerr = 0;
  for (size_t i = 0; i < c->n_flags; i++) {
    conf_flag *fl = &c->flags[i];
    if (fl->ent >= 0)
      continue; /* an earlier finalize placed it */
    int hits = 0, hs[2] = {-1, -1};
    size_t hk[2] = {0, 0};
    for (size_t si = 0; si < c->n_sects; si++) {
      const conf_section *s = &c->sects[si];
      for (size_t k = 0; s->keys && k < s->n_keys; k++)
        if (s->keys[k].flag && strcmp(s->keys[k].flag, fl->name) == 0) {
          if (hits < 2) {
            hs[hits] = (int)si;
            hk[hits] = k;
          }
          hits++;
        }
    }
    if (hits == 0) {
      buf_printf(err,
                 "-%s: unknown option (no loaded module has a key with this "
                 "flag)\n",
                 fl->name);
      nerr++;
    } else if (hits > 1) {
      buf_printf(err,
                 "-%s: ambiguous: [%s] %s and [%s] %s both take it; use "
                 "--set\n",
                 fl->name, c->sects[hs[0]].name,
                 c->sects[hs[0]].keys[hk[0]].name, c->sects[hs[1]].name,
                 c->sects[hs[1]].keys[hk[1]].name);
      nerr++;
    } else {
      int e = add_entry(c, hs[0], c->sects[hs[0]].keys[hk[0]].name, fl->value,
                        NULL, 0);
      char *name = e >= 0 ? strdup(fl->name) : NULL;
      if (!name) {
        buf_puts(err, "command line: out of memory\n");
        nerr++;
        continue;
      }
      c->ents[e].flag = name;
      c->n_lines++;
      fl->ent = e;
    }
  }
  return nerr;
}
