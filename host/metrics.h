/* SPDX-License-Identifier: BSD-2-Clause */
/* The metrics registry and its Prometheus text exposition (format 0.0.4).
 * Registration is single-threaded (init); updates are atomic, any thread;
 * rendering happens on the loop thread while other threads may update. */
#ifndef PH_HOST_METRICS_H
#define PH_HOST_METRICS_H

#include <stdint.h>

#include <proxyhost/metrics.h>

#include "buf.h"

typedef struct ph_registry ph_registry;

ph_registry *metrics_new(void);
void metrics_free(ph_registry *r);

/* Validates the definition (name syntax, duplicate name, label names and
 * values, histogram buckets strictly increasing, series count = product of
 * the label value counts <= PH_METRIC_MAX_SERIES, at most
 * PH_METRIC_MAX_LABELS labels and PH_METRIC_MAX_BUCKETS buckets) and
 * copies everything it needs. NULL with a reason in err on failure. */
ph_metric *metrics_register(ph_registry *r, const ph_metric_def *def,
                            ph_buf *err);
/* The same, but only the label combinations listed exist (are rendered
 * and returned by metrics_series): combos holds n_combos tuples of
 * n_labels values each, flattened; a NULL value stands for every value of
 * its label. Refused (NULL, reason in err): no labels, combos NULL,
 * n_combos 0 or above PH_METRIC_MAX_SERIES, a value the label does not
 * declare. Registering an existing metric again (same definition, either
 * function) adds its combinations to the declared ones: modules sharing a
 * metric each declare what they produce. combos is not kept. */
ph_metric *metrics_register_only(ph_registry *r, const ph_metric_def *def,
                                 const char *const *combos, size_t n_combos,
                                 ph_buf *err);
/* One value per label; NULL when a value or the combination was not
 * declared. A metric with
 * no labels has one series, returned for any values pointer (even NULL). */
ph_series *metrics_series(ph_metric *m, const char *const *values);

void metrics_inc(ph_series *s, uint64_t n);
/* Counters only: sets the total from an outside monotonic source (may be
 * fractional). Lower, NaN, negative and infinite values are ignored; once
 * set, the set total is what is shown (inc no longer is). */
void metrics_counter_set(ph_series *s, double v);
void metrics_gauge_set(ph_series *s, double v);
void metrics_gauge_add(ph_series *s, double v);
void metrics_observe(ph_series *s, double v);

/* Current values, for tests and the mock host. */
double metrics_value(ph_series *s);        /* counter or gauge */
uint64_t metrics_hist_count(ph_series *s); /* histogram */

/* Appends the whole registry in the text exposition format. 0 or -1. */
int metrics_render(ph_registry *r, ph_buf *out);

#endif
