/* SPDX-License-Identifier: BSD-2-Clause */
/* Declarative metrics: see metric_table.h. */
#include "metric_table.h"

#include <stddef.h>
#include <string.h>

#include <proxyhost/log.h>

static size_t n_values(const char *const *v) {
  size_t n = 0;
  while (v && v[n])
    n++;
  return n;
}

/* The combinations of the labels from first on. */
static size_t series_from(const ph_metric_def *def, size_t first) {
  size_t n = 1;
  for (size_t i = first; i < def->n_labels; i++)
    n *= n_values(def->labels[i].values);
  return n;
}

size_t ph_metric_table_series(const ph_metric_def *def) {
  return series_from(def, 0);
}

static int refuse(const ph_api *api, ph_ctx *ctx, const char *name,
                  const char *why) {
  PH_LOG(api, ctx, PH_LOG_ERROR, "metric table entry refused",
         PH_STR("metric", name), PH_STR("reason", why));
  return PH_EINVAL;
}

/* Resolves every combination, the last label varying fastest; with
 * fixed, the first label is that value and only the others vary. */
static int fill_series(const ph_api *api, ph_metric *m,
                       const ph_metric_def *def, const char *fixed,
                       ph_series **out, size_t n, int some) {
  size_t idx[PH_METRIC_MAX_LABELS] = {0};
  const char *vals[PH_METRIC_MAX_LABELS];
  size_t first = fixed ? 1 : 0;
  if (fixed)
    vals[0] = fixed;
  for (size_t s = 0; s < n; s++) {
    for (size_t i = first; i < def->n_labels; i++)
      vals[i] = def->labels[i].values[idx[i]];
    out[s] = api->series(m, def->n_labels ? vals : NULL);
    if (!out[s] && !some) /* some: only the declared combinations exist */
      return -1;
    for (size_t i = def->n_labels; i-- > first;) {
      if (def->labels[i].values[++idx[i]])
        break;
      idx[i] = 0;
    }
  }
  return 0;
}

/* A value fixed of the first label: it is one of the label's, and the
 * combinations registered are the entry's (over the other labels) or
 * all of them, each with that value first, written into buf. Their
 * number, or 0 when the entry cannot be fixed. */
static size_t fixed_combos(const ph_metric_table *t, const char *fixed,
                           const char **buf, size_t cap) {
  const ph_metric_def *def = &t->def;
  if (def->n_labels < 1 || def->n_labels > PH_METRIC_MAX_LABELS)
    return 0;
  int known = 0;
  for (const char *const *v = def->labels[0].values; v && *v; v++)
    known |= strcmp(*v, fixed) == 0;
  size_t rows = t->combos ? t->n_combos : 1, rest = def->n_labels - 1;
  if (!known || rows * def->n_labels > cap)
    return 0;
  for (size_t r = 0; r < rows; r++) {
    buf[r * def->n_labels] = fixed;
    for (size_t i = 0; i < rest; i++)
      buf[r * def->n_labels + 1 + i] =
          t->combos ? t->combos[r * rest + i] : NULL;
  }
  return rows;
}

ph_metric *ph_metric_register_only(const ph_api *api, ph_ctx *ctx,
                                   const ph_metric_def *def,
                                   const char *const *combos, size_t n_combos) {
  if (combos && api->size > offsetof(ph_api, metric_only) && api->metric_only)
    return api->metric_only(ctx, def, combos, n_combos);
  return api->metric(ctx, def);
}

/* One entry; with fixed, its first label is that value (fixed_combos). */
static int register_one(const ph_api *api, ph_ctx *ctx,
                        const ph_metric_table *t, const char *fixed,
                        void *state) {
  const ph_metric_def *def = &t->def;
  char *field = (char *)state + t->off;
  const char *buf[PH_METRIC_TABLE_MAX_COMBOS * PH_METRIC_MAX_LABELS];
  const char *const *combos = t->combos;
  size_t n_combos = t->n_combos;
  if (fixed) {
    n_combos = fixed_combos(t, fixed, buf, PH_METRIC_NELEM(buf));
    if (n_combos == 0)
      return refuse(api, ctx, def->name,
                    "the fixed value is not one of the first label's, or "
                    "too many combinations");
    combos = buf;
  }
  size_t n = def->n_labels <= PH_METRIC_MAX_LABELS
                 ? series_from(def, fixed ? 1 : 0)
                 : 0;
  if (t->has_series && (n == 0 || t->size != n * sizeof(ph_series *)))
    return refuse(api, ctx, def->name,
                  "handle size is not one series per label combination");
  if (!t->has_series && t->size != sizeof(ph_metric *))
    return refuse(api, ctx, def->name, "handle is not a ph_metric *");
  ph_metric *m = ph_metric_register_only(api, ctx, def, combos, n_combos);
  if (!m)
    return refuse(api, ctx, def->name, "registration refused");
  if (!t->has_series)
    *(ph_metric **)(void *)field = m;
  else if (fill_series(api, m, def, fixed, (ph_series **)(void *)field, n,
                       combos != NULL) != 0)
    return refuse(api, ctx, def->name, "a series was not resolved");
  return PH_OK;
}

int ph_metric_table_register(const ph_api *api, ph_ctx *ctx,
                             const ph_metric_table *table, void *state) {
  for (const ph_metric_table *t = table; t->def.name; t++)
    if (register_one(api, ctx, t, NULL, state) != PH_OK)
      return PH_EINVAL;
  return PH_OK;
}

int ph_metric_table_register_fixed(const ph_api *api, ph_ctx *ctx,
                                   const ph_metric_table *table,
                                   const char *fixed, void *state) {
  if (!fixed)
    return PH_EINVAL;
  for (const ph_metric_table *t = table; t->def.name; t++)
    if (register_one(api, ctx, t, fixed, state) != PH_OK)
      return PH_EINVAL;
  return PH_OK;
}
