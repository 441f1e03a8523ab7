/* SPDX-License-Identifier: BSD-2-Clause */
/* The reducer with its state (modules/controlplane_server/cs_health.c,
 * CP-6-6, CP-6-7) through the mock host: observations given to
 * cs_health_observe (as the CheckerControlPlane will) and outcomes to
 * cs_health_outcome (as ReportOutcomes does), a fake cp.authority that
 * records health_set and health_all and answers when the test says, a
 * pool of rows the test sets (cs_pool_get is the test's own double). It checks
 * that each change of a proxy's verdict is one health_set, that a
 * CHECKER_ERROR never is one, that cs_health_of says what Redis holds
 * (written, or read back from another controller), that the panic guard
 * publishes SUSPECT instead of ejecting most of a group (a metric and a
 * log line), that a proxy that left the pool is forgotten (its field
 * removed), that a stream is woken by a change, and cs_health_changing. */
#include <stdlib.h>
#include <string.h>

#include <proxyhost/mock.h>

#include "controlplane/v1/controlplane.pb-c.h"
#include "controlplane_server/cs.h"
#include "controlplane_server/cs_health.h"
#include "cs_pool_double.h"
#include "mock_test.h"
#include "tap.h"

const ph_api *cs_api;

/* ---- doubles of the controller's other parts ---------------------------- */

static cs M;
static cs_pool POOL;
static ph_pool_proxy_row ROWS[8];
static int wakes;

void cs_watch_health_changed(cs *m) {
  (void)m;
  wakes++;
}

/* ---- a fake cp.authority: health_set and health_all ---------------------- */

typedef struct call {
  int64_t id;
  cp_auth_cb cb;
  void *arg;
  int all;
  char proxy[PH_POOL_ID_MAX + 1];
  int health;
} call;
static call calls[256];
static int n_calls, n_answered;
static int64_t next_id = 1;
static char redis_ids[8][PH_POOL_ID_MAX + 1];
static int redis_health[8], n_redis; /* what "Redis" holds */

static call *new_call(cp_auth_cb cb, void *arg) {
  call *c = &calls[n_calls++ % 256];
  memset(c, 0, sizeof(*c));
  c->id = next_id++;
  c->cb = cb;
  c->arg = arg;
  return c;
}
static int64_t f_set(void *self, const char *id, int health, cp_auth_cb cb,
                     void *arg) {
  (void)self;
  call *c = new_call(cb, arg);
  snprintf(c->proxy, sizeof(c->proxy), "%s", id);
  c->health = health;
  return c->id;
}
static int64_t f_all(void *self, cp_auth_cb cb, void *arg) {
  (void)self;
  call *c = new_call(cb, arg);
  c->all = 1;
  return c->id;
}
static int f_cancel(void *self, int64_t id) {
  (void)self;
  for (int i = n_answered; i < n_calls; i++)
    if (calls[i % 256].id == id)
      calls[i % 256].cb = NULL;
  return PH_OK;
}
static void redis_put(const char *id, int health) {
  int k = 0;
  while (k < n_redis && strcmp(redis_ids[k], id) != 0)
    k++;
  if (k == n_redis && health) {
    snprintf(redis_ids[n_redis], sizeof(redis_ids[0]), "%s", id);
    n_redis++;
  }
  if (k < n_redis) {
    redis_health[k] = health;
    if (!health) {
      n_redis--;
      memmove(&redis_ids[k], &redis_ids[k + 1], (size_t)(n_redis - k) * sizeof(redis_ids[0]));
      memmove(&redis_health[k], &redis_health[k + 1], (size_t)(n_redis - k) * sizeof(int));
    }
  }
}
/* Answers every pending call, in order, as Redis would. */
static void answer_all(void) {
  for (; n_answered < n_calls; n_answered++) {
    call c = calls[n_answered % 256];
    if (!c.cb)
      continue;
    cp_auth_reply r;
    memset(&r, 0, sizeof(r));
    r.size = sizeof(r);
    r.result = CP_AUTH_OK;
    cp_auth_health hs[8];
    if (c.all) {
      for (int i = 0; i < n_redis; i++)
        hs[i] = (cp_auth_health){redis_ids[i], redis_health[i]};
      r.health = hs;
      r.n_health = (size_t)n_redis;
    } else {
      redis_put(c.proxy, c.health);
    }
    c.cb(c.arg, &r);
  }
}
static const cp_authority_v1 FAUTH = {.health_set = f_set,
                                      .health_all = f_all,
                                      .cancel = f_cancel};

/* health_set calls for id since call index from, and the last value. */
static int sets_of(const char *id, int from, int *last) {
  int n = 0;
  for (int i = from; i < n_calls; i++)
    if (!calls[i % 256].all && strcmp(calls[i % 256].proxy, id) == 0) {
      n++;
      if (last)
        *last = calls[i % 256].health;
    }
  return n;
}

/* ---- the module that holds the reducer ---------------------------------- */

static int r_init(ph_ctx *ctx, const ph_api *a, void **state) {
  cs_api = a;
  *state = NULL;
  M.ctx = ctx;
  M.auth = &FAUTH;
  M.conf.health.rules = (cs_hyst_rules){.rise = 2, .fall = 3};
  M.conf.health.panic_pct = 50;
  uint32_t w[4] = {100, 100, 25, 10};
  memcpy(M.conf.health.weight, w, sizeof(w));
  M.conf.health.passive_hold_ms = 30000;
  M.conf.health.sync_ms = 100; /* read back, pool pass */
  return cs_health_init(&M);
}
static int r_start(void *state) {
  (void)state;
  return cs_health_start(&M);
}
static int r_stop(void *state) {
  (void)state;
  cs_health_stop(&M);
  return PH_OK;
}
MOCK_TEST_MODULE(reducer, "controlplane_server", "1.0.0", .init = r_init,
                 .start = r_start, .stop = r_stop);

static ph_mock *mk;

static void pool_of(int n, const char *const *ids, const char *const *groups) {
  memset(ROWS, 0, sizeof(ROWS));
  for (int i = 0; i < n; i++) {
    snprintf(ROWS[i].proxy_id, sizeof(ROWS[i].proxy_id), "%s", ids[i]);
    snprintf(ROWS[i].groups[0], sizeof(ROWS[i].groups[0]), "%s", groups[i]);
    ROWS[i].n_groups = 1;
  }
  POOL.proxies = ROWS;
  POOL.n_proxies = (size_t)n;
  POOL.revision++;
  M.pool = &POOL;
}

static void basic(const char *id, int status, int times) {
  cs_observation o = {.proxy_id = id,
                      .tier = CONTROLPLANE__V1__CHECK_TIER__CHECK_TIER_BASIC,
                      .target_group = "",
                      .status = status,
                      .latency_ms = 5,
                      .egress_ip = "",
                      .reason = "",
                      .observed_ms = 1};
  for (int i = 0; i < times; i++)
    cs_health_observe(&M, &o);
}
#define OK_ CONTROLPLANE__V1__HEALTH_STATUS__HEALTH_STATUS_OK
#define FAIL_ CONTROLPLANE__V1__HEALTH_STATUS__HEALTH_STATUS_FAILED
#define CERR_ CONTROLPLANE__V1__HEALTH_STATUS__HEALTH_STATUS_CHECKER_ERROR

/* Lets the reducer's pass run, then Redis answer. */
static void settle(void) {
  ph_mock_run_for(mk, 10);
  answer_all();
  ph_mock_run_for(mk, 5);
  answer_all();
}

static double metric(const char *name, const char *labels) {
  double v = 0;
  ph_mock_metric(mk, name, labels, &v);
  return v;
}

int main(void) {
  plan_lazy();
  char err[1024];
  mk = mock_test_boot("", &reducer, err, sizeof err);
  if (!mk) {
    printf("Bail out! %s\n", err);
    return 1;
  }
  static const char *const ids[] = {"a1", "a2", "a3", "a4", "b1"};
  static const char *const gs[] = {"ga", "ga", "ga", "ga", "gb"};
  pool_of(5, ids, gs);

  /* Every proxy AVAILABLE by BASIC checks. */
  for (int i = 0; i < 5; i++)
    basic(ids[i], OK_, 2);
  settle();
  int last = -1;
  ok(sets_of("a1", 0, &last) == 1 && last == 1,
     "CP-6-7 a verdict (AVAILABLE) is one health_set");
  is_int(cs_health_of(&M, "a1"), 1, "CP-6-7 cs_health_of says what Redis holds");
  ok(wakes > 0, "CP-6-7 a change wakes the snapshot streams");

  /* CHECKER_ERROR is never a verdict. */
  int mark0 = n_calls;
  basic("a1", CERR_, 10);
  settle();
  is_int(sets_of("a1", mark0, NULL), 0, "CP-6-7 ten CHECKER_ERRORs: no write");
  is_int(cs_health_of(&M, "a1"), 1, "CP-6-7 ... and a1 still AVAILABLE");
  ok(metric("proxyhost_cp_controller_health_observations_total",
            "kind=\"checker_error\"") == 10,
     "... counted as checker_error");

  /* One down in ga (1 of 4): ejected. */
  basic("a1", FAIL_, 1);
  ok(cs_health_changing(&M, "a1", CONTROLPLANE__V1__CHECK_TIER__CHECK_TIER_BASIC, ""),
     "CP-6-7 one failure: a1 is changing (checked faster)");
  basic("a1", FAIL_, 2);
  settle();
  is_int(cs_health_of(&M, "a1"), 3, "CP-6-7 fall failures: UNHEALTHY in Redis");
  ok(!cs_health_changing(&M, "a1", CONTROLPLANE__V1__CHECK_TIER__CHECK_TIER_BASIC, ""),
     "... and settled");

  /* Three of ga's four would go: the panic guard. */
  basic("a2", FAIL_, 3);
  basic("a3", FAIL_, 3);
  settle();
  ok(cs_health_of(&M, "a1") == 2 && cs_health_of(&M, "a2") == 2 &&
         cs_health_of(&M, "a3") == 2,
     "CP-6-7 panic: 3 of 4 would be UNHEALTHY (> 50 %): all three published SUSPECT");
  is_int(cs_health_of(&M, "a4"), 1, "... the fourth AVAILABLE");
  ok(metric("proxyhost_cp_controller_health_panic_groups", "") == 1,
     "CP-6-7 proxyhost_cp_controller_health_panic_groups 1");
  basic("a2", OK_, 2);
  basic("a3", OK_, 2);
  settle();
  ok(cs_health_of(&M, "a1") == 3 && cs_health_of(&M, "a2") == 1 &&
         metric("proxyhost_cp_controller_health_panic_groups", "") == 0,
     "CP-6-7 two back: the guard ends and a1 is UNHEALTHY again");

  /* A group of one: its proxy would be 100 % of it. */
  basic("b1", FAIL_, 3);
  settle();
  is_int(cs_health_of(&M, "b1"), 2,
         "CP-6-7 a group of one panics: b1 published SUSPECT, not ejected");

  /* Another controller's verdict, read back (health_sync_interval). */
  redis_put("a4", 3);
  int w0 = wakes;
  for (int i = 0; i < 20 && cs_health_of(&M, "a4") != 3; i++)
    settle();
  is_int(cs_health_of(&M, "a4"), 3,
         "CP-6-7 a verdict another controller wrote is read back for snapshots");
  ok(wakes > w0, "... and wakes the streams");

  /* A proxy that left the pool: forgotten, its field removed. */
  static const char *const ids2[] = {"a2", "a3", "a4", "b1"};
  static const char *const gs2[] = {"ga", "ga", "ga", "gb"};
  pool_of(4, ids2, gs2);
  mark0 = n_calls;
  for (int i = 0; i < 20 && sets_of("a1", mark0, &last) == 0; i++)
    settle();
  ok(sets_of("a1", mark0, &last) == 1 && last == 0,
     "CP-6-7 a1 left the pool: its Redis field removed (health_set 0)");
  is_int(cs_health_of(&M, "a1"), 0, "... and the reducer forgot it");

  ph_mock_stop(mk);
  ph_mock_free(mk);
  cs_health_free(&M);
  return done_testing();
}
