/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Choosing the agent connection for a new stream: weighted least
 * connections over the connections of the agent the client named
 * (seed 001 "Server selection"). Pure: the module fills one candidate per
 * connection of that agent and opens the stream on the one picked.
 *
 * A candidate that cannot open (draining after GOAWAY, at its stream
 * limit, metadata not received yet) is skipped. Among the rest the one
 * with the fewest streams per unit of weight wins (streams_a * weight_b <
 * streams_b * weight_a, in 64 bits: no overflow); ties go to the first
 * tied candidate at or after `start` (the caller rotates it), so equal
 * connections share the load instead of the first one taking it all.
 * No candidate at all is the caller's selection/agent_offline.
 *
 * The weight is the connection's capacity (TM-P2-27, issue 27
 * "Selection"): the streams it takes at once, as the agent's metadata
 * said (max_streams), never more than the server's own per-connection
 * limit, which is also the capacity of a connection whose agent said
 * nothing (sel_weight). So a connection with twice the capacity takes
 * twice the streams, and each fills in proportion to what it can hold.
 */
#ifndef TM_AGENT_SELECT_H
#define TM_AGENT_SELECT_H

#include <stddef.h>
#include <stdint.h>

typedef struct sel_cand {
  uint32_t streams; /* opening or open on the connection */
  uint32_t weight;  /* >= 1 (0 reads as 1) */
  int can_open;     /* 0: skip it */
} sel_cand;

/* A connection's weight: its advertised capacity (0: none said) bounded
 * by the server's per-connection stream limit; at least 1. */
uint32_t sel_weight(uint32_t advertised, uint32_t server_limit);

/* The index of the chosen candidate, or -1 when none can open. */
int sel_pick(const sel_cand *c, size_t n, size_t start);

#endif
