/* SPDX-License-Identifier: BSD-2-Clause */
/* proxyhost-migrate's --config: a store's section of a proxyhost
 * configuration (migrate_target.h). It reuses the host's configuration
 * reader for the files, includes and environment, without declaring or
 * validating the modules' keys: only the one key is read. */
#include "migrate_target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "conf.h"

extern char **environ;

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
    value = conf_raw(c, section, key, environ);
    if (!value || !*value) {
      snprintf(why, whylen, "%s: [%s] %s is not set", file, section, key);
      conf_free(c);
      return -1;
    }
  } else {
    const char *path = conf_raw(c, "store_sqlite", "path", environ);
    const char *dsn = conf_raw(c, "store_pg", "dsn", environ);
    if (path && *path && dsn && *dsn) {
      snprintf(why, whylen, "%s sets both [store_sqlite] path and "
               "[store_pg] dsn: choose one with --store", file);
      conf_free(c);
      return -1;
    }
    if (path && *path) {
      section = "store_sqlite", key = "path", value = path;
    } else if (dsn && *dsn) {
      section = "store_pg", key = "dsn", value = dsn;
    } else {
      snprintf(why, whylen, "%s sets neither [store_sqlite] path nor "
               "[store_pg] dsn (a named instance needs --store NAME)", file);
      conf_free(c);
      return -1;
    }
  }
  t->engine = section_engine(section, &key);
  t->location = strdup(value);
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
