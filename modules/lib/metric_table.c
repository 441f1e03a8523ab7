/* SPDX-License-Identifier: BSD-2-Clause */
/* Declarative metrics: see metric_table.h. */
#include "metric_table.h"

#include <stddef.h>

#include <proxyhost/log.h>

static size_t n_values(const char *const *v) {
  size_t n = 0;
  while (v && v[n])
    n++;
  return n;
}

size_t ph_metric_table_series(const ph_metric_def *def) {
  size_t n = 1;
  for (size_t i = 0; i < def->n_labels; i++)
    n *= n_values(def->labels[i].values);
  return n;
}

static int refuse(const ph_api *api, ph_ctx *ctx, const char *name,
                  const char *why) {
  PH_LOG(api, ctx, PH_LOG_ERROR, "metric table entry refused",
         PH_STR("metric", name), PH_STR("reason", why));
  return PH_EINVAL;
}

/* Resolves every combination, the last label varying fastest. */
static int fill_series(const ph_api *api, ph_metric *m,
                       const ph_metric_def *def, ph_series **out, size_t n,
                       int some) {
  size_t idx[PH_METRIC_MAX_LABELS] = {0};
  const char *vals[PH_METRIC_MAX_LABELS];
  for (size_t s = 0; s < n; s++) {
    for (size_t i = 0; i < def->n_labels; i++)
      vals[i] = def->labels[i].values[idx[i]];
    out[s] = api->series(m, def->n_labels ? vals : NULL);
    if (!out[s] && !some) /* some: only the declared combinations exist */
      return -1;
    for (size_t i = def->n_labels; i-- > 0;) {
      if (def->labels[i].values[++idx[i]])
        break;
      idx[i] = 0;
    }
  }
  return 0;
}

int ph_metric_table_register(const ph_api *api, ph_ctx *ctx,
                             const ph_metric_table *table, void *state) {
  for (const ph_metric_table *t = table; t->def.name; t++) {
    const ph_metric_def *def = &t->def;
    char *field = (char *)state + t->off;
    size_t n = def->n_labels <= PH_METRIC_MAX_LABELS
                   ? ph_metric_table_series(def)
                   : 0;
    if (t->has_series && (n == 0 || t->size != n * sizeof(ph_series *)))
      return refuse(api, ctx, def->name,
                    "handle size is not one series per label combination");
    if (!t->has_series && t->size != sizeof(ph_metric *))
      return refuse(api, ctx, def->name, "handle is not a ph_metric *");
    ph_metric *m =
        t->combos && api->size > offsetof(ph_api, metric_only) &&
                api->metric_only
            ? api->metric_only(ctx, def, t->combos, t->n_combos)
            : api->metric(ctx, def);
    if (!m)
      return refuse(api, ctx, def->name, "registration refused");
    if (!t->has_series)
      *(ph_metric **)(void *)field = m;
    else if (fill_series(api, m, def, (ph_series **)(void *)field, n,
                         t->combos != NULL) != 0)
      return refuse(api, ctx, def->name, "a series was not resolved");
  }
  return PH_OK;
}
