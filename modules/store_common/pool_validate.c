/* SPDX-License-Identifier: BSD-2-Clause */
/* Validation of pool.store requests (pool_validate.h). */
#include "pool_validate.h"

#include <string.h>

#include "lib/host_norm.h"

static int bad(const char **detail, const char *why) {
  if (detail)
    *detail = why;
  return PH_EINVAL;
}

/* A NUL within the first cap bytes (a fixed-size field of a row). */
static int terminated(const char *s, size_t cap) {
  return memchr(s, '\0', cap) != NULL;
}

int pool_name_valid(const char *s, size_t max) {
  if (!s)
    return 0;
  size_t n = strnlen(s, max + 1);
  if (n < 1 || n > max)
    return 0;
  if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9')))
    return 0;
  return strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

/* An empty string or a name. */
static int opt_name(const char *s, size_t max) {
  return s[0] == '\0' || pool_name_valid(s, max);
}

int pool_pattern_valid(const char *p) {
  if (!p)
    return 0;
  size_t n = strnlen(p, PH_POOL_HOST_MAX + 1);
  if (n < 1 || n > PH_POOL_HOST_MAX)
    return 0;
  if (strcmp(p, "*") == 0)
    return 1;
  if (strncmp(p, "*.", 2) == 0)
    p += 2;
  return strchr(p, '*') == NULL && host_norm_ok(p);
}

int pool_sticky_valid(const char *k) {
  if (!k)
    return 0;
  size_t n = strnlen(k, PH_POOL_STICKY_MAX + 1);
  if (n > PH_POOL_STICKY_MAX)
    return 0;
  if (n == 0 || strcmp(k, "username") == 0)
    return 1;
  if (strncmp(k, "header:", 7) != 0 || n == 7)
    return 0;
  /* RFC 9110 token characters. */
  return strspn(k + 7, "!#$%&'*+-.^_`|~0123456789"
                       "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") ==
         n - 7;
}

/* A client identity: empty, or 1..PH_POOL_NAME_MAX printable ASCII
 * bytes without spaces (a certificate or user name, "alice@example"). */
static int identity_valid(const char *s) {
  size_t n = strnlen(s, PH_POOL_NAME_MAX + 1);
  if (n > PH_POOL_NAME_MAX)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (s[i] <= ' ' || s[i] > '~')
      return 0;
  return 1;
}

static int proxy_key(const ph_pool_proxy_row *p, const char **detail) {
  if (!terminated(p->proxy_id, sizeof(p->proxy_id)) ||
      !pool_name_valid(p->proxy_id, PH_POOL_ID_MAX))
    return bad(detail, "proxy_id must be 1..128 bytes of [a-z0-9._-], "
                       "starting with a letter or a digit");
  return PH_OK;
}

static int admin_state_ok(int s) {
  return s == PH_POOL_ADMIN_ACTIVE || s == PH_POOL_ADMIN_DRAINING ||
         s == PH_POOL_ADMIN_DISABLED;
}

int pool_validate_proxy(const ph_pool_proxy_row *p, const char **detail) {
  if (!p)
    return bad(detail, "no proxy");
  int rc = proxy_key(p, detail);
  if (rc != PH_OK)
    return rc;
  if (p->protocol != PH_POOL_UPSTREAM_HTTP_CONNECT &&
      p->protocol != PH_POOL_UPSTREAM_SOCKS5 &&
      p->protocol != PH_POOL_UPSTREAM_HTTP)
    return bad(detail, "protocol must be http_connect, socks5 or http");
  if (!terminated(p->host, sizeof(p->host)) || !host_norm_ok(p->host))
    return bad(detail, "host must be a name in lower case or an IP address "
                       "(at most 255 bytes)");
  if (p->port < 1)
    return bad(detail, "port must be 1..65535");
  if (p->n_groups < 1 || p->n_groups > PH_POOL_GROUPS_MAX)
    return bad(detail, "a proxy belongs to 1..8 groups");
  for (uint32_t i = 0; i < p->n_groups; i++) {
    if (!terminated(p->groups[i], sizeof(p->groups[i])) ||
        !pool_name_valid(p->groups[i], PH_POOL_GROUP_MAX))
      return bad(detail, "a group must be 1..64 bytes of [a-z0-9._-], "
                         "starting with a letter or a digit");
    for (uint32_t j = 0; j < i; j++)
      if (strcmp(p->groups[i], p->groups[j]) == 0)
        return bad(detail, "a group is named twice");
  }
  if (!terminated(p->zone, sizeof(p->zone)) ||
      !opt_name(p->zone, PH_POOL_NAME_MAX))
    return bad(detail, "zone must be empty or 1..64 bytes of [a-z0-9._-]");
  if (p->capacity < 1 || p->capacity > PH_POOL_CAPACITY_MAX)
    return bad(detail, "capacity must be 1..1000000");
  if (p->weight < 1 || p->weight > PH_POOL_WEIGHT_MAX)
    return bad(detail, "weight must be 1..1000");
  if (p->expires_at_ms < 0)
    return bad(detail, "expires_at must be 0 (none) or a time after 1970");
  if (!terminated(p->secret_ref, sizeof(p->secret_ref)) ||
      !opt_name(p->secret_ref, PH_POOL_SECRET_REF_MAX))
    return bad(detail, "secret_ref must be empty or 1..128 bytes of "
                       "[a-z0-9._-], starting with a letter or a digit");
  if (!admin_state_ok(p->admin_state))
    return bad(detail, "admin_state must be active, draining or disabled");
  return PH_OK;
}

static int route_key(const ph_pool_route_row *r, const char **detail) {
  if (!terminated(r->rule_id, sizeof(r->rule_id)) ||
      !pool_name_valid(r->rule_id, PH_POOL_ID_MAX))
    return bad(detail, "rule_id must be 1..128 bytes of [a-z0-9._-], "
                       "starting with a letter or a digit");
  return PH_OK;
}

int pool_validate_route(const ph_pool_route_row *r, const char **detail) {
  if (!r)
    return bad(detail, "no route");
  int rc = route_key(r, detail);
  if (rc != PH_OK)
    return rc;
  if (r->enabled != 0 && r->enabled != 1)
    return bad(detail, "enabled must be true or false");
  if (!terminated(r->host_pattern, sizeof(r->host_pattern)) ||
      !pool_pattern_valid(r->host_pattern))
    return bad(detail, "host_pattern must be \"*\", a host, or \"*.\" and "
                       "a name, in lower case");
  if (!((r->port_min == 0 && r->port_max == 0) ||
        (r->port_min >= 1 && r->port_min <= r->port_max)))
    return bad(detail, "ports must be 0 0 (any) or 1..65535 with port_min "
                       "<= port_max");
  if (!terminated(r->client_identity, sizeof(r->client_identity)) ||
      !identity_valid(r->client_identity))
    return bad(detail, "client_identity must be empty or 1..64 printable "
                       "bytes without spaces");
  if (!terminated(r->listener, sizeof(r->listener)) ||
      !opt_name(r->listener, PH_POOL_NAME_MAX))
    return bad(detail, "listener must be empty or 1..64 bytes of "
                       "[a-z0-9._-]");
  if (!terminated(r->target_group, sizeof(r->target_group)) ||
      !pool_name_valid(r->target_group, PH_POOL_GROUP_MAX))
    return bad(detail, "target_group must be 1..64 bytes of [a-z0-9._-], "
                       "starting with a letter or a digit");
  if (!terminated(r->strategy, sizeof(r->strategy)) ||
      !pool_name_valid(r->strategy, PH_POOL_NAME_MAX))
    return bad(detail, "strategy must be 1..64 bytes of [a-z0-9._-], "
                       "starting with a letter or a digit");
  if (r->on_unavailable == PH_POOL_ON_UNAVAILABLE_WAIT) {
    if (r->wait_timeout_ms < 1 ||
        r->wait_timeout_ms > PH_POOL_WAIT_TIMEOUT_MAX_MS)
      return bad(detail, "on_unavailable wait needs wait_timeout 1ms..60s");
  } else if (r->on_unavailable == PH_POOL_ON_UNAVAILABLE_REJECT ||
             r->on_unavailable == PH_POOL_ON_UNAVAILABLE_DIRECT) {
    if (r->wait_timeout_ms != 0)
      return bad(detail, "wait_timeout goes only with on_unavailable wait");
  } else {
    return bad(detail, "on_unavailable must be reject, wait or direct");
  }
  if (!terminated(r->sticky_key, sizeof(r->sticky_key)) ||
      !pool_sticky_valid(r->sticky_key))
    return bad(detail, "sticky_key must be empty, \"username\" or "
                       "\"header:<Name>\" (at most 80 bytes)");
  return PH_OK;
}

int pool_validate_credential(const ph_pool_credential_ref *c,
                             const char **detail) {
  if (!c)
    return bad(detail, "no credential reference");
  if (!terminated(c->secret_ref, sizeof(c->secret_ref)) ||
      !pool_name_valid(c->secret_ref, PH_POOL_SECRET_REF_MAX))
    return bad(detail, "secret_ref must be 1..128 bytes of [a-z0-9._-], "
                       "starting with a letter or a digit");
  if (c->credential_version > (uint64_t)INT64_MAX)
    return bad(detail, "credential_version is out of range");
  return PH_OK;
}

int pool_validate_write(const ph_pool_write *w, const char **detail) {
  if (!w || w->size < sizeof(*w))
    return bad(detail, "the request is too short for this store");
  if (w->expect_revision > (uint64_t)INT64_MAX)
    return bad(detail, "expect_revision is out of range");
  switch (w->kind) {
  case PH_POOL_KIND_PROXY:
    switch (w->action) {
    case PH_POOL_CREATE:
    case PH_POOL_UPDATE:
      return pool_validate_proxy(&w->u.proxy, detail);
    case PH_POOL_DELETE:
      return proxy_key(&w->u.proxy, detail);
    case PH_POOL_SET_STATE:
      if (!admin_state_ok(w->u.proxy.admin_state))
        return bad(detail, "admin_state must be active, draining or "
                           "disabled");
      return proxy_key(&w->u.proxy, detail);
    }
    return bad(detail, "a proxy is created, updated, deleted or has its "
                       "state set");
  case PH_POOL_KIND_ROUTE:
    switch (w->action) {
    case PH_POOL_CREATE:
    case PH_POOL_UPDATE:
      return pool_validate_route(&w->u.route, detail);
    case PH_POOL_DELETE:
    case PH_POOL_MOVE:
      return route_key(&w->u.route, detail);
    }
    return bad(detail, "a route is created, updated, moved or deleted");
  case PH_POOL_KIND_CREDENTIAL:
    switch (w->action) {
    case PH_POOL_CREATE:
    case PH_POOL_DELETE:
    case PH_POOL_ROTATE:
      return pool_validate_credential(&w->u.credential, detail);
    }
    return bad(detail, "a credential reference is created, rotated or "
                       "deleted");
  }
  return bad(detail, "kind must be proxy, route or credential");
}

int pool_validate_list(const ph_pool_list *l, const char **detail) {
  if (!l || l->size < sizeof(*l))
    return bad(detail, "the request is too short for this store");
  if (l->kind != PH_POOL_KIND_PROXY && l->kind != PH_POOL_KIND_ROUTE &&
      l->kind != PH_POOL_KIND_CREDENTIAL)
    return bad(detail, "kind must be proxy, route or credential");
  if (l->limit < 1 || l->limit > PH_POOL_LIST_MAX)
    return bad(detail, "limit must be 1..1000");
  size_t max = l->kind == PH_POOL_KIND_CREDENTIAL ? PH_POOL_SECRET_REF_MAX
                                                  : PH_POOL_ID_MAX;
  if (l->after && (l->kind == PH_POOL_KIND_ROUTE ||
                   !pool_name_valid(l->after, max)))
    return bad(detail, "after must be an id of the kind (routes page by "
                       "position)");
  if (l->from_position < 0 || l->from_position > (int64_t)UINT32_MAX + 1 ||
      (l->from_position != 0 && l->kind != PH_POOL_KIND_ROUTE))
    return bad(detail, "from_position must be 0 or a route position");
  if (l->key && !pool_name_valid(l->key, max))
    return bad(detail, "the key must be an id of the kind");
  return PH_OK;
}
