/* SPDX-License-Identifier: BSD-2-Clause */
/* tunnel_client's check holds the bounds its code relies on itself
 * (TM-CFG-25), whatever its key table declares: the table is generated
 * from the sample, so a sample that allows more must fail the start,
 * closed. Here tunnel_client.c under its generated table (tc_keys, from
 * tunnel_client.ini.sample) with every bound dropped (conf_wide_test.h),
 * through the mock host: connections indexes conns[TC_MAX_CONNECTIONS],
 * the stream count and the durations are read as u32, tls.ca_file is
 * copied into a fixed array. */
#include <stdio.h>
#include <string.h>

#include <proxyhost/mock.h>
#include <proxyhost/module.h>

#include "conf_wide_test.h"
#include "tap.h"
#include "tunnel_client/tunnel_client_int.h"

extern const ph_module proxyhost_module; /* tunnel_client.c */
extern const ph_conf_key tc_keys[];      /* tunnel_client_keys.c */

#define KEYS_MAX 128
static ph_conf_key wide[KEYS_MAX];
static ph_module wide_mod; /* proxyhost_module with .config = wide */

/* No link is ever made: init (after a passing check) stops at env_new. */
static void *no_env(const ph_api *api, ph_ctx *ctx, const tc_link_cfg *cfg,
                    const char **err) {
  (void)api;
  (void)ctx;
  (void)cfg;
  *err = "no links in this test";
  return NULL;
}
static const tc_link_ops no_ops = {.env_new = no_env};
const tc_link_ops *tc_link_active(void) { return &no_ops; }

/* The mock host's configuration: [tunnel_client] with BODY added. */
static const char *ini(const char *body) {
  static char text[4096];
  snprintf(text, sizeof(text),
           "[log]\nlevel = error\n[tunnel_client]\n"
           "server_url = ws://127.0.0.1:9/t\nagent = a\ntoken = t\n%s",
           body);
  return text;
}

static void refused(const char *body, const char *key, const char *why,
                    const char *what) {
  conf_wide_refuses(&wide_mod, ini(body), key, why, what);
}

static void passes(const char *body, const char *what) {
  char err[1024];
  mock_test_inits(ini(body), &wide_mod, err, sizeof(err));
  int hit = strstr(err, "init failed") != NULL; /* after the check */
  ok(hit, what);
  if (!hit)
    printf("# %s\n", err);
}

int main(void) {
  plan_lazy();
  conf_wide(tc_keys, wide, KEYS_MAX);
  wide_mod = proxyhost_module;
  wide_mod.config = wide;
  passes("", "the defaults pass the check (init goes on to the links)");
  passes("connections = 8\nstream.max_streams = 1048576\n",
         "8 connections and 2^20 streams pass");
  refused("connections = 9\n", "tunnel_client.connections", "outside 1..8",
          "a 9th connection (past conns[TC_MAX_CONNECTIONS]) is refused");
  refused("connections = 0\n", "tunnel_client.connections", "outside 1..8",
          "no connection is refused");
  refused("stream.max_streams = 1048577\n", "tunnel_client.stream.max_streams",
          "outside 1..1048576", "more streams than the session's id table refused");
  refused("stream.max_streams = 4294967297\n",
          "tunnel_client.stream.max_streams", "outside 1..1048576",
          "a stream count that would wrap to 1 as a u32 is refused");
  refused("reconnect.max = 4294967296ms\n", "tunnel_client.reconnect.max",
          "outside 0..4294967295", "a delay past 32 bits of ms is refused");
  refused("stream.open_timeout = 4294967296ms\n",
          "tunnel_client.stream.open_timeout", "outside 0..4294967295",
          "an open timeout past 32 bits of ms is refused");
  char body[1200] = "tls.ca_file = /";
  memset(body + 15, 'a', 1024);
  strcpy(body + 15 + 1024, "\n");
  refused(body, "tunnel_client.tls.ca_file", "outside 0..1024 bytes",
          "a CA path longer than ca_file[1025] is refused, never cut");
  body[15 + 1023] = '\n';
  body[15 + 1024] = 0;
  passes(body, "a CA path of 1024 bytes passes");
  return done_testing();
}
