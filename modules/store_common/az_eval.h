/* SPDX-License-Identifier: BSD-2-Clause */
/* The authorization decision both stores share (authz_store.h, access.h):
 * pure code, no I/O. A store reads the facts of one question in one read
 * transaction (the token, its user and the user's owner, the agent, the
 * candidate policy rows) and az_decide says ALLOW or DENY and for how
 * long. Everything not allowed is denied: a missing fact is a deny. */
#ifndef PH_STORE_AZ_EVAL_H
#define PH_STORE_AZ_EVAL_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/access.h>

/* One agent_policies row, as read. */
typedef struct az_policy_row {
  int subject_kind; /* ph_az_subject */
  const char *subject;
  const char *host_pattern;
  int64_t port_min, port_max; /* as stored: checked again here */
  int64_t protocol;
} az_policy_row;

/* What the store read for the request's principal (a token id) and agent.
 * Zero is "not found / not enabled": a zeroed struct denies. */
typedef struct az_facts {
  int token_found;
  const char *token_id;   /* as stored */
  const char *token_user; /* the token's user */
  uint32_t scopes;        /* ph_az_scope bits */
  int64_t expires_at;     /* 0: never */
  int64_t revoked_at;     /* 0: not revoked */
  int user_found, user_enabled;
  int user_has_owner;             /* the user names an owner */
  int owner_found, owner_enabled; /* read only when it has one */
  int agent_found, agent_enabled;
  const az_policy_row *policies; /* rows of the request's agent naming the
                                    token or its user (others are ignored
                                    here too) */
  size_t n_policies;
} az_facts;

typedef struct az_decision {
  int verdict;        /* PH_ACCESS_ALLOW or PH_ACCESS_DENY */
  int code;           /* PH_OPEN_OK or PH_OPEN_FORBIDDEN */
  uint32_t ttl_ms;    /* how long it may be kept */
  const char *reason; /* a short static text for a debug log line (never
                         data): "no token", "revoked", "no policy", ... */
} az_decision;

/* Whether the token of f may be used at all at Unix time now_s: found,
 * not revoked, not expired, its user found and enabled, and its user's
 * owner (when it has one) found and enabled. NULL when usable, else a
 * short static reason. Shared by az_decide and authenticate. */
const char *az_token_unusable(const az_facts *f, int64_t now_s);

/* Decides req (host in the normal form of access.h, principal = token
 * id, agent required: NULL is a deny) at Unix time now_s. An allow keeps
 * positive_ms, and never beyond the token's expiry; a deny negative_ms. */
void az_decide(const az_facts *f, const ph_access_request *req,
               int64_t now_s, uint32_t positive_ms, uint32_t negative_ms,
               az_decision *out);

/* Whether host (a target as the request carries it) matches pattern (as
 * authz_store.h documents ph_az_policy.host_pattern): "*" any target; an
 * address or a CIDR only address targets (compared as addresses, so any
 * spelling of one IPv6 address is the same); a name exactly, "*.suffix"
 * names strictly below suffix (not suffix itself), both compared without
 * case and without one trailing dot. Anything else (an empty pattern, a
 * '*' elsewhere, "*." alone) matches nothing. 1 or 0. */
int az_host_match(const char *pattern, const char *host);

#endif
