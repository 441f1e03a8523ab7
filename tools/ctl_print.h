/* SPDX-License-Identifier: BSD-2-Clause */
/* proxyhostctl's readable output: a record as "field: value" lines, a list
 * as a table, an API error as one line on stderr. Reads the JSON of
 * docs/api/openapi.yaml with modules/lib/json.h. */
#ifndef PH_CTL_PRINT_H
#define PH_CTL_PRINT_H

#include <stddef.h>
#include <stdio.h>

/* The columns of a list, per collection ("users", "tokens", "agents",
 * "policies"). */
const char *const *ctl_columns(const char *collection);

/* A record, or a create/rotate answer {"token", "bearer", "notice"}: the
 * record's fields, then the bearer and a line saying it will not be shown
 * again. 0, or -1 when body is not such JSON. */
int ctl_print_record(FILE *out, const char *body, size_t len);
/* An extraction state {"proxy_id", "state", "owner"?, "extracted_at"?}:
 * its fields, then, when reclaiming, a line saying that the owner drains
 * the proxy first and how to follow it. 0, or -1 when body is not such
 * JSON. */
int ctl_print_extraction(FILE *out, const char *body, size_t len);
/* {"items": [...], "more", "next_after"}: a table of columns, then a line
 * telling how to see more. 0 or -1. */
int ctl_print_list(FILE *out, const char *body, size_t len,
                   const char *const *columns);
/* {"error": {"code", "message"}} as "error: STATUS CODE: MESSAGE", or the
 * status alone when the body is not that. */
/* Returns 1 when body was a module's {"error": ...}, 0 otherwise (the
 * host's own answer, such as its 404 for a prefix no module serves). */
int ctl_print_error(FILE *err, int status, const char *body, size_t len);
/* 1 when body is a JSON object whose key holds the string want. */
int ctl_string_field_is(const char *body, size_t len, const char *key,
                        const char *want);

#endif
