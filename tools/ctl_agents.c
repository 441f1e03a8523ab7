/* SPDX-License-Identifier: BSD-2-Clause */
/* proxyhostctl agent list (issue 28): the store's agents (admin_api's
 * GET /v1/agents) with three live columns from the tunnel server on the
 * same admin listener (each tunnel_server instance the host's modules
 * table names, at most LIVE_SERVERS_MAX: GET /v1/status/INSTANCE/agents/
 * agents, paged by the host's [admin] status_rows, at most LIVE_PAGES_MAX
 * pages):
 * online yes/no, node, last_seen ("now" while connected to this node or,
 * by presence, another; when it left this node lately, the date the
 * server kept, else "-"). When the
 * status cannot say (no tunnel_server there, the status page off: 404;
 * any other failure, said on stderr), online is "unknown", never "no". */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_cmd.h"
#include "ctl_live.h"
#include "ctl_print.h"

#define LIVE_PAGES_MAX 64  /* x status_rows (<= 500) rows at most */
#define LIVE_AGENTS_MAX 1000 /* admin_api's list limit at most */

typedef struct live {
  ctl_live_agent *a;
  size_t n;
  int complete; /* every row of the status table was read */
} live;

static const char *const live_cols[] = {"online", "node", "last_seen", NULL};

static void live_cell(void *arg, uint32_t row, size_t col, char *out,
                      size_t cap) {
  const live *l = arg;
  const ctl_live_agent *a = row < l->n ? &l->a[row] : NULL;
  const char *v = "-";
  if (a && a->online)
    v = col == 0 ? "yes" : col == 1 ? (a->node[0] ? a->node : "-") : "now";
  else if (col == 0)
    v = a && l->complete ? "no" : "unknown";
  else if (col == 2 && a && a->last_seen[0])
    v = a->last_seen;
  snprintf(out, cap, "%s", v);
}

#define LIVE_SERVERS_MAX 4 /* tunnel_server instances asked at most */

/* Reads one tunnel server instance's agents table, page by page, into l:
 * 1 when every row was read, 0 otherwise (said on stderr). */
static int live_read_one(const opts *o, const char *inst, live *l) {
  int64_t offset = 0;
  for (int page = 0; page < LIVE_PAGES_MAX; page++) {
    char path[512]; /* an instance name is at most CTL_LIVE_INSTANCE_MAX */
    snprintf(path, sizeof(path),
             "/v1/status/%s/agents/agents?offset=%" PRId64, inst, offset);
    ctl_response r;
    if (ctl_fetch(o, "GET", path, NULL, &r))
      return 0; /* said */
    if (r.status >= 400 && r.status != 404)
      fprintf(stderr, "proxyhostctl: online state unknown: %s answered %d "
                      "to %s\n", o->admin, r.status, path);
    int more = 0;
    int64_t off = 0;
    long rows = r.status >= 400 ? -1
                                : ctl_live_page(r.body, r.len, l->a, l->n,
                                                &more, &off);
    if (r.status < 400 && rows < 0)
      fprintf(stderr, "proxyhostctl: online state unknown: the answer to "
                      "%s is not the agents table\n", path);
    ctl_response_drop(&r);
    if (rows < 0)
      return 0;
    if (!more)
      return 1;
    if (rows == 0)
      return 0; /* more, but no row: no progress */
    offset = off + rows;
  }
  fprintf(stderr, "proxyhostctl: online state unknown past %d pages of "
                  "the status table\n", LIVE_PAGES_MAX);
  return 0;
}

/* Finds the tunnel_server instances in the host's modules table (one may
 * be named, "tunnel_server.hub" as in conf/demo.ini) and reads each one's
 * agents into l; complete only when every one was read whole. No
 * tunnel_server there, or the status page off (404): unknown. */
static void live_read(const opts *o, live *l) {
  static const char modules[] = "/v1/status/proxyhost/process/modules";
  ctl_response r;
  if (ctl_fetch(o, "GET", modules, NULL, &r))
    return; /* said */
  char names[LIVE_SERVERS_MAX][CTL_LIVE_INSTANCE_MAX + 1];
  long n = r.status >= 400 ? -1
                           : ctl_live_servers(r.body, r.len, names,
                                              LIVE_SERVERS_MAX);
  if (r.status >= 400 && r.status != 404)
    fprintf(stderr, "proxyhostctl: online state unknown: %s answered %d "
                    "to %s\n", o->admin, r.status, modules);
  else if (r.status < 400 && n < 0)
    fprintf(stderr, "proxyhostctl: online state unknown: the answer to "
                    "%s is not the modules table\n", modules);
  ctl_response_drop(&r);
  int whole = n > 0;
  for (long i = 0; i < n; i++)
    whole &= live_read_one(o, names[i], l);
  l->complete = whole;
}

int ctl_agent_list(const opts *o) {
  if (o->json)
    return list_call(o, "agents", o->owner, NULL);
  char path[512];
  int ex = list_path(o, "agents", o->owner, NULL, path, sizeof(path));
  if (ex)
    return ex;
  ctl_response r;
  if ((ex = ctl_fetch(o, "GET", path, NULL, &r)))
    return ex;
  if (r.status >= 400) {
    ex = ctl_report_error(o, path, &r);
    ctl_response_drop(&r);
    return ex;
  }
  live l = {NULL, 0, 0};
  ctl_doc x;
  if (ctl_json_parse(&x, r.body, r.len) == 0) {
    long items = json_type_of(&x.d, 0) == JSON_OBJECT
                     ? json_get(&x.d, 0, "items")
                     : -1;
    if (items >= 0 && json_type_of(&x.d, (size_t)items) == JSON_ARRAY) {
      size_t n = x.d.toks[items].size;
      l.a = calloc(n ? n : 1, sizeof(*l.a));
      l.n = l.a ? (n < LIVE_AGENTS_MAX ? n : LIVE_AGENTS_MAX) : 0;
      size_t k = (size_t)items + 1;
      for (size_t i = 0; i < l.n; i++, k = x.d.toks[k].next) {
        long nm = json_get(&x.d, k, "name");
        if (nm < 0 ||
            json_str(&x.d, (size_t)nm, l.a[i].name, sizeof(l.a[i].name)) < 0)
          l.a[i].name[0] = '\0';
      }
    }
    free(x.toks);
  }
  if (l.n)
    live_read(o, &l);
  if (ctl_print_list_ex(stdout, r.body, r.len, ctl_columns("agents"),
                        live_cols, live_cell, &l) < 0)
    fprintf(stdout, "%s\n", r.body);
  free(l.a);
  ctl_response_drop(&r);
  return 0;
}
