/* SPDX-License-Identifier: BSD-2-Clause */
/* The host's structured logger: one record per line, key=value or JSON, to
 * stderr or a file, with redaction of secret-named fields and per-call-site
 * rate limiting. Process-wide; any thread. */
#ifndef PH_HOST_LOG_H
#define PH_HOST_LOG_H

#include <stddef.h>

#include <proxyhost/log.h>

enum ph_log_format { PH_LOG_FMT_TEXT = 0, PH_LOG_FMT_JSON = 1 };

/* Parses "error|warn|info|debug"; -1 if not one of them. */
int log_level_parse(const char *s);
int log_format_parse(const char *s);
void log_configure(int level, int format);
/* path NULL or "" or "-" = stderr. 0 or -1 (errno set). Reopens on reload. */
int log_open(const char *path);
void log_close(void);
int log_enabled(int level);

/* module may be NULL for the host itself. */
void log_write(const char *module, int level, const char *msg,
               const ph_log_field *fields, size_t n);
void log_write_rl(const char *module, ph_ratelimit *rl, int level,
                  const char *msg, const ph_log_field *fields, size_t n);
/* Whether a field key names a secret and must be redacted. */
int log_key_is_secret(const char *key);

/* Shorthand for the host's own records. */
#define HLOG(level, msg, ...) \
  log_write(NULL, (level), (msg), PH_LOG_FIELDS_(__VA_ARGS__), \
            PH_LOG_NFIELDS_(__VA_ARGS__))

#endif
