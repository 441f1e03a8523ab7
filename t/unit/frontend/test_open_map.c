/* SPDX-License-Identifier: BSD-2-Clause */
/* The mapping of open results to SOCKS5 replies (the 001 seed's table)
 * and HTTP statuses, and the stable enum names. */
#include <string.h>

#include "frontend/open_map.h"
#include "tap.h"

/* One row: an open code and what each frontend answers for it. */
typedef struct map_row {
  int code, want;
  const char *name;
} map_row;

static void check_map(int (*map)(int), const map_row *rows, size_t n) {
  for (size_t i = 0; i < n; i++)
    is_int(map(rows[i].code), rows[i].want, rows[i].name);
}

/* covers TM-PROTO-30 .. TM-PROTO-36 (the SOCKS5 mapping table), and
 * TM-PROTO-29: unknown codes are a general failure */
static const map_row socks5_rows[] = {
    {PH_OPEN_OK, 0x00, "ok -> succeeded"},
    {PH_OPEN_FORBIDDEN, 0x02, "forbidden -> connection not allowed"},
    {PH_OPEN_NETWORK_UNREACHABLE, 0x03,
     "network_unreachable -> network unreachable"},
    {PH_OPEN_HOST_UNREACHABLE, 0x04, "host_unreachable -> host unreachable"},
    {PH_OPEN_AGENT_OFFLINE, 0x04, "agent_offline -> host unreachable"},
    {PH_OPEN_CONNECTION_REFUSED, 0x05,
     "connection_refused -> connection refused"},
    {PH_OPEN_TIMEOUT, 0x06, "timeout -> TTL expired"},
    {PH_OPEN_QUEUE_FULL, 0x01, "queue_full -> general failure"},
    {PH_OPEN_UNSUPPORTED_CAPABILITY, 0x01,
     "unsupported_capability -> general failure"},
    {PH_OPEN_INTERNAL_ERROR, 0x01, "internal_error -> general failure"},
    {999, 0x01, "unknown code -> general failure"},
    {-1, 0x01, "negative code -> general failure"},
};

static const map_row http_rows[] = {
    {PH_OPEN_OK, 200, "ok -> 200"},
    {PH_OPEN_FORBIDDEN, 403, "forbidden -> 403"},
    {PH_OPEN_TIMEOUT, 504, "timeout -> 504"},
    {PH_OPEN_QUEUE_FULL, 503, "queue_full -> 503"},
    {PH_OPEN_CONNECTION_REFUSED, 502, "refused -> 502"},
    {PH_OPEN_HOST_UNREACHABLE, 502, "host unreachable -> 502"},
    {12345, 502, "unknown -> 502"},
};

static void test_socks5(void) {
  check_map(open_map_socks5, socks5_rows,
            sizeof(socks5_rows) / sizeof(socks5_rows[0]));
}

static void test_http(void) {
  check_map(open_map_http_status, http_rows,
            sizeof(http_rows) / sizeof(http_rows[0]));
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
