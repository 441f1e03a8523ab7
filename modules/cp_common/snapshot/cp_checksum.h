/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The snapshot checksum (CP-1-19, CP-3-4): SHA-256 over a canonical
 * encoding of a WorkerSnapshot's version, ownership_epoch, valid_until,
 * routing (in order), proxies (in proxy_id order) and credentials (in
 * (secret_ref, credential_version) order). Defined byte by byte in
 * docs/api/controlplane.md, "Checksum", so that a peer in another language
 * computes the same 32 bytes; t/integration/cp_checksum_vector.sh checks
 * this code against an independent Python implementation. Fields the
 * receiver does not know (protobuf unknown fields), generated_at and the
 * identity fields do not enter it. Pure; reentrant.
 */
#ifndef PH_CP_CHECKSUM_H
#define PH_CP_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

#include "controlplane/v1/controlplane.pb-c.h"

#define CP_CHECKSUM_LEN 32

/* The checksum of s into out. 0, or -1 when memory for the sort order
 * ran out (out is then zeroed). */
int cp_checksum_snapshot(const Controlplane__V1__WorkerSnapshot *s,
                         uint8_t out[CP_CHECKSUM_LEN]);

/* 1 when b holds exactly these 32 bytes. */
int cp_checksum_equal(const ProtobufCBinaryData *b,
                      const uint8_t sum[CP_CHECKSUM_LEN]);

/* SHA-256 of one item's canonical encoding (the same bytes it adds to the
 * snapshot's): two items are equal for a delta when these are. */
void cp_checksum_proxy(const Controlplane__V1__OwnedProxy *p,
                       uint8_t out[CP_CHECKSUM_LEN]);
void cp_checksum_rule(const Controlplane__V1__RoutingRule *r,
                      uint8_t out[CP_CHECKSUM_LEN]);
void cp_checksum_credential(const Controlplane__V1__Credential *c,
                            uint8_t out[CP_CHECKSUM_LEN]);

/* The orders the checksum uses (NULL strings as ""): bytewise, unsigned,
 * a prefix first; credentials then by version. qsort comparators over
 * arrays of pointers. */
int cp_proxy_ptr_cmp(const void *a, const void *b);
int cp_credential_ptr_cmp(const void *a, const void *b);
int cp_id_cmp(const char *a, const char *b);

#endif
