/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proxyhost SDK: metric declarations.
 *
 * Metrics are registered in init with every label and every value each
 * label may take, so the number of series is known and bounded when the
 * metric is registered (at most PH_METRIC_MAX_SERIES per metric). With
 * api->metric every combination of the values exists; with
 * api->metric_only (ABI 1.2) only the combinations the module lists
 * (the ones it can produce), and only those appear in /metrics. A module
 * resolves the series it needs once (api->series) and updates them on the
 * hot path through api->inc/gauge_set/gauge_add/observe: no lookup, lock or
 * allocation per update. Updates are atomic and allowed from any thread.
 *
 * Names follow Prometheus rules ([a-zA-Z_:][a-zA-Z0-9_:]*); counters
 * should end in _total. A module's own metrics are named
 * proxyhost_<module>_* (docs/operations.md, "Names"). Never use unbounded values (hosts, ids, addresses)
 * as label values: the declared value lists make that impossible.
 */
#ifndef PROXYHOST_METRICS_H
#define PROXYHOST_METRICS_H

#include <stddef.h>

typedef enum ph_metric_type {
  PH_METRIC_COUNTER = 1, /* monotonically increasing; api->inc */
  PH_METRIC_GAUGE,       /* api->gauge_set / api->gauge_add (may go down) */
  PH_METRIC_HISTOGRAM    /* api->observe, fixed buckets */
} ph_metric_type;

#define PH_METRIC_MAX_LABELS 4
#define PH_METRIC_MAX_SERIES 1024
#define PH_METRIC_MAX_BUCKETS 32

typedef struct ph_label_def {
  const char *name;           /* label name */
  const char *const *values;  /* allowed values, NULL-terminated */
} ph_label_def;

typedef struct ph_metric_def {
  const char *name;
  const char *help;
  ph_metric_type type;
  const ph_label_def *labels; /* n_labels entries, or NULL */
  size_t n_labels;
  const double *buckets;      /* histograms: strictly increasing upper */
  size_t n_buckets;           /* bounds, +Inf is implicit */
} ph_metric_def;

typedef struct ph_metric ph_metric; /* opaque, owned by the host */
typedef struct ph_series ph_series; /* opaque, owned by the host */

#endif
