/* SPDX-License-Identifier: BSD-2-Clause */
/* tunnel_server's configuration: the seed's server.* keys as
 * [tunnel_server] stream.* (docs/user-guide/server.md), declared with
 * their defaults and bounds in tunnel_server.ini.sample (TM-CFG-25: no
 * zero window, no frame above the protocol's MaxPayload, no byte count
 * that overflows 32 bits); here the relations between them that the
 * host's per-key bounds cannot say, and their reader. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <proxyhost/access.h>

#include "lib/conf_values.h"
#include "frontend/provider_check.h"
#include "tunnel_common/session/tm_conf.h"
#include "ts_int.h"

/* ts_keys, the key table, is generated from tunnel_server.ini.sample (its
 * "; type:" lines) by tools/gen_conf_keys.awk into ts_keys.c, the session's
 * and the TLS reload's keys among them. The bounds the code relies on are
 * held again by ts_conf_held (ts_conf_held.c), first in ts_check. */

static int loopback(const struct sockaddr_storage *ss) {
  if (ss->ss_family == AF_INET) {
    const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (ss->ss_family == AF_INET6) {
    const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(a))
      return 1;
    return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
  }
  return 0;
}

static int bad(const char **key, const char *k, char *why, size_t whylen,
               const char *msg) {
  return ph_conf_fail(key, k, why, whylen, "%s", msg);
}

/* The relay's keys (issue 27): it reads presence, dials what presence
 * says and listens; plain ws only on loopback, and only when asked. */
static int relay_check(ph_ctx *ctx, const ph_api *a, const char **key,
                       char *why, size_t whylen) {
  if (!a->conf_int(ctx, "relay"))
    return PH_OK;
  if (!a->conf_int(ctx, "presence"))
    return bad(key, "relay", why, whylen,
               "needs presence = true: the relay finds nodes in presence");
  const char *addr = a->conf_str(ctx, "presence.relay_addr");
  if (!addr || !*addr)
    return bad(key, "presence.relay_addr", why, whylen,
               "required with relay = true: where other nodes dial this one");
  struct sockaddr_storage ss;
  socklen_t sl;
  char w[200];
  if (a->parse_listen_addr(a->conf_str(ctx, "relay.listen"), &ss, &sl, w,
                           sizeof(w)) != PH_OK)
    return bad(key, "relay.listen", why, whylen, w);
  static const char *const files[] = {"relay.tls.cert", "relay.tls.key",
                                       "relay.tls.ca"};
  int nfiles = 0;
  for (int i = 0; i < 3; i++) {
    const char *f = a->conf_str(ctx, files[i]);
    if (f && *f) {
      if (access(f, R_OK) != 0)
        return bad(key, files[i], why, whylen, "cannot be read");
      nfiles++;
    }
  }
  if (nfiles == 3) {
    const char *td = a->conf_str(ctx, "relay.trust_domain");
    if (!td || !*td || strpbrk(td, "/:@ \t"))
      return bad(key, "relay.trust_domain", why, whylen,
                 "required with relay.tls.cert: a SPIFFE trust domain (no "
                 "'/', ':', '@' or space)");
    return PH_OK;
  }
  if (nfiles)
    return bad(key, "relay.tls.cert", why, whylen,
               "relay.tls.cert, relay.tls.key and relay.tls.ca go together");
  if (!a->conf_int(ctx, "relay.allow_plain"))
    return bad(key, "relay.tls.cert", why, whylen,
               "the relay between nodes is mutual TLS: set relay.tls.cert, "
               "relay.tls.key, relay.tls.ca and relay.trust_domain (or "
               "relay.allow_plain = true on loopback addresses, for tests)");
  if (!loopback(&ss))
    return bad(key, "relay.listen", why, whylen,
               "a plain relay listens on loopback addresses only");
  return PH_OK;
}

int ts_check(ph_ctx *ctx, const ph_api *a, const char **key, char *why,
             size_t whylen) {
  int rc = ts_conf_held(ctx, a, key, why, whylen);
  if (rc != PH_OK)
    return rc;
  const char *store = a->conf_str(ctx, "store");
  if (!store || !*store)
    return bad(key, "store", why, whylen,
               "required: the authz.store provider instance (store_sqlite "
               "or store_pg)");
  rc = check_named_provider(ctx, a, "store", PH_AZ_STORE_SERVICE, key,
                                why, whylen);
  if (rc != PH_OK)
    return rc;
  const char *node = a->conf_str(ctx, "node_id");
  if (a->conf_int(ctx, "presence") && (!node || !*node))
    return bad(key, "node_id", why, whylen,
               "required with presence = true: this node's id in presence");
  /* It is a SPIFFE path segment (the relay's identity), a log field and a
   * status page cell: the characters all three take as they are. */
  for (const char *q = node ? node : ""; *q; q++)
    if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
          (*q >= '0' && *q <= '9') || *q == '.' || *q == '-' || *q == '_'))
      return bad(key, "node_id", why, whylen,
                 "only letters, digits, '.', '-' and '_'");
  rc = relay_check(ctx, a, key, why, whylen);
  if (rc != PH_OK)
    return rc;
  const char *acc = a->conf_str(ctx, "access");
  if (!acc || !*acc)
    return bad(key, "access", why, whylen,
               "required: the access provider (auth_cache)");
  rc = check_named_provider(ctx, a, "access", PH_ACCESS_SERVICE, key, why,
                            whylen);
  if (rc != PH_OK)
    return rc;
  struct sockaddr_storage ss;
  socklen_t sl;
  char w[200];
  if (a->parse_listen_addr(a->conf_str(ctx, "listen"), &ss, &sl, w,
                           sizeof(w)) != PH_OK)
    return bad(key, "listen", why, whylen, w);
  const char *path = a->conf_str(ctx, "path");
  if (!path || path[0] != '/' || strpbrk(path, " ?#\t\r\n"))
    return bad(key, "path", why, whylen,
               "must start with '/' and hold no space, '?' or '#'");
  const char *cert = a->conf_str(ctx, "tls.cert"),
             *tkey = a->conf_str(ctx, "tls.key");
  if ((cert && *cert) != (tkey && *tkey))
    return bad(key, (cert && *cert) ? "tls.key" : "tls.cert", why, whylen,
               "tls.cert and tls.key go together");
  if (cert && *cert && (access(cert, R_OK) != 0 || access(tkey, R_OK) != 0))
    return bad(key, access(cert, R_OK) != 0 ? "tls.cert" : "tls.key", why,
               whylen, "cannot be read");
  /* Fail closed before start: plain ws off loopback only when asked for
   * (tm_ws refuses it too, but at start, after the other modules). */
  if (!(cert && *cert) && !a->conf_int(ctx, "allow_plain") && !loopback(&ss))
    return bad(key, "listen", why, whylen,
               "plain ws (no tls.cert) on a non-loopback address: set "
               "tls.cert and tls.key, or allow_plain = true behind a TLS "
               "proxy");
  rc = tm_conf_check(ctx, a, "stream.", ts_keys, key, why, whylen);
  if (rc != PH_OK)
    return rc;
  static const ph_conf_order order[] = {
      {"client.max_connections_per_token", "client.max_connections_per_user",
       "client.max_connections_per_token",
       "must not exceed client.max_connections_per_user"},
      {"stream.max_opens_per_session", "stream.max_concurrent_opens",
       "stream.max_opens_per_session",
       "must not exceed stream.max_concurrent_opens"}};
  return ph_conf_orders(ctx, a, order, sizeof(order) / sizeof(order[0]), key,
                        why, whylen);
}

static void copy(char *dst, size_t cap, const char *src) {
  snprintf(dst, cap, "%s", src ? src : "");
}

void ts_conf_read(ph_ctx *ctx, const ph_api *a, ts_conf *c) {
#define I(k) ((uint32_t)a->conf_int(ctx, k))
  copy(c->listen, sizeof(c->listen), a->conf_str(ctx, "listen"));
  copy(c->path, sizeof(c->path), a->conf_str(ctx, "path"));
  copy(c->cert, sizeof(c->cert), a->conf_str(ctx, "tls.cert"));
  copy(c->key, sizeof(c->key), a->conf_str(ctx, "tls.key"));
  copy(c->node_id, sizeof(c->node_id), a->conf_str(ctx, "node_id"));
  c->log_names = (int)a->conf_int(ctx, "log_names");
  c->presence = (int)a->conf_int(ctx, "presence");
  copy(c->presence_zone, sizeof(c->presence_zone),
       a->conf_str(ctx, "presence.zone"));
  copy(c->presence_relay, sizeof(c->presence_relay),
       a->conf_str(ctx, "presence.relay_addr"));
  c->presence_lease_ms = I("presence.lease");
  c->relay = (int)a->conf_int(ctx, "relay");
  c->relay_allow_plain = (int)a->conf_int(ctx, "relay.allow_plain");
  copy(c->relay_listen, sizeof(c->relay_listen),
       a->conf_str(ctx, "relay.listen"));
  c->relay_links_per_peer = I("relay.links_per_peer");
  copy(c->relay_cert, sizeof(c->relay_cert), a->conf_str(ctx, "relay.tls.cert"));
  copy(c->relay_key, sizeof(c->relay_key), a->conf_str(ctx, "relay.tls.key"));
  copy(c->relay_ca, sizeof(c->relay_ca), a->conf_str(ctx, "relay.tls.ca"));
  copy(c->relay_td, sizeof(c->relay_td), a->conf_str(ctx, "relay.trust_domain"));
  c->allow_plain = (int)a->conf_int(ctx, "allow_plain");
  c->legacy_no_subprotocol = (int)a->conf_int(ctx, "legacy_no_subprotocol");
  c->max_connections = I("max_connections");
  c->caps = tm_conf_caps(ctx, a);
  c->opens.max_running = I("stream.max_concurrent_opens");
  c->opens.max_pending = I("stream.max_pending_opens");
  c->opens.per_principal = I("stream.max_opens_per_principal");
  c->opens.pending_per_principal = I("stream.max_pending_per_principal");
  c->opens.per_group = I("stream.max_opens_per_session");
  c->opens.pending_per_group = I("stream.max_pending_per_session");
  c->max_per_connection = I("stream.max_per_connection");
  c->max_per_token = I("stream.max_per_token");
  c->max_per_agent = I("stream.max_per_agent");
  c->agent_max_connections = I("agent.max_connections");
  c->max_conns_per_token = I("client.max_connections_per_token");
  c->max_conns_per_user = I("client.max_connections_per_user");
  c->cred_check_ms = I("credential_check_interval");
  c->mem_per_session = (uint64_t)a->conf_int(ctx, "stream.memory_per_session");
  c->mem_per_principal =
      (uint64_t)a->conf_int(ctx, "stream.memory_per_principal");
  c->open_timeout_ms = I("stream.open_timeout");
  c->idle_timeout_ms = a->conf_int(ctx, "stream.idle_timeout");
  tm_conf_session(ctx, a, "stream.", &c->session);
  c->drain_ms = I("drain_timeout");
#undef I
}

void ts_session_cfg(const ts_conf *c, int opener, unsigned caps,
                    tm_metrics *metrics, tm_session_cfg *o) {
  *o = c->session; /* the limits tm_conf_session read */
  o->component = TM_COMPONENT_SERVER;
  o->opener = opener;
  o->caps = caps;
  o->max_streams = c->max_per_connection;
  o->metrics = metrics;
}
