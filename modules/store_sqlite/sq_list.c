/* SPDX-License-Identifier: BSD-2-Clause */
/* authz.store lists (authz_store.h) in store_sqlite: one page of one
 * kind, in key order after a cursor, with the kind's filters, read in one
 * read transaction together with the revision it was read at. A page is
 * limit + 1 rows asked, limit kept: the extra row only says "more". No
 * secret or hash is ever selected. */
#include <stdlib.h>
#include <string.h>

#include "store_common/az_validate.h"
#include "store_sqlite.h"

typedef struct list_call {
  sq_call c;
  ph_az_list_cb cb;
  void *arg;
  int kind;
  uint32_t limit;
  const char *after, *user, *agent; /* in arena */
  sq_arena *arena;
  ph_az_record *recs;
  size_t n;
  int more, status;
  uint64_t revision;
} list_call;

/* Parameters: ?1 after (NULL: from the start), ?2 user, ?3 agent (NULL:
 * no filter), ?4 the row count. */
static const char *const list_sql[] = {
    NULL,
    "SELECT " SQ_USER_COLS " FROM users WHERE (?1 IS NULL OR name > ?1) "
    "AND (?2 IS NULL OR owner = ?2) AND ?3 IS NULL ORDER BY name LIMIT ?4",
    "SELECT " SQ_TOKEN_COLS " FROM service_tokens WHERE (?1 IS NULL OR "
    "id > ?1) AND (?2 IS NULL OR user_name = ?2) AND (?3 IS NULL OR "
    "agent = ?3) ORDER BY id LIMIT ?4",
    "SELECT " SQ_AGENT_COLS " FROM agents WHERE (?1 IS NULL OR name > ?1) "
    "AND (?2 IS NULL OR owner = ?2) AND ?3 IS NULL ORDER BY name LIMIT ?4",
    "SELECT " SQ_POLICY_COLS " FROM agent_policies WHERE (?1 IS NULL OR "
    "id > ?1) AND ?2 IS NULL AND (?3 IS NULL OR agent = ?3) ORDER BY id "
    "LIMIT ?4"};

static void list_work(sq_call *c, sqlite3 *db) {
  list_call *l = (list_call *)c;
  l->status = PH_AZ_EUNAVAILABLE;
  if (sq_exec(c, db, "BEGIN") < 0)
    return;
  sqlite3_stmt *st = NULL;
  l->recs = calloc(l->limit, sizeof(*l->recs));
  if (l->recs && sq_read_revision(c, db) == 0 &&
      (st = sq_prepare(c, db, list_sql[l->kind]))) {
    sq_bind_text(st, 1, l->after);
    sq_bind_text(st, 2, l->user);
    sq_bind_text(st, 3, l->agent);
    sqlite3_bind_int64(st, 4, (int64_t)l->limit + 1);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      if (l->n == l->limit) {
        l->more = 1;
        break;
      }
      sq_row_record(l->kind, st, &l->arena, &l->recs[l->n++]);
    }
    if (rc == SQLITE_ROW || rc == SQLITE_DONE)
      l->status = PH_OK;
    else
      c->db_broken |= sq_rc_broken(rc);
    sqlite3_finalize(st);
  }
  sq_exec(c, db, "COMMIT");
  if (l->status == PH_OK && c->rev_what == AZ_REV_READ_OK)
    l->revision = (uint64_t)c->rev_value;
  if (l->status != PH_OK)
    l->n = 0;
}

static void list_deliver(sq_call *c) {
  list_call *l = (list_call *)c;
  ph_az_list_result res = {.size = sizeof(res),
                           .status = l->status,
                           .recs = l->status == PH_OK ? l->recs : NULL,
                           .n = l->status == PH_OK ? l->n : 0,
                           .more = l->status == PH_OK && l->more,
                           .revision = l->revision};
  c->s->api->inc(c->s->m_calls[SQ_CALL_LIST], 1);
  l->cb(l->arg, &res);
}

static void list_destroy(sq_call *c) {
  list_call *l = (list_call *)c;
  sq_arena_free(&l->arena);
  free(l->recs);
  free(l);
}

int64_t sq_list(void *self, const ph_az_list *req, ph_az_list_cb cb,
                void *arg) {
  sq *s = self;
  if (!req || !cb || az_validate_list(req, NULL) != PH_OK)
    return PH_EINVAL;
  list_call *l =
      sq_call_new(s, sizeof(*l), list_work, list_deliver, list_destroy);
  if (!l)
    return PH_ENOMEM;
  l->cb = cb;
  l->arg = arg;
  l->kind = req->kind;
  l->limit = req->limit;
  if ((req->after && !(l->after = sq_arena_str(&l->arena, req->after))) ||
      (req->user && !(l->user = sq_arena_str(&l->arena, req->user))) ||
      (req->agent && !(l->agent = sq_arena_str(&l->arena, req->agent)))) {
    list_destroy(&l->c);
    return PH_ENOMEM;
  }
  sq_call_start(s, &l->c, &l->status, NULL);
  return l->c.id;
}
