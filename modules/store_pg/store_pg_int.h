/* SPDX-License-Identifier: BSD-2-Clause */
/* store_pg's insides: the module state and the request plumbing shared by
 * the access check (pg_access.c), authentication (pg_authn.c), lists
 * (pg_list.c), writes (pg_write.c) and the revision poll (pg_poll.c). */
#ifndef PH_STORE_PG_INT_H
#define PH_STORE_PG_INT_H

#include <stdint.h>

#include <proxyhost/access.h>
#include <proxyhost/authz_store.h>
#include <proxyhost/module.h>
#include <proxyhost/pool_store.h>

#include "contracts/tm_presence.h"
#include "store_common/az_revision.h"
#include "lib/ilist.h"
#include "store_common/pool_revision.h"
#include "pg_pool.h"
#include "pg_sql.h"

typedef struct spg spg;
typedef struct sreq sreq;

/* One call of a caller in flight: the head of each kind's own struct. */
struct sreq {
  spg *s;
  int64_t id;    /* what the caller got */
  int64_t task;  /* the pool task, > 0 once submitted */
  int cancelled; /* the caller cancelled while the task runs */
  int later;     /* in the answer queue (answered from the timer) */
  ilist_node live;   /* in s->live */
  ilist_node lnode;  /* in s->later, the answer queue */
  /* Calls the caller's callback with what the request holds (not when
   * cancelled). Then the request is freed with free_fn. */
  void (*answer)(sreq *r);
  void (*free_fn)(sreq *r);
};

struct spg {
  ph_ctx *ctx;
  const ph_api *api;
  pg_pool *pool;
  pg_pool_metrics pool_metrics;
  az_revision rev;
  pool_revision prev; /* pool.store's revision() (pg_proxies.c) */
  /* configuration, read at init */
  uint32_t positive_ms, negative_ms;
  int64_t poll_ms;
  int pool_size, max_pending;
  int64_t query_timeout_ms, reconnect_min_ms, reconnect_max_ms;
  int migrate_auto;
  char *dsn; /* wiped and freed at destroy */
  /* requests */
  int64_t next_id;
  int n_tasks; /* calls holding a pool task: at most max_pending */
  ilist live;  /* every request in flight (req_add) */
  ilist later; /* answers waiting for the next turn */
  ph_defer *lturn; /* answers later: on the next loop turn */
  /* the revision poll */
  ph_timer *poll_timer;
  ph_timer *stale_timer; /* the end of the stale window (pg_poll.c) */
  int64_t poll_task;  /* > 0 while a poll runs */
  az_rev_read poll_what; /* what the running poll read */
  int64_t poll_value;
  uint64_t poll_floor; /* az_revision_floor when it was sent */
  az_rev_read poll_pool_what; /* the pool revision the poll read */
  int64_t poll_pool_value;
  uint64_t poll_pool_floor;
  int started, stopping;
  /* tm.presence's view (pg_presence_view.c) */
  struct spg_tm *tm;
  int64_t presence_poll_ms;
  int64_t presence_max_nodes, presence_max_agents; /* the view's bounds */
};

/* store_pg_req.c */
void req_add(spg *s, sreq *r);        /* id, live list */
void req_finish(sreq *r);             /* answer (unless cancelled), free */
void req_later(sreq *r);              /* answer from the timer */
int req_cancel(spg *s, int64_t id);   /* PH_OK or PH_ENOENT */
void req_drop_all(spg *s);            /* destroy: free, no calls */
int req_timer_init(spg *s);
/* Submits r's task; on PH_OK r->task is set. Else the pool's status. */
int req_submit(sreq *r, const pg_task_ops *ops);

/* store_pg.c: ends a pending stop once no call is in flight. */
void spg_maybe_stopped(spg *s);

/* pg_poll.c */
int poll_init(spg *s);
void poll_start(spg *s);
void poll_stop(spg *s);
/* A local write committed at revision value (TM-P1-29). */
void poll_local_commit(spg *s, int64_t value);
/* The revision row as another read saw it (an access check's first
 * statement), sent when az_revision_floor was floor: handed to
 * az_revision like a poll's read (not counted as a poll). A failed read
 * is ignored (the polls judge the database). */
void poll_saw(spg *s, az_rev_read what, int64_t value, uint64_t floor);
/* stale_allow changed (reload): the stale timer follows. */
void poll_stale_changed(spg *s);

/* Helpers for results (pg_result.c) */
/* The text of row r column c, or NULL for SQL NULL. */
const char *res_str(const PGresult *res, int r, int c);
int64_t res_int(const PGresult *res, int r, int c);
/* The SQLSTATE of an error result ("" when none). */
const char *res_state(const PGresult *res);
/* Parses a revision column: an az_rev_read and *value. */
az_rev_read res_revision(const PGresult *res, int64_t *value);

/* authz.store's calls (pg_authn.c, pg_write.c, pg_list.c). */
int64_t spg_authenticate(void *self, const char *bearer, size_t len,
                         ph_az_auth_cb cb, void *arg);
int64_t spg_write(void *self, const ph_az_write *w, ph_az_write_cb cb,
                  void *arg);
int64_t spg_list(void *self, const ph_az_list *l, ph_az_list_cb cb,
                 void *arg);

/* pool.store's calls (pg_proxies.c). */
int64_t spg_pool_snapshot(void *self, ph_pool_snapshot_cb cb, void *arg);
int64_t spg_pool_list(void *self, const ph_pool_list *l, ph_pool_list_cb cb,
                      void *arg);
int64_t spg_pool_write(void *self, const ph_pool_write *w,
                       ph_pool_write_cb cb, void *arg);

/* The services. */
extern const ph_access_v1 spg_access_vt;
extern const ph_az_store_v1 spg_store_vt;
extern const ph_pool_store_v1 spg_pool_vt;

/* tm.presence (modules/contracts/tm_presence.h): the writes
 * (pg_presence.c) and the view (pg_presence_view.c). */
/* Init: the view's state (nothing connects yet). PH_OK or PH_ENOMEM. */
int tm_view_init(spg *s);
/* Stop: the LISTEN connection closed, the poll stopped; a read in flight
 * ends without a re-read. */
void tm_view_stop(spg *s);
/* Destroy. NULL state ignored. */
void tm_view_free(spg *s);
/* The contract's view() and watch(). The first of them after start
 * starts the view: the LISTEN connection and the safety-net poll (a
 * store no one asks for presence costs no connection). */
int tm_view_get(void *self, tm_presence_view *out);
void tm_view_watch(void *self, tm_presence_watch_cb cb, void *arg);

extern const tm_presence_v1 spg_presence_vt;

#endif
