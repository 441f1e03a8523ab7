/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The controller's status panels (cs_status.h, issue 28): "gateways" (one
 * row per claimed WatchSnapshots stream), "checkers" (one per live
 * WatchCheckTasks stream) and "proxies" (the pool's rows at the cached
 * revision with their owner and active count from the streams' last
 * snapshots and accepted runtime reports, the reducer's verdict per tier
 * and the last gateway outcome). A gateway's or checker's zone is what
 * Redis holds for its session, read back by the calls the stream makes
 * anyway (owned() each round, checker_alive each renewal); the answer
 * that claims a stream sets it first, so a listed row has it.
 * extractions_in_progress is Redis's count of RECLAIMING plus EXTRACTED
 * proxies as the last assign answered it (at most assign_interval old;
 * null before one answered or after one failed), extractions_reclaiming
 * the first of the two: nothing is read from Redis on a page view. A
 * session is shown by its first CS_STATUS_SESSION_SHOWN hex digits: enough to
 * tell sessions apart, while the whole id, which fences a plaintext
 * worker's calls, stays out of the page like out of the logs.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cs_checker.h"
#include "cs_health_int.h"
#include "cs_status.h"

#define api cs_api

static const char *const verdicts[] = {"", "available", "suspect",
                                       "unhealthy"};
static const char *const stages[] = {"", "dial", "proxy_handshake",
                                     "response_headers", "tunnel"};
static const char *const results[] = {"", "success", "failure", "timeout"};

#define CS_STATUS_SESSION_SHOWN 8

static void short_session(char *b, size_t n, const char *session) {
  snprintf(b, n, "%.*s", CS_STATUS_SESSION_SHOWN, session);
}

static void age(char *b, size_t n, int64_t since_ms) {
  if (since_ms > 0)
    snprintf(b, n, "%" PRId64, (mono_ms() - since_ms) / 1000);
  else
    b[0] = 0;
}

/* ---- gateways ------------------------------------------------------------ */

static int gw_row(void *arg, const cs_gw_view *v) {
  ph_panel *p = arg;
  char acked[24] = "", rep[24], owned[24] = "";
  if (v->last && v->acked)
    snprintf(acked, sizeof(acked), "%" PRIu64, v->last->version);
  if (v->last)
    snprintf(owned, sizeof(owned), "%zu", v->last->n_proxies);
  char sess[CS_STATUS_SESSION_SHOWN + 1];
  short_session(sess, sizeof(sess), v->session);
  age(rep, sizeof(rep), v->report_ms);
  const char *cells[] = {v->worker, sess, v->zone, acked, rep, owned};
  return api->status_row(p, cells, 6) == PH_ELIMIT;
}

static void fill_gateways(void *arg, ph_panel *p) {
  cs *m = arg;
  static const char *const cols[] = {"worker",       "session",
                                     "zone",         "snapshot_acked",
                                     "report_age_s", "owned"};
  if (api->status_table(p, "gateways", cols, 6,
                        PH_STATUS_COL_NUM(3) | PH_STATUS_COL_NUM(4) |
                            PH_STATUS_COL_NUM(5)) == PH_OK)
    cs_watch_each(m, gw_row, p);
}

/* ---- checkers ------------------------------------------------------------ */

static void fill_checkers(void *arg, ph_panel *p) {
  cs *m = arg;
  static const char *const cols[] = {"checker",         "session",
                                     "zone",            "max_concurrency",
                                     "in_flight",       "report_age_s"};
  if (!m->checkers ||
      api->status_table(p, "checkers", cols, 6,
                        PH_STATUS_COL_NUM(3) | PH_STATUS_COL_NUM(4) |
                            PH_STATUS_COL_NUM(5)) != PH_OK)
    return;
  ILIST_FOREACH_SAFE(&m->checkers->live, it, nx) {
    cs_checker *c = ILIST_ENTRY(it, cs_checker, node);
    if (!c->claimed)
      continue;
    char mc[16], fl[24], rep[24];
    snprintf(mc, sizeof(mc), "%" PRIu32, c->max_concurrency);
    snprintf(fl, sizeof(fl), "%zu", c->task_ids.n);
    char sess[CS_STATUS_SESSION_SHOWN + 1];
    short_session(sess, sizeof(sess), c->session);
    age(rep, sizeof(rep), c->report_ms);
    const char *cells[] = {c->id, sess, c->zone, mc, fl, rep};
    if (api->status_row(p, cells, 6) == PH_ELIMIT)
      return;
  }
}

/* ---- proxies ------------------------------------------------------------- */

/* Who owns a proxy (the stream whose last snapshot carries it) and its
 * active count from that stream's last accepted runtime report. */
typedef struct own {
  const char *id, *owner;
  int64_t active; /* -1: not reported */
} own;

typedef struct own_index {
  own *v;
  size_t n, cap;
} own_index;

static int own_cmp(const void *a, const void *b) {
  return strcmp(((const own *)a)->id, ((const own *)b)->id);
}

static int count_cmp(const void *key, const void *b) {
  return strcmp(key, ((const cs_count *)b)->proxy_id);
}

static int own_add(void *arg, const cs_gw_view *v) {
  own_index *x = arg;
  for (size_t i = 0; v->last && i < v->last->n_proxies; i++) {
    if (x->n == x->cap)
      return 1; /* bounded by the pool: no more room */
    const Controlplane__V1__OwnedProxy *o = v->last->proxies[i];
    const cs_count *c = v->n_counts ? bsearch(o->proxy_id, v->counts,
                                              v->n_counts, sizeof(*v->counts),
                                              count_cmp)
                                    : NULL; /* bsearch takes no NULL */
    x->v[x->n++] = (own){o->proxy_id, v->worker, c ? (int64_t)c->active : -1};
  }
  return 0;
}

static const char *tier_state(const hc_proxy *h, int tier) {
  int v = 0;
  for (uint32_t i = 0; h && i < h->n_items; i++)
    if (h->items[i].tier == tier)
      v = cs_hyst_worst(v, h->items[i].h.verdict);
  return v >= 0 && v <= 3 ? verdicts[v] : "";
}

static void proxy_row(ph_panel *p, cs *m, const ph_pool_proxy_row *r,
                      const own *o, int *full) {
  const hc_proxy *h = m->health ? hc_find(m->health, r->proxy_id) : NULL;
  char cap[16], act[24] = "", last[48] = "";
  snprintf(cap, sizeof(cap), "%" PRIu32, r->capacity);
  if (o && o->active >= 0)
    snprintf(act, sizeof(act), "%" PRId64, o->active);
  if (h && h->last_stage && h->last_stage <= 4 && h->last_result <= 3)
    snprintf(last, sizeof(last), "%s/%s", stages[h->last_stage],
             results[h->last_result]);
  const char *cells[] = {r->proxy_id,
                         o ? o->owner : "",
                         tier_state(h, CONTROLPLANE__V1__CHECK_TIER__CHECK_TIER_BASIC),
                         tier_state(h, CONTROLPLANE__V1__CHECK_TIER__CHECK_TIER_EGRESS),
                         tier_state(h, CONTROLPLANE__V1__CHECK_TIER__CHECK_TIER_TARGET),
                         cap,
                         act,
                         last};
  *full = api->status_row(p, cells, 8) == PH_ELIMIT;
}

static void fill_proxies(void *arg, ph_panel *p) {
  cs *m = arg;
  static const char *const cols[] = {"proxy",        "owner",
                                     "state_basic",  "state_egress",
                                     "state_target", "capacity",
                                     "active",       "last_outcome"};
  const cs_pool *pool = m->pool;
  size_t n = pool ? pool->n_proxies : 0;
  own_index x = {NULL, 0, n};
  if (n && !(x.v = malloc(n * sizeof(*x.v))))
    x.cap = 0; /* no owners shown rather than none listed */
  cs_watch_each(m, own_add, &x);
  if (x.n) /* qsort takes no NULL, even for 0 items */
    qsort(x.v, x.n, sizeof(*x.v), own_cmp);
  api->status_field_int(p, "proxies", (int64_t)n);
  if (m->extract_known) {
    api->status_field_int(p, "extractions_in_progress",
                          (int64_t)m->n_reclaiming + m->n_extracted);
    api->status_field_int(p, "extractions_reclaiming", m->n_reclaiming);
  } else {
    api->status_field(p, "extractions_in_progress", NULL);
    api->status_field(p, "extractions_reclaiming", NULL);
  }
  if (api->status_table(p, "proxies", cols, 8,
                        PH_STATUS_COL_NUM(5) | PH_STATUS_COL_NUM(6)) ==
      PH_OK) {
    int full = 0;
    for (size_t i = 0; i < n && !full; i++) {
      const ph_pool_proxy_row *r = &pool->proxies[i];
      own key = {r->proxy_id, NULL, -1};
      const own *o = x.n ? bsearch(&key, x.v, x.n, sizeof(*x.v), own_cmp)
                         : NULL;
      proxy_row(p, m, r, o, &full);
    }
  }
  free(x.v);
}

int cs_status_init(cs *m) {
  if (api->size <= offsetof(ph_api, status_row) || !api->status_register)
    return PH_OK; /* a 1.6 host: no status page */
  if (api->status_register(m->ctx, "gateways", "Gateways", fill_gateways,
                           m) != PH_OK ||
      api->status_register(m->ctx, "checkers", "Checkers", fill_checkers,
                           m) != PH_OK ||
      api->status_register(m->ctx, "proxies", "Proxies", fill_proxies, m) !=
          PH_OK)
    return PH_EINVAL;
  return PH_OK;
}
