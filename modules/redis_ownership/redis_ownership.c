/* SPDX-License-Identifier: BSD-2-Clause */
/* redis_ownership: the control plane's authority in Redis, the
 * "cp.authority" service (cp_authority.h) for the controller. Each call
 * checks its arguments, becomes one script run (ro_conn.c: EVALSHA on the
 * host's loop, hiredis), and its reply is read back (ro_reply.c) into the
 * caller's callback. The keys and the fences:
 * docs/operations/controller-redis.md. */
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>
#include <openssl/rand.h>

#include <proxyhost/module.h>

#include "lib/conf_values.h"
#include "contracts/cp_authority.h"
#include "lib/metric_table.h"
#include "ro_conf.h"
#include "ro_conn.h"
#include "ro_reply.h"
#include "ro_scripts.h"

typedef struct ro ro;

/* One call on its way: what the answer needs. */
typedef struct req {
  ro *m;
  ro_script script;
  cp_auth_cb cb;
  void *arg;
  int64_t start_ms;
  char **ids; /* usable: the ids asked, for the reply */
  size_t n_ids;
} req;

struct ro {
  ph_ctx *ctx;
  ro_conf conf;
  ro_conn *conn;
  int scripts; /* ro_scripts_init succeeded: undo it in destroy */
  int stopping;
  ph_timer *drain; /* stop: waits for the calls in flight */
  ph_series *m_calls[RO_S_COUNT][CP_AUTH_RESULT_COUNT];
  ph_series *m_seconds[RO_S_COUNT];
  ph_series *m_connected, *m_connects[2], *m_inflight;
};

static const ph_api *api;

/* ---- metrics ------------------------------------------------------------ */

static const char *const connect_results[] = {"ok", "failed", NULL};
static const double seconds_buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01,
                                         0.025,  0.05,  0.1,    0.25,  0.5,
                                         1,      2.5,   5};

static const ph_label_def calls_labels[] = {{"script", ro_script_names},
                                            {"result", ro_result_names}};
static const ph_label_def script_label[] = {{"script", ro_script_names}};
static const ph_label_def res_label[] = {{"result", connect_results}};

/* In registration order (the order /metrics shows them). */
static const ph_metric_table ro_metrics[] = {
    PH_METRIC("proxyhost_cp_redis_calls_total", PH_METRIC_COUNTER,
              "authority calls by script and result",
              PH_METRIC_LABELS(calls_labels), PH_METRIC_NO_BUCKETS, ro,
              m_calls),
    PH_METRIC("proxyhost_cp_redis_call_seconds", PH_METRIC_HISTOGRAM,
              "authority call latency, from the call to its answer",
              PH_METRIC_LABELS(script_label),
              PH_METRIC_BUCKETS(seconds_buckets), ro, m_seconds),
    PH_METRIC("proxyhost_cp_redis_connected", PH_METRIC_GAUGE,
              "1 while the Redis connection is up", PH_METRIC_NO_LABELS,
              PH_METRIC_NO_BUCKETS, ro, m_connected),
    PH_METRIC("proxyhost_cp_redis_connects_total", PH_METRIC_COUNTER,
              "connection attempts by result", PH_METRIC_LABELS(res_label),
              PH_METRIC_NO_BUCKETS, ro, m_connects),
    PH_METRIC("proxyhost_cp_redis_inflight", PH_METRIC_GAUGE,
              "authority calls in flight", PH_METRIC_NO_LABELS,
              PH_METRIC_NO_BUCKETS, ro, m_inflight),
    PH_METRIC_END};

static int register_metrics(ro *m) {
  return ph_metric_table_register(api, m->ctx, ro_metrics, m);
}

/* ---- answers ------------------------------------------------------------ */

static void free_req(req *q) {
  if (!q)
    return;
  for (size_t i = 0; i < q->n_ids; i++)
    free(q->ids[i]);
  free(q->ids);
  free(q);
}

static void on_answer(void *arg, const redisReply *r) {
  req *q = arg;
  ro *m = q->m;
  cp_auth_reply out;
  ro_reply_mem mem;
  cp_auth_result res = ro_reply_parse(q->script, r, &out, &mem);
  if (res != CP_AUTH_UNAVAILABLE && q->script == RO_S_USABLE) {
    if (out.n_usable != q->n_ids) {
      ro_reply_mem_free(&mem);
      memset(&out, 0, sizeof(out));
      out.size = sizeof(out);
      out.result = res = CP_AUTH_UNAVAILABLE;
    } else {
      for (size_t i = 0; i < q->n_ids; i++)
        mem.usable[i].proxy_id = q->ids[i];
    }
  }
  if (r && res == CP_AUTH_UNAVAILABLE)
    PH_LOG_RL(api, m->ctx, PH_LOG_ERROR, "unexpected script reply",
              PH_STR("script", ro_script_names[q->script]),
              PH_STR("error", r->type == REDIS_REPLY_ERROR && r->str
                                  ? r->str
                                  : "malformed"));
  api->inc(m->m_calls[q->script][res], 1);
  api->observe(m->m_seconds[q->script],
               (double)(api->now_ms(m->ctx) - q->start_ms) / 1000.0);
  api->gauge_set(m->m_inflight, (double)ro_conn_inflight(m->conn));
  q->cb(q->arg, &out);
  ro_reply_mem_free(&mem);
  free_req(q);
}

/* Runs script with args for cb; consumes args (and ids). */
static int64_t run(ro *m, ro_script s, ro_args *args, char **ids, size_t n_ids,
                   cp_auth_cb cb, void *arg) {
  req *q = NULL;
  if (m->stopping) {
    ro_args_free(args);
    for (size_t i = 0; i < n_ids; i++)
      free(ids[i]);
    free(ids);
    return PH_ESTATE;
  }
  q = calloc(1, sizeof(*q));
  if (!q || ro_args_failed(args)) {
    ro_args_free(args);
    for (size_t i = 0; i < n_ids; i++)
      free(ids[i]);
    free(ids);
    free(q);
    return PH_ENOMEM;
  }
  q->m = m;
  q->script = s;
  q->cb = cb;
  q->arg = arg;
  q->ids = ids;
  q->n_ids = n_ids;
  q->start_ms = api->now_ms(m->ctx);
  int64_t id = ro_conn_eval(m->conn, s, args, on_answer, q);
  if (id < 0) {
    free_req(q);
    return id;
  }
  api->gauge_set(m->m_inflight, (double)ro_conn_inflight(m->conn));
  return id;
}

/* ---- the service -------------------------------------------------------- */

static int valid_digest(const uint8_t *d) { return d != NULL; }
static int valid_seq(uint64_t v) { return v <= CP_AUTH_SEQ_MAX; }

static int new_session_id(char out[CP_AUTH_SESSION_HEX + 1]) {
  unsigned char b[CP_AUTH_SESSION_HEX / 2];
  static const char d[] = "0123456789abcdef";
  out[0] = 0;
  if (RAND_bytes(b, sizeof(b)) != 1)
    return PH_EINVAL;
  for (size_t i = 0; i < sizeof(b); i++) {
    out[2 * i] = d[b[i] >> 4];
    out[2 * i + 1] = d[b[i] & 15];
  }
  out[CP_AUTH_SESSION_HEX] = 0;
  return PH_OK;
}

static int64_t register_worker(void *self, const char *worker_id,
                               const char *instance_id, const char *zone,
                               const char *session_id, cp_auth_cb cb,
                               void *arg) {
  ro *m = self;
  if (!cb || !ro_valid_id(worker_id, PH_POOL_ID_MAX) ||
      !ro_valid_id(instance_id, PH_POOL_ID_MAX) || !ro_valid_id(zone, 0) ||
      !ro_valid_id(session_id, PH_POOL_ID_MAX))
    return PH_EINVAL;
  ro_args a = {0};
  ro_args_str(&a, worker_id);
  ro_args_str(&a, instance_id);
  ro_args_str(&a, zone);
  ro_args_str(&a, session_id);
  ro_args_u64(&a, (uint64_t)m->conf.session_ttl_ms);
  ro_args_u64(&a, (uint64_t)m->conf.max_workers);
  return run(m, RO_S_REGISTER, &a, NULL, 0, cb, arg);
}

static int64_t next_version(void *self, cp_auth_cb cb, void *arg) {
  ro_args a = {0};
  if (!cb)
    return PH_EINVAL;
  return run(self, RO_S_NEXT_VERSION, &a, NULL, 0, cb, arg);
}

/* worker, session, the numbers v[0..nv) (each at most CP_AUTH_SEQ_MAX), a
 * digest: the head of issue and ack (version, epoch, checksum) and of
 * both reports (sequence, digest). PH_EINVAL (nothing added) when one is
 * out of bounds. */
static int head_args(ro_args *a, const char *w, const char *s,
                     const uint64_t *v, size_t nv, const uint8_t *digest) {
  if (!ro_valid_id(w, PH_POOL_ID_MAX) || !ro_valid_id(s, PH_POOL_ID_MAX) ||
      !valid_digest(digest))
    return PH_EINVAL;
  for (size_t i = 0; i < nv; i++)
    if (!valid_seq(v[i]))
      return PH_EINVAL;
  ro_args_str(a, w);
  ro_args_str(a, s);
  for (size_t i = 0; i < nv; i++)
    ro_args_u64(a, v[i]);
  ro_args_hex(a, digest, CP_AUTH_DIGEST_LEN);
  return PH_OK;
}

static int ref_args(ro_args *a, const char *w, const char *s, uint64_t version,
                    uint64_t epoch, const uint8_t *checksum) {
  const uint64_t v[] = {version, epoch};
  return head_args(a, w, s, v, 2, checksum);
}

static int report_args(ro_args *a, const char *w, const char *s,
                       uint64_t seq, const uint8_t *digest) {
  return head_args(a, w, s, &seq, 1, digest);
}

static int64_t issue(void *self, const char *w, const char *s,
                     uint64_t version, uint64_t epoch,
                     const uint8_t checksum[CP_AUTH_DIGEST_LEN],
                     cp_auth_cb cb, void *arg) {
  ro *m = self;
  ro_args a = {0};
  if (!cb || ref_args(&a, w, s, version, epoch, checksum) != PH_OK) {
    ro_args_free(&a);
    return PH_EINVAL;
  }
  ro_args_u64(&a, (uint64_t)m->conf.max_refs);
  return run(m, RO_S_ISSUE, &a, NULL, 0, cb, arg);
}

static int64_t ack(void *self, const char *w, const char *s, uint64_t version,
                   uint64_t epoch, const uint8_t checksum[CP_AUTH_DIGEST_LEN],
                   int positive, cp_auth_cb cb, void *arg) {
  ro_args a = {0};
  if (!cb || ref_args(&a, w, s, version, epoch, checksum) != PH_OK) {
    ro_args_free(&a);
    return PH_EINVAL;
  }
  ro_args_str(&a, positive ? "1" : "0");
  return run(self, RO_S_ACK, &a, NULL, 0, cb, arg);
}

static int64_t report_runtime(void *self, const char *w, const char *s,
                              uint64_t seq,
                              const uint8_t digest[CP_AUTH_DIGEST_LEN],
                              uint64_t version, uint64_t epoch,
                              const cp_auth_counter *counters, size_t n,
                              cp_auth_cb cb, void *arg) {
  ro *m = self;
  if (!cb || !valid_seq(version) || !valid_seq(epoch) ||
      n > (size_t)m->conf.max_owned || (n && !counters))
    return PH_EINVAL;
  for (size_t i = 0; i < n; i++)
    if (!ro_valid_id(counters[i].proxy_id, PH_POOL_ID_MAX))
      return PH_EINVAL;
  ro_args a = {0};
  if (report_args(&a, w, s, seq, digest) != PH_OK)
    return PH_EINVAL;
  ro_args_u64(&a, version);
  ro_args_u64(&a, epoch);
  ro_args_u64(&a, (uint64_t)m->conf.session_ttl_ms);
  ro_args_u64(&a, (uint64_t)m->conf.runtime_ttl_ms);
  ro_args_u64(&a, (uint64_t)m->conf.lease_ms);
  ro_args_u64(&a, n);
  for (size_t i = 0; i < n; i++) {
    ro_args_str(&a, counters[i].proxy_id);
    ro_args_u64(&a, counters[i].active);
    ro_args_u64(&a, counters[i].reserved);
    ro_args_str(&a, counters[i].draining ? "1" : "0");
  }
  return run(m, RO_S_RUNTIME, &a, NULL, 0, cb, arg);
}

static int64_t fence(void *self, ro_script s, const char *kind, const char *w,
                     const char *sess, uint64_t seq,
                     const uint8_t digest[CP_AUTH_DIGEST_LEN], cp_auth_cb cb,
                     void *arg);

static int64_t report_outcomes(void *self, const char *w, const char *s,
                               uint64_t seq,
                               const uint8_t digest[CP_AUTH_DIGEST_LEN],
                               cp_auth_cb cb, void *arg) {
  return fence(self, RO_S_OUTCOMES, "w", w, s, seq, digest, cb, arg);
}

/* report_outcomes and report_observations: one fence, kind "w" or "c". */
static int64_t fence(void *self, ro_script s, const char *kind, const char *w,
                     const char *sess, uint64_t seq,
                     const uint8_t digest[CP_AUTH_DIGEST_LEN], cp_auth_cb cb,
                     void *arg) {
  ro_args a = {0};
  if (!cb || report_args(&a, w, sess, seq, digest) != PH_OK)
    return PH_EINVAL;
  ro_args_str(&a, kind);
  return run(self, s, &a, NULL, 0, cb, arg);
}

static int64_t report_observations(void *self, const char *c, const char *s,
                                   uint64_t seq,
                                   const uint8_t digest[CP_AUTH_DIGEST_LEN],
                                   cp_auth_cb cb, void *arg) {
  return fence(self, RO_S_OBSERVATIONS, "c", c, s, seq, digest, cb, arg);
}

static int64_t register_checker(void *self, const char *checker_id,
                                const char *instance_id, const char *zone,
                                const char *session_id, uint32_t max_checkers,
                                uint32_t max_concurrency, uint32_t tiers,
                                cp_auth_cb cb, void *arg) {
  ro *m = self;
  if (!cb || !ro_valid_id(checker_id, PH_POOL_ID_MAX) ||
      !ro_valid_id(instance_id, PH_POOL_ID_MAX) || !ro_valid_id(zone, 0) ||
      !ro_valid_id(session_id, PH_POOL_ID_MAX) || max_checkers < 1 ||
      max_concurrency < 1)
    return PH_EINVAL;
  ro_args a = {0};
  ro_args_str(&a, checker_id);
  ro_args_str(&a, instance_id);
  ro_args_str(&a, zone);
  ro_args_str(&a, session_id);
  ro_args_u64(&a, (uint64_t)m->conf.session_ttl_ms);
  ro_args_u64(&a, max_checkers);
  ro_args_u64(&a, max_concurrency);
  ro_args_u64(&a, tiers);
  return run(m, RO_S_CHECKER_REGISTER, &a, NULL, 0, cb, arg);
}

static int64_t checker_alive(void *self, const char *checker_id,
                             const char *session_id, cp_auth_cb cb,
                             void *arg) {
  ro *m = self;
  if (!cb || !ro_valid_id(checker_id, PH_POOL_ID_MAX) ||
      !ro_valid_id(session_id, PH_POOL_ID_MAX))
    return PH_EINVAL;
  ro_args a = {0};
  ro_args_str(&a, checker_id);
  ro_args_str(&a, session_id);
  ro_args_u64(&a, (uint64_t)m->conf.session_ttl_ms);
  return run(m, RO_S_CHECKER_ALIVE, &a, NULL, 0, cb, arg);
}

static int64_t assign(void *self, const cp_auth_proxy *usable, size_t n,
                      const char *const *draining, size_t n_draining,
                      cp_auth_cb cb, void *arg) {
  ro *m = self;
  if (!cb || n > PH_POOL_PROXIES_MAX || n_draining > PH_POOL_PROXIES_MAX ||
      (n && !usable) || (n_draining && !draining))
    return PH_EINVAL;
  for (size_t i = 0; i < n; i++)
    if (!ro_valid_id(usable[i].proxy_id, PH_POOL_ID_MAX) ||
        !ro_valid_id(usable[i].zone ? usable[i].zone : "", 0) ||
        usable[i].capacity < 1 || usable[i].capacity > PH_POOL_CAPACITY_MAX)
      return PH_EINVAL;
  for (size_t i = 0; i < n_draining; i++)
    if (!ro_valid_id(draining[i], PH_POOL_ID_MAX))
      return PH_EINVAL;
  ro_args a = {0};
  ro_args_u64(&a, (uint64_t)m->conf.lease_ms);
  ro_args_u64(&a, (uint64_t)m->conf.max_owned);
  ro_args_u64(&a, m->conf.hold_fresh ? (uint64_t)m->conf.lease_ms : 0);
  ro_args_u64(&a, (uint64_t)m->conf.rebalance_max);
  ro_args_u64(&a, n);
  for (size_t i = 0; i < n; i++) {
    ro_args_str(&a, usable[i].proxy_id);
    ro_args_u64(&a, usable[i].capacity);
    ro_args_str(&a, usable[i].zone ? usable[i].zone : "");
  }
  ro_args_u64(&a, n_draining);
  for (size_t i = 0; i < n_draining; i++)
    ro_args_str(&a, draining[i]);
  return run(m, RO_S_ASSIGN, &a, NULL, 0, cb, arg);
}

static int64_t owned(void *self, const char *w, const char *s, cp_auth_cb cb,
                     void *arg) {
  if (!cb || !ro_valid_id(w, PH_POOL_ID_MAX) || !ro_valid_id(s, PH_POOL_ID_MAX))
    return PH_EINVAL;
  ro_args a = {0};
  ro_args_str(&a, w);
  ro_args_str(&a, s);
  return run(self, RO_S_OWNED, &a, NULL, 0, cb, arg);
}

static int64_t usable(void *self, const char *const *ids, size_t n,
                      cp_auth_cb cb, void *arg) {
  if (!cb || n > PH_POOL_PROXIES_MAX || (n && !ids))
    return PH_EINVAL;
  for (size_t i = 0; i < n; i++)
    if (!ro_valid_id(ids[i], PH_POOL_ID_MAX))
      return PH_EINVAL;
  char **copy = n ? calloc(n, sizeof(*copy)) : NULL;
  if (n && !copy)
    return PH_ENOMEM;
  ro_args a = {0};
  ro_args_u64(&a, n);
  for (size_t i = 0; i < n; i++) {
    ro_args_str(&a, ids[i]);
    if (!(copy[i] = strdup(ids[i])))
      a.failed = 1;
  }
  return run(self, RO_S_USABLE, &a, copy, n, cb, arg);
}

static int64_t extract(void *self, const char *proxy_id, cp_extract_op op,
                       cp_auth_cb cb, void *arg) {
  static const char *const ops[] = {NULL, "get", "request", "release"};
  if (!cb || op < CP_EXTRACT_GET || op > CP_EXTRACT_RELEASE ||
      !ro_valid_id(proxy_id, PH_POOL_ID_MAX))
    return PH_EINVAL;
  ro_args a = {0};
  ro_args_str(&a, ops[op]);
  ro_args_str(&a, proxy_id);
  ro_args_u64(&a, PH_POOL_PROXIES_MAX);
  return run(self, RO_S_EXTRACT, &a, NULL, 0, cb, arg);
}

/* minor 5: the pool's health (lua/health.lua). */
static int64_t health_set(void *self, const char *proxy_id, int health,
                          cp_auth_cb cb, void *arg) {
  if (!cb || health < 0 || health > 3 || !ro_valid_id(proxy_id, PH_POOL_ID_MAX))
    return PH_EINVAL;
  ro_args a = {0};
  ro_args_str(&a, "set");
  ro_args_str(&a, proxy_id);
  ro_args_u64(&a, (uint64_t)health);
  return run(self, RO_S_HEALTH, &a, NULL, 0, cb, arg);
}

static int64_t health_all(void *self, cp_auth_cb cb, void *arg) {
  if (!cb)
    return PH_EINVAL;
  ro_args a = {0};
  ro_args_str(&a, "all");
  ro_args_u64(&a, PH_POOL_PROXIES_MAX);
  return run(self, RO_S_HEALTH, &a, NULL, 0, cb, arg);
}

static int64_t members(void *self, const char *member_id, int64_t lease_ms,
                       cp_auth_cb cb, void *arg) {
  if (!cb || lease_ms < 0 || lease_ms > 3600000 ||
      !ro_valid_id(member_id, PH_POOL_ID_MAX))
    return PH_EINVAL;
  ro_args a = {0};
  ro_args_str(&a, member_id);
  ro_args_u64(&a, (uint64_t)lease_ms);
  ro_args_u64(&a, CP_AUTH_MEMBERS_MAX);
  return run(self, RO_S_MEMBERS, &a, NULL, 0, cb, arg);
}

/* minor 7: outcomes handed to a proxy's member (lua/passive.lua). */
static int64_t passive_push(void *self, const char *member_id,
                            const cp_auth_passive *p, size_t n, int64_t ttl_ms,
                            cp_auth_cb cb, void *arg) {
  if (!cb || !p || n == 0 || n > CP_AUTH_PASSIVE_PUSH_MAX || ttl_ms < 1 ||
      ttl_ms > 3600000 || !ro_valid_id(member_id, PH_POOL_ID_MAX))
    return PH_EINVAL;
  for (size_t i = 0; i < n; i++)
    if (!ro_valid_id(p[i].proxy_id, PH_POOL_ID_MAX))
      return PH_EINVAL;
  ro_args a = {0};
  ro_args_str(&a, "push");
  ro_args_str(&a, member_id);
  ro_args_u64(&a, (uint64_t)ttl_ms);
  ro_args_u64(&a, PH_POOL_PROXIES_MAX);
  for (size_t i = 0; i < n; i++) {
    ro_args_str(&a, p[i].proxy_id);
    ro_args_u64(&a, p[i].fail_units);
    ro_args_u64(&a, p[i].ok_units);
  }
  return run(self, RO_S_PASSIVE, &a, NULL, 0, cb, arg);
}

static int64_t passive_take(void *self, const char *member_id, cp_auth_cb cb,
                            void *arg) {
  if (!cb || !ro_valid_id(member_id, PH_POOL_ID_MAX))
    return PH_EINVAL;
  ro_args a = {0};
  ro_args_str(&a, "take");
  ro_args_str(&a, member_id);
  return run(self, RO_S_PASSIVE, &a, NULL, 0, cb, arg);
}

static int cancel(void *self, int64_t call) {
  ro *m = self;
  void *arg = NULL;
  if (ro_conn_cancel(m->conn, call, &arg) != PH_OK)
    return PH_ENOENT;
  free_req(arg);
  return PH_OK;
}

static const char *cluster_id(void *self) {
  ro *m = self;
  return m->conf.cluster_id;
}

static const cp_authority_v1 vtable = {
    .new_session_id = new_session_id,
    .register_worker = register_worker,
    .next_version = next_version,
    .issue = issue,
    .ack = ack,
    .report_runtime = report_runtime,
    .report_outcomes = report_outcomes,
    .assign = assign,
    .owned = owned,
    .usable = usable,
    .cancel = cancel,
    .cluster_id = cluster_id,
    .extract = extract,
    .register_checker = register_checker,
    .checker_alive = checker_alive,
    .report_observations = report_observations,
    .health_set = health_set,
    .health_all = health_all,
    .members = members,
    .passive_push = passive_push,
    .passive_take = passive_take,
};

/* ---- lifecycle ---------------------------------------------------------- */

static void on_state(void *arg, int event) {
  ro *m = arg;
  if (event == RO_UP)
    api->inc(m->m_connects[0], 1);
  else if (event == RO_FAILED)
    api->inc(m->m_connects[1], 1);
  api->gauge_set(m->m_connected, event == RO_UP ? 1 : 0);
  if (!m->stopping)
    api->set_ready(m->ctx, event == RO_UP);
}

static int ro_check(ph_ctx *ctx, const ph_api *a, const char **key, char *why,
                    size_t whylen) {
  ro_conf c;
  int rc = ro_conf_read(ctx, a, &c, key, why, whylen);
  memset(c.conn.password, 0, sizeof(c.conn.password));
  return rc;
}

static int ro_init(ph_ctx *ctx, const ph_api *a, void **state) {
  api = a;
  ro *m = calloc(1, sizeof(*m));
  if (!m)
    return PH_ENOMEM;
  *state = m;
  m->ctx = ctx;
  const char *key;
  char why[256];
  if (ro_conf_read(ctx, a, &m->conf, &key, why, sizeof(why)) != PH_OK)
    return ph_conf_refused(api, ctx, "bad configuration", key, why);
  if (ro_scripts_init() < 0)
    return PH_ENOMEM;
  m->scripts = 1;
  if (register_metrics(m) != PH_OK)
    return PH_EINVAL;
  m->conn = ro_conn_new(ctx, api, &m->conf.conn, on_state, m);
  if (!m->conn)
    return PH_ENOMEM;
  return api->service_register(ctx, CP_AUTHORITY_SERVICE, CP_AUTHORITY_MAJOR,
                               CP_AUTHORITY_MINOR, &vtable, m);
}

static int ro_start(void *state) {
  ro *m = state;
  api->set_ready(m->ctx, 0); /* until the connection is up */
  ro_conn_start(m->conn);
  return PH_OK;
}

static void ro_stop_now(ro *m) {
  ro_conn_stop(m->conn); /* pending calls answer UNAVAILABLE */
  api->gauge_set(m->m_connected, 0);
}

static void drain_tick(ph_timer *t, void *arg) {
  ro *m = arg;
  (void)t;
  if (ro_conn_inflight(m->conn) > 0 && ro_conn_up(m->conn))
    return;
  api->timer_set(m->drain, 0, 0);
  ro_stop_now(m);
  api->stop_done(m->ctx);
}

/* The users stopped first (they require this service) and may have sent
 * last calls (a controller leaving the members): those get their answer
 * (each within command_timeout) before the connection goes. */
static int ro_stop(void *state) {
  ro *m = state;
  m->stopping = 1;
  if (ro_conn_up(m->conn) && ro_conn_inflight(m->conn) > 0) {
    m->drain = api->timer_new(m->ctx, drain_tick, m);
    if (m->drain) {
      api->timer_set(m->drain, 5, 5);
      return PH_STOP_PENDING;
    }
  }
  ro_stop_now(m);
  return PH_OK;
}

static void free_req_arg(void *q) { free_req(q); }

static void ro_destroy(void *state) {
  ro *m = state;
  if (!m)
    return;
  m->stopping = 1;
  if (m->drain)
    api->timer_free(m->drain);
  /* Destroy runs after the users' destroy: no callback into them now. */
  ro_conn_discard(m->conn, free_req_arg);
  ro_conn_free(m->conn);
  if (m->scripts)
    ro_scripts_free();
  memset(m->conf.conn.password, 0, sizeof(m->conf.conn.password));
  free(m);
}

static const char *const provides[] = {CP_AUTHORITY_SERVICE, NULL};

PROXYHOST_MODULE = {
    PH_MODULE_HEADER("redis_ownership", "1.0.0"),
    .description = "control-plane authority: sessions, fences and ownership "
                   "in Redis",
    .provides = provides,
    .config = ro_conf_keys,
    .init = ro_init,
    .start = ro_start,
    .stop = ro_stop,
    .destroy = ro_destroy,
    .check = ro_check,
};
