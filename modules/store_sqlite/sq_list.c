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
  sq_page p; /* first */
  ph_az_list_cb cb;
  const char *after, *user, *agent; /* in arena */
  sq_arena *arena;
  ph_az_record *recs;
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
  sq_page *p = &l->p;
  p->status = PH_AZ_EUNAVAILABLE;
  if (sq_exec(c, db, "BEGIN") < 0)
    return;
  sqlite3_stmt *st = NULL;
  uint32_t want = p->limit + 1; /* one more says "more" */
  l->recs = calloc(want, sizeof(*l->recs));
  if (l->recs && sq_read_revision(c, db) == 0 &&
      (st = sq_prepare(c, db, list_sql[p->kind]))) {
    sq_bind_text(st, 1, l->after);
    sq_bind_text(st, 2, l->user);
    sq_bind_text(st, 3, l->agent);
    sqlite3_bind_int64(st, 4, (int64_t)want);
    int rc = SQLITE_DONE;
    while (p->n < want && (rc = sqlite3_step(st)) == SQLITE_ROW)
      sq_row_record(p->kind, st, &l->arena, &l->recs[p->n++]);
    if (p->n == want || rc == SQLITE_DONE)
      p->status = PH_OK;
    else
      c->db_broken |= sq_rc_broken(rc);
    sqlite3_finalize(st);
  }
  sq_exec(c, db, "COMMIT");
  sq_page_cut(p);
  if (p->status == PH_OK && c->rev_what == AZ_REV_READ_OK)
    p->revision = (uint64_t)c->rev_value;
  if (p->status != PH_OK)
    p->n = 0;
}

static void list_deliver(sq_call *c) {
  list_call *l = (list_call *)c;
  const sq_page *p = &l->p;
  ph_az_list_result res = {.size = sizeof(res),
                           .status = p->status,
                           .recs = p->status == PH_OK ? l->recs : NULL,
                           .n = p->status == PH_OK ? p->n : 0,
                           .more = p->status == PH_OK && p->more,
                           .revision = p->revision};
  c->s->api->inc(c->s->m_calls[SQ_CALL_LIST], 1);
  l->cb(p->arg, &res);
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
  list_call *l = sq_page_new(s, sizeof(*l), req->kind, req->limit, arg,
                             list_work, list_deliver, list_destroy);
  if (!l)
    return PH_ENOMEM;
  l->cb = cb;
  if ((req->after && !(l->after = sq_arena_str(&l->arena, req->after))) ||
      (req->user && !(l->user = sq_arena_str(&l->arena, req->user))) ||
      (req->agent && !(l->agent = sq_arena_str(&l->arena, req->agent)))) {
    list_destroy(&l->p.c);
    return PH_ENOMEM;
  }
  sq_call_start(s, &l->p.c, &l->p.status, NULL);
  return l->p.c.id;
}
