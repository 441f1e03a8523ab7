/* SPDX-License-Identifier: BSD-2-Clause */
/* Counters for unit tests that pass ph_series to the host's parts (bus,
 * mailbox): they come from the real metrics registry, which the test's
 * main creates in `reg`. */
#ifndef PH_COUNTER_TEST_H
#define PH_COUNTER_TEST_H

#include "metrics.h"

static ph_registry *reg;

static inline ph_series *counter(const char *name) {
  ph_metric_def def = {
      .name = name, .help = "test counter", .type = PH_METRIC_COUNTER};
  return metrics_series(metrics_register(reg, &def, NULL), NULL);
}

static inline long long series_value(ph_series *s) {
  return (long long)metrics_value(s);
}

#endif
