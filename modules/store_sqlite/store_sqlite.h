/* SPDX-License-Identifier: BSD-2-Clause */
/* store_sqlite's inside: the module state, the calls in flight, and the
 * parts that make them (sq_call.c: the machinery every call shares;
 * sq_access.c: "access" and authenticate; sq_write.c: writes; sq_list.c:
 * lists; sq_sql.c: statement helpers). Threads: the state is the loop
 * thread's; a call's work function runs on a helper thread and touches
 * only its own call and a pooled connection. */
#ifndef PH_STORE_SQLITE_H
#define PH_STORE_SQLITE_H

#include <stdarg.h>
#include <stdint.h>

#include <sqlite3.h>

#include <proxyhost/access.h>
#include <proxyhost/authz_store.h>
#include <proxyhost/host.h>
#include <proxyhost/pool_store.h>

#include "sq_pool.h"
#include "store_common/az_revision.h"
#include "store_common/az_row.h"
#include "store_common/pool_revision.h"

typedef struct sq sq;
/* The label values of proxyhost_store_sqlite_calls_total{call}. */
enum sq_call_kind {
  SQ_CALL_ACCESS = 0,
  SQ_CALL_AUTHENTICATE,
  SQ_CALL_WRITE,
  SQ_CALL_LIST,
  SQ_CALL_POOL_SNAPSHOT, /* pool.store (sq_proxies*.c) */
  SQ_CALL_POOL_WRITE,
  SQ_CALL_POOL_LIST,
  SQ_CALL_KINDS
};
typedef struct sq_call sq_call;

/* One call in flight. Each kind embeds it first. */
struct sq_call {
  sq *s;
  int64_t id;      /* returned to the caller */
  int64_t job;     /* the helper job, > 0 while submitted */
  int cancelled;   /* the caller gave up: no callback */
  int holds_slot;  /* counts against max_pending */
  /* Helper thread: the statements, with a pooled connection. */
  void (*work)(sq_call *c, sqlite3 *db);
  /* Loop thread: the caller's callback (not called when cancelled). */
  void (*deliver)(sq_call *c);
  void (*destroy)(sq_call *c); /* frees the call (wipes secrets) */
  /* Filled by work: the database could not be used (no connection). */
  int no_db;
  int db_broken; /* an I/O or corruption error: close the connection */
  /* The revision the work's transaction saw. */
  az_rev_read rev_what;
  int64_t rev_value;
  uint64_t rev_floor; /* az_revision_floor at submit */
  uint32_t positive_ms, negative_ms; /* the TTLs when the call came */
  /* The pool revision the work read (pool_rev_set), for s->prev. */
  int pool_rev_set;
  az_rev_read pool_what;
  int64_t pool_value;
  uint64_t pool_floor; /* s->prev.value at submit */
  sq_call *next;      /* in s->live or s->ready */
};

struct sq {
  ph_ctx *ctx;
  const ph_api *api;
  sq_pool *pool;
  az_revision rev;
  pool_revision prev; /* pool.store's revision() */
  uint32_t positive_ms, negative_ms;
  int64_t recheck_ms;
  int64_t max_pending, pending;
  int64_t next_id;
  int started, stopping;
  sq_call *live;  /* submitted to a helper thread */
  sq_call *ready; /* answered without the database, for the next turn */
  sq_call *batch; /* being delivered now */
  ph_defer *ready_turn; /* hands ready out on the next loop turn */
  ph_timer *poll_timer;
  int poll_in_flight;
  ph_series *m_calls[SQ_CALL_KINDS]; /* sq_call_kind */
};

extern const ph_access_v1 sq_access_vt;
extern const ph_az_store_v1 sq_store_vt;
extern const ph_pool_store_v1 sq_pool_vt;

/* ---- sq_call.c (loop thread) --------------------------------------- */

/* A new call of size bytes (zeroed) with its functions; NULL on ENOMEM. */
void *sq_call_new(sq *s, size_t size, void (*work)(sq_call *, sqlite3 *),
                  void (*deliver)(sq_call *), void (*destroy)(sq_call *));
/* A page of a list (sq_list.c's authz.store lists, sq_proxies.c's
 * pool.store lists): the call, the caller's argument, the page asked
 * (kind, limit) and what came back (status, n rows kept, more, the
 * revision read with them). Each list's call embeds it first and keeps
 * its own typed callback. */
typedef struct sq_page {
  sq_call c;
  void *arg;
  int kind, status, more;
  uint32_t limit;
  size_t n;
  uint64_t revision;
} sq_page;
/* A new page call (as sq_call_new) for kind and limit, with arg. */
void *sq_page_new(sq *s, size_t size, int kind, uint32_t limit, void *arg,
                  void (*work)(sq_call *, sqlite3 *),
                  void (*deliver)(sq_call *), void (*destroy)(sq_call *));
/* After the work read up to limit + 1 rows into p->n: keeps limit, and
 * more says the extra one was there. */
void sq_page_cut(sq_page *p);
/* Whether another call fits under max_pending (then takes the slot). */
int sq_call_take_slot(sq *s, sq_call *c);
/* Sends c to a helper thread. 0, or -1 when the host's job queue is full
 * (the caller then answers c with sq_call_answer_later). */
int sq_call_submit(sq *s, sq_call *c);
/* The deferred call that delivers what sq_call_answer_later queued. */
void sq_ready_tick(ph_defer *t, void *arg);
/* Queues c to be delivered on a later loop iteration, without work. */
void sq_call_answer_later(sq *s, sq_call *c);
/* The cancel of both services. PH_OK or PH_ENOENT. */
int sq_call_cancel(sq *s, int64_t id);
/* Takes a slot and submits c; when either is refused, *status (PH_EFULL,
 * PH_AZ_EUNAVAILABLE) and *detail (when not NULL; a fixed text) are set
 * and c is answered later. */
void sq_call_start(sq *s, sq_call *c, int *status, const char **detail);
/* destroy: drops every call still queued, without a callback. */
void sq_call_drop_all(sq *s);
/* Arms the poll; sq_poll_now submits a revision read now. */
void sq_poll_now(sq *s);

/* ---- sq_sql.c (helper thread) -------------------------------------- */

/* Prepares sql (NULL on error, db_broken set for I/O errors). */
sqlite3_stmt *sq_prepare(sq_call *c, sqlite3 *db, const char *sql);
/* Binds text, or NULL for a NULL string. */
void sq_bind_text(sqlite3_stmt *st, int i, const char *s);
/* Whether rc is an I/O-level failure after which the connection should be
 * closed rather than reused. */
int sq_rc_broken(int rc);
/* Reads a revision row (sql: SELECT revision FROM <table> WHERE id = 1)
 * into *what and *value (set only when OK: a positive integer; an
 * overflowed sum, a REAL, is BAD). -1 when the statement failed. */
int sq_rev_read(sq_call *c, sqlite3 *db, const char *sql, az_rev_read *what,
                int64_t *value);
/* After a write's UPDATE of its revision row (revision + 1): exactly one
 * row changed and the row re-read with sql is the value before + 1. 0, or
 * -1 with *what MISSING, FAILED or BAD and *detail (a fixed text; the
 * status is PH_AZ_EUNAVAILABLE). */
int sq_rev_bumped(sq_call *c, sqlite3 *db, const char *sql, int64_t before,
                  az_rev_read *what, int64_t *value, const char **detail);
/* Reads authorization_revision id = 1 into c->rev_what / rev_value.
 * -1 when the statement failed. */
int sq_read_revision(sq_call *c, sqlite3 *db);
#define SQ_AZ_REV_SELECT                                                    \
  "SELECT revision FROM authorization_revision WHERE id = 1"
#define SQ_POOL_REV_SELECT "SELECT revision FROM pool_revision WHERE id = 1"
/* The writes' (sq_write.c, sq_proxies_write.c) reading of a failed
 * statement's SQLite code rc, into *status and *detail: a unique or
 * primary key PH_EEXIST with `taken` (the writer names what is taken), a
 * foreign key PH_ENOENT, another constraint PH_EINVAL, busy or anything
 * else PH_AZ_EUNAVAILABLE. The details are fixed strings. Always -1, so a
 * writer can `return` it. */
int sq_fail_rc(int rc, const char *taken, int *status, const char **detail);
/* Prepares sql, binds the arguments in ap per fmt ('t' text, 'i' int64,
 * 'n' the value now instead, no argument) and runs it to its end,
 * finalized. The SQLite code: SQLITE_DONE when it ran, SQLITE_ERROR when
 * it did not prepare (db_broken set for I/O errors). */
int sq_exec_fmt(sq_call *c, sqlite3 *db, const char *sql, int64_t now,
                const char *fmt, va_list ap);
/* Runs one statement without results (BEGIN, COMMIT, ROLLBACK). */
int sq_exec(sq_call *c, sqlite3 *db, const char *sql);
/* ---- a write's transaction (sq_sql.c; sq_write.c, sq_proxies_write.c) */

/* The start of a write call: the call, then what the transaction
 * helpers read and set. */
typedef struct sq_tx {
  sq_call c;
  int status;         /* PH_OK, or the failure */
  const char *detail; /* a fixed text */
  int64_t now;        /* the value of the 'n' parameters */
  const char *taken;  /* the detail of a taken unique key (sq_fail_rc) */
  int pool;           /* 1: pool_revision (c.pool_*); 0: authorization */
} sq_tx;
/* Sets status and detail; always -1. */
int sq_tx_fail(sq_tx *x, int status, const char *detail);
/* sq_fail_rc into x; always -1. */
int sq_tx_fail_rc(sq_tx *x, int rc);
/* sq_exec_fmt with x->now: 0, or -1 with the status set. */
int sq_tx_exec(sq_tx *x, sqlite3 *db, const char *sql, const char *fmt, ...);
/* Raises the revision by one (updated_at the write's time) and checks it
 * (sq_rev_bumped): 0, or -1 with the status set. */
int sq_tx_bump(sq_tx *x, sqlite3 *db);
/* The whole write: BEGIN IMMEDIATE, the revision read (it must be
 * there and fit), change(x, db) (the change, sq_tx_bump, the read back),
 * COMMIT. 0; or -1 after a rollback, with the status set (the database
 * failed when nothing said otherwise) and the revision as read before
 * (unless the revision itself was the fault). Helper thread. */
int sq_tx_run(sq_tx *x, sqlite3 *db, int (*change)(sq_tx *, sqlite3 *));

/* A copy of a column's text into a (malloc) arena (sq_arena). */
typedef struct sq_arena sq_arena;
const char *sq_arena_col(sq_arena **a, sqlite3_stmt *st, int col);
const char *sq_arena_str(sq_arena **a, const char *s);
void sq_arena_free(sq_arena **a);

/* ---- sq_rows.c (helper thread): rows as records -------------------- */

#define SQ_USER_COLS AZ_USER_COLS /* store_common/az_row.h */
#define SQ_TOKEN_COLS AZ_TOKEN_COLS
#define SQ_AGENT_COLS AZ_AGENT_COLS
#define SQ_POLICY_COLS AZ_POLICY_COLS
/* The row st stands on (selected with the kind's SQ_*_COLS) into rec,
 * strings copied into the arena. */
void sq_row_record(int kind, sqlite3_stmt *st, sq_arena **a,
                   ph_az_record *rec);
/* The table and key column of a kind. */
const char *sq_table(int kind);
const char *sq_key_col(int kind);
const char *sq_cols(int kind);

/* ---- sq_proxies.c, sq_proxies_write.c: pool.store ------------------ */

/* Reads pool_revision id = 1 into c->pool_* (pool_rev_set). -1 when the
 * statement failed. Helper thread. */
int sq_read_pool_revision(sq_call *c, sqlite3 *db);
/* Rows of the v10 tables (helper thread), in key order: proxies after
 * `after` (NULL: all) or only `key`, with their groups and their
 * credential's version; routes from position `from` or only `key`;
 * credential references after `after` or only `key`. At most limit rows
 * (*rows malloc'd, the caller frees). 0, or -1 (the database failed, or
 * no memory: *nomem). */
int sq_pool_proxies(sq_call *c, sqlite3 *db, const char *after,
                    const char *key, uint32_t limit, ph_pool_proxy_row **rows,
                    size_t *n, int *nomem);
int sq_pool_routes(sq_call *c, sqlite3 *db, int64_t from, const char *key,
                   uint32_t limit, ph_pool_route_row **rows, size_t *n,
                   int *nomem);
int sq_pool_credentials(sq_call *c, sqlite3 *db, const char *after,
                        const char *key, uint32_t limit,
                        ph_pool_credential_ref **rows, size_t *n,
                        int *nomem);
int64_t sq_pool_snapshot(void *self, ph_pool_snapshot_cb cb, void *arg);
int64_t sq_pool_list(void *self, const ph_pool_list *l, ph_pool_list_cb cb,
                     void *arg);
int64_t sq_pool_write(void *self, const ph_pool_write *w,
                      ph_pool_write_cb cb, void *arg);

/* sq_access.c */
int64_t sq_authenticate(void *self, const char *bearer, size_t len,
                        ph_az_auth_cb cb, void *arg);
/* sq_write.c, sq_list.c */
int64_t sq_write(void *self, const ph_az_write *w, ph_az_write_cb cb,
                 void *arg);
int64_t sq_list(void *self, const ph_az_list *l, ph_az_list_cb cb,
                void *arg);

#endif
