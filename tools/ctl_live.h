/* SPDX-License-Identifier: BSD-2-Clause */
/* proxyhostctl agent list's live state (issue 28): the store's agents
 * marked from pages of the tunnel server's status table
 * (GET /v1/status/tunnel_server/agents/agents: columns agent, log_id,
 * connections, streams, capabilities, rtt_ms, connected_s, node, online,
 * last_seen_at), matched on agent, which is the store's agent name. A row
 * with online "yes" (or a table without the online column) says the agent
 * is connected to its node (this one or another, by presence); "no" says
 * it left this node at last_seen_at. Pure: reads the page it
 * is given (untrusted bytes: t/fuzz/fuzz_ctl_status.c). */
#ifndef PH_CTL_LIVE_H
#define PH_CTL_LIVE_H

#include <stddef.h>
#include <stdint.h>

#define CTL_LIVE_NAME_MAX 128
#define CTL_LIVE_NODE_MAX 64
#define CTL_LIVE_SEEN_MAX 32
#define CTL_LIVE_INSTANCE_MAX 64 /* the host's section name bound */

typedef struct ctl_live_agent {
  char name[CTL_LIVE_NAME_MAX + 1]; /* the store's name (the caller's) */
  int online;                       /* a row names it */
  char node[CTL_LIVE_NODE_MAX + 1]; /* its node column, "" when none */
  char last_seen[CTL_LIVE_SEEN_MAX + 1]; /* offline: when it left, "" */
} ctl_live_agent;

/* Marks each agent of a (n) that a row of the page names in its agent
 * column online, with its node; or, for a row with online "no" naming an
 * agent no row marked online, keeps its last_seen_at. Cells are cut to
 * the fields' sizes, control and non-ASCII bytes shown as '?'. The rows on the page (0..), with *more
 * (the page's "more") and *offset (its "offset"); -1 when body is not a
 * status answer holding a table with an agent column (nothing marked
 * then). */
long ctl_live_page(const char *body, size_t len, ctl_live_agent *a, size_t n,
                   int *more, int64_t *offset);

/* Reads the host's modules table (GET /v1/status/proxyhost/process/modules:
 * columns instance, module, version) and copies into names (at most max)
 * the instances whose module is tunnel_server ("tunnel_server",
 * "tunnel_server.hub"), keeping only names of [a-z0-9_.] that fit. The
 * number copied (0..max), or -1 when body is not that table. Pure, like
 * ctl_live_page. */
long ctl_live_servers(const char *body, size_t len,
                      char names[][CTL_LIVE_INSTANCE_MAX + 1], size_t max);

#endif
