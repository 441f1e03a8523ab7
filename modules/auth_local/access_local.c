/* SPDX-License-Identifier: BSD-2-Clause */
/* auth_local's "access" service (see access_local.h).
 *
 * A check is decided when it starts (a lookup in memory) and its answer
 * waits for the loop's next turn in lib/sflight's queue (the host's
 * defer, no clock tick), so the callback never runs inside check_open;
 * one taken as a batch, so a check started from inside a callback is
 * answered on a later turn. At most max_pending answers wait (a slot
 * each); beyond, unavailable/queue_full. */
#include "access_local.h"

#include <stdlib.h>
#include <string.h>

#include "lib/access_req.h" /* what a request must be, shared */
#include "lib/metric_table.h"
#include "lib/sflight.h" /* the answers on the next loop turn */

struct auth_local_access {
  ph_ctx *ctx;
  const ph_api *api;
  auth_local_known_fn known;
  const void *owner;
  uint64_t revision;
  uint32_t ttl_ms;
  sflight *sf; /* answers for the next loop turn, max_pending of them */
  ph_series *m_checks[3]; /* by verdict - 1 */
};

static const char *const verdict_names[] = {"allow", "deny", "unavailable",
                                            NULL};

/* The policy: a known principal may open anything, through any agent
 * (auth_local has none of its own); the connector's policy comes after. */
static void decide(const auth_local_access *s, const ph_access_request *r,
                   ph_access_result *res) {
  int known = r->principal && s->known(s->owner, r->principal);
  res->verdict = known ? PH_ACCESS_ALLOW : PH_ACCESS_DENY;
  res->code = known ? PH_OPEN_OK : PH_OPEN_FORBIDDEN;
  res->ttl_ms = s->ttl_ms;
  res->revision = s->revision;
}

/* Beyond max_pending: fail closed, never cached, retry at once. */
static void over_bound(ph_access_result *res) {
  res->verdict = PH_ACCESS_UNAVAILABLE;
  res->code = PH_OPEN_QUEUE_FULL;
}

/* sflight's delivery: counted, then handed over. */
static void call(void *owner, sf_fn cb, void *arg, const void *answer) {
  auth_local_access *s = owner;
  const ph_access_result *res = answer;
  s->api->inc(s->m_checks[res->verdict - 1], 1);
  ((ph_access_cb)cb)(arg, res);
}

static int64_t check_open(void *self, const ph_access_request *req,
                          ph_access_cb cb, void *arg) {
  auth_local_access *s = self;
  ph_access_request r;
  if (!req || !cb || access_req_read(req, &r) != PH_OK)
    return PH_EINVAL;
  ph_access_result res;
  memset(&res, 0, sizeof(res));
  res.size = sizeof(res);
  decide(s, &r, &res);
  int64_t id = sf_later(s->sf, &res, 1, (sf_fn)cb, arg);
  if (id == PH_EFULL) {
    memset(&res, 0, sizeof(res));
    res.size = sizeof(res);
    over_bound(&res);
    id = sf_later(s->sf, &res, 0, (sf_fn)cb, arg);
  }
  return id;
}

static int cancel(void *self, int64_t id) {
  auth_local_access *s = self;
  return sf_cancel(s->sf, id);
}

/* In memory and always current: never PH_ESTATE. */
static int revision(void *self, uint64_t *rev) {
  const auth_local_access *s = self;
  if (!rev)
    return PH_EINVAL;
  *rev = s->revision;
  return PH_OK;
}

const ph_access_v1 auth_local_access_vt = {check_open, cancel, revision};

static const ph_label_def verdict_label[] = {{"result", verdict_names}};
static const ph_metric_table access_metrics[] = {
    PH_METRIC("proxyhost_auth_local_access_checks_total", PH_METRIC_COUNTER,
              "Access checks (may this principal open this target) by result",
              PH_METRIC_LABELS(verdict_label), PH_METRIC_NO_BUCKETS,
              auth_local_access, m_checks),
    PH_METRIC_END};

auth_local_access *auth_local_access_new(ph_ctx *ctx, const ph_api *api,
                                         auth_local_known_fn known,
                                         const void *owner) {
  auth_local_access *s = calloc(1, sizeof(*s));
  if (!s)
    return NULL;
  s->ctx = ctx;
  s->api = api;
  s->known = known;
  s->owner = owner;
  s->revision = 1; /* 0 would say "no revision" */
  sf_conf sc = {.answer_size = sizeof(ph_access_result),
                .max_flights = 1, /* none: every answer is known at once */
                .max_waiters = 1,
                .max_per_key = 1,
                .call = call,
                .owner = s};
  s->sf = sf_new(api, ctx, &sc);
  if (!s->sf ||
      ph_metric_table_register(api, ctx, access_metrics, s) != PH_OK) {
    auth_local_access_free(s);
    return NULL;
  }
  return s;
}

void auth_local_access_free(auth_local_access *s) {
  if (!s)
    return;
  sf_free(s->sf);
  free(s);
}

void auth_local_access_configure(auth_local_access *s, int64_t max_pending,
                                 uint32_t ttl_ms) {
  sf_set_limits(s->sf, 1, max_pending, 1);
  s->ttl_ms = ttl_ms;
}

void auth_local_access_bump(auth_local_access *s) { s->revision++; }

uint64_t auth_local_access_revision(const auth_local_access *s) {
  return s->revision;
}
