/* SPDX-License-Identifier: BSD-2-Clause */
/* Rows as records (az_row.h). */
#include "az_row.h"

#include <string.h>

#define S(c) row->str(row->row, (c))
#define I(c) row->i64(row->row, (c))

void az_row_record(int kind, const az_row *row, ph_az_record *out) {
  memset(out, 0, sizeof(*out));
  out->kind = kind;
  switch (kind) {
  case PH_AZ_USER:
  case PH_AZ_AGENT: {
    /* The same columns: name, owner, enabled, created_at, updated_at. */
    ph_az_user u = {.name = S(0),
                    .owner = S(1),
                    .enabled = I(2) == 1,
                    .created_at = I(3),
                    .updated_at = I(4)};
    if (kind == PH_AZ_USER) {
      out->u.user = u;
    } else {
      out->u.agent.name = u.name;
      out->u.agent.owner = u.owner;
      out->u.agent.enabled = u.enabled;
      out->u.agent.created_at = u.created_at;
      out->u.agent.updated_at = u.updated_at;
    }
    return;
  }
  case PH_AZ_TOKEN: {
    ph_az_token *t = &out->u.token;
    t->id = S(0);
    t->user = S(1);
    t->agent = S(2);
    t->scopes = (uint32_t)I(3);
    t->expires_at = I(4);
    t->revoked_at = I(5);
    t->created_at = I(6);
    t->updated_at = I(7);
    t->rotated_at = I(8);
    return;
  }
  case PH_AZ_POLICY: {
    ph_az_policy *p = &out->u.policy;
    p->id = S(0);
    p->agent = S(1);
    p->subject_kind = (int)I(2);
    p->subject = S(3);
    p->host_pattern = S(4);
    p->port_min = (uint16_t)I(5);
    p->port_max = (uint16_t)I(6);
    p->protocol = (uint8_t)I(7);
    p->created_at = I(8);
    p->updated_at = I(9);
    return;
  }
  default:
    return;
  }
}
