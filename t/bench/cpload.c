/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cpload: the fenced-RPC benchmark's load generator (issue 12,
 * "Benchmark"). It plays W workers against a real controller (proxyhost
 * with controlplane_server + redis_ownership) and measures, in one run:
 *
 *   grpc   each worker, on a gRPC channel (one connection) of its own over
 *          cp_grpc: RegisterWorker, the first snapshot of WatchSnapshots
 *          (then the stream is cancelled), a positive AcknowledgeSnapshot,
 *          then ReportRuntime back to back, one in flight per worker, with
 *          a rising report_sequence and K sparse counters;
 *   redis  the floor: the same runtime script (redis_ownership's own text,
 *          ro_scripts.c, loaded with SCRIPT LOAD) run with EVALSHA over one
 *          hiredis connection on the same loop, W in flight (pipelined, as
 *          the controller's one connection does), for the same workers'
 *          sessions and baselines with the same argument shape: one fenced
 *          step, the Redis side of one ReportRuntime.
 *
 * Each mode runs WARMUP seconds uncounted, then DURATION seconds counted.
 * Output: one line "mode=... key=value ..." per mode: completed calls,
 * calls/s, p50/p99/max latency (us, exact: every sample kept, bounded by
 * CPL_SAMPLES_MAX), errors, and the CPU (utime + stime from /proc/PID/stat)
 * of the controller, of redis-server and of this process over the counted
 * window, each per call (us), and the commands Redis ran per call (INFO
 * commandstats: all of them, and EVALSHA's), which shows whether an RPC
 * is one Redis step, and the context switches of the controller's and
 * redis-server's threads per call (the status files under /proc/PID/task).
 *
 *   cpload --address 127.0.0.1:PORT --redis 127.0.0.1:PORT --ctl-pid PID
 *          --redis-pid PID [--workers W] [--counters K] [--duration S]
 *          [--warmup S] [--modes grpc,redis] [--cluster ID] [--prefix NAME]
 *          [--session-ttl MS] [--runtime-ttl MS] [--lease MS]
 *
 * Without --redis (and with --modes grpc) no Redis is used: against
 * t/lib/cp_echo_server, the same cp_grpc server answering from memory,
 * this measures the gRPC floor of one unary RPC; --ctl-pid is then the
 * echo server's. The TTLs and the lease must be redis_ownership's (they
 * are ARGV of the script). On demand only, never in make check:
 * t/bench/controlplane.sh.
 */
#include <dirent.h>
#include <getopt.h>
#include <hiredis/adapters/libev.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <proxyhost/mock.h>

#include "controlplane/v1/controlplane.pb-c.h"
#include "cp_common/grpc/cp_grpc.h"
#include "redis_ownership/ro_scripts.h"

#define SVC "/controlplane.v1.WorkerControlPlane/"
#define CPL_WORKERS_MAX 4096
#define CPL_COUNTERS_MAX 1024
#define CPL_SAMPLES_MAX (8u << 20) /* latencies kept per mode */
#define CPL_SETUP_MS 30000         /* register + watch + ack, all workers */
#define CPL_TIMEOUT_MS 10000       /* one RPC's deadline */

/* ---- options ---------------------------------------------------------- */

static const char *ADDR, *REDIS_ADDR, *CLUSTER = "c1", *PREFIX = "bw";
static const char *MODES = "grpc,redis";
static long CTL_PID, REDIS_PID;
static int W = 1, K = 0;
static double DURATION = 5, WARMUP = 1;
static int64_t SESSION_TTL = 30000, RUNTIME_TTL = 15000, LEASE = 30000;

/* ---- time and CPU -------------------------------------------------------- */

static int64_t mono_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

static int64_t wall_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* utime + stime of pid (every thread), in seconds; -1 when unreadable. */
static double proc_cpu_s(long pid) {
  char path[64], buf[2048];
  snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  char *p = strrchr(buf, ')'); /* the command may hold spaces */
  if (!p)
    return -1;
  unsigned long long ut = 0, st = 0;
  /* After ")": state (3) ... utime is field 14, stime 15. */
  if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
             &ut, &st) != 2)
    return -1;
  return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static double self_cpu_s(void) { return proc_cpu_s((long)getpid()); }

/* Context switches (voluntary + not) summed over pid's threads; -1 when
 * unreadable. A thread that ended in between drops out: a lower bound. */
static double proc_switches(long pid) {
  char path[96];
  snprintf(path, sizeof path, "/proc/%ld/task", pid);
  DIR *d = opendir(path);
  if (!d)
    return -1;
  double sum = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    char sp[160], line[128];
    snprintf(sp, sizeof sp, "/proc/%ld/task/%.32s/status", pid, e->d_name);
    FILE *f = fopen(sp, "r");
    if (!f)
      continue;
    unsigned long long v;
    while (fgets(line, sizeof line, f))
      if (sscanf(line, "voluntary_ctxt_switches: %llu", &v) == 1 ||
          sscanf(line, "nonvoluntary_ctxt_switches: %llu", &v) == 1)
        sum += (double)v;
    fclose(f);
  }
  closedir(d);
  return sum;
}

/* ---- workers ------------------------------------------------------------ */

typedef enum wstate {
  WS_REGISTER = 0,
  WS_WATCH,
  WS_ACK,
  WS_READY,
  WS_FAILED
} wstate;

typedef struct worker {
  int idx;
  char id[64];
  char session[129];
  uint64_t epoch, version, seq;
  uint8_t checksum[32];
  size_t checksum_len;
  wstate st;
  cp_grpc_channel *ch;
  cp_grpc_ccall *watch;
  int64_t t0_us; /* the call in flight started */
  int busy;      /* a runtime call (gRPC or EVALSHA) in flight */
} worker;

typedef struct mode_stats {
  uint64_t done, errors, err_by_code[17];
  uint32_t *lat; /* us, the counted window's */
  size_t n_lat;
} mode_stats;

static struct {
  ph_ctx *ctx;
  const ph_api *api;
  cp_grpc_cq *cq;
  worker *w;
  int ready, failed;
  /* the run */
  int running;     /* 1 while a mode's load runs */
  int redis_mode;  /* 0 grpc, 1 redis */
  int counting;    /* inside the counted window */
  int64_t stop_us; /* no new call after this */
  mode_stats ms;
  redisAsyncContext *rc;
  int redis_up;
  const char *sha;
  char **kv_ids; /* the counters' proxy ids */
} G;

static void fatal(const char *what) {
  fprintf(stderr, "cpload: %s\n", what);
  exit(1);
}

static void record(int64_t t0, int code) {
  if (!G.counting)
    return;
  if (code) {
    G.ms.errors++;
    G.ms.err_by_code[code > 0 && code < 17 ? code : 16]++;
    return;
  }
  G.ms.done++;
  if (G.ms.n_lat < CPL_SAMPLES_MAX)
    G.ms.lat[G.ms.n_lat++] = (uint32_t)(mono_us() - t0);
}

/* Packs a message and starts a unary call. */
static cp_grpc_ccall *unary(worker *w, const char *method,
                            const ProtobufCMessage *m,
                            const cp_grpc_ccall_cbs *cbs) {
  size_t n = protobuf_c_message_get_packed_size(m);
  uint8_t stackbuf[16384];
  uint8_t *buf = n <= sizeof stackbuf ? stackbuf : malloc(n);
  if (!buf)
    fatal("out of memory");
  protobuf_c_message_pack(m, buf);
  w->t0_us = mono_us();
  cp_grpc_ccall *c = cp_grpc_ccall_start(w->ch, method, CP_RPC_UNARY,
                                         CPL_TIMEOUT_MS, buf, n, cbs, w);
  if (buf != stackbuf)
    free(buf);
  if (!c)
    fatal("cp_grpc_ccall_start failed");
  return c;
}

static void set_failed(worker *w, const char *what, int status,
                       const char *msg) {
  fprintf(stderr, "cpload: worker %s: %s: status %d %s\n", w->id, what, status,
          msg ? msg : "");
  w->st = WS_FAILED;
  G.failed++;
}

/* ---- set-up: register, first snapshot, ACK ----------------------------- */

static void start_watch(worker *w);
static void start_ack(worker *w);

static void reg_msg(void *arg, cp_grpc_ccall *c, const uint8_t *msg,
                    size_t len) {
  (void)c;
  worker *w = arg;
  Controlplane__V1__RegisterWorkerResponse *r =
      controlplane__v1__register_worker_response__unpack(NULL, len, msg);
  if (!r || !r->session_id || strlen(r->session_id) >= sizeof w->session)
    fatal("unreadable RegisterWorkerResponse");
  snprintf(w->session, sizeof w->session, "%s", r->session_id);
  w->epoch = r->ownership_epoch;
  controlplane__v1__register_worker_response__free_unpacked(r, NULL);
}

static void reg_done(void *arg, cp_grpc_ccall *c, int status,
                     const char *msg) {
  (void)c;
  worker *w = arg;
  if (status != CP_GRPC_OK || !w->session[0]) {
    set_failed(w, "RegisterWorker", status, msg);
    return;
  }
  w->st = WS_WATCH;
  start_watch(w);
}

static void start_register(worker *w) {
  Controlplane__V1__RegisterWorkerRequest q =
      CONTROLPLANE__V1__REGISTER_WORKER_REQUEST__INIT;
  q.cluster_id = (char *)CLUSTER;
  q.worker_id = w->id;
  q.instance_id = "i1";
  q.zone = "zone-0";
  q.supported_protocol_version =
      CONTROLPLANE__V1__PROTOCOL_VERSION__PROTOCOL_VERSION_V1;
  static const cp_grpc_ccall_cbs cbs = {reg_msg, NULL, reg_done};
  unary(w, SVC "RegisterWorker", &q.base, &cbs);
}

static void watch_msg(void *arg, cp_grpc_ccall *c, const uint8_t *msg,
                      size_t len) {
  worker *w = arg;
  if (w->version)
    return; /* the first one is enough */
  Controlplane__V1__WatchSnapshotsResponse *r =
      controlplane__v1__watch_snapshots_response__unpack(NULL, len, msg);
  if (!r || r->payload_case !=
                CONTROLPLANE__V1__WATCH_SNAPSHOTS_RESPONSE__PAYLOAD_SNAPSHOT ||
      !r->snapshot || r->snapshot->checksum.len > sizeof w->checksum)
    fatal("the first stream message is not a full snapshot");
  w->version = r->snapshot->version;
  w->epoch = r->snapshot->ownership_epoch;
  w->checksum_len = r->snapshot->checksum.len;
  memcpy(w->checksum, r->snapshot->checksum.data, w->checksum_len);
  controlplane__v1__watch_snapshots_response__free_unpacked(r, NULL);
  cp_grpc_ccall_cancel(c);
}

static void watch_done(void *arg, cp_grpc_ccall *c, int status,
                       const char *msg) {
  (void)c;
  worker *w = arg;
  w->watch = NULL;
  if (!w->version) {
    set_failed(w, "WatchSnapshots", status, msg);
    return;
  }
  w->st = WS_ACK;
  start_ack(w);
}

static void start_watch(worker *w) {
  Controlplane__V1__WatchSnapshotsRequest q =
      CONTROLPLANE__V1__WATCH_SNAPSHOTS_REQUEST__INIT;
  q.worker_id = w->id;
  q.session_id = w->session;
  uint8_t buf[512];
  size_t n = controlplane__v1__watch_snapshots_request__pack(&q, buf);
  static const cp_grpc_ccall_cbs cbs = {watch_msg, NULL, watch_done};
  w->watch = cp_grpc_ccall_start(w->ch, SVC "WatchSnapshots",
                                 CP_RPC_SERVER_STREAM, CPL_TIMEOUT_MS, buf, n,
                                 &cbs, w);
  if (!w->watch)
    fatal("cp_grpc_ccall_start failed");
}

static void ack_msg(void *arg, cp_grpc_ccall *c, const uint8_t *msg,
                    size_t len) {
  (void)arg;
  (void)c;
  (void)msg;
  (void)len;
}

static void ack_done(void *arg, cp_grpc_ccall *c, int status,
                     const char *msg) {
  (void)c;
  worker *w = arg;
  if (status != CP_GRPC_OK) {
    set_failed(w, "AcknowledgeSnapshot", status, msg);
    return;
  }
  w->st = WS_READY;
  G.ready++;
}

static void start_ack(worker *w) {
  Controlplane__V1__AcknowledgeSnapshotRequest q =
      CONTROLPLANE__V1__ACKNOWLEDGE_SNAPSHOT_REQUEST__INIT;
  q.worker_id = w->id;
  q.session_id = w->session;
  q.version = w->version;
  q.ownership_epoch = w->epoch;
  q.checksum.data = w->checksum;
  q.checksum.len = w->checksum_len;
  q.result = CONTROLPLANE__V1__ACK_RESULT__ACK_RESULT_ACCEPTED;
  static const cp_grpc_ccall_cbs cbs = {ack_msg, NULL, ack_done};
  unary(w, SVC "AcknowledgeSnapshot", &q.base, &cbs);
}

/* ---- the gRPC load: ReportRuntime back to back ------------------------ */

static void next_runtime(worker *w);

static void rt_msg(void *arg, cp_grpc_ccall *c, const uint8_t *msg,
                   size_t len) {
  (void)arg;
  (void)c;
  (void)msg;
  (void)len;
}

static void rt_done(void *arg, cp_grpc_ccall *c, int status,
                    const char *msg) {
  (void)c;
  (void)msg;
  worker *w = arg;
  w->busy = 0;
  record(w->t0_us, status);
  if (status != CP_GRPC_OK && G.counting && G.ms.errors <= 3)
    fprintf(stderr, "cpload: ReportRuntime %s: status %d %s\n", w->id, status,
            msg ? msg : "");
  next_runtime(w);
}

static void next_runtime(worker *w) {
  if (!G.running || mono_us() >= G.stop_us)
    return;
  Controlplane__V1__ReportRuntimeRequest q =
      CONTROLPLANE__V1__REPORT_RUNTIME_REQUEST__INIT;
  Google__Protobuf__Timestamp at = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
  Controlplane__V1__ProxyCounter cn[CPL_COUNTERS_MAX],
      *cp[CPL_COUNTERS_MAX];
  int64_t now = wall_ms();
  at.seconds = now / 1000;
  at.nanos = (int32_t)(now % 1000) * 1000000;
  q.worker_id = w->id;
  q.session_id = w->session;
  q.report_sequence = ++w->seq;
  q.snapshot_version = w->version;
  q.ownership_epoch = w->epoch;
  q.observed_at = &at;
  for (int i = 0; i < K; i++) {
    controlplane__v1__proxy_counter__init(&cn[i]);
    cn[i].proxy_id = G.kv_ids[i];
    cn[i].active = 1 + (uint32_t)((w->seq + (uint64_t)i) % 7);
    cn[i].reserved = (uint32_t)(w->seq % 3);
    cp[i] = &cn[i];
  }
  q.counters = cp;
  q.n_counters = (size_t)K;
  static const cp_grpc_ccall_cbs cbs = {rt_msg, NULL, rt_done};
  w->busy = 1;
  unary(w, SVC "ReportRuntime", &q.base, &cbs);
}

/* ---- the Redis floor: EVALSHA of the same script ----------------------- */

static void next_eval(worker *w);

static void eval_reply(redisAsyncContext *ac, void *r, void *priv) {
  (void)ac;
  worker *w = priv;
  redisReply *rep = r;
  w->busy = 0;
  int ok = rep && rep->type == REDIS_REPLY_ARRAY && rep->elements >= 1 &&
           rep->element[0]->type == REDIS_REPLY_STRING &&
           strcmp(rep->element[0]->str, "ok") == 0;
  if (!ok && G.counting && G.ms.errors < 3)
    fprintf(stderr, "cpload: EVALSHA %s: %s\n", w->id,
            !rep ? "no reply"
            : rep->type == REDIS_REPLY_ERROR ? rep->str
            : rep->type == REDIS_REPLY_ARRAY && rep->elements &&
                    rep->element[0]->type == REDIS_REPLY_STRING
                ? rep->element[0]->str
                : "unexpected reply");
  record(w->t0_us, ok ? 0 : 16);
  if (rep)
    next_eval(w);
}

static void next_eval(worker *w) {
  if (!G.running || mono_us() >= G.stop_us || !G.redis_up)
    return;
  /* EVALSHA sha 1 <epoch key> <prefix> then runtime.lua's ARGV[2..]:
   * worker, session, sequence, digest_hex, version, epoch, session_ttl,
   * runtime_ttl, lease, n, n x (proxy, active, reserved, draining). */
  enum { FIXED = 15 };
  static const char *argv[FIXED + 4 * CPL_COUNTERS_MAX];
  static size_t argl[FIXED + 4 * CPL_COUNTERS_MAX];
  static char nums[FIXED + 4 * CPL_COUNTERS_MAX][24];
  char key[192], prefix[192], digest[65];
  snprintf(key, sizeof key, "ph:cp:{%s}:epoch", CLUSTER);
  snprintf(prefix, sizeof prefix, "ph:cp:{%s}:", CLUSTER);
  uint64_t seq = ++w->seq;
  /* A distinct digest per sequence (the controller's is SHA-256 of the
   * request; its cost is the controller's, not Redis'). */
  snprintf(digest, sizeof digest, "%016" PRIx64 "%016" PRIx64 "%016" PRIx64
           "%016" PRIx64, seq, (uint64_t)w->idx, seq * 2654435761u, seq);
  int a = 0;
#define ARG(s) (argv[a] = (s), argl[a] = strlen(argv[a]), a++)
#define NUM(v)                                                                \
  (snprintf(nums[a], sizeof nums[a], "%" PRIu64, (uint64_t)(v)), ARG(nums[a]))
  ARG("EVALSHA");
  ARG(G.sha);
  ARG("1");
  ARG(key);
  ARG(prefix);
  ARG(w->id);
  ARG(w->session);
  NUM(seq);
  ARG(digest);
  NUM(w->version);
  NUM(w->epoch);
  NUM(SESSION_TTL);
  NUM(RUNTIME_TTL);
  NUM(LEASE);
  NUM(K);
  for (int i = 0; i < K; i++) {
    ARG(G.kv_ids[i]);
    NUM(1 + (seq + (uint64_t)i) % 7);
    NUM(seq % 3);
    ARG("0");
  }
#undef ARG
#undef NUM
  w->busy = 1;
  w->t0_us = mono_us();
  if (redisAsyncCommandArgv(G.rc, eval_reply, w, a, argv, argl) != REDIS_OK)
    fatal("redisAsyncCommandArgv failed");
}

static void redis_connected(const redisAsyncContext *ac, int status) {
  if (status != REDIS_OK)
    fatal(ac->errstr[0] ? ac->errstr : "redis connect failed");
  G.redis_up = 1;
}

static void redis_disconnected(const redisAsyncContext *ac, int status) {
  (void)ac;
  (void)status;
  G.redis_up = 0;
  G.rc = NULL;
}

static void script_loaded(redisAsyncContext *ac, void *r, void *priv) {
  (void)ac;
  (void)priv;
  redisReply *rep = r;
  if (!rep || rep->type != REDIS_REPLY_STRING || strcmp(rep->str, G.sha) != 0)
    fatal("SCRIPT LOAD did not answer redis_ownership's SHA");
}

static void redis_open(void) {
  char host[128];
  snprintf(host, sizeof host, "%s", REDIS_ADDR);
  char *colon = strrchr(host, ':');
  if (!colon)
    fatal("--redis wants host:port");
  *colon = 0;
  G.rc = redisAsyncConnect(host, atoi(colon + 1));
  if (!G.rc || G.rc->err)
    fatal("redisAsyncConnect failed");
  redisLibevAttach(G.api->loop(G.ctx), G.rc);
  redisAsyncSetConnectCallback(G.rc, redis_connected);
  redisAsyncSetDisconnectCallback(G.rc, redis_disconnected);
  size_t len = 0;
  const char *text = ro_script_text(RO_S_RUNTIME, &len);
  const char *argv[3] = {"SCRIPT", "LOAD", text};
  size_t argl[3] = {6, 4, len};
  redisAsyncCommandArgv(G.rc, script_loaded, NULL, 3, argv, argl);
}

/* Commands Redis has run: every cmdstat's calls, and EVALSHA's alone
 * (INFO commandstats, asked on the same connection and waited for, at
 * most 2 s; the INFO itself is not counted in what it reports). */
typedef struct cmd_counts {
  int got;
  double all, evalsha;
} cmd_counts;

static void info_reply(redisAsyncContext *ac, void *r, void *priv) {
  (void)ac;
  cmd_counts *c = priv;
  redisReply *rep = r;
  if (!rep || rep->type != REDIS_REPLY_STRING)
    return;
  for (const char *p = rep->str; p && *p; p = strchr(p, '\n')) {
    if (*p == '\n')
      p++;
    double calls;
    char name[64];
    if (sscanf(p, "cmdstat_%63[^:]:calls=%lf", name, &calls) == 2) {
      c->all += calls;
      if (strcmp(name, "evalsha") == 0)
        c->evalsha = calls;
    }
  }
  c->got = 1;
}

static cmd_counts redis_counts(ph_mock *m) {
  cmd_counts c = {0, 0, 0};
  if (!G.rc || redisAsyncCommand(G.rc, info_reply, &c, "INFO commandstats") !=
                   REDIS_OK)
    return c;
  for (int i = 0; i < 400 && !c.got; i++)
    ph_mock_run_for(m, 5);
  return c;
}

/* ---- the module on the mock host ------------------------------------- */

static int cpl_init(ph_ctx *ctx, const ph_api *a, void **state) {
  G.ctx = ctx;
  G.api = a;
  *state = &G;
  /* The completion queue's host thread may start only here. */
  const char *e = NULL;
  G.cq = cp_grpc_cq_new(ctx, a, "cq", &e);
  if (!G.cq) {
    fprintf(stderr, "cpload: %s\n", e ? e : "cp_grpc_cq_new failed");
    return PH_EINVAL;
  }
  return PH_OK;
}

static const ph_conf_key keys[] = {PH_CONF_END};
static const ph_module cpl_mod = {
    PH_MODULE_HEADER("cpload", "1.0.0"),
    .config = keys,
    .init = cpl_init,
};

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

static void run_mode(ph_mock *m, int redis_mode) {
  memset(&G.ms, 0, sizeof G.ms);
  G.ms.lat = malloc(CPL_SAMPLES_MAX * sizeof(uint32_t));
  if (!G.ms.lat)
    fatal("out of memory");
  G.redis_mode = redis_mode;
  G.running = 1;
  G.counting = 0;
  int64_t t0 = mono_us();
  int64_t count_at = t0 + (int64_t)(WARMUP * 1e6);
  int64_t end_at = count_at + (int64_t)(DURATION * 1e6);
  G.stop_us = end_at;
  for (int i = 0; i < W; i++)
    if (G.w[i].st == WS_READY)
      redis_mode ? next_eval(&G.w[i]) : next_runtime(&G.w[i]);
  while (mono_us() < count_at)
    ph_mock_run_for(m, 5);
  cmd_counts k0 = redis_counts(m);
  double c_ctl0 = proc_cpu_s(CTL_PID), c_rd0 = proc_cpu_s(REDIS_PID),
         c_me0 = self_cpu_s();
  double sw_ctl0 = proc_switches(CTL_PID), sw_rd0 = proc_switches(REDIS_PID);
  int64_t w0 = mono_us();
  G.counting = 1;
  while (mono_us() < end_at)
    ph_mock_run_for(m, 5);
  G.counting = 0;
  int64_t w1 = mono_us();
  double c_ctl1 = proc_cpu_s(CTL_PID), c_rd1 = proc_cpu_s(REDIS_PID),
         c_me1 = self_cpu_s();
  double sw_ctl1 = proc_switches(CTL_PID), sw_rd1 = proc_switches(REDIS_PID);
  G.running = 0;
  /* The commands Redis ran over the window, per completed call (the
   * calls still in flight at either end blur it by at most W). */
  cmd_counts k1 = redis_counts(m);
  /* Let the calls in flight end (bounded). */
  for (int k = 0; k < 2000; k++) {
    int busy = 0;
    for (int i = 0; i < W; i++)
      busy += G.w[i].busy;
    if (!busy)
      break;
    ph_mock_run_for(m, 5);
  }
  double secs = (double)(w1 - w0) / 1e6;
  qsort(G.ms.lat, G.ms.n_lat, sizeof(uint32_t), cmp_u32);
  uint32_t p50 = 0, p99 = 0, mx = 0;
  if (G.ms.n_lat) {
    p50 = G.ms.lat[(G.ms.n_lat - 1) / 2];
    p99 = G.ms.lat[(size_t)((double)(G.ms.n_lat - 1) * 0.99)];
    mx = G.ms.lat[G.ms.n_lat - 1];
  }
  double d = G.ms.done ? (double)G.ms.done : 1;
  printf("mode=%s workers=%d counters=%d done=%" PRIu64 " errors=%" PRIu64
         " secs=%.3f per_sec=%.1f p50_us=%u p99_us=%u max_us=%u "
         "ctl_cpu_s=%.2f redis_cpu_s=%.2f load_cpu_s=%.2f "
         "ctl_us_per=%.1f redis_us_per=%.1f load_us_per=%.1f "
         "redis_cmds_per=%.3f evalsha_per=%.3f ctl_switches_per=%.2f "
         "redis_switches_per=%.2f\n",
         redis_mode ? "redis" : "grpc", W, K, G.ms.done, G.ms.errors, secs,
         (double)G.ms.done / secs, p50, p99, mx, c_ctl1 - c_ctl0,
         c_rd1 - c_rd0, c_me1 - c_me0, (c_ctl1 - c_ctl0) * 1e6 / d,
         (c_rd1 - c_rd0) * 1e6 / d, (c_me1 - c_me0) * 1e6 / d,
         k0.got && k1.got ? (k1.all - k0.all - 1) / d : -1.0,
         k0.got && k1.got ? (k1.evalsha - k0.evalsha) / d : -1.0,
         (sw_ctl1 - sw_ctl0) / d, (sw_rd1 - sw_rd0) / d);
  fflush(stdout);
  free(G.ms.lat);
  G.ms.lat = NULL;
}

static void usage(void) {
  fprintf(stderr,
          "usage: cpload --address H:P --redis H:P --ctl-pid PID "
          "--redis-pid PID [--workers W] [--counters K] [--duration S] "
          "[--warmup S] [--modes grpc,redis] [--cluster ID] [--prefix P] "
          "[--session-ttl MS] [--runtime-ttl MS] [--lease MS]\n");
  exit(2);
}

int main(int argc, char **argv) {
  static const struct option opts[] = {
      {"address", 1, NULL, 'a'},     {"redis", 1, NULL, 'r'},
      {"ctl-pid", 1, NULL, 'C'},     {"redis-pid", 1, NULL, 'R'},
      {"workers", 1, NULL, 'w'},     {"counters", 1, NULL, 'k'},
      {"duration", 1, NULL, 'd'},    {"warmup", 1, NULL, 'u'},
      {"modes", 1, NULL, 'm'},       {"cluster", 1, NULL, 'c'},
      {"prefix", 1, NULL, 'p'},      {"session-ttl", 1, NULL, 's'},
      {"runtime-ttl", 1, NULL, 't'}, {"lease", 1, NULL, 'l'},
      {NULL, 0, NULL, 0}};
  int ch;
  while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (ch) {
    case 'a': ADDR = optarg; break;
    case 'r': REDIS_ADDR = optarg; break;
    case 'C': CTL_PID = strtol(optarg, NULL, 10); break;
    case 'R': REDIS_PID = strtol(optarg, NULL, 10); break;
    case 'w': W = atoi(optarg); break;
    case 'k': K = atoi(optarg); break;
    case 'd': DURATION = atof(optarg); break;
    case 'u': WARMUP = atof(optarg); break;
    case 'm': MODES = optarg; break;
    case 'c': CLUSTER = optarg; break;
    case 'p': PREFIX = optarg; break;
    case 's': SESSION_TTL = strtoll(optarg, NULL, 10); break;
    case 't': RUNTIME_TTL = strtoll(optarg, NULL, 10); break;
    case 'l': LEASE = strtoll(optarg, NULL, 10); break;
    default: usage();
    }
  }
  int want_redis = strstr(MODES, "redis") != NULL;
  if (!ADDR || (want_redis && !REDIS_ADDR) || CTL_PID <= 0 ||
      (REDIS_ADDR && REDIS_PID <= 0) || W < 1 ||
      W > CPL_WORKERS_MAX || K < 0 || K > CPL_COUNTERS_MAX ||
      DURATION <= 0 || DURATION > 3600 || WARMUP < 0 || WARMUP > 600 ||
      strlen(CLUSTER) > 128 || strlen(PREFIX) > 32)
    usage();
  signal(SIGPIPE, SIG_IGN);
  if (ro_scripts_init() != 0)
    fatal("ro_scripts_init failed");
  G.sha = ro_script_sha(RO_S_RUNTIME);
  G.kv_ids = calloc((size_t)(K ? K : 1), sizeof(char *));
  for (int i = 0; i < K; i++) {
    char b[32];
    snprintf(b, sizeof b, "px-%06d", i);
    G.kv_ids[i] = strdup(b);
  }
  char err[1024];
  ph_mock *m = ph_mock_new("[cpload]\n", err, sizeof err);
  if (!m || ph_mock_add(m, &cpl_mod, err, sizeof err) < 0 ||
      ph_mock_init(m, err, sizeof err) < 0 ||
      ph_mock_start(m, err, sizeof err) < 0) {
    fprintf(stderr, "cpload: %s\n", err);
    return 1;
  }
  G.w = calloc((size_t)W, sizeof(worker));
  if (!G.w)
    fatal("out of memory");
  cp_grpc_client_cfg cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.address = ADDR;
  cfg.tls.mode = CP_TLS_DISABLED;
  cfg.max_recv_bytes = 64 << 20;
  cfg.max_send_bytes = 16 << 20;
  cfg.keepalive_time_ms = 600000;
  cfg.keepalive_timeout_ms = 20000;
  for (int i = 0; i < W; i++) {
    worker *w = &G.w[i];
    w->idx = i;
    snprintf(w->id, sizeof w->id, "%s-%04d", PREFIX, i);
    w->ch = cp_grpc_channel_new(G.cq, &cfg, err, sizeof err);
    if (!w->ch)
      fatal(err);
    start_register(w);
  }
  if (REDIS_ADDR)
    redis_open();
  int64_t deadline = mono_us() + (int64_t)CPL_SETUP_MS * 1000;
  while (G.ready + G.failed < W && mono_us() < deadline)
    ph_mock_run_for(m, 10);
  if (G.ready < W || (REDIS_ADDR && !G.redis_up)) {
    fprintf(stderr, "cpload: %d of %d workers ready (%d failed)%s\n", G.ready,
            W, G.failed,
            !REDIS_ADDR || G.redis_up ? "" : ", Redis not connected");
    return 1;
  }
  fprintf(stderr, "cpload: %d workers registered and acknowledged\n", W);
  char modes[64];
  snprintf(modes, sizeof modes, "%s", MODES);
  for (char *save = NULL, *tok = strtok_r(modes, ",", &save); tok;
       tok = strtok_r(NULL, ",", &save)) {
    if (strcmp(tok, "grpc") == 0)
      run_mode(m, 0);
    else if (strcmp(tok, "redis") == 0)
      run_mode(m, 1);
    else
      usage();
  }
  if (G.rc)
    redisAsyncDisconnect(G.rc);
  for (int i = 0; i < W; i++)
    cp_grpc_channel_free(G.w[i].ch);
  cp_grpc_cq_free(G.cq);
  ph_mock_run_for(m, 20);
  ph_mock_stop(m);
  ph_mock_free(m);
  for (int i = 0; i < K; i++)
    free(G.kv_ids[i]);
  free(G.kv_ids);
  free(G.w);
  ro_scripts_free();
  return 0;
}
