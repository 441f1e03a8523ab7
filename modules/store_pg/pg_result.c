/* SPDX-License-Identifier: BSD-2-Clause */
/* Reading results (store_pg_int.h, pg_record.h): columns as strings and
 * integers, error states, the revision, and rows as ph_az_record. The
 * strings point into the PGresult, which the request keeps until its
 * callback returned. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pg_record.h"
#include "store_common/az_row.h"
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

/* The reader az_row_record calls: row r of res. */
struct pg_row {
  const PGresult *res;
  int r;
};

static const char *col_str(void *row, int col) {
  const struct pg_row *p = row;
  return res_str(p->res, p->r, col);
}

static int64_t col_i64(void *row, int col) {
  const struct pg_row *p = row;
  return res_int(p->res, p->r, col);
}

void rec_read(const PGresult *res, int r, int kind, ph_az_record *out) {
  struct pg_row p = {res, r};
  az_row row = {col_str, col_i64, &p};
  az_row_record(kind, &row, out);
}
