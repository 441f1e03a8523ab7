/* SPDX-License-Identifier: BSD-2-Clause */
/* Listen addresses (addr.h). */
#include "addr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include <proxyhost/abi.h>

int addr_parse_listen(const char *s, struct sockaddr_storage *ss,
                      socklen_t *len, char *why, size_t whylen) {
  const char *colon = s ? strrchr(s, ':') : NULL;
  const char *host = s, *host_end = colon;
  if (s && s[0] == '[') {
    host = s + 1;
    host_end = strchr(host, ']');
    if (!host_end || host_end + 1 != colon)
      host_end = NULL;
  }
  if (!colon || !host_end || host_end - host >= INET6_ADDRSTRLEN) {
    snprintf(why, whylen, "\"%s\": want IPv4:PORT or [IPv6]:PORT",
             s ? s : "");
    return PH_EINVAL;
  }
  const char *p = colon + 1;
  long port = 0;
  for (; *p >= '0' && *p <= '9' && port <= 65535; p++)
    port = port * 10 + (*p - '0');
  if (p == colon + 1 || *p || port > 65535) {
    snprintf(why, whylen, "\"%s\": invalid port (0-65535)", s);
    return PH_EINVAL;
  }
  char h[INET6_ADDRSTRLEN];
  memcpy(h, host, (size_t)(host_end - host));
  h[host_end - host] = '\0';
  memset(ss, 0, sizeof(*ss));
  struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
  struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
  if (s[0] != '[' && inet_pton(AF_INET, h, &in4->sin_addr) == 1) {
    in4->sin_family = AF_INET;
    in4->sin_port = htons((uint16_t)port);
    *len = sizeof(*in4);
  } else if (s[0] == '[' && inet_pton(AF_INET6, h, &in6->sin6_addr) == 1) {
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons((uint16_t)port);
    *len = sizeof(*in6);
  } else {
    snprintf(why, whylen,
             "\"%s\": invalid address (want a numeric IPv4:PORT or "
             "[IPv6]:PORT)",
             s);
    return PH_EINVAL;
  }
  return 0;
}
