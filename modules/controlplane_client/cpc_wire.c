/* SPDX-License-Identifier: BSD-2-Clause */
/* controlplane_client's messages (cpc_wire.h). */
#include <stdlib.h>
#include <string.h>

#include <proxyhost/abi.h>

#include "controlplane/v1/controlplane.pb-c.h"
#include "cp_common/snapshot/cp_snapshot_time.h"
#include "cp_common/snapshot/cp_wire.h"
#include "cpc_wire.h"


int cpc_pack_register(const char *cluster, const char *worker,
                      const char *instance, const char *zone, cp_buf *out) {
  Controlplane__V1__RegisterWorkerRequest r;
  controlplane__v1__register_worker_request__init(&r);
  r.cluster_id = (char *)cluster;
  r.worker_id = (char *)worker;
  r.instance_id = (char *)instance;
  r.zone = (char *)zone;
  r.supported_protocol_version =
      CONTROLPLANE__V1__PROTOCOL_VERSION__PROTOCOL_VERSION_V1;
  return cp_buf_pack(&r.base, out);
}

int cpc_pack_watch(const char *worker, const char *session,
                   uint64_t last_version, const uint8_t *last_checksum,
                   cp_buf *out) {
  Controlplane__V1__WatchSnapshotsRequest r;
  controlplane__v1__watch_snapshots_request__init(&r);
  r.worker_id = (char *)worker;
  r.session_id = (char *)session;
  if (last_version && last_checksum) {
    r.last_version = last_version;
    r.last_checksum.data = (uint8_t *)last_checksum;
    r.last_checksum.len = 32;
  }
  /* This worker reads the shared lease form (issue 26): a renewal then
   * reaches it as two times, not as every owned proxy again. */
  r.shared_lease = 1;
  return cp_buf_pack(&r.base, out);
}

int cpc_pack_ack(const char *worker, const char *session, uint64_t version,
                 uint64_t epoch, const uint8_t checksum[32],
                 int reject_reason, cp_buf *out) {
  Controlplane__V1__AcknowledgeSnapshotRequest r;
  controlplane__v1__acknowledge_snapshot_request__init(&r);
  r.worker_id = (char *)worker;
  r.session_id = (char *)session;
  r.version = version;
  r.ownership_epoch = epoch;
  r.checksum.data = (uint8_t *)checksum;
  r.checksum.len = 32;
  if (reject_reason) {
    r.result = CONTROLPLANE__V1__ACK_RESULT__ACK_RESULT_REJECTED;
    r.reject_reason = (Controlplane__V1__RejectReason)reject_reason;
  } else {
    r.result = CONTROLPLANE__V1__ACK_RESULT__ACK_RESULT_ACCEPTED;
  }
  return cp_buf_pack(&r.base, out);
}

static int printable_id(const char *s) {
  return cp_wire_printable(s, PH_POOL_ID_MAX);
}

int cpc_pack_runtime(const char *worker, const char *session, uint64_t seq,
                     uint64_t version, uint64_t epoch, int64_t now_ms,
                     const pool_runtime_counter *counters, uint32_t n,
                     int draining, cp_buf *out) {
  Controlplane__V1__ReportRuntimeRequest r;
  Google__Protobuf__Timestamp ts;
  controlplane__v1__report_runtime_request__init(&r);
  Controlplane__V1__ProxyCounter *pc = NULL, **pp = NULL;
  if (n) {
    pc = calloc(n, sizeof(*pc));
    pp = calloc(n, sizeof(*pp));
    if (!pc || !pp) {
      free(pc);
      free(pp);
      return PH_ENOMEM;
    }
    for (uint32_t i = 0; i < n; i++) {
      controlplane__v1__proxy_counter__init(&pc[i]);
      pc[i].proxy_id = (char *)counters[i].proxy_id;
      pc[i].active = counters[i].active;
      pc[i].reserved = counters[i].reserved;
      pc[i].draining = counters[i].draining ? 1 : 0;
      pp[i] = &pc[i];
    }
  }
  r.n_counters = n;
  r.counters = pp;
  r.draining = draining ? 1 : 0;
  google__protobuf__timestamp__init(&ts);
  cp_ms_to_ts(now_ms, &ts);
  r.worker_id = (char *)worker;
  r.session_id = (char *)session;
  r.report_sequence = seq;
  r.snapshot_version = version;
  r.ownership_epoch = epoch;
  r.observed_at = &ts;
  int rc = cp_buf_pack(&r.base, out);
  free(pc);
  free(pp);
  return rc;
}

int cpc_read_revokes(const uint8_t *msg, size_t len,
                     void (*fn)(void *arg, const char *const *ids, size_t n),
                     void *arg) {
  Controlplane__V1__ReportRuntimeResponse *r =
      controlplane__v1__report_runtime_response__unpack(NULL, len, msg);
  if (!r)
    return PH_EINVAL;
  int rc = PH_OK;
  if (r->n_revoke_proxy_ids) {
    const char **ids = calloc(r->n_revoke_proxy_ids, sizeof(*ids));
    size_t k = 0;
    if (!ids)
      rc = PH_ENOMEM;
    else {
      for (size_t i = 0; i < r->n_revoke_proxy_ids; i++)
        if (printable_id(r->revoke_proxy_ids[i]))
          ids[k++] = r->revoke_proxy_ids[i];
      if (k)
        fn(arg, ids, k);
      free(ids);
    }
  }
  controlplane__v1__report_runtime_response__free_unpacked(r, NULL);
  return rc;
}


static int dur_u32(const Google__Protobuf__Duration *d, uint32_t *ms) {
  int64_t v;
  if (!d || !cp_dur_ok(d) || cp_dur_to_ms(d, &v) != 1 || v <= 0 ||
      v > UINT32_MAX)
    return 0;
  *ms = (uint32_t)v;
  return 1;
}

int cpc_read_registered(const uint8_t *msg, size_t len, cpc_registered *out,
                        const char **why) {
  memset(out, 0, sizeof(*out));
  Controlplane__V1__RegisterWorkerResponse *r =
      controlplane__v1__register_worker_response__unpack(NULL, len, msg);
  int rc = PH_EINVAL;
  if (!r) {
    *why = "register answer is not a RegisterWorkerResponse";
    return PH_EINVAL;
  }
  if (!printable_id(r->session_id))
    *why = "register answer has no usable session id";
  else if (r->protocol_version !=
           CONTROLPLANE__V1__PROTOCOL_VERSION__PROTOCOL_VERSION_V1)
    *why = "register answer names another protocol version";
  else if (!dur_u32(r->runtime_interval, &out->runtime_interval_ms))
    *why = "register answer has no usable runtime_interval";
  else if (!dur_u32(r->max_stale_age, &out->max_stale_ms))
    *why = "register answer has no usable max_stale_age";
  else {
    memcpy(out->session_id, r->session_id, strlen(r->session_id) + 1);
    out->epoch = r->ownership_epoch;
    /* 0 is not refused here: the session runs, only outcome batches
     * cannot be cut (outcome_reporter waits for a session that says). */
    out->max_runtime_counters = r->max_runtime_counters;
    rc = PH_OK;
  }
  controlplane__v1__register_worker_response__free_unpacked(r, NULL);
  return rc;
}

int cpc_read_outcomes_ack(const uint8_t *msg, size_t len, uint64_t *acked) {
  return cp_wire_read_ack(&controlplane__v1__report_outcomes_response__descriptor,
                          msg, len, acked);
}
