/* SPDX-License-Identifier: BSD-2-Clause */
/* tunnel_server's bounds held in C (modules/tunnel_server/ts_conf_held.c):
 * its key table comes from tunnel_server.ini.sample, so a sample that
 * allows more than the code holds (a string longer than its fixed array, a
 * count past 32 bits, a frame above MaxPayload, a zero window, more agent
 * connections than the selection's arrays) must still fail the check.
 * The values come from a stand-in for the host's conf_int/conf_str, as a
 * wrong sample would let them through; the refusal is ph_conf_limits'. */
#include <stdint.h>
#include <string.h>

#include "tunnel_server/ts_int.h"
#include "tap.h"

static const char *str_key, *str_val;
static const char *int_key;
static int64_t int_val;

static const char *fake_str(ph_ctx *ctx, const char *key) {
  (void)ctx;
  return str_key && strcmp(key, str_key) == 0 ? str_val : "";
}

static int64_t fake_int(ph_ctx *ctx, const char *key) {
  (void)ctx;
  if (int_key && strcmp(key, int_key) == 0)
    return int_val;
  /* in bounds for every key: 1, and the control queue's smallest */
  return strcmp(key, "stream.control_queue_bytes") == 0 ? 262144 : 1;
}

static ph_api api = {.conf_str = fake_str, .conf_int = fake_int};
static char why[200];
static const char *key;

static int held(void) {
  key = NULL;
  why[0] = '\0';
  return ts_conf_held(NULL, &api, &key, why, sizeof(why));
}

static char big[2048];

/* A string of n bytes for k: refused with k named past max. */
static void string_bound(const char *k, size_t max) {
  memset(big, 'a', sizeof(big) - 1);
  str_key = k;
  big[max] = '\0';
  str_val = big;
  char name[160];
  snprintf(name, sizeof(name), "%s: %zu bytes (its array) pass", k, max);
  is_int(held(), PH_OK, name);
  memset(big, 'a', sizeof(big) - 1);
  big[max + 1] = '\0';
  snprintf(name, sizeof(name), "%s: %zu bytes are refused, the key named", k,
           max + 1);
  is_int(held(), PH_EINVAL, name);
  is_str(key, k, name);
  str_key = NULL;
}

/* An integer for k: hi passes, hi + 1 and lo - 1 are refused. */
static void int_bound(const char *k, int64_t lo, int64_t hi, const char *req) {
  char name[200];
  int_key = k;
  int_val = hi;
  snprintf(name, sizeof(name), "%s%s = %lld passes", req, k, (long long)hi);
  is_int(held(), PH_OK, name);
  int_val = hi + 1;
  snprintf(name, sizeof(name), "%s%s = %lld is refused", req, k,
           (long long)(hi + 1));
  is_int(held(), PH_EINVAL, name);
  is_str(key, k, name);
  int_val = lo - 1;
  snprintf(name, sizeof(name), "%s%s = %lld is refused", req, k,
           (long long)(lo - 1));
  is_int(held(), PH_EINVAL, name);
  is_str(key, k, name);
  int_key = NULL;
}

int main(void) {
  plan_lazy();
  is_int(held(), PH_OK, "values within every bound pass");

  /* Strings copied into ts_conf's fixed arrays. */
  /* What fits its array with the NUL passes; one byte more, which
   * ts_conf_read's copy would cut, is refused. */
#define FITS(f) (sizeof(((ts_conf *)0)->f) - 1)
  static const struct {
    const char *key;
    size_t fits;
  } strings[] = {{"listen", FITS(listen)},
                 {"path", FITS(path)},
                 {"tls.cert", FITS(cert)},
                 {"tls.key", FITS(key)},
                 {"node_id", FITS(node_id)},
                 {"presence.zone", FITS(presence_zone)},
                 {"presence.relay_addr", FITS(presence_relay)},
                 {"relay.listen", FITS(relay_listen)},
                 {"relay.tls.cert", FITS(relay_cert)},
                 {"relay.tls.key", FITS(relay_key)},
                 {"relay.tls.ca", FITS(relay_ca)},
                 {"relay.trust_domain", FITS(relay_td)}};
  for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++)
    string_bound(strings[i].key, strings[i].fits);
  is_int((int)FITS(node_id), TS_NODE_ID_MAX,
         "node_id's array holds TS_NODE_ID_MAX, the sample's maximum");
  str_key = "node_id";
  memset(big, 'a', sizeof(big) - 1);
  big[TS_NODE_ID_MAX + 1] = '\0';
  str_val = big;
  held();
  like(why, "outside 0..64 bytes, the bounds this module's code holds",
       "the refusal says the length held, never the string");
  ok(strstr(why, "aaaa") == NULL, "... without the string's bytes");
  str_key = NULL;

  /* TM-CFG-25: no frame above MaxPayload, no zero window, nothing that
   * overflows the 32-bit fields the values are read into. */
  enum { WIN = 16 * 1024 * 1024 };
  static const struct {
    const char *key;
    int64_t lo, hi;
  } proto[] = {{"stream.max_frame_payload", 1, 65536},
               {"stream.initial_window", 1, WIN},
               {"stream.window_update_threshold", 1, WIN},
               {"stream.inbound_buffer_bytes", 1, WIN},
               {"stream.outbound_buffer_bytes", 1, WIN},
               {"stream.quantum", 1, WIN},
               {"stream.control_queue_bytes", 10 + 4096, UINT32_MAX},
               {"stream.max_per_connection", 1, 1 << 20}};
  for (size_t i = 0; i < sizeof(proto) / sizeof(proto[0]); i++)
    int_bound(proto[i].key, proto[i].lo, proto[i].hi, "TM-CFG-25: ");
  int_bound("agent.max_connections", 1, TS_AGENT_CONNS_MAX, "");
  static const char *const u32[] = {
      "max_connections",
      "presence.lease",
      "relay.links_per_peer",
      "stream.max_concurrent_opens",
      "stream.max_pending_opens",
      "stream.max_opens_per_session",
      "stream.max_opens_per_principal",
      "stream.max_pending_per_principal",
      "stream.max_pending_per_session",
      "stream.max_per_token",
      "stream.max_per_agent",
      "stream.open_timeout",
      "stream.control_queue_frames",
      "stream.violation_limit",
      "stream.violation_window",
      "ping_timeout",
      "client.max_connections_per_token",
      "client.max_connections_per_user",
      "credential_check_interval"};
  for (size_t i = 0; i < sizeof(u32) / sizeof(u32[0]); i++)
    int_bound(u32[i], 1, UINT32_MAX, "TM-CFG-25 (32 bits): ");
  int_bound("ping_interval", 0, UINT32_MAX, "TM-CFG-25 (32 bits): ");
  int_bound("drain_timeout", 0, UINT32_MAX, "TM-CFG-25 (32 bits): ");
  int_key = "stream.memory_per_session";
  int_val = 0;
  is_int(held(), PH_EINVAL, "stream.memory_per_session = 0 is refused");
  int_key = "stream.idle_timeout";
  is_int(held(), PH_EINVAL, "stream.idle_timeout = 0 is refused");
  int_key = "stream.memory_per_principal";
  is_int(held(), PH_EINVAL, "stream.memory_per_principal = 0 is refused");
  int_key = "max_connections";
  int_val = (int64_t)UINT32_MAX + 1;
  held();
  like(why, "outside 1..4294967295, the bounds this module's code holds",
       "the refusal says the bounds held");
  int_key = NULL;
  return done_testing();
}
