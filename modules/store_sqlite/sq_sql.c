/* SPDX-License-Identifier: BSD-2-Clause */
/* Statement helpers for store_sqlite's helper-thread work
 * (store_sqlite.h). Values always travel as bound parameters: no SQL text
 * here or in the callers is ever built from data. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "store_sqlite.h"

#define ARENA_BLOCK 4096

struct sq_arena {
  sq_arena *next;
  size_t used, cap;
  char data[];
};

int sq_rc_broken(int rc) {
  switch (rc & 0xff) {
  case SQLITE_IOERR:
  case SQLITE_CORRUPT:
  case SQLITE_NOTADB:
  case SQLITE_CANTOPEN:
  case SQLITE_READONLY:
  case SQLITE_PERM:
  case SQLITE_FULL:
    return 1;
  default:
    return 0;
  }
}

sqlite3_stmt *sq_prepare(sq_call *c, sqlite3 *db, const char *sql) {
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
  if (rc != SQLITE_OK) {
    c->db_broken |= sq_rc_broken(rc) || rc == SQLITE_ERROR;
    sqlite3_finalize(st);
    return NULL;
  }
  return st;
}

void sq_bind_text(sqlite3_stmt *st, int i, const char *s) {
  if (s)
    sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
  else
    sqlite3_bind_null(st, i);
}

int sq_fail_rc(int rc, const char *taken, int *status, const char **detail) {
  switch (rc & 0xff) {
  case SQLITE_CONSTRAINT:
    if (rc == SQLITE_CONSTRAINT_PRIMARYKEY || rc == SQLITE_CONSTRAINT_UNIQUE) {
      *status = PH_EEXIST;
      *detail = taken;
    } else if (rc == SQLITE_CONSTRAINT_FOREIGNKEY) {
      *status = PH_ENOENT;
      *detail = "a record it refers to does not exist";
    } else {
      *status = PH_EINVAL;
      *detail = "a value the schema refuses";
    }
    break;
  case SQLITE_BUSY:
  case SQLITE_LOCKED:
    *status = PH_AZ_EUNAVAILABLE;
    *detail = "the database is busy";
    break;
  default:
    *status = PH_AZ_EUNAVAILABLE;
    *detail = "the database failed";
  }
  return -1;
}

int sq_exec_fmt(sq_call *c, sqlite3 *db, const char *sql, int64_t now,
                const char *fmt, va_list ap) {
  sqlite3_stmt *st = sq_prepare(c, db, sql);
  if (!st)
    return SQLITE_ERROR;
  for (int i = 0; fmt[i]; i++) {
    if (fmt[i] == 't')
      sq_bind_text(st, i + 1, va_arg(ap, const char *));
    else if (fmt[i] == 'i')
      sqlite3_bind_int64(st, i + 1, va_arg(ap, int64_t));
    else
      sqlite3_bind_int64(st, i + 1, now);
  }
  int rc = sqlite3_step(st);
  while (rc == SQLITE_ROW) /* statements without rows: none expected */
    rc = sqlite3_step(st);
  sqlite3_finalize(st);
  c->db_broken |= sq_rc_broken(rc);
  return rc;
}

int sq_exec(sq_call *c, sqlite3 *db, const char *sql) {
  int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
  if (rc != SQLITE_OK) {
    c->db_broken |= sq_rc_broken(rc);
    return -1;
  }
  return 0;
}

int sq_rev_read(sq_call *c, sqlite3 *db, const char *sql, az_rev_read *what,
                int64_t *value) {
  *what = AZ_REV_READ_FAILED;
  sqlite3_stmt *st = sq_prepare(c, db, sql);
  if (!st)
    return -1;
  int rc = sqlite3_step(st);
  int ret = 0;
  if (rc == SQLITE_ROW) {
    int64_t v = sqlite3_column_int64(st, 0);
    /* An overflowed revision + 1 becomes a REAL in SQLite. */
    if (sqlite3_column_type(st, 0) == SQLITE_INTEGER && v > 0) {
      *what = AZ_REV_READ_OK;
      *value = v;
    } else {
      *what = AZ_REV_READ_BAD;
    }
  } else if (rc == SQLITE_DONE) {
    *what = AZ_REV_READ_MISSING;
  } else {
    c->db_broken |= sq_rc_broken(rc);
    ret = -1;
  }
  sqlite3_finalize(st);
  return ret;
}

int sq_rev_bumped(sq_call *c, sqlite3 *db, const char *sql, int64_t before,
                  az_rev_read *what, int64_t *value, const char **detail) {
  if (sqlite3_changes(db) != 1) {
    *what = AZ_REV_READ_MISSING;
    *detail = "the revision row is missing";
    return -1;
  }
  if (sq_rev_read(c, db, sql, what, value) < 0) {
    *detail = "the database failed";
    return -1;
  }
  if (*what != AZ_REV_READ_OK || *value - 1 != before) {
    *what = AZ_REV_READ_BAD;
    *detail = "the revision does not fit";
    return -1;
  }
  return 0;
}

int sq_read_revision(sq_call *c, sqlite3 *db) {
  return sq_rev_read(c, db, SQ_AZ_REV_SELECT, &c->rev_what, &c->rev_value);
}

static char *arena_alloc(sq_arena **a, size_t n) {
  if (!*a || (*a)->cap - (*a)->used < n) {
    size_t cap = n > ARENA_BLOCK ? n : ARENA_BLOCK;
    sq_arena *b = malloc(sizeof(*b) + cap);
    if (!b)
      return NULL;
    b->next = *a;
    b->used = 0;
    b->cap = cap;
    *a = b;
  }
  char *p = (*a)->data + (*a)->used;
  (*a)->used += n;
  return p;
}

const char *sq_arena_str(sq_arena **a, const char *s) {
  if (!s)
    return NULL;
  size_t n = strlen(s) + 1;
  char *p = arena_alloc(a, n);
  if (p)
    memcpy(p, s, n);
  return p;
}

const char *sq_arena_col(sq_arena **a, sqlite3_stmt *st, int col) {
  if (sqlite3_column_type(st, col) == SQLITE_NULL)
    return NULL;
  return sq_arena_str(a, (const char *)sqlite3_column_text(st, col));
}

void sq_arena_free(sq_arena **a) {
  while (*a) {
    sq_arena *n = (*a)->next;
    free(*a);
    *a = n;
  }
}

/* ---- a write's transaction ----------------------------------------- */

int sq_tx_fail(sq_tx *x, int status, const char *detail) {
  x->status = status;
  x->detail = detail;
  return -1;
}

int sq_tx_fail_rc(sq_tx *x, int rc) {
  return sq_fail_rc(rc, x->taken, &x->status, &x->detail);
}

int sq_tx_exec(sq_tx *x, sqlite3 *db, const char *sql, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = sq_exec_fmt(&x->c, db, sql, x->now, fmt, ap);
  va_end(ap);
  return rc == SQLITE_DONE ? 0 : sq_tx_fail_rc(x, rc);
}

/* The revision step: one row changed, and the new value still an
 * integer that fits (SQLite turns an overflowing sum into a REAL). */
int sq_tx_bump(sq_tx *x, sqlite3 *db) {
  az_rev_read *what = x->pool ? &x->c.pool_what : &x->c.rev_what;
  int64_t *value = x->pool ? &x->c.pool_value : &x->c.rev_value;
  int64_t before = *value;
  /* The pool's times are milliseconds, the authorization's seconds. */
  if (sq_tx_exec(x, db,
                 x->pool ? "UPDATE pool_revision SET revision = revision + 1, "
                           "updated_at = strftime('%Y-%m-%dT%H:%M:%SZ', ?1 / "
                           "1000, 'unixepoch') WHERE id = 1"
                         : "UPDATE authorization_revision SET revision = "
                           "revision + 1, updated_at = strftime('%Y-%m-%dT%H:"
                           "%M:%SZ', ?1, 'unixepoch') WHERE id = 1",
                 "n") < 0)
    return -1;
  if (sq_rev_bumped(&x->c, db, x->pool ? SQ_POOL_REV_SELECT : SQ_AZ_REV_SELECT,
                    before, what, value, &x->detail) < 0)
    return sq_tx_fail(x, PH_AZ_EUNAVAILABLE, x->detail);
  return 0;
}

int sq_tx_run(sq_tx *x, sqlite3 *db, int (*change)(sq_tx *, sqlite3 *)) {
  sq_call *c = &x->c;
  az_rev_read *what = x->pool ? &c->pool_what : &c->rev_what;
  int64_t *value = x->pool ? &c->pool_value : &c->rev_value;
  sq_tx_fail(x, PH_AZ_EUNAVAILABLE, "the database failed");
  int rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
  if (rc != SQLITE_OK) {
    c->db_broken |= sq_rc_broken(rc);
    return sq_tx_fail_rc(x, rc);
  }
  int ok = (x->pool ? sq_read_pool_revision(c, db) : sq_read_revision(c, db)) ==
           0;
  az_rev_read what0 = *what;
  int64_t value0 = *value;
  if (ok && *what != AZ_REV_READ_OK)
    ok = sq_tx_fail(x, PH_AZ_EUNAVAILABLE,
                    *what == AZ_REV_READ_MISSING
                        ? (x->pool ? "the pool revision row is missing"
                                   : "the revision row is missing")
                        : (x->pool ? "the pool revision does not fit"
                                   : "the revision does not fit")) == 0;
  if (ok) {
    x->status = PH_OK;
    x->detail = NULL;
    ok = change(x, db) == 0;
  }
  if (ok) {
    rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
      c->db_broken |= sq_rc_broken(rc);
      sq_tx_fail_rc(x, rc);
      ok = 0;
    }
  }
  if (ok)
    return 0;
  if (!sqlite3_get_autocommit(db))
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
  if (x->status == PH_OK)
    sq_tx_fail(x, PH_AZ_EUNAVAILABLE, "the database failed");
  /* Rolled back: the loop learns the revision as it was before, unless
   * the revision itself was the fault (missing, not fitting). A value
   * bumped and then rolled back must never be taken for current. */
  if (*what == AZ_REV_READ_OK) {
    *what = what0;
    *value = value0;
  }
  return -1;
}
