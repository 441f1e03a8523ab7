/* SPDX-License-Identifier: BSD-2-Clause */
/* Fuzz target: the checker's reading of a CheckTask from the controller
 * (modules/checker/chk_wire.c, chk_read_task; issue 26). The input is the
 * message's bytes. It checks that an accepted task is within its bounds
 * (a known tier and protocol, a port, NUL-terminated fields, credentials
 * of their stated lengths) and that a refused one holds no credentials;
 * then the task's addresses as the probe reads them (chk_url.c: the echo
 * URL, the target as a URL or host:port, and the raw input as both): a
 * parsed one has a host of 1..255 bytes, a port, a path starting '/'. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <proxyhost/pool_store.h>

#include "checker/chk_probe.h"
#include "checker/chk_url.h"
#include "checker/chk_wire.h"

#define CHECK(c)                                                               \
  do {                                                                         \
    if (!(c)) {                                                                \
      fprintf(stderr, "fuzz_chk_task: %s\n", #c);                              \
      abort();                                                                 \
    }                                                                          \
  } while (0)

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static void url_ok(const char *s) {
  chk_url u;
  if (chk_url_parse(s, &u) == 0)
    CHECK(u.host[0] && strlen(u.host) <= CHK_HOST_MAX && u.port > 0 &&
          u.path[0] == '/' && strlen(u.path) <= CHK_PATH_MAX);
  if (chk_hostport_parse(s, &u) == 0)
    CHECK(u.host[0] && strlen(u.host) <= CHK_HOST_MAX && u.port > 0);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  char raw[2048];
  size_t n = size < sizeof(raw) - 1 ? size : sizeof(raw) - 1;
  memcpy(raw, data, n);
  raw[n] = 0;
  url_ok(raw);
  chk_task t;
  const char *why = NULL;
  int rc = chk_read_task(data, size, &t, &why);
  if (rc == 0) {
    CHECK(t.tier >= CHK_TIER_BASIC && t.tier <= CHK_TIER_TARGET);
    CHECK(t.protocol >= PH_POOL_UPSTREAM_HTTP_CONNECT &&
          t.protocol <= PH_POOL_UPSTREAM_HTTP);
    CHECK(t.port > 0 && t.task_id[0] && t.proxy_id[0] && t.host[0]);
    CHECK(strlen(t.target) < sizeof(t.target) &&
          strlen(t.echo_url) < sizeof(t.echo_url));
    CHECK(!t.user || (strlen(t.user) == t.user_len && t.user_len <= 255));
    url_ok(t.echo_url);
    url_ok(t.target);
  } else {
    CHECK(why != NULL || rc != -22);
    CHECK(!t.user && !t.pass);
  }
  chk_task_wipe(&t);
  return 0;
}
