/* SPDX-License-Identifier: BSD-2-Clause */
/* See api_json.h. */
#include "api_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <proxyhost/connector.h>

static const char *const scope_names[] = {"stream", "agent"};

uint32_t api_scope_bit(const char *name) {
  for (size_t i = 0; i < 2; i++)
    if (strcmp(name, scope_names[i]) == 0)
      return 1u << i;
  return 0;
}

/* The fields a body may carry, per kind and op. */
static const char *const user_create[] = {"name", "owner", "enabled", NULL};
static const char *const user_update[] = {"owner", "enabled", NULL};
static const char *const token_create[] = {"user", "agent", "scopes",
                                           "expires_at", NULL};
static const char *const token_update[] = {"scopes", "expires_at", NULL};
static const char *const agent_create[] = {"name", "owner", "enabled", NULL};
static const char *const agent_update[] = {"owner", "enabled", NULL};
static const char *const policy_fields[] = {
    "agent", "subject_kind", "subject", "host_pattern",
    "port_min", "port_max", "protocol", NULL};
static const char *const policy_update[] = {
    "subject_kind", "subject", "host_pattern",
    "port_min", "port_max", "protocol", NULL};

static const char *const *allowed(int kind, api_op op) {
  int create = op == OP_CREATE;
  switch (kind) {
  case PH_AZ_USER:
    return create ? user_create : user_update;
  case PH_AZ_TOKEN:
    return create ? token_create : token_update;
  case PH_AZ_AGENT:
    return create ? agent_create : agent_update;
  case PH_AZ_POLICY:
    return create ? policy_fields : policy_update;
  }
  return NULL;
}

static int listed(const char *const *list, const json_doc *d, size_t k) {
  for (; *list; list++)
    if (json_str_eq(d, k, *list))
      return 1;
  return 0;
}

typedef struct reader {
  const json_doc *d;
  const char **msg;
} reader;

/* A string field into out: 1 (present), 0 (absent), -1 (bad). null is
 * accepted only when nullable, and then reads as "" with 1. */
static int get_str(reader *r, const char *key, char *out, size_t cap,
                   int nullable) {
  long v = json_get(r->d, 0, key);
  if (v < 0)
    return 0;
  if (nullable && json_type_of(r->d, (size_t)v) == JSON_NULL) {
    out[0] = '\0';
    return 1;
  }
  if (json_str(r->d, (size_t)v, out, cap) < 1) {
    *r->msg = nullable ? "a field must be a non-empty string or null, "
                         "within its length bound"
                       : "a field must be a non-empty string within its "
                         "length bound";
    return -1;
  }
  return 1;
}

static int get_bool(reader *r, const char *key, int *out) {
  long v = json_get(r->d, 0, key);
  if (v < 0)
    return 0;
  if (json_bool(r->d, (size_t)v, out) < 0) {
    *r->msg = "enabled must be true or false";
    return -1;
  }
  return 1;
}

static int get_int(reader *r, const char *key, int64_t lo, int64_t hi,
                   int64_t *out) {
  long v = json_get(r->d, 0, key);
  if (v < 0)
    return 0;
  if (json_int(r->d, (size_t)v, out) < 0 || *out < lo || *out > hi) {
    *r->msg = "a number is not an integer or out of its bounds";
    return -1;
  }
  return 1;
}

static int get_scopes(reader *r, uint32_t *out) {
  long v = json_get(r->d, 0, "scopes");
  if (v < 0)
    return 0;
  const json_doc *d = r->d;
  if (json_type_of(d, (size_t)v) != JSON_ARRAY || d->toks[v].size == 0) {
    *r->msg = "scopes must be a non-empty array of \"stream\" and \"agent\"";
    return -1;
  }
  *out = 0;
  size_t k = (size_t)v + 1;
  for (uint32_t i = 0; i < d->toks[v].size; i++, k = d->toks[k].next) {
    char s[16];
    uint32_t bit = json_str(d, k, s, sizeof(s)) > 0 ? api_scope_bit(s) : 0;
    if (!bit) {
      *r->msg = "scopes must be a non-empty array of \"stream\" and "
                "\"agent\"";
      return -1;
    }
    *out |= bit;
  }
  return 1;
}

static const char *nz(const char *s) { return s[0] ? s : NULL; }

static int read_user_agent(reader *r, api_body *b, int kind, api_op op,
                           const char *key) {
  ph_az_write *w = &b->w;
  int enabled = 1, has_owner, has_enabled;
  if (op == OP_CREATE) {
    if (get_str(r, "name", b->name, sizeof(b->name), 0) != 1) {
      if (!*r->msg)
        *r->msg = "name is required";
      return -1;
    }
  } else {
    snprintf(b->name, sizeof(b->name), "%s", key);
  }
  if ((has_owner = get_str(r, "owner", b->owner, sizeof(b->owner),
                           kind == PH_AZ_USER)) < 0 ||
      (has_enabled = get_bool(r, "enabled", &enabled)) < 0)
    return -1;
  if (op == OP_CREATE && kind == PH_AZ_AGENT && !has_owner) {
    *r->msg = "owner is required";
    return -1;
  }
  if (op == OP_UPDATE) {
    w->fields = (has_owner ? PH_AZ_F_OWNER : 0u) |
                (has_enabled ? PH_AZ_F_ENABLED : 0u);
  }
  if (kind == PH_AZ_USER) {
    w->rec.u.user.name = b->name;
    w->rec.u.user.owner = nz(b->owner);
    w->rec.u.user.enabled = enabled;
  } else {
    w->rec.u.agent.name = b->name;
    w->rec.u.agent.owner = nz(b->owner);
    w->rec.u.agent.enabled = enabled;
  }
  return 0;
}

static int read_token(reader *r, api_body *b, api_op op, const char *key) {
  ph_az_token *t = &b->w.rec.u.token;
  int64_t exp = 0;
  uint32_t scopes = 0;
  int has_exp, has_scopes;
  snprintf(b->id, sizeof(b->id), "%s", key);
  t->id = b->id;
  if (op == OP_CREATE) {
    if (get_str(r, "user", b->user, sizeof(b->user), 0) != 1) {
      if (!*r->msg)
        *r->msg = "user is required";
      return -1;
    }
    if (get_str(r, "agent", b->agent, sizeof(b->agent), 1) < 0)
      return -1;
    t->user = b->user;
    t->agent = nz(b->agent);
    t->id = NULL;
  }
  if ((has_scopes = get_scopes(r, &scopes)) < 0 ||
      (has_exp = get_int(r, "expires_at", 0, INT64_MAX / 2, &exp)) < 0)
    return -1;
  if (op == OP_CREATE && !has_scopes)
    scopes = b->agent[0] ? PH_AZ_SCOPE_AGENT : PH_AZ_SCOPE_STREAM;
  t->scopes = scopes;
  t->expires_at = exp;
  if (op == OP_UPDATE)
    b->w.fields = (has_scopes ? PH_AZ_F_SCOPES : 0u) |
                  (has_exp ? PH_AZ_F_EXPIRES : 0u);
  return 0;
}

static int read_policy(reader *r, api_body *b, api_op op, const char *key) {
  ph_az_policy *p = &b->w.rec.u.policy;
  char kind[8] = "", proto[8] = "tcp";
  int64_t lo = 0, hi = 0;
  int has_kind, has_subject, has_host, has_lo, has_hi, has_proto;
  snprintf(b->id, sizeof(b->id), "%s", key);
  p->id = op == OP_CREATE ? NULL : b->id;
  if (op == OP_CREATE &&
      get_str(r, "agent", b->agent, sizeof(b->agent), 0) != 1) {
    if (!*r->msg)
      *r->msg = "agent is required";
    return -1;
  }
  if ((has_kind = get_str(r, "subject_kind", kind, sizeof(kind), 0)) < 0 ||
      (has_subject = get_str(r, "subject", b->subject, sizeof(b->subject),
                             0)) < 0 ||
      (has_host = get_str(r, "host_pattern", b->host, sizeof(b->host), 0)) <
          0 ||
      (has_lo = get_int(r, "port_min", 1, 65535, &lo)) < 0 ||
      (has_hi = get_int(r, "port_max", 1, 65535, &hi)) < 0 ||
      (has_proto = get_str(r, "protocol", proto, sizeof(proto), 0)) < 0)
    return -1;
  if (has_kind != has_subject || has_lo != has_hi) {
    *r->msg = "subject_kind and subject go together, and so do port_min "
              "and port_max";
    return -1;
  }
  if (op == OP_CREATE && (!has_kind || !has_host || !has_lo)) {
    *r->msg = "subject_kind, subject, host_pattern, port_min and port_max "
              "are required";
    return -1;
  }
  if (has_kind) {
    if (strcmp(kind, "token") == 0) {
      p->subject_kind = PH_AZ_SUBJECT_TOKEN;
    } else if (strcmp(kind, "user") == 0) {
      p->subject_kind = PH_AZ_SUBJECT_USER;
    } else {
      *r->msg = "subject_kind must be \"token\" or \"user\"";
      return -1;
    }
  }
  if (strcmp(proto, "tcp") != 0) {
    *r->msg = "protocol must be \"tcp\"";
    return -1;
  }
  p->agent = op == OP_CREATE ? b->agent : NULL;
  p->subject = has_subject ? b->subject : NULL;
  p->host_pattern = has_host ? b->host : NULL;
  p->port_min = (uint16_t)lo;
  p->port_max = (uint16_t)hi;
  p->protocol = PH_PROTO_TCP;
  if (op == OP_UPDATE)
    b->w.fields = (has_kind ? PH_AZ_F_SUBJECT : 0u) |
                  (has_host ? PH_AZ_F_HOST : 0u) |
                  (has_lo ? PH_AZ_F_PORTS : 0u) |
                  (has_proto ? PH_AZ_F_PROTOCOL : 0u);
  return 0;
}

/* The record a delete, rotate or revoke names. */
static void name_only(api_body *b, int kind, const char *key) {
  snprintf(b->id, sizeof(b->id), "%s", key);
  snprintf(b->name, sizeof(b->name), "%s", key);
  switch (kind) {
  case PH_AZ_USER:
    b->w.rec.u.user.name = b->name;
    break;
  case PH_AZ_AGENT:
    b->w.rec.u.agent.name = b->name;
    break;
  case PH_AZ_TOKEN:
    b->w.rec.u.token.id = b->id;
    break;
  case PH_AZ_POLICY:
    b->w.rec.u.policy.id = b->id;
    break;
  }
}

int api_body_parse(api_body *b, int kind, api_op op, const char *key,
                   const char *body, size_t len, const char **msg) {
  memset(b, 0, sizeof(*b));
  *msg = NULL;
  b->w.size = sizeof(b->w);
  b->w.rec.kind = kind;
  switch (op) {
  case OP_CREATE:
    b->w.action = PH_AZ_CREATE;
    break;
  case OP_UPDATE:
  case OP_REVOKE:
    b->w.action = PH_AZ_UPDATE;
    break;
  case OP_DELETE:
    b->w.action = PH_AZ_DELETE;
    break;
  case OP_ROTATE:
    b->w.action = PH_AZ_ROTATE;
    break;
  default:
    *msg = "not a write";
    return -1;
  }
  if (op == OP_DELETE || op == OP_ROTATE || op == OP_REVOKE) {
    /* No fields: an empty body or an empty object. */
    if (len > 0) {
      json_tok toks[2];
      json_doc d;
      if (json_parse(&d, body, len, toks, 2, 1, NULL) != JSON_OK ||
          json_type_of(&d, 0) != JSON_OBJECT || d.toks[0].size != 0) {
        *msg = "this call takes no body (or {})";
        return -1;
      }
    }
    name_only(b, kind, key);
    if (op == OP_REVOKE)
      b->w.fields = PH_AZ_F_REVOKED;
    return 0;
  }
  json_tok toks[API_BODY_TOKENS];
  json_doc d;
  int rc = len ? json_parse(&d, body, len, toks, API_BODY_TOKENS,
                            API_BODY_DEPTH, NULL)
               : JSON_ESYNTAX;
  if (rc != JSON_OK) {
    *msg = rc == JSON_EDUP     ? "a field appears twice"
           : rc == JSON_EUTF8  ? "the body is not valid UTF-8 JSON"
           : rc == JSON_ETOKENS || rc == JSON_EDEPTH
               ? "the body is too large or too deeply nested"
               : "the body is not a JSON object";
    return -1;
  }
  if (json_type_of(&d, 0) != JSON_OBJECT) {
    *msg = "the body is not a JSON object";
    return -1;
  }
  const char *const *ok_keys = allowed(kind, op);
  size_t k = 1;
  for (uint32_t m = 0; m < d.toks[0].size; m++, k = d.toks[k + 1].next)
    if (!listed(ok_keys, &d, k)) {
      *msg = "the body has a field this call does not take";
      return -1;
    }
  reader r = {&d, msg};
  switch (kind) {
  case PH_AZ_USER:
  case PH_AZ_AGENT:
    rc = read_user_agent(&r, b, kind, op, key);
    break;
  case PH_AZ_TOKEN:
    rc = read_token(&r, b, op, key);
    break;
  case PH_AZ_POLICY:
    rc = read_policy(&r, b, op, key);
    break;
  default:
    rc = -1;
  }
  if (rc == 0 && op == OP_UPDATE && b->w.fields == 0) {
    *msg = "the body changes nothing";
    return -1;
  }
  return rc;
}

/* ---- output ------------------------------------------------------- */

void api_write_record(json_w *w, const ph_az_record *rec) {
  json_w_obj(w);
  switch (rec->kind) {
  case PH_AZ_USER:
  case PH_AZ_AGENT: {
    const ph_az_user *u = &rec->u.user;
    const ph_az_agent *a = &rec->u.agent;
    int user = rec->kind == PH_AZ_USER;
    json_w_kstr(w, "name", user ? u->name : a->name);
    json_w_kstr(w, "owner", user ? u->owner : a->owner);
    json_w_kbool(w, "enabled", user ? u->enabled : a->enabled);
    json_w_kint(w, "created_at", user ? u->created_at : a->created_at);
    json_w_kint(w, "updated_at", user ? u->updated_at : a->updated_at);
    break;
  }
  case PH_AZ_TOKEN: {
    const ph_az_token *t = &rec->u.token;
    json_w_kstr(w, "id", t->id);
    json_w_kstr(w, "user", t->user);
    json_w_kstr(w, "agent", t->agent);
    json_w_key(w, "scopes");
    json_w_arr(w);
    for (size_t i = 0; i < 2; i++)
      if (t->scopes & (1u << i))
        json_w_str(w, scope_names[i]);
    json_w_arr_end(w);
    json_w_kint(w, "expires_at", t->expires_at);
    json_w_kint(w, "revoked_at", t->revoked_at);
    json_w_kint(w, "created_at", t->created_at);
    json_w_kint(w, "updated_at", t->updated_at);
    json_w_kint(w, "rotated_at", t->rotated_at);
    break;
  }
  case PH_AZ_POLICY: {
    const ph_az_policy *p = &rec->u.policy;
    json_w_kstr(w, "id", p->id);
    json_w_kstr(w, "agent", p->agent);
    json_w_kstr(w, "subject_kind",
                p->subject_kind == PH_AZ_SUBJECT_USER ? "user" : "token");
    json_w_kstr(w, "subject", p->subject);
    json_w_kstr(w, "host_pattern", p->host_pattern);
    json_w_kint(w, "port_min", p->port_min);
    json_w_kint(w, "port_max", p->port_max);
    json_w_kstr(w, "protocol", "tcp");
    json_w_kint(w, "created_at", p->created_at);
    json_w_kint(w, "updated_at", p->updated_at);
    break;
  }
  }
  json_w_obj_end(w);
}

/* ---- list queries ------------------------------------------------- */

static int query_value(const char *v, size_t n, char *out, size_t cap) {
  if (n == 0 || n >= cap)
    return -1;
  for (size_t i = 0; i < n; i++) {
    char c = v[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
          c == '_' || c == '-'))
      return -1;
  }
  memcpy(out, v, n);
  out[n] = '\0';
  return 0;
}

int api_query_parse(api_query *r, const char *q, const char **msg) {
  ph_az_list *l = &r->list;
  memset(r, 0, sizeof(*r));
  l->size = sizeof(*l);
  l->kind = 0;
  int seen = 0;
  l->limit = API_LIST_DEFAULT;
  api_qpair kv;
  int more;
  while ((more = api_query_next(&q, &kv)) > 0) {
    int bit = 0, bad = 0;
    const char *v = kv.v;
    size_t vl = kv.vl;
    if (api_qpair_is(&kv, "after")) {
      bit = 1, bad = query_value(v, vl, r->after, sizeof(r->after));
      l->after = r->after;
    } else if (api_qpair_is(&kv, "limit")) {
      char num[8];
      bit = 2, bad = query_value(v, vl, num, sizeof(num));
      char *end;
      long x = bad ? 0 : strtol(num, &end, 10);
      if (bad || *end || x < 1 || x > PH_AZ_LIST_MAX || num[0] == '0')
        bad = 1;
      l->limit = (uint32_t)x;
    } else if (api_qpair_is(&kv, "user")) {
      bit = 4, bad = query_value(v, vl, r->user, sizeof(r->user));
      l->user = r->user;
    } else if (api_qpair_is(&kv, "agent")) {
      bit = 8, bad = query_value(v, vl, r->agent, sizeof(r->agent));
      l->agent = r->agent;
    } else {
      *msg = "unknown query parameter: the list takes after, limit, user "
             "and agent";
      return -1;
    }
    if (bad || (seen & bit)) {
      *msg = "bad query parameter: after, user and agent are names or "
             "ids, limit 1..1000, each at most once";
      return -1;
    }
    seen |= bit;
  }
  if (more < 0) {
    *msg = "a query parameter has no value";
    return -1;
  }
  return 0;
}

