/* SPDX-License-Identifier: BSD-2-Clause */
/* The frontends' key tables come from their .ini.sample files
 * (tools/gen_conf_keys.awk), so a sample could declare wider bounds than
 * the code holds. Here each frontend (socks5, http_proxy, the built
 * .so) runs through the mock host with a copy of its table whose bounds
 * are gone, as a wrong sample would make it: its check must still refuse
 * what the code cannot hold (frontend_check: backlog, max_clients,
 * buffer_size; http_proxy's hp_check: max_request_line,
 * max_header_bytes, max_headers; both through ph_conf_limits), naming
 * the key and the bounds, and accept the value at the bound. Requirements: TM-SEC-1 (bounded heads and buffers). */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <proxyhost/mock.h>
#include <proxyhost/module.h>

#include "conf_wide_test.h"
#include "mock_test.h"
#include "tap.h"

#define KEYS_MAX 64

static ph_conf_key wide[KEYS_MAX];
static ph_module mod;

/* mod: the module NAME's descriptor from its .so with every bound of its
 * table dropped (conf_wide). 0, or -1. */
static int load_wide(const char *name) {
  char path[512];
  snprintf(path, sizeof(path), "%s/%s/.libs/%s.so", PH_BUILD_MODULES, name,
           name);
  void *so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!so) {
    diag("dlopen %s: %s", path, dlerror());
    return -1;
  }
  const ph_module *m = dlsym(so, "proxyhost_module");
  if (!m)
    return -1;
  mod = *m;
  conf_wide(m->config, wide, KEYS_MAX);
  mod.config = wide;
  return 0;
}

/* What ph_mock_init says of [NAME] KEY = VALUE with the widened table
 * (its other reasons, such as no connector loaded, included). */
static const char *init_err(const char *name, const char *key,
                            const char *value) {
  static char err[4096];
  char ini[512];
  snprintf(ini, sizeof(ini), "[admin]\nlisten =\n[%s]\n%s = %s\n", name, key,
           value);
  mock_test_inits(ini, &mod, err, sizeof(err));
  return err;
}

static void held(const char *name, const char *key, const char *at,
                 const char *past, const char *below, const char *range) {
  char want[256], what[256];
  snprintf(want, sizeof(want), "%s.%s: outside %s, the bounds this "
           "module's code holds", name, key, range);
  snprintf(what, sizeof(what), "%s.%s = %s past a widened sample: refused",
           name, key, past);
  like(init_err(name, key, past), want, what);
  snprintf(want, sizeof(want), "%s.%s: outside %s", name, key, range);
  snprintf(what, sizeof(what), "%s.%s = %s below a widened sample: refused",
           name, key, below);
  like(init_err(name, key, below), want, what);
  snprintf(want, sizeof(want), "%s.%s:", name, key);
  snprintf(what, sizeof(what), "%s.%s = %s (the bound) passes the check",
           name, key, at);
  unlike(init_err(name, key, at), want, what);
}

static void shared_keys(const char *name) {
  held(name, "backlog", "65535", "65536", "0", "1..65535");
  held(name, "max_clients", "1000000", "2147483648", "0", "1..1000000");
  held(name, "buffer_size", "1048576", "1048577", "4095", "4096..1048576");
}

int main(void) {
  plan_lazy();
  if (load_wide("socks5") == 0) {
    ok(1, "socks5: loaded with its bounds dropped");
    shared_keys("socks5");
  } else
    tap_skip("socks5", "not built");
  if (load_wide("http_proxy") == 0) {
    ok(1, "http_proxy: loaded with its bounds dropped");
    shared_keys("http_proxy");
    held("http_proxy", "max_request_line", "16384", "16385", "255",
         "256..16384");
    held("http_proxy", "max_header_bytes", "65536", "65537", "1023",
         "1024..65536");
    held("http_proxy", "max_headers", "1000", "1001", "0", "1..1000");
  } else
    tap_skip("http_proxy", "not built");
  return done_testing();
}
