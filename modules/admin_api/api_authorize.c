/* SPDX-License-Identifier: BSD-2-Clause */
/* See api_authorize.h. */
#include "api_authorize.h"

#include <stdlib.h>
#include <string.h>

#include <proxyhost/connector.h>

#include "admin_kit/admin_http.h"
#include "lib/host_norm.h"

/* Copies a value of allowed characters; -1 when empty, too long, or with
 * a character outside them. */
static int take(const char *v, size_t n, char *out, size_t cap,
                const char *allowed) {
  if (n == 0 || n >= cap)
    return -1;
  for (size_t i = 0; i < n; i++)
    if (!strchr(allowed, v[i]) || v[i] == '\0')
      return -1;
  memcpy(out, v, n);
  out[n] = '\0';
  return 0;
}

#define NAME_CHARS "abcdefghijklmnopqrstuvwxyz0123456789._-"

int api_authorize_parse(api_authorize *a, const char *q, const char **msg) {
  memset(a, 0, sizeof(*a));
  int seen = 0;
  char port[8] = "";
  api_qpair kv;
  int more;
  while ((more = api_query_next(&q, &kv)) > 0) {
    int bit, bad;
    const char *v = kv.v;
    size_t vl = kv.vl;
    if (api_qpair_is(&kv, "token"))
      bit = 1, bad = take(v, vl, a->token, sizeof(a->token), NAME_CHARS);
    else if (api_qpair_is(&kv, "agent"))
      bit = 2, bad = take(v, vl, a->agent, sizeof(a->agent), NAME_CHARS);
    else if (api_qpair_is(&kv, "host"))
      bit = 4, bad = take(v, vl, a->host, sizeof(a->host), NAME_CHARS ":");
    else if (api_qpair_is(&kv, "port"))
      bit = 8, bad = take(v, vl, port, sizeof(port), "0123456789");
    else {
      *msg = "unknown query parameter: authorize takes token, agent, host "
             "and port";
      return -1;
    }
    if (bad || (seen & bit)) {
      *msg = bad ? "a query value is empty, too long or has a character "
                   "it may not have (no percent escapes)"
                 : "a query parameter is given twice";
      return -1;
    }
    seen |= bit;
  }
  if (more < 0) {
    *msg = "a query parameter has no value";
    return -1;
  }
  if (seen != 15) {
    *msg = "authorize needs token, agent, host and port";
    return -1;
  }
  long p = port[0] == '0' ? 0 : strtol(port, NULL, 10);
  if (p < 1 || p > 65535) {
    *msg = "port is 1 to 65535";
    return -1;
  }
  if (!host_norm_ok(a->host)) {
    *msg = "host must be in normal form: lower case, no trailing dot, an "
           "IPv6 address without brackets";
    return -1;
  }
  a->req.size = sizeof(a->req);
  a->req.protocol = PH_PROTO_TCP;
  a->req.port = (uint16_t)p;
  a->req.host = a->host;
  a->req.principal = a->token;
  a->req.agent = a->agent;
  return 0;
}

void api_authorize_write(json_w *w, const ph_access_result *res) {
  int v = res->verdict;
  json_w_obj(w);
  json_w_kstr(w, "verdict",
              v == PH_ACCESS_ALLOW         ? "allow"
              : v == PH_ACCESS_UNAVAILABLE ? "unavailable"
                                           : "deny");
  json_w_kstr(w, "code", ph_open_code_name(res->code));
  json_w_kuint(w, "ttl_ms", res->ttl_ms);
  json_w_kuint(w, "revision", res->revision);
  json_w_obj_end(w);
}
