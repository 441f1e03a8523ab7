/* SPDX-License-Identifier: BSD-2-Clause */
/* What the parts of the configuration store share (host/conf_*.c): the
 * store's layout and the functions one part offers the others. Private to
 * those files; everything else uses conf.h.
 *
 *   conf_read.c     INI files and strings, includes, --set: raw entries
 *   conf_lines.c    the line reader in front of inih: the line limit and
 *                   the state inih keeps to itself
 *   conf_types.c    value types, bounds, validation of values and tables
 *   conf_resolve.c  precedence (--set > env > file > default), finalize
 *   conf_store.c    lifetime, sections, declarations, typed getters
 *   conf_print.c    --print-config (redacted) and error positions
 *   conf_suggest.c  "did you mean": the key nearest to an unknown one */
#ifndef PH_CONF_INT_H
#define PH_CONF_INT_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "conf.h"

/* Bytes, line terminator excluded: a module_path or a certificate path
 * (PATH_MAX 4096) with its key, or a modules list of 64 instances, fit on
 * one line. Debian's libinih sizes its line buffer from ini_max_line,
 * which conf_inih_pin sets to this; a libinih built with a fixed buffer
 * keeps its own (199 bytes) and conf_read_line refuses longer lines. */
#define CONF_MAX_LINE 8191
#define CONF_MAX_SECTIONS 80  /* PH_MAX_MODULES plus the host's own sections */
#define CONF_MAX_ENTRIES 4096 /* key lines plus continuation lines */
#define CONF_MAX_DEPTH 8      /* include nesting */
#define CONF_MAX_SOURCES 256  /* files and strings read */
#define ECHO_MAX 80           /* bytes of a value quoted in an error */

enum src_kind { SRC_DEFAULT, SRC_FILE, SRC_ENV, SRC_CLI };

/* One "key = value" line (with its continuation lines), or one --set. */
typedef struct conf_entry {
  int sect;
  char *key;
  char *value;
  size_t len, cap;  /* value grows with continuation lines */
  const char *file; /* NULL for --set */
  int line;
  int cont_line;   /* first continuation line, 0 if none */
  /* --set "a.b.c=v" is recorded as section "a.b", key "c" (a module
   * instance); alt says that it may also mean section "a", key "b.c"
   * (a key with a dot), which conf_finalize picks when only that one is
   * declared. */
  int alt;
  char *flag;      /* a command-line flag's name (ABI 1.4), or NULL */
  char *joined;    /* conf_raw's cache: this key's file entries joined */
  size_t joined_n; /* how many entries the cache was built from */
} conf_entry;

/* The effective value of a declared key, filled by conf_finalize. */
typedef struct conf_value {
  char *text;  /* as written; LIST: trimmed items joined by ',' */
  int64_t num; /* INT, DURATION (ms), SIZE (bytes), BOOL (0/1) */
  char *item_buf;
  char **items; /* LIST items, pointing into item_buf */
  size_t n_items;
  int kind; /* enum src_kind */
  const char *file;
  int line;
  char *env_name;
  const char *flag; /* SRC_CLI from a flag: its name (the entry's) */
  /* scratch for finalize */
  int cli, first; /* entry indexes, -1 if none */
  ph_buf list;    /* LIST: file entries joined */
} conf_value;

typedef struct conf_section {
  char *name;
  const char *hdr_file; /* first [name] header, NULL if only from --set */
  int hdr_line;
  const ph_conf_key *keys; /* NULL until declared */
  size_t n_keys;
  conf_value *vals;
} conf_section;

/* A command-line flag (-name value) waiting for the key that declares
 * it; ent is the entry it became, -1 until then. */
typedef struct conf_flag {
  char *name;
  char *value;
  int ent;
} conf_flag;

typedef struct conf_source {
  char *name;
  char *real; /* realpath for files, NULL for strings */
} conf_source;

struct ph_conf {
  atomic_uint refs; /* conf_new's, conf_hold's; conf_free drops one */
  conf_section sects[CONF_MAX_SECTIONS];
  size_t n_sects;
  int order[CONF_MAX_SECTIONS]; /* declared sections, declaration order */
  size_t n_order;
  conf_entry *ents;
  size_t n_ents, cap_ents;
  size_t n_lines; /* entries plus continuation lines, for the bound */
  conf_source srcs[CONF_MAX_SOURCES];
  size_t n_srcs;
  ph_buf decl_err; /* conf_declare problems, reported by finalize */
  conf_flag *flags; /* command-line flags, resolved at finalize */
  size_t n_flags, cap_flags;
  int ready;       /* finalize succeeded */
};

/* ---- loading (conf_read.c, conf_lines.c) ------------------------------ */

/* State shared by one public load call and the files it includes. */
typedef struct load_ctx {
  ph_conf *c;
  ph_buf *err;
  int nerr;
  int full_reported; /* "too many entries" said once per load */
} load_ctx;

#define LAST_NONE (-1)
#define LAST_INCLUDE (-2)
#define SECT_NONE (-1) /* before any header */
#define SECT_BAD (-2)  /* under a rejected header: its keys are skipped */

/* One file or string being parsed. */
typedef struct loader {
  load_ctx *lc;
  const char *name; /* owned by c->srcs */
  int depth;
  FILE *fp;      /* file source, or NULL */
  const char *s; /* string source cursor */
  int line;      /* lines handed to inih so far */
  int prev;      /* inih remembers a key name: continuation possible */
  int cont;      /* the current line continues the previous value */
  int sect;
  int last;   /* entry that continuation lines extend, or LAST_* */
  int syntax; /* syntax errors found by the reader */
} loader;

/* conf_read.c: reports "name:line: ..." for the current line of ld. */
void conf_ld_err(loader *ld, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* conf_lines.c: sets inih's runtime options (where the library has them)
 * to the ones conf_read_line mirrors. Before every ini_parse_stream. */
void conf_inih_pin(void);
/* conf_lines.c: inih's reader (ini_reader) over a loader. */
char *conf_read_line(char *out, int num, void *stream);
/* conf_lines.c: inih's rule for where a ';' starts an inline comment
 * (after whitespace), and where the first of chars is. */
const char *conf_find_chars_or_comment(const char *s, const char *chars);

/* ---- the store (conf_store.c) ----------------------------------------- */

int conf_find_section(const ph_conf *c, const char *name, size_t n);
/* Index of the section, created if new; -1 when the table is full or
 * memory is short. */
int conf_get_section(ph_conf *c, const char *name, size_t n);
int conf_find_key(const conf_section *s, const char *key);
/* The effective value of section.key after a successful finalize. */
const conf_value *conf_lookup(const ph_conf *c, const char *section,
                              const char *key);
void conf_value_clear(conf_value *v);
void conf_values_free(conf_section *s);

/* ---- suggestions (conf_suggest.c) ------------------------------------- */

#define CONF_SUGGEST_DISTANCE 2 /* edits (insert, delete, change, swap) */
#define CONF_SUGGEST_SHORT 6    /* shorter keys: within one edit only */

/* The declared key of s nearest to key, within CONF_SUGGEST_DISTANCE
 * edits (one for keys shorter than CONF_SUGGEST_SHORT) and fewer edits
 * than key has bytes; the first declared on a tie.
 * NULL when none is that near, or s is not declared. */
const char *conf_nearest_key(const conf_section *s, const char *key);

/* ---- types and text (conf_types.c) ------------------------------------ */

int conf_valid_section_name(const char *s, size_t n);
char *conf_dup_n(const char *s, size_t n);
/* Trims whitespace on both sides into a new string. */
char *conf_dup_trim(const char *s);
/* Comma-separated items, trimmed. Writes the trimmed items joined by ','
 * to joined (strlen(s) + 1 bytes) when non-NULL. Returns the item count,
 * or -1 for an empty item. Blank text is the empty list. */
long conf_list_scan(const char *s, char *joined);
/* Parses text for key k into v (v NULL: only checks). On error writes the
 * reason to why (never quoting a sensitive value) and returns -1. */
int conf_value_parse(const ph_conf_key *k, const char *text, conf_value *v,
                     char *why, size_t n);
/* What a NULL default means for each type: valid INI text for "empty". */
const char *conf_null_default(ph_conf_type t);
/* Checks a key table's entries (names, types, choices, bounds), appending
 * one line per problem to e; returns the number of entries. */
size_t conf_check_keys(const char *section, const ph_conf_key *keys, ph_buf *e);

/* conf_read.c: turns each pending flag into a command-line entry of the
 * one declared key that names it; reports unknown and ambiguous flags.
 * Returns the number of errors. */
int conf_flags_resolve(ph_conf *c, ph_buf *err);

#endif
