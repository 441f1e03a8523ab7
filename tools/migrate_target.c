/* SPDX-License-Identifier: BSD-2-Clause */
/* proxyhost-migrate's --config: a store's section of a proxyhost
 * configuration (migrate_target.h). It reuses the host's configuration
 * reader for the files, includes and environment, without declaring or
 * validating the modules' keys: only the one key is read. */
#include "migrate_target.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "conf.h"

extern char **environ;

/* As store_pg reads its DSN (store_pg.c: read_dsn): at most 4096 bytes. */
#define DSN_FILE_MAX 4096

/* A store_pg section's DSN: its dsn, or the first line of its dsn_file
 * (trailing blanks cut), exactly one of them. The value is not checked
 * here: libpq refuses a malformed one without quoting it. *key names the
 * key it came from. A new string, or NULL with why. */
static char *pg_section_dsn(ph_conf *c, const char *section, const char **key,
                            char *why, size_t whylen) {
  const char *dsn = conf_raw(c, section, "dsn", environ);
  const char *file = conf_raw(c, section, "dsn_file", environ);
  int has_dsn = dsn && *dsn, has_file = file && *file;
  *key = has_file && !has_dsn ? "dsn_file" : "dsn";
  if (has_dsn && has_file) {
    snprintf(why, whylen, "[%s]: set exactly one of dsn and dsn_file",
             section);
    return NULL;
  }
  if (has_dsn)
    return strdup(dsn);
  if (!has_file)
    return NULL;
  FILE *f = fopen(file, "re");
  if (!f) {
    snprintf(why, whylen, "[%s] dsn_file %s: %s", section, file,
             strerror(errno));
    return NULL;
  }
  char *text = calloc(1, DSN_FILE_MAX + 2);
  size_t n = text ? fread(text, 1, DSN_FILE_MAX + 1, f) : 0;
  fclose(f);
  if (!text) {
    snprintf(why, whylen, "out of memory");
    return NULL;
  }
  text[strcspn(text, "\r\n")] = '\0'; /* the first line */
  size_t l = strlen(text);
  while (l > 0 && (text[l - 1] == ' ' || text[l - 1] == '\t'))
    text[--l] = '\0';
  if (n > DSN_FILE_MAX || !*text) {
    snprintf(why, whylen, "[%s] dsn_file %s: %s", section, file,
             *text ? "longer than 4096 bytes" : "empty first line");
    explicit_bzero(text, DSN_FILE_MAX + 2);
    free(text);
    return NULL;
  }
  return text;
}

/* The engine a store section is for: "store_sqlite" or
 * "store_sqlite.INSTANCE" and the same for store_pg; 0 otherwise. */
static az_engine section_engine(const char *section, const char **key) {
  static const struct {
    const char *name;
    az_engine engine;
    const char *key;
  } stores[] = {{"store_sqlite", AZ_ENGINE_SQLITE, "path"},
                {"store_pg", AZ_ENGINE_POSTGRES, "dsn"}};
  for (size_t i = 0; i < sizeof(stores) / sizeof(stores[0]); i++) {
    size_t n = strlen(stores[i].name);
    if (strncmp(section, stores[i].name, n) == 0 &&
        (section[n] == '\0' || (section[n] == '.' && section[n + 1]))) {
      *key = stores[i].key;
      return stores[i].engine;
    }
  }
  return 0;
}

int migrate_target_from_config(const char *file, const char *store,
                               migrate_target *t, char *why, size_t whylen) {
  memset(t, 0, sizeof(*t));
  ph_conf *c = conf_new();
  ph_buf err;
  buf_init(&err, 16384);
  if (!c || conf_load_file(c, file, &err) < 0) {
    /* The reader's errors are "file:line: reason"; a value it could not
     * read is not quoted in them. Only the first line is kept. */
    const char *e = err.data && err.len ? err.data : "cannot read it";
    snprintf(why, whylen, "%.*s", (int)strcspn(e, "\n"), e);
    buf_free(&err);
    conf_free(c);
    return -1;
  }
  buf_free(&err);
  const char *section = NULL, *key = NULL, *value = NULL;
  if (store) {
    if (!section_engine(store, &key)) {
      snprintf(why, whylen, "--store %s: not a store section (store_sqlite, "
               "store_pg, or one of their instances such as store_pg.NAME)",
               store);
      conf_free(c);
      return -1;
    }
    section = store;
    why[0] = '\0';
    if (section_engine(section, &key) == AZ_ENGINE_POSTGRES) {
      t->location = pg_section_dsn(c, section, &key, why, whylen);
    } else {
      value = conf_raw(c, section, key, environ);
      t->location = value && *value ? strdup(value) : NULL;
    }
    if (!t->location) {
      if (!why[0])
        snprintf(why, whylen, "%s: [%s] %s is not set", file, section, key);
      conf_free(c);
      return -1;
    }
  } else {
    const char *path = conf_raw(c, "store_sqlite", "path", environ);
    const char *pkey;
    why[0] = '\0';
    char *dsn = pg_section_dsn(c, "store_pg", &pkey, why, whylen);
    if (!dsn && why[0]) {
      conf_free(c);
      return -1;
    }
    if (path && *path && dsn) {
      explicit_bzero(dsn, strlen(dsn));
      free(dsn);
      snprintf(why, whylen, "%s sets both [store_sqlite] path and "
               "[store_pg] %s: choose one with --store", file, pkey);
      conf_free(c);
      return -1;
    }
    if (path && *path) {
      section = "store_sqlite", key = "path";
      t->location = strdup(path);
    } else if (dsn) {
      section = "store_pg", key = pkey;
      t->location = dsn;
    } else {
      snprintf(why, whylen, "%s sets neither [store_sqlite] path nor "
               "[store_pg] dsn or dsn_file (a named instance needs --store "
               "NAME)", file);
      conf_free(c);
      return -1;
    }
  }
  const char *k;
  t->engine = section_engine(section, &k);
  snprintf(t->from, sizeof(t->from), "%s: [%s] %s", file, section, key);
  conf_free(c);
  if (!t->location) {
    snprintf(why, whylen, "out of memory");
    return -1;
  }
  return 0;
}

void migrate_target_free(migrate_target *t) {
  if (t->location) {
    volatile char *v = t->location;
    while (*v)
      *v++ = '\0';
    free(t->location);
  }
  t->location = NULL;
}
