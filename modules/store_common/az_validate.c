/* SPDX-License-Identifier: BSD-2-Clause */
/* Validation of authz.store writes and lists (az_validate.h). */
#include "az_validate.h"

#include <stddef.h>
#include <string.h>

#include <proxyhost/connector.h>

#include "az_token.h"
#include "lib/cidr.h"

#define LABEL_MAX 63
#define DNS_NAME_MAX 253
#define ALL_SCOPES (PH_AZ_SCOPE_STREAM | PH_AZ_SCOPE_AGENT)

/* Sets the detail and refuses; a return the compiler can see. */
#define FAIL(text) return (*detail = (text), PH_EINVAL)

uint32_t az_fields_allowed(int kind) {
  switch (kind) {
  case PH_AZ_USER:
  case PH_AZ_AGENT:
    return PH_AZ_F_ENABLED | PH_AZ_F_OWNER;
  case PH_AZ_TOKEN:
    return PH_AZ_F_SCOPES | PH_AZ_F_EXPIRES | PH_AZ_F_REVOKED;
  case PH_AZ_POLICY:
    return PH_AZ_F_SUBJECT | PH_AZ_F_HOST | PH_AZ_F_PORTS | PH_AZ_F_PROTOCOL;
  default:
    return 0;
  }
}

static int is_lower_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

int az_name_valid(const char *s) {
  if (!s || !is_lower_alnum(s[0]))
    return 0;
  size_t n = strnlen(s, PH_AZ_NAME_MAX + 1);
  if (n > PH_AZ_NAME_MAX)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (!is_lower_alnum(s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-')
      return 0;
  return 1;
}

/* A DNS name in normal form: labels of [a-z0-9_-], 1..63 bytes, single
 * dots, no trailing dot, and a last label that is not all digits (that
 * would read as an address someone mistyped). */
static int dns_name_valid(const char *s, size_t n) {
  if (n == 0 || n > DNS_NAME_MAX)
    return 0;
  size_t label = 0;
  int digits_only = 1;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c == '.') {
      if (label == 0)
        return 0;
      label = 0;
      digits_only = 1;
      continue;
    }
    if (!is_lower_alnum(c) && c != '-' && c != '_')
      return 0;
    if (++label > LABEL_MAX)
      return 0;
    digits_only &= c >= '0' && c <= '9';
  }
  return label > 0 && !digits_only;
}

static int has_upper(const char *s) {
  for (; *s; s++)
    if (*s >= 'A' && *s <= 'Z')
      return 1;
  return 0;
}

/* A CIDR whose address has no bits beyond its prefix ("10.0.0.1/8" is a
 * typo for something: refused rather than guessed). */
static int cidr_valid(const char *p) {
  ip_cidr c;
  ip_addr a;
  char addr[64];
  const char *slash = strchr(p, '/');
  size_t al = (size_t)(slash - p);
  if (al == 0 || al >= sizeof(addr) || ip_cidr_parse(p, &c) != 0)
    return 0;
  memcpy(addr, p, al);
  addr[al] = '\0';
  return ip_addr_parse(addr, &a) == 0 && ip_addr_eq(&a, &c.net);
}

int az_pattern_valid(const char *p) {
  if (!p)
    return 0;
  size_t n = strnlen(p, PH_AZ_PATTERN_MAX + 1);
  if (n == 0 || n > PH_AZ_PATTERN_MAX || has_upper(p))
    return 0;
  if (strcmp(p, "*") == 0)
    return 1;
  if (strchr(p, '/'))
    return cidr_valid(p);
  ip_addr a;
  if (ip_addr_parse(p, &a) == 0)
    return 1;
  if (strchr(p, ':'))
    return 0;
  if (p[0] == '*')
    return n > 2 && p[1] == '.' && dns_name_valid(p + 2, n - 2);
  return dns_name_valid(p, n);
}

static int ports_valid(uint16_t lo, uint16_t hi, const char **detail) {
  if (lo < 1 || hi < 1)
    FAIL("ports must be 1..65535");
  if (lo > hi)
    FAIL("port_min above port_max");
  return PH_OK;
}

static int subject_valid(int kind, const char *subject, const char **detail) {
  if (kind == PH_AZ_SUBJECT_TOKEN) {
    if (!az_id_valid(subject, AZ_TOKEN_PREFIX))
      FAIL("bad subject token id");
  } else if (kind == PH_AZ_SUBJECT_USER) {
    if (!az_name_valid(subject))
      FAIL("bad subject user name");
  } else {
    FAIL("unknown subject kind");
  }
  return PH_OK;
}

static int scopes_valid(uint32_t scopes, const char **detail) {
  if (scopes == 0 || (scopes & ~(uint32_t)ALL_SCOPES))
    FAIL("bad scopes");
  return PH_OK;
}

/* The name or id that says which record a write is about. */
static int names_record(const ph_az_record *r, const char **detail) {
  switch (r->kind) {
  case PH_AZ_USER:
    if (!az_name_valid(r->u.user.name))
      FAIL("bad user name");
    return PH_OK;
  case PH_AZ_TOKEN:
    if (!az_id_valid(r->u.token.id, AZ_TOKEN_PREFIX))
      FAIL("bad token id");
    return PH_OK;
  case PH_AZ_AGENT:
    if (!az_name_valid(r->u.agent.name))
      FAIL("bad agent name");
    return PH_OK;
  case PH_AZ_POLICY:
    if (!az_id_valid(r->u.policy.id, AZ_POLICY_PREFIX))
      FAIL("bad policy id");
    return PH_OK;
  default:
    FAIL("unknown kind");
  }
}

static int create_valid(const ph_az_record *r, const char **detail) {
  switch (r->kind) {
  case PH_AZ_USER: {
    const ph_az_user *u = &r->u.user;
    if (!az_name_valid(u->name))
      FAIL("bad user name");
    if (u->owner && !az_name_valid(u->owner))
      FAIL("bad owner name");
    if (u->owner && strcmp(u->owner, u->name) == 0)
      FAIL("a user cannot own itself");
    if (u->enabled != 0 && u->enabled != 1)
      FAIL("enabled must be 0 or 1");
    return PH_OK;
  }
  case PH_AZ_TOKEN: {
    const ph_az_token *t = &r->u.token;
    if (!az_name_valid(t->user))
      FAIL("bad user name");
    if (scopes_valid(t->scopes, detail) != PH_OK)
      return PH_EINVAL;
    if ((t->scopes & PH_AZ_SCOPE_AGENT) && !az_name_valid(t->agent))
      FAIL("an agent token needs a valid agent name");
    if (!(t->scopes & PH_AZ_SCOPE_AGENT) && t->agent)
      FAIL("only an agent token names an agent");
    if (t->expires_at < 0)
      FAIL("expires_at must not be negative");
    return PH_OK;
  }
  case PH_AZ_AGENT: {
    const ph_az_agent *a = &r->u.agent;
    if (!az_name_valid(a->name))
      FAIL("bad agent name");
    if (!az_name_valid(a->owner))
      FAIL("an agent needs a valid owner name");
    if (a->enabled != 0 && a->enabled != 1)
      FAIL("enabled must be 0 or 1");
    return PH_OK;
  }
  case PH_AZ_POLICY: {
    const ph_az_policy *p = &r->u.policy;
    if (!az_name_valid(p->agent))
      FAIL("bad agent name");
    if (subject_valid(p->subject_kind, p->subject, detail) != PH_OK ||
        ports_valid(p->port_min, p->port_max, detail) != PH_OK)
      return PH_EINVAL;
    if (!az_pattern_valid(p->host_pattern))
      FAIL("bad host pattern");
    if (p->protocol != PH_PROTO_TCP)
      FAIL("unknown protocol");
    return PH_OK;
  }
  default:
    FAIL("unknown kind");
  }
}

/* The new values of the fields an update names. */
static int update_valid(const ph_az_write *w, const char **detail) {
  const ph_az_record *r = &w->rec;
  uint32_t f = w->fields;
  if (f == 0)
    FAIL("an update names no field");
  if (f & ~az_fields_allowed(r->kind))
    FAIL("a field that does not belong to the kind");
  if (names_record(r, detail) != PH_OK)
    return PH_EINVAL;
  switch (r->kind) {
  case PH_AZ_USER:
    if ((f & PH_AZ_F_ENABLED) && r->u.user.enabled != 0 &&
        r->u.user.enabled != 1)
      FAIL("enabled must be 0 or 1");
    if ((f & PH_AZ_F_OWNER) && r->u.user.owner &&
        !az_name_valid(r->u.user.owner))
      FAIL("bad owner name");
    if ((f & PH_AZ_F_OWNER) && r->u.user.owner &&
        strcmp(r->u.user.owner, r->u.user.name) == 0)
      FAIL("a user cannot own itself");
    return PH_OK;
  case PH_AZ_AGENT:
    if ((f & PH_AZ_F_ENABLED) && r->u.agent.enabled != 0 &&
        r->u.agent.enabled != 1)
      FAIL("enabled must be 0 or 1");
    if ((f & PH_AZ_F_OWNER) && !az_name_valid(r->u.agent.owner))
      FAIL("an agent needs a valid owner name");
    return PH_OK;
  case PH_AZ_TOKEN:
    if ((f & PH_AZ_F_SCOPES) && scopes_valid(r->u.token.scopes, detail))
      return PH_EINVAL;
    if ((f & PH_AZ_F_EXPIRES) && r->u.token.expires_at < 0)
      FAIL("expires_at must not be negative");
    return PH_OK;
  default: { /* PH_AZ_POLICY */
    const ph_az_policy *p = &r->u.policy;
    if ((f & PH_AZ_F_SUBJECT) &&
        subject_valid(p->subject_kind, p->subject, detail) != PH_OK)
      return PH_EINVAL;
    if ((f & PH_AZ_F_HOST) && !az_pattern_valid(p->host_pattern))
      FAIL("bad host pattern");
    if ((f & PH_AZ_F_PORTS) &&
        ports_valid(p->port_min, p->port_max, detail) != PH_OK)
      return PH_EINVAL;
    if ((f & PH_AZ_F_PROTOCOL) && p->protocol != PH_PROTO_TCP)
      FAIL("unknown protocol");
    return PH_OK;
  }
  }
}

int az_validate_write(const ph_az_write *w, const char **detail) {
  static const char *unused;
  if (!detail)
    detail = &unused;
  *detail = NULL;
  if (!w)
    FAIL("no request");
  if (w->size < offsetof(ph_az_write, reserved))
    FAIL("request too short");
  if (w->rec.kind < PH_AZ_USER || w->rec.kind > PH_AZ_POLICY)
    FAIL("unknown kind");
  switch (w->action) {
  case PH_AZ_CREATE:
    if (w->fields)
      FAIL("a create names no fields");
    return create_valid(&w->rec, detail);
  case PH_AZ_UPDATE:
    return update_valid(w, detail);
  case PH_AZ_DELETE:
    if (w->fields)
      FAIL("a delete names no fields");
    return names_record(&w->rec, detail);
  case PH_AZ_ROTATE:
    if (w->rec.kind != PH_AZ_TOKEN)
      FAIL("only tokens rotate");
    if (w->fields)
      FAIL("a rotate names no fields");
    return names_record(&w->rec, detail);
  default:
    FAIL("unknown action");
  }
}

int az_validate_list(const ph_az_list *l, const char **detail) {
  static const char *unused;
  if (!detail)
    detail = &unused;
  *detail = NULL;
  if (!l)
    FAIL("no request");
  if (l->size < offsetof(ph_az_list, reserved))
    FAIL("request too short");
  if (l->limit < 1 || l->limit > PH_AZ_LIST_MAX)
    FAIL("limit must be 1..1000");
  int name_keyed = l->kind == PH_AZ_USER || l->kind == PH_AZ_AGENT;
  switch (l->kind) {
  case PH_AZ_USER:
  case PH_AZ_AGENT:
    if (l->agent)
      FAIL("this kind has no agent filter");
    break;
  case PH_AZ_TOKEN:
    break;
  case PH_AZ_POLICY:
    if (l->user)
      FAIL("this kind has no user filter");
    break;
  default:
    FAIL("unknown kind");
  }
  if (l->after &&
      !(name_keyed ? az_name_valid(l->after)
                   : az_id_valid(l->after, l->kind == PH_AZ_TOKEN
                                               ? AZ_TOKEN_PREFIX
                                               : AZ_POLICY_PREFIX)))
    FAIL("bad cursor");
  if (l->user && !az_name_valid(l->user))
    FAIL("bad user filter");
  if (l->agent && !az_name_valid(l->agent))
    FAIL("bad agent filter");
  return PH_OK;
}
