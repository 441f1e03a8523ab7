/* SPDX-License-Identifier: BSD-2-Clause */
/* The view's credential material by (secret_ref, version) (cpc_material.h). */
#include "cpc_material.h"

#include <stdlib.h>
#include <string.h>

#include <proxyhost/module.h>

static int cmp_key(const char *ref, uint64_t ver,
                   const ph_pool_view_credential *c) {
  int r = strcmp(ref, c->secret_ref);
  if (r)
    return r;
  return ver < c->credential_version ? -1 : ver > c->credential_version;
}

static int cmp(const void *a, const void *b) {
  const ph_pool_view_credential *x = *(const ph_pool_view_credential *const *)a;
  const ph_pool_view_credential *y = *(const ph_pool_view_credential *const *)b;
  return cmp_key(x->secret_ref, x->credential_version, y);
}

int cpc_material_index(cpc_material *mi, const ph_pool_view *v) {
  mi->cred = NULL;
  mi->n = 0;
  if (!v || !v->n_proxies)
    return PH_OK;
  mi->cred = malloc(v->n_proxies * sizeof(*mi->cred));
  if (!mi->cred)
    return PH_ENOMEM;
  for (uint32_t i = 0; i < v->n_proxies; i++)
    if (v->proxies[i].credential)
      mi->cred[mi->n++] = v->proxies[i].credential;
  qsort(mi->cred, mi->n, sizeof(*mi->cred), cmp);
  return PH_OK;
}

void cpc_material_free(cpc_material *mi) {
  free(mi->cred); /* pointers into the view only: nothing secret here */
  mi->cred = NULL;
  mi->n = 0;
}

int cpc_material_find(void *arg, const char *secret_ref, uint64_t version,
                      const char **user, const char **pass) {
  const cpc_material *mi = arg;
  size_t lo = 0, hi = mi->n;
  while (lo < hi && secret_ref) {
    size_t mid = lo + (hi - lo) / 2;
    int c = cmp_key(secret_ref, version, mi->cred[mid]);
    if (!c) {
      *user = mi->cred[mid]->username;
      *pass = mi->cred[mid]->password;
      return 0;
    }
    if (c < 0)
      hi = mid;
    else
      lo = mid + 1;
  }
  return -1;
}
