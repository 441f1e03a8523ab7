/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cp_echo_server CONFIG PORT_FILE: a WorkerControlPlane server built on
 * cp_grpc (modules/cp_common/grpc/cp_grpc.h) for t/integration/
 * cp_grpc_interop.sh, where a client this project did not write (Debian's
 * python3-grpcio) calls every RPC. CONFIG is an INI text with a
 * [cp_echo] section (listen, tls.*, grpc.*: cp_grpc_conf.h); the bound
 * port is written to PORT_FILE once serving. Answers are canned but
 * valid: RegisterWorker a session, WatchSnapshots a full snapshot then a
 * delta (paced by the send callback), AcknowledgeSnapshot and
 * ReportRuntime their responses, ReportOutcomes the last sequence of the
 * batches it read. Under mTLS, a request's worker_id must be the one in
 * the client certificate's spiffe://example.org/prod/worker/<id>
 * (PERMISSION_DENIED otherwise, CP-8-2). Runs on the mock host's loop
 * until SIGTERM or SIGINT.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <proxyhost/mock.h>

#include "controlplane/v1/controlplane.pb-c.h"
#include "cp_common/grpc/cp_grpc.h"
#include "cp_common/grpc/cp_grpc_conf.h"

#define SVC "/controlplane.v1.WorkerControlPlane/"

static volatile sig_atomic_t stop_flag;
static void on_sig(int s) {
  (void)s;
  stop_flag = 1;
}

typedef struct echo {
  ph_ctx *ctx;
  const ph_api *api;
  cp_grpc_cq *cq;
  cp_grpc_server *srv;
  const char *port_file;
} echo;

static echo E;

/* Under mTLS the certificate names the worker; plaintext has no identity
 * (the loopback fixture). */
static int identity_ok(cp_grpc_call *c, const char *worker_id) {
  const char *peer = cp_grpc_call_peer_id(c);
  if (!peer)
    return 1;
  return cp_spiffe_check(peer, strlen(peer), "example.org", "prod", "worker",
                         worker_id ? worker_id : "");
}

static void reply(cp_grpc_call *c, const ProtobufCMessage *m) {
  size_t n = protobuf_c_message_get_packed_size(m);
  uint8_t *buf = malloc(n ? n : 1);
  if (!buf) {
    cp_grpc_call_finish(c, CP_GRPC_RESOURCE_EXHAUSTED, "out of memory", NULL,
                        0);
    return;
  }
  protobuf_c_message_pack(m, buf);
  cp_grpc_call_finish(c, CP_GRPC_OK, NULL, buf, n);
  free(buf);
}

static void h_register(void *arg, cp_grpc_call *c, const uint8_t *req,
                       size_t len) {
  (void)arg;
  Controlplane__V1__RegisterWorkerRequest *r =
      controlplane__v1__register_worker_request__unpack(NULL, len, req);
  if (!r) {
    cp_grpc_call_finish(c, CP_GRPC_INVALID_ARGUMENT, "malformed request",
                        NULL, 0);
    return;
  }
  if (!identity_ok(c, r->worker_id)) {
    controlplane__v1__register_worker_request__free_unpacked(r, NULL);
    cp_grpc_call_finish(c, CP_GRPC_PERMISSION_DENIED,
                        "worker_id does not match the certificate", NULL, 0);
    return;
  }
  controlplane__v1__register_worker_request__free_unpacked(r, NULL);
  Controlplane__V1__RegisterWorkerResponse resp =
      CONTROLPLANE__V1__REGISTER_WORKER_RESPONSE__INIT;
  Google__Protobuf__Duration stale = GOOGLE__PROTOBUF__DURATION__INIT,
                             ttl = GOOGLE__PROTOBUF__DURATION__INIT,
                             ri = GOOGLE__PROTOBUF__DURATION__INIT;
  stale.seconds = 30;
  ttl.seconds = 30;
  ri.seconds = 10;
  resp.session_id = "0123456789abcdef0123456789abcdef";
  resp.ownership_epoch = 1;
  resp.max_stale_age = &stale;
  resp.protocol_version = CONTROLPLANE__V1__PROTOCOL_VERSION__PROTOCOL_VERSION_V1;
  resp.session_ttl = &ttl;
  resp.runtime_interval = &ri;
  resp.max_runtime_counters = 512;
  reply(c, &resp.base);
}

typedef struct watch {
  int sent;
} watch;

static void watch_next(void *arg, cp_grpc_call *c);

static void watch_gone(void *arg, cp_grpc_call *c) {
  (void)c;
  free(arg);
}

static void send_msg(cp_grpc_call *c, watch *w,
                     const Controlplane__V1__WatchSnapshotsResponse *m) {
  size_t n = protobuf_c_message_get_packed_size(&m->base);
  uint8_t *buf = malloc(n ? n : 1);
  if (!buf || cp_grpc_call_send(c, buf, (protobuf_c_message_pack(&m->base,
                                                                 buf),
                                         n),
                                watch_next, w) != PH_OK) {
    free(buf);
    if (cp_grpc_call_finish(c, CP_GRPC_INTERNAL, "send refused", NULL, 0) ==
        PH_OK)
      free(w);
    return;
  }
  free(buf);
}

/* Paced: the next message only when the previous one was taken. */
static void watch_next(void *arg, cp_grpc_call *c) {
  watch *w = arg;
  Google__Protobuf__Timestamp gen = GOOGLE__PROTOBUF__TIMESTAMP__INIT,
                              until = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
  gen.seconds = 1767225600;
  until.seconds = 1767225600 + 300;
  static uint8_t sum[32];
  Controlplane__V1__WatchSnapshotsResponse m =
      CONTROLPLANE__V1__WATCH_SNAPSHOTS_RESPONSE__INIT;
  if (w->sent == 0) {
    Controlplane__V1__WorkerSnapshot s = CONTROLPLANE__V1__WORKER_SNAPSHOT__INIT;
    s.version = 1;
    s.ownership_epoch = 1;
    s.generated_at = &gen;
    s.valid_until = &until;
    s.checksum.data = sum;
    s.checksum.len = sizeof(sum);
    s.cluster_id = "c1";
    s.worker_id = "w1";
    s.session_id = "0123456789abcdef0123456789abcdef";
    m.payload_case = CONTROLPLANE__V1__WATCH_SNAPSHOTS_RESPONSE__PAYLOAD_SNAPSHOT;
    m.snapshot = &s;
    w->sent++;
    send_msg(c, w, &m);
  } else if (w->sent == 1) {
    Controlplane__V1__SnapshotDelta d = CONTROLPLANE__V1__SNAPSHOT_DELTA__INIT;
    d.base_version = 1;
    d.version = 2;
    d.ownership_epoch = 1;
    d.generated_at = &gen;
    d.valid_until = &until;
    d.checksum.data = sum;
    d.checksum.len = sizeof(sum);
    m.payload_case = CONTROLPLANE__V1__WATCH_SNAPSHOTS_RESPONSE__PAYLOAD_DELTA;
    m.delta = &d;
    w->sent++;
    send_msg(c, w, &m);
  } else {
    if (cp_grpc_call_finish(c, CP_GRPC_OK, NULL, NULL, 0) == PH_OK)
      free(w);
  }
}

static void h_watch(void *arg, cp_grpc_call *c, const uint8_t *req,
                    size_t len) {
  (void)arg;
  Controlplane__V1__WatchSnapshotsRequest *r =
      controlplane__v1__watch_snapshots_request__unpack(NULL, len, req);
  if (!r || !identity_ok(c, r->worker_id)) {
    cp_grpc_call_finish(c, r ? CP_GRPC_PERMISSION_DENIED
                             : CP_GRPC_INVALID_ARGUMENT,
                        r ? "worker_id does not match the certificate"
                          : "malformed request",
                        NULL, 0);
    if (r)
      controlplane__v1__watch_snapshots_request__free_unpacked(r, NULL);
    return;
  }
  controlplane__v1__watch_snapshots_request__free_unpacked(r, NULL);
  watch *w = calloc(1, sizeof(*w));
  if (!w) {
    cp_grpc_call_finish(c, CP_GRPC_RESOURCE_EXHAUSTED, "out of memory", NULL,
                        0);
    return;
  }
  cp_grpc_call_on_cancel(c, watch_gone, w);
  watch_next(w, c);
}

static void h_ack(void *arg, cp_grpc_call *c, const uint8_t *req,
                  size_t len) {
  (void)arg;
  Controlplane__V1__AcknowledgeSnapshotRequest *r =
      controlplane__v1__acknowledge_snapshot_request__unpack(NULL, len, req);
  if (!r) {
    cp_grpc_call_finish(c, CP_GRPC_INVALID_ARGUMENT, "malformed request",
                        NULL, 0);
    return;
  }
  int idok = identity_ok(c, r->worker_id);
  controlplane__v1__acknowledge_snapshot_request__free_unpacked(r, NULL);
  if (!idok) {
    cp_grpc_call_finish(c, CP_GRPC_PERMISSION_DENIED,
                        "worker_id does not match the certificate", NULL, 0);
    return;
  }
  Controlplane__V1__AcknowledgeSnapshotResponse resp =
      CONTROLPLANE__V1__ACKNOWLEDGE_SNAPSHOT_RESPONSE__INIT;
  reply(c, &resp.base);
}

static void h_runtime(void *arg, cp_grpc_call *c, const uint8_t *req,
                      size_t len) {
  (void)arg;
  Controlplane__V1__ReportRuntimeRequest *r =
      controlplane__v1__report_runtime_request__unpack(NULL, len, req);
  if (!r) {
    cp_grpc_call_finish(c, CP_GRPC_INVALID_ARGUMENT, "malformed request",
                        NULL, 0);
    return;
  }
  int idok = identity_ok(c, r->worker_id);
  controlplane__v1__report_runtime_request__free_unpacked(r, NULL);
  if (!idok) {
    cp_grpc_call_finish(c, CP_GRPC_PERMISSION_DENIED,
                        "worker_id does not match the certificate", NULL, 0);
    return;
  }
  Controlplane__V1__ReportRuntimeResponse resp =
      CONTROLPLANE__V1__REPORT_RUNTIME_RESPONSE__INIT;
  Google__Protobuf__Timestamp exp = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
  exp.seconds = 1767225600 + 30;
  resp.session_expires_at = &exp;
  reply(c, &resp.base);
}

typedef struct outcomes {
  uint64_t last;
  int denied;
} outcomes;

static void outcomes_gone(void *arg, cp_grpc_call *c) {
  (void)c;
  free(arg);
}

static void outcomes_next(void *arg, cp_grpc_call *c, const uint8_t *msg,
                          size_t len) {
  outcomes *o = arg;
  if (!msg) { /* half-close: answer */
    if (o->denied) {
      if (cp_grpc_call_finish(c, CP_GRPC_PERMISSION_DENIED,
                              "worker_id does not match the certificate",
                              NULL, 0) == PH_OK)
        free(o);
      return;
    }
    Controlplane__V1__ReportOutcomesResponse resp =
        CONTROLPLANE__V1__REPORT_OUTCOMES_RESPONSE__INIT;
    resp.acknowledged_sequence = o->last;
    free(o);
    reply(c, &resp.base);
    return;
  }
  Controlplane__V1__ReportOutcomesRequest *r =
      controlplane__v1__report_outcomes_request__unpack(NULL, len, msg);
  if (!r) {
    if (cp_grpc_call_finish(c, CP_GRPC_INVALID_ARGUMENT, "malformed request",
                            NULL, 0) == PH_OK)
      free(o);
    return;
  }
  if (!identity_ok(c, r->worker_id))
    o->denied = 1;
  o->last = r->sequence;
  controlplane__v1__report_outcomes_request__free_unpacked(r, NULL);
  if (cp_grpc_call_recv(c, outcomes_next, o) != PH_OK &&
      cp_grpc_call_finish(c, CP_GRPC_INTERNAL, "receive refused", NULL, 0) ==
          PH_OK)
    free(o);
}

static void h_outcomes(void *arg, cp_grpc_call *c, const uint8_t *req,
                       size_t len) {
  (void)arg;
  (void)req;
  (void)len;
  outcomes *o = calloc(1, sizeof(*o));
  if (!o) {
    cp_grpc_call_finish(c, CP_GRPC_RESOURCE_EXHAUSTED, "out of memory", NULL,
                        0);
    return;
  }
  cp_grpc_call_on_cancel(c, outcomes_gone, o);
  if (cp_grpc_call_recv(c, outcomes_next, o) != PH_OK &&
      cp_grpc_call_finish(c, CP_GRPC_INTERNAL, "receive refused", NULL, 0) ==
          PH_OK)
    free(o);
}

static const cp_grpc_method methods[] = {
    {SVC "RegisterWorker", CP_RPC_UNARY, h_register, NULL},
    {SVC "WatchSnapshots", CP_RPC_SERVER_STREAM, h_watch, NULL},
    {SVC "AcknowledgeSnapshot", CP_RPC_UNARY, h_ack, NULL},
    {SVC "ReportRuntime", CP_RPC_UNARY, h_runtime, NULL},
    {SVC "ReportOutcomes", CP_RPC_CLIENT_STREAM, h_outcomes, NULL},
};

/* A gRPC server's keys: t/unit/cp/cp_grpc_keys.ini.sample's [srv] and the
 * control plane's key groups (generated, modules/cp_common/grpc/local.mk). */
extern const ph_conf_key srv_keys[];

static int echo_check(ph_ctx *ctx, const ph_api *a, const char **key,
                      char *why, size_t whylen) {
  return cp_grpc_conf_check_server(ctx, a, "listen", key, why, whylen);
}

static int echo_init(ph_ctx *ctx, const ph_api *a, void **state) {
  E.ctx = ctx;
  E.api = a;
  *state = &E;
  const char *err = NULL;
  E.cq = cp_grpc_cq_new(ctx, a, "cq", &err);
  if (!E.cq) {
    fprintf(stderr, "cp_echo_server: %s\n", err);
    return PH_EINVAL;
  }
  cp_grpc_server_cfg cfg;
  cp_grpc_conf_server(ctx, a, "listen", &cfg);
  char e[256];
  E.srv = cp_grpc_server_new(E.cq, &cfg, methods,
                             sizeof(methods) / sizeof(methods[0]), e,
                             sizeof(e));
  if (!E.srv) {
    fprintf(stderr, "cp_echo_server: %s\n", e);
    return PH_EINVAL;
  }
  FILE *f = fopen(E.port_file, "w");
  if (!f)
    return PH_EINVAL;
  fprintf(f, "%d\n", cp_grpc_server_port(E.srv));
  fclose(f);
  return PH_OK;
}

static const ph_module echo_mod = {
    PH_MODULE_HEADER("cp_echo", "1.0.0"),
    .config = srv_keys,
    .init = echo_init,
    .check = echo_check,
};

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: cp_echo_server CONFIG PORT_FILE\n");
    return 2;
  }
  E.port_file = argv[2];
  FILE *f = fopen(argv[1], "r");
  static char text[65536];
  size_t n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
  if (f)
    fclose(f);
  text[n] = '\0';
  signal(SIGPIPE, SIG_IGN);
  signal(SIGTERM, on_sig);
  signal(SIGINT, on_sig);
  char err[1024];
  ph_mock *m = ph_mock_new(text, err, sizeof(err));
  if (!m || ph_mock_add(m, &echo_mod, err, sizeof(err)) < 0 ||
      ph_mock_init(m, err, sizeof(err)) < 0 ||
      ph_mock_start(m, err, sizeof(err)) < 0) {
    fprintf(stderr, "cp_echo_server: %s", err);
    ph_mock_free(m);
    return 1;
  }
  while (!stop_flag)
    ph_mock_run_for(m, 100);
  cp_grpc_cq_free(E.cq);
  ph_mock_stop(m);
  ph_mock_free(m);
  return 0;
}
