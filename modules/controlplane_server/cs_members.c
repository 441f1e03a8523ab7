/* SPDX-License-Identifier: BSD-2-Clause */
/* The controllers that schedule checks, and each proxy's one among them
 * (cs_members.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cp_common/snapshot/cp_snapshot_time.h"
#include "cs_checker.h"
#include "cs_members.h"
#include "cs_sched_plan.h"
#include "lib/metric_table.h"

#define api cs_api

typedef struct cs_members {
  cs *m;
  ph_timer *timer;
  int64_t call;      /* a members call in flight (id), 0 none */
  int64_t sent_ms;   /* wall time that call was sent */
  int64_t live_till; /* wall: this controller schedules until then */
  char id[CP_AUTH_SESSION_HEX + 1];
  char ids[CP_AUTH_MEMBERS_MAX][PH_POOL_ID_MAX + 1]; /* live, by id */
  const char *v[CP_AUTH_MEMBERS_MAX];
  size_t n;
  int was_member;
  ph_series *m_members, *m_member, *m_calls[2];
} cs_members;

static const char *const call_results[] = {"ok", "failed", NULL};
static const ph_label_def call_label[] = {{"result", call_results}};

static const ph_metric_table metrics[] = {
    PH_METRIC("proxyhost_cp_controller_members", PH_METRIC_GAUGE,
              "controllers with a live membership in Redis (each holds a "
              "checker stream and schedules its share of the checks), as "
              "last read",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, cs_members,
              m_members),
    PH_METRIC("proxyhost_cp_controller_member", PH_METRIC_GAUGE,
              "1 while this controller is a live member and schedules",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, cs_members,
              m_member),
    PH_METRIC("proxyhost_cp_controller_member_calls_total", PH_METRIC_COUNTER,
              "membership renewals and reads in Redis by result",
              PH_METRIC_LABELS(call_label), PH_METRIC_NO_BUCKETS, cs_members,
              m_calls),
    PH_METRIC_END};

static int holds_checker(cs *m) {
  struct cs_checkers *k = m->checkers;
  if (!k)
    return 0;
  ILIST_FOREACH_SAFE(&k->live, it, nx) {
    cs_checker *c = ILIST_ENTRY(it, cs_checker, node);
    if (c->claimed && c->call)
      return 1;
  }
  return 0;
}

static void answered(void *arg, const cp_auth_reply *rep) {
  cs *m = arg;
  cs_members *s = m->members;
  s->call = 0;
  if (rep->result != CP_AUTH_OK) {
    api->inc(s->m_calls[1], 1);
    PH_LOG_RL(api, m->ctx, PH_LOG_WARN,
              "controller membership not renewed: the set as last read "
              "stays until this controller's lease ends",
              PH_STR("result", rep->result == CP_AUTH_LIMIT
                                   ? "more than 16 members"
                                   : "unavailable"));
    return;
  }
  api->inc(s->m_calls[0], 1);
  int in = 0;
  s->n = 0;
  for (size_t i = 0; i < rep->n_members && i < CP_AUTH_MEMBERS_MAX; i++) {
    snprintf(s->ids[s->n], sizeof(s->ids[s->n]), "%s", rep->members[i]);
    s->v[s->n] = s->ids[s->n];
    in |= strcmp(s->ids[s->n], s->id) == 0;
    s->n++;
  }
  /* Counted from the send: Redis's lease began no earlier. */
  s->live_till = in && rep->lease_end_ms ? s->sent_ms + m->conf.member_lease_ms
                                         : 0;
  if (in && !s->was_member)
    PH_LOG(api, m->ctx, PH_LOG_INFO, "controller joined the checks' members",
           PH_STR("member_id", s->id), PH_INT("members", (int64_t)s->n));
  else if (!in && s->was_member)
    PH_LOG(api, m->ctx, PH_LOG_INFO, "controller left the checks' members",
           PH_STR("member_id", s->id), PH_INT("members", (int64_t)s->n),
           PH_STR("reason", holds_checker(m) ? "lease lapsed"
                                             : "no checker stream"));
  s->was_member = in;
  api->gauge_set(s->m_members, (int64_t)s->n);
  api->gauge_set(s->m_member, in);
}

static void tick(ph_timer *tm, void *arg) {
  cs *m = arg;
  cs_members *s = m->members;
  (void)tm;
  api->gauge_set(s->m_member, cs_members_scheduling(m));
  if (s->call > 0 || !m->auth || !m->auth->members)
    return;
  s->sent_ms = wall_ms();
  int64_t id = m->auth->members(m->auth_self, s->id,
                                holds_checker(m) ? m->conf.member_lease_ms : 0,
                                answered, m);
  if (id > 0)
    s->call = id;
}

int cs_members_init(cs *m) {
  cs_members *s = calloc(1, sizeof(*s));
  if (!s)
    return PH_ENOMEM;
  m->members = s;
  s->m = m;
  return ph_metric_table_register(api, m->ctx, metrics, s);
}

void cs_members_start(cs *m) {
  cs_members *s = m->members;
  if (!m->auth || !m->auth->members ||
      m->auth->new_session_id(s->id) != PH_OK)
    return; /* no member id: this controller never schedules */
  PH_LOG(api, m->ctx, PH_LOG_INFO, "controller member id",
         PH_STR("member_id", s->id));
  s->timer = api->timer_new(m->ctx, tick, m);
  if (s->timer)
    api->timer_set(s->timer, 10, (uint64_t)(m->conf.member_lease_ms / 4));
}

/* The answer to the leave of a stopping controller (cs_members_stop). */
static void left(void *arg, const cp_auth_reply *rep) {
  cs *m = arg;
  cs_members *s = m->members;
  if (rep->result == CP_AUTH_OK)
    PH_LOG(api, m->ctx, PH_LOG_INFO, "controller left the checks' members",
           PH_STR("member_id", s->id), PH_INT("members", (int64_t)rep->n_members),
           PH_STR("reason", "stop"));
  else
    PH_LOG(api, m->ctx, PH_LOG_WARN,
           "controller membership not given up at stop: it lapses with its "
           "lease (member_lease)",
           PH_STR("member_id", s->id));
}

void cs_members_stop(cs *m) {
  cs_members *s = m->members;
  if (!s)
    return;
  if (s->timer)
    api->timer_free(s->timer);
  s->timer = NULL;
  if (s->call > 0 && m->auth)
    m->auth->cancel(m->auth_self, s->call);
  s->call = 0;
  s->live_till = 0;
  /* Leave at once (lease 0): the others take this one's proxies on their
   * next read, not after member_lease. redis_ownership's stop waits for
   * the calls in flight (bounded by its command_timeout). */
  if (s->was_member && m->auth && m->auth->members)
    (void)m->auth->members(m->auth_self, s->id, 0, left, m);
  s->was_member = 0;
}

void cs_members_free(cs *m) {
  free(m->members);
  m->members = NULL;
}

int cs_members_scheduling(cs *m) {
  cs_members *s = m->members;
  return s && s->live_till > wall_ms();
}

int cs_members_pick(cs *m, const char *proxy_id) {
  cs_members *s = m->members;
  return s && s->n ? cs_hrw_pick(s->v, s->n, proxy_id) : -1;
}

int cs_members_mine(cs *m, const char *proxy_id) {
  cs_members *s = m->members;
  if (!s || !s->n)
    return 1;
  int i = cs_members_pick(m, proxy_id);
  return i >= 0 && strcmp(s->v[i], s->id) == 0;
}

size_t cs_members_list(cs *m, const char *const **ids) {
  cs_members *s = m->members;
  *ids = s ? s->v : NULL;
  return s ? s->n : 0;
}

const char *cs_members_self(cs *m) {
  cs_members *s = m->members;
  return s ? s->id : "";
}
