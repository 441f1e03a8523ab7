/* SPDX-License-Identifier: BSD-2-Clause */
/* The authorization revision as a store knows it (az_revision.h). */
#include "az_revision.h"

#include <string.h>

static const char *const poll_results[] = {"success", "failure", NULL};

void az_rev_track_init(az_rev_track *t, ph_ctx *ctx, const ph_api *api,
                       int64_t stale_ms) {
  memset(t, 0, sizeof(*t));
  t->api = api;
  t->ctx = ctx;
  t->stale_ms = stale_ms;
}

int az_rev_track_vouched(const az_rev_track *t) {
  if (!t->healthy)
    return 0;
  if (!t->failing)
    return 1;
  return t->api->now_ms(t->ctx) - t->last_ok_ms <= t->stale_ms;
}

int az_rev_track_observe(az_rev_track *t, az_rev_read what, int64_t value,
                         uint64_t floor) {
  if (what == AZ_REV_READ_FAILED) {
    t->failing = 1;
    return 0;
  }
  t->failing = 0;
  if (what == AZ_REV_READ_OK && value > 0 && (uint64_t)value < t->value &&
      (uint64_t)value >= floor)
    return 0; /* stale, not wrong: read before a write whose answer came
                 first */
  if (what == AZ_REV_READ_OK && value > 0 && (uint64_t)value >= t->value) {
    t->value = (uint64_t)value;
    t->healthy = 1;
    t->last_ok_ms = t->api->now_ms(t->ctx);
    return 1;
  }
  t->healthy = 0; /* missing, not fitting, or lower than callers have seen */
  return 0;
}

int az_rev_track_get(const az_rev_track *t, uint64_t *out) {
  if (!out)
    return PH_EINVAL;
  if (!az_rev_track_vouched(t))
    return PH_ESTATE;
  *out = t->value;
  return PH_OK;
}

int az_revision_init(az_revision *r, ph_ctx *ctx, const ph_api *api,
                     int64_t stale_ms) {
  memset(r, 0, sizeof(*r));
  az_rev_track_init(&r->t, ctx, api, stale_ms);
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

int az_revision_observe(az_revision *r, az_rev_read what, int64_t value,
                        int poll) {
  return az_revision_observe_at(r, what, value, r->t.value, poll);
}

int az_revision_observe_at(az_revision *r, az_rev_read what, int64_t value,
                           uint64_t floor, int poll) {
  az_rev_track *t = &r->t;
  int was = az_rev_track_vouched(t);
  if (az_rev_track_observe(t, what, value, floor))
    t->api->gauge_set(r->m_rev, (double)t->value);
  if (poll)
    t->api->inc(t->healthy && !t->failing ? r->m_poll_ok : r->m_poll_fail, 1);
  int now = az_rev_track_vouched(t);
  if (now != was || !now)
    t->api->set_ready(t->ctx, now);
  return now;
}

int az_revision_get(const az_revision *r, uint64_t *out) {
  return az_rev_track_get(&r->t, out);
}
