/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cpsnap: the control plane's snapshot path against the physical floor
 * (issue 12, "Benchmark"). One WorkerSnapshot of N owned proxies (default
 * 10,000) is built from store rows and timed, step by step, against the
 * bare protobuf-c pack + unpack of the same message (the baseline: what
 * any receiver of these bytes must pay at least):
 *
 *   pack+unpack   protobuf-c pack of the snapshot, unpack, free (baseline)
 *   build         cp_snapshot_build from the rows (checksum included), free
 *   checksum      cp_checksum_snapshot over the built message, alone
 *   wire          pack of the WatchSnapshotsResponse the controller sends
 *   unpack        the gateway's receive as controlplane_client does it:
 *                 cp_snapshot_unpack_response, the stream message unpacked
 *                 once into the bounded arena the snapshot keeps; freed
 *                 (wiped)
 *   unpack_arena  cp_snapshot_unpack of the snapshot's bytes alone
 *   check         cp_snapshot_check (bounds, identity, times, checksum)
 *   compile       cp_view_compile into the immutable view, release
 *   swap          cp_view_publish of a new view + release of the old one
 *   pipeline      build + wire + unpack + check + compile + swap, one pass
 *                 (what one full snapshot costs, end to end, minus the
 *                 network)
 *
 * Each operation runs ITERS times per run, RUNS runs, each run after one
 * run of the baseline; the figure is the median run's nanoseconds (wall,
 * CLOCK_MONOTONIC) and CPU (this thread's CLOCK_THREAD_CPUTIME_ID) per
 * operation, and the ratio of both to the median of the baseline runs
 * interleaved with it. One line per operation, key=value, then a Markdown table.
 * Single-threaded, no I/O. On demand only (never in make check):
 *
 *   make -C _b t/bench/cpsnap && _b/t/bench/cpsnap [-n N] [-i ITERS] [-r RUNS]
 *        [-c CREDENTIALS] [-R RULES] [-o OPERATION]
 *
 * -o times only the baseline and that operation (for perf record).
 *
 * The credential resolver answers from memory: the controller reads
 * secrets_dir files at build (cp_secrets.c), a cost outside cp_common that
 * this does not time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "cp_common/snapshot/cp_checksum.h"
#include "cp_common/snapshot/cp_snapshot.h"
#include "cp_common/snapshot/cp_snapshot_arena.h"
#include "cp_common/view/cp_view.h"

typedef struct fig {
  double ns, cpu; /* per operation, median run */
} fig;

static int64_t wall_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static double ts_ns(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* ---- the pool ------------------------------------------------------------ */

static size_t N = 10000, NCRED = 1000, NRULES = 20;
static int ITERS = 20, RUNS = 7;
static const char *ONLY; /* -o: the baseline and this operation only */
static ph_pool_proxy_row *rows;
static ph_pool_route_row *routes;
static cp_owned *owned;
static ph_pool_credential *creds;
static int64_t NOW;

static const char *const GROUPS[] = {"residential", "datacenter", "mobile",
                                     "eu", "us", "asia", "premium", "bulk"};

static void make_pool(void) {
  rows = calloc(N, sizeof(*rows));
  owned = calloc(N, sizeof(*owned));
  routes = calloc(NRULES, sizeof(*routes));
  creds = calloc(NCRED ? NCRED : 1, sizeof(*creds));
  if (!rows || !owned || !routes || !creds) {
    fprintf(stderr, "cpsnap: out of memory\n");
    exit(1);
  }
  for (size_t i = 0; i < N; i++) {
    ph_pool_proxy_row *r = &rows[i];
    snprintf(r->proxy_id, sizeof r->proxy_id, "px-%06zu", i);
    r->protocol = i % 3 == 0 ? PH_POOL_UPSTREAM_SOCKS5
                             : PH_POOL_UPSTREAM_HTTP_CONNECT;
    snprintf(r->host, sizeof r->host, "10.%zu.%zu.%zu", (i >> 16) & 255,
             (i >> 8) & 255, i & 255);
    r->port = (uint16_t)(1080 + i % 1000);
    snprintf(r->groups[0], sizeof r->groups[0], "%s", GROUPS[i % 3]);
    snprintf(r->groups[1], sizeof r->groups[1], "%s", GROUPS[3 + i % 5]);
    r->n_groups = 2;
    snprintf(r->zone, sizeof r->zone, "zone-%zu", i % 3);
    r->capacity = 50;
    r->weight = 1 + (uint32_t)(i % 10);
    r->expires_at_ms = 0;
    if (NCRED) {
      snprintf(r->secret_ref, sizeof r->secret_ref, "vault.pool-%04zu",
               i % NCRED);
      r->credential_version = 1;
    }
    r->admin_state = i % 100 == 7 ? PH_POOL_ADMIN_DRAINING
                                  : PH_POOL_ADMIN_ACTIVE;
    owned[i].proxy_id = r->proxy_id;
    owned[i].lease_expiry_ms = NOW + 60000;
  }
  for (size_t i = 0; i < NRULES; i++) {
    ph_pool_route_row *r = &routes[i];
    snprintf(r->rule_id, sizeof r->rule_id, "rule-%03zu", i);
    r->position = (uint32_t)(NRULES - i) * 10; /* stored out of order */
    r->enabled = 1;
    if (i + 1 == NRULES)
      snprintf(r->host_pattern, sizeof r->host_pattern, "*");
    else
      snprintf(r->host_pattern, sizeof r->host_pattern, "*.site%zu.example",
               i);
    r->port_min = 1;
    r->port_max = 65535;
    snprintf(r->target_group, sizeof r->target_group, "%s", GROUPS[i % 8]);
    snprintf(r->strategy, sizeof r->strategy, "round_robin");
    r->on_unavailable = PH_POOL_ON_UNAVAILABLE_REJECT;
  }
  for (size_t i = 0; i < NCRED; i++) {
    snprintf(creds[i].secret_ref, sizeof creds[i].secret_ref,
             "vault.pool-%04zu", i);
    creds[i].credential_version = 1;
    snprintf(creds[i].username, sizeof creds[i].username, "user-%04zu", i);
    snprintf(creds[i].password, sizeof creds[i].password,
             "pw-%04zu-0123456789abcdef", i);
  }
}

/* From memory: "vault.pool-NNNN" is creds[NNNN]. */
static int resolve(void *ud, const char *ref, uint64_t ver,
                   ph_pool_credential *out) {
  (void)ud;
  (void)ver;
  size_t k = (size_t)strtoul(ref + strlen("vault.pool-"), NULL, 10);
  if (k >= NCRED)
    return 0;
  *out = creds[k];
  return 1;
}

static cp_build_input input(void) {
  cp_build_input in;
  memset(&in, 0, sizeof in);
  in.cluster_id = "c1";
  in.worker_id = "w1";
  in.session_id = "0123456789abcdef0123456789abcdef";
  in.routes = routes;
  in.n_routes = NRULES;
  in.proxies = rows;
  in.n_proxies = N;
  in.owned = owned;
  in.n_owned = N;
  in.resolve = resolve;
  in.now_ms = NOW;
  in.version = 7;
  in.ownership_epoch = 3;
  in.allocation_safety_margin_ms = 5000;
  in.snapshot_validity_ms = 60000;
  cp_snapshot_limits lim = {(uint32_t)N, (uint32_t)(NRULES ? NRULES : 1),
                            (uint32_t)(NCRED ? NCRED : 1)};
  in.limits = lim;
  return in;
}

static const cp_expect EXPECT = {"c1", "w1",
                                 "0123456789abcdef0123456789abcdef"};

static void fail(const char *what) {
  fprintf(stderr, "cpsnap: %s\n", what);
  exit(1);
}

/* ---- the operations --------------------------------------------------------
 * Each op(ctx) does one operation and returns 0; state lives in ctx. */

typedef struct ctx {
  cp_snapshot *snap;            /* the built snapshot */
  const Controlplane__V1__WorkerSnapshot *msg;
  uint8_t *buf;                 /* the snapshot packed */
  size_t len;
  uint8_t *wire;                /* the WatchSnapshotsResponse packed */
  size_t wire_len;
  cp_snapshot *held;            /* the gateway's copy */
  cp_view_slot slot;
} ctx;

static void op_baseline(ctx *c) {
  controlplane__v1__worker_snapshot__pack(c->msg, c->buf);
  Controlplane__V1__WorkerSnapshot *u =
      controlplane__v1__worker_snapshot__unpack(NULL, c->len, c->buf);
  if (!u)
    fail("protobuf-c refused its own bytes");
  controlplane__v1__worker_snapshot__free_unpacked(u, NULL);
}

static void op_pack(ctx *c) {
  controlplane__v1__worker_snapshot__pack(c->msg, c->buf);
}

static void op_unpack_bare(ctx *c) {
  Controlplane__V1__WorkerSnapshot *u =
      controlplane__v1__worker_snapshot__unpack(NULL, c->len, c->buf);
  if (!u)
    fail("protobuf-c refused its own bytes");
  controlplane__v1__worker_snapshot__free_unpacked(u, NULL);
}

static void op_build(ctx *c) {
  cp_build_input in = input();
  cp_snapshot *s = NULL;
  if (cp_snapshot_build(&in, &s, NULL) != CP_BUILD_OK)
    fail("build failed");
  cp_snapshot_free(s);
}

static void op_checksum(ctx *c) {
  uint8_t sum[CP_CHECKSUM_LEN];
  if (cp_checksum_snapshot(c->msg, sum) != 0)
    fail("checksum failed");
}

/* The controller's send: the snapshot in its stream message, packed. */
static size_t wire_pack(const Controlplane__V1__WorkerSnapshot *m,
                        uint8_t *out) {
  Controlplane__V1__WatchSnapshotsResponse r =
      CONTROLPLANE__V1__WATCH_SNAPSHOTS_RESPONSE__INIT;
  r.payload_case = CONTROLPLANE__V1__WATCH_SNAPSHOTS_RESPONSE__PAYLOAD_SNAPSHOT;
  r.snapshot = (Controlplane__V1__WorkerSnapshot *)m;
  if (!out)
    return controlplane__v1__watch_snapshots_response__get_packed_size(&r);
  return controlplane__v1__watch_snapshots_response__pack(&r, out);
}

static void op_wire(ctx *c) {
  size_t n = wire_pack(c->msg, NULL);
  uint8_t *b = malloc(n);
  if (!b)
    fail("out of memory");
  wire_pack(c->msg, b);
  free(b);
}

/* The gateway's receive, as controlplane_client's handle_message does
 * it. Returns the handle. */
static cp_snapshot *receive(const uint8_t *wire, size_t len) {
  const Controlplane__V1__SnapshotDelta *d = NULL;
  cp_snapshot *h = cp_snapshot_unpack_response(wire, len, &d);
  if (!h || d)
    fail("stream message refused");
  return h;
}

static void op_unpack(ctx *c) {
  cp_snapshot_free(receive(c->wire, c->wire_len));
}

/* One arena unpack of the snapshot's bytes, alone: what the receive
 * would cost if the stream message were unpacked once, into the arena. */
static void op_unpack_arena(ctx *c) {
  cp_snapshot *h = cp_snapshot_unpack(c->buf, c->len);
  if (!h)
    fail("cp_snapshot_unpack refused");
  cp_snapshot_free(h);
}

static void op_check(ctx *c) {
  const char *why = NULL;
  if (cp_snapshot_check(cp_snapshot_msg(c->held), &EXPECT, NOW, NULL, &why) !=
      0) {
    fprintf(stderr, "cpsnap: check refused: %s\n", why ? why : "?");
    exit(1);
  }
}

static ph_pool_view *compile_view(const Controlplane__V1__WorkerSnapshot *m) {
  cp_view_opts o = {NOW, 60000};
  ph_pool_view *v = NULL;
  const char *why = NULL;
  if (cp_view_compile(m, &o, &v, &why) != 0) {
    fprintf(stderr, "cpsnap: compile refused: %s\n", why ? why : "?");
    exit(1);
  }
  return v;
}

static void op_compile(ctx *c) {
  cp_view_release(compile_view(cp_snapshot_msg(c->held)));
}

/* The swap alone: a view made before the clock starts would be freed by
 * the publish of the next; so each swap publishes a fresh reference of
 * one view (hold + publish, the previous reference dropped). */
static ph_pool_view *swap_view;
static void op_swap(ctx *c) {
  cp_view_hold(swap_view);
  cp_view_publish(&c->slot, swap_view);
}

static void op_pipeline(ctx *c) {
  cp_build_input in = input();
  cp_snapshot *s = NULL;
  if (cp_snapshot_build(&in, &s, NULL) != CP_BUILD_OK)
    fail("build failed");
  size_t n = wire_pack(cp_snapshot_msg(s), NULL);
  uint8_t *b = malloc(n);
  if (!b)
    fail("out of memory");
  wire_pack(cp_snapshot_msg(s), b);
  cp_snapshot_free(s);
  cp_snapshot *h = receive(b, n);
  free(b);
  const char *why = NULL;
  if (cp_snapshot_check(cp_snapshot_msg(h), &EXPECT, NOW, NULL, &why) != 0)
    fail("check refused in the pipeline");
  ph_pool_view *v = compile_view(cp_snapshot_msg(h));
  cp_view_publish(&c->slot, v);
  cp_snapshot_free(h);
}

typedef struct op {
  const char *name;
  void (*fn)(ctx *);
  const char *what;
} op;

static const op OPS[] = {
    {"pack+unpack", op_baseline, "protobuf-c pack + unpack + free (baseline)"},
    {"pack", op_pack, "protobuf-c pack alone"},
    {"unpack_bare", op_unpack_bare, "protobuf-c unpack + free alone"},
    {"build", op_build, "cp_snapshot_build from rows, checksum included"},
    {"checksum", op_checksum, "cp_checksum_snapshot alone"},
    {"wire", op_wire, "WatchSnapshotsResponse size + pack (controller)"},
    {"unpack", op_unpack,
     "gateway receive: cp_snapshot_unpack_response (one arena unpack)"},
    {"unpack_arena", op_unpack_arena,
     "cp_snapshot_unpack of the snapshot bytes alone (one unpack)"},
    {"check", op_check, "cp_snapshot_check, checksum verify included"},
    {"compile", op_compile, "cp_view_compile + release"},
    {"swap", op_swap, "cp_view_publish (atomic swap) + old release"},
    {"pipeline", op_pipeline,
     "build + wire + unpack + check + compile + swap"},
};
#define NOPS (sizeof(OPS) / sizeof(OPS[0]))

/* One run of ITERS (swap: 1000 x) operations: per op into ns[r], cpu[r]. */
static void run_once(const op *o, ctx *c, double *ns, double *cpu) {
  int iters = o->fn == op_swap ? ITERS * 1000 : ITERS;
  double w0 = ts_ns(CLOCK_MONOTONIC), c0 = ts_ns(CLOCK_THREAD_CPUTIME_ID);
  for (int i = 0; i < iters; i++)
    o->fn(c);
  *ns = (ts_ns(CLOCK_MONOTONIC) - w0) / iters;
  *cpu = (ts_ns(CLOCK_THREAD_CPUTIME_ID) - c0) / iters;
}

static fig median(double *ns, double *cpu) {
  qsort(ns, (size_t)RUNS, sizeof(double), cmp_double);
  qsort(cpu, (size_t)RUNS, sizeof(double), cmp_double);
  fig f = {ns[RUNS / 2], cpu[RUNS / 2]};
  return f;
}

/* The op's median run and, in *base, the baseline's median over runs
 * interleaved with the op's (baseline, op, baseline, op, ...): the heap
 * and the caches drift over a process's life, and a ratio is only fair
 * between runs made side by side. */
static fig measure(const op *o, const op *baseline, ctx *c, fig *base) {
  double *ns = calloc((size_t)RUNS * 4, sizeof(double));
  if (!ns)
    fail("out of memory");
  double *cpu = ns + RUNS, *bns = ns + 2 * RUNS, *bcpu = ns + 3 * RUNS;
  o->fn(c); /* warm */
  for (int r = 0; r < RUNS; r++) {
    run_once(baseline, c, &bns[r], &bcpu[r]);
    run_once(o, c, &ns[r], &cpu[r]);
  }
  fig f = median(ns, cpu);
  *base = median(bns, bcpu);
  free(ns);
  return f;
}

static void usage(void) {
  fprintf(stderr, "usage: cpsnap [-n PROXIES] [-c CREDENTIALS] [-R RULES] "
                  "[-i ITERS] [-r RUNS] [-o OPERATION]\n");
  exit(2);
}

int main(int argc, char **argv) {
  int ch;
  while ((ch = getopt(argc, argv, "n:c:R:i:r:o:")) != -1) {
    if (ch == 'o') {
      ONLY = optarg;
      continue;
    }
    long v = strtol(optarg ? optarg : "", NULL, 10);
    switch (ch) {
    case 'n':
      if (v < 1 || v > (long)PH_POOL_PROXIES_MAX)
        usage();
      N = (size_t)v;
      break;
    case 'c':
      if (v < 0 || v > (long)PH_POOL_PROXIES_MAX)
        usage();
      NCRED = (size_t)v;
      break;
    case 'R':
      if (v < 1 || v > (long)PH_POOL_ROUTES_MAX)
        usage();
      NRULES = (size_t)v;
      break;
    case 'i':
      if (v < 1 || v > 1000000)
        usage();
      ITERS = (int)v;
      break;
    case 'r':
      if (v < 1 || v > 1001)
        usage();
      RUNS = (int)v;
      break;
    default:
      usage();
    }
  }
  NOW = wall_ms();
  make_pool();
  ctx c;
  memset(&c, 0, sizeof c);
  cp_build_input in = input();
  cp_build_stats st;
  if (cp_snapshot_build(&in, &c.snap, &st) != CP_BUILD_OK)
    fail("build failed");
  c.msg = cp_snapshot_msg(c.snap);
  c.len = controlplane__v1__worker_snapshot__get_packed_size(c.msg);
  c.buf = malloc(c.len);
  c.wire_len = wire_pack(c.msg, NULL);
  c.wire = malloc(c.wire_len);
  if (!c.buf || !c.wire)
    fail("out of memory");
  controlplane__v1__worker_snapshot__pack(c.msg, c.buf);
  wire_pack(c.msg, c.wire);
  c.held = receive(c.wire, c.wire_len);
  swap_view = compile_view(cp_snapshot_msg(c.held));

  printf("# cpsnap: %zu proxies delivered (%u draining), %u rules, %u "
         "credentials; snapshot %zu bytes packed; %d iterations x %d runs, "
         "median run\n",
         (size_t)st.delivered, st.draining, st.routes, st.credentials, c.len,
         ITERS, RUNS);
  fig f[NOPS], b[NOPS];
  memset(f, 0, sizeof f);
  memset(b, 0, sizeof b);
  for (size_t i = 0; i < NOPS; i++) {
    if (ONLY && i && strcmp(ONLY, OPS[i].name) != 0)
      continue;
    f[i] = measure(&OPS[i], &OPS[0], &c, &b[i]);
    printf("op=%s ns=%.0f cpu_ns=%.0f ratio=%.2f cpu_ratio=%.2f "
           "base_cpu_ns=%.0f\n",
           OPS[i].name, f[i].ns, f[i].cpu, f[i].ns / b[i].ns,
           f[i].cpu / b[i].cpu, b[i].cpu);
    fflush(stdout);
  }
  printf("\n| operation | what | per op (wall) | CPU per op | ratio to "
         "pack+unpack (CPU) |\n|---|---|---:|---:|---:|\n");
  for (size_t i = 0; i < NOPS; i++)
    if (!ONLY || !i || strcmp(ONLY, OPS[i].name) == 0)
      printf("| %s | %s | %.3f ms | %.3f ms | %.2f |\n", OPS[i].name,
           OPS[i].what, f[i].ns / 1e6, f[i].cpu / 1e6, f[i].cpu / b[i].cpu);

  cp_view_publish(&c.slot, NULL);
  cp_view_release(swap_view);
  cp_snapshot_free(c.held);
  cp_snapshot_free(c.snap);
  free(c.buf);
  free(c.wire);
  free(rows);
  free(owned);
  free(routes);
  OPENSSL_cleanse(creds, (NCRED ? NCRED : 1) * sizeof(*creds));
  free(creds);
  return 0;
}
