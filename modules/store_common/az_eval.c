/* SPDX-License-Identifier: BSD-2-Clause */
/* The authorization decision (az_eval.h). Each rule is one early deny,
 * in the order a reader of a denial would look for its cause. */
#include "az_eval.h"

#include <string.h>
#include <strings.h>

#include <proxyhost/authz_store.h>

#include "lib/cidr.h"

#define HOST_MAX 255

/* Length without one trailing dot. */
static size_t name_len(const char *s) {
  size_t n = strnlen(s, HOST_MAX + 2);
  return n > 0 && s[n - 1] == '.' ? n - 1 : n;
}

static int is_address(const char *s, ip_addr *a) {
  return ip_addr_parse(s, a) == 0;
}

int az_host_match(const char *pattern, const char *host) {
  if (!pattern || !host || !*host)
    return 0;
  if (strcmp(pattern, "*") == 0)
    return 1;
  ip_addr target, pa;
  int target_is_addr = is_address(host, &target);
  if (strchr(pattern, '/')) {
    ip_cidr c;
    return target_is_addr && ip_cidr_parse(pattern, &c) == 0 &&
           ip_cidr_match(&c, &target);
  }
  if (is_address(pattern, &pa))
    return target_is_addr && ip_addr_eq(&pa, &target);
  if (target_is_addr || strchr(pattern, ':'))
    return 0; /* a name pattern never matches an address */
  size_t hl = name_len(host), pl = name_len(pattern);
  if (hl == 0 || hl > HOST_MAX || pl == 0 || pl > HOST_MAX)
    return 0;
  if (pattern[0] == '*') {
    /* "*.suffix": at least one label before ".suffix". */
    if (pl < 3 || pattern[1] != '.' || memchr(pattern + 1, '*', pl - 1))
      return 0;
    size_t sl = pl - 1; /* ".suffix" */
    return hl > sl && strncasecmp(host + hl - sl, pattern + 1, sl) == 0;
  }
  if (memchr(pattern, '*', pl))
    return 0;
  return hl == pl && strncasecmp(host, pattern, pl) == 0;
}

static int policy_allows(const az_policy_row *p, const az_facts *f,
                         const ph_access_request *req) {
  if (!p->subject)
    return 0;
  if (p->subject_kind == PH_AZ_SUBJECT_TOKEN) {
    if (strcmp(p->subject, f->token_id) != 0)
      return 0;
  } else if (p->subject_kind == PH_AZ_SUBJECT_USER) {
    if (strcmp(p->subject, f->token_user) != 0)
      return 0;
  } else {
    return 0;
  }
  return p->protocol == req->protocol && p->port_min >= 1 &&
         p->port_max <= 65535 && p->port_min <= req->port &&
         req->port <= p->port_max && az_host_match(p->host_pattern, req->host);
}

const char *az_token_unusable(const az_facts *f, int64_t now_s) {
  if (!f->token_found || !f->token_id || !f->token_user)
    return "no token";
  if (f->revoked_at != 0)
    return "revoked";
  if (f->expires_at != 0 && now_s >= f->expires_at)
    return "expired";
  if (!f->user_found || !f->user_enabled)
    return "user disabled";
  if (f->user_has_owner && (!f->owner_found || !f->owner_enabled))
    return "owner disabled";
  return NULL;
}

static void deny(az_decision *out, uint32_t negative_ms, const char *why) {
  out->verdict = PH_ACCESS_DENY;
  out->code = PH_OPEN_FORBIDDEN;
  out->ttl_ms = negative_ms;
  out->reason = why;
}

void az_decide(const az_facts *f, const ph_access_request *req,
               int64_t now_s, uint32_t positive_ms, uint32_t negative_ms,
               az_decision *out) {
  memset(out, 0, sizeof(*out));
  const char *agent =
      PH_ACCESS_HAS(ph_access_request, req->size, agent) ? req->agent : NULL;
  if (!req->principal || !agent)
    return deny(out, negative_ms, agent ? "no principal" : "no agent");
  if (!f->token_found || !f->token_id ||
      strcmp(f->token_id, req->principal) != 0)
    return deny(out, negative_ms, "no token");
  const char *why = az_token_unusable(f, now_s);
  if (why)
    return deny(out, negative_ms, why);
  if (!(f->scopes & PH_AZ_SCOPE_STREAM))
    return deny(out, negative_ms, "no stream scope");
  if (!f->agent_found || !f->agent_enabled)
    return deny(out, negative_ms, "agent disabled");
  if (req->protocol != PH_PROTO_TCP || req->port == 0)
    return deny(out, negative_ms, "bad request");
  int allowed = 0;
  for (size_t i = 0; i < f->n_policies && !allowed; i++)
    allowed = policy_allows(&f->policies[i], f, req);
  if (!allowed)
    return deny(out, negative_ms, "no policy");
  out->verdict = PH_ACCESS_ALLOW;
  out->code = PH_OPEN_OK;
  out->ttl_ms = positive_ms;
  out->reason = "allowed";
  if (f->expires_at != 0) {
    /* Never kept past the expiry: whole seconds left, in ms. */
    int64_t left_s = f->expires_at - now_s; /* > 0 here */
    if (left_s <= (int64_t)(out->ttl_ms / 1000) &&
        left_s * 1000 < (int64_t)out->ttl_ms)
      out->ttl_ms = (uint32_t)(left_s * 1000);
  }
}
