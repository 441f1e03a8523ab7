/* SPDX-License-Identifier: BSD-2-Clause */
/* Reconnect delays: jittered, bounded exponential backoff, the one
 * implementation every reconnecting part uses (the tunnel's WebSocket
 * connections, the control plane's sessions, Redis). */
#ifndef PH_BACKOFF_H
#define PH_BACKOFF_H

#include <stdint.h>

/* attempt counts failures since the last success (0 = first retry); the
 * delay is uniform in [d/2, d] with d = min(max_ms, min_ms << attempt);
 * rnd is a uniform 32-bit random number (the caller's RNG). Pure. */
uint32_t ph_backoff_ms(uint32_t attempt, uint32_t min_ms, uint32_t max_ms,
                       uint32_t rnd);

#endif
