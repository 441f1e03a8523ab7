/* SPDX-License-Identifier: BSD-2-Clause */
/* The store: a configuration's lifetime, its sections and their
 * declared key tables, and the typed getters over the effective values
 * that conf_finalize filled in. See conf.h for the life cycle. */
#include "conf_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- sections and keys -------------------------------------------------- */

int conf_find_section(const ph_conf *c, const char *name, size_t n) {
  for (size_t i = 0; i < c->n_sects; i++)
    if (strlen(c->sects[i].name) == n && memcmp(c->sects[i].name, name, n) == 0)
      return (int)i;
  return -1;
}

/* Index of the section, created if new; -1 when the table is full or
 * memory is short. */
int conf_get_section(ph_conf *c, const char *name, size_t n) {
  int i = conf_find_section(c, name, n);
  if (i >= 0 || c->n_sects == CONF_MAX_SECTIONS)
    return i;
  char *copy = conf_dup_n(name, n);
  if (!copy)
    return -1;
  conf_section *s = &c->sects[c->n_sects];
  memset(s, 0, sizeof(*s));
  s->name = copy;
  return (int)c->n_sects++;
}

int conf_find_key(const conf_section *s, const char *key) {
  for (size_t i = 0; i < s->n_keys; i++)
    if (strcmp(s->keys[i].name, key) == 0)
      return (int)i;
  return -1;
}

/* The effective value of section.key after a successful finalize. */
const conf_value *conf_lookup(const ph_conf *c, const char *section,
                              const char *key) {
  if (!c || !c->ready || !section || !key)
    return NULL;
  int si = conf_find_section(c, section, strlen(section));
  if (si < 0 || !c->sects[si].keys)
    return NULL;
  const conf_section *s = &c->sects[si];
  int k = conf_find_key(s, key);
  if (k < 0)
    return NULL;
  return &s->vals[k];
}

/* ---- lifetime ----------------------------------------------------------- */

static atomic_size_t n_alive;

ph_conf *conf_new(void) {
  ph_conf *c = calloc(1, sizeof(*c));
  if (!c)
    return NULL;
  buf_init(&c->decl_err, 65536);
  atomic_init(&c->refs, 1);
  atomic_fetch_add(&n_alive, 1);
  return c;
}

ph_conf *conf_hold(ph_conf *c) {
  /* The holder already has a reference (or is the creator): relaxed. */
  if (c)
    atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
  return c;
}

size_t conf_alive(void) { return atomic_load(&n_alive); }

void conf_value_clear(conf_value *v) {
  free(v->text);
  free(v->item_buf);
  free(v->items);
  free(v->env_name);
  buf_free(&v->list);
  memset(v, 0, sizeof(*v));
}

void conf_values_free(conf_section *s) {
  if (!s->vals)
    return;
  for (size_t k = 0; k < s->n_keys; k++)
    conf_value_clear(&s->vals[k]);
  free(s->vals);
  s->vals = NULL;
}

/* The last reference frees; acquire-release so that every reader's use
 * happens before the free, whichever thread drops last. */
void conf_free(ph_conf *c) {
  if (!c || atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1)
    return;
  for (size_t i = 0; i < c->n_sects; i++) {
    conf_values_free(&c->sects[i]);
    free(c->sects[i].name);
  }
  for (size_t i = 0; i < c->n_ents; i++) {
    free(c->ents[i].key);
    free(c->ents[i].value);
    free(c->ents[i].joined);
    free(c->ents[i].flag);
  }
  free(c->ents);
  for (size_t i = 0; i < c->n_flags; i++) {
    free(c->flags[i].name);
    free(c->flags[i].value);
  }
  free(c->flags);
  for (size_t i = 0; i < c->n_srcs; i++) {
    free(c->srcs[i].name);
    free(c->srcs[i].real);
  }
  buf_free(&c->decl_err);
  free(c);
  atomic_fetch_sub(&n_alive, 1);
}

/* ---- declarations ------------------------------------------------------- */

int conf_declare(ph_conf *c, const char *section, const ph_conf_key *keys) {
  ph_buf *e = &c->decl_err;
  size_t before = e->len;
  int bad = e->overflow;
  c->ready = 0;
  if (!section || !conf_valid_section_name(section, strlen(section))) {
    buf_printf(e, "%s: invalid section name (use [a-z0-9_]+ or "
                  "NAME.INSTANCE)\n",
               section ? section : "(null)");
    return -1;
  }
  if (!keys) {
    buf_printf(e, "%s: no key table\n", section);
    return -1;
  }
  int si = conf_get_section(c, section, strlen(section));
  if (si < 0) {
    buf_printf(e, "%s: too many sections (max %d)\n", section,
               CONF_MAX_SECTIONS);
    return -1;
  }
  conf_section *s = &c->sects[si];
  if (s->keys) {
    buf_printf(e, "%s: section declared twice\n", section);
    return -1;
  }
  size_t n = conf_check_keys(section, keys, e);
  s->keys = keys;
  s->n_keys = n;
  c->order[c->n_order++] = si;
  return e->len > before || e->overflow != bad ? -1 : 0;
}

/* ---- getters ------------------------------------------------------------ */

const char *conf_str(const ph_conf *c, const char *section, const char *key) {
  const conf_value *v = conf_lookup(c, section, key);
  return v ? v->text : NULL;
}

int64_t conf_int(const ph_conf *c, const char *section, const char *key) {
  const conf_value *v = conf_lookup(c, section, key);
  return v ? v->num : 0;
}

size_t conf_list_len(const ph_conf *c, const char *section, const char *key) {
  const conf_value *v = conf_lookup(c, section, key);
  return v ? v->n_items : 0;
}

const char *conf_list_at(const ph_conf *c, const char *section, const char *key,
                         size_t i) {
  const conf_value *v = conf_lookup(c, section, key);
  return v && i < v->n_items ? v->items[i] : NULL;
}

const ph_conf_key *conf_key_decl(const ph_conf *c, const char *section,
                                 const char *key) {
  if (!c || !section || !key)
    return NULL;
  int si = conf_find_section(c, section, strlen(section));
  if (si < 0 || !c->sects[si].keys)
    return NULL;
  int k = conf_find_key(&c->sects[si], key);
  return k >= 0 ? &c->sects[si].keys[k] : NULL;
}

int conf_declared(const ph_conf *c, const char *section, const char *key) {
  return conf_key_decl(c, section, key) != NULL;
}

int conf_is_set(const ph_conf *c, const char *section, const char *key) {
  const conf_value *v = conf_lookup(c, section, key);
  return v && v->kind != SRC_DEFAULT;
}

size_t conf_file_count(const ph_conf *c) {
  size_t n = 0;
  for (size_t i = 0; c && i < c->n_srcs; i++)
    n += c->srcs[i].real != NULL;
  return n;
}

const char *conf_file_at(const ph_conf *c, size_t i) {
  for (size_t j = 0; c && j < c->n_srcs; j++) {
    if (!c->srcs[j].real)
      continue; /* a string, not a file */
    if (i == 0)
      return c->srcs[j].name;
    i--;
  }
  return NULL;
}
