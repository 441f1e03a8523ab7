/* SPDX-License-Identifier: BSD-2-Clause */
/* The gateway's reading of a full snapshot from the wire: the input is a
 * WorkerSnapshot's bytes, read as a stream message
 * (cp_snapshot_unpack_response) and as a snapshot, unpacked into a
 * bounded arena (cp_snapshot_unpack) and judged by cp_snapshot_check as cluster c1,
 * worker w1, session s1 at CP_FUZZ_NOW. It checks that the verdict is one
 * of the six, has a text and is the same twice; that an accepted snapshot
 * packs and unpacks to one accepted again with the same checksum, and
 * that an empty delta on it (the next version, same content) applies and
 * is accepted. Seeds: t/fuzz/seeds/cp_snapshot (made with
 * -DCP_FUZZ_SEEDGEN, see t/fuzz/README.md). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cp_common/snapshot/cp_checksum.h"
#include "cp_fuzz_fixture.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define R_OK CONTROLPLANE__V1__REJECT_REASON__REJECT_REASON_UNSPECIFIED

static void empty_delta_applies(const Controlplane__V1__WorkerSnapshot *m) {
  if (m->version == UINT64_MAX)
    return;
  Controlplane__V1__WorkerSnapshot next = *m;
  next.version = m->version + 1;
  uint8_t sum[CP_CHECKSUM_LEN];
  if (cp_checksum_snapshot(&next, sum) != 0)
    return;
  Controlplane__V1__SnapshotDelta d = CONTROLPLANE__V1__SNAPSHOT_DELTA__INIT;
  d.base_version = m->version;
  d.version = next.version;
  d.ownership_epoch = m->ownership_epoch;
  d.valid_until = m->valid_until;
  d.checksum.data = sum;
  d.checksum.len = sizeof sum;
  cp_snapshot *r = NULL;
  const char *why = NULL;
  cp_delta_result res = cp_snapshot_apply_delta(m, &d, &cp_fuzz_expect,
                                                CP_FUZZ_NOW, NULL, &r, &why);
  if (res == CP_DELTA_ENOMEM)
    return;
  if (res != CP_DELTA_OK || !r ||
      cp_snapshot_msg(r)->n_proxies != m->n_proxies ||
      cp_snapshot_msg(r)->n_routing != m->n_routing)
    abort();
  cp_snapshot_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* The same bytes as a stream message (cp_snapshot_unpack_response, the
   * gateway's reader): a handle has a snapshot or a delta, never neither. */
  const Controlplane__V1__SnapshotDelta *d = NULL;
  cp_snapshot *resp = cp_snapshot_unpack_response(data, size, &d);
  if (resp && !d && !cp_snapshot_msg(resp))
    abort();
  cp_snapshot_free(resp);
  cp_snapshot *s = cp_snapshot_unpack(data, size);
  if (!s)
    return 0;
  const Controlplane__V1__WorkerSnapshot *m = cp_snapshot_msg(s);
  const char *why = NULL, *why2 = NULL;
  Controlplane__V1__RejectReason r =
      cp_snapshot_check(m, &cp_fuzz_expect, CP_FUZZ_NOW, NULL, &why);
  if ((unsigned)r > 5 || !why || !*why)
    abort();
  if (cp_snapshot_check(m, &cp_fuzz_expect, CP_FUZZ_NOW, NULL, &why2) != r ||
      strcmp(why, why2) != 0)
    abort();
  if (r == R_OK) {
    size_t n = controlplane__v1__worker_snapshot__get_packed_size(m);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf)
      abort();
    if (controlplane__v1__worker_snapshot__pack(m, buf) != n)
      abort();
    cp_snapshot *again = cp_snapshot_unpack(buf, n);
    free(buf);
    if (!again ||
        cp_snapshot_check(cp_snapshot_msg(again), &cp_fuzz_expect, CP_FUZZ_NOW,
                          NULL, NULL) != R_OK)
      abort();
    cp_snapshot_free(again);
    empty_delta_applies(m);
  }
  cp_snapshot_free(s);
  return 0;
}

#ifdef CP_FUZZ_SEEDGEN
/* Writes the seeds into the directory named on the command line. */
static void put(const char *dir, const char *name,
                const Controlplane__V1__WorkerSnapshot *m) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  size_t n = controlplane__v1__worker_snapshot__get_packed_size(m);
  uint8_t *buf = malloc(n ? n : 1);
  controlplane__v1__worker_snapshot__pack(m, buf);
  FILE *f = fopen(path, "wb");
  if (f) {
    fwrite(buf, 1, n, f);
    fclose(f);
  }
  free(buf);
}

int main(int argc, char **argv) {
  if (argc != 2)
    return 2;
  cp_snapshot *s = cp_fuzz_build(0);
  Controlplane__V1__WorkerSnapshot *m =
      (Controlplane__V1__WorkerSnapshot *)cp_snapshot_msg(s);
  put(argv[1], "valid", m);
  m->checksum.data[0] ^= 1;
  put(argv[1], "bad_checksum", m);
  m->checksum.data[0] ^= 1;
  m->session_id = "s2";
  put(argv[1], "other_session", m);
  m->session_id = "s1";
  Google__Protobuf__Timestamp *vu = m->valid_until;
  m->valid_until = NULL;
  put(argv[1], "no_valid_until", m);
  m->valid_until = vu;
  m->proxies[0]->protocol = 9;
  cp_checksum_snapshot(m, m->checksum.data);
  put(argv[1], "unknown_protocol", m);
  cp_snapshot_free(s);
  s = cp_fuzz_build(1);
  put(argv[1], "valid_next", cp_snapshot_msg(s));
  cp_snapshot_free(s);
  return 0;
}
#endif
