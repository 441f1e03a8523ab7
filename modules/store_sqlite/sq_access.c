/* SPDX-License-Identifier: BSD-2-Clause */
/* store_sqlite's reads on a stream's path: the "access" service
 * (access.h; principal = a token id, an agent required) and authz.store's
 * authenticate (a bearer token). Each reads every fact it needs in one
 * read transaction, with the revision, and lets store_common decide
 * (az_eval.h), so that store_pg answers the same. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/access_req.h"
#include "store_common/az_eval.h"
#include "store_common/az_token.h"
#include "store_sqlite.h"

#define STR_MAX 255

/* ---- facts ---------------------------------------------------------- */

typedef struct facts_buf {
  az_facts f;
  char token_id[PH_AZ_ID_LEN + 1];
  char user[PH_AZ_NAME_MAX + 1];
  char agent[PH_AZ_NAME_MAX + 1]; /* the token's own agent (agent tokens) */
  char hash[AZ_HASH_HEX_LEN + 1];
  int64_t created_at, updated_at, rotated_at;
} facts_buf;

static void copy_col(char *dst, size_t cap, sqlite3_stmt *st, int col) {
  const unsigned char *t = sqlite3_column_text(st, col);
  size_t n = t ? strnlen((const char *)t, cap) : 0;
  if (!t || n >= cap) {
    dst[0] = '\0';
    return;
  }
  memcpy(dst, t, n + 1);
}

/* -1 on a statement failure (then nothing may be concluded), else 0 with
 * whatever was found in fb. */
static int read_token(sq_call *c, sqlite3 *db, const char *id,
                      facts_buf *fb) {
  sqlite3_stmt *st = sq_prepare(
      c, db,
      "SELECT user_name, agent, scopes, expires_at, revoked_at, "
      "secret_hash, created_at, updated_at, rotated_at "
      "FROM service_tokens WHERE id = ?1");
  if (!st)
    return -1;
  sq_bind_text(st, 1, id);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    fb->f.token_found = 1;
    snprintf(fb->token_id, sizeof(fb->token_id), "%s", id);
    fb->f.token_id = fb->token_id;
    copy_col(fb->user, sizeof(fb->user), st, 0);
    fb->f.token_user = fb->user[0] ? fb->user : NULL;
    copy_col(fb->agent, sizeof(fb->agent), st, 1);
    int64_t scopes = sqlite3_column_int64(st, 2);
    fb->f.scopes = scopes > 0 && scopes <= 0xffff ? (uint32_t)scopes : 0;
    fb->f.expires_at = sqlite3_column_int64(st, 3);
    fb->f.revoked_at = sqlite3_column_int64(st, 4);
    copy_col(fb->hash, sizeof(fb->hash), st, 5);
    fb->created_at = sqlite3_column_int64(st, 6);
    fb->updated_at = sqlite3_column_int64(st, 7);
    fb->rotated_at = sqlite3_column_int64(st, 8);
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
    c->db_broken |= sq_rc_broken(rc);
    return -1;
  }
  return 0;
}

/* One row of (enabled[, owner]) by name: found, enabled, owner copied. */
static int read_enabled(sq_call *c, sqlite3 *db, const char *sql,
                        const char *name, int *found, int *enabled,
                        char *owner, size_t owner_cap) {
  *found = *enabled = 0;
  if (owner)
    owner[0] = '\0';
  sqlite3_stmt *st = sq_prepare(c, db, sql);
  if (!st)
    return -1;
  sq_bind_text(st, 1, name);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    *found = 1;
    *enabled = sqlite3_column_int64(st, 0) == 1;
    if (owner)
      copy_col(owner, owner_cap, st, 1);
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
    c->db_broken |= sq_rc_broken(rc);
    return -1;
  }
  return 0;
}

/* The token's user and the user's owner. */
static int read_user(sq_call *c, sqlite3 *db, facts_buf *fb) {
  char owner[PH_AZ_NAME_MAX + 1];
  if (!fb->f.token_user)
    return 0;
  if (read_enabled(c, db, "SELECT enabled, owner FROM users WHERE name = ?1",
                   fb->f.token_user, &fb->f.user_found, &fb->f.user_enabled,
                   owner, sizeof(owner)) < 0)
    return -1;
  if (!fb->f.user_found || !owner[0])
    return 0;
  fb->f.user_has_owner = 1;
  return read_enabled(c, db, "SELECT enabled FROM users WHERE name = ?1",
                      owner, &fb->f.owner_found, &fb->f.owner_enabled, NULL,
                      0);
}

static int read_agent(sq_call *c, sqlite3 *db, const char *agent,
                      facts_buf *fb) {
  return read_enabled(c, db, "SELECT enabled FROM agents WHERE name = ?1",
                      agent, &fb->f.agent_found, &fb->f.agent_enabled, NULL,
                      0);
}

/* ---- access --------------------------------------------------------- */

typedef struct access_call {
  sq_call c;
  ph_access_cb cb;
  void *arg;
  ph_access_request req; /* strings point into the buffers below */
  char host[STR_MAX + 1], principal[STR_MAX + 1], agent[STR_MAX + 1];
  ph_access_result res;
} access_call;

static void unavailable(ph_access_result *res, int code) {
  res->verdict = PH_ACCESS_UNAVAILABLE;
  res->code = code;
  res->ttl_ms = 0;
  res->revision = 0;
}

/* The candidate policies, one row at a time: the first that allows ends
 * the scan, so an agent with many rows costs no memory. */
static int decide_with_policies(sq_call *c, sqlite3 *db, access_call *a,
                                facts_buf *fb, int64_t now_s,
                                az_decision *d) {
  az_decide(&fb->f, &a->req, now_s, c->positive_ms, c->negative_ms, d);
  if (strcmp(d->reason, "no policy") != 0)
    return 0; /* denied before the policies, or (never) allowed without */
  sqlite3_stmt *st = sq_prepare(
      c, db,
      "SELECT subject_kind, subject, host_pattern, port_min, port_max, "
      "protocol FROM agent_policies WHERE agent = ?1 AND "
      "((subject_kind = 1 AND subject = ?2) OR "
      "(subject_kind = 2 AND subject = ?3)) ORDER BY id");
  if (!st)
    return -1;
  sq_bind_text(st, 1, a->req.agent);
  sq_bind_text(st, 2, fb->f.token_id);
  sq_bind_text(st, 3, fb->f.token_user);
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    az_policy_row row = {
        .subject_kind = sqlite3_column_int(st, 0),
        .subject = (const char *)sqlite3_column_text(st, 1),
        .host_pattern = (const char *)sqlite3_column_text(st, 2),
        .port_min = sqlite3_column_int64(st, 3),
        .port_max = sqlite3_column_int64(st, 4),
        .protocol = sqlite3_column_int64(st, 5)};
    az_facts one = fb->f;
    one.policies = &row;
    one.n_policies = 1;
    az_decision try;
    az_decide(&one, &a->req, now_s, c->positive_ms, c->negative_ms, &try);
    if (try.verdict == PH_ACCESS_ALLOW) {
      *d = try;
      break;
    }
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
    c->db_broken |= sq_rc_broken(rc);
    return -1;
  }
  return 0;
}

/* Helper thread. */
static void access_work(sq_call *c, sqlite3 *db) {
  access_call *a = (access_call *)c;
  facts_buf fb;
  memset(&fb, 0, sizeof(fb));
  az_decision d;
  int64_t now_s = (int64_t)time(NULL);
  unavailable(&a->res, PH_OPEN_INTERNAL_ERROR);
  if (sq_exec(c, db, "BEGIN") < 0)
    return;
  if (sq_read_revision(c, db) == 0 && c->rev_what == AZ_REV_READ_OK &&
      read_token(c, db, a->req.principal, &fb) == 0 &&
      read_user(c, db, &fb) == 0 &&
      read_agent(c, db, a->req.agent, &fb) == 0 &&
      decide_with_policies(c, db, a, &fb, now_s, &d) == 0) {
    a->res.verdict = d.verdict;
    a->res.code = d.code;
    a->res.ttl_ms = d.ttl_ms;
    a->res.revision = (uint64_t)c->rev_value;
  }
  sq_exec(c, db, "COMMIT");
  az_wipe(fb.hash, sizeof(fb.hash));
}

/* Loop thread. A verdict computed under a revision the store cannot vouch
 * for now is not given out (access.h: PH_OPEN_INTERNAL_ERROR). */
static void access_deliver(sq_call *c) {
  access_call *a = (access_call *)c;
  sq *s = c->s;
  uint64_t rev;
  if (a->res.verdict != PH_ACCESS_UNAVAILABLE &&
      az_revision_get(&s->rev, &rev) != PH_OK)
    unavailable(&a->res, PH_OPEN_INTERNAL_ERROR);
  s->api->inc(s->m_calls[SQ_CALL_ACCESS], 1);
  a->cb(a->arg, &a->res);
}

static void access_destroy(sq_call *c) { free(c); }

static int64_t check_open(void *self, const ph_access_request *req,
                          ph_access_cb cb, void *arg) {
  sq *s = self;
  ph_access_request r;
  if (!req || !cb || access_req_read(req, &r) != PH_OK)
    return PH_EINVAL;
  access_call *a = sq_call_new(s, sizeof(*a), access_work, access_deliver,
                               access_destroy);
  if (!a)
    return PH_ENOMEM;
  a->cb = cb;
  a->arg = arg;
  a->res.size = sizeof(a->res);
  a->req = r;
  a->req.host = strcpy(a->host, r.host);
  a->req.principal = r.principal ? strcpy(a->principal, r.principal) : NULL;
  a->req.agent = r.agent ? strcpy(a->agent, r.agent) : NULL;
  if (!a->req.principal || !a->req.agent ||
      !az_id_valid(a->req.principal, AZ_TOKEN_PREFIX)) {
    /* Nothing to look up: an anonymous client, no agent, or a principal
     * that cannot be a token. A deny the database need not see. */
    a->res.verdict = PH_ACCESS_DENY;
    a->res.code = PH_OPEN_FORBIDDEN;
    a->res.ttl_ms = s->negative_ms;
    uint64_t rev = 0;
    a->res.revision = az_revision_get(&s->rev, &rev) == PH_OK ? rev : 0;
    sq_call_answer_later(s, &a->c);
    return a->c.id;
  }
  if (!sq_call_take_slot(s, &a->c) || sq_call_submit(s, &a->c) < 0) {
    /* Over max_pending or the host's job queue: fail closed, retry. */
    unavailable(&a->res, PH_OPEN_QUEUE_FULL);
    sq_call_answer_later(s, &a->c);
  }
  return a->c.id;
}

static int access_cancel(void *self, int64_t id) {
  return sq_call_cancel(self, id);
}

static int access_revision(void *self, uint64_t *rev) {
  sq *s = self;
  return az_revision_get(&s->rev, rev);
}

const ph_access_v1 sq_access_vt = {check_open, access_cancel,
                                   access_revision};

/* ---- authenticate --------------------------------------------------- */

typedef struct auth_call {
  sq_call c;
  ph_az_auth_cb cb;
  void *arg;
  char id[PH_AZ_ID_LEN + 1];
  char hash[AZ_HASH_HEX_LEN + 1]; /* of the presented secret; wiped */
  ph_az_auth_result res;
  char user[PH_AZ_NAME_MAX + 1], agent[PH_AZ_NAME_MAX + 1];
} auth_call;

static void auth_work(sq_call *c, sqlite3 *db) {
  auth_call *a = (auth_call *)c;
  facts_buf fb;
  memset(&fb, 0, sizeof(fb));
  int64_t now_s = (int64_t)time(NULL);
  a->res.verdict = PH_AZ_AUTH_UNAVAILABLE;
  if (sq_exec(c, db, "BEGIN") < 0)
    return;
  if (sq_read_revision(c, db) == 0 && c->rev_what == AZ_REV_READ_OK &&
      read_token(c, db, a->id, &fb) == 0 && read_user(c, db, &fb) == 0 &&
      (!fb.agent[0] || read_agent(c, db, fb.agent, &fb) == 0)) {
    /* Compared even when the token is unknown, against a hash no secret
     * has, so both paths cost the same. */
    static const char none[AZ_HASH_HEX_LEN + 1] =
        "----------------------------------------------------------------";
    int match = az_hash_eq(a->hash, fb.f.token_found ? fb.hash : none);
    int ok = match && !az_token_unusable(&fb.f, now_s);
    if (ok && (fb.f.scopes & PH_AZ_SCOPE_AGENT) &&
        (!fb.agent[0] || !fb.f.agent_found || !fb.f.agent_enabled))
      ok = 0; /* an agent token of a missing or disabled agent */
    a->res.revision = (uint64_t)c->rev_value;
    if (ok) {
      a->res.verdict = PH_AZ_AUTH_OK;
      memcpy(a->user, fb.user, sizeof(a->user));
      memcpy(a->agent, fb.agent, sizeof(a->agent));
      ph_az_token *t = &a->res.token;
      t->id = a->id;
      t->user = a->user;
      t->agent = a->agent[0] ? a->agent : NULL;
      t->scopes = fb.f.scopes;
      t->expires_at = fb.f.expires_at;
      t->created_at = fb.created_at;
      t->updated_at = fb.updated_at;
      t->rotated_at = fb.rotated_at;
      a->res.ttl_ms = c->positive_ms;
      if (fb.f.expires_at != 0 &&
          fb.f.expires_at - now_s <= (int64_t)(c->positive_ms / 1000))
        a->res.ttl_ms = (uint32_t)((fb.f.expires_at - now_s) * 1000);
    } else {
      a->res.verdict = PH_AZ_AUTH_DENY;
      a->res.ttl_ms = c->negative_ms;
    }
  }
  sq_exec(c, db, "COMMIT");
  az_wipe(fb.hash, sizeof(fb.hash));
  az_wipe(a->hash, sizeof(a->hash));
}

static void auth_deliver(sq_call *c) {
  auth_call *a = (auth_call *)c;
  sq *s = c->s;
  uint64_t rev;
  if (a->res.verdict == PH_AZ_AUTH_OK &&
      az_revision_get(&s->rev, &rev) != PH_OK)
    a->res.verdict = PH_AZ_AUTH_UNAVAILABLE;
  if (a->res.verdict == PH_AZ_AUTH_UNAVAILABLE) {
    memset(&a->res.token, 0, sizeof(a->res.token));
    a->res.ttl_ms = 0;
    a->res.revision = 0;
  }
  s->api->inc(s->m_calls[SQ_CALL_AUTHENTICATE], 1);
  a->cb(a->arg, &a->res);
}

static void auth_destroy(sq_call *c) {
  auth_call *a = (auth_call *)c;
  az_wipe(a->hash, sizeof(a->hash));
  free(a);
}

int64_t sq_authenticate(void *self, const char *bearer, size_t len,
                        ph_az_auth_cb cb, void *arg) {
  sq *s = self;
  if (!bearer || !cb)
    return PH_EINVAL;
  auth_call *a = sq_call_new(s, sizeof(*a), auth_work, auth_deliver,
                             auth_destroy);
  if (!a)
    return PH_ENOMEM;
  a->cb = cb;
  a->arg = arg;
  a->res.size = sizeof(a->res);
  /* Parsed here: only the id and the hash of the secret are kept. */
  if (len > PH_AZ_BEARER_MAX ||
      az_bearer_parse(bearer, len, a->id, a->hash) < 0) {
    a->res.verdict = PH_AZ_AUTH_DENY;
    a->res.ttl_ms = s->negative_ms;
    sq_call_answer_later(s, &a->c);
    return a->c.id;
  }
  if (!sq_call_take_slot(s, &a->c) || sq_call_submit(s, &a->c) < 0) {
    az_wipe(a->hash, sizeof(a->hash));
    a->res.verdict = PH_AZ_AUTH_UNAVAILABLE;
    sq_call_answer_later(s, &a->c);
  }
  return a->c.id;
}
