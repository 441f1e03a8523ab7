/* SPDX-License-Identifier: BSD-2-Clause */
/* list (authz_store.h): one page of one kind, read with the revision in
 * one round trip. One row more than the limit is asked for, to tell
 * whether more remain. The records point into the kept PGresult until the
 * callback returned. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_common/az_validate.h"
#include "pg_record.h"
#include "store_pg_int.h"

typedef struct lreq {
  sreq base;
  ph_az_list_cb cb;
  void *arg;
  int kind;
  uint32_t limit;
  char *after, *user, *agent;
  PGresult *res[2];
  ph_az_record *recs;
  ph_az_list_result out;
} lreq;

static void l_answer(sreq *r) {
  lreq *l = (lreq *)r;
  l->cb(l->arg, &l->out);
}

static void l_free(sreq *r) {
  lreq *l = (lreq *)r;
  for (int i = 0; i < 2; i++)
    PQclear(l->res[i]);
  free(l->recs);
  free(l->after);
  free(l->user);
  free(l->agent);
  free(l);
}

static int stmt_of(int kind) {
  switch (kind) {
  case PH_AZ_USER:
    return Q_LIST_USERS;
  case PH_AZ_TOKEN:
    return Q_LIST_TOKENS;
  case PH_AZ_AGENT:
    return Q_LIST_AGENTS;
  default:
    return Q_LIST_POLICIES;
  }
}

static void l_begin(void *arg, pg_send *s) {
  lreq *l = arg;
  char lim[16];
  snprintf(lim, sizeof(lim), "%u", l->limit + 1);
  const char *v[] = {l->after, l->user, l->agent, lim};
  pg_exec(s, Q_REVISION, 0, NULL);
  pg_exec(s, stmt_of(l->kind), 4, v);
}

static int l_result(void *arg, int i, PGresult *res) {
  lreq *l = arg;
  if (i < 0 || i > 1)
    return 0;
  l->res[i] = res;
  return 1;
}

static void l_round_done(void *arg, pg_send *s) {
  (void)arg;
  (void)s;
}

static void l_done(void *arg, int status) {
  lreq *l = arg;
  spg *s = l->base.s;
  l->out.size = sizeof(l->out);
  int64_t rev;
  const PGresult *r = l->res[1];
  if (status != PH_OK || !r || PQresultStatus(r) != PGRES_TUPLES_OK ||
      res_revision(l->res[0], &rev) != AZ_REV_READ_OK) {
    if (status == PH_OK)
      pg_pool_count_query_error(s->pool);
    l->out.status = PH_AZ_EUNAVAILABLE;
    req_finish(&l->base);
    return;
  }
  int n = PQntuples(r);
  if ((uint32_t)n > l->limit) {
    l->out.more = 1;
    n = (int)l->limit;
  }
  l->recs = n > 0 ? calloc((size_t)n, sizeof(*l->recs)) : NULL;
  if (n > 0 && !l->recs) {
    l->out.status = PH_ENOMEM;
    l->out.more = 0;
    req_finish(&l->base);
    return;
  }
  for (int i = 0; i < n; i++)
    rec_read(r, i, l->kind, &l->recs[i]);
  l->out.status = PH_OK;
  l->out.recs = l->recs;
  l->out.n = (size_t)n;
  l->out.revision = (uint64_t)rev;
  req_finish(&l->base);
}

static const pg_task_ops list_ops = {l_begin, l_result, l_round_done, l_done};

static int dup_opt(const char *s, char **out) {
  *out = NULL;
  if (!s)
    return 0;
  *out = strdup(s);
  return *out ? 0 : -1;
}

int64_t spg_list(void *self, const ph_az_list *q, ph_az_list_cb cb,
                 void *arg) {
  spg *s = self;
  const char *detail = NULL;
  if (!q || !cb || az_validate_list(q, &detail) != PH_OK)
    return PH_EINVAL;
  lreq *l = calloc(1, sizeof(*l));
  if (!l)
    return PH_ENOMEM;
  l->kind = q->kind;
  l->limit = q->limit;
  l->base.answer = l_answer;
  l->base.free_fn = l_free;
  if (dup_opt(q->after, &l->after) < 0 || dup_opt(q->user, &l->user) < 0 ||
      dup_opt(q->agent, &l->agent) < 0) {
    l_free(&l->base);
    return PH_ENOMEM;
  }
  l->cb = cb;
  l->arg = arg;
  req_add(s, &l->base);
  int rc = req_submit(&l->base, &list_ops);
  if (rc != PH_OK) {
    l->out.size = sizeof(l->out);
    l->out.status = rc == PH_EFULL ? PH_EFULL : PH_AZ_EUNAVAILABLE;
    req_later(&l->base);
  }
  return l->base.id;
}
