/* SPDX-License-Identifier: BSD-2-Clause */
/* proxyhostctl proxy show's live part (issue 28): the controller's row of
 * the proxy from GET /v1/status/controlplane_server/proxies/proxies?key=ID
 * (docs/operations.md "Seeing what runs"), printed as "field: value"
 * lines after the proxy's configuration. */
#ifndef PH_CTL_PROXY_LIVE_H
#define PH_CTL_PROXY_LIVE_H

#include <stddef.h>
#include <stdio.h>

/* The path asked for proxy id (a key_ok id) into out: 0, or -1 when it
 * does not fit. */
int ctl_live_path(const char *id, char *out, size_t cap);
/* Prints the first row of the body's "proxies" table whose first cell is
 * id: owner, state per tier, capacity/active, last outcome. 1 printed; 0
 * no such row (nothing printed); -1 not the status JSON. */
int ctl_print_live(FILE *out, const char *body, size_t len, const char *id);

#endif
