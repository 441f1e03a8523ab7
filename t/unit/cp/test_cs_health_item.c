/* SPDX-License-Identifier: BSD-2-Clause */
/* One proxy's items in the reducer (modules/controlplane_server/
 * cs_health_item.c, CP-6-6, CP-6-7), driven with the observations a
 * checker reports (cs_health_observe's input) and the outcomes gateways
 * report: one item per (tier, target group); a checker's own error never
 * a verdict; the proxy's verdict the worst of its items; outcomes weighted
 * by stage (DIAL and PROXY_HANDSHAKE whole failures, RESPONSE_HEADERS and
 * TUNNEL a part: mostly the target's); a passive verdict ends
 * health_passive_hold after its last failure; the items bounded. */
#include <stdio.h>
#include <string.h>

#include "controlplane/v1/controlplane.pb-c.h"
#include "controlplane_server/cs_health.h"
#include "controlplane_server/cs_health_int.h"
#include "tap.h"

static const cs_hyst_rules R = {.rise = 2, .fall = 3};
static const uint32_t W[4] = {100, 100, 25, 10}; /* the defaults */

#define BASIC CONTROLPLANE__V1__CHECK_TIER__CHECK_TIER_BASIC
#define EGRESS CONTROLPLANE__V1__CHECK_TIER__CHECK_TIER_EGRESS
#define TARGET CONTROLPLANE__V1__CHECK_TIER__CHECK_TIER_TARGET
#define OK CONTROLPLANE__V1__HEALTH_STATUS__HEALTH_STATUS_OK
#define FAILED CONTROLPLANE__V1__HEALTH_STATUS__HEALTH_STATUS_FAILED
#define TIMEOUT CONTROLPLANE__V1__HEALTH_STATUS__HEALTH_STATUS_TIMEOUT
#define CHECKER_ERROR CONTROLPLANE__V1__HEALTH_STATUS__HEALTH_STATUS_CHECKER_ERROR

static int64_t obs_ms = 1000; /* when obs() says its checks were made */

static int obs(hc_proxy *p, int tier, const char *group, int status,
               int times) {
  cs_observation o = {.proxy_id = "p1", .tier = tier, .target_group = group,
                      .status = status, .latency_ms = 42,
                      .egress_ip = "203.0.113.9", .anonymity = 3,
                      .reason = status == OK ? "" : "refused",
                      .observed_ms = obs_ms};
  int r = 0;
  for (int i = 0; i < times; i++)
    r = hc_observe(p, &R, &o);
  return r;
}

static void test_active(void) {
  hc_proxy p;
  memset(&p, 0, sizeof(p));
  obs(&p, BASIC, "", OK, 2);
  is_int(hc_verdict(&p), CS_H_AVAILABLE, "CP-6-7 BASIC rise OKs: AVAILABLE");
  obs(&p, EGRESS, "", OK, 2);
  hc_item *e = hc_item_of(&p, EGRESS, "", 0);
  ok(e && strcmp(e->egress_ip, "203.0.113.9") == 0 && e->anonymity == 3 &&
         e->latency_ms == 42 && e->last_ms == 1000,
     "CP-6-6 EGRESS keeps the egress ip, anonymity, latency and time");
  cs_observation odd = {.proxy_id = "p1", .tier = BASIC, .status = FAILED,
                       .reason = "bad \"quote\"\n<x>"};
  hc_observe(&p, &R, &odd);
  is_str(hc_item_of(&p, BASIC, "", 0)->reason, "bad__quote___x_",
         "a checker's reason is kept plain ([A-Za-z0-9._:-], else _)");
  obs(&p, BASIC, "", OK, 1);
  is_int(obs(&p, BASIC, "", CHECKER_ERROR, 10), -1,
         "CP-6-7 a CHECKER_ERROR is not counted");
  is_int(hc_verdict(&p), CS_H_AVAILABLE, "CP-6-7 ... ten of them: no verdict moves");
  cs_observation ce = {.proxy_id = "p1", .tier = BASIC, .status = CHECKER_ERROR};
  is_int(hc_observe_kind(&ce), HC_OBS_CHECKER_ERROR, "... counted as checker_error");
  cs_observation bad = {.proxy_id = "p1", .tier = 9, .status = OK};
  is_int(hc_observe_kind(&bad), HC_OBS_IGNORED, "an unknown tier is ignored");
  obs(&p, TARGET, "shop", FAILED, 2);
  is_int(hc_verdict(&p), CS_H_SUSPECT,
         "CP-6-7 the proxy's verdict is the worst of its tiers (TARGET SUSPECT)");
  obs(&p, TARGET, "news", OK, 5);
  is_int(hc_verdict(&p), CS_H_SUSPECT,
         "CP-6-7 another target group is another item (its OKs do not help)");
  obs(&p, TARGET, "shop", TIMEOUT, 1);
  is_int(hc_verdict(&p), CS_H_UNHEALTHY, "CP-6-7 a TIMEOUT is a failure: fall");
  is_int((int)p.n_items, 4, "items: BASIC, EGRESS, TARGET shop, TARGET news");
  obs(&p, TARGET, "shop", OK, 2);
  is_int(hc_verdict(&p), CS_H_AVAILABLE, "CP-6-7 rise OKs bring it back");
  for (int i = 0; i < 40; i++) {
    char g[16];
    snprintf(g, sizeof(g), "g%d", i);
    obs(&p, TARGET, g, OK, 1);
  }
  is_int((int)p.n_items, CS_HEALTH_ITEMS_MAX,
         "the items of one proxy are bounded (CS_HEALTH_ITEMS_MAX)");
}

static void test_passive(void) {
  int okf;
  is_int(hc_outcome_weight(W, CONTROLPLANE__V1__OUTCOME_STAGE__OUTCOME_STAGE_DIAL,
                           CONTROLPLANE__V1__OUTCOME_RESULT__OUTCOME_RESULT_FAILURE,
                           &okf),
         100, "CP-6-7 a failed DIAL is a whole failure against the proxy");
  is_int(hc_outcome_weight(W,
                           CONTROLPLANE__V1__OUTCOME_STAGE__OUTCOME_STAGE_PROXY_HANDSHAKE,
                           CONTROLPLANE__V1__OUTCOME_RESULT__OUTCOME_RESULT_TIMEOUT,
                           &okf),
         100, "CP-6-7 a PROXY_HANDSHAKE timeout too");
  is_int(hc_outcome_weight(W,
                           CONTROLPLANE__V1__OUTCOME_STAGE__OUTCOME_STAGE_RESPONSE_HEADERS,
                           CONTROLPLANE__V1__OUTCOME_RESULT__OUTCOME_RESULT_FAILURE,
                           &okf),
         25, "CP-6-7 RESPONSE_HEADERS: a quarter (mostly the target's)");
  is_int(hc_outcome_weight(W, CONTROLPLANE__V1__OUTCOME_STAGE__OUTCOME_STAGE_TUNNEL,
                           CONTROLPLANE__V1__OUTCOME_RESULT__OUTCOME_RESULT_FAILURE,
                           &okf),
         10, "CP-6-7 TUNNEL: a tenth");
  is_int(hc_outcome_weight(W, CONTROLPLANE__V1__OUTCOME_STAGE__OUTCOME_STAGE_TUNNEL,
                           CONTROLPLANE__V1__OUTCOME_RESULT__OUTCOME_RESULT_SUCCESS,
                           &okf),
         100, "a success is a whole success");
  ok(okf, "... and says so");
  is_int(hc_outcome_weight(W, 0, CONTROLPLANE__V1__OUTCOME_RESULT__OUTCOME_RESULT_FAILURE,
                           &okf),
         -1, "an unknown stage says nothing");

  hc_proxy p;
  memset(&p, 0, sizeof(p));
  obs(&p, BASIC, "", OK, 2);
  for (int i = 0; i < 3; i++)
    hc_outcome(&p, &R, 0, 100, 5000 + i);
  is_int(hc_verdict(&p), CS_H_UNHEALTHY,
         "CP-6-7 three failed dials: UNHEALTHY before any active check says so");
  is_int(hc_passive_expire(&p, 5002 + 29999, 30000), 0,
         "the passive verdict holds health_passive_hold after the last failure");
  is_int(hc_passive_expire(&p, 5002 + 30000, 30000), 1, "... then ends");
  is_int(hc_verdict(&p), CS_H_AVAILABLE, "... leaving the active verdict");
  /* Active checks bring back, before the hold, what outcomes took out. */
  hc_proxy b;
  memset(&b, 0, sizeof(b));
  for (int i = 0; i < 3; i++)
    hc_outcome(&b, &R, 0, 100, 5000 + i);
  obs_ms = 4000;
  obs(&b, BASIC, "", OK, 2);
  is_int(hc_verdict(&b), CS_H_UNHEALTHY,
         "CP-6-7 BASIC successes from before the last failed outcome do not "
         "end its verdict");
  obs_ms = 6000;
  obs(&b, BASIC, "", OK, 1);
  obs(&b, BASIC, "", FAILED, 1);
  is_int(obs(&b, BASIC, "", OK, 1), 0,
         "... nor a success, a failure and a success after it");
  is_int(obs(&b, BASIC, "", OK, 1), 1,
         "CP-6-7 rise BASIC successes in a row after it end the passive "
         "verdict (a change)");
  is_int(hc_verdict(&b), CS_H_AVAILABLE, "... the proxy is AVAILABLE again");
  obs_ms = 1000;
  hc_proxy q;
  memset(&q, 0, sizeof(q));
  for (int i = 0; i < 7; i++)
    hc_outcome(&q, &R, 0, 25, 1);
  is_int(hc_verdict(&q), CS_H_NONE,
         "CP-6-7 seven failed responses (1.75 failures): no verdict");
  ok(hc_has_opinion(&q), "... but something counted");
  hc_outcome(&q, &R, 0, 25, 1);
  is_int(hc_verdict(&q), CS_H_SUSPECT,
         "CP-6-7 eight (2 whole failures): SUSPECT");
  for (int i = 0; i < 4; i++)
    hc_outcome(&q, &R, 0, 25, 1);
  is_int(hc_verdict(&q), CS_H_UNHEALTHY,
         "CP-6-7 twelve (3 whole): UNHEALTHY");
  hc_proxy t;
  memset(&t, 0, sizeof(t));
  for (int i = 0; i < 100; i++) {
    hc_outcome(&t, &R, 0, 10, 1);
    hc_outcome(&t, &R, 1, 100, 1);
  }
  ok(hc_verdict(&t) == CS_H_AVAILABLE,
     "CP-6-7 a failed TUNNEL every other request (the target's fault) "
     "does not move a proxy that also carries traffic");
}

int main(void) {
  plan_lazy();
  test_active();
  test_passive();
  return done_testing();
}
