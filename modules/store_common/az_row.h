/* SPDX-License-Identifier: BSD-2-Clause */
/* A row of the four authorization tables as a ph_az_record
 * (authz_store.h), for both stores: the columns each kind selects, in
 * one order, and the one decoder of that order. An engine supplies how
 * to read a column of its row (a string, or NULL for SQL NULL; an
 * integer, 0 for NULL). Pure, any thread. */
#ifndef PH_STORE_AZ_ROW_H
#define PH_STORE_AZ_ROW_H

#include <stdint.h>

#include <proxyhost/authz_store.h>

/* What a list or a write's RETURNING selects, per kind. */
#define AZ_USER_COLS "name, owner, enabled, created_at, updated_at"
#define AZ_TOKEN_COLS                                                          \
  "id, user_name, agent, scopes, expires_at, revoked_at, created_at, "         \
  "updated_at, rotated_at"
#define AZ_AGENT_COLS AZ_USER_COLS
#define AZ_POLICY_COLS                                                         \
  "id, agent, subject_kind, subject, host_pattern, port_min, port_max, "       \
  "protocol, created_at, updated_at"

/* An engine's row: its column readers and their argument. */
typedef struct az_row {
  const char *(*str)(void *row, int col);
  int64_t (*i64)(void *row, int col);
  void *row;
} az_row;

/* The row (selected with kind's AZ_*_COLS) into out, zeroed first; the
 * strings are what row->str returned. An unknown kind leaves out empty
 * but for its kind. */
void az_row_record(int kind, const az_row *row, ph_az_record *out);

#endif
