/* SPDX-License-Identifier: BSD-2-Clause */
/* authenticate (authz_store.h): a bearer "<id>.<secret>" is split by
 * az_bearer_parse (store_common) into the token id and the SHA-256 of the
 * secret, which is all that leaves the call (the bearer is wiped at
 * once). One round trip reads the revision and the token joined with its
 * user, the user's owner and, for an agent token, its agent; the stored
 * hash is compared in constant time (az_hash_eq). A malformed bearer is a
 * DENY without a query. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store_common/az_eval.h"
#include "store_common/az_token.h"
#include "pg_record.h"
#include "store_pg_int.h"

typedef struct nreq {
  sreq base;
  ph_az_auth_cb cb;
  void *arg;
  char id[PH_AZ_ID_LEN + 1];
  char hash[AZ_HASH_HEX_LEN + 1];
  PGresult *res[2];
  ph_az_auth_result out;
} nreq;

static void n_answer(sreq *r) {
  nreq *n = (nreq *)r;
  n->cb(n->arg, &n->out);
}

static void n_free(sreq *r) {
  nreq *n = (nreq *)r;
  az_wipe(n->hash, sizeof(n->hash));
  for (int i = 0; i < 2; i++)
    PQclear(n->res[i]);
  free(n);
}

static void n_begin(void *arg, pg_send *s) {
  nreq *n = arg;
  const char *v[] = {n->id};
  pg_exec(s, Q_REVISION, 0, NULL);
  pg_exec(s, Q_AUTHN, 1, v);
}

static int n_result(void *arg, int i, PGresult *res) {
  nreq *n = arg;
  if (i < 0 || i > 1)
    return 0;
  n->res[i] = res;
  return 1;
}

static void n_round_done(void *arg, pg_send *s) {
  (void)arg;
  (void)s;
}

static void set_verdict(nreq *n, int verdict, uint32_t ttl, uint64_t rev) {
  n->out.size = sizeof(n->out);
  n->out.verdict = verdict;
  n->out.ttl_ms = ttl;
  n->out.revision = rev;
}

/* Token columns 0..8 as pg_record.c reads them, then secret_hash (9),
 * user enabled (10), has owner (11), owner enabled (12), agent
 * enabled (13). The rules are az_token_unusable's (store_common), as in
 * store_sqlite; an agent token also needs its agent enabled. */
static void judge(nreq *n) {
  spg *s = n->base.s;
  int64_t rev;
  const PGresult *r = n->res[1];
  if (!r || PQresultStatus(r) != PGRES_TUPLES_OK ||
      res_revision(n->res[0], &rev) != AZ_REV_READ_OK) {
    pg_pool_count_query_error(s->pool);
    set_verdict(n, PH_AZ_AUTH_UNAVAILABLE, 0, 0);
    return;
  }
  int64_t now = (int64_t)time(NULL);
  az_facts f;
  memset(&f, 0, sizeof(f));
  if (PQntuples(r) == 1) {
    f.token_found = 1;
    f.token_id = res_str(r, 0, 0);
    f.token_user = res_str(r, 0, 1);
    f.scopes = (uint32_t)res_int(r, 0, 3);
    f.expires_at = res_int(r, 0, 4);
    f.revoked_at = res_int(r, 0, 5);
    f.user_found = 1;
    f.user_enabled = res_int(r, 0, 10) == 1;
    f.user_has_owner = res_int(r, 0, 11) == 1;
    f.owner_found = res_str(r, 0, 12) != NULL;
    f.owner_enabled = res_int(r, 0, 12) == 1;
    f.agent_found = res_str(r, 0, 13) != NULL;
    f.agent_enabled = res_int(r, 0, 13) == 1;
  }
  /* Compared even for an unknown token, against a hash no secret has, so
   * both paths cost the same. */
  static const char none[AZ_HASH_HEX_LEN + 1] =
      "----------------------------------------------------------------";
  const char *stored = f.token_found ? res_str(r, 0, 9) : NULL;
  int match = az_hash_eq(n->hash, stored ? stored : none);
  const char *why = !f.token_found ? "unknown token"
                    : !match       ? "wrong secret"
                                   : az_token_unusable(&f, now);
  if (!why && (f.scopes & PH_AZ_SCOPE_AGENT) &&
      (!res_str(r, 0, 2) || !f.agent_found || !f.agent_enabled))
    why = "agent disabled";
  if (why) {
    PH_LOG_RL(s->api, s->ctx, PH_LOG_DEBUG, "store_pg: token refused",
              PH_STR("token", n->id), PH_STR("reason", why));
    set_verdict(n, PH_AZ_AUTH_DENY, s->negative_ms, (uint64_t)rev);
    return;
  }
  ph_az_record rec;
  rec_read(r, 0, PH_AZ_TOKEN, &rec);
  n->out.token = rec.u.token;
  uint32_t ttl = s->positive_ms;
  int64_t exp = rec.u.token.expires_at;
  if (exp != 0 && exp - now <= (int64_t)(ttl / 1000))
    ttl = (uint32_t)((exp - now) * 1000);
  set_verdict(n, PH_AZ_AUTH_OK, ttl, (uint64_t)rev);
}

static void n_done(void *arg, int status) {
  nreq *n = arg;
  if (status == PH_OK)
    judge(n);
  else
    set_verdict(n, PH_AZ_AUTH_UNAVAILABLE, 0, 0);
  req_finish(&n->base);
}

static const pg_task_ops authn_ops = {n_begin, n_result, n_round_done,
                                      n_done};

int64_t spg_authenticate(void *self, const char *bearer, size_t len,
                         ph_az_auth_cb cb, void *arg) {
  spg *s = self;
  if (!bearer || !cb)
    return PH_EINVAL;
  nreq *n = calloc(1, sizeof(*n));
  if (!n)
    return PH_ENOMEM;
  n->cb = cb;
  n->arg = arg;
  n->base.answer = n_answer;
  n->base.free_fn = n_free;
  int parsed = len <= PH_AZ_BEARER_MAX &&
               az_bearer_parse(bearer, len, n->id, n->hash) == 0;
  req_add(s, &n->base);
  if (!parsed) {
    set_verdict(n, PH_AZ_AUTH_DENY, 0, 0);
    req_later(&n->base);
    return n->base.id;
  }
  int rc = req_submit(&n->base, &authn_ops);
  if (rc != PH_OK) {
    set_verdict(n, PH_AZ_AUTH_UNAVAILABLE, 0, 0);
    req_later(&n->base);
  }
  return n->base.id;
}
