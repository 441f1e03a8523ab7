/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Declarative metrics (issue 25 item 3): a module lists its metric
 * families in one table, like its configuration keys (PH_CONF_KEY), and
 * registers them all with one call in init:
 *
 *   static const char *const results[] = {"ok", "failed", NULL};
 *   static const ph_label_def result_label[] = {{"result", results}};
 *   static const double secs[] = {0.01, 0.1, 1};
 *
 *   static const ph_metric_table metrics[] = {
 *       PH_METRIC("proxyhost_x_runs_total", PH_METRIC_COUNTER, "runs",
 *                 PH_METRIC_LABELS(result_label), PH_METRIC_NO_BUCKETS,
 *                 x_state, m_runs),           (ph_series *m_runs[2])
 *       PH_METRIC("proxyhost_x_run_seconds", PH_METRIC_HISTOGRAM,
 *                 "run time", PH_METRIC_NO_LABELS, PH_METRIC_BUCKETS(secs),
 *                 x_state, m_seconds),        (ph_series *m_seconds)
 *       PH_METRIC_END};
 *
 *   if (ph_metric_table_register(api, ctx, metrics, st) != PH_OK)
 *     return PH_EINVAL;
 *
 * Each entry is one family (api->metric, every label combination). Its
 * handles land in the module's state at the field's offset:
 *
 *   PH_METRIC       the series: a ph_series * for a metric without
 *                   labels, otherwise an array with one ph_series * per
 *                   combination of the label values, in row-major order
 *                   (the first label the outermost index, so
 *                   ph_series *m[N_FIRST][N_SECOND]). The field's size
 *                   must be exactly that many pointers.
 *   PH_METRIC_FAMILY the ph_metric * only, for a module that resolves its
 *                   series itself (api->series).
 *   PH_METRIC_ONLY  as PH_METRIC, for a family of which only some label
 *                   combinations are ever recorded: registered with
 *                   api->metric_only (ABI 1.2) and those combinations
 *                   (PH_METRIC_COMBOS(arr, n): n rows of one value per
 *                   label, NULL for any), so /metrics shows no zero
 *                   series for the others; api->metric on an older host.
 *                   The handle of a combination not declared is NULL
 *                   (api->series has none for it).
 *
 * Families are registered in table order (the order /metrics shows).
 * The first refusal stops: the host logs its reason, this logs
 * "metric table entry refused" naming the metric and why (registration
 * refused, handle size not the number of series, a series not resolved),
 * and the call returns PH_EINVAL; the families registered before it
 * stay registered (init fails, the host discards the module).
 *
 * Init only, loop thread (as api->metric). Lives in modules/lib (not
 * the SDK) so that it costs no ABI change; it needs only ABI 1.0 calls
 * (metric, series; metric_only where the host has it), so a third-party
 * module may copy these two files.
 */
#ifndef PH_METRIC_TABLE_H
#define PH_METRIC_TABLE_H

#include <stddef.h>

#include <proxyhost/host.h>

typedef struct ph_metric_table {
  ph_metric_def def;   /* def.name NULL: the end marker */
  int has_series;      /* 1: series at series_off; 0: ph_metric * there */
  size_t off;          /* offset of the handle field in the state */
  size_t size;         /* sizeof the handle field */
  const char *const *combos; /* PH_METRIC_ONLY: the combinations, or NULL */
  size_t n_combos;
} ph_metric_table;

#define PH_METRIC_NELEM(a) (sizeof(a) / sizeof((a)[0]))
/* For the labels and buckets arguments: a static array, or none. The
 * buckets array holds only the finite upper bounds (+Inf is implicit). */
#define PH_METRIC_LABELS(arr) (arr), PH_METRIC_NELEM(arr)
#define PH_METRIC_NO_LABELS NULL, 0
#define PH_METRIC_BUCKETS(arr) (arr), PH_METRIC_NELEM(arr)
#define PH_METRIC_NO_BUCKETS NULL, 0
/* For PH_METRIC_ONLY: n combinations in arr (n * n_labels values). */
#define PH_METRIC_COMBOS(arr, n) (arr), (n)

/* The macros expand labels_ and buckets_ (two initialisers each) in
 * place, so they must not pass them on to another macro. */
#define PH_METRIC(name_, type_, help_, labels_, buckets_, type_t_, field_)    \
  {{(name_), (help_), (type_), labels_, buckets_},                            \
   1,                                                                         \
   offsetof(type_t_, field_),                                                 \
   sizeof(((type_t_ *)0)->field_),                                            \
   NULL,                                                                      \
   0}
#define PH_METRIC_ONLY(name_, type_, help_, labels_, buckets_, combos_,       \
                       type_t_, field_)                                       \
  {{(name_), (help_), (type_), labels_, buckets_},                            \
   1,                                                                         \
   offsetof(type_t_, field_),                                                 \
   sizeof(((type_t_ *)0)->field_),                                            \
   combos_}
#define PH_METRIC_FAMILY(name_, type_, help_, labels_, buckets_, type_t_,     \
                         field_)                                              \
  {{(name_), (help_), (type_), labels_, buckets_},                            \
   0,                                                                         \
   offsetof(type_t_, field_),                                                 \
   sizeof(((type_t_ *)0)->field_),                                            \
   NULL,                                                                      \
   0}
#define PH_METRIC_END                                                         \
  {{NULL, NULL, (ph_metric_type)0, NULL, 0, NULL, 0}, 0, 0, 0, NULL, 0}

/* Registers every family of table (up to PH_METRIC_END) and fills the
 * handles in state. PH_OK, or PH_EINVAL after the log line above. */
int ph_metric_table_register(const ph_api *api, ph_ctx *ctx,
                             const ph_metric_table *table, void *state);

/* As ph_metric_table_register, for a module that registers the same
 * families once per role, each role its own value of the first label
 * (the tunnel's component: client, server, agent): every entry's first
 * label is fixed to `fixed`, one of that label's values. Each family is
 * registered with api->metric_only (ABI 1.2; api->metric on an older
 * host) for that value only, so /metrics shows no series of the other
 * roles, and its handle covers the other labels only (a ph_series * for
 * a family whose one label is the fixed one; otherwise one per
 * combination of the others, row-major). A PH_METRIC_ONLY entry's
 * combinations are written over the other labels (n_labels - 1 values a
 * row), at most PH_METRIC_TABLE_MAX_COMBOS of them. An entry without
 * labels, or whose first label lacks `fixed`, is refused as above. */
int ph_metric_table_register_fixed(const ph_api *api, ph_ctx *ctx,
                                   const ph_metric_table *table,
                                   const char *fixed, void *state);
#define PH_METRIC_TABLE_MAX_COMBOS 16

/* api->metric_only(ctx, def, combos, n_combos) where the host has it
 * (ABI 1.2): only those combinations are shown; on an older host, or
 * with combos NULL, api->metric(ctx, def): every combination. The one
 * place that decides it, for the tables above and for modules that
 * register a family by hand. Init only, loop thread. */
ph_metric *ph_metric_register_only(const ph_api *api, ph_ctx *ctx,
                                   const ph_metric_def *def,
                                   const char *const *combos, size_t n_combos);

/* The number of series a PH_METRIC entry fills: the product of the
 * number of values of each label (1 without labels). */
size_t ph_metric_table_series(const ph_metric_def *def);

#endif
