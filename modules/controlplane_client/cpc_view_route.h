/* SPDX-License-Identifier: BSD-2-Clause */
/* GET /v1/cp/view on the admin listener: what the gateway's current
 * snapshot view holds, for operators and tests (which proxies this worker
 * owns right now, CP-4-1): the view's version, epoch, valid_until and
 * generated_at and stale deadline, and per proxy its id, zone, capacity, usable_until,
 * expires_at and draining. Read-only; never a credential, host or port.
 * docs/user-guide/gateway.md "What the gateway holds". */
#ifndef CPC_VIEW_ROUTE_H
#define CPC_VIEW_ROUTE_H

#include <proxyhost/module.h>

#include "cp_common/view/cp_view.h"

#define CPC_VIEW_ROUTE "/v1/cp/view"

typedef struct cpc_view_route {
  ph_ctx *ctx;
  const ph_api *api;
  cp_view_slot *slot;
} cpc_view_route;

/* Init only: registers the route; r (filled here) and slot, the module's
 * view slot, must outlive the module. PH_OK or route_register's error. */
int cpc_view_route_register(cpc_view_route *r, ph_ctx *ctx,
                            const ph_api *api, cp_view_slot *slot);

#endif
