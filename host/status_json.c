/* SPDX-License-Identifier: BSD-2-Clause */
/* The JSON of GET /v1/status (docs/openapi.yaml, status-spec): the
 * panels status_walk builds, each written with modules/lib/json.h's
 * writer into a buffer sized for that panel, then appended to the
 * document. See status_json.h. */
#include "status_json.h"

#include <stdlib.h>
#include <string.h>

#include "lib/json.h"

typedef struct jctx {
  ph_buf *out;
  const char *instance; /* the instance whose "panels" array is open */
} jctx;

/* An upper bound of one panel's JSON: every byte of text escaped to at
 * most 6 ("\u00XX"), plus the punctuation. */
static size_t panel_bound(const status_panel_v *p) {
  size_t n = 256 + 6 * strlen(p->title);
  for (uint32_t i = 0; i < p->n_fields; i++)
    n += 64 + strlen(p->fields[i].name) +
         (p->fields[i].text ? 6 * strlen(p->fields[i].text) : 24);
  for (uint32_t i = 0; i < p->n_tables; i++) {
    const status_table_v *t = &p->tables[i];
    n += 128 + t->n_columns * (PH_STATUS_NAME_MAX + 4);
    for (size_t k = 0; k < (size_t)t->n_rows * t->n_columns; k++)
      n += 8 + 6 * strlen(t->cells[k]);
  }
  return n;
}

static void write_cell(json_w *w, const char *cell, int numeric) {
  if (!numeric)
    json_w_str(w, cell);
  else if (!*cell)
    json_w_null(w);
  else
    json_w_int(w, strtoll(cell, NULL, 10)); /* checked by status_row */
}

static void write_panel(json_w *w, const status_panel_v *p) {
  json_w_obj(w);
  json_w_kstr(w, "name", p->name);
  json_w_kstr(w, "title", p->title);
  json_w_key(w, "fields");
  json_w_obj(w);
  for (uint32_t i = 0; i < p->n_fields; i++) {
    const status_field_v *f = &p->fields[i];
    json_w_key(w, f->name);
    if (f->kind == STATUS_INT)
      json_w_int(w, f->num);
    else
      json_w_str(w, f->kind == STATUS_TEXT ? f->text : NULL);
  }
  json_w_obj_end(w);
  json_w_key(w, "tables");
  json_w_arr(w);
  for (uint32_t i = 0; i < p->n_tables; i++) {
    const status_table_v *t = &p->tables[i];
    json_w_obj(w);
    json_w_kstr(w, "name", t->name);
    json_w_key(w, "columns");
    json_w_arr(w);
    for (uint32_t c = 0; c < t->n_columns; c++)
      json_w_str(w, t->columns[c]);
    json_w_arr_end(w);
    json_w_key(w, "rows");
    json_w_arr(w);
    for (uint32_t r = 0; r < t->n_rows; r++) {
      json_w_arr(w);
      for (uint32_t c = 0; c < t->n_columns; c++)
        write_cell(w, t->cells[(size_t)r * t->n_columns + c],
                   (t->num_mask & PH_STATUS_COL_NUM(c)) != 0);
      json_w_arr_end(w);
    }
    json_w_arr_end(w);
    json_w_kuint(w, "offset", t->offset);
    json_w_kbool(w, "more", t->more);
    json_w_obj_end(w);
  }
  json_w_arr_end(w);
  json_w_obj_end(w);
}

/* The instance's head: {"instance": ..., "module": ..., "panels": [ */
static int instance_head(ph_buf *out, const status_panel_v *p) {
  char buf[512];
  json_w w;
  json_w_init(&w, buf, sizeof(buf));
  json_w_obj(&w);
  json_w_kstr(&w, "instance", p->instance);
  json_w_kstr(&w, "module", p->module);
  json_w_obj_end(&w);
  long n = json_w_finish(&w);
  if (n < 2)
    return -1;
  buf_append(out, buf, (size_t)n - 1); /* without the closing brace */
  return buf_puts(out, ",\"panels\":[");
}

static int on_panel(void *arg, const status_panel_v *p, int first) {
  jctx *j = arg;
  if (!j->instance || strcmp(j->instance, p->instance) != 0) {
    if (j->instance)
      buf_puts(j->out, "]}");
    if (!first)
      buf_puts(j->out, ",");
    if (instance_head(j->out, p) < 0)
      return -1;
    j->instance = p->instance;
  } else {
    buf_puts(j->out, ",");
  }
  size_t cap = panel_bound(p);
  char *b = malloc(cap);
  if (!b)
    return -1;
  json_w w;
  json_w_init(&w, b, cap);
  write_panel(&w, p);
  long n = json_w_finish(&w);
  int rc = n < 0 ? -1 : buf_append(j->out, b, (size_t)n);
  free(b);
  return rc < 0 || j->out->overflow ? -1 : 0;
}

int status_json(ph_panels *s, const status_query *q, ph_buf *out) {
  jctx j = {out, NULL};
  buf_puts(out, "{\"status_version\":1,\"instances\":[");
  /* The instance names live in the registry: they outlast each panel. */
  int rc = status_walk(s, q, on_panel, &j);
  if (rc != 200)
    return rc;
  if (j.instance)
    buf_puts(out, "]}");
  buf_puts(out, "]}\n");
  return out->overflow ? 503 : 200;
}
