/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proxyhost SDK: configuration keys a module declares.
 *
 * A module owns the INI section named after it. It lists every key it
 * accepts in ph_module.config, a table ended by an entry whose name is NULL.
 * The host validates every key of every section before any module's init
 * runs: unknown keys, bad types and out-of-range values stop start-up with
 * "file:line: section.key: reason". Values come from, in order of
 * precedence: the command line (--set section.key=value, and the key's
 * own .flag, ABI 1.4), the environment (PROXYHOST_<SECTION>_<KEY>,
 * upper-cased, '.' and '-' as '_', plus the key's own .env alias), the
 * configuration files, then .def.
 */
#ifndef PROXYHOST_CONFIG_H
#define PROXYHOST_CONFIG_H

#include <stdint.h>

typedef enum ph_conf_type {
  PH_CONF_STRING = 1, /* min/max bound the length in bytes */
  PH_CONF_INT,        /* signed 64-bit; min/max bound the value */
  PH_CONF_BOOL,       /* true/false, yes/no, on/off, 1/0 */
  PH_CONF_DURATION,   /* "250ms", "5s", "2m", "1h"; read as milliseconds */
  PH_CONF_SIZE,       /* "512", "64KiB", "16MiB", "1GiB"; read as bytes */
  PH_CONF_LIST,       /* comma-separated strings; min/max bound the count */
  PH_CONF_ENUM        /* one of .choices ("a|b|c"); read as a string */
} ph_conf_type;

enum ph_conf_flags {
  PH_CONF_SENSITIVE = 1u << 0, /* redacted in --print-config and never
                                  echoed in errors (log fields are
                                  redacted by key name, see log.h) */
  PH_CONF_REQUIRED = 1u << 1,  /* start-up fails when no source sets it */
  PH_CONF_RESTART = 1u << 2    /* read once at start: a reload that
                                  changes it logs "this key changes only
                                  after a restart" and the module keeps
                                  what it read at start */
};

/* One key. Write entries with PH_CONF_KEY or designated initialisers
 * (.name = ..., .type = ...): both leave every field they do not name
 * zero, as reserved[] must be, and keep compiling warning-free when a
 * later minor gives reserved[] a meaning.
 *
 * ABI 1.2 added reserved[] (the element grew by four pointers). The host
 * reads a module's table with the layout of the module's abi_minor: a
 * module built for 1.0 or 1.1 has elements without reserved[], which the
 * host converts; one built for 1.2 or later has this layout, and a set
 * reserved[] slot refuses it at load (sdk/ABI.md). */
typedef struct ph_conf_key {
  const char *name;  /* key inside the module's section, e.g. "listen" */
  ph_conf_type type;
  const char *def;   /* default written as in the file; NULL = empty */
  int64_t min, max;  /* bounds (see ph_conf_type); max 0 = unbounded */
  uint32_t flags;    /* ph_conf_flags */
  const char *env;   /* extra environment name (a legacy one), or NULL */
  const char *help;  /* one line for the module's documentation */
  const char *choices; /* PH_CONF_ENUM only: allowed values, "a|b|c" */
  /* ABI 1.4 (was reserved[0]): a command-line name, or NULL. With
   * .flag = "worker-id", `proxyhost -worker-id w1` (or --worker-id w1,
   * -worker-id=w1) sets this key as --set section.key=w1 would; when both
   * name one key the flag wins. A flag is [a-z][a-z0-9-]{1,63}, never one
   * of the host's own options (config, set, check-config, print-config,
   * list-modules, version, help), unique within the module; the host
   * refuses a module that breaks this at load. A flag is ambiguous, and
   * refused with both sections named, when two loaded sections declare
   * it (two instances of one module): use --set for those. Modules built
   * for an ABI below 1.4 must leave it NULL. */
  const char *flag;
  void *reserved[3];   /* ABI 1.2: room to grow; must be zero */
} ph_conf_key;

/* The nine fields of ph_conf_key in order, as a designated initialiser:
 *   PH_CONF_KEY("listen", PH_CONF_STRING, "127.0.0.1:1080", 1, 128,
 *               PH_CONF_RESTART, NULL, "address to listen on", NULL),
 * (A positional {"listen", PH_CONF_STRING, ...} with nine values still
 * gives the same entry, reserved[] zero, but -Wextra warns about the
 * fields it leaves out.) */
#define PH_CONF_KEY(name_, type_, def_, min_, max_, flags_, env_, help_,       \
                    choices_)                                                  \
  {                                                                            \
    .name = (name_), .type = (type_), .def = (def_), .min = (min_),            \
    .max = (max_), .flags = (flags_), .env = (env_), .help = (help_),          \
    .choices = (choices_)                                                      \
  }

/* PH_CONF_KEY with a command-line name (ABI 1.4; see .flag above). */
#define PH_CONF_KEY_FLAG(flag_, name_, type_, def_, min_, max_, flags_, env_,  \
                         help_, choices_)                                      \
  {                                                                            \
    .name = (name_), .type = (type_), .def = (def_), .min = (min_),            \
    .max = (max_), .flags = (flags_), .env = (env_), .help = (help_),          \
    .choices = (choices_), .flag = (flag_)                                     \
  }

/* Ends a key table: the entry whose name is NULL. */
#define PH_CONF_END {.name = 0}

#endif
