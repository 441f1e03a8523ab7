/* SPDX-License-Identifier: BSD-2-Clause */
/* The reducer's state (cs_health.c) and its metrics (cs_health_metrics.c):
 * private to those two files and the admin view (cs_health_view.c). */
#ifndef CS_HEALTH_INT_H
#define CS_HEALTH_INT_H

#include <proxyhost/module.h>
#include <proxyhost/pool_store.h>

#include "contracts/cp_authority.h"
#include "cs_hyst.h"

typedef struct cs cs;
typedef struct cs_pool cs_pool;

/* Active items per proxy: BASIC, EGRESS and TARGET per target group. */
#define CS_HEALTH_ITEMS_MAX (2 + PH_POOL_GROUPS_MAX)

/* One (tier, target group) of a proxy, and its last observation. */
typedef struct hc_item {
  uint8_t tier;      /* CONTROLPLANE__V1__CHECK_TIER__* */
  uint8_t status;    /* the last HEALTH_STATUS */
  uint8_t anonymity; /* the last EGRESS success's */
  char group[PH_POOL_GROUP_MAX + 1]; /* "" unless TARGET */
  cs_hyst h;
  int64_t last_ms;
  uint32_t latency_ms;
  char egress_ip[64];
  char reason[48];
} hc_item;

typedef struct hc_proxy {
  struct hc_proxy *next; /* hash chain */
  cs *m;
  char id[PH_POOL_ID_MAX + 1];
  cs_hyst passive;         /* gateway outcomes */
  int64_t passive_fail_ms; /* the last failed outcome (wall ms) */
  uint32_t basic_ok;       /* BASIC successes in a row since it */
  uint8_t last_stage, last_result; /* the last gateway outcome (status) */
  hc_item items[CS_HEALTH_ITEMS_MAX];
  uint32_t n_items;
  uint8_t published; /* this reducer's verdict, after the panic guard */
  uint8_t writing;   /* what the write in flight sets */
  uint8_t shared;    /* Redis's (written or read): what snapshots carry */
  uint8_t unsynced;  /* published not yet in Redis */
  uint8_t had_opinion;
  uint32_t fwd_fail, fwd_ok; /* outcomes for its member (cs_health_fwd.c) */
  uint32_t pass, read;
  uint32_t wrote; /* write_seq when its last write was answered */
  int64_t write_call;
} hc_proxy;

/* A check tier's row (0 basic, 1 egress, 2 target; 3 is the passive
 * item's), -1 for another value. */
static inline int hc_tier_row(int tier) {
  return tier >= 1 && tier <= 3 ? tier - 1 : -1;
}

enum { HC_OBS_ACTIVE, HC_OBS_PASSIVE, HC_OBS_CHECKER_ERROR, HC_OBS_IGNORED,
       HC_OBS_COUNT };
#define HC_TIERS 4 /* basic, egress, target, passive */
/* proxyhost_cp_controller_health_moves_total{tier,result}: what moved an
 * item's verdict (an OK, a FAILED or a TIMEOUT; a failed outcome) */
enum { HC_MOVE_OK, HC_MOVE_FAILED, HC_MOVE_TIMEOUT, HC_MOVE_COUNT };
/* proxyhost_cp_controller_passive_forwarded_total{result}: proxies' aggregates */
enum { HC_FWD_SENT, HC_FWD_DROPPED, HC_FWD_FAILED, HC_FWD_TAKEN,
       HC_FWD_COUNT };

/* A push to one member in flight (cs_health_fwd.c). */
typedef struct hc_fwd_slot {
  cs *m;
  uint32_t n; /* proxies in it */
  int64_t call;
} hc_fwd_slot;

typedef struct cs_health_state {
  cs *m;
  int pool_wait; /* a cs_pool_get of ours is pending (at most one) */
  hc_proxy **buckets;
  uint32_t nb; /* a power of two */
  size_t n;
  ph_timer *flush, *tick;
  int dirty;
  uint32_t pass, pass_read, panic_groups;
  uint32_t forgets, read_forgets; /* proxies forgotten; as the read began */
  uint32_t write_seq, read_seq;   /* writes answered; as the read began */
  int64_t read_call;
  ph_series *m_proxies[4];        /* by state (Redis's) */
  ph_series *m_items[HC_TIERS][4]; /* by tier and state (this reducer's) */
  ph_series *m_transitions[4];    /* by the state moved to */
  ph_series *m_obs[HC_OBS_COUNT];
  ph_series *m_moves[HC_TIERS][HC_MOVE_COUNT]; /* by tier and result */
  ph_series *m_writes[2];
  ph_series *m_panic, *m_panic_total;
  /* outcomes handed between controllers (cs_health_fwd.c) */
  int64_t fwd_take;
  hc_fwd_slot fwd[CP_AUTH_MEMBERS_MAX]; /* a push per member */
  ph_series *m_fwd[HC_FWD_COUNT];
} cs_health_state;

/* ---- pure: one proxy's items (cs_health_item.c) ---- */
struct cs_observation;
/* The item of (tier, group) (group only for TARGET), added when add and
 * there is room; NULL for a tier out of range or no room. */
hc_item *hc_item_of(hc_proxy *p, int tier, const char *group, int add);
/* What an observation is: HC_OBS_ACTIVE (OK, FAILED, TIMEOUT),
 * HC_OBS_CHECKER_ERROR (never a verdict) or HC_OBS_IGNORED. */
int hc_observe_kind(const struct cs_observation *o);
/* Counts an ACTIVE observation in its item: 1 verdict changed, 0 not, -1
 * not counted (not ACTIVE, no room). */
int hc_observe(hc_proxy *p, const cs_hyst_rules *r,
               const struct cs_observation *o);
/* The weight (units) of an outcome and *ok; -1 for an outcome that says
 * nothing (an unknown stage or result). weight: health_weight_* for DIAL,
 * PROXY_HANDSHAKE, RESPONSE_HEADERS, TUNNEL failures; a success is one
 * whole success at any stage. */
int hc_outcome_weight(const uint32_t weight[4], int stage, int result,
                      int *ok);
/* Counts it in the passive item (a failure's time kept for the hold). */
int hc_outcome(hc_proxy *p, const cs_hyst_rules *r, int ok, uint32_t w,
               int64_t now_ms);
/* The proxy's own verdict: the worst of its items (NONE: none). */
uint8_t hc_verdict(const hc_proxy *p);
/* 1 while the reducer has anything of its own on p. */
int hc_has_opinion(const hc_proxy *p);
/* Ends a SUSPECT or UNHEALTHY passive verdict hold_ms after its last
 * failure (1: ended). */
int hc_passive_expire(hc_proxy *p, int64_t now_ms, int64_t hold_ms);

/* The proxy's entry, or NULL (cs_health.c); hc_find_or_add adds it
 * (NULL: no room). hc_mark: a publish pass soon. */
hc_proxy *hc_find(const cs_health_state *h, const char *id);
hc_proxy *hc_find_or_add(cs_health_state *h, const char *id);
void hc_mark(cs *m);

/* ---- outcomes between controllers (cs_health_fwd.c) ---- */
/* Counts an outcome of p for its member (another controller). */
void hc_fwd_count(hc_proxy *p, int ok, uint32_t w);
/* Every health_sync_interval: a member takes what others handed it and
 * feeds its reducer; every controller pushes its counts to their
 * members. */
void hc_fwd_tick(cs *m);
/* The module's stop: drops the calls in flight. */
void hc_fwd_stop(cs *m);

int cs_health_metrics(cs *m);   /* init: registers them */
void cs_health_count(cs *m);    /* the gauges, from the table */
void cs_health_pool(void *arg, cs_pool *pool); /* cs_pool_cb */

#endif
