/* SPDX-License-Identifier: BSD-2-Clause */
/* The controller's status panels (modules/controlplane_server/cs_status.c,
 * issue 28) through the mock host's ph_mock_status: the gateways of the
 * streams (cs_watch_each is the test's double: two streams, their last
 * snapshots, runtime counts and the zone Redis holds for the session),
 * the live checkers with theirs, the extractions the last assign counted
 * (null before one answered), the pool's rows with
 * their owner, the reducer's state per tier (observations given to
 * cs_health_observe), capacity, active and the last outcome
 * (cs_health_outcome). A proxy id of markup comes back verbatim in the
 * JSON (the host escapes), and proxyhostctl's reader (tools/ctl_proxy_live.c)
 * finds its row by ?key=. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <proxyhost/mock.h>

#include "controlplane/v1/controlplane.pb-c.h"
#include "controlplane_server/cs.h"
#include "controlplane_server/cs_checker.h"
#include "controlplane_server/cs_health.h"
#include "controlplane_server/cs_status.h"
#include "ctl_proxy_live.h"
#include "cs_pool_double.h"
#include "mock_test.h"
#include "tap.h"

const ph_api *cs_api;

#define XSS "<script>x</script>"

/* ---- doubles of the controller's other parts ---------------------------- */

static cs M;
static cs_pool POOL;
static ph_pool_proxy_row ROWS[3];
static struct cs_checkers CHECKERS;
static cs_checker CK;

void cs_watch_health_changed(cs *m) { (void)m; }

/* Two streams: gw-1 (zone z1) owns XSS (active 3) and p2, its snapshot 7
 * ACKed and a report 2 s ago; gw-2 has sent nothing yet (no zone read). */
static Controlplane__V1__OwnedProxy OP[2];
static Controlplane__V1__OwnedProxy *OPP[2] = {&OP[0], &OP[1]};
static Controlplane__V1__WorkerSnapshot SNAP;
static cs_count COUNTS[1];

void cs_watch_each(cs *m, int (*fn)(void *arg, const cs_gw_view *v),
                   void *arg) {
  (void)m;
  cs_gw_view v1 = {"gw-1", "0123456789abcdef0123456789abcdef", "z1",
                   mono_ms() - 2000, 1, &SNAP, COUNTS, 1};
  cs_gw_view v2 = {"gw-2", "s2", "", 0, 0, NULL, NULL, 0};
  if (!fn(arg, &v1))
    fn(arg, &v2);
}

/* ---- the module ------------------------------------------------------------ */

static int r_init(ph_ctx *ctx, const ph_api *a, void **state) {
  cs_api = a;
  *state = NULL;
  M.ctx = ctx;
  M.conf.health.rules = (cs_hyst_rules){.rise = 2, .fall = 3};
  uint32_t w[4] = {100, 100, 25, 10};
  memcpy(M.conf.health.weight, w, sizeof(w));
  M.conf.health.passive_hold_ms = 30000;
  ilist_init(&CHECKERS.live);
  M.checkers = &CHECKERS;
  int rc = cs_health_init(&M);
  return rc == PH_OK ? cs_status_init(&M) : rc;
}
MOCK_TEST_MODULE(ctl_mod, "controlplane_server", "1.0.0", .init = r_init);

static const char *status(ph_mock *mk, const char *target, int *code) {
  const char *json = NULL;
  *code = ph_mock_status(mk, target, &json);
  return json ? json : "";
}

int main(void) {
  plan_lazy();
  ph_mock *mk = mock_test_boot_or_bail("", &ctl_mod);
  static const char *const ids[] = {XSS, "p2", "p3"};
  for (int i = 0; i < 3; i++) {
    snprintf(ROWS[i].proxy_id, sizeof(ROWS[i].proxy_id), "%s", ids[i]);
    ROWS[i].capacity = (uint32_t)(10 * (i + 1));
  }
  POOL.proxies = ROWS;
  POOL.n_proxies = 3;
  M.pool = &POOL;
  for (int i = 0; i < 2; i++) {
    controlplane__v1__owned_proxy__init(&OP[i]);
    OP[i].proxy_id = (char *)ids[i];
  }
  OP[1].draining = 1;
  controlplane__v1__worker_snapshot__init(&SNAP);
  SNAP.version = 7;
  SNAP.n_proxies = 2;
  SNAP.proxies = OPP;
  snprintf(COUNTS[0].proxy_id, sizeof(COUNTS[0].proxy_id), "%s", XSS);
  COUNTS[0].active = 3;
  /* a live checker, claimed, with two tasks out */
  CK.m = &M;
  snprintf(CK.id, sizeof(CK.id), "k1");
  snprintf(CK.session, sizeof(CK.session), "fedcba9876543210");
  snprintf(CK.zone, sizeof(CK.zone), "z2");
  CK.max_concurrency = 16;
  CK.claimed = 1;
  CK.task_ids.n = 2;
  ilist_push(&CHECKERS.live, &CK.node);
  /* XSS: BASIC available (rise 2), then a failed dial from a gateway */
  cs_observation o = {.proxy_id = XSS,
                      .tier = CONTROLPLANE__V1__CHECK_TIER__CHECK_TIER_BASIC,
                      .target_group = "",
                      .status = CONTROLPLANE__V1__HEALTH_STATUS__HEALTH_STATUS_OK,
                      .egress_ip = "",
                      .reason = "",
                      .observed_ms = 1};
  cs_health_observe(&M, &o);
  cs_health_observe(&M, &o);
  cs_health_outcome(&M, XSS, CONTROLPLANE__V1__OUTCOME_STAGE__OUTCOME_STAGE_DIAL,
                    CONTROLPLANE__V1__OUTCOME_RESULT__OUTCOME_RESULT_FAILURE, 0);

  int code;
  const char *j = status(mk, "/v1/status/controlplane_server/gateways", &code);
  is_int(code, 200, "the panel gateways is there");
  like(j, "[\"gw-1\",\"01234567\",\"z1\",7,2,2]",
       "gw-1: its session's first 8 hex digits (never the whole fence "
       "id), zone z1, snapshot 7 ACKed, reported 2 s ago, 2 owned");
  like(j, "[\"gw-2\",\"s2\",\"\",null,null,null]",
       "gw-2 (nothing sent yet): no ACK, no report, nothing owned");
  j = status(mk, "/v1/status/controlplane_server/checkers", &code);
  like(j, "[\"k1\",\"fedcba98\",\"z2\",16,2,null]",
       "k1: its session, zone z2, max_concurrency 16, two in flight, no "
       "report yet");
  j = status(mk, "/v1/status/controlplane_server/proxies", &code);
  like(j, "\"proxies\":3", "the field proxies counts the pool's rows");
  like(j, "\"extractions_in_progress\":null",
       "CP-4-2 no assign answered yet: extractions in progress unknown "
       "(null), not a guess from the draining marks");
  like(j, "\"extractions_reclaiming\":null", "... nor reclaiming");
  M.extract_known = 1;
  M.n_reclaiming = 1;
  M.n_extracted = 2;
  j = status(mk, "/v1/status/controlplane_server/proxies", &code);
  like(j, "\"extractions_in_progress\":3",
       "CP-4-2 CP-4-5 the last assign's count: 1 reclaiming + 2 extracted");
  like(j, "\"extractions_reclaiming\":1", "... of which 1 waits for its owner");
  like(j, "\"" XSS "\"", "a proxy id of markup comes back verbatim in JSON");
  like(j, "[\"p3\",\"\",\"\",\"\",\"\",30,null,\"\"]",
       "p3: no owner, no state, capacity 30, no active count, no outcome");

  /* What proxyhostctl proxy show reads: the row by key. */
  j = status(mk, "/v1/status/controlplane_server/proxies/proxies?key=p2",
             &code);
  is_int(code, 200, "?key=p2 answers");
  char *out = NULL;
  size_t out_len = 0;
  FILE *f = open_memstream(&out, &out_len);
  int rc = ctl_print_live(f, j, strlen(j), "p2");
  fclose(f);
  is_int(rc, 1, "proxyhostctl's reader finds p2's row");
  is_str(out, "owner: gw-1\nstate: basic=- egress=- target=-\n"
          "capacity/active: 20/-\nlast_outcome: -\n",
     "... owned by gw-1, capacity 20, nothing else known");
  free(out);
  j = status(mk, "/v1/status/controlplane_server/proxies", &code);
  out = NULL;
  f = open_memstream(&out, &out_len);
  rc = ctl_print_live(f, j, strlen(j), XSS);
  fclose(f);
  is_int(rc, 1, "and the markup id's row");
  is_str(out, "owner: gw-1\nstate: basic=available egress=- target=-\n"
          "capacity/active: 10/3\nlast_outcome: dial/failure\n",
     "CP-6-7 CP-5-6 ... BASIC available, 10/3, the last outcome dial/failure");
  free(out);
  j = status(mk, "/v1/status/controlplane_server/proxies/proxies?key=nope",
             &code);
  out = NULL;
  f = open_memstream(&out, &out_len);
  is_int(ctl_print_live(f, j, strlen(j), "nope"), 0,
         "an id the controller does not list: no row");
  fclose(f);
  free(out);

  ph_mock_stop(mk);
  ph_mock_free(mk);
  return done_testing();
}
