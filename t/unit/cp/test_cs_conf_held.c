/* SPDX-License-Identifier: BSD-2-Clause */
/* controlplane_server's key table comes from its sample
 * (tools/gen_conf_keys.awk); where the code relies on a bound the sample
 * states, cs_conf_read holds it again. Here a wrong sample is stood in
 * for by the generated table with one key's bounds widened: the host then
 * lets the value through, and cs_conf_read (the module's check) must
 * refuse it, naming the key. */
#include <stdint.h>
#include <string.h>

#include "controlplane_server/cs_conf.h"
#include "cp_common/grpc/cp_grpc_conf.h"
#include "mock_test.h"
#include "tap.h"

/* The transport check is cp_grpc's (its own tests): here it passes. */
int cp_grpc_conf_check_server(ph_ctx *ctx, const ph_api *a,
                              const char *addr_key, const char **key,
                              char *why, size_t whylen) {
  (void)ctx, (void)a, (void)addr_key, (void)key, (void)why, (void)whylen;
  return PH_OK;
}

#define NKEYS 128
static ph_conf_key wide[NKEYS];

static int held_check(ph_ctx *ctx, const ph_api *a, const char **key,
                      char *why, size_t whylen) {
  cs_conf c;
  return cs_conf_read(ctx, a, &c, key, why, whylen);
}
MOCK_TEST_MODULE(held_mod, "controlplane_server", "1.0.0", .config = wide,
                 .init = mock_test_init_none, .check = held_check);

/* The generated table with key's bounds made lo..hi; then the module
 * checked under "key = value": the mock's err. */
static void check_with(const char *key, int64_t lo, int64_t hi,
                       const char *value, char *err, size_t errlen) {
  size_t n = 0;
  memset(wide, 0, sizeof(wide));
  for (; cs_conf_keys[n].name && n < NKEYS - 1; n++) {
    wide[n] = cs_conf_keys[n];
    if (strcmp(wide[n].name, key) == 0) {
      wide[n].min = lo;
      wide[n].max = hi;
    }
  }
  char ini[8192];
  snprintf(ini, sizeof(ini), "[controlplane_server]\n%s = %s\n", key, value);
  mock_test_inits(ini, &held_mod, err, errlen);
}

static void refused(const char *key, int64_t lo, int64_t hi,
                    const char *value, const char *what) {
  char err[1024], want[256], name[256];
  check_with(key, lo, hi, value, err, sizeof(err));
  snprintf(want, sizeof(want), "controlplane_server.%s", key);
  snprintf(name, sizeof(name),
           "%s: %s = %.24s past the sample's bound is refused by the module",
           what, key, value);
  ok(strstr(err, want) != NULL, name);
  if (!strstr(err, want))
    printf("# err: %s\n", err);
}

int main(void) {
  plan_lazy();
  char err[1024];
  check_with("health_forward_max", 1, 4096, "4096", err, sizeof(err));
  is_str(err, "", "the sample's bounds as they are: the maximum passes");
  refused("health_forward_max", 0, 1000000, "4097",
          "one push's buffer and CP_AUTH_PASSIVE_PUSH_MAX");
  refused("health_forward_max", 0, 1000000, "0", "a push of no proxy");
  check_with("health_forward_max", 0, 1000000, "4097", err, sizeof(err));
  like(err, "health_forward_max: outside 1..4096, the bounds this module's "
       "code holds", "the refusal names the bounds held (ph_conf_limits)");
  refused("health_rise", 0, 1000000, "101", "CS_HYST_MAX");
  refused("health_fall", 0, 1000000, "0", "a fall of 0");
  refused("health_weight_dial", 0, 1000000, "101", "a percent");
  refused("health_panic_threshold", 0, 1000000, "0", "a percent");
  refused("max_runtime_counters", 0, INT64_MAX, "5000000000", "a uint32_t");
  refused("max_tasks", 0, INT64_MAX, "4294967297", "a uint32_t");
  refused("max_checkers", 0, 1000000, "0", "no checker at all");
  refused("max_checker_concurrency", 0, 1000000, "65537", "the register bound");
  refused("check_spread", 0, 1000, "51", "the jitter's share");
  refused("grpc.max_calls", 0, 1000000, "0", "0 is no limit to gRPC");
  refused("grpc.max_unauthenticated_connections", 0, 1000000, "0",
          "0 is no front");
  refused("grpc.max_receive_message_size", 0, INT64_MAX, "1GiB",
          "gRPC's int limits");
  refused("grpc.max_concurrent_streams", 0, 1000000, "0",
          "0 is no limit to gRPC");
  refused("grpc.keepalive_timeout", 0, INT64_MAX, "700s",
          "the transport's rows both sides hold (cp_grpc_held)");
  char path[CP_GRPC_PATH_LEN + 2];
  memset(path, 'a', sizeof(path) - 1);
  path[0] = '/';
  path[sizeof(path) - 1] = 0;
  refused("tls.cert_file", 0, 100000, path,
          "the kept paths' CP_GRPC_PATH_LEN arrays");
  check_with("tls.cert_file", 0, 100000, path, err, sizeof(err));
  ok(strstr(err, " bytes, the bounds this module's code holds") &&
         !strstr(err, "/aaaaaaaa"),
     "... its length held in bytes, never the path");
  return done_testing();
}
