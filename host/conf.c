/* The configuration store. See conf.h for the life cycle.
 *
 * Loading only records raw entries (section, key, value, file:line): the
 * key tables arrive later (modules are loaded after the host reads a few
 * keys), so duplicates, list appending, types and bounds are all decided
 * in conf_finalize. inih does the INI splitting; our line reader in front
 * of it counts lines (Debian's inih passes no line numbers), rejects lines
 * inih would silently truncate, and tracks the state inih keeps to itself
 * (current section, continuation lines). */
#if !defined(_GNU_SOURCE) && !defined(_XOPEN_SOURCE)
#define _XOPEN_SOURCE 700 /* realpath, glob, strdup, fileno */
#endif

#include "conf.h"

#include <ctype.h>
#include <errno.h>
#include <glob.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <ini.h>

#define CONF_MAX_LINE 199 /* bytes, line terminator excluded */
#define CONF_MAX_SECTIONS 80 /* PH_MAX_MODULES plus the host's own sections */
#define CONF_MAX_ENTRIES 4096 /* key lines plus continuation lines */
#define CONF_MAX_DEPTH 8      /* include nesting */
#define CONF_MAX_SOURCES 256  /* files and strings read */
#define ECHO_MAX 80           /* bytes of a value quoted in an error */

enum src_kind { SRC_DEFAULT, SRC_FILE, SRC_ENV, SRC_CLI };

/* One "key = value" line (with its continuation lines), or one --set. */
typedef struct conf_entry {
  int sect;
  char *key;
  char *value;
  size_t len, cap;  /* value grows with continuation lines */
  const char *file; /* NULL for --set */
  int line;
  int cont_line;   /* first continuation line, 0 if none */
  char *joined;    /* conf_raw's cache: this key's file entries joined */
  size_t joined_n; /* how many entries the cache was built from */
} conf_entry;

/* The effective value of a declared key, filled by conf_finalize. */
typedef struct conf_value {
  char *text;  /* as written; LIST: trimmed items joined by ',' */
  int64_t num; /* INT, DURATION (ms), SIZE (bytes), BOOL (0/1) */
  char *item_buf;
  char **items; /* LIST items, pointing into item_buf */
  size_t n_items;
  int kind; /* enum src_kind */
  const char *file;
  int line;
  char *env_name;
  /* scratch for finalize */
  int cli, first; /* entry indexes, -1 if none */
  ph_buf list;    /* LIST: file entries joined */
} conf_value;

typedef struct conf_section {
  char *name;
  const char *hdr_file; /* first [name] header, NULL if only from --set */
  int hdr_line;
  const ph_conf_key *keys; /* NULL until declared */
  size_t n_keys;
  conf_value *vals;
} conf_section;

typedef struct conf_source {
  char *name;
  char *real; /* realpath for files, NULL for strings */
} conf_source;

struct ph_conf {
  conf_section sects[CONF_MAX_SECTIONS];
  size_t n_sects;
  int order[CONF_MAX_SECTIONS]; /* declared sections, declaration order */
  size_t n_order;
  conf_entry *ents;
  size_t n_ents, cap_ents;
  size_t n_lines; /* entries plus continuation lines, for the bound */
  conf_source srcs[CONF_MAX_SOURCES];
  size_t n_srcs;
  ph_buf decl_err; /* conf_declare problems, reported by finalize */
  int ready;       /* finalize succeeded */
};

/* ---- small helpers ------------------------------------------------------ */

static int valid_section_name(const char *s, size_t n) {
  if (n == 0)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
          s[i] == '_'))
      return 0;
  return 1;
}

static int valid_key_name(const char *s) {
  if (!*s)
    return 0;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && !strchr("_.-", *s))
      return 0;
  return 1;
}

static char *dup_n(const char *s, size_t n) {
  char *p = malloc(n + 1);
  if (p) {
    memcpy(p, s, n);
    p[n] = '\0';
  }
  return p;
}

/* Trims whitespace on both sides into a new string. */
static char *dup_trim(const char *s) {
  while (isspace((unsigned char)*s))
    s++;
  size_t n = strlen(s);
  while (n > 0 && isspace((unsigned char)s[n - 1]))
    n--;
  return dup_n(s, n);
}

static int find_section(const ph_conf *c, const char *name, size_t n) {
  for (size_t i = 0; i < c->n_sects; i++)
    if (strlen(c->sects[i].name) == n && memcmp(c->sects[i].name, name, n) == 0)
      return (int)i;
  return -1;
}

/* Index of the section, created if new; -1 when the table is full or
 * memory is short. */
static int get_section(ph_conf *c, const char *name, size_t n) {
  int i = find_section(c, name, n);
  if (i >= 0 || c->n_sects == CONF_MAX_SECTIONS)
    return i;
  char *copy = dup_n(name, n);
  if (!copy)
    return -1;
  conf_section *s = &c->sects[c->n_sects];
  memset(s, 0, sizeof(*s));
  s->name = copy;
  return (int)c->n_sects++;
}

static int find_key(const conf_section *s, const char *key) {
  for (size_t i = 0; i < s->n_keys; i++)
    if (strcmp(s->keys[i].name, key) == 0)
      return (int)i;
  return -1;
}

/* The effective value of section.key after a successful finalize. */
static const conf_value *lookup(const ph_conf *c, const char *section,
                                const char *key) {
  if (!c || !c->ready || !section || !key)
    return NULL;
  int si = find_section(c, section, strlen(section));
  if (si < 0 || !c->sects[si].keys)
    return NULL;
  const conf_section *s = &c->sects[si];
  int k = find_key(s, key);
  if (k < 0)
    return NULL;
  return &s->vals[k];
}

/* ---- lifetime ----------------------------------------------------------- */

ph_conf *conf_new(void) {
  ph_conf *c = calloc(1, sizeof(*c));
  if (c)
    buf_init(&c->decl_err, 65536);
  return c;
}

static void value_clear(conf_value *v) {
  free(v->text);
  free(v->item_buf);
  free(v->items);
  free(v->env_name);
  buf_free(&v->list);
  memset(v, 0, sizeof(*v));
}

static void values_free(conf_section *s) {
  if (!s->vals)
    return;
  for (size_t k = 0; k < s->n_keys; k++)
    value_clear(&s->vals[k]);
  free(s->vals);
  s->vals = NULL;
}

void conf_free(ph_conf *c) {
  if (!c)
    return;
  for (size_t i = 0; i < c->n_sects; i++) {
    values_free(&c->sects[i]);
    free(c->sects[i].name);
  }
  for (size_t i = 0; i < c->n_ents; i++) {
    free(c->ents[i].key);
    free(c->ents[i].value);
    free(c->ents[i].joined);
  }
  free(c->ents);
  for (size_t i = 0; i < c->n_srcs; i++) {
    free(c->srcs[i].name);
    free(c->srcs[i].real);
  }
  buf_free(&c->decl_err);
  free(c);
}

/* ---- loading ------------------------------------------------------------ */

/* State shared by one public load call and the files it includes. */
typedef struct load_ctx {
  ph_conf *c;
  ph_buf *err;
  int nerr;
  int full_reported; /* "too many entries" said once per load */
} load_ctx;

#define LAST_NONE (-1)
#define LAST_INCLUDE (-2)
#define SECT_NONE (-1) /* before any header */
#define SECT_BAD (-2)  /* under a rejected header: its keys are skipped */

/* One file or string being parsed. */
typedef struct loader {
  load_ctx *lc;
  const char *name; /* owned by c->srcs */
  int depth;
  FILE *fp;      /* file source, or NULL */
  const char *s; /* string source cursor */
  int line;      /* lines handed to inih so far */
  int prev;      /* inih remembers a key name: continuation possible */
  int cont;      /* the current line continues the previous value */
  int sect;
  int last;   /* entry that continuation lines extend, or LAST_* */
  int syntax; /* syntax errors found by the reader */
} loader;

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

/* Reports "name:line: ..." for the current line of ld. */
static void ld_err(loader *ld, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void ld_err(loader *ld, const char *fmt, ...) {
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
    ld_err(ld, "too many entries (max %d)", CONF_MAX_ENTRIES);
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

/* inih's own rule for where a ';' starts an inline comment (after
 * whitespace), and where the first of chars is. */
static const char *find_chars_or_comment(const char *s, const char *chars) {
  int was_space = 0;
  while (*s && (!chars || !strchr(chars, *s)) &&
         !(INI_ALLOW_INLINE_COMMENTS && was_space &&
           strchr(INI_INLINE_COMMENT_PREFIXES, *s))) {
    was_space = isspace((unsigned char)*s);
    s++;
  }
  return s;
}

static void enter_section(loader *ld, const char *name, size_t n) {
  ph_conf *c = ld->lc->c;
  ld->sect = SECT_BAD;
  if (!valid_section_name(name, n)) {
    ld_err(ld, "invalid section name (use [a-z0-9_]+)");
    return;
  }
  int i = get_section(c, name, n);
  if (i < 0) {
    ld_err(ld, "too many sections (max %d)", CONF_MAX_SECTIONS);
    return;
  }
  if (!c->sects[i].hdr_file) {
    c->sects[i].hdr_file = ld->name;
    c->sects[i].hdr_line = ld->line;
  }
  ld->sect = i;
}

/* Follows inih's reading of one line so that the handler knows what inih
 * will do with it: whether it continues the previous value, and which
 * section it is in (inih truncates long section names). Also reports the
 * syntax errors inih would only count. */
static void classify(loader *ld, const char *line) {
  const char *p = line;
  if (ld->line == 1 && (unsigned char)p[0] == 0xEF &&
      (unsigned char)p[1] == 0xBB && (unsigned char)p[2] == 0xBF)
    p += 3; /* inih skips a UTF-8 BOM */
  while (isspace((unsigned char)*p))
    p++;
  if (!*p || strchr(INI_START_COMMENT_PREFIXES, *p))
    return;
  if (INI_ALLOW_MULTILINE && ld->prev && p > line) {
    ld->cont = 1;
    return;
  }
  if (*p == '[') {
    const char *end = find_chars_or_comment(p + 1, "]");
    if (*end != ']') {
      ld_err(ld, "syntax error: no ']' after the section name");
      ld->syntax++;
      return;
    }
    ld->prev = 0;
    ld->last = LAST_NONE;
    enter_section(ld, p + 1, (size_t)(end - p - 1));
    return;
  }
  const char *end = find_chars_or_comment(p, "=:");
  if (*end != '=' && *end != ':') {
    ld_err(ld, "syntax error: expected key = value");
    ld->syntax++;
    return;
  }
  while (end > p && isspace((unsigned char)end[-1]))
    end--;
  ld->prev = end > p;
}

static int src_getc(loader *ld) {
  if (ld->fp)
    return getc(ld->fp);
  if (!*ld->s)
    return EOF;
  return (unsigned char)*ld->s++;
}

/* Stores b when it fits and counts it either way, so that an over-long
 * line is measured to its end. */
static void put_byte(char *out, size_t max, size_t *len, int *nul, int b) {
  if (*len < max)
    out[*len] = (char)b;
  (*len)++;
  *nul |= b == '\0';
}

/* inih's fgets-like reader. Reads a whole line whatever its length, hands
 * inih at most CONF_MAX_LINE bytes without the terminator, and replaces a
 * line that is too long (which inih would cut, then read the rest as a
 * new line) with an empty one after reporting it. */
static char *read_line(char *out, int num, void *stream) {
  loader *ld = stream;
  size_t max = CONF_MAX_LINE;
  if (num < 2)
    return NULL;
  if ((size_t)num - 1 < max)
    max = (size_t)num - 1;
  size_t len = 0;
  int ch, got = 0, cr = 0, nul = 0;
  for (;;) {
    ch = src_getc(ld);
    if (ch == EOF || ch == '\n')
      break;
    got = 1;
    /* A '\r' is part of the line only when more text follows it. */
    if (cr)
      put_byte(out, max, &len, &nul, '\r');
    cr = ch == '\r';
    if (!cr)
      put_byte(out, max, &len, &nul, ch);
  }
  if (ch == EOF && !got)
    return NULL;
  ld->line++;
  ld->cont = 0;
  if (len > max) {
    ld_err(ld, "line too long (max %zu bytes)", max);
    out[0] = '\0';
  } else if (nul) {
    ld_err(ld, "line contains a NUL byte");
    out[0] = '\0';
  } else {
    out[len] = '\0';
    classify(ld, out);
  }
  return out;
}

static int load_path(load_ctx *lc, const char *path, int depth,
                     const loader *from);

/* Expands one include pattern, relative to the including file. */
static void do_include(loader *ld, const char *pattern) {
  if (!*pattern) {
    ld_err(ld, "include: empty pattern");
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
    ld_err(ld, "include: pattern too long");
    buf_free(&full);
    return;
  }
  glob_t g;
  int r = glob(full.data, 0, NULL, &g);
  if (r == 0 && ld->depth + 1 > CONF_MAX_DEPTH) {
    ld_err(ld, "include: nested deeper than %d files", CONF_MAX_DEPTH);
  } else if (r == 0) {
    for (size_t i = 0; i < g.gl_pathc; i++)
      load_path(ld->lc, g.gl_pathv[i], ld->depth + 1, ld);
  } else if (r == GLOB_NOMATCH && !strpbrk(pattern, "*?[")) {
    /* A plain file name that does not exist is a typo, not an empty
     * conf.d. */
    ld_err(ld, "include: %s: no such file", full.data);
  } else if (r != GLOB_NOMATCH) {
    /* No match of a pattern is normal (an empty conf.d). */
    ld_err(ld, "include: cannot expand %s", full.data);
  }
  globfree(&g);
  buf_free(&full);
}

/* A continuation line: inih passes it whole, inline comment included. */
static void on_continuation(loader *ld, const char *text) {
  char piece[CONF_MAX_LINE + 1];
  size_t n = (size_t)(find_chars_or_comment(text, NULL) - text);
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
    ld_err(ld, "out of memory");
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
    ld_err(ld, "%s: key outside any section", name);
    return 1;
  }
  if (!*name) {
    ld_err(ld, "missing key name before '='");
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
    ld_err(ld, "out of memory");
    return 1;
  }
  ld->last = i;
  return 1;
}

static void parse(loader *ld) {
  ld->prev = 0;
  ld->sect = SECT_NONE;
  ld->last = LAST_NONE;
  int r = ini_parse_stream(read_line, ld, on_pair, ld);
  if (r > 0 && !ld->syntax) {
    ld->line = r;
    ld_err(ld, "syntax error");
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
  char *key = dup_n(dot + 1, (size_t)(eq - dot - 1));
  char *tkey = key ? dup_trim(key) : NULL;
  char *val = dup_trim(eq + 1);
  int rc = -1;
  size_t slen = (size_t)(dot - assignment);
  if (!tkey || !val) {
    buf_puts(err, "--set: out of memory\n");
  } else if (!valid_section_name(assignment, slen) || !*tkey) {
    buf_printf(err,
               "--set: %.*s: expected section.key=value "
               "(section is [a-z0-9_]+)\n",
               (int)(eq - assignment > ECHO_MAX ? ECHO_MAX : eq - assignment),
               assignment);
  } else if (slen == 9 && memcmp(assignment, "proxyhost", 9) == 0 &&
             strcmp(tkey, "include") == 0) {
    buf_puts(err, "--set: proxyhost.include: include is only allowed in a "
                  "file\n");
  } else if (c->n_lines >= CONF_MAX_ENTRIES) {
    buf_printf(err, "--set: too many entries (max %d)\n", CONF_MAX_ENTRIES);
  } else {
    int si = get_section(c, assignment, slen);
    if (si < 0)
      buf_printf(err, "--set: %.*s: too many sections (max %d)\n", (int)slen,
                 assignment, CONF_MAX_SECTIONS);
    else if (add_entry(c, si, tkey, val, NULL, 0) < 0)
      buf_puts(err, "--set: out of memory\n");
    else {
      c->n_lines++;
      rc = 0;
    }
  }
  free(key);
  free(tkey);
  free(val);
  return rc;
}

/* ---- environment and raw values ----------------------------------------- */

/* PROXYHOST_<SECTION>_<KEY>, upper-cased, '.' and '-' as '_'. */
static char *env_name(const char *section, const char *key) {
  size_t n = 10 + strlen(section) + 1 + strlen(key);
  char *s = malloc(n + 1);
  if (!s)
    return NULL;
  snprintf(s, n + 1, "PROXYHOST_%s_%s", section, key);
  for (char *p = s + 10; *p; p++)
    *p = (*p == '.' || *p == '-') ? '_' : (char)toupper((unsigned char)*p);
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

const char *conf_raw(ph_conf *c, const char *section, const char *key,
                     char *const *env) {
  if (!c || !section || !key)
    return NULL;
  int si = find_section(c, section, strlen(section));
  const char *alias = NULL;
  if (si >= 0 && c->sects[si].keys) {
    int k = find_key(&c->sects[si], key);
    if (k >= 0)
      alias = c->sects[si].keys[k].env;
  }
  int cli = -1, first = -1;
  size_t n_file = 0;
  for (size_t i = 0; si >= 0 && i < c->n_ents; i++) {
    const conf_entry *e = &c->ents[i];
    if (e->sect != si || strcmp(e->key, key) != 0)
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

/* ---- declarations ------------------------------------------------------- */

int conf_declare(ph_conf *c, const char *section, const ph_conf_key *keys) {
  ph_buf *e = &c->decl_err;
  size_t before = e->len;
  int bad = e->overflow;
  c->ready = 0;
  if (!section || !valid_section_name(section, strlen(section))) {
    buf_printf(e, "%s: invalid section name (use [a-z0-9_]+)\n",
               section ? section : "(null)");
    return -1;
  }
  if (!keys) {
    buf_printf(e, "%s: no key table\n", section);
    return -1;
  }
  int si = get_section(c, section, strlen(section));
  if (si < 0) {
    buf_printf(e, "%s: too many sections (max %d)\n", section,
               CONF_MAX_SECTIONS);
    return -1;
  }
  conf_section *s = &c->sects[si];
  if (s->keys) {
    buf_printf(e, "%s: section declared twice\n", section);
    return -1;
  }
  size_t n = 0;
  for (; keys[n].name; n++) {
    const ph_conf_key *k = &keys[n];
    if (!valid_key_name(k->name))
      buf_printf(e, "%s.%s: invalid key name\n", section, k->name);
    for (size_t j = 0; j < n; j++)
      if (strcmp(keys[j].name, k->name) == 0)
        buf_printf(e, "%s.%s: key declared twice\n", section, k->name);
    if (k->type < PH_CONF_STRING || k->type > PH_CONF_ENUM)
      buf_printf(e, "%s.%s: unknown type %d\n", section, k->name, (int)k->type);
    if (k->type == PH_CONF_ENUM && (!k->choices || !*k->choices))
      buf_printf(e, "%s.%s: enum without choices\n", section, k->name);
    if (k->max != 0 && k->min > k->max)
      buf_printf(e, "%s.%s: min %lld is above max %lld\n", section, k->name,
                 (long long)k->min, (long long)k->max);
  }
  s->keys = keys;
  s->n_keys = n;
  c->order[c->n_order++] = si;
  return e->len > before || e->overflow != bad ? -1 : 0;
}

/* ---- value parsers ------------------------------------------------------ */

/* Leading decimal digits of s, at most lim. Returns -1 without digits, -2
 * past lim; *end gets the first byte after the digits either way, so that
 * callers can tell "too big" from "not a number". */
static int parse_digits(const char *s, const char **end, uint64_t lim,
                        uint64_t *out) {
  uint64_t v = 0;
  int over = 0;
  const char *p = s;
  for (; *p >= '0' && *p <= '9'; p++) {
    unsigned d = (unsigned)(*p - '0');
    if (over || v > (lim - d) / 10)
      over = 1;
    else
      v = v * 10 + d;
  }
  *end = p;
  if (p == s)
    return -1;
  *out = v;
  return over ? -2 : 0;
}

/* Decimal with an optional sign. -1 not a number, -2 out of range. */
static int parse_int(const char *s, int64_t *out) {
  int neg = *s == '-';
  if (*s == '-' || *s == '+')
    s++;
  uint64_t lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, v;
  const char *end;
  int r = parse_digits(s, &end, lim, &v);
  if (r == -1 || *end)
    return -1;
  if (r < 0)
    return r;
  if (!neg)
    *out = (int64_t)v;
  else
    *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
  return 0;
}

typedef struct unit {
  const char *name;
  int64_t mult;
} unit;

static const unit duration_units[] = {
    {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {NULL, 0}};
static const unit size_units[] = {
    {"", 1},          {"B", 1},         {"K", 1 << 10},
    {"KiB", 1 << 10}, {"M", 1 << 20},   {"MiB", 1 << 20},
    {"G", 1 << 30},   {"GiB", 1 << 30}, {NULL, 0}};

/* Digits then one of units (exact spelling). -1 malformed, -2 overflow. */
static int parse_unit(const char *s, const unit *units, int64_t *out) {
  const char *end;
  uint64_t v;
  int r = parse_digits(s, &end, (uint64_t)INT64_MAX, &v);
  if (r == -1)
    return -1;
  for (const unit *u = units; u->name; u++)
    if (strcmp(end, u->name) == 0) {
      if (r < 0 || v > (uint64_t)(INT64_MAX / u->mult))
        return -2;
      *out = (int64_t)v * u->mult;
      return 0;
    }
  return -1;
}

static int parse_duration(const char *s, int64_t *out) {
  if (strspn(s, "0") == strlen(s) && *s) {
    *out = 0; /* a bare zero needs no unit */
    return 0;
  }
  return parse_unit(s, duration_units, out);
}

int conf_parse_duration_ms(const char *s, int64_t *out) {
  int64_t v;
  if (!s || parse_duration(s, &v) < 0)
    return -1;
  *out = v;
  return 0;
}

int conf_parse_size(const char *s, int64_t *out) {
  int64_t v;
  if (!s || parse_unit(s, size_units, &v) < 0)
    return -1;
  *out = v;
  return 0;
}

int conf_parse_bool(const char *s, int64_t *out) {
  static const char *const yes[] = {"true", "yes", "on", "1", NULL};
  static const char *const no[] = {"false", "no", "off", "0", NULL};
  if (!s)
    return -1;
  for (int i = 0; yes[i]; i++) {
    if (strcasecmp(s, yes[i]) == 0) {
      *out = 1;
      return 0;
    }
    if (strcasecmp(s, no[i]) == 0) {
      *out = 0;
      return 0;
    }
  }
  return -1;
}

/* Comma-separated items, trimmed. Writes the trimmed items joined by ','
 * to joined (strlen(s) + 1 bytes) when non-NULL. Returns the item count,
 * or -1 for an empty item. Blank text is the empty list. */
static long list_scan(const char *s, char *joined) {
  long n = 0;
  char *w = joined;
  while (isspace((unsigned char)*s))
    s++;
  for (const char *p = s; *s;) {
    const char *end = strchr(p, ',');
    if (!end)
      end = p + strlen(p);
    const char *a = p, *b = end;
    while (a < b && isspace((unsigned char)*a))
      a++;
    while (b > a && isspace((unsigned char)b[-1]))
      b--;
    if (a == b)
      return -1;
    if (w) {
      if (n)
        *w++ = ',';
      memcpy(w, a, (size_t)(b - a));
      w += b - a;
    }
    n++;
    if (!*end)
      break;
    p = end + 1;
  }
  if (w)
    *w = '\0';
  return n;
}

static int enum_has(const char *choices, const char *s) {
  size_t n = strlen(s);
  for (const char *p = choices;;) {
    const char *bar = strchr(p, '|');
    size_t len = bar ? (size_t)(bar - p) : strlen(p);
    if (len == n && memcmp(p, s, n) == 0)
      return 1;
    if (!bar)
      return 0;
    p = bar + 1;
  }
}

/* Bound text for messages, in the key's own unit. */
static void fmt_bound(const ph_conf_key *k, int64_t v, char *out, size_t n) {
  if (k->type == PH_CONF_DURATION && v != 0) {
    for (int i = 3; i >= 0; i--)
      if (v % duration_units[i].mult == 0) {
        snprintf(out, n, "%lld%s", (long long)(v / duration_units[i].mult),
                 duration_units[i].name);
        return;
      }
  }
  if (k->type == PH_CONF_SIZE && v != 0) {
    static const unit u[] = {
        {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}};
    for (int i = 0; i < 4; i++)
      if (v % u[i].mult == 0) {
        snprintf(out, n, "%lld%s", (long long)(v / u[i].mult), u[i].name);
        return;
      }
  }
  snprintf(out, n, "%lld", (long long)v);
}

/* Bounds: max 0 is unbounded above, and min counts only when min or max is
 * non-zero, so {0, 0} means unbounded in both directions (negative INTs
 * allowed) while {1, 0} still means "at least 1". */
static int check_bounds(const ph_conf_key *k, const char *text, int64_t v,
                        char *why, size_t n) {
  const char *shown = (k->flags & PH_CONF_SENSITIVE) ? "value" : text;
  char b[64];
  if ((k->min || k->max) && v < k->min) {
    fmt_bound(k, k->min, b, sizeof(b));
    snprintf(why, n, "%.*s is below the minimum %s", ECHO_MAX, shown, b);
    return -1;
  }
  if (k->max && v > k->max) {
    fmt_bound(k, k->max, b, sizeof(b));
    snprintf(why, n, "%.*s is above the maximum %s", ECHO_MAX, shown, b);
    return -1;
  }
  return 0;
}

/* Parses text for key k into v. On error writes the reason to why (never
 * quoting a sensitive value) and returns -1. */
static int parse_value(const ph_conf_key *k, const char *text, conf_value *v,
                       char *why, size_t n) {
  int sens = k->flags & PH_CONF_SENSITIVE;
  int64_t num = 0;
  int r = 0;
  for (const char *p = text; *p; p++)
    if (((unsigned char)*p < 0x20 && *p != '\t') || *p == 0x7f) {
      snprintf(why, n, "value contains a control character");
      return -1;
    }
  switch (k->type) {
  case PH_CONF_STRING: {
    size_t len = strlen(text);
    if (k->min > 0 && len < (uint64_t)k->min) {
      snprintf(why, n, "value is too short (%zu bytes, min %lld)", len,
               (long long)k->min);
      return -1;
    }
    if (k->max > 0 && len > (uint64_t)k->max) {
      snprintf(why, n, "value is too long (%zu bytes, max %lld)", len,
               (long long)k->max);
      return -1;
    }
    break;
  }
  case PH_CONF_INT:
    r = parse_int(text, &num);
    if (r < 0) {
      snprintf(why, n, r == -2 ? "integer out of range" : "not an integer");
      return -1;
    }
    if (check_bounds(k, text, num, why, n) < 0)
      return -1;
    break;
  case PH_CONF_BOOL:
    if (conf_parse_bool(text, &num) < 0) {
      snprintf(why, n, "not a boolean (use true/false, yes/no, on/off, 1/0)");
      return -1;
    }
    break;
  case PH_CONF_DURATION:
    r = parse_duration(text, &num);
    if (r < 0) {
      snprintf(why, n,
               r == -2 ? "duration out of range"
                       : "not a duration (use 250ms, 5s, 2m, 1h)");
      return -1;
    }
    if (check_bounds(k, text, num, why, n) < 0)
      return -1;
    break;
  case PH_CONF_SIZE:
    r = parse_unit(text, size_units, &num);
    if (r < 0) {
      snprintf(why, n,
               r == -2 ? "size out of range"
                       : "not a size (use 512, 64KiB, 16MiB, 1GiB)");
      return -1;
    }
    if (check_bounds(k, text, num, why, n) < 0)
      return -1;
    break;
  case PH_CONF_LIST: {
    long cnt = list_scan(text, NULL);
    if (cnt < 0) {
      snprintf(why, n, "empty list item");
      return -1;
    }
    if (k->min > 0 && cnt < k->min) {
      snprintf(why, n, "too few items (%ld, min %lld)", cnt, (long long)k->min);
      return -1;
    }
    if (k->max > 0 && cnt > k->max) {
      snprintf(why, n, "too many items (%ld, max %lld)", cnt,
               (long long)k->max);
      return -1;
    }
    if (!v)
      return 0;
    v->text = malloc(strlen(text) + 1);
    v->items = calloc((size_t)cnt + 1, sizeof(char *));
    if (!v->text || !v->items)
      goto oom;
    list_scan(text, v->text);
    v->item_buf = strdup(v->text);
    if (!v->item_buf)
      goto oom;
    /* Items contain no ',', so the joined copy splits back into them. */
    for (char *p = v->item_buf; cnt > 0;) {
      v->items[v->n_items++] = p;
      p = strchr(p, ',');
      if (!p)
        break;
      *p++ = '\0';
    }
    return 0;
  }
  case PH_CONF_ENUM:
    if (!k->choices || !enum_has(k->choices, text)) {
      snprintf(why, n, "%.*s is not one of %s", ECHO_MAX, sens ? "value" : text,
               k->choices ? k->choices : "");
      return -1;
    }
    break;
  }
  if (!v)
    return 0;
  v->num = num;
  v->text = strdup(text);
  if (!v->text)
    goto oom;
  return 0;
oom:
  snprintf(why, n, "out of memory");
  return -1;
}

/* What a NULL default means for each type: valid INI text for "empty". */
static const char *null_default(ph_conf_type t) {
  switch (t) {
  case PH_CONF_INT:
  case PH_CONF_DURATION:
  case PH_CONF_SIZE:
    return "0";
  case PH_CONF_BOOL:
    return "false";
  default:
    return "";
  }
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
    int k = find_key(s, e->key);
    if (k < 0) {
      if (!e->file)
        buf_puts(f->err, "--set: ");
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
    long cnt = list_scan(e->value, NULL);
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
  const char *def = k->def ? k->def : null_default(k->type);
  /* A required key without a default never uses it: nothing to check. */
  if (k->def || !(k->flags & PH_CONF_REQUIRED)) {
    if (parse_value(k, def, NULL, why, sizeof(why)) < 0)
      fin_err(f, NULL, 0, "%s.%s: invalid default: %s", s->name, k->name, why);
  }
  char *ename = NULL;
  const char *text, *ev = NULL;
  if (v->cli >= 0) {
    text = f->c->ents[v->cli].value;
    v->kind = SRC_CLI;
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
      fin_err(f, s->hdr_file, s->hdr_line, "%s.%s: required key is not set",
              s->name, k->name);
      return;
    }
    if (parse_value(k, def, v, why, sizeof(why)) < 0)
      value_clear(v); /* already reported as an invalid default */
    return;
  }
  char *trimmed = NULL;
  if (v->kind == SRC_ENV) {
    /* Files and --set are trimmed on the way in; the environment is not. */
    trimmed = dup_trim(text);
    if (!trimmed) {
      fin_err(f, NULL, 0, "out of memory");
      return;
    }
    text = trimmed;
  }
  if (parse_value(k, text, v, why, sizeof(why)) < 0) {
    if (v->kind == SRC_CLI)
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
  for (size_t i = 0; i < c->n_sects; i++) {
    conf_section *s = &c->sects[i];
    values_free(s);
    if (!s->keys) {
      if (!s->hdr_file)
        buf_puts(err, "--set: ");
      fin_err(&f, s->hdr_file, s->hdr_line, "%s: unknown section", s->name);
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

/* ---- getters ------------------------------------------------------------ */

const char *conf_str(const ph_conf *c, const char *section, const char *key) {
  const conf_value *v = lookup(c, section, key);
  return v ? v->text : NULL;
}

int64_t conf_int(const ph_conf *c, const char *section, const char *key) {
  const conf_value *v = lookup(c, section, key);
  return v ? v->num : 0;
}

size_t conf_list_len(const ph_conf *c, const char *section, const char *key) {
  const conf_value *v = lookup(c, section, key);
  return v ? v->n_items : 0;
}

const char *conf_list_at(const ph_conf *c, const char *section, const char *key,
                         size_t i) {
  const conf_value *v = lookup(c, section, key);
  return v && i < v->n_items ? v->items[i] : NULL;
}

int conf_is_set(const ph_conf *c, const char *section, const char *key) {
  const conf_value *v = lookup(c, section, key);
  return v && v->kind != SRC_DEFAULT;
}

void conf_where(const ph_conf *c, const char *section, const char *key,
                ph_buf *out) {
  if (!c)
    return;
  if (!key) {
    int i = section ? find_section(c, section, strlen(section)) : -1;
    if (i >= 0 && c->sects[i].hdr_file)
      buf_printf(out, "%s:%d: ", c->sects[i].hdr_file, c->sects[i].hdr_line);
    return;
  }
  const conf_value *v = lookup(c, section, key);
  if (!v)
    return;
  switch (v->kind) {
  case SRC_FILE:
    buf_printf(out, "%s:%d: ", v->file, v->line);
    break;
  case SRC_ENV:
    buf_printf(out, "env %s: ", v->env_name);
    break;
  case SRC_CLI:
    buf_puts(out, "--set: ");
    break;
  default:
    break;
  }
}

void conf_print(const ph_conf *c, FILE *out) {
  if (!c || !c->ready)
    return;
  for (size_t o = 0; o < c->n_order; o++) {
    const conf_section *s = &c->sects[c->order[o]];
    fprintf(out, "%s[%s]\n", o ? "\n" : "", s->name);
    for (size_t k = 0; k < s->n_keys; k++) {
      const ph_conf_key *key = &s->keys[k];
      const conf_value *v = &s->vals[k];
      const char *text = v->text ? v->text : "";
      if ((key->flags & PH_CONF_SENSITIVE) && *text)
        text = "[redacted]";
      fprintf(out, "%s = %s  ; from ", key->name, text);
      switch (v->kind) {
      case SRC_FILE:
        fprintf(out, "%s:%d\n", v->file, v->line);
        break;
      case SRC_ENV:
        fprintf(out, "env %s\n", v->env_name);
        break;
      case SRC_CLI:
        fputs("--set\n", out);
        break;
      default:
        fputs("default\n", out);
      }
    }
  }
}

size_t conf_file_count(const ph_conf *c) {
  size_t n = 0;
  for (size_t i = 0; c && i < c->n_srcs; i++)
    n += c->srcs[i].real != NULL;
  return n;
}

const char *conf_file_at(const ph_conf *c, size_t i) {
  for (size_t j = 0; c && j < c->n_srcs; j++) {
    if (!c->srcs[j].real)
      continue; /* a string, not a file */
    if (i == 0)
      return c->srcs[j].name;
    i--;
  }
  return NULL;
}
