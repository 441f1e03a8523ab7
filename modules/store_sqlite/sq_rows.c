/* SPDX-License-Identifier: BSD-2-Clause */
/* Rows of the four tables as authz_store.h records (store_sqlite.h), for
 * the record a write returns and the pages a list returns. */
#include <string.h>

#include "store_sqlite.h"

const char *sq_table(int kind) {
  switch (kind) {
  case PH_AZ_USER:
    return "users";
  case PH_AZ_TOKEN:
    return "service_tokens";
  case PH_AZ_AGENT:
    return "agents";
  default:
    return "agent_policies";
  }
}

const char *sq_key_col(int kind) {
  return kind == PH_AZ_USER || kind == PH_AZ_AGENT ? "name" : "id";
}

const char *sq_cols(int kind) {
  switch (kind) {
  case PH_AZ_USER:
    return SQ_USER_COLS;
  case PH_AZ_TOKEN:
    return SQ_TOKEN_COLS;
  case PH_AZ_AGENT:
    return SQ_AGENT_COLS;
  default:
    return SQ_POLICY_COLS;
  }
}

void sq_row_record(int kind, sqlite3_stmt *st, sq_arena **a,
                   ph_az_record *rec) {
  memset(rec, 0, sizeof(*rec));
  rec->kind = kind;
  switch (kind) {
  case PH_AZ_USER:
  case PH_AZ_AGENT: {
    /* The same columns: name, owner, enabled, created_at, updated_at. */
    ph_az_user u = {.name = sq_arena_col(a, st, 0),
                    .owner = sq_arena_col(a, st, 1),
                    .enabled = sqlite3_column_int(st, 2) == 1,
                    .created_at = sqlite3_column_int64(st, 3),
                    .updated_at = sqlite3_column_int64(st, 4)};
    if (kind == PH_AZ_USER) {
      rec->u.user = u;
    } else {
      rec->u.agent.name = u.name;
      rec->u.agent.owner = u.owner;
      rec->u.agent.enabled = u.enabled;
      rec->u.agent.created_at = u.created_at;
      rec->u.agent.updated_at = u.updated_at;
    }
    return;
  }
  case PH_AZ_TOKEN: {
    ph_az_token *t = &rec->u.token;
    t->id = sq_arena_col(a, st, 0);
    t->user = sq_arena_col(a, st, 1);
    t->agent = sq_arena_col(a, st, 2);
    t->scopes = (uint32_t)sqlite3_column_int64(st, 3);
    t->expires_at = sqlite3_column_int64(st, 4);
    t->revoked_at = sqlite3_column_int64(st, 5);
    t->created_at = sqlite3_column_int64(st, 6);
    t->updated_at = sqlite3_column_int64(st, 7);
    t->rotated_at = sqlite3_column_int64(st, 8);
    return;
  }
  default: {
    ph_az_policy *p = &rec->u.policy;
    p->id = sq_arena_col(a, st, 0);
    p->agent = sq_arena_col(a, st, 1);
    p->subject_kind = sqlite3_column_int(st, 2);
    p->subject = sq_arena_col(a, st, 3);
    p->host_pattern = sq_arena_col(a, st, 4);
    p->port_min = (uint16_t)sqlite3_column_int(st, 5);
    p->port_max = (uint16_t)sqlite3_column_int(st, 6);
    p->protocol = (uint8_t)sqlite3_column_int(st, 7);
    p->created_at = sqlite3_column_int64(st, 8);
    p->updated_at = sqlite3_column_int64(st, 9);
    return;
  }
  }
}
