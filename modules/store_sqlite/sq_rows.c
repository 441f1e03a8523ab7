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

/* The reader az_row_record calls: a statement's columns, strings copied
 * into the arena. */
struct sq_row {
  sqlite3_stmt *st;
  sq_arena **a;
};

static const char *col_str(void *row, int col) {
  struct sq_row *r = row;
  return sq_arena_col(r->a, r->st, col);
}

static int64_t col_i64(void *row, int col) {
  return sqlite3_column_int64(((struct sq_row *)row)->st, col);
}

void sq_row_record(int kind, sqlite3_stmt *st, sq_arena **a,
                   ph_az_record *rec) {
  struct sq_row r = {st, a};
  az_row row = {col_str, col_i64, &r};
  az_row_record(kind, &row, rec);
}
