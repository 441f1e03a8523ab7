/* SPDX-License-Identifier: BSD-2-Clause */
/* The metrics registry: validation and copying of definitions, series
 * preallocated at registration, lock-free updates, text exposition 0.0.4.
 *
 * Every series of a metric lives in one array allocated at registration,
 * indexed in mixed radix over the label value indexes (the first label is
 * the most significant digit), so render walks the series in index order
 * and metrics_series is a few string compares. Updates never allocate and
 * never lock: counters are an atomic add, gauges and histogram sums keep
 * the IEEE-754 bit pattern of a double in an atomic uint64_t and change it
 * with compare-and-swap. Only the series some module declared (every
 * combination, or the ones metrics_register_only listed) are rendered and
 * can be looked up; the others stay zero in the array. A counter whose total comes from outside
 * (metrics_counter_set) keeps it as a double too, beside the integer, so
 * it can be fractional without slowing down inc. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* strdup under -std=c11 */
#endif
#include "metrics.h"

#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ph_series {
  ph_metric *metric;
  ph_metric_type type;
  /* counter: the count; gauge: the value's bits; histogram: the sum's bits */
  _Atomic uint64_t value;
  /* counter: the bits of the total given by metrics_counter_set, NaN until
   * the first one (then it is what is shown); unused by other types */
  _Atomic uint64_t set_total;
  /* histogram: n_buckets + 1 per-bucket (not cumulative) counts, the last
   * one for +Inf; NULL otherwise */
  _Atomic uint64_t *buckets;
  /* some module declared this label combination (metrics_register: all;
   * metrics_register_only: the ones listed): only declared series are
   * rendered and returned by metrics_series. Set at registration (loop
   * thread, init) only. */
  unsigned char declared;
};

typedef struct metric_label {
  char *name;
  char **values;   /* n_values copies, as declared */
  char **escaped;  /* the same values escaped for the exposition */
  size_t n_values;
} metric_label;

struct ph_metric {
  char *name;
  char *help; /* escaped for the exposition; "" when none was given */
  ph_metric_type type;
  metric_label labels[PH_METRIC_MAX_LABELS];
  size_t n_labels;
  double *bounds; /* histogram upper bounds, +Inf implicit */
  char **bound_text; /* the bounds as `le` label values */
  size_t n_bounds;
  ph_series *series;
  size_t n_series;
  _Atomic uint64_t *bucket_counts; /* n_series * (n_bounds + 1) */
  ph_metric *next;
};

struct ph_registry {
  ph_metric *head, *tail;
};

/* ---- doubles as bit patterns ------------------------------------------ */

static uint64_t dbits(double v) {
  uint64_t u;
  memcpy(&u, &v, sizeof(u));
  return u;
}

static double bitsd(uint64_t u) {
  double v;
  memcpy(&v, &u, sizeof(v));
  return v;
}

static void atomic_add_double(_Atomic uint64_t *p, double v) {
  uint64_t old = atomic_load_explicit(p, memory_order_relaxed);
  /* On failure old is reloaded with the current bits and we retry. */
  while (!atomic_compare_exchange_weak_explicit(p, &old,
                                                dbits(bitsd(old) + v),
                                                memory_order_relaxed,
                                                memory_order_relaxed)) {
  }
}

/* Prometheus-friendly text for a double: +Inf/-Inf/NaN, integers without
 * exponent while they are exact, otherwise the shortest %g form that
 * reads back as the same value (0.005, not 0.0050000000000000001). */
static void format_double(double v, char out[40]) {
  if (isnan(v)) {
    strcpy(out, "NaN");
    return;
  }
  if (isinf(v)) {
    strcpy(out, v > 0 ? "+Inf" : "-Inf");
    return;
  }
  if (v == floor(v) && fabs(v) < 1e15) {
    snprintf(out, 40, "%.0f", v);
    return;
  }
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(out, 40, "%.*g", prec, v);
    if (strtod(out, NULL) == v)
      return;
  }
}

/* ---- names and escaping ----------------------------------------------- */

static int is_alpha_(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }

static int valid_metric_name(const char *s) {
  if (!s || !(is_alpha_(*s) || *s == ':'))
    return 0;
  for (s++; *s; s++)
    if (!(is_alpha_(*s) || is_digit(*s) || *s == ':'))
      return 0;
  return 1;
}

static int valid_label_name(const char *s) {
  if (!s || !is_alpha_(*s))
    return 0;
  for (s++; *s; s++)
    if (!(is_alpha_(*s) || is_digit(*s)))
      return 0;
  return 1;
}

/* Backslash and newline always; the double quote too when quote is set
 * (label values are quoted, HELP text is not). NULL when out of memory. */
static char *escape(const char *s, int quote) {
  size_t n = 0;
  for (const char *p = s; *p; p++)
    n += (*p == '\\' || *p == '\n' || (quote && *p == '"')) ? 2 : 1;
  char *out = malloc(n + 1), *o = out;
  if (!out)
    return NULL;
  for (const char *p = s; *p; p++) {
    if (*p == '\n') {
      *o++ = '\\';
      *o++ = 'n';
    } else if (*p == '\\' || (quote && *p == '"')) {
      *o++ = '\\';
      *o++ = *p;
    } else {
      *o++ = *p;
    }
  }
  *o = '\0';
  return out;
}

/* ---- validation ------------------------------------------------------- */

static const char *type_name(ph_metric_type t) {
  switch (t) {
  case PH_METRIC_COUNTER:
    return "counter";
  case PH_METRIC_GAUGE:
    return "gauge";
  case PH_METRIC_HISTOGRAM:
    return "histogram";
  }
  return "unknown";
}

static int fail(ph_buf *err, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(ph_buf *err, const char *name, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    buf_printf(err, "metric %s: ", name);
    buf_vprintf(err, fmt, ap);
    va_end(ap);
  }
  return -1;
}

static size_t count_values(const ph_label_def *l) {
  size_t n = 0;
  if (l->values)
    while (l->values[n])
      n++;
  return n;
}

static int check_label(const ph_metric_def *def, size_t i, ph_buf *err) {
  const ph_label_def *l = &def->labels[i];
  const char *mn = def->name;
  if (!valid_label_name(l->name))
    return fail(err, mn, "invalid label name \"%s\"",
                l->name ? l->name : "(null)");
  if (l->name[0] == '_' && l->name[1] == '_')
    return fail(err, mn, "label name \"%s\" is reserved", l->name);
  if (def->type == PH_METRIC_HISTOGRAM && strcmp(l->name, "le") == 0)
    return fail(err, mn, "histogram cannot have a label named \"le\"");
  for (size_t j = 0; j < i; j++)
    if (strcmp(def->labels[j].name, l->name) == 0)
      return fail(err, mn, "label \"%s\" declared twice", l->name);
  size_t n = count_values(l);
  if (n == 0)
    return fail(err, mn, "label \"%s\" has no values", l->name);
  /* Also keeps the quadratic duplicate check below cheap. */
  if (n > PH_METRIC_MAX_SERIES)
    return fail(err, mn, "label \"%s\" has %zu values, more than %d series",
                l->name, n, PH_METRIC_MAX_SERIES);
  for (size_t a = 1; a < n; a++)
    for (size_t b = 0; b < a; b++)
      if (strcmp(l->values[a], l->values[b]) == 0)
        return fail(err, mn, "label \"%s\" value \"%s\" declared twice",
                    l->name, l->values[a]);
  return 0;
}

static int check_labels(const ph_metric_def *def, ph_buf *err) {
  if (def->n_labels > PH_METRIC_MAX_LABELS)
    return fail(err, def->name, "%zu labels, at most %d", def->n_labels,
                PH_METRIC_MAX_LABELS);
  if (def->n_labels > 0 && !def->labels)
    return fail(err, def->name, "n_labels is %zu but labels is NULL",
                def->n_labels);
  size_t series = 1;
  for (size_t i = 0; i < def->n_labels; i++) {
    if (check_label(def, i, err) < 0)
      return -1;
    /* Both factors are bounded here, so the product cannot overflow. */
    series *= count_values(&def->labels[i]);
    if (series > PH_METRIC_MAX_SERIES)
      return fail(err, def->name, "more than %d series",
                  PH_METRIC_MAX_SERIES);
  }
  return 0;
}

static int check_buckets(const ph_metric_def *def, ph_buf *err) {
  if (def->type != PH_METRIC_HISTOGRAM) {
    if (def->n_buckets > 0 || def->buckets)
      return fail(err, def->name, "buckets given for a %s",
                  type_name(def->type));
    return 0;
  }
  if (def->n_buckets > 0 && !def->buckets)
    return fail(err, def->name, "n_buckets is %zu but buckets is NULL",
                def->n_buckets);
  if (def->n_buckets < 1 || def->n_buckets > PH_METRIC_MAX_BUCKETS)
    return fail(err, def->name, "histogram needs 1..%d buckets, got %zu",
                PH_METRIC_MAX_BUCKETS, def->n_buckets);
  for (size_t i = 0; i < def->n_buckets; i++) {
    double b = def->buckets[i];
    if (!isfinite(b))
      return fail(err, def->name, "bucket %zu is not finite", i);
    if (i > 0 && !(b > def->buckets[i - 1])) {
      char cur[40], prev[40];
      format_double(b, cur);
      format_double(def->buckets[i - 1], prev);
      return fail(err, def->name,
                  "buckets must be strictly increasing: bucket %zu (%s) "
                  "after %s",
                  i, cur, prev);
    }
  }
  return 0;
}

static ph_metric *find_metric(ph_registry *r, const char *name) {
  for (ph_metric *m = r->head; m; m = m->next)
    if (strcmp(m->name, name) == 0)
      return m;
  return NULL;
}

static int check_def(ph_registry *r, const ph_metric_def *def, ph_buf *err) {
  if (!def || !def->name) {
    if (err)
      buf_puts(err, "metric definition without a name");
    return -1;
  }
  if (!valid_metric_name(def->name)) {
    if (err)
      buf_printf(err, "metric \"%s\": invalid metric name", def->name);
    return -1;
  }
  if (def->type != PH_METRIC_COUNTER && def->type != PH_METRIC_GAUGE &&
      def->type != PH_METRIC_HISTOGRAM)
    return fail(err, def->name, "unknown type %d", (int)def->type);
  if (find_metric(r, def->name))
    return fail(err, def->name,
                "already registered with a different definition");
  if (check_labels(def, err) < 0 || check_buckets(def, err) < 0)
    return -1;
  return 0;
}

/* ---- construction ----------------------------------------------------- */

static void free_strv(char **v, size_t n) {
  if (!v)
    return;
  for (size_t i = 0; i < n; i++)
    free(v[i]);
  free(v);
}

static void metric_free(ph_metric *m) {
  free(m->name);
  free(m->help);
  for (size_t i = 0; i < m->n_labels; i++) {
    free(m->labels[i].name);
    free_strv(m->labels[i].values, m->labels[i].n_values);
    free_strv(m->labels[i].escaped, m->labels[i].n_values);
  }
  free(m->bounds);
  free_strv(m->bound_text, m->n_bounds);
  free(m->series);
  free(m->bucket_counts);
  free(m);
}

static int copy_label(metric_label *dst, const ph_label_def *src) {
  size_t n = count_values(src);
  dst->name = strdup(src->name);
  dst->values = calloc(n, sizeof(char *));
  dst->escaped = calloc(n, sizeof(char *));
  dst->n_values = n;
  if (!dst->name || !dst->values || !dst->escaped)
    return -1;
  for (size_t i = 0; i < n; i++) {
    dst->values[i] = strdup(src->values[i]);
    dst->escaped[i] = escape(src->values[i], 1);
    if (!dst->values[i] || !dst->escaped[i])
      return -1;
  }
  return 0;
}

static int copy_bounds(ph_metric *m, const ph_metric_def *def) {
  if (def->type != PH_METRIC_HISTOGRAM)
    return 0;
  m->n_bounds = def->n_buckets;
  m->bounds = malloc(m->n_bounds * sizeof(double));
  m->bound_text = calloc(m->n_bounds, sizeof(char *));
  if (!m->bounds || !m->bound_text)
    return -1;
  for (size_t i = 0; i < m->n_bounds; i++) {
    char tmp[40];
    m->bounds[i] = def->buckets[i];
    format_double(def->buckets[i], tmp);
    if (!(m->bound_text[i] = strdup(tmp)))
      return -1;
  }
  return 0;
}

static int alloc_series(ph_metric *m) {
  m->n_series = 1;
  for (size_t i = 0; i < m->n_labels; i++)
    m->n_series *= m->labels[i].n_values;
  m->series = calloc(m->n_series, sizeof(ph_series));
  if (!m->series)
    return -1;
  size_t per = m->n_bounds + 1;
  if (m->type == PH_METRIC_HISTOGRAM) {
    m->bucket_counts = calloc(m->n_series * per, sizeof(_Atomic uint64_t));
    if (!m->bucket_counts)
      return -1;
  }
  for (size_t i = 0; i < m->n_series; i++) {
    ph_series *s = &m->series[i];
    s->metric = m;
    s->type = m->type;
    /* 0.0 is all-zero bits, so calloc already set sums and gauges to 0;
     * the explicit init keeps that independent of the representation. */
    atomic_init(&s->value, m->type == PH_METRIC_COUNTER ? 0 : dbits(0.0));
    atomic_init(&s->set_total, dbits(NAN));
    s->buckets = m->bucket_counts ? m->bucket_counts + i * per : NULL;
  }
  return 0;
}

static ph_metric *metric_build(const ph_metric_def *def) {
  ph_metric *m = calloc(1, sizeof(*m));
  if (!m)
    return NULL;
  m->type = def->type;
  m->name = strdup(def->name);
  m->help = escape(def->help ? def->help : "", 0);
  if (!m->name || !m->help)
    goto fail;
  for (size_t i = 0; i < def->n_labels; i++) {
    m->n_labels = i + 1; /* so metric_free sees partial copies */
    if (copy_label(&m->labels[i], &def->labels[i]) < 0)
      goto fail;
  }
  if (copy_bounds(m, def) < 0 || alloc_series(m) < 0)
    goto fail;
  return m;
fail:
  metric_free(m);
  return NULL;
}

/* ---- public API ------------------------------------------------------- */

ph_registry *metrics_new(void) { return calloc(1, sizeof(ph_registry)); }

void metrics_free(ph_registry *r) {
  if (!r)
    return;
  ph_metric *m = r->head;
  while (m) {
    ph_metric *next = m->next;
    metric_free(m);
    m = next;
  }
  free(r);
}

/* Whether an existing metric has exactly this definition (type, labels
 * and their values in order, buckets): then registering it again, from
 * another module that shares the metric, returns the same metric. */
static int same_def(const ph_metric *m, const ph_metric_def *def) {
  if (m->type != def->type || m->n_labels != def->n_labels)
    return 0;
  for (size_t i = 0; i < m->n_labels; i++) {
    const ph_label_def *l = &def->labels[i];
    if (!l->name || strcmp(m->labels[i].name, l->name) != 0 || !l->values ||
        count_values(l) != m->labels[i].n_values)
      return 0;
    for (size_t v = 0; v < m->labels[i].n_values; v++)
      if (strcmp(m->labels[i].values[v], l->values[v]) != 0)
        return 0;
  }
  if (def->type != PH_METRIC_HISTOGRAM)
    return 1;
  if (!def->buckets || def->n_buckets != m->n_bounds)
    return 0;
  for (size_t b = 0; b < m->n_bounds; b++)
    if (m->bounds[b] != def->buckets[b])
      return 0;
  return 1;
}

/* The combinations as value indexes, n_combos * n_labels, -1 for a NULL
 * (every value); NULL with a reason in err when one is refused. def has
 * passed check_def or same_def, so its labels are valid. */
static int *resolve_combos(const ph_metric_def *def, const char *const *combos,
                           size_t n_combos, ph_buf *err) {
  if (def->n_labels == 0) {
    fail(err, def->name, "label combinations given for a metric without "
                         "labels");
    return NULL;
  }
  if (!combos || n_combos == 0 || n_combos > PH_METRIC_MAX_SERIES) {
    fail(err, def->name, "needs 1..%d label combinations, got %zu%s",
         PH_METRIC_MAX_SERIES, n_combos, combos ? "" : " (NULL)");
    return NULL;
  }
  int *idx = malloc(n_combos * def->n_labels * sizeof(int));
  if (!idx) {
    fail(err, def->name, "out of memory");
    return NULL;
  }
  for (size_t c = 0; c < n_combos; c++)
    for (size_t l = 0; l < def->n_labels; l++) {
      const char *v = combos[c * def->n_labels + l];
      const ph_label_def *ld = &def->labels[l];
      int vi = -1;
      if (v) {
        for (size_t i = 0; ld->values[i]; i++)
          if (strcmp(ld->values[i], v) == 0)
            vi = (int)i;
        if (vi < 0) {
          fail(err, def->name,
               "combination %zu: \"%s\" is not a declared value of label "
               "\"%s\"",
               c, v, ld->name);
          free(idx);
          return NULL;
        }
      }
      idx[c * def->n_labels + l] = vi;
    }
  return idx;
}

/* Marks the series the combinations match (all of them when idx is NULL). */
static void declare(ph_metric *m, const int *idx, size_t n_combos) {
  for (size_t s = 0; s < m->n_series; s++) {
    if (!idx) {
      m->series[s].declared = 1;
      continue;
    }
    size_t vi[PH_METRIC_MAX_LABELS], rest = s;
    for (size_t l = m->n_labels; l-- > 0;) {
      vi[l] = rest % m->labels[l].n_values;
      rest /= m->labels[l].n_values;
    }
    for (size_t c = 0; c < n_combos && !m->series[s].declared; c++) {
      const int *t = idx + c * m->n_labels;
      size_t l = 0;
      while (l < m->n_labels && (t[l] < 0 || (size_t)t[l] == vi[l]))
        l++;
      if (l == m->n_labels)
        m->series[s].declared = 1;
    }
  }
}

static ph_metric *register_combos(ph_registry *r, const ph_metric_def *def,
                                  const char *const *combos, size_t n_combos,
                                  int all, ph_buf *err) {
  if (!r)
    return NULL;
  ph_metric *existing = def && def->name ? find_metric(r, def->name) : NULL;
  if (!(existing && same_def(existing, def)) && check_def(r, def, err) < 0)
    return NULL;
  int *idx = NULL;
  if (!all && !(idx = resolve_combos(def, combos, n_combos, err)))
    return NULL;
  ph_metric *m = existing;
  if (!m) {
    if (!(m = metric_build(def))) {
      free(idx);
      fail(err, def->name, "out of memory");
      return NULL;
    }
    if (r->tail)
      r->tail->next = m;
    else
      r->head = m;
    r->tail = m;
  }
  declare(m, idx, n_combos);
  free(idx);
  return m;
}

ph_metric *metrics_register(ph_registry *r, const ph_metric_def *def,
                            ph_buf *err) {
  return register_combos(r, def, NULL, 0, 1, err);
}

ph_metric *metrics_register_only(ph_registry *r, const ph_metric_def *def,
                                 const char *const *combos, size_t n_combos,
                                 ph_buf *err) {
  return register_combos(r, def, combos, n_combos, 0, err);
}

static int value_index(const metric_label *l, const char *v) {
  for (size_t i = 0; i < l->n_values; i++)
    if (strcmp(l->values[i], v) == 0)
      return (int)i;
  return -1;
}

ph_series *metrics_series(ph_metric *m, const char *const *values) {
  if (!m)
    return NULL;
  if (m->n_labels == 0)
    return &m->series[0];
  if (!values)
    return NULL;
  size_t idx = 0;
  for (size_t i = 0; i < m->n_labels; i++) {
    if (!values[i])
      return NULL;
    int vi = value_index(&m->labels[i], values[i]);
    if (vi < 0)
      return NULL;
    idx = idx * m->labels[i].n_values + (size_t)vi;
  }
  return m->series[idx].declared ? &m->series[idx] : NULL;
}

/* The updates ignore a series of the wrong type rather than corrupting
 * it: a module bug must not break the exposition. */

void metrics_inc(ph_series *s, uint64_t n) {
  if (s && s->type == PH_METRIC_COUNTER)
    atomic_fetch_add_explicit(&s->value, n, memory_order_relaxed);
}

/* Only ever raises the total: NaN (never set) compares false with
 * everything, so the first valid value is always taken. */
void metrics_counter_set(ph_series *s, double v) {
  if (!s || s->type != PH_METRIC_COUNTER || !(v >= 0) || isinf(v))
    return;
  uint64_t old = atomic_load_explicit(&s->set_total, memory_order_relaxed);
  /* On failure old is reloaded and the comparison made again. */
  while (isnan(bitsd(old)) || v > bitsd(old))
    if (atomic_compare_exchange_weak_explicit(&s->set_total, &old, dbits(v),
                                              memory_order_relaxed,
                                              memory_order_relaxed))
      return;
}

/* The total a counter set from outside shows; NaN when never set. */
static double set_total(const ph_series *s) {
  return bitsd(atomic_load_explicit(&s->set_total, memory_order_relaxed));
}

void metrics_gauge_set(ph_series *s, double v) {
  if (s && s->type == PH_METRIC_GAUGE)
    atomic_store_explicit(&s->value, dbits(v), memory_order_relaxed);
}

void metrics_gauge_add(ph_series *s, double v) {
  if (s && s->type == PH_METRIC_GAUGE)
    atomic_add_double(&s->value, v);
}

void metrics_observe(ph_series *s, double v) {
  if (!s || s->type != PH_METRIC_HISTOGRAM)
    return;
  const ph_metric *m = s->metric;
  size_t i = 0;
  /* NaN compares false everywhere and lands in +Inf, like the Go client. */
  while (i < m->n_bounds && !(v <= m->bounds[i]))
    i++;
  atomic_fetch_add_explicit(&s->buckets[i], 1, memory_order_relaxed);
  atomic_add_double(&s->value, v);
}

double metrics_value(ph_series *s) {
  if (!s)
    return 0;
  uint64_t u = atomic_load_explicit(&s->value, memory_order_relaxed);
  if (s->type != PH_METRIC_COUNTER)
    return bitsd(u);
  double set = set_total(s);
  return isnan(set) ? (double)u : set;
}

/* The count is the sum of the per-bucket counts rather than a separate
 * atomic: one less contended write per observation, and the rendered
 * _count always equals the +Inf bucket. */
uint64_t metrics_hist_count(ph_series *s) {
  if (!s || s->type != PH_METRIC_HISTOGRAM)
    return 0;
  uint64_t n = 0;
  for (size_t i = 0; i <= s->metric->n_bounds; i++)
    n += atomic_load_explicit(&s->buckets[i], memory_order_relaxed);
  return n;
}

/* ---- exposition ------------------------------------------------------- */

/* `{l1="v1",l2="v2"` for series idx, without the closing brace, so the
 * histogram can add its `le`. Nothing at all for a metric without labels. */
static void put_labels(ph_buf *out, const ph_metric *m, size_t idx) {
  size_t vi[PH_METRIC_MAX_LABELS];
  for (size_t i = m->n_labels; i-- > 0;) {
    vi[i] = idx % m->labels[i].n_values;
    idx /= m->labels[i].n_values;
  }
  for (size_t i = 0; i < m->n_labels; i++)
    buf_printf(out, "%c%s=\"%s\"", i ? ',' : '{', m->labels[i].name,
               m->labels[i].escaped[vi[i]]);
}

static void put_simple(ph_buf *out, const ph_metric *m, size_t idx,
                       const char *suffix, const char *value) {
  buf_printf(out, "%s%s", m->name, suffix);
  put_labels(out, m, idx);
  buf_printf(out, "%s %s\n", m->n_labels ? "}" : "", value);
}

static void render_histogram(ph_buf *out, const ph_metric *m, size_t idx) {
  const ph_series *s = &m->series[idx];
  uint64_t cum = 0;
  char num[40];
  for (size_t b = 0; b <= m->n_bounds; b++) {
    cum += atomic_load_explicit(&s->buckets[b], memory_order_relaxed);
    buf_printf(out, "%s_bucket", m->name);
    put_labels(out, m, idx);
    buf_printf(out, "%sle=\"%s\"} %" PRIu64 "\n", m->n_labels ? "," : "{",
               b < m->n_bounds ? m->bound_text[b] : "+Inf", cum);
  }
  format_double(bitsd(atomic_load_explicit(&s->value, memory_order_relaxed)),
                num);
  put_simple(out, m, idx, "_sum", num);
  snprintf(num, sizeof(num), "%" PRIu64, cum);
  put_simple(out, m, idx, "_count", num);
}

static void render_series(ph_buf *out, const ph_metric *m, size_t idx) {
  const ph_series *s = &m->series[idx];
  uint64_t u = atomic_load_explicit(&s->value, memory_order_relaxed);
  char num[40];
  switch (m->type) {
  case PH_METRIC_COUNTER: {
    /* A counted total stays an exact integer, even past 2^53. */
    double set = set_total(s);
    if (isnan(set))
      snprintf(num, sizeof(num), "%" PRIu64, u);
    else
      format_double(set, num);
    put_simple(out, m, idx, "", num);
    break;
  }
  case PH_METRIC_GAUGE:
    format_double(bitsd(u), num);
    put_simple(out, m, idx, "", num);
    break;
  case PH_METRIC_HISTOGRAM:
    render_histogram(out, m, idx);
    break;
  }
}

int metrics_render(ph_registry *r, ph_buf *out) {
  if (!r || !out)
    return -1;
  for (const ph_metric *m = r->head; m; m = m->next) {
    if (m->help[0])
      buf_printf(out, "# HELP %s %s\n", m->name, m->help);
    buf_printf(out, "# TYPE %s %s\n", m->name, type_name(m->type));
    for (size_t i = 0; i < m->n_series; i++)
      if (m->series[i].declared)
        render_series(out, m, i);
  }
  /* Every append after an overflow fails too, so checking once suffices. */
  return out->overflow ? -1 : 0;
}
