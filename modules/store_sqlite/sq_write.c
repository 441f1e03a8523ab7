/* SPDX-License-Identifier: BSD-2-Clause */
/* authz.store writes (authz_store.h) in store_sqlite: each one is one
 * BEGIN IMMEDIATE transaction that checks what it refers to, makes the
 * change, raises authorization_revision by one (checking that exactly one
 * row changed and that the new value still fits), reads the record back
 * and commits (TM-P1-16..19, 21). Any failure rolls back: the data and the
 * revision stay as they were. The revision step is inside the store and
 * never the caller's to make. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store_common/az_token.h"
#include "store_common/az_validate.h"
#include "store_sqlite.h"

#define OWNER_DEPTH_MAX 64 /* owner chains are walked at most this far */

typedef struct write_call {
  sq_tx t; /* first: the call, status, detail, time (seconds) */
  ph_az_write_cb cb;
  void *arg;
  ph_az_write w;   /* the caller's request, strings in arena */
  sq_arena *arena; /* request and result strings */
  uint64_t revision;
  ph_az_record rec;
  char id[PH_AZ_ID_LEN + 1];
  char bearer[AZ_BEARER_LEN + 1]; /* wiped after the callback */
} write_call;

/* ---- statements ----------------------------------------------------- */

static int fail(write_call *x, int status, const char *detail) {
  return sq_tx_fail(&x->t, status, detail);
}

/* A failed statement as a status: what the caller can act on. */
static int fail_rc(write_call *x, int rc) { return sq_tx_fail_rc(&x->t, rc); }

/* 1 when the query (one text parameter) has a row, 0 when not, -1 with
 * the status set on a failure. */
static int exists(write_call *x, sqlite3 *db, const char *sql,
                  const char *key) {
  sqlite3_stmt *st = sq_prepare(&x->t.c, db, sql);
  if (!st)
    return fail(x, PH_AZ_EUNAVAILABLE, "the database failed");
  sq_bind_text(st, 1, key);
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc == SQLITE_ROW)
    return 1;
  if (rc == SQLITE_DONE)
    return 0;
  x->t.c.db_broken |= sq_rc_broken(rc);
  return fail_rc(x, rc);
}

#define USER_EXISTS "SELECT 1 FROM users WHERE name = ?1"
#define AGENT_EXISTS "SELECT 1 FROM agents WHERE name = ?1"
#define TOKEN_EXISTS "SELECT 1 FROM service_tokens WHERE id = ?1"
#define POLICY_EXISTS "SELECT 1 FROM agent_policies WHERE id = ?1"

/* Must exist: 0, or -1 with ENOENT and detail. */
static int need(write_call *x, sqlite3 *db, const char *sql, const char *key,
                const char *detail) {
  int e = exists(x, db, sql, key);
  if (e < 0)
    return -1;
  return e ? 0 : fail(x, PH_ENOENT, detail);
}

/* Binds the parameters given as a format: 't' text, 'i' int64, 'n' the
 * write's time, then runs (sq_tx_exec). 0, or -1 with the status set. */
#define exec_args(x, ...) sq_tx_exec(&(x)->t, __VA_ARGS__)

/* Whether making owner the owner of user would close a loop: walks up
 * from owner. 1 loop (or too deep), 0 fine, -1 failed. */
static int owner_loop(write_call *x, sqlite3 *db, const char *user,
                      const char *owner) {
  char cur[PH_AZ_NAME_MAX + 1];
  snprintf(cur, sizeof(cur), "%s", owner);
  for (int depth = 0; depth < OWNER_DEPTH_MAX; depth++) {
    if (strcmp(cur, user) == 0)
      return 1;
    sqlite3_stmt *st =
        sq_prepare(&x->t.c, db, "SELECT owner FROM users WHERE name = ?1");
    if (!st)
      return fail(x, PH_AZ_EUNAVAILABLE, "the database failed");
    sq_bind_text(st, 1, cur);
    int rc = sqlite3_step(st);
    const unsigned char *o =
        rc == SQLITE_ROW ? sqlite3_column_text(st, 0) : NULL;
    if (o)
      snprintf(cur, sizeof(cur), "%s", (const char *)o);
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
      return fail_rc(x, rc);
    if (!o)
      return 0;
  }
  return 1;
}

/* ---- the changes, one per kind and action ---------------------------- */

/* A user or an agent (the same columns) made when its name is free:
 * exists_sql finds the name, insert binds name, owner, enabled, now. */
static int named_create(write_call *x, sqlite3 *db, const char *exists_sql,
                        const char *insert_sql, const char *name,
                        const char *owner, int enabled) {
  int e = exists(x, db, exists_sql, name);
  if (e != 0)
    return e < 0 ? -1 : fail(x, PH_EEXIST, "the name is taken");
  return exec_args(x, db, insert_sql, "ttinn", name, owner, (int64_t)enabled);
}

static int user_write(write_call *x, sqlite3 *db) {
  const ph_az_user *u = &x->w.rec.u.user;
  if (x->w.action == PH_AZ_CREATE) {
    if (u->owner && need(x, db, USER_EXISTS, u->owner,
                         "owner does not exist") < 0)
      return -1;
    return named_create(x, db, USER_EXISTS,
                        "INSERT INTO users (name, owner, enabled, "
                        "created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                        u->name, u->owner, u->enabled);
  }
  if (need(x, db, USER_EXISTS, u->name, "no such user") < 0)
    return -1;
  if (x->w.action == PH_AZ_DELETE) {
    int e = exists(x, db,
                   "SELECT 1 FROM agents WHERE owner = ?1 UNION ALL "
                   "SELECT 1 FROM users WHERE owner = ?1",
                   u->name);
    if (e != 0)
      return e < 0 ? -1
                   : fail(x, PH_EBUSY, "the user still owns agents or users");
    /* Its tokens, and every policy naming it or one of its tokens. */
    if (exec_args(x, db,
                  "DELETE FROM agent_policies WHERE (subject_kind = 2 AND "
                  "subject = ?1) OR (subject_kind = 1 AND subject IN "
                  "(SELECT id FROM service_tokens WHERE user_name = ?1))",
                  "t", u->name) < 0 ||
        exec_args(x, db, "DELETE FROM service_tokens WHERE user_name = ?1",
                  "t", u->name) < 0)
      return -1;
    return exec_args(x, db, "DELETE FROM users WHERE name = ?1", "t",
                     u->name);
  }
  /* update */
  if (x->w.fields & PH_AZ_F_OWNER && u->owner) {
    if (need(x, db, USER_EXISTS, u->owner, "owner does not exist") < 0)
      return -1;
    int loop = owner_loop(x, db, u->name, u->owner);
    if (loop != 0)
      return loop < 0 ? -1
                      : fail(x, PH_EINVAL, "the owner is owned by the user");
  }
  if (x->w.fields & PH_AZ_F_ENABLED &&
      exec_args(x, db, "UPDATE users SET enabled = ?2 WHERE name = ?1", "ti",
                u->name, (int64_t)u->enabled) < 0)
    return -1;
  if (x->w.fields & PH_AZ_F_OWNER &&
      exec_args(x, db, "UPDATE users SET owner = ?2 WHERE name = ?1", "tt",
                u->name, u->owner) < 0)
    return -1;
  return exec_args(x, db, "UPDATE users SET updated_at = ?2 WHERE name = ?1",
                   "tn", u->name);
}

/* A new secret for x->id: its hash into the row (and, for a rotation,
 * the rotation time), the bearer kept for the callback. */
static int new_secret(write_call *x, sqlite3 *db, int rotate) {
  char secret[AZ_SECRET_LEN + 1], hash[AZ_HASH_HEX_LEN + 1];
  int rc = -1;
  if (az_secret_new(secret) < 0 ||
      az_secret_hash(secret, AZ_SECRET_LEN, hash) < 0 ||
      az_bearer_format(x->id, secret, x->bearer) < 0)
    fail(x, PH_AZ_EUNAVAILABLE, "no randomness for a secret");
  else
    rc = rotate ? exec_args(x, db,
                            "UPDATE service_tokens SET secret_hash = ?2, "
                            "rotated_at = ?3, updated_at = ?3 WHERE id = ?1",
                            "ttn", x->id, hash)
                : exec_args(x, db,
                            "UPDATE service_tokens SET secret_hash = ?2 "
                            "WHERE id = ?1",
                            "tt", x->id, hash);
  az_wipe(secret, sizeof(secret));
  az_wipe(hash, sizeof(hash));
  return rc;
}

static int token_write(write_call *x, sqlite3 *db) {
  const ph_az_token *t = &x->w.rec.u.token;
  if (x->w.action == PH_AZ_CREATE) {
    if (need(x, db, USER_EXISTS, t->user, "user does not exist") < 0 ||
        (t->agent &&
         need(x, db, AGENT_EXISTS, t->agent, "agent does not exist") < 0))
      return -1;
    for (int tries = 0;; tries++) { /* 64 random bits: a clash is a fluke */
      if (tries == 3 || az_id_new(AZ_TOKEN_PREFIX, x->id) < 0)
        return fail(x, PH_AZ_EUNAVAILABLE, "no token id could be made");
      int e = exists(x, db, TOKEN_EXISTS, x->id);
      if (e < 0)
        return -1;
      if (e == 0)
        break;
    }
    if (exec_args(x, db,
                  "INSERT INTO service_tokens (id, user_name, agent, scopes, "
                  "secret_hash, expires_at, created_at, updated_at) VALUES "
                  "(?1, ?2, ?3, ?4, '', ?5, ?6, ?6)",
                  "tttiin", x->id, t->user, t->agent, (int64_t)t->scopes,
                  t->expires_at) < 0)
      return -1;
    return new_secret(x, db, 0);
  }
  snprintf(x->id, sizeof(x->id), "%s", t->id);
  if (need(x, db, TOKEN_EXISTS, t->id, "no such token") < 0)
    return -1;
  if (x->w.action == PH_AZ_DELETE) {
    if (exec_args(x, db,
                  "DELETE FROM agent_policies WHERE subject_kind = 1 AND "
                  "subject = ?1",
                  "t", t->id) < 0)
      return -1;
    return exec_args(x, db, "DELETE FROM service_tokens WHERE id = ?1", "t",
                     t->id);
  }
  if (x->w.action == PH_AZ_ROTATE)
    return new_secret(x, db, 1);
  /* update */
  if (x->w.fields & PH_AZ_F_SCOPES) {
    /* An agent scope goes with the token's agent, and only with it. */
    int has_agent = exists(x, db,
                           "SELECT 1 FROM service_tokens WHERE id = ?1 AND "
                           "agent IS NOT NULL",
                           t->id);
    if (has_agent < 0)
      return -1;
    if (!!(t->scopes & PH_AZ_SCOPE_AGENT) != has_agent)
      return fail(x, PH_EINVAL,
                  has_agent ? "an agent token keeps the agent scope"
                            : "a stream token cannot get the agent scope");
    if (exec_args(x, db,
                  "UPDATE service_tokens SET scopes = ?2 WHERE id = ?1",
                  "ti", t->id, (int64_t)t->scopes) < 0)
      return -1;
  }
  if (x->w.fields & PH_AZ_F_EXPIRES &&
      exec_args(x, db,
                "UPDATE service_tokens SET expires_at = ?2 WHERE id = ?1",
                "ti", t->id, t->expires_at) < 0)
    return -1;
  /* Revoking twice keeps the first time; there is no un-revoke. */
  if (x->w.fields & PH_AZ_F_REVOKED &&
      exec_args(x, db,
                "UPDATE service_tokens SET revoked_at = ?2 WHERE id = ?1 "
                "AND revoked_at = 0",
                "tn", t->id) < 0)
    return -1;
  return exec_args(x, db,
                   "UPDATE service_tokens SET updated_at = ?2 WHERE id = ?1",
                   "tn", t->id);
}

static int agent_write(write_call *x, sqlite3 *db) {
  const ph_az_agent *a = &x->w.rec.u.agent;
  if (x->w.action == PH_AZ_CREATE) {
    if (need(x, db, USER_EXISTS, a->owner, "owner does not exist") < 0)
      return -1;
    return named_create(x, db, AGENT_EXISTS,
                        "INSERT INTO agents (name, owner, enabled, "
                        "created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                        a->name, a->owner, a->enabled);
  }
  if (need(x, db, AGENT_EXISTS, a->name, "no such agent") < 0)
    return -1;
  if (x->w.action == PH_AZ_DELETE) {
    if (exec_args(x, db, "DELETE FROM agent_policies WHERE agent = ?1", "t",
                  a->name) < 0 ||
        exec_args(x, db, "DELETE FROM service_tokens WHERE agent = ?1", "t",
                  a->name) < 0)
      return -1;
    return exec_args(x, db, "DELETE FROM agents WHERE name = ?1", "t",
                     a->name);
  }
  if (x->w.fields & PH_AZ_F_OWNER &&
      (need(x, db, USER_EXISTS, a->owner, "owner does not exist") < 0 ||
       exec_args(x, db, "UPDATE agents SET owner = ?2 WHERE name = ?1", "tt",
                 a->name, a->owner) < 0))
    return -1;
  if (x->w.fields & PH_AZ_F_ENABLED &&
      exec_args(x, db, "UPDATE agents SET enabled = ?2 WHERE name = ?1",
                "ti", a->name, (int64_t)a->enabled) < 0)
    return -1;
  return exec_args(x, db, "UPDATE agents SET updated_at = ?2 WHERE name = ?1",
                   "tn", a->name);
}

static int subject_exists(write_call *x, sqlite3 *db, int kind,
                          const char *subject) {
  return need(x, db, kind == PH_AZ_SUBJECT_TOKEN ? TOKEN_EXISTS : USER_EXISTS,
              subject, "subject does not exist");
}

static int policy_write(write_call *x, sqlite3 *db) {
  const ph_az_policy *p = &x->w.rec.u.policy;
  if (x->w.action == PH_AZ_CREATE) {
    if (need(x, db, AGENT_EXISTS, p->agent, "agent does not exist") < 0 ||
        subject_exists(x, db, p->subject_kind, p->subject) < 0)
      return -1;
    for (int tries = 0;; tries++) {
      if (tries == 3 || az_id_new(AZ_POLICY_PREFIX, x->id) < 0)
        return fail(x, PH_AZ_EUNAVAILABLE, "no policy id could be made");
      int e = exists(x, db, POLICY_EXISTS, x->id);
      if (e < 0)
        return -1;
      if (e == 0)
        break;
    }
    return exec_args(x, db,
                     "INSERT INTO agent_policies (id, agent, subject_kind, "
                     "subject, host_pattern, port_min, port_max, protocol, "
                     "created_at, updated_at) VALUES "
                     "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9)",
                     "ttittiiin", x->id, p->agent, (int64_t)p->subject_kind,
                     p->subject, p->host_pattern, (int64_t)p->port_min,
                     (int64_t)p->port_max, (int64_t)p->protocol);
  }
  snprintf(x->id, sizeof(x->id), "%s", p->id);
  if (need(x, db, POLICY_EXISTS, p->id, "no such policy") < 0)
    return -1;
  if (x->w.action == PH_AZ_DELETE)
    return exec_args(x, db, "DELETE FROM agent_policies WHERE id = ?1", "t",
                     p->id);
  uint32_t f = x->w.fields;
  if (f & PH_AZ_F_SUBJECT &&
      (subject_exists(x, db, p->subject_kind, p->subject) < 0 ||
       exec_args(x, db,
                 "UPDATE agent_policies SET subject_kind = ?2, subject = ?3 "
                 "WHERE id = ?1",
                 "tit", p->id, (int64_t)p->subject_kind, p->subject) < 0))
    return -1;
  if (f & PH_AZ_F_HOST &&
      exec_args(x, db,
                "UPDATE agent_policies SET host_pattern = ?2 WHERE id = ?1",
                "tt", p->id, p->host_pattern) < 0)
    return -1;
  if (f & PH_AZ_F_PORTS &&
      exec_args(x, db,
                "UPDATE agent_policies SET port_min = ?2, port_max = ?3 "
                "WHERE id = ?1",
                "tii", p->id, (int64_t)p->port_min, (int64_t)p->port_max) < 0)
    return -1;
  if (f & PH_AZ_F_PROTOCOL &&
      exec_args(x, db,
                "UPDATE agent_policies SET protocol = ?2 WHERE id = ?1", "ti",
                p->id, (int64_t)p->protocol) < 0)
    return -1;
  return exec_args(x, db,
                   "UPDATE agent_policies SET updated_at = ?2 WHERE id = ?1",
                   "tn", p->id);
}

/* ---- the transaction ------------------------------------------------- */

/* The record as stored, after the change. */
static int read_back(write_call *x, sqlite3 *db) {
  int kind = x->w.rec.kind;
  if (x->w.action == PH_AZ_DELETE)
    return 0; /* kind 0 */
  const char *key = kind == PH_AZ_USER    ? x->w.rec.u.user.name
                    : kind == PH_AZ_AGENT ? x->w.rec.u.agent.name
                                          : x->id;
  static const char *const sql[] = {
      NULL,
      "SELECT " SQ_USER_COLS " FROM users WHERE name = ?1",
      "SELECT " SQ_TOKEN_COLS " FROM service_tokens WHERE id = ?1",
      "SELECT " SQ_AGENT_COLS " FROM agents WHERE name = ?1",
      "SELECT " SQ_POLICY_COLS " FROM agent_policies WHERE id = ?1"};
  sqlite3_stmt *st = sq_prepare(&x->t.c, db, sql[kind]);
  if (!st)
    return fail(x, PH_AZ_EUNAVAILABLE, "the database failed");
  sq_bind_text(st, 1, key);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW)
    sq_row_record(kind, st, &x->arena, &x->rec);
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW)
    return fail_rc(x, rc == SQLITE_DONE ? SQLITE_ERROR : rc);
  return 0;
}

/* Inside the transaction (sq_tx_run), the revision read. */
static int write_change(sq_tx *t, sqlite3 *db) {
  write_call *x = (write_call *)t;
  int (*change[])(write_call *, sqlite3 *) = {NULL, user_write, token_write,
                                              agent_write, policy_write};
  if (change[x->w.rec.kind](x, db) < 0 || sq_tx_bump(t, db) < 0)
    return -1;
  return read_back(x, db);
}

/* Helper thread. */
static void write_work(sq_call *c, sqlite3 *db) {
  write_call *x = (write_call *)c;
  x->t.now = (int64_t)time(NULL);
  if (sq_tx_run(&x->t, db, write_change) < 0) {
    az_wipe(x->bearer, sizeof(x->bearer));
    memset(&x->rec, 0, sizeof(x->rec));
    return;
  }
  x->revision = (uint64_t)c->rev_value;
}

/* Loop thread: after job_done took the new revision in (TM-P1-29). */
static void write_deliver(sq_call *c) {
  write_call *x = (write_call *)c;
  ph_az_write_result res = {.size = sizeof(res),
                            .status = x->t.status,
                            .revision = x->t.status == PH_OK ? x->revision : 0,
                            .detail = x->t.detail};
  if (x->t.status == PH_OK) {
    res.rec = x->rec;
    res.bearer = x->bearer[0] ? x->bearer : NULL;
  }
  c->s->api->inc(c->s->m_calls[SQ_CALL_WRITE], 1);
  x->cb(x->arg, &res);
  az_wipe(x->bearer, sizeof(x->bearer));
}

static void write_destroy(sq_call *c) {
  write_call *x = (write_call *)c;
  az_wipe(x->bearer, sizeof(x->bearer));
  sq_arena_free(&x->arena);
  free(x);
}

/* The caller's strings, copied: the call returns before the work runs. */
static int copy_request(write_call *x, const ph_az_write *w) {
  x->w.size = sizeof(x->w);
  x->w.action = w->action;
  x->w.fields = w->fields;
  x->w.rec = w->rec;
  sq_arena **a = &x->arena;
  const char **s[4] = {NULL};
  switch (w->rec.kind) {
  case PH_AZ_USER:
    s[0] = &x->w.rec.u.user.name;
    s[1] = &x->w.rec.u.user.owner;
    break;
  case PH_AZ_TOKEN:
    s[0] = &x->w.rec.u.token.id;
    s[1] = &x->w.rec.u.token.user;
    s[2] = &x->w.rec.u.token.agent;
    break;
  case PH_AZ_AGENT:
    s[0] = &x->w.rec.u.agent.name;
    s[1] = &x->w.rec.u.agent.owner;
    break;
  default:
    s[0] = &x->w.rec.u.policy.id;
    s[1] = &x->w.rec.u.policy.agent;
    s[2] = &x->w.rec.u.policy.subject;
    s[3] = &x->w.rec.u.policy.host_pattern;
  }
  for (int i = 0; i < 4; i++)
    if (s[i] && *s[i] && !(*s[i] = sq_arena_str(a, *s[i])))
      return -1;
  return 0;
}

int64_t sq_write(void *self, const ph_az_write *w, ph_az_write_cb cb,
                 void *arg) {
  sq *s = self;
  if (!w || !cb || az_validate_write(w, NULL) != PH_OK)
    return PH_EINVAL;
  write_call *x =
      sq_call_new(s, sizeof(*x), write_work, write_deliver, write_destroy);
  if (!x)
    return PH_ENOMEM;
  x->t.taken = "the name is taken";
  x->cb = cb;
  x->arg = arg;
  if (copy_request(x, w) < 0) {
    write_destroy(&x->t.c);
    return PH_ENOMEM;
  }
  sq_call_start(s, &x->t.c, &x->t.status, &x->t.detail);
  return x->t.c.id;
}
