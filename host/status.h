/* SPDX-License-Identifier: BSD-2-Clause */
/* Status panels (ABI 1.7): the registry of every module instance's panels
 * and the host's own, the ph_panel builder behind ph_api.status_field,
 * status_field_int, status_table and status_row (with the host's paging),
 * and the reading of a panel set for GET /v1/status (status_json.c) and
 * the status page (ui_page.c). Loop thread only.
 *
 * A panel is built when it is read: its fill runs, writing fields and
 * tables into a ph_panel; the reader renders it and frees it before the
 * next panel is filled, so at most one panel's rows are held at once:
 * PH_STATUS_FIELDS_MAX fields, PH_STATUS_TABLES_MAX tables of at most
 * STATUS_ROWS_MAX rows of PH_STATUS_COLUMNS_MAX cells of
 * PH_STATUS_VALUE_MAX bytes. Every text is cut to PH_STATUS_VALUE_MAX
 * bytes on a UTF-8 boundary, and any byte that is not part of valid UTF-8
 * becomes '?', so both renderers get valid UTF-8. */
#ifndef PH_STATUS_H
#define PH_STATUS_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/host.h>

#include "buf.h"

/* Whole-process bounds: at most this many panels (PH_STATUS_PANELS_MAX
 * per instance over at most 64 instances plus the host's), and at most
 * this many rows per page (the upper bound of [admin] status_rows). */
#define STATUS_PANELS_MAX (8 * 65)
#define STATUS_ROWS_MAX 500
#define STATUS_OFFSET_MAX 1000000000u

typedef struct ph_panels ph_panels;

ph_panels *status_new(void);
void status_free(ph_panels *s);

/* api->status_register's checks and registration. owner is the module
 * instance (NULL for the host's own panels); instance and module name it
 * ("tunnel_server.eu", "tunnel_server"; copied). PH_OK or a ph_status,
 * the reason in err. */
int status_add(ph_panels *s, const void *owner, const char *instance,
               const char *module, const char *name, const char *title,
               ph_panel_fn fill, void *arg, ph_buf *err);
/* Drops every panel of owner (its module is being destroyed). */
void status_drop(ph_panels *s, const void *owner);

/* What a reader asks for: NULL instance, panel or table is all of them.
 * The paging applies to the selected table, or with no table selected to
 * every table's first page (offset 0, limit rows, no key). */
typedef struct status_query {
  const char *instance;
  const char *panel;
  const char *table;
  uint32_t offset;
  uint32_t limit; /* 1..STATUS_ROWS_MAX */
  const char *key; /* NULL: every row */
  size_t key_len;
} status_query;

/* The ph_api.status_* implementations (any ph_panel, inside a fill). */
int status_api_field(ph_panel *p, const char *name, const char *value);
int status_api_field_int(ph_panel *p, const char *name, int64_t value);
int status_api_table(ph_panel *p, const char *name,
                     const char *const *columns, uint32_t n_columns,
                     uint32_t num_mask);
int status_api_row(ph_panel *p, const char *const *cells, uint32_t n_cells);

/* ---- reading a built panel ------------------------------------------- */

enum status_kind { STATUS_TEXT, STATUS_INT, STATUS_NULL };

typedef struct status_field_v {
  char name[PH_STATUS_NAME_MAX + 1];
  int kind;      /* status_kind */
  char *text;    /* STATUS_TEXT */
  int64_t num;   /* STATUS_INT */
} status_field_v;

typedef struct status_table_v {
  char name[PH_STATUS_NAME_MAX + 1];
  uint32_t n_columns;
  uint32_t num_mask;
  char columns[PH_STATUS_COLUMNS_MAX][PH_STATUS_NAME_MAX + 1];
  char **cells; /* n_rows * n_columns; "" for an empty cell */
  uint32_t n_rows;
  uint32_t offset; /* the page's first row's index */
  int more;        /* a row was offered after the page was full */
} status_table_v;

/* One panel as its fill wrote it (after the paging). */
typedef struct status_panel_v {
  const char *instance, *module, *name, *title;
  status_field_v fields[PH_STATUS_FIELDS_MAX];
  uint32_t n_fields;
  status_table_v tables[PH_STATUS_TABLES_MAX];
  uint32_t n_tables;
} status_panel_v;

/* Calls fn for every panel the query selects, in order (the host's
 * first, then instances and panels in registration order): each is
 * filled, handed to fn, and freed. fn returns 0 to go on, -1 to stop.
 * Returns 200; 404 when an instance, panel or table named in the query
 * does not exist (fn not called for it: a query with a table has one
 * panel, built before fn sees it); 503 out of memory. */
int status_walk(ph_panels *s, const status_query *q,
                int (*fn)(void *arg, const status_panel_v *p, int first),
                void *arg);

/* Parses "/v1/status[/INSTANCE[/PANEL[/TABLE]]]" after its prefix (rest
 * is what follows "/v1/status" or "/ui", "" or "/..."), and the query
 * ("offset=N&limit=M&key=K", percent-decoded, keys only with a table)
 * into q, with the strings in store (cap bytes). 0, 400 (bad query) or
 * 404 (bad path). rows is [admin] status_rows (the default and the
 * largest limit). */
int status_parse(const char *rest, size_t rest_len, const char *query,
                 size_t query_len, uint32_t rows, status_query *q,
                 char *store, size_t cap);

/* Copies src into dst (cap > 0 bytes), at most PH_STATUS_VALUE_MAX bytes
 * and cap - 1, cut on a UTF-8 boundary, invalid bytes as '?'. Returns the
 * length written (dst NUL-terminated). Exposed for the tests. */
size_t status_clean(char *dst, size_t cap, const char *src);

#endif
