/* SPDX-License-Identifier: BSD-2-Clause */
/* The configuration store: INI files (inih) with includes, --set
 * assignments and the environment, validated against the key tables that
 * the host and the modules declare.
 *
 * Use: conf_new → conf_load_file (and conf_set_cli per --set) → conf_raw for
 * the few host keys needed before modules load → conf_declare per section
 * → conf_finalize (applies the environment, validates everything, fills
 * in defaults) → typed getters. Errors are written one per line into the
 * caller's ph_buf as "file:line: section.key: reason" (for --set:
 * "--set: section.key: reason"; for the environment: "env NAME:
 * section.key: reason").
 *
 * This header is the store's one interface. It is implemented in
 * host/conf_*.c, one job per file (host/conf_int.h lists them). */
#ifndef PH_CONF_H
#define PH_CONF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <proxyhost/config.h>

#include "buf.h"

typedef struct ph_conf ph_conf;

/* Generations. A configuration that passed conf_finalize is never changed
 * again, so any thread may read it without a lock while it holds a
 * reference. conf_new returns the first reference; conf_hold adds one
 * (returns c); conf_free drops one and frees c with the last. The core
 * holds the configuration in force, and every job submitted through the
 * API holds the one in force when it was submitted (pool.h), so a reload
 * frees the replaced configuration when its last job is done. Any thread;
 * the host takes and drops references on the loop thread. */
ph_conf *conf_new(void);
ph_conf *conf_hold(ph_conf *c);
void conf_free(ph_conf *c);
/* Configurations allocated and not yet freed, in the process (tests). */
size_t conf_alive(void);

/* Reads one INI file. The key `include` in section [proxyhost] takes a
 * glob relative to the including file's directory, expanded in sorted
 * order (include depth bounded at 8, cycles refused). Lines longer than
 * inih's limit are rejected, not truncated. Returns 0, or -1 with errors
 * appended to err. */
int conf_load_file(ph_conf *c, const char *path, ph_buf *err);
/* Parses text as if it came from a file named `name` (tests, mock host). */
int conf_load_string(ph_conf *c, const char *name, const char *text,
                     ph_buf *err);
/* "section.key=value" from the command line. Section is the text before
 * the first '.'. Returns 0 or -1. */
int conf_set_cli(ph_conf *c, const char *assignment, ph_buf *err);
/* A command-line flag (`-name value`, ABI 1.4): kept until finalize, which
 * applies it to the one declared key whose .flag is name (as --set would,
 * winning over a --set of the same key) or reports it unknown or
 * ambiguous. -1 for a malformed name (err says so). */
int conf_set_flag(ph_conf *c, const char *name, const char *value,
                  ph_buf *err);
/* A valid flag name: [a-z][a-z0-9-]{1,63} and none of the host's own
 * options. */
int conf_flag_name_ok(const char *name);

/* The effective raw text of section.key (--set > env > file), before
 * validation; NULL when no source sets it. For LIST keys given on several
 * file lines the values are joined with ','. env may be NULL. */
const char *conf_raw(ph_conf *c, const char *section, const char *key,
                     char *const *env);

/* Declares the keys of a section. keys must stay valid for the life of c
 * (module descriptors and static host tables do). Re-declaring a section
 * is an error. */
int conf_declare(ph_conf *c, const char *section, const ph_conf_key *keys);

/* Applies env (PROXYHOST_<SECTION>_<KEY> and each key's .env alias),
 * checks every section and key against the declarations, parses every
 * value, and applies defaults. Reports every error, not just the first.
 * Returns 0 or -1. */
int conf_finalize(ph_conf *c, char *const *env, ph_buf *err);

/* Typed getters, valid after a successful finalize. Unknown section or key:
 * NULL / 0. Strings are owned by c and live as long as it. Read-only: any
 * thread holding a reference may call them. */
const char *conf_str(const ph_conf *c, const char *section, const char *key);
int64_t conf_int(const ph_conf *c, const char *section, const char *key);
size_t conf_list_len(const ph_conf *c, const char *section, const char *key);
const char *conf_list_at(const ph_conf *c, const char *section,
                         const char *key, size_t i);
/* Whether section is declared and declares key (finalized or not). */
int conf_declared(const ph_conf *c, const char *section, const char *key);
/* The declaration of section.key (its type and flags), or NULL when
 * conf_declared would say 0. Lives as long as c. */
const ph_conf_key *conf_key_decl(const ph_conf *c, const char *section,
                                 const char *key);
/* Whether the value was set by a source (not the default). */
int conf_is_set(const ph_conf *c, const char *section, const char *key);
/* Appends where section.key's effective value came from, as the prefix of
 * an error line: "file:line: ", "--set: ", "env NAME: ", or nothing for a
 * default or an undeclared key. With key NULL: the section's first
 * header, "file:line: ", if any. After a successful finalize. */
void conf_where(const ph_conf *c, const char *section, const char *key,
                ph_buf *out);

/* Like conf_where for the file line of list key section.key that holds
 * item (the first one), when the list came from the files. */
void conf_where_item(const ph_conf *c, const char *section, const char *key,
                     const char *item, ph_buf *out);

/* Writes the effective configuration as INI, every declared key, values of
 * sensitive keys as "[redacted]", each with a comment naming its source. */
void conf_print(const ph_conf *c, FILE *out);

/* Files read (for reload), in order. */
size_t conf_file_count(const ph_conf *c);
const char *conf_file_at(const ph_conf *c, size_t i);

/* Parsers shared with the rest of the host. Return 0 or -1. */
int conf_parse_duration_ms(const char *s, int64_t *out);
int conf_parse_size(const char *s, int64_t *out);
int conf_parse_bool(const char *s, int64_t *out);

#endif
