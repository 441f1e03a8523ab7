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
    buf_puts(out, "--set: ");
    break;
  default:
    break;
  }
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
        fprintf(out, "%s:%d\n", v->file, v->line);
        break;
      case SRC_ENV:
        fprintf(out, "env %s\n", v->env_name);
        break;
      case SRC_CLI:
        fputs("--set\n", out);
        break;
      default:
        fputs("default\n", out);
      }
    }
  }
}
