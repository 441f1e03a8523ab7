/* SPDX-License-Identifier: BSD-2-Clause */
/* The controller's pool cache as the unit tests of its other parts see it
 * (modules/controlplane_server/cs.h's cs_pool_get and cs_pool_forget):
 * the pool the test put in m->pool, handed over at once; nothing to
 * forget. Included by one source file of a test program. */
#ifndef PH_CS_POOL_DOUBLE_H
#define PH_CS_POOL_DOUBLE_H

#include "controlplane_server/cs.h"

int cs_pool_get(cs *m, cs_pool_cb cb, void *arg) {
  cb(arg, m->pool);
  return 0;
}

void cs_pool_forget(cs *m, void *arg) {
  (void)m;
  (void)arg;
}

#endif
