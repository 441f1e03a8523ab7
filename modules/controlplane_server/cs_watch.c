/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * WatchSnapshots (docs/api/controlplane.md#watchsnapshots). Per stream a
 * round: the worker's ownership (owned(): a replaced session ends the
 * stream FAILED_PRECONDITION), the pool's rows (cs_pool), the stream's
 * schedule (cp_watch_next); to send, next_version, the build as a host
 * job (credentials from secrets_dir through cp_secret_read, wiped after),
 * issue(HMAC(reference_key, checksum)) and only then the send. Rounds
 * repeat every watch_poll_interval; the stream ends OK when its last
 * snapshot's valid_until arrives without a newer one. A worker's session
 * has one stream: once Redis confirms a new stream's session, the older
 * streams of that session end ABORTED (issue 22 item 11).
 *
 * Deltas (CP-1-2, CP-3-15): the stream keeps the last snapshot it sent;
 * once the worker acknowledged exactly that one as accepted
 * (cs_watch_acked), the next is sent as a SnapshotDelta on it when the
 * delta says it (cp_snapshot_diff: same identity, credentials unchanged)
 * in fewer bytes than the full snapshot. Anything else (no ACK yet, a
 * NACK, a new stream) gets a full snapshot, so a delta's base is always a
 * version the worker holds; a worker that still cannot apply it reopens
 * the stream for a full one (CP-3-16).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "cp_secrets.h"
#include "cp_common/snapshot/cp_snapshot.h"
#include "cp_watch_plan.h"
#include "cs.h"
#include "cs_health.h"
#include "cs_status.h"

#define api cs_api

struct cs_watch {
  cs *m;
  ilist_node node; /* in m->watches */
  cp_grpc_call *call;      /* NULL once ended or cancelled */
  int64_t start_ms;
  char worker[PH_POOL_ID_MAX + 1], session[PH_POOL_ID_MAX + 1];
  char zone[PH_POOL_ID_MAX + 1]; /* the session's, from owned() (status) */
  cp_watch_state ws;
  ph_timer *timer;
  int64_t auth_call, job;
  int dead; /* the call is gone; free once the job is back */
  int claimed; /* Redis said its session is current: the worker's stream */
  int shared_lease; /* the worker reads the shared lease form (issue 26) */
  /* what moved since the last snapshot sent (the "snapshot sent" debug
   * line), and what the delta carried */
  int moved_revision, moved_epoch, moved_owned, moved_lease;
  uint32_t upserted, removed;
  /* the round's inputs */
  uint64_t epoch, owned_digest, lease_digest, version;
  cp_owned *owned;
  char (*owned_ids)[PH_POOL_ID_MAX + 1];
  size_t n_owned;
  cs_pool *pool;
  /* the last snapshot sent (credentials included: only in memory, wiped
   * by cp_snapshot_free) and whether the worker accepted it */
  cp_snapshot *last;
  int last_acked;
  /* the round's delta base: last's message when acknowledged (read by
   * the job; last is not freed while a job runs) */
  const Controlplane__V1__WorkerSnapshot *delta_base;
  /* the build's result (job thread writes, loop reads after done) */
  cp_snapshot *built;
  int is_delta;
  int64_t build_now_ms;
  int build_ok;
  double build_seconds;
  /* What the build withheld for a credential it could not read (issue 23
   * item 6): the proxies (stats.withheld) and why, per secret_ref. */
  cp_build_stats stats;
  struct {
    char ref[PH_POOL_SECRET_REF_MAX + 1];
    const char *why; /* cp_secret_read's static reason */
  } unread[CP_BUILD_WITHHELD_LIST];
  uint32_t n_unread;
  uint8_t checksum[32];
  int64_t valid_until_ms;
  int64_t refresh_bound_ms; /* min(valid_until, earliest usable_until) */
  int lease_bound;          /* that bound came from the leases */
  uint8_t *out;
  size_t out_len;
  /* the last accepted runtime report (cs_watch_reported): status panels */
  int64_t report_ms;
  cs_count *counts;
  size_t n_counts;
};

static void round_start(cs_watch *w);

static void drop_round(cs_watch *w) {
  free(w->owned);
  free(w->owned_ids);
  w->owned = NULL;
  w->owned_ids = NULL;
  w->n_owned = 0;
  cs_pool_unref(w->pool);
  w->pool = NULL;
  cp_snapshot_free(w->built);
  w->built = NULL;
  w->delta_base = NULL;
  if (w->out) {
    OPENSSL_cleanse(w->out, w->out_len);
    free(w->out);
  }
  w->out = NULL;
  w->out_len = 0;
}

static void w_free(cs_watch *w) {
  drop_round(w);
  cp_snapshot_free(w->last);
  free(w->counts);
  if (w->timer)
    api->timer_free(w->timer);
  if (ilist_of(&w->node)) {
    ilist_remove(&w->node);
    api->gauge_add(w->m->m_streams, -1);
  }
  free(w);
}

/* Cancels what is pending; frees w unless the job still runs. */
static void w_abandon(cs_watch *w) {
  cs *m = w->m;
  w->dead = 1;
  w->call = NULL;
  cs_auth_cancel(m, &w->auth_call);
  cs_pool_forget(m, w);
  int64_t job = w->job;
  if (job > 0) {
    /* PH_OK: done ran already (and freed w); PH_EBUSY: its done frees */
    api->job_cancel(m->ctx, job);
    return;
  }
  w_free(w);
}

static void w_end(cs_watch *w, int status, const char *why) {
  cs_finish(w->m, w->call, CS_M_WATCH, w->start_ms, status, why, NULL, 0);
  w->call = NULL;
  w_free(w);
}

static void w_cancel(void *arg, cp_grpc_call *call) {
  cs_watch *w = arg;
  (void)call;
  api->inc(w->m->m_rpcs[CS_M_WATCH][CP_GRPC_CANCELLED], 1);
  w_abandon(w);
}

static void schedule(cs_watch *w, int64_t at_ms) {
  int64_t now = wall_ms();
  int64_t after = w->m->conf.watch_poll_ms;
  if (at_ms >= 0 && at_ms - now < after)
    after = at_ms > now ? at_ms - now : 1; /* (0, 0) would stop it */
  api->timer_set(w->timer, (uint64_t)after, 0);
}

/* The inputs are unavailable: the first snapshot cannot go out (the
 * stream fails UNAVAILABLE); later the stream waits while its last
 * snapshot is valid and ends at its valid_until. */
static void unavailable(cs_watch *w) {
  drop_round(w);
  if (!w->ws.sent) {
    w_end(w, CP_GRPC_UNAVAILABLE, "the authority or the store did not answer");
    return;
  }
  if (wall_ms() >= w->ws.last_valid_until_ms) {
    w_end(w, CP_GRPC_OK, NULL);
    return;
  }
  schedule(w, w->ws.last_valid_until_ms);
}

static void on_tick(ph_timer *t, void *arg) {
  (void)t;
  round_start(arg);
}

static void sent(void *arg, cp_grpc_call *call) {
  cs_watch *w = arg;
  (void)call;
  w->ws.in_flight = 0;
  w->ws.sent = 1;
  w->ws.last_sent_ms = w->build_now_ms;
  w->ws.last_valid_until_ms = w->valid_until_ms;
  w->ws.last_refresh_bound_ms = w->refresh_bound_ms;
  w->ws.last_lease_bound = w->lease_bound;
  w->ws.last.revision = w->pool ? w->pool->revision : 0;
  w->ws.last.epoch = w->epoch;
  w->ws.last.owned_digest = w->owned_digest;
  w->ws.last.lease_digest = w->lease_digest;
  api->inc(w->m->m_sent, 1);
  api->inc(w->m->m_bytes[w->is_delta ? 1 : 0], w->out_len);
  if (w->is_delta)
    api->inc(w->m->m_deltas, 1);
  /* Which input made it, and what it carried (issue 26: decoding what
   * the steady state sends). */
  PH_LOG(api, w->m->ctx, PH_LOG_DEBUG, "snapshot sent",
         PH_STR("worker_id", w->worker),
         PH_INT("snapshot_version", (int64_t)w->version),
         PH_STR("kind", w->is_delta ? "delta" : "full"),
         PH_INT("bytes", (int64_t)w->out_len),
         PH_INT("upserted", w->is_delta ? (int64_t)w->upserted : -1),
         PH_INT("removed", w->is_delta ? (int64_t)w->removed : -1),
         PH_INT("pool_moved", w->moved_revision),
         PH_INT("epoch_moved", w->moved_epoch),
         PH_INT("owned_moved", w->moved_owned),
         PH_INT("lease_moved", w->moved_lease));
  cp_snapshot_free(w->last);
  w->last = w->built; /* the base of the next delta, once acknowledged */
  w->built = NULL;
  w->last_acked = 0;
  drop_round(w);
  schedule(w, -1);
}

/* An authority reply for the stream: counted; a session no longer
 * current ends the stream FAILED_PRECONDITION (1: the caller returns). */
static int stale(cs_watch *w, const cp_auth_reply *rep) {
  w->auth_call = 0;
  cs_note_auth(w->m, rep->result);
  if (rep->result != CP_AUTH_STALE_SESSION)
    return 0;
  w_end(w, CP_GRPC_FAILED_PRECONDITION, "the session is not current");
  return 1;
}

static void issued(void *arg, const cp_auth_reply *rep) {
  cs_watch *w = arg;
  if (stale(w, rep))
    return;
  if (rep->result != CP_AUTH_OK && rep->result != CP_AUTH_REPLAY) {
    w->ws.in_flight = 0;
    unavailable(w);
    return;
  }
  if (cp_grpc_call_send(w->call, w->out, w->out_len, sent, w) != PH_OK) {
    w_end(w, CP_GRPC_INTERNAL, "send failed");
    return;
  }
  /* the layer copied the bytes: wipe ours now */
  OPENSSL_cleanse(w->out, w->out_len);
}

static int resolve(void *ud, const char *ref, uint64_t version,
                   ph_pool_credential *out) {
  cs_watch *w = ud;
  const char *why = NULL;
  if (cp_secret_read(w->m->conf.secrets_dir, ref, version, out, &why) ==
      CP_SECRET_OK)
    return 1;
  if (w->n_unread < CP_BUILD_WITHHELD_LIST) { /* for the log (build_done) */
    snprintf(w->unread[w->n_unread].ref, sizeof(w->unread[0].ref), "%s", ref);
    w->unread[w->n_unread++].why = why;
  }
  return 0;
}

/* Loop: says which proxies the build withheld for a credential it could
 * not read (issue 23 item 6): one line each (rate-limited) naming the
 * proxy, its secret_ref and why (never the file's content), and the
 * count. The admin API shows them unusable (cs_credcheck.c). */
static void report_withheld(cs_watch *w) {
  cs *m = w->m;
  const cp_build_stats *st = &w->stats;
  if (!st->credential_missing)
    return;
  api->inc(m->m_withheld, st->credential_missing);
  for (uint32_t i = 0; i < st->n_withheld; i++) {
    const char *why = "the credential cannot be read";
    for (uint32_t k = 0; k < w->n_unread; k++)
      if (strcmp(w->unread[k].ref, st->withheld[i].secret_ref) == 0 &&
          w->unread[k].why)
        why = w->unread[k].why;
    /* "file": its secret_ref, the file's name in secrets_dir (a key
     * named like "secret" would be redacted by the host's logger). */
    PH_LOG_RL(api, m->ctx, PH_LOG_WARN,
              "proxy withheld from a snapshot: its secret file cannot be read "
              "(secrets_dir/<file>: one username:password line, mode 0600)",
              PH_STR("worker_id", w->worker),
              PH_STR("proxy_id", st->withheld[i].proxy_id),
              PH_STR("file", st->withheld[i].secret_ref),
              PH_STR("reason", why));
  }
}

/* Host job thread: reads only what the round holds (immutable now). */
/* Job thread, after a build: the snapshot's refresh bound (its
 * valid_until, or the earliest usable_until a renewal can move, when
 * sooner; a proxy whose own expires_at sets it just expires) and whether
 * leases set it, so that only a renewal can move it (the plan's
 * refreshable). */
static void refresh_bound(cs_watch *w, const cp_build_stats *st) {
  int64_t bound = w->valid_until_ms;
  if (st->renewable_until_ms > 0 && st->renewable_until_ms < bound)
    bound = st->renewable_until_ms;
  w->refresh_bound_ms = bound;
  w->lease_bound = bound < w->build_now_ms + w->m->conf.snapshot_validity_ms;
}

static void build_work(void *arg) {
  cs_watch *w = arg;
  cs *m = w->m;
  int64_t t0 = api->now_ms(m->ctx);
  cp_build_input in;
  memset(&in, 0, sizeof(in));
  in.cluster_id = m->conf.cluster_id;
  in.worker_id = w->worker;
  in.session_id = w->session;
  in.routes = w->pool->routes;
  in.n_routes = w->pool->n_routes;
  in.proxies = w->pool->proxies;
  in.n_proxies = w->pool->n_proxies;
  in.owned = w->owned;
  in.n_owned = w->n_owned;
  in.resolve = resolve;
  in.resolve_ud = w;
  w->n_unread = 0;
  in.now_ms = w->build_now_ms;
  in.version = w->version;
  in.ownership_epoch = w->epoch;
  in.allocation_safety_margin_ms = m->conf.safety_margin_ms;
  in.snapshot_validity_ms = m->conf.snapshot_validity_ms;
  in.shared_lease = w->shared_lease;
  cp_snapshot_limits lim = CP_SNAPSHOT_LIMITS_DEFAULT;
  in.limits = lim;
  cp_snapshot *s = NULL;
  w->build_ok = 0;
  w->is_delta = 0;
  cp_build_stats st;
  memset(&st, 0, sizeof(st));
  int built = cp_snapshot_build(&in, &s, &st);
  w->stats = st;
  if (built == CP_BUILD_OK) {
    const Controlplane__V1__WorkerSnapshot *msg = cp_snapshot_msg(s);
    Controlplane__V1__WatchSnapshotsResponse r =
        CONTROLPLANE__V1__WATCH_SNAPSHOTS_RESPONSE__INIT;
    r.payload_case = CONTROLPLANE__V1__WATCH_SNAPSHOTS_RESPONSE__PAYLOAD_SNAPSHOT;
    r.snapshot = (Controlplane__V1__WorkerSnapshot *)msg;
    size_t n = controlplane__v1__watch_snapshots_response__get_packed_size(&r);
    cp_delta *d = NULL;
    if (w->delta_base &&
        cp_snapshot_diff(w->delta_base, msg, &d, NULL) == CP_DELTA_OK) {
      Controlplane__V1__WatchSnapshotsResponse rd =
          CONTROLPLANE__V1__WATCH_SNAPSHOTS_RESPONSE__INIT;
      rd.payload_case = CONTROLPLANE__V1__WATCH_SNAPSHOTS_RESPONSE__PAYLOAD_DELTA;
      rd.delta = (Controlplane__V1__SnapshotDelta *)cp_delta_msg(d);
      size_t nd = controlplane__v1__watch_snapshots_response__get_packed_size(&rd);
      if (nd < n) {
        r = rd;
        n = nd;
        w->is_delta = 1;
        w->upserted = (uint32_t)rd.delta->n_upserted_proxies;
        w->removed = (uint32_t)rd.delta->n_removed_proxy_ids;
      }
    }
    w->out = malloc(n ? n : 1);
    if (w->out && msg->checksum.len == 32 && msg->valid_until) {
      w->out_len = controlplane__v1__watch_snapshots_response__pack(&r, w->out);
      memcpy(w->checksum, msg->checksum.data, 32);
      w->valid_until_ms = (int64_t)msg->valid_until->seconds * 1000 +
                          msg->valid_until->nanos / 1000000;
      refresh_bound(w, &st);
      w->build_ok = 1;
    }
    cp_delta_free(d);
  }
  if (w->build_ok)
    w->built = s; /* kept: the next delta's base once sent and ACKed */
  else
    cp_snapshot_free(s);
  w->build_seconds = (double)(api->now_ms(m->ctx) - t0) / 1000.0;
}

static void build_done(void *arg, int status) {
  cs_watch *w = arg;
  cs *m = w->m;
  w->job = 0;
  if (w->dead) {
    w_free(w);
    return;
  }
  api->observe(m->m_build, w->build_seconds);
  if (status == PH_OK)
    report_withheld(w);
  if (status != PH_OK || !w->build_ok) {
    api->inc(m->m_build_fail, 1);
    PH_LOG_RL(api, m->ctx, PH_LOG_ERROR, "snapshot build failed",
              PH_STR("worker_id", w->worker));
    w->ws.in_flight = 0;
    unavailable(w);
    return;
  }
  uint8_t ref[32];
  cs_reference(m, w->checksum, 32, ref);
  int64_t id = m->auth->issue(m->auth_self, w->worker, w->session, w->version,
                              w->epoch, ref, issued, w);
  if (id < 0) {
    w->ws.in_flight = 0;
    unavailable(w);
    return;
  }
  w->auth_call = id;
}

static void got_version(void *arg, const cp_auth_reply *rep) {
  cs_watch *w = arg;
  w->auth_call = 0;
  cs_note_auth(w->m, rep->result);
  if (rep->result != CP_AUTH_OK) {
    w->ws.in_flight = 0;
    unavailable(w);
    return;
  }
  w->version = rep->version;
  w->build_now_ms = wall_ms();
  w->delta_base = w->last && w->last_acked ? cp_snapshot_msg(w->last) : NULL;
  int64_t job = api->submit(w->m->ctx, build_work, build_done, w);
  if (job < 0) {
    w->ws.in_flight = 0;
    unavailable(w);
    return;
  }
  w->job = job;
}

static void got_pool(void *arg, cs_pool *p) {
  cs_watch *w = arg;
  if (!p) {
    unavailable(w);
    return;
  }
  cs_pool_ref(p);
  w->pool = p;
  cp_watch_limits lim = {(uint32_t)w->m->conf.min_snapshot_interval_ms,
                         (uint32_t)w->m->conf.refresh_before_ms};
  int64_t at = -1;
  cp_watch_inputs in = {p->revision, w->epoch, w->owned_digest,
                        w->lease_digest};
  cp_watch_step step = cp_watch_next(&w->ws, &lim, &in, wall_ms(), &at);
  if (step == CP_WATCH_END) {
    w_end(w, CP_GRPC_OK, NULL);
    return;
  }
  if (step == CP_WATCH_WAIT) {
    drop_round(w);
    schedule(w, at);
    return;
  }
  w->ws.in_flight = 1;
  w->moved_revision = w->ws.sent && in.revision != w->ws.last.revision;
  w->moved_epoch = w->ws.sent && in.epoch != w->ws.last.epoch;
  w->moved_owned = w->ws.sent && in.owned_digest != w->ws.last.owned_digest;
  w->moved_lease = w->ws.sent && in.lease_digest != w->ws.last.lease_digest;
  int64_t id = w->m->auth->next_version(w->m->auth_self, got_version, w);
  if (id < 0) {
    w->ws.in_flight = 0;
    unavailable(w);
    return;
  }
  w->auth_call = id;
}

/* FNV-1a over the owned ids, their reclaim marks and health ("did the
 * owned set change": a reclaim must reach the worker at once, CP-4-2, and
 * so must a health change, CP-6-7), and with leases over those and their
 * expiries ("were they renewed"). */
static uint64_t owned_hash(const cp_auth_reply *rep, const cp_owned *own,
                           int with_leases) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < rep->n_owned; i++) {
    for (const char *p = rep->owned[i].proxy_id; *p; p++)
      h = (h ^ (uint8_t)*p) * 1099511628211ULL;
    h = (h ^ (rep->owned[i].reclaim ? 0xfe : 0xff)) * 1099511628211ULL;
    h = (h ^ (uint64_t)own[i].health) * 1099511628211ULL;
    uint64_t l = with_leases ? (uint64_t)rep->owned[i].lease_until_ms : 0;
    for (int k = 0; with_leases && k < 8; k++)
      h = (h ^ ((l >> (8 * k)) & 0xff)) * 1099511628211ULL;
  }
  return h;
}

/* Ends worker's streams other than keep: those of its session keep
 * ABORTED (replaced by a newer stream), those of another session
 * FAILED_PRECONDITION (replaced by a registration, CP-2-8). */
static void end_others(cs *m, const char *worker, const cs_watch *keep,
                       const char *session) {
  ILIST_FOREACH_SAFE(&m->watches, it, nx) {
    cs_watch *w = ILIST_ENTRY(it, cs_watch, node);
    if (w == keep || w->dead || !w->call || strcmp(w->worker, worker) != 0)
      continue;
    int same = strcmp(w->session, session) == 0;
    if (same && !keep)
      continue;
    if (same) {
      api->inc(m->m_replaced, 1);
      PH_LOG_RL(api, m->ctx, PH_LOG_WARN,
                "a newer WatchSnapshots stream of the worker's session "
                "replaced one",
                PH_STR("worker_id", worker));
    }
    /* finish waits for a send in flight; no callback of the call after
     * it, and w_abandon drops the authority call, the pool wait and the
     * job (freeing w now or when the job is back) */
    cs_finish(m, w->call, CS_M_WATCH, w->start_ms,
              same ? CP_GRPC_ABORTED : CP_GRPC_FAILED_PRECONDITION,
              same ? "a newer stream of this session replaced this one"
                   : "the session was replaced",
              NULL, 0);
    w_abandon(w);
  }
}

static void got_owned(void *arg, const cp_auth_reply *rep) {
  cs_watch *w = arg;
  if (stale(w, rep))
    return;
  if (rep->result != CP_AUTH_OK) {
    unavailable(w);
    return;
  }
  /* the session's zone, for the status panel: set before the claim
   * lists the stream there */
  if (rep->size > offsetof(cp_auth_reply, zone) && rep->zone)
    snprintf(w->zone, sizeof(w->zone), "%s", rep->zone);
  /* One stream per session (issue 22 item 11): each polls Redis every
   * watch_poll_interval, so a certificate holding many would multiply
   * the load. The newest stream whose session Redis confirmed wins; one
   * with a wrong session never gets here and ends no other. */
  if (!w->claimed) {
    w->claimed = 1;
    end_others(w->m, w->worker, w, w->session);
  }
  size_t n = rep->n_owned;
  w->owned = calloc(n ? n : 1, sizeof(*w->owned));
  w->owned_ids = calloc(n ? n : 1, sizeof(*w->owned_ids));
  if (!w->owned || !w->owned_ids) {
    unavailable(w);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    strncpy(w->owned_ids[i], rep->owned[i].proxy_id, PH_POOL_ID_MAX);
    w->owned[i].proxy_id = w->owned_ids[i];
    w->owned[i].lease_expiry_ms = rep->owned[i].lease_until_ms;
    w->owned[i].reclaim = rep->owned[i].reclaim;
    w->owned[i].health = cs_health_of(w->m, w->owned_ids[i]);
  }
  w->n_owned = n;
  w->epoch = rep->epoch;
  w->owned_digest = owned_hash(rep, w->owned, 0);
  w->lease_digest = owned_hash(rep, w->owned, 1);
  if (cs_pool_get(w->m, got_pool, w) != 0)
    unavailable(w);
}

static void round_start(cs_watch *w) {
  if (w->dead || w->ws.in_flight || w->auth_call > 0 || w->job > 0)
    return;
  int64_t id = w->m->auth->owned(w->m->auth_self, w->worker, w->session,
                                 got_owned, w);
  if (id < 0) {
    unavailable(w);
    return;
  }
  w->auth_call = id;
}

void cs_watch_rpc(void *arg, cp_grpc_call *call, const uint8_t *req,
                  size_t len) {
  cs_req r;
  Controlplane__V1__WatchSnapshotsRequest *q = cs_request(
      &r, arg, call, &controlplane__v1__watch_snapshots_request__descriptor,
      req, len);
  cs *m = r.m;
  if (!r.st)
    r.st = cp_check_watch(q, &r.c, &r.why);
  cs_watch *w = NULL;
  if (!r.st && (!(w = calloc(1, sizeof(*w))) ||
                !(w->timer = api->timer_new(m->ctx, on_tick, w)))) {
    free(w);
    w = NULL;
    r.st = CP_GRPC_RESOURCE_EXHAUSTED;
    r.why = "out of memory";
  }
  if (!r.st && (strlen(q->worker_id) > PH_POOL_ID_MAX ||
                strlen(q->session_id) > PH_POOL_ID_MAX)) {
    r.st = CP_GRPC_INVALID_ARGUMENT;
    r.why = "an identifier out of bounds";
  }
  if (r.st) {
    if (w) {
      api->timer_free(w->timer);
      free(w);
    }
    cs_request_fail(&r, CS_M_WATCH, q);
    return;
  }
  w->m = m;
  w->call = call;
  w->start_ms = r.start;
  strcpy(w->worker, q->worker_id);
  strcpy(w->session, q->session_id);
  w->shared_lease = q->shared_lease ? 1 : 0;
  controlplane__v1__watch_snapshots_request__free_unpacked(q, NULL);
  ilist_push_front(&m->watches, &w->node);
  api->gauge_add(m->m_streams, 1);
  cp_grpc_call_on_cancel(call, w_cancel, w);
  round_start(w);
}

/* A registration in this process replaced worker's session: its older
 * streams end FAILED_PRECONDITION now (CP-2-8), not at their next round
 * (watch_poll_interval later). A replacement through another controller
 * is seen by that round's owned() call. */
void cs_watch_replaced(cs *m, const char *worker, const char *session) {
  end_others(m, worker, NULL, session);
}

void cs_watch_acked(cs *m, const char *worker, const char *session,
                    uint64_t version, uint64_t epoch, int accepted) {
  ILIST_FOREACH_SAFE(&m->watches, it, nx) {
    cs_watch *w = ILIST_ENTRY(it, cs_watch, node);
    if (w->dead || !w->last || strcmp(w->worker, worker) != 0 ||
        strcmp(w->session, session) != 0)
      continue;
    const Controlplane__V1__WorkerSnapshot *s = cp_snapshot_msg(w->last);
    if (s->version == version && s->ownership_epoch == epoch)
      w->last_acked = accepted;
  }
}

void cs_watch_health_changed(cs *m) {
  ILIST_FOREACH_SAFE(&m->watches, it, nx) {
    cs_watch *w = ILIST_ENTRY(it, cs_watch, node);
    if (!w->dead && !w->ws.in_flight && !w->auth_call && !w->job)
      api->timer_set(w->timer, 1, 0); /* (0, 0) would stop it */
  }
}

void cs_watch_stop_all(cs *m) {
  for (ilist_node *n; (n = ilist_pop(&m->watches));) {
    cs_watch *w = ILIST_ENTRY(n, cs_watch, node);
    /* unlinked first: a job still running frees it alone later */
    api->gauge_add(m->m_streams, -1);
    w_abandon(w);
  }
}

void cs_watch_each(cs *m, int (*fn)(void *arg, const cs_gw_view *v),
                   void *arg) {
  ILIST_FOREACH_SAFE(&m->watches, it, nx) {
    cs_watch *w = ILIST_ENTRY(it, cs_watch, node);
    if (w->dead || !w->claimed)
      continue;
    cs_gw_view v = {w->worker,    w->session,    w->zone,
                    w->report_ms, w->last_acked,
                    w->last ? cp_snapshot_msg(w->last) : NULL, w->counts,
                    w->n_counts};
    if (fn(arg, &v))
      return;
  }
}

static int count_cmp(const void *a, const void *b) {
  return strcmp(((const cs_count *)a)->proxy_id,
                ((const cs_count *)b)->proxy_id);
}

void cs_watch_reported(cs *m, const char *worker, const char *session,
                       const cs_count *counts, size_t n) {
  ILIST_FOREACH_SAFE(&m->watches, it, nx) {
    cs_watch *w = ILIST_ENTRY(it, cs_watch, node);
    if (w->dead || strcmp(w->worker, worker) != 0 ||
        strcmp(w->session, session) != 0)
      continue;
    w->report_ms = mono_ms();
    cs_count *c = n ? malloc(n * sizeof(*c)) : NULL;
    if (n && !c)
      continue; /* the time moves; the counts stay the older ones */
    if (n) { /* qsort and memcpy take no NULL, even for 0 items */
      memcpy(c, counts, n * sizeof(*c));
      qsort(c, n, sizeof(*c), count_cmp);
    }
    free(w->counts);
    w->counts = c;
    w->n_counts = n;
  }
}
