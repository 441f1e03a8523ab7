/* SPDX-License-Identifier: BSD-2-Clause */
/* tunnel_agent's check holds the bounds its code relies on itself
 * (TM-CFG-25), whatever its key table declares: the table is generated
 * from the sample, so a sample that allows more must fail the start,
 * closed, never cut a value. Here agent_cfg_check under its generated
 * table (agent_conf_keys, from tunnel_agent.ini.sample) with every bound
 * dropped (conf_wide_test.h), through the mock host: the strings
 * agent_cfg_read copies into fixed arrays, and the URLs' count
 * (urls[AGENT_URLS_MAX]). */
#include <stdio.h>
#include <string.h>

#include <proxyhost/mock.h>
#include <proxyhost/module.h>

#include "conf_wide_test.h"
#include "tap.h"
#include "tunnel_agent/agent_conf.h"

#define KEYS_MAX 128
static ph_conf_key wide[KEYS_MAX];

MOCK_TEST_MODULE(agent_mod, "tunnel_agent", "1.0", .config = wide,
                 .check = agent_cfg_check, .init = mock_test_init_none);

/* The mock host's configuration: [tunnel_agent] with BODY added, and no
 * connector named unless BODY names one: the check would look for the
 * sample's "direct" among the loaded modules (an empty name, below the
 * sample's bound, passes the widened table). */
static const char *ini(const char *body) {
  static char text[16384];
  snprintf(text, sizeof(text), "[log]\nlevel = error\n[tunnel_agent]\n%s%s%s",
           strstr(body, "token_file") ? "" : "token = t\n",
           strstr(body, "connector") ? "" : "connector =\n", body);
  return text;
}
/* Whether the mock host inits with it; err gets its reasons. */
static int boots(const char *body, char *err, size_t errlen) {
  return mock_test_inits(ini(body), &agent_mod, err, errlen);
}

/* "KEY = VALUE" with VALUE n bytes long (a path, or a URL for
 * server_url), and server_url set when key is another. */
static const char *long_value(const char *key, size_t n) {
  static char body[8192];
  const char *pre = strcmp(key, "server_url") ? "/" : "ws://127.0.0.1/";
  size_t pl = strlen(pre);
  int at = snprintf(body, sizeof(body), "%s = %s", key, pre);
  memset(body + at, 'a', n - pl);
  body[(size_t)at + n - pl] = 0;
  if (strcmp(key, "server_url"))
    strcat(body, "\nserver_url = ws://127.0.0.1:9/t");
  strcat(body, "\n");
  return body;
}

/* KEY at max bytes passes (unless pass is 0: a connector must also be
 * loaded), one byte more is refused with the key and the limit. */
static void check(const char *key, size_t max, int pass, const char *what) {
  char err[1024], want[64];
  if (pass) {
    ok(boots(long_value(key, max), err, sizeof(err)), what);
    if (err[0])
      printf("# %s\n", err);
  }
  snprintf(want, sizeof(want), "outside 0..%zu bytes", max);
  conf_wide_refuses(&agent_mod, ini(long_value(key, max + 1)), key, want,
                    pass ? "and one byte more is refused, never cut" : what);
}

int main(void) {
  plan_lazy();
  conf_wide(agent_conf_keys, wide, KEYS_MAX);
  char err[1024];
  check("server_url", AGENT_URL_MAX, 1, "a 2048-byte server_url passes");
  check("token_file", AGENT_PATH_MAX, 1, "a 4096-byte token_file passes");
  check("tls.ca_file", AGENT_PATH_MAX, 1, "a 4096-byte tls.ca_file passes");
  check("agent_id", TM_AGENT_MAX, 1, "a 64-byte agent_id passes");
  check("connector", 128, 0, "a 129-byte connector is refused, never cut");
  const char *seven = "server_url = ws://h0/t\nextra_server_urls = ws://h1/t, "
                      "ws://h2/t, ws://h3/t, ws://h4/t, ws://h5/t, ws://h6/t, "
                      "ws://h7/t\n";
  ok(boots(seven, err, sizeof(err)), "7 extra URLs (8 in all) pass");
  char eight[512];
  snprintf(eight, sizeof(eight), "%.*s, ws://h8/t\n", (int)strlen(seven) - 1,
           seven);
  conf_wide_refuses(&agent_mod, ini(eight), "tunnel_agent.extra_server_urls",
                    "at most 7 URLs",
                    "an 8th extra URL (past urls[AGENT_URLS_MAX]) is refused, "
                    "never dropped");
  return done_testing();
}
