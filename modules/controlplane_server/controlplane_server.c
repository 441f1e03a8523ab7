/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * controlplane_server: the controller (issue 12). Serves the five
 * WorkerControlPlane RPCs and the three CheckerControlPlane ones (issue
 * 26, cs_checker.h; docs/api/controlplane.md) over cp_grpc, with
 * every fence in the "cp.authority" service (redis_ownership) and the
 * pool's rows from "pool.store" (store_sqlite, store_pg). Snapshots are
 * built by a host job; Redis holds HMAC-SHA256(reference_key, checksum)
 * instead of the checksum, which covers credential material and so must
 * not be testable offline.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "lib/conf_values.h"
#include "lib/clocks.h"
#include "cp_common/grpc/cp_grpc_conf.h"
#include "cs.h"
#include "cs_checker.h"
#include "cs_health.h"
#include "cs_members.h"
#include "cs_status.h"
#include "contracts/cp_health.h"
#include "lib/metric_table.h"

const ph_api *cs_api;
#define api cs_api

static const char *const method_names[] = {
    "RegisterWorker", "WatchSnapshots", "AcknowledgeSnapshot",
    "ReportRuntime", "ReportOutcomes", "RegisterChecker", "WatchCheckTasks",
    "ReportObservations", NULL};
static const char *const code_names[] = {
    "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
    "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED", NULL};
static const char *const assign_results[] = {"ok", "failed", NULL};
static const char *const drop_reasons[] = {"limit", "handshake_timeout", NULL};
static const char *const withheld_reasons[] = {"credential", NULL};
static const char *const rebalance_what[] = {"moved", "limited", NULL};
static const char *const snapshot_kinds[] = {"full", "delta", NULL};
static const double secs[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                              0.1,   0.25,   0.5,   1,    2.5,   5};

static const ph_label_def rpc_labels[] = {{"method", method_names},
                                          {"code", code_names}};
static const ph_label_def method_label[] = {{"method", method_names}};
static const ph_label_def drop_label[] = {{"reason", drop_reasons}};
static const ph_label_def withheld_label[] = {{"reason", withheld_reasons}};
static const ph_label_def assign_label[] = {{"result", assign_results}};
static const ph_label_def rebalance_label[] = {{"what", rebalance_what}};
static const ph_label_def kind_label[] = {{"kind", snapshot_kinds}};

/* In registration order (the order /metrics shows them). */
static const ph_metric_table cs_metrics[] = {
    PH_METRIC("proxyhost_cp_controller_rpcs_total", PH_METRIC_COUNTER,
              "finished RPCs by method and gRPC status code",
              PH_METRIC_LABELS(rpc_labels), PH_METRIC_NO_BUCKETS, cs, m_rpcs),
    PH_METRIC("proxyhost_cp_controller_rpc_seconds", PH_METRIC_HISTOGRAM,
              "RPC latency, from the call to its status",
              PH_METRIC_LABELS(method_label), PH_METRIC_BUCKETS(secs), cs,
              m_seconds),
    PH_METRIC("proxyhost_cp_controller_streams_open", PH_METRIC_GAUGE,
              "WatchSnapshots streams open", PH_METRIC_NO_LABELS,
              PH_METRIC_NO_BUCKETS, cs, m_streams),
    PH_METRIC("proxyhost_cp_controller_snapshots_sent_total",
              PH_METRIC_COUNTER, "snapshots sent, full or as a delta",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, cs, m_sent),
    PH_METRIC("proxyhost_cp_controller_build_seconds", PH_METRIC_HISTOGRAM,
              "snapshot build time (the host job)", PH_METRIC_NO_LABELS,
              PH_METRIC_BUCKETS(secs), cs, m_build),
    PH_METRIC("proxyhost_cp_controller_build_failures_total",
              PH_METRIC_COUNTER, "snapshot builds that failed",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, cs, m_build_fail),
    PH_METRIC("proxyhost_cp_controller_assign_total", PH_METRIC_COUNTER,
              "periodic ownership assignments by result",
              PH_METRIC_LABELS(assign_label), PH_METRIC_NO_BUCKETS, cs,
              m_assign),
    PH_METRIC("proxyhost_cp_controller_deltas_sent_total", PH_METRIC_COUNTER,
              "snapshots sent as a delta on the acknowledged one",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, cs, m_deltas),
    PH_METRIC("proxyhost_cp_controller_snapshot_bytes_total",
              PH_METRIC_COUNTER,
              "bytes of the WatchSnapshots messages sent, by kind: a full "
              "snapshot or a delta on the acknowledged one",
              PH_METRIC_LABELS(kind_label), PH_METRIC_NO_BUCKETS, cs,
              m_bytes),
    PH_METRIC("proxyhost_cp_controller_streams_replaced_total",
              PH_METRIC_COUNTER,
              "WatchSnapshots streams ended ABORTED by a newer "
              "stream of the same session",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, cs, m_replaced),
    PH_METRIC("proxyhost_cp_controller_connections_unauthenticated",
              PH_METRIC_GAUGE,
              "connections that carried no call yet (grpc.max_unauthenticated_"
              "connections bounds them)",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, cs, m_unauth),
    PH_METRIC("proxyhost_cp_controller_connections_dropped_total",
              PH_METRIC_COUNTER,
              "unauthenticated connections closed: one over the limit, or no "
              "call within grpc.handshake_timeout",
              PH_METRIC_LABELS(drop_label), PH_METRIC_NO_BUCKETS, cs,
              m_dropped),
    PH_METRIC("proxyhost_cp_controller_proxies_withheld_total",
              PH_METRIC_COUNTER,
              "owned proxies a snapshot build left out, at each build: "
              "credential (its secrets_dir/<secret_ref> file missing or "
              "unusable)",
              PH_METRIC_LABELS(withheld_label), PH_METRIC_NO_BUCKETS, cs,
              m_withheld),
    PH_METRIC("proxyhost_cp_controller_rebalance_total", PH_METRIC_COUNTER,
              "rebalancing (issue 23 item 4): proxies set moving to "
              "another worker through the drain (moved), and "
              "assignments where [redis_ownership] rebalance_max "
              "held a move back (limited)",
              PH_METRIC_LABELS(rebalance_label), PH_METRIC_NO_BUCKETS, cs,
              m_rebalance),
    PH_METRIC_END};

static int register_metrics(cs *m) {
  return ph_metric_table_register(api, m->ctx, cs_metrics, m);
}

void cs_finish(cs *m, cp_grpc_call *call, cs_method meth, int64_t start_ms,
               int status, const char *msg, const uint8_t *resp, size_t len) {
  if (cp_grpc_call_finish(call, status, msg, resp, len) != PH_OK)
    status = CP_GRPC_CANCELLED;
  if (status < 0 || status > 16)
    status = CP_GRPC_UNKNOWN;
  api->inc(m->m_rpcs[meth][status], 1);
  api->observe(m->m_seconds[meth],
               (double)(api->now_ms(m->ctx) - start_ms) / 1000.0);
}

int cs_peer_as(cs *m, cp_grpc_call *call, const char *role,
               char peer[CS_WORKER_ID_MAX + 1], const char **why) {
  peer[0] = 0;
  if (!m->conf.mtls)
    return 0;
  const char *uri = cp_grpc_call_peer_id(call);
  if (!uri || cp_spiffe_id(uri, strlen(uri), m->conf.trust_domain,
                           m->conf.environment, role, peer,
                           CS_WORKER_ID_MAX + 1) != 0) {
    *why = strcmp(role, "checker") == 0
               ? "the client certificate names no checker of this environment"
               : "the client certificate names no worker of this environment";
    return CP_GRPC_PERMISSION_DENIED;
  }
  return 0;
}

int cs_peer(cs *m, cp_grpc_call *call, char peer[CS_WORKER_ID_MAX + 1],
            const char **why) {
  return cs_peer_as(m, call, "worker", peer, why);
}

void *cs_request(cs_req *r, void *arg, cp_grpc_call *call,
                 const ProtobufCMessageDescriptor *d, const uint8_t *msg,
                 size_t len) {
  return cs_request_as(r, arg, call, "worker", d, msg, len);
}

void *cs_request_as(cs_req *r, void *arg, cp_grpc_call *call,
                    const char *role, const ProtobufCMessageDescriptor *d,
                    const uint8_t *msg, size_t len) {
  cs *m = arg;
  r->m = m;
  r->call = call;
  r->start = api->now_ms(m->ctx);
  r->why = NULL;
  r->c.peer_id = m->conf.mtls ? r->peer : NULL;
  r->c.cluster_id = m->conf.cluster_id;
  if ((r->st = cs_peer_as(m, call, role, r->peer, &r->why)))
    return NULL;
  return cp_request_unpack(d, msg, len, &r->st, &r->why);
}

void cs_request_fail(cs_req *r, cs_method meth, void *q) {
  if (q)
    protobuf_c_message_free_unpacked(q, NULL);
  cs_finish(r->m, r->call, meth, r->start, r->st, r->why, NULL, 0);
}

void cs_reference(const cs *m, const uint8_t *checksum, size_t len,
                  uint8_t out[32]) {
  unsigned int n = 32;
  static const uint8_t empty = 0;
  if (!HMAC(EVP_sha256(), m->ref_key, CS_KEY_LEN, len ? checksum : &empty,
            len, out, &n))
    memset(out, 0, 32); /* a zero reference matches nothing issued */
}

void cs_update_ready(cs *m) {
  uint64_t rev;
  int store_ok = m->store && m->store->revision(m->store_self, &rev) == PH_OK;
  if (!m->stopping)
    api->set_ready(m->ctx, m->srv && m->auth_up && store_ok);
}

void cs_link_add(cs *m, cs_link *l, void (*abandon)(cs_link *)) {
  l->abandon = abandon;
  ilist_push_front(&m->pending, &l->node);
}

void cs_link_del(cs_link *l) { ilist_remove(&l->node); }

void cs_note_auth(cs *m, cp_auth_result r) {
  int up = r != CP_AUTH_UNAVAILABLE;
  if (up != m->auth_up) {
    m->auth_up = up;
    cs_update_ready(m);
  }
}

void cs_auth_cancel(cs *m, int64_t *call) {
  if (*call > 0 && m->auth)
    m->auth->cancel(m->auth_self, *call);
  *call = 0;
}

/* reference_key_file: exactly 32 bytes, a regular file readable by its
 * owner alone. */
static int read_key(cs *m, const char *path, const char **why) {
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (fd < 0) {
    *why = "cannot open it";
    return -1;
  }
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077)) {
    close(fd);
    *why = "not a regular file of mode 0600 or 0400";
    return -1;
  }
  uint8_t buf[CS_KEY_LEN + 1];
  ssize_t n = read(fd, buf, sizeof(buf));
  close(fd);
  if (n != CS_KEY_LEN) {
    OPENSSL_cleanse(buf, sizeof(buf));
    *why = "must hold exactly 32 bytes";
    return -1;
  }
  memcpy(m->ref_key, buf, CS_KEY_LEN);
  OPENSSL_cleanse(buf, sizeof(buf));
  return 0;
}

static int cs_check(ph_ctx *ctx, const ph_api *a, const char **key, char *why,
                    size_t whylen) {
  cs_conf c;
  int rc = cs_conf_read(ctx, a, &c, key, why, whylen);
  if (rc == PH_OK && c.reference_key_file[0]) {
    cs tmp;
    const char *w = NULL;
    memset(&tmp, 0, sizeof(tmp));
    if (read_key(&tmp, c.reference_key_file, &w) != 0) {
      *key = "reference_key_file";
      snprintf(why, whylen, "%s", w);
      rc = PH_EINVAL;
    }
    OPENSSL_cleanse(tmp.ref_key, sizeof(tmp.ref_key));
  }
  return rc;
}

static int cs_init(ph_ctx *ctx, const ph_api *a, void **state) {
  api = a;
  cs *m = calloc(1, sizeof(*m));
  if (!m)
    return PH_ENOMEM;
  *state = m;
  m->ctx = ctx;
  ilist_init(&m->watches);
  ilist_init(&m->pending);
  ilist_init(&m->waiters);
  const char *key;
  char why[256];
  if (cs_conf_read(ctx, a, &m->conf, &key, why, sizeof(why)) != PH_OK)
    return ph_conf_refused(api, ctx, "bad configuration", key, why);
  if (m->conf.reference_key_file[0]) {
    const char *w;
    if (read_key(m, m->conf.reference_key_file, &w) != 0) {
      PH_LOG(api, ctx, PH_LOG_ERROR, "bad reference key",
             PH_STR("key", "reference_key_file"), PH_STR("reason", w));
      return PH_EINVAL;
    }
  } else {
    if (RAND_bytes(m->ref_key, CS_KEY_LEN) != 1)
      return PH_EINVAL;
    PH_LOG(api, ctx, PH_LOG_WARN,
           "reference_key_file not set: a random reference key for this "
           "process; acknowledgements fail across controllers and restarts "
           "and workers register again");
  }
  if (register_metrics(m) != PH_OK || cs_checkers_init(m) != PH_OK ||
      cs_health_init(m) != PH_OK || cs_members_init(m) != PH_OK ||
      cs_status_init(m) != PH_OK ||
      ph_tls_reload_init(&m->tls, a, ctx, "controlplane_server",
                         "control-plane TLS certificate") != PH_OK)
    return PH_EINVAL;
  /* For the admin API: a proxy whose credential cannot be read is shown
   * unusable with its reason (issue 23 item 6). */
  if (api->service_register(ctx, CP_HEALTH_SERVICE, CP_HEALTH_MAJOR,
                            CP_HEALTH_MINOR, &cs_health_service, m) != PH_OK)
    return PH_EINVAL;
  return api->service_register(ctx, CP_CREDCHECK_SERVICE, CP_CREDCHECK_MAJOR,
                               CP_CREDCHECK_MINOR, &cs_credcheck_service, m);
}

/* The certificate, key and CA re-read from the paths of start: gRPC's
 * next handshake takes them, connections made keep theirs. */
static void cs_tls_reload(void *arg, const char *trigger) {
  cs *m = arg;
  if (!m->srv || m->tls_paths.mode != CP_TLS_MTLS)
    return;
  cp_grpc_tls t;
  char e[256] = "";
  cp_grpc_tls_paths_get(&m->tls_paths, &t);
  int rc = cp_grpc_server_reload_tls(m->srv, &t, e, sizeof(e));
  ph_tls_reload_done(&m->tls, rc, trigger, e);
}

static int cs_tls_watch(cs *m) {
  int mtls = m->tls_paths.mode == CP_TLS_MTLS;
  const char *files[PH_TLS_WATCH_FILES] = {
      mtls ? m->tls_paths.cert : NULL, mtls ? m->tls_paths.key : NULL,
      mtls ? m->tls_paths.ca : NULL};
  return ph_tls_watch_key(&m->tls, files, cs_tls_reload, m);
}

static int cs_reload(void *state) {
  cs *m = state;
  if (m->stopping)
    return PH_OK;
  cs_tls_reload(m, "sighup");
  return cs_tls_watch(m);
}

static const cp_grpc_method *methods(cs *m, size_t *n) {
  static cp_grpc_method t[8];
  const cp_grpc_method v[8] = {
      {"/controlplane.v1.WorkerControlPlane/RegisterWorker", CP_RPC_UNARY,
       cs_register_rpc, m},
      {"/controlplane.v1.WorkerControlPlane/WatchSnapshots",
       CP_RPC_SERVER_STREAM, cs_watch_rpc, m},
      {"/controlplane.v1.WorkerControlPlane/AcknowledgeSnapshot",
       CP_RPC_UNARY, cs_ack_rpc, m},
      {"/controlplane.v1.WorkerControlPlane/ReportRuntime", CP_RPC_UNARY,
       cs_runtime_rpc, m},
      {"/controlplane.v1.WorkerControlPlane/ReportOutcomes",
       CP_RPC_CLIENT_STREAM, cs_outcomes_rpc, m},
      /* issue 26: the checkers' service (cs_checker.h) */
      {"/controlplane.v1.CheckerControlPlane/RegisterChecker", CP_RPC_UNARY,
       cs_checker_register_rpc, m},
      {"/controlplane.v1.CheckerControlPlane/WatchCheckTasks",
       CP_RPC_SERVER_STREAM, cs_checker_watch_rpc, m},
      {"/controlplane.v1.CheckerControlPlane/ReportObservations",
       CP_RPC_CLIENT_STREAM, cs_checker_report_rpc, m}};
  memcpy(t, v, sizeof(t));
  *n = 8;
  return t;
}

static int cs_start(void *state) {
  cs *m = state;
  api->set_ready(m->ctx, 0);
  m->auth = api->service_get_named(m->ctx, CP_AUTHORITY_SERVICE,
                                   m->conf.authority, CP_AUTHORITY_MAJOR,
                                   CP_AUTHORITY_MINOR, &m->auth_self);
  if (!m->auth) {
    PH_LOG(api, m->ctx, PH_LOG_ERROR, "no cp.authority provider",
           PH_STR("key", "authority"));
    return PH_EINVAL;
  }
  /* The provider itself says which cluster it serves: this also covers
   * an authority the configuration check could not name (an empty
   * `authority` resolved to a named instance, [redis_ownership.eu]). */
  const char *theirs = m->auth->cluster_id(m->auth_self);
  if (strcmp(theirs, m->conf.cluster_id) != 0) {
    PH_LOG(api, m->ctx, PH_LOG_ERROR,
           "the authority serves another cluster: refusing to start",
           PH_STR("key", "cluster_id"), PH_STR("cluster_id", m->conf.cluster_id),
           PH_STR("authority_cluster_id", theirs));
    return PH_EINVAL;
  }
  m->store = api->service_get_named(m->ctx, PH_POOL_STORE_SERVICE,
                                    m->conf.store, PH_POOL_STORE_MAJOR,
                                    PH_POOL_STORE_MINOR, &m->store_self);
  if (!m->store) {
    PH_LOG(api, m->ctx, PH_LOG_ERROR, "no pool.store provider",
           PH_STR("key", "store"));
    return PH_EINVAL;
  }
  const char *err = NULL;
  m->cq = cp_grpc_cq_new(m->ctx, api, "grpc", &err);
  if (!m->cq) {
    PH_LOG(api, m->ctx, PH_LOG_ERROR, "grpc completion queue failed",
           PH_STR("reason", err ? err : "unknown"));
    return PH_EINVAL;
  }
  cp_grpc_server_cfg cfg;
  cp_grpc_conf_server(m->ctx, api, "listen", &cfg);
  cfg.m_unauthenticated = m->m_unauth;
  cfg.m_dropped_limit = m->m_dropped[0];
  cfg.m_dropped_timeout = m->m_dropped[1];
  size_t n;
  const cp_grpc_method *t = methods(m, &n);
  char e[256] = "";
  m->srv = cp_grpc_server_new(m->cq, &cfg, t, n, e, sizeof(e));
  if (!m->srv) {
    PH_LOG(api, m->ctx, PH_LOG_ERROR, "grpc server failed",
           PH_STR("listen", cfg.listen), PH_STR("reason", e));
    return PH_EINVAL;
  }
  cp_grpc_tls_paths_keep(&m->tls_paths, &cfg.tls);
  if (cs_tls_watch(m) != PH_OK)
    return PH_ENOMEM;
  PH_LOG(api, m->ctx, PH_LOG_INFO, "controller listening",
         PH_STR("listen", cfg.listen),
         PH_INT("port", cp_grpc_server_port(m->srv)),
         PH_STR("tls", m->conf.mtls ? "mtls" : "disabled"));
  m->auth_up = 1; /* until an answer says otherwise */
  m->assign_timer = api->timer_new(m->ctx, cs_assign_tick, m);
  if (!m->assign_timer)
    return PH_ENOMEM;
  api->timer_set(m->assign_timer, 10, (uint64_t)m->conf.assign_interval_ms);
  cs_members_start(m);
  cs_sched_start(m);
  return cs_health_start(m);
}

static int cs_stop(void *state) {
  cs *m = state;
  m->stopping = 1;
  api->set_ready(m->ctx, 0);
  if (m->assign_timer) {
    api->timer_free(m->assign_timer);
    m->assign_timer = NULL;
  }
  cs_auth_cancel(m, &m->assign_call);
  cs_watch_stop_all(m);
  cs_checkers_stop(m);
  cs_members_stop(m);
  cs_health_stop(m);
  for (ilist_node *n; (n = ilist_pop(&m->pending));) {
    cs_link *l = ILIST_ENTRY(n, cs_link, node);
    l->abandon(l);
  }
  cs_pool_stop(m);
  ph_tls_reload_free(&m->tls);
  /* Ends every call without another callback of ours. */
  cp_grpc_cq_free(m->cq);
  m->cq = NULL;
  m->srv = NULL;
  return PH_OK;
}

static void cs_destroy(void *state) {
  cs *m = state;
  if (!m)
    return;
  OPENSSL_cleanse(m->ref_key, sizeof(m->ref_key));
  ph_tls_reload_free(&m->tls);
  cs_checkers_free(m);
  cs_health_free(m);
  cs_members_free(m);
  free(m->prev_ids);
  free(m);
}

static const char *const requires[] = {CP_AUTHORITY_SERVICE,
                                   PH_POOL_STORE_SERVICE, NULL};
static const char *const provides[] = {CP_CREDCHECK_SERVICE,
                                       CP_HEALTH_SERVICE, NULL};

PROXYHOST_MODULE = {
    PH_MODULE_HEADER("controlplane_server", "1.0.0"),
    .description = "control-plane controller: the WorkerControlPlane and "
                   "CheckerControlPlane gRPC server",
    .requires = requires,
    .provides = provides,
    .config = cs_conf_keys,
    .init = cs_init,
    .start = cs_start,
    .reload = cs_reload,
    .stop = cs_stop,
    .destroy = cs_destroy,
    .check = cs_check,
};
