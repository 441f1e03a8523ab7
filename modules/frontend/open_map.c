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
