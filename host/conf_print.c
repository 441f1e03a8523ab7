/* SPDX-License-Identifier: BSD-2-Clause */
/* Showing the effective configuration: --print-config, with sensitive
 * values redacted, and the "where did this value come from" prefix of
 * error lines. */
#include "conf_int.h"

#include <string.h>

void conf_where(const ph_conf *c, const char *section, const char *key,
                ph_buf *out) {
  if (!c)
    return;
  if (!key) {
    int i = section ? conf_find_section(c, section, strlen(section)) : -1;
    if (i >= 0 && c->sects[i].hdr_file)
      buf_printf(out, "%s:%d: ", c->sects[i].hdr_file, c->sects[i].hdr_line);
    return;
  }
  const conf_value *v = conf_lookup(c, section, key);
  if (!v)
    return;
  switch (v->kind) {
  case SRC_FILE:
    buf_printf(out, "%s:%d: ", v->file, v->line);
    break;
  case SRC_ENV:
    buf_printf(out, "env %s: ", v->env_name);
    break;
  case SRC_CLI:
    if (v->flag)
      buf_printf(out, "-%s: ", v->flag);
    else
      buf_puts(out, "--set: ");
    break;
  default:
    break;
  }
}

void conf_where_item(const ph_conf *c, const char *section, const char *key,
                     const char *item, ph_buf *out) {
  const conf_value *v = c ? conf_lookup(c, section, key) : NULL;
  if (!v || v->kind != SRC_FILE) {
    conf_where(c, section, key, out);
    return;
  }
  int si = conf_find_section(c, section, strlen(section));
  size_t n = strlen(item);
  for (size_t i = 0; i < c->n_ents; i++) {
    const conf_entry *e = &c->ents[i];
    if (e->sect != si || !e->file || strcmp(e->key, key) != 0)
      continue;
    for (const char *p = e->value; *p;) {
      while (*p == ' ' || *p == '\t' || *p == ',')
        p++;
      const char *end = p + strcspn(p, ",");
      const char *last = end;
      while (last > p && (last[-1] == ' ' || last[-1] == '\t'))
        last--;
      if ((size_t)(last - p) == n && memcmp(p, item, n) == 0) {
        buf_printf(out, "%s:%d: ", e->file, e->line);
        return;
      }
      p = end;
    }
  }
  conf_where(c, section, key, out);
}

/* Every file line that gave list key k of section si items, "a:1, b:2":
 * a list's lines append across files (conf.d drop-ins included). */
static void print_list_origins(const ph_conf *c, int si, const char *key,
                               FILE *out) {
  const char *sep = "";
  for (size_t i = 0; i < c->n_ents; i++) {
    const conf_entry *e = &c->ents[i];
    if (e->sect != si || !e->file || strcmp(e->key, key) != 0 ||
        conf_list_scan(e->value, NULL) <= 0)
      continue;
    fprintf(out, "%s%s:%d", sep, e->file, e->line);
    sep = ", ";
  }
  fputc('\n', out);
}

void conf_print(const ph_conf *c, FILE *out) {
  if (!c || !c->ready)
    return;
  for (size_t o = 0; o < c->n_order; o++) {
    const conf_section *s = &c->sects[c->order[o]];
    fprintf(out, "%s[%s]\n", o ? "\n" : "", s->name);
    for (size_t k = 0; k < s->n_keys; k++) {
      const ph_conf_key *key = &s->keys[k];
      const conf_value *v = &s->vals[k];
      const char *text = v->text ? v->text : "";
      if ((key->flags & PH_CONF_SENSITIVE) && *text)
        text = "[redacted]";
      fprintf(out, "%s = %s  ; from ", key->name, text);
      switch (v->kind) {
      case SRC_FILE:
        if (key->type == PH_CONF_LIST && v->n_items > 0)
          print_list_origins(c, c->order[o], key->name, out);
        else
          fprintf(out, "%s:%d\n", v->file, v->line);
        break;
      case SRC_ENV:
        fprintf(out, "env %s\n", v->env_name);
        break;
      case SRC_CLI:
        if (v->flag)
          fprintf(out, "-%s\n", v->flag);
        else
          fputs("--set\n", out);
        break;
      default:
        fputs("default\n", out);
      }
    }
  }
}
