/* SPDX-License-Identifier: BSD-2-Clause */
/* proxyhostctl's reading of GET /v1/status (issue 28): the summary
 * (tools/ctl_status_print.c) puts the host's process panel first wherever
 * it comes, shows version, uptime, readiness and its reasons, the last
 * reload, fds, rss and the modules; a table's count ("+" with more), its
 * first rows aligned and a pointer to the rest; fields on at most two
 * lines; every line within the width; no control character of a value
 * reaches the terminal; anything else is refused, printing nothing. And
 * agent list's live columns (tools/ctl_live.c): an agent is online when a
 * row's agent column names it, with its node; a page without that column is
 * refused; with the online column (issue 28, remote and offline agents),
 * a row online "no" gives its last_seen_at unless another row says the
 * agent is online (on another node), a value neither yes nor no counts
 * for nothing. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_live.h"
#include "ctl_status_print.h"
#include "tap.h"

static char *render(const char *json, unsigned width, unsigned rows,
                    int *rc) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  ctl_status_view v = {width, rows};
  *rc = ctl_print_status(f, json, strlen(json), &v);
  fclose(f);
  return buf;
}

/* The longest line's characters (code points). */
static size_t widest(const char *s) {
  size_t best = 0, n = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '\n') {
      best = n > best ? n : best;
      n = 0;
    } else if ((*p & 0xc0) != 0x80) {
      n++;
    }
  }
  return n > best ? n : best;
}

static const char process[] =
    "{\"instance\":\"proxyhost\",\"module\":\"proxyhost\",\"panels\":[{"
    "\"name\":\"process\",\"title\":\"Process\",\"fields\":{"
    "\"version\":\"0.9.0\",\"abi\":\"1.7\",\"config\":\"/etc/p.ini\","
    "\"uptime_s\":3725,\"ready\":\"no\",\"ready_reasons\":\"tunnel_server: "
    "no store; auth_cache: no revision\",\"last_reload\":"
    "\"2026-12-07T03:00:00Z\",\"last_reload_result\":\"refused\","
    "\"open_fds\":23,\"rss_bytes\":12897484},\"tables\":[{\"name\":"
    "\"modules\",\"columns\":[\"instance\",\"module\",\"version\"],"
    "\"rows\":[[\"tunnel_server\",\"tunnel_server\",\"1.0.0\"],"
    "[\"tunnel_server.eu\",\"tunnel_server\",\"1.0.0\"],"
    "[\"admin_api\",\"admin_api\",\"0.9.0\"]],\"offset\":0,"
    "\"more\":false}]}]}";

static void test_summary(void) {
  char doc[8192];
  /* The tunnel's instance first: the process panel still leads. */
  snprintf(doc, sizeof(doc),
           "{\"status_version\":1,\"instances\":[{\"instance\":"
           "\"tunnel_server\",\"module\":\"tunnel_server\",\"panels\":[{"
           "\"name\":\"agents\",\"title\":\"Agents\",\"fields\":{"
           "\"connected\":7,\"streams\":3,\"note\":null},\"tables\":[{"
           "\"name\":\"agents\",\"columns\":[\"agent\",\"log_id\","
           "\"connections\",\"node\"],\"rows\":["
           "[\"edge-1\",\"edge-1\",1,\"n1\"],[\"edge-22\",\"edge-22\",2,\"n1\"],"
           "[\"e3\",\"e3\",1,\"n2\"],[\"e4\",\"e4\",1,null],"
           "[\"e5\",\"e5\",1,\"n1\"],[\"e6\",\"e6\",1,\"n1\"],"
           "[\"e7\",\"e7\",1,\"n1\"]],\"offset\":0,\"more\":false},"
           "{\"name\":\"sessions\",\"columns\":[\"user\"],\"rows\":[],"
           "\"offset\":0,\"more\":false}]}]},%s]}",
           process);
  int rc;
  char *out = render(doc, 100, 5, &rc);
  is_int(rc, 0, "a status document is printed");
  const char *first = "proxyhost 0.9.0 (ABI 1.7), up 1h02m, ready: no\n";
  ok(strncmp(out, first, strlen(first)) == 0,
     "the process panel comes first: version, ABI, uptime, readiness");
  /* What the summary holds, in order of the screen. */
  static const struct {
    const char *text, *name;
  } want[] = {
      {"  not ready: tunnel_server: no store; auth_cache: no revision\n",
       "... the reasons when not ready"},
      {"config: /etc/p.ini\n", "... the configuration file"},
      {"last reload: 2026-12-07T03:00:00Z refused\n",
       "... the last reload and its result"},
      {"open fds: 23, rss: 12.3 MiB\n", "... fds and memory"},
      {"modules (3): tunnel_server 1.0.0, tunnel_server.eu=tunnel_server "
       "1.0.0, admin_api 0.9.0\n",
       "... the modules: instance, its module when it differs, version"},
      {"\ntunnel_server/agents: Agents\n", "a module's panel by its path"},
      {"  connected 7  streams 3  note -\n",
       "... its fields on one line (null as -)"},
      {"  agents: 7 rows\n", "... a table's row count"},
      {"    AGENT    LOG_ID   CONNECTIONS  NODE\n", "... its header, aligned"},
      {"    edge-22  edge-22  2            n1\n", "... a row, aligned"},
      {"    e4       e4       1            -\n", "... a null cell as -"},
      {"    e5 ", "... five rows shown"},
      {"    ... 2 more: proxyhostctl status tunnel_server/agents/agents\n",
       "... and where the rest is"},
      {"  sessions: no rows\n", "an empty table"},
  };
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
    like(out, want[i].text, want[i].name);
  unlike(out, "  modules:", "the modules not also as a table");
  unlike(out, "    e6 ", "... not six rows");
  free(out);

  /* The page was full: more rows than the page. */
  snprintf(doc, sizeof(doc),
           "{\"instances\":[{\"instance\":\"pool\",\"panels\":[{\"name\":"
           "\"proxies\",\"title\":\"Proxies\",\"tables\":[{\"name\":\"proxies\","
           "\"columns\":[\"proxy_id\"],\"rows\":[[\"p1\"],[\"p2\"]],"
           "\"offset\":4,\"more\":true}]}]}]}");
  out = render(doc, 100, 500, &rc);
  like(out, "  proxies: 6+ rows\n", "more: the count with + (offset + page)");
  like(out, "    ... more: proxyhostctl status pool/proxies/proxies --offset 6\n",
       "... and the next page's offset");
  unlike(out, "proxyhost ", "no process panel: none printed");
  free(out);
}

static void test_width_and_control(void) {
  char doc[16384], fields[8192] = "";
  size_t n = 0;
  for (int i = 0; i < 30; i++)
    n += (size_t)snprintf(fields + n, sizeof(fields) - n,
                          "%s\"field_%02d\":\"value %02d\"", i ? "," : "", i, i);
  snprintf(doc, sizeof(doc),
           "{\"instances\":[{\"instance\":\"x\",\"panels\":[{\"name\":\"p\","
           "\"title\":\"T\",\"fields\":{%s},\"tables\":[{\"name\":\"t\","
           "\"columns\":[\"name\",\"long\"],\"rows\":[[\"\\u001b]0;owned\\u0007"
           "\\u009b31m\\u00e9t\\u00e9\",\"%s\"]],\"offset\":0,\"more\":false}]}]}]}",
           fields,
           "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
  int rc;
  char *out = render(doc, 40, 5, &rc);
  is_int(rc, 0, "width 40: printed");
  ok(widest(out) <= 40, "every line within 40 characters");
  is_int((long long)widest(out), 40, "... the long lines cut at 40");
  like(out, "  field_00 value 00  field_01 value 01\n", "fields wrapped");
  like(out, "...\n", "... a cut line ends with ...");
  unlike(out, "field_29", "fields on two lines at most: the rest left out");
  ok(strchr(out, 0x1b) == NULL && strchr(out, 0x07) == NULL,
     "no escape or bell byte from a value reaches the terminal");
  ok(strstr(out, "\xc2\x9b") == NULL, "... nor a C1 control (CSI)");
  like(out, "?]0;owned??31m\xc3\xa9t\xc3\xa9", "... each shown as ?, UTF-8 kept");
  free(out);

  out = render(doc, 10000, 5, &rc);
  ok(widest(out) <= CTL_STATUS_WIDTH_MAX, "a huge width is capped");
  free(out);
}

/* A row wider than the screen (a tunnel server's agents: the long
 * capabilities list): the widest cells give way, every column stays on
 * the line whole in its header, the last one (node) included. */
static void test_fit(void) {
  char doc[4096];
  snprintf(doc, sizeof(doc),
           "{\"instances\":[{\"instance\":\"tunnel_server\",\"panels\":[{"
           "\"name\":\"agents\",\"title\":\"Connected agents\",\"fields\":{},"
           "\"tables\":[{\"name\":\"agents\",\"columns\":[\"agent\","
           "\"log_id\",\"capabilities\",\"rtt_ms\",\"node\"],\"rows\":[["
           "\"edge-1\",\"agent-b35902f6\",\"%s\",36,\"node-1\"]],"
           "\"offset\":0,\"more\":false}]}]}]}",
           "stream_open_result.v1,stream_flow_control.v1,stream_trace.v1");
  int rc;
  char *out = render(doc, 60, 5, &rc);
  is_int(rc, 0, "a row wider than 60 columns: printed");
  ok(widest(out) <= 60, "... every line within 60 characters");
  like(out, "    AGENT   LOG_ID          CAPABILITIES      RTT_MS  NODE\n",
       "... every header whole, the last column's too");
  like(out, "    edge-1  agent-b35902f6  stream_open_r...  36      node-1\n",
       "... the widest cell gives way; the node is on the line");
  free(out);
  /* Too narrow for every column even at their least: the leading
   * columns that fit, whole (no name cut to "ed..."), and the others
   * said, not cut in the middle. */
  out = render(doc, 40, 5, &rc);
  ok(widest(out) <= 40, "at 40 columns: every line within 40 characters");
  like(out,
       "    AGENT   LOG_ID          CAPABILITIES\n"
       "    edge-1  agent-b35902f6  stream_op...\n",
       "... the leading columns that fit, the name and hash whole");
  like(out, "    (+2 columns: proxyhostctl",
       "... and how many were left out, and where to see them");
  free(out);
}

static void test_refused(void) {
  static const char *const bad[] = {
      "", "[]", "{}", "{\"instances\":{}}", "{\"instances\":[]", "not json",
      "{\"instances\":[],\"instances\":[]}", NULL};
  for (int i = 0; bad[i]; i++) {
    int rc;
    char *out = render(bad[i], 100, 5, &rc);
    char name[96];
    snprintf(name, sizeof(name), "refused: '%s'", bad[i]);
    is_int(rc, -1, name);
    is_str(out, "", "... nothing printed");
    free(out);
  }
  int rc;
  char *out = render("{\"instances\":[]}", 100, 5, &rc);
  is_int(rc, 0, "no instances: printed");
  is_str(out, "no panels\n", "... says so");
  free(out);
  static const char bare[] = "{\"instances\":[{\"instance\":\"proxyhost\","
                             "\"panels\":[{\"name\":\"process\"}]}]}";
  out = render(bare, 100, 5, &rc);
  is_int(rc, 0, "a process panel without fields: printed");
  like(out, "proxyhost - (ABI -), up -, ready: -\n", "... every value as -");
  like(out, "last reload: none\n", "... no reload");
  free(out);
}

static void test_live(void) {
  static const char page[] =
      "{\"status_version\":1,\"instances\":[{\"instance\":\"tunnel_server\","
      "\"module\":\"tunnel_server\",\"panels\":[{\"name\":\"agents\",\"title\":"
      "\"Agents\",\"fields\":{},\"tables\":[{\"name\":\"agents\",\"columns\":"
      "[\"agent\",\"log_id\",\"connections\",\"streams\",\"capabilities\","
      "\"rtt_ms\",\"connected_s\",\"node\"],\"rows\":["
      "[\"edge-1\",\"agent-1f2e3d4c\",2,0,\"open_result\",3,12,\"n\\u001b1\"],"
      "[\"stranger\",\"x\",1,0,\"\",null,1,\"n2\"]],\"offset\":50,"
      "\"more\":true}]}]}]}";
  ctl_live_agent a[3];
  memset(a, 0, sizeof(a));
  snprintf(a[0].name, sizeof(a[0].name), "edge-2");
  snprintf(a[1].name, sizeof(a[1].name), "edge-1");
  snprintf(a[2].name, sizeof(a[2].name), "agent-1f2e3d4c");
  int more;
  int64_t off;
  is_int(ctl_live_page(page, strlen(page), a, 3, &more, &off), 2,
         "live: the rows on the page");
  ok(more && off == 50, "... its more and offset");
  ok(a[1].online, "an agent named by a row's agent column is online");
  is_str(a[1].node, "n?1", "... with its node (no control byte)");
  ok(!a[0].online, "an agent no row names is not");
  ok(!a[2].online, "the log_id column (the logs' hash) is not matched");

  static const char no_id[] =
      "{\"instances\":[{\"instance\":\"tunnel_server\",\"panels\":[{\"name\":"
      "\"agents\",\"tables\":[{\"name\":\"agents\",\"columns\":[\"log_id\"],"
      "\"rows\":[[\"edge-2\"]],\"offset\":0,\"more\":false}]}]}]}";
  memset(a, 0, sizeof(a));
  snprintf(a[0].name, sizeof(a[0].name), "edge-2");
  is_int(ctl_live_page(no_id, strlen(no_id), a, 1, &more, &off), -1,
         "a table without an agent column is refused");
  ok(!a[0].online, "... marking nothing");
  is_int(ctl_live_page("{\"error\":{}}", 12, a, 1, &more, &off), -1,
         "an error body is refused");

  static const char mixed[] =
      "{\"instances\":[{\"instance\":\"tunnel_server\",\"panels\":[{\"name\":"
      "\"agents\",\"tables\":[{\"name\":\"agents\",\"columns\":[\"agent\","
      "\"connections\",\"node\",\"online\",\"last_seen_at\"],\"rows\":["
      "[\"edge-1\",0,\"node-a\",\"no\",\"2026-12-07T08:00:00Z\"],"
      "[\"edge-1\",1,\"node-b\",\"yes\",\"\"],"
      "[\"edge-2\",0,\"node-a\",\"no\",\"2026-12-07T07:59:\\u001b9Z\"],"
      "[\"edge-3\",1,\"node-a\",\"maybe\",\"2026-12-07T07:00:00Z\"]],"
      "\"offset\":0,\"more\":false}]}]}]}";
  memset(a, 0, sizeof(a));
  snprintf(a[0].name, sizeof(a[0].name), "edge-1");
  snprintf(a[1].name, sizeof(a[1].name), "edge-2");
  snprintf(a[2].name, sizeof(a[2].name), "edge-3");
  is_int(ctl_live_page(mixed, strlen(mixed), a, 3, &more, &off), 4,
         "remote and offline rows: the rows on the page");
  ok(a[0].online, "an agent that left this node but is online on another "
                  "is online");
  is_str(a[0].node, "node-b", "... with the node holding it");
  ok(!a[1].online, "an agent whose only row says online no is offline");
  is_str(a[1].last_seen, "2026-12-07T07:59:?9Z",
         "... with its last_seen_at (no control byte)");
  ok(!a[2].online && !a[2].last_seen[0] && !a[2].node[0],
     "online neither yes nor no: nothing said of the agent");
}

/* agent list finds the tunnel servers in the host's modules table: one
 * may be a named instance (conf/demo.ini's tunnel_server.hub). */
static void test_servers(void) {
  static const char mods[] =
      "{\"status_version\":1,\"instances\":[{\"instance\":\"proxyhost\","
      "\"module\":\"proxyhost\",\"panels\":[{\"name\":\"process\","
      "\"fields\":{},\"tables\":[{\"name\":\"modules\",\"columns\":"
      "[\"instance\",\"module\",\"version\"],\"rows\":["
      "[\"store_sqlite\",\"store_sqlite\",\"1.0\"],"
      "[\"tunnel_server.hub\",\"tunnel_server\",\"1.0\"],"
      "[\"tunnel_agent.edge\",\"tunnel_agent\",\"1.0\"],"
      "[\"Bad<b>\",\"tunnel_server\",\"1.0\"],"
      "[\"tunnel_server\",\"tunnel_server\",\"1.0\"],"
      "[\"third\",\"tunnel_server\",\"1.0\"]],"
      "\"offset\":0,\"more\":false}]}]}]}";
  char names[2][CTL_LIVE_INSTANCE_MAX + 1];
  is_int(ctl_live_servers(mods, strlen(mods), names, 2), 2,
         "servers: the tunnel_server instances, at most max");
  is_str(names[0], "tunnel_server.hub", "... a named instance");
  is_str(names[1], "tunnel_server",
         "... the unnamed one; a name outside [a-z0-9_.] skipped");
  is_int(ctl_live_servers("{\"error\":{}}", 12, names, 2), -1,
         "servers: an error body is refused");
  static const char none[] =
      "{\"instances\":[{\"instance\":\"proxyhost\",\"panels\":[{"
      "\"name\":\"process\",\"tables\":[{\"name\":\"modules\","
      "\"columns\":[\"instance\",\"module\"],\"rows\":[[\"socks5\","
      "\"socks5\"]]}]}]}]}";
  is_int(ctl_live_servers(none, strlen(none), names, 2), 0,
         "servers: none in the table: 0");
}

int main(void) {
  plan_lazy();
  test_summary();
  test_width_and_control();
  test_fit();
  test_refused();
  test_live();
  test_servers();
  return done_testing();
}
