/* SPDX-License-Identifier: BSD-2-Clause */
/* Mapping open results to client-facing answers: SOCKS5 reply codes (the
 * 001 seed's table) and HTTP statuses. Pure code: no I/O, no host API. */
#ifndef PH_OPEN_MAP_H
#define PH_OPEN_MAP_H

#include <proxyhost/connector.h>

/* RFC 1928 reply codes. */
enum socks5_reply {
  SOCKS5_SUCCEEDED = 0x00,
  SOCKS5_GENERAL_FAILURE = 0x01,
  SOCKS5_NOT_ALLOWED = 0x02,
  SOCKS5_NETWORK_UNREACHABLE = 0x03,
  SOCKS5_HOST_UNREACHABLE = 0x04,
  SOCKS5_CONNECTION_REFUSED = 0x05,
  SOCKS5_TTL_EXPIRED = 0x06,
  SOCKS5_COMMAND_NOT_SUPPORTED = 0x07,
  SOCKS5_ADDRESS_NOT_SUPPORTED = 0x08
};

/* ok→succeeded, forbidden→not allowed, network_unreachable→network
 * unreachable, host_unreachable and agent_offline→host unreachable,
 * connection_refused→refused, timeout→TTL expired, queue_full and all
 * others→general failure. */
int open_map_socks5(int code);

/* The HTTP status a proxy answers for a failed open: forbidden 403,
 * timeout 504, queue_full 503, dns/host/network/refused 502, others 502;
 * ok 200. */
int open_map_http_status(int code);
const char *open_map_http_reason(int status);
/* The RFC 9209 proxy error type (a Proxy-Status "error" token) for an
 * open that failed at stage with code: connection_refused,
 * connection_timeout, dns_error, dns_timeout, destination_unavailable,
 * destination_ip_prohibited, destination_ip_unroutable,
 * connection_limit_reached, http_request_denied, http_protocol_error,
 * proxy_configuration_error or proxy_internal_error. */
const char *open_map_proxy_error(int stage, int code);
/* The same for a reply of the frontend's own that no open caused, by its
 * HTTP status: http_request_error (4xx), http_request_denied (403),
 * http_response_timeout (504), http_protocol_error (502),
 * proxy_internal_error (others); NULL for a status that is no error. */
const char *open_map_status_error(int status);

#endif
