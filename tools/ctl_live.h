/* SPDX-License-Identifier: BSD-2-Clause */
/* proxyhostctl agent list's live state (issue 28): the store's agents
 * marked from pages of the tunnel server's status table
 * (GET /v1/status/tunnel_server/agents/agents: columns agent, log_id,
 * connections, streams, capabilities, rtt_ms, connected_s, node), matched
 * on agent, which is the store's agent name. Pure: reads the page it
 * is given (untrusted bytes: t/fuzz/fuzz_ctl_status.c). */
#ifndef PH_CTL_LIVE_H
#define PH_CTL_LIVE_H

#include <stddef.h>
#include <stdint.h>

#define CTL_LIVE_NAME_MAX 128
#define CTL_LIVE_NODE_MAX 64

typedef struct ctl_live_agent {
  char name[CTL_LIVE_NAME_MAX + 1]; /* the store's name (the caller's) */
  int online;                       /* a row names it */
  char node[CTL_LIVE_NODE_MAX + 1]; /* its node column, "" when none */
} ctl_live_agent;

/* Marks each agent of a (n) that a row of the page names in its agent
 * column online, with its node. The rows on the page (0..), with *more
 * (the page's "more") and *offset (its "offset"); -1 when body is not a
 * status answer holding a table with an agent column (nothing marked
 * then). */
long ctl_live_page(const char *body, size_t len, ctl_live_agent *a, size_t n,
                   int *more, int64_t *offset);

#endif
