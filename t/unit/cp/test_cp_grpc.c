/* SPDX-License-Identifier: BSD-2-Clause */
/* The gRPC core layer (modules/cp_common/grpc/cp_grpc.h) through the mock
 * host's real loop: a server and clients in one process over 127.0.0.1,
 * each on its own completion queue and host thread (as a controller and a
 * gateway module would be), with the proto's real messages. A test
 * handler answers RegisterWorker, streams two WatchSnapshots messages and
 * reads ReportOutcomes batches. Each call kind; UNIMPLEMENTED; a deadline
 * exceeded; a cancel from the client and an end from the server; a
 * message over the size limit either way (RESOURCE_EXHAUSTED); max
 * concurrent streams and max calls enforced; shutdown with calls in
 * flight; cq_free with calls in flight; plaintext refused off loopback;
 * the transport keys' check (CP-1-12, CP-9-9); mTLS with certificates made
 * at test time: the worker's SPIFFE id reaches the handler, no client
 * certificate and one from another CA are refused (CP-8-1, CP-8-2). */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>

#include <proxyhost/mock.h>

#include "controlplane/v1/controlplane.pb-c.h"
#include "cp_common/grpc/cp_grpc.h"
#include "cp_common/grpc/cp_grpc_unary.h"
#include "cp_common/grpc/cp_grpc_conf.h"
#define HOST_TEST_SETUP setup
#include "host_test.h"
#include "loop_test.h"
#include "tap.h"

#ifndef CP_TEST_SRCDIR
#define CP_TEST_SRCDIR "."
#endif

#define SVC "/controlplane.v1.WorkerControlPlane/"

static cp_grpc_cq *cq_srv, *cq_cli;

static int setup(void) {
  const char *err = NULL;
  /* Two queues, two threads: the controller's and the gateway's. */
  cq_srv = cp_grpc_cq_new(hctx, api, "srv", &err);
  cq_cli = cp_grpc_cq_new(hctx, api, "cli", &err);
  return cq_srv && cq_cli ? PH_OK : PH_EINVAL;
}

HOST_TEST_MODULE("cp_grpc_host");

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the test server's handlers ------------------------------------ */

typedef struct srv_rec {
  int reg, watch, outcomes, cancels, batches, watch_sent;
  int hold_unary;  /* RegisterWorker: keep the call, answer nothing */
  int hold_watch;  /* WatchSnapshots: keep it open after two messages */
  int big_reply;   /* RegisterWorker: a 64 KiB session_id */
  uint64_t last_seq;
  char peer[CP_GRPC_PEER_ID_MAX + 1];
  int had_peer;
  int64_t deadline;
  char method[CP_GRPC_PATH_MAX + 1];
  cp_grpc_call *held[8];
  int n_held;
} srv_rec;

static srv_rec S;

static void held_gone(void *arg, cp_grpc_call *c) {
  srv_rec *s = arg;
  s->cancels++;
  for (int i = 0; i < s->n_held; i++)
    if (s->held[i] == c)
      s->held[i] = s->held[--s->n_held];
}

static void hold(cp_grpc_call *c) {
  if (S.n_held < 8)
    S.held[S.n_held++] = c;
  cp_grpc_call_on_cancel(c, held_gone, &S);
}

static void unhold(cp_grpc_call *c) {
  for (int i = 0; i < S.n_held; i++)
    if (S.held[i] == c)
      S.held[i] = S.held[--S.n_held];
}

static void reply(cp_grpc_call *c, const ProtobufCMessage *m) {
  size_t n = protobuf_c_message_get_packed_size(m);
  uint8_t *buf = malloc(n ? n : 1);
  protobuf_c_message_pack(m, buf);
  cp_grpc_call_finish(c, CP_GRPC_OK, NULL, buf, n);
  free(buf);
}

static void h_register(void *arg, cp_grpc_call *c, const uint8_t *req,
                       size_t len) {
  (void)arg;
  S.reg++;
  const char *peer = cp_grpc_call_peer_id(c);
  S.had_peer = peer != NULL;
  snprintf(S.peer, sizeof(S.peer), "%s", peer ? peer : "");
  S.deadline = cp_grpc_call_deadline_ms(c);
  snprintf(S.method, sizeof(S.method), "%s", cp_grpc_call_method(c));
  if (S.hold_unary) {
    hold(c);
    return;
  }
  Controlplane__V1__RegisterWorkerRequest *r =
      controlplane__v1__register_worker_request__unpack(NULL, len, req);
  if (!r) {
    cp_grpc_call_finish(c, CP_GRPC_INVALID_ARGUMENT, "malformed request",
                        NULL, 0);
    return;
  }
  Controlplane__V1__RegisterWorkerResponse resp =
      CONTROLPLANE__V1__REGISTER_WORKER_RESPONSE__INIT;
  char sid[80];
  snprintf(sid, sizeof(sid), "session-of-%s", r->worker_id);
  char *big = NULL;
  if (S.big_reply) {
    big = malloc(65536 + 1);
    memset(big, 'x', 65536);
    big[65536] = '\0';
  }
  resp.session_id = big ? big : sid;
  resp.ownership_epoch = 7;
  resp.protocol_version =
      CONTROLPLANE__V1__PROTOCOL_VERSION__PROTOCOL_VERSION_V1;
  reply(c, &resp.base);
  free(big);
  controlplane__v1__register_worker_request__free_unpacked(r, NULL);
}

static void watch_next(void *arg, cp_grpc_call *c);

static void watch_send(cp_grpc_call *c, int version) {
  Controlplane__V1__WatchSnapshotsResponse m =
      CONTROLPLANE__V1__WATCH_SNAPSHOTS_RESPONSE__INIT;
  Controlplane__V1__WorkerSnapshot s = CONTROLPLANE__V1__WORKER_SNAPSHOT__INIT;
  Controlplane__V1__SnapshotDelta d = CONTROLPLANE__V1__SNAPSHOT_DELTA__INIT;
  if (version == 1) {
    s.version = 1;
    s.worker_id = "w1";
    m.payload_case =
        CONTROLPLANE__V1__WATCH_SNAPSHOTS_RESPONSE__PAYLOAD_SNAPSHOT;
    m.snapshot = &s;
  } else {
    d.base_version = 1;
    d.version = 2;
    m.payload_case = CONTROLPLANE__V1__WATCH_SNAPSHOTS_RESPONSE__PAYLOAD_DELTA;
    m.delta = &d;
  }
  uint8_t buf[256];
  size_t n = protobuf_c_message_pack(&m.base, buf);
  /* arg: the version just sent, so that concurrent streams pace apart. */
  int rc = cp_grpc_call_send(c, buf, n, watch_next, (void *)(intptr_t)version);
  if (rc != PH_OK)
    diag("send: %d", rc);
  /* One in flight: a second send before the callback is refused. */
  if (version == 1 && cp_grpc_call_send(c, buf, n, watch_next, NULL) !=
                          PH_EBUSY)
    diag("a second send in flight was not refused");
}

static void watch_next(void *arg, cp_grpc_call *c) {
  S.watch_sent++;
  if ((intptr_t)arg == 1)
    watch_send(c, 2);
  else if (S.hold_watch)
    ; /* stays open, held */
  else
    cp_grpc_call_finish(c, CP_GRPC_OK, NULL, NULL, 0);
}

static void h_watch(void *arg, cp_grpc_call *c, const uint8_t *req,
                    size_t len) {
  (void)arg;
  (void)req;
  (void)len;
  S.watch++;
  S.watch_sent = 0;
  if (S.hold_watch)
    hold(c);
  watch_send(c, 1);
}

static void outcomes_next(void *arg, cp_grpc_call *c, const uint8_t *msg,
                          size_t len) {
  (void)arg;
  if (!msg) {
    unhold(c);
    Controlplane__V1__ReportOutcomesResponse resp =
        CONTROLPLANE__V1__REPORT_OUTCOMES_RESPONSE__INIT;
    resp.acknowledged_sequence = S.last_seq;
    reply(c, &resp.base);
    return;
  }
  Controlplane__V1__ReportOutcomesRequest *r =
      controlplane__v1__report_outcomes_request__unpack(NULL, len, msg);
  if (r) {
    S.batches++;
    S.last_seq = r->sequence;
    controlplane__v1__report_outcomes_request__free_unpacked(r, NULL);
  }
  cp_grpc_call_recv(c, outcomes_next, NULL);
}

static void h_outcomes(void *arg, cp_grpc_call *c, const uint8_t *req,
                       size_t len) {
  (void)arg;
  S.outcomes++;
  if (req || len)
    diag("a client stream got request bytes");
  hold(c);
  cp_grpc_call_recv(c, outcomes_next, NULL);
  if (cp_grpc_call_recv(c, outcomes_next, NULL) != PH_EBUSY)
    diag("a second receive in flight was not refused");
}

static const cp_grpc_method methods[] = {
    {SVC "RegisterWorker", CP_RPC_UNARY, h_register, NULL},
    {SVC "WatchSnapshots", CP_RPC_SERVER_STREAM, h_watch, NULL},
    {SVC "ReportOutcomes", CP_RPC_CLIENT_STREAM, h_outcomes, NULL},
};
#define N_METHODS (sizeof(methods) / sizeof(methods[0]))

/* ---- the client's records ------------------------------------------ */

typedef struct cres {
  int done, status, nmsg, sent, dropped;
  char msg[CP_GRPC_STATUS_MSG_MAX + 1];
  uint8_t first[4096], last[4096];
  size_t first_len, last_len;
  int to_send;       /* client stream: batches still to send */
  uint64_t seq;      /* client stream: the next sequence */
  size_t pad;        /* bytes of zone in each request */
} cres;

static void pack_outcomes(cres *r, uint8_t *buf, size_t *n) {
  Controlplane__V1__ReportOutcomesRequest m =
      CONTROLPLANE__V1__REPORT_OUTCOMES_REQUEST__INIT;
  m.worker_id = "w1";
  m.session_id = "s";
  m.sequence = ++r->seq;
  *n = protobuf_c_message_pack(&m.base, buf);
}

static void c_message(void *arg, cp_grpc_ccall *c, const uint8_t *msg,
                      size_t len) {
  (void)c;
  cres *r = arg;
  if (r->nmsg == 0 && len <= sizeof(r->first)) {
    memcpy(r->first, msg, len);
    r->first_len = len;
  }
  if (len <= sizeof(r->last)) {
    memcpy(r->last, msg, len);
    r->last_len = len;
  }
  r->nmsg++;
}

static void c_sent(void *arg, cp_grpc_ccall *c) {
  cres *r = arg;
  r->sent++;
  if (r->to_send > 0) {
    uint8_t buf[128];
    size_t n;
    pack_outcomes(r, buf, &n);
    r->to_send--;
    cp_grpc_ccall_send(c, buf, n);
  } else {
    cp_grpc_ccall_close_send(c);
  }
}

static void c_done(void *arg, cp_grpc_ccall *c, int status, const char *msg) {
  (void)c;
  cres *r = arg;
  r->done++;
  r->status = status;
  snprintf(r->msg, sizeof(r->msg), "%s", msg ? msg : "");
}

static void c_drop(void *arg) {
  cres *r = arg;
  r->dropped++;
}

static const cp_grpc_ccall_cbs cbs = {c_message, c_sent, c_done, c_drop};

static cp_grpc_ccall *register_call(cp_grpc_channel *ch, cres *r,
                                    const char *worker, int64_t timeout) {
  Controlplane__V1__RegisterWorkerRequest m =
      CONTROLPLANE__V1__REGISTER_WORKER_REQUEST__INIT;
  m.cluster_id = "c1";
  m.worker_id = (char *)worker;
  m.instance_id = "i1";
  char *zone = NULL;
  if (r->pad) {
    zone = malloc(r->pad + 1);
    memset(zone, 'z', r->pad);
    zone[r->pad] = '\0';
    m.zone = zone;
  }
  m.supported_protocol_version =
      CONTROLPLANE__V1__PROTOCOL_VERSION__PROTOCOL_VERSION_V1;
  size_t n = protobuf_c_message_get_packed_size(&m.base);
  uint8_t *buf = malloc(n);
  protobuf_c_message_pack(&m.base, buf);
  cp_grpc_ccall *c = cp_grpc_ccall_start(ch, SVC "RegisterWorker",
                                         CP_RPC_UNARY, timeout, buf, n, &cbs,
                                         r);
  free(buf);
  free(zone);
  return c;
}

static cp_grpc_ccall *watch_call(cp_grpc_channel *ch, cres *r) {
  Controlplane__V1__WatchSnapshotsRequest m =
      CONTROLPLANE__V1__WATCH_SNAPSHOTS_REQUEST__INIT;
  m.worker_id = "w1";
  m.session_id = "s";
  uint8_t buf[128];
  size_t n = protobuf_c_message_pack(&m.base, buf);
  return cp_grpc_ccall_start(ch, SVC "WatchSnapshots", CP_RPC_SERVER_STREAM,
                             10000, buf, n, &cbs, r);
}

/* ---- configurations ------------------------------------------------ */

static char certs[256];

static cp_grpc_server_cfg srv_cfg(const char *listen, int tls) {
  cp_grpc_server_cfg c = {
      .listen = listen,
      .tls = {.mode = tls ? CP_TLS_MTLS : CP_TLS_DISABLED},
      .max_recv_bytes = 1024 * 1024,
      .max_send_bytes = 1024 * 1024,
      .max_streams = 100,
      .max_calls = 1000,
      .keepalive_time_ms = 60000,
      .keepalive_timeout_ms = 10000,
      .min_ping_interval_ms = 10000,
      .max_connection_age_ms = 1800000,
      .max_connection_age_grace_ms = 30000};
  return c;
}

static cp_grpc_client_cfg cli_cfg(const char *addr, int tls) {
  cp_grpc_client_cfg c = {.address = addr,
                          .tls = {.mode = tls ? CP_TLS_MTLS : CP_TLS_DISABLED},
                          .max_recv_bytes = 1024 * 1024,
                          .max_send_bytes = 1024 * 1024,
                          .keepalive_time_ms = 60000,
                          .keepalive_timeout_ms = 10000};
  return c;
}

static char pbuf[8][512];
static int pi;
static const char *path_of(const char *name) {
  char *p = pbuf[pi++ % 8];
  snprintf(p, 512, "%s/%s", certs, name);
  return p;
}

static void set_tls(cp_grpc_tls *t, const char *who, const char *ca) {
  t->mode = CP_TLS_MTLS;
  t->cert_file = who ? path_of(who) : NULL;
  char k[64];
  snprintf(k, sizeof(k), "%s", who ? who : "");
  if (who) {
    char *p = pbuf[pi++ % 8];
    snprintf(p, 512, "%s/%s.key", certs, who);
    t->key_file = p;
    char *q = pbuf[pi++ % 8];
    snprintf(q, 512, "%s/%s.pem", certs, who);
    t->cert_file = q;
  }
  t->ca_file = path_of(ca);
}

/* ---- the configuration check, through the mock host ---------------- */

/* Generated from cp_grpc_keys.ini.sample and the control plane's key
 * groups (local.mk). */
extern const ph_conf_key srv_keys[];
extern const ph_conf_key cli_keys[];

static int srv_check(ph_ctx *ctx, const ph_api *a, const char **key,
                     char *why, size_t whylen) {
  return cp_grpc_conf_check_server(ctx, a, "listen", key, why, whylen);
}
static int cli_check(ph_ctx *ctx, const ph_api *a, const char **key,
                     char *why, size_t whylen) {
  return cp_grpc_conf_check_client(ctx, a, "address", key, why, whylen);
}

static cp_grpc_server_cfg got_srv;
static cp_grpc_client_cfg got_cli;
static char got_addr[128]; /* the host's strings die with the mock */
static int conf_init_srv(ph_ctx *ctx, const ph_api *a, void **state) {
  *state = NULL;
  cp_grpc_conf_server(ctx, a, "listen", &got_srv);
  return PH_OK;
}
static int conf_init_cli(ph_ctx *ctx, const ph_api *a, void **state) {
  *state = NULL;
  cp_grpc_conf_client(ctx, a, "address", &got_cli);
  snprintf(got_addr, sizeof(got_addr), "%s", got_cli.address);
  return PH_OK;
}

static const ph_module conf_srv_mod = {PH_MODULE_HEADER("cps", "1.0.0"),
                                       .config = srv_keys,
                                       .init = conf_init_srv,
                                       .check = srv_check};
static const ph_module conf_cli_mod = {PH_MODULE_HEADER("cpc", "1.0.0"),
                                       .config = cli_keys,
                                       .init = conf_init_cli,
                                       .check = cli_check};

/* Runs ph_mock_init over text with both modules: PH_OK, or the errors. */
static int conf_try(const char *text, char *err, size_t errlen) {
  ph_mock *m = ph_mock_new(text, err, errlen);
  int rc = PH_EINVAL;
  if (m && ph_mock_add(m, &conf_srv_mod, err, errlen) == PH_OK &&
      ph_mock_add(m, &conf_cli_mod, err, errlen) == PH_OK)
    rc = ph_mock_init(m, err, errlen);
  ph_mock_free(m);
  return rc;
}

static void test_conf(void) {
  char err[1024], text[2048];
  int rc = conf_try("[cps]\nlisten = 127.0.0.1:0\ntls.mode = disabled\n"
                    "[cpc]\naddress = [::1]:7000\ntls.mode = disabled\n",
                    err, sizeof(err));
  is_int(rc, PH_OK, "CP-1-12 plaintext on loopback passes the check");
  if (rc != PH_OK)
    diag("%s", err);
  is_int(got_srv.tls.mode, CP_TLS_DISABLED, "the server's tls.mode is read");
  is_int(got_srv.max_recv_bytes, 16 * 1024 * 1024,
         "CP-1-13 grpc.max_receive_message_size defaults to 16 MiB");
  is_int(got_srv.max_streams, 100,
         "CP-1-13 grpc.max_concurrent_streams defaults to 100");
  is_int(got_srv.max_connection_age_ms, 1800000,
         "grpc.max_connection_age defaults to 30 min (CP-8-3)");
  is_int(got_cli.keepalive_time_ms, 60000,
         "CP-1-13 the client's grpc.keepalive_time defaults to 60 s");
  ok(got_cli.keepalive_time_ms >= got_srv.min_ping_interval_ms,
     "the client's default keepalive respects the server's default "
     "min_ping_interval (no too_many_pings)");
  is_str(got_addr, "[::1]:7000", "the client's address is read");

  rc = conf_try("[cps]\nlisten = 0.0.0.0:7000\ntls.mode = disabled\n"
                "[cpc]\naddress = 127.0.0.1:7000\ntls.mode = disabled\n",
                err, sizeof(err));
  ok(rc != PH_OK, "CP-1-12 plaintext on 0.0.0.0 is refused at check");
  like(err, "cps.tls.mode", "CP-1-12 the refusal names tls.mode");
  like(err, "loopback", "CP-1-12 the refusal says loopback");

  rc = conf_try("[cps]\nlisten = 127.0.0.1:7000\ntls.mode = disabled\n"
                "[cpc]\naddress = localhost:7000\ntls.mode = disabled\n",
                err, sizeof(err));
  ok(rc != PH_OK, "CP-9-9 plaintext to a name (localhost) is refused");
  like(err, "cpc.tls.mode", "CP-9-9 the refusal names the client's tls.mode");

  rc = conf_try("[cps]\nlisten = 127.0.0.1:7000\n"
                "[cpc]\naddress = 127.0.0.1:7000\ntls.mode = disabled\n",
                err, sizeof(err));
  ok(rc != PH_OK, "mtls (the default) without tls.cert_file is refused");
  like(err, "cps.tls.cert_file: is required", "the refusal names the key");

  rc = conf_try("[cps]\nlisten = 127.0.0.1:7000\ntls.mode = disabled\n"
                "[cpc]\naddress = 127.0.0.1:0\ntls.mode = disabled\n",
                err, sizeof(err));
  ok(rc != PH_OK, "CP-9-2 a client address without a port is refused");

  rc = conf_try("[cps]\nlisten = 127.0.0.1\ntls.mode = disabled\n", err,
                sizeof(err));
  like(err, "cps.listen: must be host:port", "a listen without port: refused");

  chmod(path_of("server.key"), 0644);
  snprintf(text, sizeof(text),
           "[cps]\nlisten = 127.0.0.1:0\ntls.cert_file = %s/server.pem\n"
           "tls.key_file = %s/server.key\ntls.ca_file = %s/ca.pem\n"
           "[cpc]\naddress = 127.0.0.1:7000\ntls.cert_file = %s/worker.pem\n"
           "tls.key_file = %s/worker.key\ntls.ca_file = %s/ca.pem\n",
           certs, certs, certs, certs, certs, certs);
  rc = conf_try(text, err, sizeof(err));
  ok(rc != PH_OK, "a key file readable by others is refused");
  like(err, "cps.tls.key_file: must not be readable by group or others",
       "the refusal names tls.key_file and the mode");
  unlike(err, "PRIVATE", "the refusal carries nothing of the key");
  chmod(path_of("server.key"), 0600);
  rc = conf_try(text, err, sizeof(err));
  is_int(rc, PH_OK, "mtls with its three files passes the check");
  if (rc != PH_OK)
    diag("%s", err);
  snprintf(text, sizeof(text),
           "[cps]\nlisten = 127.0.0.1:0\ntls.cert_file = %s/none.pem\n"
           "tls.key_file = %s/server.key\ntls.ca_file = %s/ca.pem\n",
           certs, certs, certs);
  rc = conf_try(text, err, sizeof(err));
  like(err, "cps.tls.cert_file: is not a regular file",
       "a missing certificate file is refused at check");
  rc = conf_try("[cps]\nlisten = 127.0.0.1:0\ntls.mode = disabled\n"
                "grpc.max_concurrent_streams = 0\n",
                err, sizeof(err));
  like(err, "cps.grpc.max_concurrent_streams",
       "CP-1-13 CP-8-3 grpc.max_concurrent_streams = 0 is out of bounds");
  rc = conf_try("[cps]\nlisten = 127.0.0.1:0\ntls.mode = disabled\n"
                "grpc.max_receive_message_size = 512MiB\n",
                err, sizeof(err));
  like(err, "cps.grpc.max_receive_message_size",
       "CP-1-13 CP-8-3 grpc.max_receive_message_size above 256 MiB is out of "
       "bounds");
  rc = conf_try("[cpc]\naddress = 127.0.0.1:1\ntls.mode = disabled\n"
                "grpc.keepalive_time = 1s\n",
                err, sizeof(err));
  like(err, "cpc.grpc.keepalive_time",
       "CP-1-13 a client keepalive_time under 10 s is out of bounds");
}

/* ---- plaintext ----------------------------------------------------- */

static int sd_done;
static void on_sd(void *arg) {
  (void)arg;
  sd_done++;
}

static void test_plain(void) {
  char err[256], addr[64];
  cp_grpc_server_cfg sc = srv_cfg("127.0.0.1:0", 0);
  cp_grpc_server *srv =
      cp_grpc_server_new(cq_srv, &sc, methods, N_METHODS, err, sizeof(err));
  ok(srv != NULL, "CP-1-12 a plaintext server on 127.0.0.1:0");
  if (!srv) {
    diag("%s", err);
    return;
  }
  int port = cp_grpc_server_port(srv);
  ok(port > 0, "the bound port is reported");
  snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);

  /* A second server on the same port fails (no SO_REUSEPORT sharing). */
  cp_grpc_server_cfg sc2 = srv_cfg(addr, 0);
  cp_grpc_server *dup =
      cp_grpc_server_new(cq_srv, &sc2, methods, N_METHODS, err, sizeof(err));
  ok(dup == NULL, "a second server on a bound port is refused");
  like(err, "cannot listen", "with a clear error");

  cp_grpc_server_cfg off = srv_cfg("0.0.0.0:0", 0);
  ok(!cp_grpc_server_new(cq_srv, &off, methods, N_METHODS, err, sizeof(err)),
     "CP-1-12 a plaintext server off loopback is refused by the layer too");
  cp_grpc_client_cfg offc = cli_cfg("10.0.0.1:443", 0);
  ok(!cp_grpc_channel_new(cq_cli, &offc, err, sizeof(err)),
     "CP-9-9 a plaintext channel off loopback is refused by the layer too");

  cp_grpc_client_cfg cc = cli_cfg(addr, 0);
  cp_grpc_channel *ch = cp_grpc_channel_new(cq_cli, &cc, err, sizeof(err));
  ok(ch != NULL, "a plaintext channel to the server");

  /* Unary. */
  cres r = {0};
  int64_t t0 = now_ms();
  ok(register_call(ch, &r, "w1", 5000) != NULL, "a unary call starts");
  is_int(r.done, 0, "nothing is called back from inside the start");
  poll_until(loop, r.done >= 1, 10000);
  is_int(r.status, CP_GRPC_OK, "CP-1-2 RegisterWorker (unary) is OK");
  is_int(r.nmsg, 1, "one response message");
  Controlplane__V1__RegisterWorkerResponse *resp =
      controlplane__v1__register_worker_response__unpack(NULL, r.first_len,
                                                         r.first);
  ok(resp && strcmp(resp->session_id, "session-of-w1") == 0 &&
         resp->ownership_epoch == 7,
     "the response is the handler's message");
  if (resp)
    controlplane__v1__register_worker_response__free_unpacked(resp, NULL);
  is_int(S.reg, 1, "the handler ran once");
  is_str(S.method, SVC "RegisterWorker", "the handler sees the method path");
  ok(!S.had_peer, "CP-8-2 no peer identity over plaintext");
  ok(S.deadline >= t0 + 4000 && S.deadline <= now_ms() + 5000 + 1000,
     "the handler sees the call's deadline");

  /* Server streaming: two messages in order, paced by the send callback. */
  cres w = {0};
  ok(watch_call(ch, &w) != NULL, "a server-streaming call starts");
  poll_until(loop, w.done >= 1, 10000);
  is_int(w.status, CP_GRPC_OK, "CP-1-14 WatchSnapshots (server stream) is OK");
  is_int(w.nmsg, 2, "two messages");
  Controlplane__V1__WatchSnapshotsResponse *m1 =
      controlplane__v1__watch_snapshots_response__unpack(NULL, w.first_len,
                                                         w.first);
  Controlplane__V1__WatchSnapshotsResponse *m2 =
      controlplane__v1__watch_snapshots_response__unpack(NULL, w.last_len,
                                                         w.last);
  ok(m1 && m1->payload_case ==
               CONTROLPLANE__V1__WATCH_SNAPSHOTS_RESPONSE__PAYLOAD_SNAPSHOT &&
         m1->snapshot->version == 1,
     "the first is the full snapshot");
  ok(m2 && m2->payload_case ==
               CONTROLPLANE__V1__WATCH_SNAPSHOTS_RESPONSE__PAYLOAD_DELTA &&
         m2->delta->version == 2,
     "the second is the delta");
  if (m1)
    controlplane__v1__watch_snapshots_response__free_unpacked(m1, NULL);
  if (m2)
    controlplane__v1__watch_snapshots_response__free_unpacked(m2, NULL);
  is_int(S.watch_sent, 2, "the server's send callback ran per message");

  /* Client streaming: three batches, one in flight at a time. */
  cres o = {.to_send = 2};
  cp_grpc_ccall *oc = cp_grpc_ccall_start(ch, SVC "ReportOutcomes",
                                          CP_RPC_CLIENT_STREAM, 5000, NULL, 0,
                                          &cbs, &o);
  ok(oc != NULL, "a client-streaming call starts");
  uint8_t buf[128];
  size_t n;
  pack_outcomes(&o, buf, &n);
  is_int(cp_grpc_ccall_send(oc, buf, n), PH_OK, "the first batch is sent");
  is_int(cp_grpc_ccall_send(oc, buf, n), PH_EBUSY,
         "a second send in flight is refused (PH_EBUSY)");
  poll_until(loop, o.done >= 1, 10000);
  is_int(o.status, CP_GRPC_OK, "CP-1-29 ReportOutcomes (client stream) is OK");
  is_int(o.sent, 3, "on_sent ran per batch");
  is_int(S.batches, 3, "the handler received three batches, then the close");
  Controlplane__V1__ReportOutcomesResponse *or =
      controlplane__v1__report_outcomes_response__unpack(NULL, o.first_len,
                                                         o.first);
  ok(or && or->acknowledged_sequence == 3,
     "the response acknowledges the last sequence");
  if (or)
    controlplane__v1__report_outcomes_response__free_unpacked(or, NULL);

  /* Unknown method. */
  cres u = {0};
  int before = S.reg + S.watch + S.outcomes;
  cp_grpc_ccall_start(ch, SVC "NoSuchMethod", CP_RPC_UNARY, 5000,
                      (const uint8_t *)"", 0, &cbs, &u);
  poll_until(loop, u.done >= 1, 10000);
  is_int(u.status, CP_GRPC_UNIMPLEMENTED, "an unknown path is UNIMPLEMENTED");
  is_int(S.reg + S.watch + S.outcomes, before, "no handler saw it");

  /* Deadline exceeded: the handler holds the call. */
  S.hold_unary = 1;
  S.cancels = 0;
  cres d = {0};
  register_call(ch, &d, "w1", 300);
  poll_until(loop, d.done >= 1, 10000);
  is_int(d.status, CP_GRPC_DEADLINE_EXCEEDED,
         "a call past its deadline ends DEADLINE_EXCEEDED");
  poll_until(loop, S.cancels >= 1, 10000);
  is_int(S.cancels, 1, "the server's cancel callback ran (deadline)");
  is_int(S.n_held, 0, "the held call was released by its cancel callback");
  S.hold_unary = 0;

  /* A cancel from the client. */
  S.hold_watch = 1;
  S.cancels = 0;
  cres c1 = {0};
  cp_grpc_ccall *wc = watch_call(ch, &c1);
  poll_until(loop, c1.nmsg >= 2, 10000);
  is_int(c1.nmsg, 2, "the held stream delivered its two messages");
  cp_grpc_ccall_cancel(wc);
  is_int(c1.done, 0, "cancel calls nothing back from inside");
  poll_until(loop, c1.done >= 1, 10000);
  is_int(c1.status, CP_GRPC_CANCELLED, "a client cancel ends CANCELLED");
  poll_until(loop, S.cancels >= 1, 10000);
  is_int(S.cancels, 1, "the server's handler learns of the client's cancel");

  /* An end from the server: a held stream finished with a fence status. */
  S.cancels = 0;
  cres c2 = {0};
  watch_call(ch, &c2);
  poll_until(loop, c2.nmsg >= 2, 10000);
  ok(S.n_held == 1, "the server holds the stream");
  if (S.n_held == 1) {
    cp_grpc_call *h = S.held[0];
    unhold(h);
    is_int(cp_grpc_call_finish(h, CP_GRPC_FAILED_PRECONDITION,
                               "session replaced", NULL, 0),
           PH_OK, "the server ends the stream");
    is_int(cp_grpc_call_finish(h, CP_GRPC_OK, NULL, NULL, 0), PH_ESTATE,
           "a second finish is refused (PH_ESTATE)");
  }
  poll_until(loop, c2.done >= 1, 10000);
  is_int(c2.status, CP_GRPC_FAILED_PRECONDITION,
         "the client gets the server's status");
  is_str(c2.msg, "session replaced", "and its message");
  spin_for(loop, 50);
  is_int(S.cancels, 0, "no cancel callback after finish");
  S.hold_watch = 0;

  /* Over the size limit, both ways. */
  cres big = {.pad = 2 * 1024 * 1024};
  before = S.reg;
  register_call(ch, &big, "w1", 5000);
  poll_until(loop, big.done >= 1, 10000);
  is_int(big.status, CP_GRPC_RESOURCE_EXHAUSTED,
         "CP-1-13 CP-8-3 a request over the client's max send size is "
         "RESOURCE_EXHAUSTED");
  cp_grpc_channel_free(ch);

  cp_grpc_client_cfg cbig = cli_cfg(addr, 0);
  cbig.max_send_bytes = 8 * 1024 * 1024;
  cbig.max_recv_bytes = 16 * 1024;
  ch = cp_grpc_channel_new(cq_cli, &cbig, err, sizeof(err));
  cres big2 = {.pad = 2 * 1024 * 1024};
  register_call(ch, &big2, "w1", 5000);
  poll_until(loop, big2.done >= 1, 10000);
  is_int(big2.status, CP_GRPC_RESOURCE_EXHAUSTED,
         "CP-1-13 CP-8-3 a request over the server's max receive size is "
         "RESOURCE_EXHAUSTED");
  is_int(S.reg, before, "the handler never saw the oversized request");
  S.big_reply = 1;
  cres big3 = {0};
  register_call(ch, &big3, "w1", 5000);
  poll_until(loop, big3.done >= 1, 10000);
  is_int(big3.status, CP_GRPC_RESOURCE_EXHAUSTED,
         "a response over the client's max receive size is "
         "RESOURCE_EXHAUSTED");
  S.big_reply = 0;
  cp_grpc_channel_free(ch);

  /* Shutdown with calls in flight: a held unary and a held stream. */
  ch = cp_grpc_channel_new(cq_cli, &cc, err, sizeof(err));
  S.hold_unary = 1;
  S.hold_watch = 1;
  S.cancels = 0;
  cres h1 = {0}, h2 = {0};
  int reg0 = S.reg;
  register_call(ch, &h1, "w1", 10000);
  watch_call(ch, &h2);
  poll_until(loop, h2.nmsg >= 2, 10000);
  poll_until(loop, S.reg >= (reg0 + 1), 10000);
  is_int(S.n_held, 2, "two calls in flight on the server");
  sd_done = 0;
  cp_grpc_server_shutdown(srv, on_sd, NULL);
  poll_until(loop, S.cancels >= 2, 10000);
  is_int(S.cancels, 2, "shutdown cancels the calls in flight (their cancel "
                       "callbacks ran)");
  poll_until(loop, h1.done >= 1, 10000);
  poll_until(loop, h2.done >= 1, 10000);
  ok(h1.done == 1 && h1.status != CP_GRPC_OK,
     "the client's unary call ends, not OK");
  ok(h2.done == 1 && h2.status != CP_GRPC_OK,
     "the client's stream ends, not OK");
  diag("after shutdown: unary %d, stream %d", h1.status, h2.status);
  poll_until(loop, sd_done >= 1, 10000);
  is_int(sd_done, 1, "the shut-down server's done ran");
  S.hold_unary = 0;
  S.hold_watch = 0;
  cp_grpc_channel_free(ch);
  spin_for(loop, 100);
}

/* ---- limits on streams and calls ----------------------------------- */

static void test_limits(void) {
  char err[256], addr[64];
  cp_grpc_server_cfg sc = srv_cfg("127.0.0.1:0", 0);
  sc.max_streams = 2;
  cp_grpc_server *srv =
      cp_grpc_server_new(cq_srv, &sc, methods, N_METHODS, err, sizeof(err));
  snprintf(addr, sizeof(addr), "127.0.0.1:%d", cp_grpc_server_port(srv));
  cp_grpc_client_cfg cc = cli_cfg(addr, 0);
  cp_grpc_channel *ch = cp_grpc_channel_new(cq_cli, &cc, err, sizeof(err));
  S.hold_watch = 1;
  S.cancels = 0;
  int w0 = S.watch, r0 = S.reg;
  cres a = {0}, b = {0}, c = {0};
  cp_grpc_ccall *ca = watch_call(ch, &a);
  cp_grpc_ccall *cb = watch_call(ch, &b);
  poll_until(loop, a.nmsg >= 2, 10000);
  poll_until(loop, b.nmsg >= 2, 10000);
  is_int(S.watch - w0, 2, "two streams open");
  register_call(ch, &c, "w1", 500);
  poll_until(loop, c.done >= 1, 10000);
  is_int(c.status, CP_GRPC_DEADLINE_EXCEEDED,
         "CP-8-3 a third stream over max_concurrent_streams = 2 on one "
         "connection waits for a slot (HTTP/2): its deadline passes");
  is_int(S.reg, r0, "the handler never saw the third stream");
  cres c2 = {0};
  cp_grpc_channel *ch2 = cp_grpc_channel_new(cq_cli, &cc, err, sizeof(err));
  register_call(ch2, &c2, "w1", 5000);
  poll_until(loop, c2.done >= 1, 10000);
  is_int(c2.status, CP_GRPC_OK, "another connection has streams of its own");
  cp_grpc_channel_free(ch2);
  cp_grpc_ccall_cancel(ca);
  poll_until(loop, a.done >= 1, 10000);
  poll_until(loop, S.cancels >= 1, 10000);
  cres c3 = {0};
  register_call(ch, &c3, "w1", 5000);
  poll_until(loop, c3.done >= 1, 10000);
  is_int(c3.status, CP_GRPC_OK, "once one stream ended, a call gets through");
  cp_grpc_ccall_cancel(cb);
  poll_until(loop, b.done >= 1, 10000);
  poll_until(loop, S.cancels >= 2, 10000);
  cres d = {0};
  register_call(ch, &d, "w1", 5000);
  poll_until(loop, d.done >= 1, 10000);
  is_int(d.status, CP_GRPC_OK, "once the streams end, a call gets through");
  cp_grpc_channel_free(ch);
  sd_done = 0;
  cp_grpc_server_shutdown(srv, on_sd, NULL);
  is_int(sd_done, 0, "shutdown's done is not called from inside");
  poll_until(loop, sd_done >= 1, 10000);
  is_int(sd_done, 1, "shutdown's done runs on the loop");

  /* max_calls: one call at a time in the whole server. */
  sc = srv_cfg("127.0.0.1:0", 0);
  sc.max_calls = 1;
  srv = cp_grpc_server_new(cq_srv, &sc, methods, N_METHODS, err, sizeof(err));
  snprintf(addr, sizeof(addr), "127.0.0.1:%d", cp_grpc_server_port(srv));
  cc = cli_cfg(addr, 0);
  ch = cp_grpc_channel_new(cq_cli, &cc, err, sizeof(err));
  S.cancels = 0;
  cres e = {0}, f = {0};
  cp_grpc_ccall *ce = watch_call(ch, &e);
  poll_until(loop, e.nmsg >= 2, 10000);
  register_call(ch, &f, "w1", 5000);
  poll_until(loop, f.done >= 1, 10000);
  is_int(f.status, CP_GRPC_RESOURCE_EXHAUSTED,
         "CP-8-3 a call over grpc.max_calls is RESOURCE_EXHAUSTED");
  is_str(f.msg, "too many calls", "with a short message");
  cp_grpc_ccall_cancel(ce);
  poll_until(loop, e.done >= 1, 10000);
  poll_until(loop, S.cancels >= 1, 10000);
  S.hold_watch = 0;
  cp_grpc_channel_free(ch);
  sd_done = 0;
  cp_grpc_server_shutdown(srv, on_sd, NULL);
  poll_until(loop, sd_done >= 1, 10000);
}

/* A stream's life is bounded by max_connection_age + grace (CP-8-3). */
static void test_age(void) {
  char err[256], addr[64];
  cp_grpc_server_cfg sc = srv_cfg("127.0.0.1:0", 0);
  sc.max_connection_age_ms = 1000;
  sc.max_connection_age_grace_ms = 500;
  cp_grpc_server *srv =
      cp_grpc_server_new(cq_srv, &sc, methods, N_METHODS, err, sizeof(err));
  snprintf(addr, sizeof(addr), "127.0.0.1:%d", cp_grpc_server_port(srv));
  cp_grpc_client_cfg cc = cli_cfg(addr, 0);
  cp_grpc_channel *ch = cp_grpc_channel_new(cq_cli, &cc, err, sizeof(err));
  S.hold_watch = 1;
  S.cancels = 0;
  cres a = {0};
  watch_call(ch, &a); /* its own deadline is 10 s */
  poll_until(loop, a.nmsg >= 2, 10000);
  poll_until(loop, a.done >= 1, 10000);
  ok(a.done == 1 && a.status != CP_GRPC_OK &&
         a.status != CP_GRPC_DEADLINE_EXCEEDED,
     "CP-8-3 a held stream is cut by max_connection_age + grace, before "
     "its deadline");
  diag("cut with status %d (%s)", a.status, a.msg);
  poll_until(loop, S.cancels >= 1, 10000);
  is_int(S.cancels, 1, "the server's handler is told (cancel callback)");
  S.hold_watch = 0;
  cres b = {0};
  register_call(ch, &b, "w1", 5000);
  poll_until(loop, b.done >= 1, 10000);
  is_int(b.status, CP_GRPC_OK, "the channel reconnects by itself");
  cp_grpc_channel_free(ch);
  sd_done = 0;
  cp_grpc_server_shutdown(srv, on_sd, NULL);
  poll_until(loop, sd_done >= 1, 10000);
}

/* ---- mTLS ---------------------------------------------------------- */

static void test_mtls(void) {
  char err[256], addr[64];
  cp_grpc_server_cfg sc = srv_cfg("127.0.0.1:0", 1);
  set_tls(&sc.tls, "server", "ca.pem");
  cp_grpc_server *srv =
      cp_grpc_server_new(cq_srv, &sc, methods, N_METHODS, err, sizeof(err));
  ok(srv != NULL, "CP-8-1 an mTLS server");
  if (!srv) {
    diag("%s", err);
    return;
  }
  snprintf(addr, sizeof(addr), "127.0.0.1:%d", cp_grpc_server_port(srv));

  cp_grpc_client_cfg cc = cli_cfg(addr, 1);
  set_tls(&cc.tls, "worker", "ca.pem");
  cp_grpc_channel *ch = cp_grpc_channel_new(cq_cli, &cc, err, sizeof(err));
  ok(ch != NULL, "an mTLS channel with the worker's certificate");
  cres r = {0};
  int r0 = S.reg;
  register_call(ch, &r, "w1", 5000);
  poll_until(loop, r.done >= 1, 10000);
  is_int(r.status, CP_GRPC_OK, "CP-8-1 the worker's call over mTLS is OK");
  is_str(S.peer, "spiffe://example.org/prod/worker/w1",
         "CP-8-2 the certificate's SPIFFE id reaches the handler");
  ok(cp_spiffe_check(S.peer, strlen(S.peer), "example.org", "prod", "worker",
                     "w1"),
     "CP-8-2 and it passes cp_spiffe_check for w1");
  ok(!cp_spiffe_check(S.peer, strlen(S.peer), "example.org", "prod",
                      "worker", "w2"),
     "CP-8-2 and fails it for another worker");
  cp_grpc_channel_free(ch);

  set_tls(&cc.tls, "w2", "ca.pem");
  ch = cp_grpc_channel_new(cq_cli, &cc, err, sizeof(err));
  cres r2 = {0};
  register_call(ch, &r2, "w1", 5000);
  poll_until(loop, r2.done >= 1, 10000);
  is_str(S.peer, "spiffe://example.org/prod/worker/w2",
         "CP-8-2 another worker's certificate shows its own id");
  cp_grpc_channel_free(ch);

  set_tls(&cc.tls, NULL, "ca.pem");
  ch = cp_grpc_channel_new(cq_cli, &cc, err, sizeof(err));
  ok(ch != NULL, "a TLS channel without a client certificate");
  cres n = {0};
  int before = S.reg;
  register_call(ch, &n, "w1", 5000);
  poll_until(loop, n.done >= 1, 10000);
  is_int(n.status, CP_GRPC_UNAVAILABLE,
         "CP-8-1 no client certificate: refused (UNAVAILABLE)");
  is_int(S.reg, before, "the handler never saw it");
  cp_grpc_channel_free(ch);

  set_tls(&cc.tls, "other", "ca.pem");
  ch = cp_grpc_channel_new(cq_cli, &cc, err, sizeof(err));
  cres o = {0};
  register_call(ch, &o, "w1", 5000);
  poll_until(loop, o.done >= 1, 10000);
  is_int(o.status, CP_GRPC_UNAVAILABLE,
         "CP-8-1 a client certificate from another CA: refused");
  is_int(S.reg, before, "the handler never saw it");
  cp_grpc_channel_free(ch);

  /* The client checks the server too: a CA that did not sign it. */
  set_tls(&cc.tls, "worker", "other-ca.pem");
  ch = cp_grpc_channel_new(cq_cli, &cc, err, sizeof(err));
  cres s = {0};
  register_call(ch, &s, "w1", 5000);
  poll_until(loop, s.done >= 1, 10000);
  is_int(s.status, CP_GRPC_UNAVAILABLE,
         "a server certificate from another CA: refused by the client");
  is_int(S.reg, before, "nothing reached the handler");
  cp_grpc_channel_free(ch);

  cp_grpc_tls bad = {0};
  set_tls(&bad, "worker", "missing.pem");
  cc.tls = bad;
  ok(!cp_grpc_channel_new(cq_cli, &cc, err, sizeof(err)),
     "a missing CA file is refused");
  like(err, "tls.ca_file", "naming the file's key");
  (void)r0;
  sd_done = 0;
  cp_grpc_server_shutdown(srv, on_sd, NULL);
  poll_until(loop, sd_done >= 1, 10000);
}

/* ---- cq_free with calls in flight, and a third cq ------------------ */

static void unary_done(void *u, cp_grpc_ccall *call, int status,
                       const char *msg) {
  (void)call, (void)status, (void)msg;
  cp_unary *un = u;
  (*(int *)un->owner)++;
  cp_unary_free(un);
}

static void test_free_in_flight(void) {
  char err[256], addr[64];
  const char *e = NULL;
  /* Only init or start may start a thread: a third cq here is refused. */
  ok(cp_grpc_cq_new(hctx, api, "late", &e) == NULL && e,
     "a cq outside init/start is refused (the host's thread rule)");
  cp_grpc_server_cfg sc = srv_cfg("127.0.0.1:0", 0);
  cp_grpc_server *srv =
      cp_grpc_server_new(cq_srv, &sc, methods, N_METHODS, err, sizeof(err));
  snprintf(addr, sizeof(addr), "127.0.0.1:%d", cp_grpc_server_port(srv));
  cp_grpc_client_cfg cc = cli_cfg(addr, 0);
  cp_grpc_channel *ch = cp_grpc_channel_new(cq_cli, &cc, err, sizeof(err));
  S.hold_watch = 1;
  S.hold_unary = 1;
  S.cancels = 0;
  cres a = {0}, b = {0};
  int r0 = S.reg;
  watch_call(ch, &a);
  register_call(ch, &b, "w1", 10000);
  poll_until(loop, a.nmsg >= 2, 10000);
  poll_until(loop, S.reg >= (r0 + 1), 10000);
  is_int(S.n_held, 2, "two calls held when the queues are freed");
  cp_grpc_cq_free(cq_srv);
  cq_srv = NULL;
  is_int(S.cancels, 0, "cq_free calls no handler back");
  S.n_held = 0;
  poll_until(loop, a.done >= 1, 10000);
  poll_until(loop, b.done >= 1, 10000);
  ok(a.done == 1 && a.status != CP_GRPC_OK,
     "the client's stream ends when the server's queue is freed (the "
     "client's queue still runs: gRPC counts grpc_init per queue)");
  ok(b.done == 1 && b.status != CP_GRPC_OK, "and its unary call too");
  ok(a.dropped == 0 && b.dropped == 0,
     "calls that end with on_done are never dropped");
  cres c = {0};
  watch_call(ch, &c);
  int done0 = c.done;
  /* A cp_unary in flight too: its done never runs, and it is freed by
   * the drop (LSan: it leaked at a gateway's stop, cp_reload.sh). */
  int udone = 0;
  ok(cp_unary_start(ch, SVC "RegisterWorker", 10000, (const uint8_t *)"", 0,
                    unary_done, &udone) != NULL,
     "a cp_unary call in flight");
  cp_grpc_cq_free(cq_cli);
  cq_cli = NULL;
  is_int(c.done, done0, "cq_free with a client call in flight calls nothing");
  is_int(c.dropped, 1, "... but on_drop, once, to free what its arg owns");
  is_int(udone, 0, "the unary's done does not run either (its unary is "
         "freed by on_drop: LSan)");
  ok(1, "both queues freed with calls in flight (LSan checks the rest)");
}

int main(void) {
  plan_lazy();
  setvbuf(stdout, NULL, _IOLBF, 0);
  signal(SIGPIPE, SIG_IGN);
  setenv("GRPC_DNS_RESOLVER", "native", 1);
  char tmpl[] = "/tmp/cp-grpc-test.XXXXXX";
  if (!mkdtemp(tmpl)) {
    printf("Bail out! mkdtemp\n");
    return 1;
  }
  snprintf(certs, sizeof(certs), "%s", tmpl);
  char cmd[512];
  snprintf(cmd, sizeof(cmd), "sh %s/t/unit/cp/cp_grpc_certs.sh %s",
           CP_TEST_SRCDIR, certs);
  if (system(cmd) != 0) {
    printf("Bail out! the certificates could not be made\n");
    return 1;
  }
  test_conf();

  ph_mock *m = host_test_start(&host_mod, "[log]\nlevel = warn\n");
  test_plain();
  test_limits();
  test_age();
  test_mtls();
  test_free_in_flight();
  ph_mock_stop(m);
  ph_mock_free(m);
  snprintf(cmd, sizeof(cmd), "rm -rf %s", certs);
  if (system(cmd) != 0)
    diag("could not remove %s", certs);
  return done_testing();
}
