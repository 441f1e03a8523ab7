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

/* RFC 9209 error types: each open code at the stages where it differs,
 * and the frontend's own statuses (issue 28). */
static void test_proxy_status(void) {
  static const struct {
    int stage, code;
    const char *want;
  } rows[] = {
      {PH_STAGE_CONNECT, PH_OPEN_CONNECTION_REFUSED, "connection_refused"},
      {PH_STAGE_CONNECT, PH_OPEN_TIMEOUT, "connection_timeout"},
      {PH_STAGE_DNS, PH_OPEN_TIMEOUT, "dns_timeout"},
      {PH_STAGE_QUEUE, PH_OPEN_TIMEOUT, "connection_limit_reached"},
      {PH_STAGE_SELECTION, PH_OPEN_TIMEOUT, "connection_limit_reached"},
      {PH_STAGE_PROTOCOL, PH_OPEN_TIMEOUT, "connection_timeout"},
      {PH_STAGE_DNS, PH_OPEN_HOST_UNREACHABLE, "dns_error"},
      {PH_STAGE_CONNECT, PH_OPEN_HOST_UNREACHABLE, "destination_unavailable"},
      {PH_STAGE_CONNECT, PH_OPEN_NETWORK_UNREACHABLE,
       "destination_ip_unroutable"},
      {PH_STAGE_POLICY, PH_OPEN_FORBIDDEN, "destination_ip_prohibited"},
      {PH_STAGE_AUTHORIZATION, PH_OPEN_FORBIDDEN, "http_request_denied"},
      {PH_STAGE_QUEUE, PH_OPEN_QUEUE_FULL, "connection_limit_reached"},
      {PH_STAGE_SELECTION, PH_OPEN_QUEUE_FULL, "destination_unavailable"},
      {PH_STAGE_SELECTION, PH_OPEN_AGENT_OFFLINE, "destination_unavailable"},
      {PH_STAGE_NONE, PH_OPEN_UNSUPPORTED_CAPABILITY,
       "proxy_configuration_error"},
      {PH_STAGE_PROTOCOL, PH_OPEN_INTERNAL_ERROR, "http_protocol_error"},
      {PH_STAGE_CONNECT, PH_OPEN_INTERNAL_ERROR, "proxy_internal_error"},
      {PH_STAGE_CONNECT, 99, "proxy_internal_error"},
  };
  for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
    is_str(open_map_proxy_error(rows[i].stage, rows[i].code), rows[i].want,
           rows[i].want);
  ok(open_map_status_error(200) == NULL && open_map_status_error(407) == NULL,
     "no error type for a success or a 407");
  is_str(open_map_status_error(400), "http_request_error", "400");
  is_str(open_map_status_error(431), "http_request_error", "431");
  is_str(open_map_status_error(403), "http_request_denied", "403");
  is_str(open_map_status_error(502), "http_protocol_error", "502");
  is_str(open_map_status_error(504), "http_response_timeout", "504");
  is_str(open_map_status_error(503), "proxy_internal_error", "503");
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
  test_proxy_status();
  return done_testing();
}
