/* SPDX-License-Identifier: BSD-2-Clause */
#include "open_map.h"

int open_map_socks5(int code) {
  switch (code) {
  case PH_OPEN_OK:
    return SOCKS5_SUCCEEDED;
  case PH_OPEN_FORBIDDEN:
    return SOCKS5_NOT_ALLOWED;
  case PH_OPEN_NETWORK_UNREACHABLE:
    return SOCKS5_NETWORK_UNREACHABLE;
  case PH_OPEN_HOST_UNREACHABLE:
  case PH_OPEN_AGENT_OFFLINE:
    return SOCKS5_HOST_UNREACHABLE;
  case PH_OPEN_CONNECTION_REFUSED:
    return SOCKS5_CONNECTION_REFUSED;
  case PH_OPEN_TIMEOUT:
    return SOCKS5_TTL_EXPIRED;
  default: /* queue_full and the rest (architecture brief, section 7) */
    return SOCKS5_GENERAL_FAILURE;
  }
}

int open_map_http_status(int code) {
  switch (code) {
  case PH_OPEN_OK:
    return 200;
  case PH_OPEN_FORBIDDEN:
    return 403;
  case PH_OPEN_TIMEOUT:
    return 504;
  case PH_OPEN_QUEUE_FULL:
    return 503;
  default:
    return 502;
  }
}

const char *open_map_http_reason(int status) {
  switch (status) {
  case 200:
    return "Connection established";
  case 400:
    return "Bad Request";
  case 403:
    return "Forbidden";
  case 405:
    return "Method Not Allowed";
  case 407:
    return "Proxy Authentication Required";
  case 408:
    return "Request Timeout";
  case 413:
    return "Payload Too Large";
  case 414:
    return "URI Too Long";
  case 431:
    return "Request Header Fields Too Large";
  case 501:
    return "Not Implemented";
  case 502:
    return "Bad Gateway";
  case 503:
    return "Service Unavailable";
  case 504:
    return "Gateway Timeout";
  case 505:
    return "HTTP Version Not Supported";
  default:
    return "Error";
  }
}

const char *open_map_proxy_error(int stage, int code) {
  switch (code) {
  case PH_OPEN_FORBIDDEN:
    return stage == PH_STAGE_POLICY ? "destination_ip_prohibited"
                                    : "http_request_denied";
  case PH_OPEN_TIMEOUT:
    if (stage == PH_STAGE_DNS)
      return "dns_timeout";
    if (stage == PH_STAGE_QUEUE || stage == PH_STAGE_SELECTION)
      return "connection_limit_reached";
    return "connection_timeout";
  case PH_OPEN_QUEUE_FULL:
    return stage == PH_STAGE_SELECTION ? "destination_unavailable"
                                       : "connection_limit_reached";
  case PH_OPEN_AGENT_OFFLINE:
    return "destination_unavailable";
  case PH_OPEN_NETWORK_UNREACHABLE:
    return "destination_ip_unroutable";
  case PH_OPEN_HOST_UNREACHABLE:
    return stage == PH_STAGE_DNS ? "dns_error" : "destination_unavailable";
  case PH_OPEN_CONNECTION_REFUSED:
    return "connection_refused";
  case PH_OPEN_UNSUPPORTED_CAPABILITY:
    return "proxy_configuration_error";
  default:
    return stage == PH_STAGE_PROTOCOL ? "http_protocol_error"
                                      : "proxy_internal_error";
  }
}

const char *open_map_status_error(int status) {
  if (status < 400 || status == 407)
    return NULL;
  if (status == 403)
    return "http_request_denied";
  if (status == 504)
    return "http_response_timeout";
  if (status == 502)
    return "http_protocol_error";
  return status < 500 ? "http_request_error" : "proxy_internal_error";
}
