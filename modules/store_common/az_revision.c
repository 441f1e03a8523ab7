/* SPDX-License-Identifier: BSD-2-Clause */
/* The authorization revision as a store knows it (az_revision.h). */
#include "az_revision.h"

#include <string.h>

static const char *const poll_results[] = {"success", "failure", NULL};

int az_revision_init(az_revision *r, ph_ctx *ctx, const ph_api *api,
                     int64_t stale_ms) {
  memset(r, 0, sizeof(*r));
  r->api = api;
  r->ctx = ctx;
  r->stale_ms = stale_ms;
  /* Exactly these definitions in both stores: the host shares a metric
   * registered twice with the same definition. */
  ph_metric_def g = {"tunnelmesh_authorization_revision",
                     "The authorization revision the store last read",
                     PH_METRIC_GAUGE, NULL, 0, NULL, 0};
  static const ph_label_def labels[] = {{"result", poll_results}};
  ph_metric_def c = {"tunnelmesh_authorization_revision_poll_total",
                     "Reads of the authorization revision by result",
                     PH_METRIC_COUNTER, labels, 1, NULL, 0};
  ph_metric *mg = api->metric(ctx, &g);
  ph_metric *mc = api->metric(ctx, &c);
  if (!mg || !mc)
    return PH_EINVAL;
  r->m_rev = api->series(mg, NULL);
  const char *ok[] = {"success"}, *fail[] = {"failure"};
  r->m_poll_ok = api->series(mc, ok);
  r->m_poll_fail = api->series(mc, fail);
  return r->m_rev && r->m_poll_ok && r->m_poll_fail ? PH_OK : PH_EINVAL;
}

static int vouched(const az_revision *r) {
  if (!r->healthy)
    return 0;
  if (!r->failing)
    return 1;
  return r->api->now_ms(r->ctx) - r->last_ok_ms <= r->stale_ms;
}

int az_revision_observe(az_revision *r, az_rev_read what, int64_t value,
                        int poll) {
  return az_revision_observe_at(r, what, value, r->value, poll);
}

int az_revision_observe_at(az_revision *r, az_rev_read what, int64_t value,
                           uint64_t floor, int poll) {
  int was = vouched(r);
  if (what == AZ_REV_READ_FAILED) {
    r->failing = 1;
  } else {
    r->failing = 0;
    if (what == AZ_REV_READ_OK && value > 0 && (uint64_t)value < r->value &&
        (uint64_t)value >= floor) {
      /* Stale, not wrong: read before a write whose answer came first. */
    } else if (what == AZ_REV_READ_OK && value > 0 &&
               (uint64_t)value >= r->value) {
      r->value = (uint64_t)value;
      r->healthy = 1;
      r->last_ok_ms = r->api->now_ms(r->ctx);
      r->api->gauge_set(r->m_rev, (double)r->value);
    } else {
      /* Missing, not fitting, or lower than what callers have seen. */
      r->healthy = 0;
    }
  }
  if (poll)
    r->api->inc(r->healthy && !r->failing ? r->m_poll_ok : r->m_poll_fail,
                1);
  int now = vouched(r);
  if (now != was || !now)
    r->api->set_ready(r->ctx, now);
  return now;
}

int az_revision_get(const az_revision *r, uint64_t *out) {
  if (!out)
    return PH_EINVAL;
  if (!vouched(r))
    return PH_ESTATE;
  *out = r->value;
  return PH_OK;
}
