/* SPDX-License-Identifier: BSD-2-Clause */
/* The mapping of open results to SOCKS5 replies (the 001 seed's table)
 * and HTTP statuses, and the stable enum names. */
#include <string.h>

#include "frontend/open_map.h"
#include "tap.h"

static void test_socks5(void) {
  /* covers TM-PROTO-30 .. TM-PROTO-36 (the SOCKS5 mapping table) */
  is_int(open_map_socks5(PH_OPEN_OK), 0x00, "ok -> succeeded");
  is_int(open_map_socks5(PH_OPEN_FORBIDDEN), 0x02,
         "forbidden -> connection not allowed");
  is_int(open_map_socks5(PH_OPEN_NETWORK_UNREACHABLE), 0x03,
         "network_unreachable -> network unreachable");
  is_int(open_map_socks5(PH_OPEN_HOST_UNREACHABLE), 0x04,
         "host_unreachable -> host unreachable");
  is_int(open_map_socks5(PH_OPEN_AGENT_OFFLINE), 0x04,
         "agent_offline -> host unreachable");
  is_int(open_map_socks5(PH_OPEN_CONNECTION_REFUSED), 0x05,
         "connection_refused -> connection refused");
  is_int(open_map_socks5(PH_OPEN_TIMEOUT), 0x06, "timeout -> TTL expired");
  is_int(open_map_socks5(PH_OPEN_QUEUE_FULL), 0x01,
         "queue_full -> general failure");
  is_int(open_map_socks5(PH_OPEN_UNSUPPORTED_CAPABILITY), 0x01,
         "unsupported_capability -> general failure");
  is_int(open_map_socks5(PH_OPEN_INTERNAL_ERROR), 0x01,
         "internal_error -> general failure");
  /* covers TM-PROTO-29: unknown codes are a general failure */
  is_int(open_map_socks5(999), 0x01, "unknown code -> general failure");
  is_int(open_map_socks5(-1), 0x01, "negative code -> general failure");
}

static void test_http(void) {
  is_int(open_map_http_status(PH_OPEN_OK), 200, "ok -> 200");
  is_int(open_map_http_status(PH_OPEN_FORBIDDEN), 403, "forbidden -> 403");
  is_int(open_map_http_status(PH_OPEN_TIMEOUT), 504, "timeout -> 504");
  is_int(open_map_http_status(PH_OPEN_QUEUE_FULL), 503, "queue_full -> 503");
  is_int(open_map_http_status(PH_OPEN_CONNECTION_REFUSED), 502,
         "refused -> 502");
  is_int(open_map_http_status(PH_OPEN_HOST_UNREACHABLE), 502,
         "host unreachable -> 502");
  is_int(open_map_http_status(12345), 502, "unknown -> 502");
  is_str(open_map_http_reason(407), "Proxy Authentication Required",
         "reason phrase");
}

static void test_names(void) {
  is_str(ph_open_code_name(PH_OPEN_QUEUE_FULL), "queue_full", "code name");
  is_str(ph_open_code_name(77), "internal_error", "unknown code name");
  is_str(ph_open_stage_name(PH_STAGE_DNS), "dns", "stage name");
  is_str(ph_open_stage_name(PH_STAGE_PROTOCOL), "protocol", "last stage");
  is_str(ph_open_stage_name(-3), "none", "bad stage name");
}

int main(void) {
  plan_lazy();
  test_socks5();
  test_http();
  test_names();
  return done_testing();
}
