/* SPDX-License-Identifier: BSD-2-Clause */
/* The access line (access_log.h). */
#include "access_log.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "lib/cidr.h"

const char *access_peer_text(const struct sockaddr_storage *peer,
                             char out[ACCESS_PEER_TEXT]) {
  ip_addr a;
  uint16_t port = 0;
  char ip[INET6_ADDRSTRLEN];
  if (!peer || ip_addr_from_sa((const struct sockaddr *)peer, &a, &port) < 0 ||
      !inet_ntop(a.fam == 4 ? AF_INET : AF_INET6, a.a, ip, sizeof(ip))) {
    snprintf(out, ACCESS_PEER_TEXT, "-");
    return out;
  }
  snprintf(out, ACCESS_PEER_TEXT, a.fam == 4 ? "%s:%u" : "[%s]:%u", ip,
           (unsigned)port);
  return out;
}

const char *access_target_text(const char *host, int port, char *out,
                               size_t outlen) {
  snprintf(out, outlen, strchr(host, ':') ? "[%.255s]:%d" : "%.255s:%d", host,
           port);
  return out;
}

const char *access_socks5_reply_name(int code) {
  static const char *const names[] = {
      "succeeded",          "general_failure",      "not_allowed",
      "network_unreachable", "host_unreachable",    "connection_refused",
      "ttl_expired",        "command_not_supported", "address_not_supported"};
  if (code < 0)
    return "-";
  return code < 9 ? names[code] : "unknown";
}

static const char *dash(const char *s) { return s && *s ? s : "-"; }

void access_log_write(const frontend_session *s, const access_line *l,
                      int rate_limited) {
  const frontend_server *srv = s->srv;
  const ph_api *api = srv->api;
  if (!api->log_enabled(srv->ctx, PH_LOG_INFO))
    return;
  char peer[ACCESS_PEER_TEXT];
  access_peer_text(&s->peer, peer);
  char target[300] = "";
  char url[600] = "";
  int with_target = srv->log_target && l->host;
  if (with_target) {
    access_target_text(l->host, l->port, target, sizeof(target));
    if (l->path)
      snprintf(url, sizeof(url), "http://%s%.*s", target,
               (int)(l->path_len > 256 ? 256 : l->path_len), l->path);
  }
  ph_log_field f[] = {
      {0, 0, {0}}, /* the placeholder slot the SDK macros add */
      PH_UINT("stream", s->id),
      PH_STR("client", peer),
      PH_STR("user", dash(l->user)),
      PH_STR("method", dash(l->method)),
      PH_STR("status", dash(l->status)),
      PH_INT("status_code", l->code),
      PH_STR("result", dash(l->result)),
      PH_UINT("bytes_up", l->bytes_up),
      PH_UINT("bytes_down", l->bytes_down),
      PH_INT("duration_us", l->duration_us),
      PH_STR("end", dash(l->end)),
      PH_STR("upstream", dash(s->open_upstream)),
      PH_STR("target", target),
      PH_STR("url", url),
  };
  size_t n = sizeof(f) / sizeof(f[0]);
  if (!with_target)
    n -= 2;
  else if (!url[0])
    n -= 1;
  if (rate_limited) {
    static ph_ratelimit rl;
    api->log_rl(srv->ctx, &rl, PH_LOG_INFO, "access", f, n);
  } else {
    api->log(srv->ctx, PH_LOG_INFO, "access", f, n);
  }
}
