/* SPDX-License-Identifier: BSD-2-Clause */
/* tm_conf_check holds the session's limits itself (TM-CFG-25: no window
 * above the protocol's, no frame above MaxPayload, no count past 32
 * bits), whatever bounds a role's key table declares: the tables come
 * from the samples now (tools/gen_conf_keys.awk), so a sample that allows
 * more must still fail the start, closed. Here a module whose table lets
 * every session key run far past those limits, through the mock host. */
#include <stdio.h>
#include <string.h>

#include <proxyhost/mock.h>
#include <proxyhost/module.h>

#include "conf_wide_test.h"
#include "tap.h"
#include "tunnel_common/session/tm_conf.h"

#define G (1024LL * 1024 * 1024)
#define DAY 86400000LL
#define W(n, t, d) PH_CONF_KEY(n, t, d, 0, 64 * G, 0, NULL, n, NULL)

/* The session's keys with bounds far wider than the session takes. */
static const ph_conf_key wide_keys[] = {
    W("stream.inbound_buffer_bytes", PH_CONF_SIZE, "262144"),
    W("stream.outbound_buffer_bytes", PH_CONF_SIZE, "262144"),
    W("stream.initial_window", PH_CONF_SIZE, "262144"),
    W("stream.window_update_threshold", PH_CONF_SIZE, "131072"),
    W("stream.max_frame_payload", PH_CONF_SIZE, "32768"),
    W("stream.quantum", PH_CONF_SIZE, "32768"),
    W("stream.control_queue_frames", PH_CONF_INT, "1024"),
    W("stream.control_queue_bytes", PH_CONF_SIZE, "262144"),
    W("stream.violation_limit", PH_CONF_INT, "16"),
    PH_CONF_KEY("stream.violation_window", PH_CONF_DURATION, "60s", 0,
                1000 * DAY, 0, NULL, "w", NULL),
    PH_CONF_KEY("ping_interval", PH_CONF_DURATION, "15s", 0, 1000 * DAY, 0,
                NULL, "p", NULL),
    PH_CONF_KEY("ping_timeout", PH_CONF_DURATION, "30s", 0, 1000 * DAY, 0, NULL,
                "t", NULL),
    PH_CONF_KEY("capabilities.open_result", PH_CONF_BOOL, "true", 0, 0, 0, NULL,
                "o", NULL),
    PH_CONF_KEY("capabilities.flow_control", PH_CONF_BOOL, "true", 0, 0, 0,
                NULL, "f", NULL),
    PH_CONF_KEY("capabilities.fair_writer", PH_CONF_BOOL, "true", 0, 0, 0, NULL,
                "w", NULL),
    PH_CONF_END};

static int wide_check(ph_ctx *ctx, const ph_api *a, const char **key, char *why,
                      size_t whylen) {
  return tm_conf_check(ctx, a, "stream.", wide_keys, key, why, whylen);
}

MOCK_TEST_MODULE(wide_mod, "wide", "1.0", .config = wide_keys,
                 .check = wide_check, .init = mock_test_init_none);

/* The mock host's configuration: [wide] BODY. */
static const char *ini(const char *body) {
  static char text[1024];
  snprintf(text, sizeof(text), "[log]\nlevel = error\n[wide]\n%s", body);
  return text;
}

/* body is refused, naming key and the limit text. */
static void refused(const char *body, const char *key, const char *limit,
                    const char *what) {
  conf_wide_refuses(&wide_mod, ini(body), key, limit, what);
}

int main(void) {
  plan_lazy();
  char err[1024];
  ok(mock_test_inits(ini(""), &wide_mod, err, sizeof(err)), "the defaults pass");
  if (err[0])
    printf("# %s\n", err);
  ok(mock_test_inits(
         ini("stream.max_frame_payload = 65536\nstream.initial_window = 16MiB\n"
             "stream.inbound_buffer_bytes = 16MiB\n"
             "stream.outbound_buffer_bytes = 16MiB\n"
             "stream.window_update_threshold = 16MiB\nstream.quantum = 16MiB\n"
             "stream.control_queue_bytes = 4106\n"),
         &wide_mod, err, sizeof(err)),
     "every limit itself passes (64KiB frame, 16MiB windows, 4106 control "
     "bytes)");
  if (err[0])
    printf("# %s\n", err);
  refused("stream.max_frame_payload = 65537\nstream.quantum = 1MiB\n",
          "wide.stream.max_frame_payload", "1 to 65536",
          "a frame above the protocol's MaxPayload is refused at start");
  refused("stream.initial_window = 16777217\n", "wide.stream.initial_window",
          "1 to 16777216", "a window above TM_WINDOW_MAX is refused");
  refused("stream.inbound_buffer_bytes = 16777217\n",
          "wide.stream.inbound_buffer_bytes", "1 to 16777216",
          "an inbound queue above TM_WINDOW_MAX is refused");
  refused("stream.outbound_buffer_bytes = 16777217\n",
          "wide.stream.outbound_buffer_bytes", "1 to 16777216",
          "an outbound queue above TM_WINDOW_MAX is refused");
  refused("stream.quantum = 16777217\n", "wide.stream.quantum", "1 to 16777216",
          "a quantum above TM_WINDOW_MAX is refused");
  refused("stream.initial_window = 0\n", "wide.stream.initial_window",
          "1 to 16777216", "a zero window is refused");
  refused("stream.control_queue_bytes = 4105\n",
          "wide.stream.control_queue_bytes", "4106 to 4294967295",
          "a control queue that cannot hold the metadata is refused");
  refused("stream.control_queue_frames = 4294967296\n",
          "wide.stream.control_queue_frames", "1 to 4294967295",
          "a frame count past 32 bits is refused (never wrapped)");
  refused("stream.violation_limit = 4294967296\n",
          "wide.stream.violation_limit", "1 to 4294967295",
          "a violation limit past 32 bits is refused");
  refused("stream.violation_window = 4294967296ms\n",
          "wide.stream.violation_window", "1 to 4294967295",
          "a violation window past 32 bits of ms is refused");
  refused("ping_interval = 4294967296ms\nping_timeout = 1s\n",
          "wide.ping_interval", "0 to 4294967295",
          "a ping interval past 32 bits of ms is refused");
  refused("ping_timeout = 0\n", "wide.ping_timeout", "1 to 4294967295",
          "a zero ping timeout is refused");
  return done_testing();
}
