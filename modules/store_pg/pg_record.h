/* SPDX-License-Identifier: BSD-2-Clause */
/* A row of a list or of a write's RETURNING as a ph_az_record
 * (authz_store.h), in the column order of store_common/az_row.h (which
 * decodes it). The strings point into res. */
#ifndef PH_STORE_PG_RECORD_H
#define PH_STORE_PG_RECORD_H

#include <libpq-fe.h>

#include <proxyhost/authz_store.h>

void rec_read(const PGresult *res, int row, int kind, ph_az_record *out);

#endif
