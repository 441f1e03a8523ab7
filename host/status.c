/* SPDX-License-Identifier: BSD-2-Clause */
/* See status.h. */
#include "status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STATUS_INSTANCE_MAX 97 /* "module.instance": 64 + 1 + 32 */

typedef struct entry {
  const void *owner;
  char instance[STATUS_INSTANCE_MAX + 1];
  char module[STATUS_INSTANCE_MAX + 1];
  char name[PH_STATUS_NAME_MAX + 1];
  char *title;
  ph_panel_fn fill;
  void *arg;
} entry;

struct ph_panels {
  entry *e;
  size_t n;
};

/* What a fill writes into. */
struct ph_panel {
  status_panel_v v;
  const status_query *q;
  int cur;       /* the current table's index; -1 none; -2 dropped */
  uint32_t seen; /* rows of the current table that passed the key */
  uint32_t cap;  /* rows the current table may keep */
  int failed;    /* out of memory: the reader gets 503 */
};

ph_panels *status_new(void) { return calloc(1, sizeof(ph_panels)); }

void status_free(ph_panels *s) {
  if (!s)
    return;
  for (size_t i = 0; i < s->n; i++)
    free(s->e[i].title);
  free(s->e);
  free(s);
}

/* ---- text ------------------------------------------------------------- */

/* The length of the valid UTF-8 sequence at p (n bytes left), 0 if none
 * (RFC 3629: no overlong forms, no surrogates, at most U+10FFFF). */
static size_t utf8_seq(const unsigned char *p, size_t n) {
  unsigned char c = p[0];
  if (c < 0x80)
    return 1;
  size_t len;
  unsigned char lo = 0x80, hi = 0xbf;
  if (c >= 0xc2 && c <= 0xdf) {
    len = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    if (c == 0xe0)
      lo = 0xa0;
    else if (c == 0xed)
      hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    if (c == 0xf0)
      lo = 0x90;
    else if (c == 0xf4)
      hi = 0x8f;
  } else {
    return 0;
  }
  if (n < len || p[1] < lo || p[1] > hi)
    return 0;
  for (size_t i = 2; i < len; i++)
    if (p[i] < 0x80 || p[i] > 0xbf)
      return 0;
  return len;
}

size_t status_clean(char *dst, size_t cap, const char *src) {
  size_t max = cap - 1 < PH_STATUS_VALUE_MAX ? cap - 1 : PH_STATUS_VALUE_MAX;
  size_t o = 0;
  const unsigned char *p = (const unsigned char *)(src ? src : "");
  size_t n = strlen((const char *)p);
  for (size_t i = 0; i < n;) {
    size_t k = utf8_seq(p + i, n - i);
    if (o + (k ? k : 1) > max)
      break; /* the whole character or nothing */
    if (k == 0) {
      dst[o++] = '?';
      i++;
    } else {
      memcpy(dst + o, p + i, k);
      o += k;
      i += k;
    }
  }
  dst[o] = '\0';
  return o;
}

static char *clean_dup(const char *src) {
  char tmp[PH_STATUS_VALUE_MAX + 1];
  size_t n = status_clean(tmp, sizeof(tmp), src);
  char *d = malloc(n + 1);
  if (d)
    memcpy(d, tmp, n + 1);
  return d;
}

static int name_ok(const char *s) {
  if (!s)
    return 0;
  size_t n = strnlen(s, PH_STATUS_NAME_MAX + 1);
  if (n == 0 || n > PH_STATUS_NAME_MAX)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
          s[i] == '_'))
      return 0;
  return 1;
}

/* ---- the registry ----------------------------------------------------- */

int status_add(ph_panels *s, const void *owner, const char *instance,
               const char *module, const char *name, const char *title,
               ph_panel_fn fill, void *arg, ph_buf *err) {
  if (!name_ok(name)) {
    buf_printf(err, "status panel name is not 1..%d bytes of [a-z0-9_]",
               PH_STATUS_NAME_MAX);
    return PH_EINVAL;
  }
  size_t tn = title ? strnlen(title, PH_STATUS_VALUE_MAX + 1) : 0;
  if (tn == 0 || tn > PH_STATUS_VALUE_MAX || !fill || !instance ||
      strlen(instance) > STATUS_INSTANCE_MAX || !module ||
      strlen(module) > STATUS_INSTANCE_MAX) {
    buf_printf(err, "status panel %s: a title of 1..%d bytes and a fill "
               "are required", name, PH_STATUS_VALUE_MAX);
    return PH_EINVAL;
  }
  size_t mine = 0;
  for (size_t i = 0; i < s->n; i++) {
    if (s->e[i].owner != owner || strcmp(s->e[i].instance, instance) != 0)
      continue;
    if (strcmp(s->e[i].name, name) == 0) {
      buf_printf(err, "status panel %s: registered twice", name);
      return PH_EEXIST;
    }
    mine++;
  }
  if (mine >= PH_STATUS_PANELS_MAX || s->n >= STATUS_PANELS_MAX) {
    buf_printf(err, "status panel %s: at most %d panels per instance", name,
               PH_STATUS_PANELS_MAX);
    return PH_ELIMIT;
  }
  entry *ne = realloc(s->e, (s->n + 1) * sizeof(*ne));
  if (!ne)
    return PH_ENOMEM;
  s->e = ne;
  char *t = clean_dup(title);
  if (!t)
    return PH_ENOMEM;
  /* An instance's panels stay together, in the order registered. */
  size_t at = s->n;
  for (size_t i = s->n; i-- > 0;)
    if (strcmp(s->e[i].instance, instance) == 0) {
      at = i + 1;
      break;
    }
  memmove(&s->e[at + 1], &s->e[at], (s->n - at) * sizeof(*ne));
  entry *e = &s->e[at];
  memset(e, 0, sizeof(*e));
  e->title = t;
  e->owner = owner;
  snprintf(e->instance, sizeof(e->instance), "%s", instance);
  snprintf(e->module, sizeof(e->module), "%s", module);
  snprintf(e->name, sizeof(e->name), "%s", name);
  e->fill = fill;
  e->arg = arg;
  s->n++;
  return PH_OK;
}

void status_drop(ph_panels *s, const void *owner) {
  if (!s)
    return;
  size_t k = 0;
  for (size_t i = 0; i < s->n; i++) {
    if (s->e[i].owner == owner && owner) {
      free(s->e[i].title);
      continue;
    }
    s->e[k++] = s->e[i];
  }
  s->n = k;
}

/* ---- the builder (ph_api.status_*) ------------------------------------- */

static status_field_v *new_field(ph_panel *p, const char *name, int *rc) {
  if (!p || !name_ok(name)) {
    *rc = PH_EINVAL;
    return NULL;
  }
  for (uint32_t i = 0; i < p->v.n_fields; i++)
    if (strcmp(p->v.fields[i].name, name) == 0) {
      *rc = PH_OK; /* a name given twice keeps the first */
      return NULL;
    }
  if (p->v.n_fields >= PH_STATUS_FIELDS_MAX) {
    *rc = PH_ELIMIT;
    return NULL;
  }
  status_field_v *f = &p->v.fields[p->v.n_fields];
  memset(f, 0, sizeof(*f));
  snprintf(f->name, sizeof(f->name), "%s", name);
  *rc = PH_OK;
  return f;
}

int status_api_field(ph_panel *p, const char *name, const char *value) {
  int rc;
  status_field_v *f = new_field(p, name, &rc);
  if (!f)
    return rc;
  f->kind = value ? STATUS_TEXT : STATUS_NULL;
  if (value && !(f->text = clean_dup(value))) {
    p->failed = 1;
    return PH_ENOMEM;
  }
  p->v.n_fields++;
  return PH_OK;
}

int status_api_field_int(ph_panel *p, const char *name, int64_t value) {
  int rc;
  status_field_v *f = new_field(p, name, &rc);
  if (!f)
    return rc;
  f->kind = STATUS_INT;
  f->num = value;
  p->v.n_fields++;
  return PH_OK;
}

/* Whether this table's rows are kept: with a table in the query, only
 * that one. */
static int selected(const ph_panel *p, const char *name) {
  return !p->q || !p->q->table || strcmp(p->q->table, name) == 0;
}

int status_api_table(ph_panel *p, const char *name,
                     const char *const *columns, uint32_t n_columns,
                     uint32_t num_mask) {
  if (!p)
    return PH_EINVAL;
  p->cur = -2; /* until this table is accepted, its rows are dropped */
  if (!name_ok(name) || !columns || n_columns < 1 ||
      n_columns > PH_STATUS_COLUMNS_MAX ||
      (n_columns < 32 && (num_mask >> n_columns) != 0))
    return PH_EINVAL;
  for (uint32_t i = 0; i < n_columns; i++) {
    if (!name_ok(columns[i]))
      return PH_EINVAL;
    for (uint32_t j = 0; j < i; j++)
      if (strcmp(columns[i], columns[j]) == 0)
        return PH_EINVAL;
  }
  for (uint32_t i = 0; i < p->v.n_tables; i++)
    if (strcmp(p->v.tables[i].name, name) == 0)
      return PH_EINVAL;
  if (p->v.n_tables >= PH_STATUS_TABLES_MAX)
    return PH_ELIMIT;
  if (!selected(p, name))
    return PH_OK; /* not asked for: accepted, not kept */
  uint32_t cap = p->q ? p->q->limit : 0;
  status_table_v *t = &p->v.tables[p->v.n_tables];
  memset(t, 0, sizeof(*t));
  t->cells = cap ? calloc((size_t)cap * n_columns, sizeof(char *)) : NULL;
  if (cap && !t->cells) {
    p->failed = 1;
    return PH_ENOMEM;
  }
  snprintf(t->name, sizeof(t->name), "%s", name);
  t->n_columns = n_columns;
  t->num_mask = num_mask;
  for (uint32_t i = 0; i < n_columns; i++)
    snprintf(t->columns[i], sizeof(t->columns[i]), "%s", columns[i]);
  t->offset = p->q && p->q->table ? p->q->offset : 0;
  p->cur = (int)p->v.n_tables++;
  p->seen = 0;
  p->cap = cap;
  return PH_OK;
}

/* A numeric cell: "" or a decimal int64. */
static int num_ok(const char *s) {
  if (!s || !*s)
    return 1;
  const char *d = s + (*s == '-');
  size_t n = strlen(d);
  if (n == 0 || n > 19)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (d[i] < '0' || d[i] > '9')
      return 0;
  if (n == 19) { /* compare with 9223372036854775807 (or ...808) */
    const char *lim = *s == '-' ? "9223372036854775808" : "9223372036854775807";
    if (strcmp(d, lim) > 0)
      return 0;
  }
  return 1;
}

int status_api_row(ph_panel *p, const char *const *cells, uint32_t n_cells) {
  if (!p || p->cur == -1 || !cells)
    return PH_EINVAL;
  if (p->cur == -2)
    return PH_ELIMIT; /* a refused or unselected table: stop */
  status_table_v *t = &p->v.tables[p->cur];
  if (n_cells != t->n_columns)
    return PH_EINVAL;
  for (uint32_t i = 0; i < n_cells; i++)
    if ((t->num_mask & PH_STATUS_COL_NUM(i)) && !num_ok(cells[i]))
      return PH_EINVAL;
  const status_query *q = p->q;
  if (q && q->table && q->key) {
    const char *c0 = cells[0] ? cells[0] : "";
    if (strlen(c0) != q->key_len || memcmp(c0, q->key, q->key_len) != 0)
      return PH_OK; /* counted and dropped */
  }
  if (p->seen < t->offset) {
    p->seen++;
    return PH_OK;
  }
  if (t->n_rows >= p->cap) {
    t->more = 1;
    return PH_ELIMIT;
  }
  char **row = t->cells + (size_t)t->n_rows * t->n_columns;
  for (uint32_t i = 0; i < n_cells; i++) {
    if (!(row[i] = clean_dup(cells[i]))) {
      for (uint32_t j = 0; j < i; j++)
        free(row[j]);
      p->failed = 1;
      return PH_ENOMEM;
    }
  }
  t->n_rows++;
  return PH_OK;
}

/* ---- reading ---------------------------------------------------------- */

static void panel_clear(ph_panel *p) {
  for (uint32_t i = 0; i < p->v.n_fields; i++)
    free(p->v.fields[i].text);
  for (uint32_t i = 0; i < p->v.n_tables; i++) {
    status_table_v *t = &p->v.tables[i];
    for (size_t k = 0; k < (size_t)t->n_rows * t->n_columns; k++)
      free(t->cells[k]);
    free(t->cells);
  }
}

static int matches(const entry *e, const status_query *q) {
  return (!q->instance || strcmp(q->instance, e->instance) == 0) &&
         (!q->panel || strcmp(q->panel, e->name) == 0);
}

int status_walk(ph_panels *s, const status_query *q,
                int (*fn)(void *arg, const status_panel_v *p, int first),
                void *arg) {
  int found_instance = !q->instance, found = 0;
  for (size_t i = 0; i < s->n; i++) {
    if (q->instance && strcmp(q->instance, s->e[i].instance) == 0)
      found_instance = 1;
    if (matches(&s->e[i], q))
      found = 1;
  }
  if (!found_instance || (q->panel && !found))
    return 404;
  ph_panel *p = malloc(sizeof(*p));
  if (!p)
    return 503;
  int rc = 200, first = 1;
  /* A fill may not register or drop panels (init only), so s->e stays. */
  for (size_t i = 0; i < s->n && rc == 200; i++) {
    entry *e = &s->e[i];
    if (!matches(e, q))
      continue;
    memset(p, 0, sizeof(*p));
    p->q = q;
    p->cur = -1;
    p->v.instance = e->instance;
    p->v.module = e->module;
    p->v.name = e->name;
    p->v.title = e->title;
    e->fill(e->arg, p);
    if (p->failed)
      rc = 503;
    else if (q->table && p->v.n_tables == 0)
      rc = 404;
    else if (fn(arg, &p->v, first) < 0)
      rc = 503;
    first = 0;
    panel_clear(p);
  }
  free(p);
  return rc;
}
