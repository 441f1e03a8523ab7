/* SPDX-License-Identifier: BSD-2-Clause */
/* The credential material of the view in use, found by (secret_ref,
 * credential_version) for a delta's result (CP-1-18, issue 23 item 10):
 * the held snapshot, the deltas' base, keeps the credentials' identity
 * but not their material, so the view holds the only copy. Built on the
 * loop thread for one cp_snapshot_apply_delta_from call, over a view the
 * caller holds for that long. */
#ifndef PH_CPC_MATERIAL_H
#define PH_CPC_MATERIAL_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/pool_view.h>

typedef struct cpc_material {
  const ph_pool_view_credential **cred; /* sorted by (ref, version) */
  size_t n;
} cpc_material;

/* Indexes v's credentials (the proxies' shared ones; v may be NULL: an
 * empty index). PH_OK or PH_ENOMEM. */
int cpc_material_index(cpc_material *mi, const ph_pool_view *v);
void cpc_material_free(cpc_material *mi);

/* A cp_material_fn over a cpc_material (arg). */
int cpc_material_find(void *arg, const char *secret_ref, uint64_t version,
                      const char **user, const char **pass);

#endif
