/* SPDX-License-Identifier: BSD-2-Clause */
/* The gateway's application of a delta from the wire: the input is a
 * SnapshotDelta's bytes, applied (cp_snapshot_apply_delta) to the fixed
 * held snapshot of cp_fuzz_fixture.h (version 7) at CP_FUZZ_NOW. It
 * checks that NEED_FULL leaves no snapshot and has a text, and that an
 * applied one has the delta's version, epoch and checksum, the held
 * identity, passes cp_snapshot_check, carries only credentials its proxies
 * name, and that the controller's diff from the held snapshot to it
 * applies to the same checksum. Seeds: t/fuzz/seeds/cp_delta (made with
 * -DCP_FUZZ_SEEDGEN, see t/fuzz/README.md). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cp_common/snapshot/cp_checksum.h"
#include "cp_fuzz_fixture.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define R_OK CONTROLPLANE__V1__REJECT_REASON__REJECT_REASON_UNSPECIFIED

static cp_snapshot *held;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!held && !(held = cp_fuzz_build(0)))
    abort();
  const Controlplane__V1__WorkerSnapshot *h = cp_snapshot_msg(held);
  Controlplane__V1__SnapshotDelta *d =
      controlplane__v1__snapshot_delta__unpack(NULL, size, data);
  if (!d)
    return 0;
  cp_snapshot *r = NULL;
  const char *why = NULL;
  cp_delta_result res = cp_snapshot_apply_delta(h, d, &cp_fuzz_expect,
                                                CP_FUZZ_NOW, NULL, &r, &why);
  if (res != CP_DELTA_OK) {
    if (r || !why || !*why)
      abort();
  } else {
    const Controlplane__V1__WorkerSnapshot *m = cp_snapshot_msg(r);
    uint8_t sum[CP_CHECKSUM_LEN];
    if (!m || m->version != d->version ||
        m->ownership_epoch != d->ownership_epoch ||
        strcmp(m->session_id, h->session_id) != 0 ||
        cp_checksum_snapshot(m, sum) != 0 ||
        !cp_checksum_equal(&d->checksum, sum) ||
        cp_snapshot_check(m, &cp_fuzz_expect, CP_FUZZ_NOW, NULL, NULL) != R_OK)
      abort();
    cp_delta *back = NULL;
    if (cp_snapshot_diff(h, m, &back, NULL) == CP_DELTA_OK) {
      cp_snapshot *r2 = NULL;
      if (cp_snapshot_apply_delta(h, cp_delta_msg(back), &cp_fuzz_expect,
                                  CP_FUZZ_NOW, NULL, &r2, NULL) != CP_DELTA_OK)
        abort();
      uint8_t sum2[CP_CHECKSUM_LEN];
      cp_checksum_snapshot(cp_snapshot_msg(r2), sum2);
      if (memcmp(sum, sum2, sizeof sum) != 0)
        abort();
      cp_snapshot_free(r2);
      cp_delta_free(back);
    } else {
      abort(); /* same identity, higher version, held credentials only */
    }
    cp_snapshot_free(r);
  }
  controlplane__v1__snapshot_delta__free_unpacked(d, NULL);
  return 0;
}

#ifdef CP_FUZZ_SEEDGEN
static void put(const char *dir, const char *name,
                const Controlplane__V1__SnapshotDelta *m) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  size_t n = controlplane__v1__snapshot_delta__get_packed_size(m);
  uint8_t *buf = malloc(n ? n : 1);
  controlplane__v1__snapshot_delta__pack(m, buf);
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
  cp_snapshot *a = cp_fuzz_build(0), *b = cp_fuzz_build(1);
  cp_delta *d = NULL;
  if (cp_snapshot_diff(cp_snapshot_msg(a), cp_snapshot_msg(b), &d, NULL) !=
      CP_DELTA_OK)
    return 1;
  Controlplane__V1__SnapshotDelta *m =
      (Controlplane__V1__SnapshotDelta *)cp_delta_msg(d);
  put(argv[1], "changes", m);
  m->base_version = 6;
  put(argv[1], "wrong_base", m);
  m->base_version = 7;
  m->checksum.data[3] ^= 0x10;
  put(argv[1], "bad_checksum", m);
  cp_delta_free(d);
  /* The same content, next version: an empty delta. */
  cp_snapshot *c = cp_fuzz_build(0);
  Controlplane__V1__WorkerSnapshot *cm =
      (Controlplane__V1__WorkerSnapshot *)cp_snapshot_msg(c);
  cm->version = 8;
  cp_checksum_snapshot(cm, cm->checksum.data);
  if (cp_snapshot_diff(cp_snapshot_msg(a), cm, &d, NULL) == CP_DELTA_OK)
    put(argv[1], "empty", cp_delta_msg(d));
  cp_delta_free(d);
  cp_snapshot_free(a);
  cp_snapshot_free(b);
  cp_snapshot_free(c);
  return 0;
}
#endif
