/* SPDX-License-Identifier: BSD-2-Clause */
/* The host's own status panel (issue 28): instance "proxyhost", panel
 * "process": version, ABI, configuration file, uptime, readiness and its
 * reasons, the last reload and its result, open descriptors, resident
 * memory, and the table "modules" (one row per loaded instance). */
#ifndef PH_CORE_PANEL_H
#define PH_CORE_PANEL_H

#include "core_types.h"

/* Registers it with c->status (core_new); ready tells readiness and its
 * reasons (core_ready). PH_OK or a ph_status. */
int core_panel_register(ph_core *c, admin_ready_fn ready);

#endif
