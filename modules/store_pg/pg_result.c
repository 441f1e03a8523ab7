/* SPDX-License-Identifier: BSD-2-Clause */
/* Reading results (store_pg_int.h, pg_record.h): columns as strings and
 * integers, error states, the revision, and rows as ph_az_record. The
 * strings point into the PGresult, which the request keeps until its
 * callback returned. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pg_record.h"
#include "store_pg_int.h"

const char *res_str(const PGresult *res, int r, int c) {
  if (r >= PQntuples(res) || c >= PQnfields(res) || PQgetisnull(res, r, c))
    return NULL;
  return PQgetvalue(res, r, c);
}

int64_t res_int(const PGresult *res, int r, int c) {
  const char *s = res_str(res, r, c);
  if (!s)
    return 0;
  errno = 0;
  char *end;
  long long v = strtoll(s, &end, 10);
  return errno || end == s || *end ? 0 : (int64_t)v;
}

const char *res_state(const PGresult *res) {
  const char *s = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
  return s ? s : "";
}

az_rev_read res_revision(const PGresult *res, int64_t *value) {
  *value = 0;
  if (!res || PQresultStatus(res) != PGRES_TUPLES_OK)
    return AZ_REV_READ_FAILED;
  if (PQntuples(res) < 1)
    return AZ_REV_READ_MISSING;
  const char *s = res_str(res, 0, 0);
  if (!s)
    return AZ_REV_READ_BAD;
  errno = 0;
  char *end;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end || v < 1)
    return AZ_REV_READ_BAD; /* 0, negative (wrapped), or beyond 63 bits */
  *value = (int64_t)v;
  return AZ_REV_READ_OK;
}

void rec_read(const PGresult *res, int r, int kind, ph_az_record *out) {
  memset(out, 0, sizeof(*out));
  out->kind = kind;
  switch (kind) {
  case PH_AZ_USER:
  case PH_AZ_AGENT: {
    /* users and agents have the same columns */
    ph_az_user *u = &out->u.user;
    u->name = res_str(res, r, 0);
    u->owner = res_str(res, r, 1);
    u->enabled = (int)res_int(res, r, 2);
    u->created_at = res_int(res, r, 3);
    u->updated_at = res_int(res, r, 4);
    if (kind == PH_AZ_AGENT) {
      ph_az_user tmp = *u;
      memset(&out->u, 0, sizeof(out->u));
      out->u.agent.name = tmp.name;
      out->u.agent.owner = tmp.owner;
      out->u.agent.enabled = tmp.enabled;
      out->u.agent.created_at = tmp.created_at;
      out->u.agent.updated_at = tmp.updated_at;
    }
    break;
  }
  case PH_AZ_TOKEN: {
    ph_az_token *t = &out->u.token;
    t->id = res_str(res, r, 0);
    t->user = res_str(res, r, 1);
    t->agent = res_str(res, r, 2);
    t->scopes = (uint32_t)res_int(res, r, 3);
    t->expires_at = res_int(res, r, 4);
    t->revoked_at = res_int(res, r, 5);
    t->created_at = res_int(res, r, 6);
    t->updated_at = res_int(res, r, 7);
    t->rotated_at = res_int(res, r, 8);
    break;
  }
  case PH_AZ_POLICY: {
    ph_az_policy *p = &out->u.policy;
    p->id = res_str(res, r, 0);
    p->agent = res_str(res, r, 1);
    p->subject_kind = (int)res_int(res, r, 2);
    p->subject = res_str(res, r, 3);
    p->host_pattern = res_str(res, r, 4);
    p->port_min = (uint16_t)res_int(res, r, 5);
    p->port_max = (uint16_t)res_int(res, r, 6);
    p->protocol = (uint8_t)res_int(res, r, 7);
    p->created_at = res_int(res, r, 8);
    p->updated_at = res_int(res, r, 9);
    break;
  }
  default:
    break;
  }
}
