/* SPDX-License-Identifier: BSD-2-Clause */
/* The "access" service (access.h) of store_pg: principal = token id.
 *
 * One check is one round trip: a pipeline of three prepared statements
 * (the revision, the facts of the token, its user, the user's owner and
 * the agent in one join, the candidate policies) ended by one sync, then
 * az_decide (store_common) says allow or deny. Measured on this machine
 * (2 vCPU, PostgreSQL 15, one pooled connection, 2,000 sequential
 * checks of three trivial prepared statements): one round of three
 * statements 232 us per check over loopback TCP and 76 us over the unix
 * socket, three rounds of one 520 us and 206 us: the pipeline saves 2.2x
 * to 2.7x of the latency. Concurrent checks are not batched into one
 * pipeline: they go to the pool's other connections, and a batch would
 * tie their deadlines and failures together for little gain on a pool
 * that is rarely saturated.
 *
 * The revision is read first, in its own statement: a write committing
 * between it and the facts makes the verdict newer than its label, never
 * older, and a cache drops it when the poll sees the new revision. That
 * read is handed to the revision state like a poll's (poll_saw, with the
 * floor of when the check was sent): a remote write's revision is in
 * revision() from the first check that read it, so the label of a verdict
 * is the revision a cache in front of the store sees and keeps it under
 * (store_sqlite does the same with every call's read). A verdict whose
 * read left the revision unvouched (it went backwards, the row is
 * missing) is not given out.
 *
 * Fail closed: while revision() cannot vouch (no good poll yet, a stale or
 * regressed revision), every check answers UNAVAILABLE without asking the
 * database; a timeout, a lost connection or an error answers UNAVAILABLE
 * too (never cached: ttl 0). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/access_req.h"
#include "store_common/az_eval.h"
#include "store_pg_int.h"

#define NAME_MAX_LEN 255
#define POLICY_ROWS_MAX 1000 /* the LIMIT of Q_POLICIES */

typedef struct areq {
  sreq base;
  ph_access_cb cb;
  void *arg;
  char host[NAME_MAX_LEN + 1], principal[NAME_MAX_LEN + 1],
      agent[NAME_MAX_LEN + 1];
  int has_principal, has_agent;
  uint16_t port;
  uint8_t protocol;
  PGresult *res[3]; /* revision, facts, policies */
  uint64_t rev_floor; /* az_revision_floor when the check was sent */
  ph_access_result out;
} areq;

static void a_answer(sreq *r) {
  areq *a = (areq *)r;
  a->cb(a->arg, &a->out);
}

static void a_free(sreq *r) {
  areq *a = (areq *)r;
  for (int i = 0; i < 3; i++)
    PQclear(a->res[i]);
  free(a);
}

static void unavailable(areq *a, int code, uint32_t retry_ms) {
  memset(&a->out, 0, sizeof(a->out));
  a->out.size = sizeof(a->out);
  a->out.verdict = PH_ACCESS_UNAVAILABLE;
  a->out.code = code;
  a->out.retry_after_ms = retry_ms;
}

static void a_begin(void *arg, pg_send *s) {
  areq *a = arg;
  char port[8], proto[4];
  snprintf(port, sizeof(port), "%u", (unsigned)a->port);
  snprintf(proto, sizeof(proto), "%u", (unsigned)a->protocol);
  const char *facts[] = {a->principal, a->agent};
  const char *pol[] = {a->agent, a->principal, port, proto};
  pg_exec(s, Q_REVISION, 0, NULL);
  pg_exec(s, Q_FACTS, 2, facts);
  pg_exec(s, Q_POLICIES, 4, pol);
}

static int a_result(void *arg, int i, PGresult *res) {
  areq *a = arg;
  if (i < 0 || i > 2)
    return 0;
  a->res[i] = res;
  return 1;
}

static void a_round_done(void *arg, pg_send *s) {
  (void)arg;
  (void)s;
}

static int ok_rows(const PGresult *r) {
  return r && PQresultStatus(r) == PGRES_TUPLES_OK;
}

/* The SQLSTATE of the first failed statement ("" when none). */
static const char *first_error(const areq *a) {
  for (int i = 0; i < 3; i++)
    if (!ok_rows(a->res[i]))
      return res_state(a->res[i]);
  return "";
}

/* The facts of the three results into a decision. */
static void decide(areq *a) {
  spg *s = a->base.s;
  int64_t rev;
  if (!ok_rows(a->res[1]) || !ok_rows(a->res[2]) ||
      res_revision(a->res[0], &rev) != AZ_REV_READ_OK) {
    pg_pool_count_query_error(s->pool);
    PH_LOG_RL(s->api, s->ctx, PH_LOG_WARN, "store_pg: an access read failed",
              PH_STR("sqlstate", first_error(a)));
    unavailable(a, PH_OPEN_INTERNAL_ERROR, (uint32_t)s->poll_ms);
    return;
  }
  az_facts f;
  memset(&f, 0, sizeof(f));
  const PGresult *fr = a->res[1];
  if (PQntuples(fr) == 1) {
    f.token_found = 1;
    f.token_id = res_str(fr, 0, 0);
    f.token_user = res_str(fr, 0, 1);
    f.scopes = (uint32_t)res_int(fr, 0, 2);
    f.expires_at = res_int(fr, 0, 3);
    f.revoked_at = res_int(fr, 0, 4);
    f.user_found = 1;
    f.user_enabled = res_int(fr, 0, 5) == 1;
    f.user_has_owner = res_int(fr, 0, 6) == 1;
    f.owner_found = res_str(fr, 0, 7) != NULL;
    f.owner_enabled = res_int(fr, 0, 7) == 1;
    f.agent_found = res_str(fr, 0, 8) != NULL;
    f.agent_enabled = res_int(fr, 0, 8) == 1;
  }
  const PGresult *pr = a->res[2];
  int n = PQntuples(pr);
  az_policy_row *rows = n > 0 ? calloc((size_t)n, sizeof(*rows)) : NULL;
  if (n > 0 && !rows) {
    unavailable(a, PH_OPEN_INTERNAL_ERROR, 0);
    return;
  }
  for (int i = 0; i < n && i < POLICY_ROWS_MAX; i++) {
    rows[i].subject_kind = (int)res_int(pr, i, 0);
    rows[i].subject = res_str(pr, i, 1);
    rows[i].host_pattern = res_str(pr, i, 2);
    rows[i].port_min = res_int(pr, i, 3);
    rows[i].port_max = res_int(pr, i, 4);
    rows[i].protocol = res_int(pr, i, 5);
  }
  f.policies = rows;
  f.n_policies = (size_t)n;
  ph_access_request req = {.size = sizeof(req),
                           .protocol = a->protocol,
                           .port = a->port,
                           .host = a->host,
                           .principal = a->has_principal ? a->principal : NULL,
                           .agent = a->has_agent ? a->agent : NULL};
  az_decision d;
  az_decide(&f, &req, (int64_t)time(NULL), s->positive_ms, s->negative_ms,
            &d);
  free(rows);
  memset(&a->out, 0, sizeof(a->out));
  a->out.size = sizeof(a->out);
  a->out.verdict = d.verdict;
  a->out.code = d.code;
  a->out.ttl_ms = d.ttl_ms;
  a->out.revision = (uint64_t)rev;
  if (d.verdict != PH_ACCESS_ALLOW)
    PH_LOG_RL(s->api, s->ctx, PH_LOG_DEBUG, "store_pg: access denied",
              PH_STR("token", a->principal), PH_STR("reason", d.reason));
}

static void a_done(void *arg, int status) {
  areq *a = arg;
  spg *s = a->base.s;
  if (status == PH_OK) {
    int64_t v = 0;
    az_rev_read what = res_revision(a->res[0], &v);
    uint64_t rev;
    poll_saw(s, what, v, a->rev_floor);
    if (what == AZ_REV_READ_OK && az_revision_get(&s->rev, &rev) != PH_OK)
      unavailable(a, PH_OPEN_INTERNAL_ERROR, (uint32_t)s->poll_ms);
    else
      decide(a);
  } else {
    PH_LOG_RL(s->api, s->ctx, PH_LOG_DEBUG, "store_pg: access check failed",
              PH_INT("rc", status));
    unavailable(a, status == PG_ETIMEOUT ? PH_OPEN_TIMEOUT
                                         : PH_OPEN_INTERNAL_ERROR,
                (uint32_t)s->reconnect_min_ms);
  }
  req_finish(&a->base);
}

static const pg_task_ops access_ops = {a_begin, a_result, a_round_done,
                                       a_done};

/* The request, checked by lib/access_req (the rules of every provider
 * of "access"), copied into a. */
static int read_request(const ph_access_request *req, areq *a) {
  ph_access_request r;
  if (access_req_read(req, &r) != PH_OK)
    return PH_EINVAL;
  a->protocol = r.protocol;
  a->port = r.port;
  snprintf(a->host, sizeof(a->host), "%s", r.host);
  if (r.principal) {
    a->has_principal = 1;
    snprintf(a->principal, sizeof(a->principal), "%s", r.principal);
  }
  if (r.agent) {
    a->has_agent = 1;
    snprintf(a->agent, sizeof(a->agent), "%s", r.agent);
  }
  return PH_OK;
}

static int64_t check_open(void *self, const ph_access_request *req,
                          ph_access_cb cb, void *arg) {
  spg *s = self;
  if (!req || !cb)
    return PH_EINVAL;
  areq *a = calloc(1, sizeof(*a));
  if (!a)
    return PH_ENOMEM;
  if (read_request(req, a) != PH_OK) {
    free(a);
    return PH_EINVAL;
  }
  a->cb = cb;
  a->arg = arg;
  a->base.answer = a_answer;
  a->base.free_fn = a_free;
  req_add(s, &a->base);
  uint64_t rev;
  if (!a->has_principal || !a->has_agent) {
    /* Nobody, or no agent: a deny without a query (NULL agent = deny). */
    memset(&a->out, 0, sizeof(a->out));
    a->out.size = sizeof(a->out);
    a->out.verdict = PH_ACCESS_DENY;
    a->out.code = PH_OPEN_FORBIDDEN;
    a->out.ttl_ms = az_revision_get(&s->rev, &rev) == PH_OK ? s->negative_ms
                                                            : 0;
    a->out.revision = a->out.ttl_ms ? rev : 0;
    req_later(&a->base);
    return a->base.id;
  }
  if (az_revision_get(&s->rev, &rev) != PH_OK) {
    unavailable(a, PH_OPEN_INTERNAL_ERROR, (uint32_t)s->poll_ms);
    req_later(&a->base);
    return a->base.id;
  }
  a->rev_floor = az_revision_floor(&s->rev);
  int rc = req_submit(&a->base, &access_ops);
  if (rc != PH_OK) {
    unavailable(a, rc == PH_EFULL ? PH_OPEN_QUEUE_FULL : PH_OPEN_INTERNAL_ERROR,
                (uint32_t)s->reconnect_min_ms);
    req_later(&a->base);
  }
  return a->base.id;
}

static int cancel(void *self, int64_t id) { return req_cancel(self, id); }

static int revision(void *self, uint64_t *rev) {
  spg *s = self;
  return az_revision_get(&s->rev, rev);
}

const ph_access_v1 spg_access_vt = {check_open, cancel, revision};
