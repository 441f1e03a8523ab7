/* SPDX-License-Identifier: BSD-2-Clause */
/* proxyhostctl's readable output: a record as "field: value" lines, a list
 * as a table, an API error as one line on stderr. Reads the JSON of
 * docs/api/openapi.yaml with modules/lib/json.h. */
#ifndef PH_CTL_PRINT_H
#define PH_CTL_PRINT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/json.h"

/* A parsed answer: its tokens are malloc'd (free(toks)). */
typedef struct ctl_doc {
  json_doc d;
  json_tok *toks;
} ctl_doc;

/* Parses body (depth 16, tokens for any body of len bytes). 0, or -1
 * (not JSON, out of memory) with x->toks NULL. */
int ctl_json_parse(ctl_doc *x, const char *body, size_t len);
/* Value token v (-1: none, "") as text into out: strings as they are,
 * null "-", booleans yes/no, times (a key ending in "_at") in UTC ("-"
 * for 0), arrays joined with ",", objects as "key=value" pairs. */
void ctl_value_text(const json_doc *d, long v, const char *key, char *out,
                    size_t cap);

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
/* ctl_print_list with columns of the caller's after the items' own: the
 * text of extra column c of item row r is extra(arg, r, c, out, cap). At
 * most 16 columns in all. */
typedef void (*ctl_extra_fn)(void *arg, uint32_t row, size_t col, char *out,
                             size_t cap);
int ctl_print_list_ex(FILE *out, const char *body, size_t len,
                      const char *const *item_columns,
                      const char *const *extra_columns, ctl_extra_fn extra,
                      void *arg);
/* {"error": {"code", "message"}} as "error: STATUS CODE: MESSAGE", or the
 * status alone when the body is not that. */
/* Returns 1 when body was a module's {"error": ...}, 0 otherwise (the
 * host's own answer, such as its 404 for a prefix no module serves). */
int ctl_print_error(FILE *err, int status, const char *body, size_t len);
/* 1 with code and message when body is {"error": {"code", "message"}}
 * (each fits its buffer), else 0. */
int ctl_api_error(const char *body, size_t len, char *code, size_t ccap,
                  char *msg, size_t mcap);
/* 1 when body is a JSON object whose key holds the string want. */
int ctl_string_field_is(const char *body, size_t len, const char *key,
                        const char *want);

#endif
