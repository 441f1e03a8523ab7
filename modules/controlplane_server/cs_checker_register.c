/* SPDX-License-Identifier: BSD-2-Clause */
/* RegisterChecker (docs/api/controlplane.md#registerchecker, issue 26,
 * CP-6-1): the checks (a checker certificate, cluster_id, max_concurrency
 * within max_checker_concurrency, the tiers), a new random session id and
 * the authority's register_checker (a session with a server-side TTL, at
 * most max_checkers of them). */
#include <stddef.h>
#include <stdio.h>

#include "cp_checker_requests.h"
#include "cp_common/snapshot/cp_snapshot_time.h"
#include "cs_checker.h"
#include "cs_unary.h"

#define api cs_api

typedef struct creg {
  cs_unary u; /* first */
  char session[CP_AUTH_SESSION_HEX + 1];
  char checker[PH_POOL_ID_MAX + 1]; /* its other sessions' streams end */
} creg;

static void creg_done(void *arg, const cp_auth_reply *rep) {
  creg *r = arg;
  cs *m = r->u.m;
  r->u.auth_call = 0;
  cs_note_auth(m, rep->result);
  if (rep->result != CP_AUTH_OK) {
    cs_unary_end(&r->u, cp_auth_grpc_status(rep->result),
                 rep->result == CP_AUTH_LIMIT ? "too many checkers"
                                              : "the authority did not answer",
                 NULL, 0);
    return;
  }
  Controlplane__V1__RegisterCheckerResponse resp =
      CONTROLPLANE__V1__REGISTER_CHECKER_RESPONSE__INIT;
  Google__Protobuf__Duration ttl = GOOGLE__PROTOBUF__DURATION__INIT;
  cp_ms_to_dur(m->conf.session_ttl_ms, &ttl);
  resp.session_id = r->session;
  resp.protocol_version = CP_PROTOCOL_VERSION;
  resp.session_ttl = &ttl;
  uint8_t buf[256];
  size_t n = controlplane__v1__register_checker_response__pack(&resp, buf);
  cs_checker_replaced(m, r->checker, r->session);
  /* A BASIC check tunnels to the task's target or to the echo endpoint:
   * with neither, a checker can only answer CHECKER_ERROR bad_task. Said
   * at each registration (rare), where it matters. */
  if (!m->conf.echo_url[0] && m->checkers->n_probes == 0)
    PH_LOG(cs_api, m->ctx, PH_LOG_WARN,
           "a checker registered but its checks have nothing to tunnel to: "
           "set echo_url (or target_probes); until then every check is "
           "answered CHECKER_ERROR bad_task and gives no verdict",
           PH_STR("checker_id", r->checker));
  cs_unary_end(&r->u, CP_GRPC_OK, NULL, buf, n);
}

void cs_checker_register_rpc(void *arg, cp_grpc_call *call,
                             const uint8_t *req, size_t len) {
  cs_req f;
  Controlplane__V1__RegisterCheckerRequest *q = cs_request_as(
      &f, arg, call, "checker",
      &controlplane__v1__register_checker_request__descriptor, req, len);
  cs *m = f.m;
  uint32_t tiers = 0;
  if (!f.st)
    f.st = cp_check_register_checker(q, &f.c, m->conf.max_checker_concurrency,
                                     &tiers, &f.why);
  creg *r = NULL;
  if (!f.st)
    r = cs_unary_joining(&f, CS_M_REGISTER_CHECKER, sizeof(*r),
                         offsetof(creg, session));
  if (!f.st) {
    snprintf(r->checker, sizeof(r->checker), "%s", q->checker_id);
    cs_unary_launch(&f, &r->u,
                    m->auth->register_checker(
                        m->auth_self, q->checker_id, q->instance_id, q->zone,
                        r->session, m->conf.max_checkers, q->max_concurrency,
                        tiers, creg_done, r));
  }
  cs_unary_close(&f, r ? &r->u : NULL, CS_M_REGISTER_CHECKER, q);
}
