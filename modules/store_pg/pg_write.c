/* SPDX-License-Identifier: BSD-2-Clause */
/* write (authz_store.h): one change in one transaction with its revision
 * step (TM-P1-16..19, 21), on one connection, in two round trips:
 *
 *   round 1: BEGIN; the change (one or two statements); UPDATE
 *            authorization_revision ... RETURNING revision
 *   round 2: COMMIT when every statement of round 1 did what it should
 *            (no error, the record there), else ROLLBACK
 *
 * so a failed write changes neither the data nor the revision, and a
 * successful one raises the revision by exactly one. The connection lost
 * (or the deadline passed) while the COMMIT was in flight is
 * PH_AZ_EOUTCOME: the write may or may not have happened. Lost before, it
 * did not (the server rolls back a transaction whose connection closed).
 * After the COMMIT, revision() reports the new revision before the
 * callback runs (TM-P1-29). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store_common/az_token.h"
#include "store_common/az_validate.h"
#include "pg_record.h"
#include "store_pg_int.h"

#define MAX_CHANGE 3 /* statements of a change, guards included */
#define MAX_PARAMS 12

typedef struct wstmt {
  int q;
  int n;
  const char *v[MAX_PARAMS];
  /* A guard: its one value must be 't', else the write fails with
   * guard_status (and is rolled back). */
  int guard_status;
  const char *guard_detail;
} wstmt;

typedef struct wreq {
  sreq base;
  ph_az_write_cb cb;
  void *arg;
  int action, kind;
  uint32_t fields;
  /* copies of the request's strings */
  char *s_name, *s_owner, *s_user, *s_agent, *s_subject, *s_host;
  char id[PH_AZ_ID_LEN + 1];
  char secret[AZ_SECRET_LEN + 1];
  char hash[AZ_HASH_HEX_LEN + 1];
  char bearer[AZ_BEARER_LEN + 1];
  char num[MAX_PARAMS][24];
  int n_num;
  wstmt st[MAX_CHANGE];
  int n_st, main_st; /* main_st: the statement whose rows are the record */
  int round;         /* 1 or 2 */
  int committing;    /* round 2 is a COMMIT */
  int commit_sent;   /* libpq took it: from here the outcome is unknown
                        until its answer */
  int status;        /* what round 1 decided */
  const char *detail;
  int64_t new_rev;
  PGresult *main_res;
  int r1_ok; /* round-1 results seen as expected so far */
  ph_az_write_result out;
} wreq;

static const char *num(wreq *w, int64_t v) {
  if (w->n_num >= MAX_PARAMS)
    return NULL;
  char *b = w->num[w->n_num++];
  snprintf(b, 24, "%lld", (long long)v);
  return b;
}

static void w_answer(sreq *r) {
  wreq *w = (wreq *)r;
  w->cb(w->arg, &w->out);
}

static void w_free(sreq *r) {
  wreq *w = (wreq *)r;
  az_wipe(w->secret, sizeof(w->secret));
  az_wipe(w->hash, sizeof(w->hash));
  az_wipe(w->bearer, sizeof(w->bearer));
  PQclear(w->main_res);
  free(w->s_name);
  free(w->s_owner);
  free(w->s_user);
  free(w->s_agent);
  free(w->s_subject);
  free(w->s_host);
  free(w);
}

static void fail(wreq *w, int status, const char *detail) {
  if (w->status != PH_OK)
    return; /* the first reason stands */
  w->status = status;
  w->detail = detail;
}

/* An error of a change statement as a contract status. */
static void sql_error(wreq *w, const PGresult *res) {
  const char *st = res_state(res);
  if (strcmp(st, "23505") == 0)
    fail(w, PH_EEXIST, "the name is taken");
  else if (strcmp(st, "23503") == 0)
    fail(w, w->action == PH_AZ_DELETE ? PH_EBUSY : PH_ENOENT,
         w->action == PH_AZ_DELETE ? "the user still owns agents or users"
                                   : "a record it refers to is missing");
  else if (strcmp(st, "23514") == 0 || strncmp(st, "22", 2) == 0)
    fail(w, PH_EINVAL, "a value the database refused");
  else
    fail(w, PH_AZ_EUNAVAILABLE, "the database failed");
}

static void w_begin(void *arg, pg_send *s) {
  wreq *w = arg;
  w->round = 1;
  pg_exec_sql(s, "BEGIN");
  for (int i = 0; i < w->n_st; i++)
    pg_exec(s, w->st[i].q, w->st[i].n, w->st[i].v);
  pg_exec(s, Q_BUMP, 0, NULL);
}

/* Round 1: 0 BEGIN, 1..n_st the change, n_st + 1 the revision step.
 * Round 2: 0 COMMIT or ROLLBACK. */
static int w_result(void *arg, int i, PGresult *res) {
  wreq *w = arg;
  ExecStatusType st = PQresultStatus(res);
  if (w->round == 2) {
    if (w->committing) {
      const char *tag = PQcmdStatus(res);
      if (st != PGRES_COMMAND_OK || !tag || strcmp(tag, "COMMIT") != 0)
        fail(w, PH_AZ_EUNAVAILABLE, "the commit failed");
    }
    return 0;
  }
  if (st == PGRES_PIPELINE_ABORTED)
    return 0; /* after an error already recorded */
  if (i == 0) {
    if (st != PGRES_COMMAND_OK)
      fail(w, PH_AZ_EUNAVAILABLE, "the database failed");
    return 0;
  }
  if (i <= w->n_st) {
    if (st == PGRES_FATAL_ERROR || st == PGRES_NONFATAL_ERROR) {
      pg_pool_count_query_error(w->base.s->pool);
      sql_error(w, res);
      return 0;
    }
    const wstmt *ws = &w->st[i - 1];
    if (ws->guard_status) {
      const char *v = res_str(res, 0, 0);
      if (!v || strcmp(v, "t") != 0)
        fail(w, ws->guard_status, ws->guard_detail);
      return 0;
    }
    if (i - 1 == w->main_st) {
      if (PQntuples(res) < 1) {
        fail(w, PH_ENOENT, "no such record, or a record it refers to is "
                           "missing");
        return 0;
      }
      w->main_res = res;
      return 1;
    }
    return 0;
  }
  /* the revision step */
  if (st != PGRES_TUPLES_OK) {
    pg_pool_count_query_error(w->base.s->pool);
    fail(w, PH_AZ_EUNAVAILABLE, "the revision could not be raised");
  } else if (res_revision(res, &w->new_rev) != AZ_REV_READ_OK) {
    fail(w, PH_AZ_EUNAVAILABLE, "authorization_revision is missing or out "
                                "of range");
  }
  return 0;
}

static void w_round_done(void *arg, pg_send *s) {
  wreq *w = arg;
  if (w->round != 1)
    return;
  w->round = 2;
  w->committing = w->status == PH_OK;
  int rc = pg_exec_sql(s, w->committing ? "COMMIT" : "ROLLBACK");
  w->commit_sent = w->committing && rc == PH_OK;
}

static void w_done(void *arg, int status) {
  wreq *w = arg;
  spg *s = w->base.s;
  w->out.size = sizeof(w->out);
  if (status != PH_OK) {
    /* A COMMIT in flight may have landed; anything earlier did not. */
    w->out.status = w->round == 2 && w->commit_sent ? PH_AZ_EOUTCOME
                                                    : PH_AZ_EUNAVAILABLE;
    w->out.detail = w->out.status == PH_AZ_EOUTCOME
                        ? "the connection was lost during the commit: list "
                          "the record to know"
                        : "the database did not answer";
    req_finish(&w->base);
    return;
  }
  if (w->status != PH_OK || w->round != 2 || !w->committing) {
    w->out.status = w->status != PH_OK ? w->status : PH_AZ_EUNAVAILABLE;
    w->out.detail = w->detail;
    req_finish(&w->base);
    return;
  }
  poll_local_commit(s, w->new_rev);
  w->out.status = PH_OK;
  w->out.revision = (uint64_t)w->new_rev;
  if (w->action != PH_AZ_DELETE && w->main_res)
    rec_read(w->main_res, 0, w->kind, &w->out.rec);
  if (w->bearer[0])
    w->out.bearer = w->bearer;
  req_finish(&w->base);
}

static const pg_task_ops write_ops = {w_begin, w_result, w_round_done,
                                      w_done};

static int dup_opt(const char *s, char **out) {
  *out = NULL;
  if (!s)
    return 0;
  *out = strdup(s);
  return *out ? 0 : -1;
}

static void add(wreq *w, int q, int n, const char *const *v) {
  wstmt *st = &w->st[w->n_st++];
  st->q = q;
  st->n = n;
  for (int i = 0; i < n; i++)
    st->v[i] = v[i];
}

static void guard(wreq *w, int q, const char *a, const char *b, int status,
                  const char *detail) {
  const char *v[] = {a, b};
  add(w, q, 2, v);
  w->st[w->n_st - 1].guard_status = status;
  w->st[w->n_st - 1].guard_detail = detail;
  w->main_st = w->n_st; /* the change comes next */
}

static int flag(uint32_t fields, uint32_t f) { return (fields & f) != 0; }

/* A new secret for the token id in w->id: its hash for the row, the
 * bearer for the result. */
static int make_secret(wreq *w) {
  if (az_secret_new(w->secret) != 0 ||
      az_secret_hash(w->secret, AZ_SECRET_LEN, w->hash) != 0 ||
      az_bearer_format(w->id, w->secret, w->bearer) != 0)
    return -1;
  az_wipe(w->secret, sizeof(w->secret));
  return 0;
}

/* The statements of the write (copied strings already in w). */
static int plan(wreq *w, const ph_az_write *q) {
  const char *now = num(w, (int64_t)time(NULL));
  const ph_az_record *r = &q->rec;
  uint32_t f = q->fields;
  switch (w->kind * 10 + w->action) {
  case PH_AZ_USER * 10 + PH_AZ_CREATE:
  case PH_AZ_AGENT * 10 + PH_AZ_CREATE: {
    int en = w->kind == PH_AZ_USER ? r->u.user.enabled : r->u.agent.enabled;
    const char *v[] = {w->s_name, w->s_owner, num(w, en ? 1 : 0), now};
    add(w, w->kind == PH_AZ_USER ? Q_USER_INS : Q_AGENT_INS, 4, v);
    break;
  }
  case PH_AZ_USER * 10 + PH_AZ_UPDATE:
  case PH_AZ_AGENT * 10 + PH_AZ_UPDATE: {
    int en = w->kind == PH_AZ_USER ? r->u.user.enabled : r->u.agent.enabled;
    if (w->kind == PH_AZ_USER && flag(f, PH_AZ_F_OWNER) && w->s_owner)
      guard(w, Q_GUARD_OWNER, w->s_name, w->s_owner, PH_EINVAL,
            "the owner is owned by the user");
    const char *v[] = {w->s_name,
                       num(w, flag(f, PH_AZ_F_ENABLED)),
                       num(w, en ? 1 : 0),
                       num(w, flag(f, PH_AZ_F_OWNER)),
                       w->s_owner,
                       now};
    add(w, w->kind == PH_AZ_USER ? Q_USER_UPD : Q_AGENT_UPD, 6, v);
    break;
  }
  case PH_AZ_USER * 10 + PH_AZ_DELETE: {
    const char *v[] = {w->s_name};
    add(w, Q_USER_DEL_POL, 1, v);
    add(w, Q_USER_DEL, 1, v);
    w->main_st = 1;
    break;
  }
  case PH_AZ_AGENT * 10 + PH_AZ_DELETE: {
    const char *v[] = {w->s_name};
    add(w, Q_AGENT_DEL, 1, v);
    break;
  }
  case PH_AZ_TOKEN * 10 + PH_AZ_CREATE: {
    if (az_id_new(AZ_TOKEN_PREFIX, w->id) != 0 || make_secret(w) != 0)
      return -1;
    const char *v[] = {w->id,
                       w->s_user,
                       w->s_agent,
                       num(w, r->u.token.scopes),
                       w->hash,
                       num(w, r->u.token.expires_at),
                       now};
    add(w, Q_TOKEN_INS, 7, v);
    break;
  }
  case PH_AZ_TOKEN * 10 + PH_AZ_UPDATE: {
    if (flag(f, PH_AZ_F_SCOPES))
      guard(w, Q_GUARD_SCOPES, w->id, num(w, r->u.token.scopes), PH_EINVAL,
            "the agent scope goes with the token's agent, and only with it");
    const char *v[] = {w->id,
                       num(w, flag(f, PH_AZ_F_SCOPES)),
                       num(w, r->u.token.scopes),
                       num(w, flag(f, PH_AZ_F_EXPIRES)),
                       num(w, r->u.token.expires_at),
                       num(w, flag(f, PH_AZ_F_REVOKED)),
                       now};
    add(w, Q_TOKEN_UPD, 7, v);
    break;
  }
  case PH_AZ_TOKEN * 10 + PH_AZ_ROTATE: {
    if (make_secret(w) != 0)
      return -1;
    const char *v[] = {w->id, w->hash, now};
    add(w, Q_TOKEN_ROT, 3, v);
    break;
  }
  case PH_AZ_TOKEN * 10 + PH_AZ_DELETE: {
    const char *v[] = {w->id};
    add(w, Q_TOKEN_DEL_POL, 1, v);
    add(w, Q_TOKEN_DEL, 1, v);
    w->main_st = 1;
    break;
  }
  case PH_AZ_POLICY * 10 + PH_AZ_CREATE: {
    if (az_id_new(AZ_POLICY_PREFIX, w->id) != 0)
      return -1;
    const ph_az_policy *p = &r->u.policy;
    const char *v[] = {w->id,
                       w->s_agent,
                       num(w, p->subject_kind),
                       w->s_subject,
                       w->s_host,
                       num(w, p->port_min),
                       num(w, p->port_max),
                       num(w, p->protocol),
                       now};
    add(w, Q_POL_INS, 9, v);
    break;
  }
  case PH_AZ_POLICY * 10 + PH_AZ_UPDATE: {
    const ph_az_policy *p = &r->u.policy;
    const char *v[] = {w->id,
                       num(w, flag(f, PH_AZ_F_SUBJECT)),
                       num(w, p->subject_kind),
                       w->s_subject,
                       num(w, flag(f, PH_AZ_F_HOST)),
                       w->s_host,
                       num(w, flag(f, PH_AZ_F_PORTS)),
                       num(w, p->port_min),
                       num(w, p->port_max),
                       num(w, flag(f, PH_AZ_F_PROTOCOL)),
                       num(w, p->protocol),
                       now};
    add(w, Q_POL_UPD, 12, v);
    break;
  }
  case PH_AZ_POLICY * 10 + PH_AZ_DELETE: {
    const char *v[] = {w->id};
    add(w, Q_POL_DEL, 1, v);
    break;
  }
  default:
    return -1;
  }
  return 0;
}

/* Copies the strings the write carries. */
static int copy_strings(wreq *w, const ph_az_write *q) {
  const ph_az_record *r = &q->rec;
  const char *id = NULL;
  int rc = 0;
  switch (w->kind) {
  case PH_AZ_USER:
    rc |= dup_opt(r->u.user.name, &w->s_name);
    rc |= dup_opt(r->u.user.owner, &w->s_owner);
    break;
  case PH_AZ_AGENT:
    rc |= dup_opt(r->u.agent.name, &w->s_name);
    rc |= dup_opt(r->u.agent.owner, &w->s_owner);
    break;
  case PH_AZ_TOKEN:
    id = r->u.token.id;
    rc |= dup_opt(r->u.token.user, &w->s_user);
    rc |= dup_opt(r->u.token.agent, &w->s_agent);
    break;
  case PH_AZ_POLICY:
    id = r->u.policy.id;
    rc |= dup_opt(r->u.policy.agent, &w->s_agent);
    rc |= dup_opt(r->u.policy.subject, &w->s_subject);
    rc |= dup_opt(r->u.policy.host_pattern, &w->s_host);
    break;
  default:
    return -1;
  }
  if (id && q->action != PH_AZ_CREATE)
    snprintf(w->id, sizeof(w->id), "%s", id);
  return rc ? -1 : 0;
}

int64_t spg_write(void *self, const ph_az_write *q, ph_az_write_cb cb,
                  void *arg) {
  spg *s = self;
  const char *detail = NULL;
  if (!q || !cb || az_validate_write(q, &detail) != PH_OK)
    return PH_EINVAL;
  wreq *w = calloc(1, sizeof(*w));
  if (!w)
    return PH_ENOMEM;
  w->base.answer = w_answer;
  w->base.free_fn = w_free;
  w->cb = cb;
  w->arg = arg;
  w->action = q->action;
  w->kind = q->rec.kind;
  w->fields = q->fields;
  if (copy_strings(w, q) != 0 || plan(w, q) != 0) {
    w_free(&w->base);
    return PH_ENOMEM;
  }
  req_add(s, &w->base);
  int rc = req_submit(&w->base, &write_ops);
  if (rc != PH_OK) {
    w->out.size = sizeof(w->out);
    w->out.status = rc == PH_EFULL ? PH_EFULL : PH_AZ_EUNAVAILABLE;
    w->out.detail = rc == PH_EFULL ? "too many calls in flight"
                                   : "the database did not answer";
    req_later(&w->base);
  }
  return w->base.id;
}
