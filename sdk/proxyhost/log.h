/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proxyhost SDK: structured logging.
 *
 * A log record is a level, a short constant message and typed key/value
 * fields. The host writes it as key=value text or as one JSON object per
 * line (configuration [log] format), to stderr or a file. Fields whose key
 * contains a secret word (password, passwd, secret, token, authorization,
 * cookie, credential, dsn, private, api_key, apikey, bearer, proxy_auth;
 * case-insensitive) are written as "[redacted]" whatever the value; never
 * put secrets in the message text itself.
 *
 * Use the macros; they skip all work when the level is disabled:
 *
 *   PH_LOG(api, ctx, PH_LOG_INFO, "listener started",
 *          PH_STR("addr", addr), PH_INT("port", port));
 *   PH_LOG_RL(api, ctx, PH_LOG_WARN, "accept failed", PH_INT("errno", e));
 *
 * PH_LOG_RL rate-limits per call site (see ph_ratelimit) and reports how
 * many records it suppressed in a "suppressed" field of the next one.
 * Thread: any thread. The host serialises writes.
 */
#ifndef PROXYHOST_LOG_H
#define PROXYHOST_LOG_H

#include <stddef.h>
#include <stdint.h>

enum ph_log_level {
  PH_LOG_ERROR = 0,
  PH_LOG_WARN = 1,
  PH_LOG_INFO = 2,
  PH_LOG_DEBUG = 3
};

enum ph_log_field_type { PH_LF_STR = 1, PH_LF_INT, PH_LF_UINT, PH_LF_DBL };

typedef struct ph_log_field {
  const char *key; /* NULL in the first, ignored slot the macros add */
  int type;        /* ph_log_field_type */
  union {
    const char *s;
    int64_t i;
    uint64_t u;
    double d;
  } v;
} ph_log_field;

/* Per-call-site limiter: at most `burst` records per second, the rest are
 * counted. Zero-initialised static storage is valid (burst 0 = 10). */
typedef struct ph_ratelimit {
  int64_t window_start_ms;
  uint32_t burst;
  uint32_t emitted;
  uint64_t suppressed;
} ph_ratelimit;

#define PH_STR(k, x) ((ph_log_field){(k), PH_LF_STR, {.s = (x)}})
#define PH_INT(k, x) ((ph_log_field){(k), PH_LF_INT, {.i = (int64_t)(x)}})
#define PH_UINT(k, x) ((ph_log_field){(k), PH_LF_UINT, {.u = (uint64_t)(x)}})
#define PH_DBL(k, x) ((ph_log_field){(k), PH_LF_DBL, {.d = (double)(x)}})

/* The leading {0} slot lets the field list be empty; the host skips it. */
#define PH_LOG_FIELDS_(...) ((const ph_log_field[]){{0, 0, {0}}, __VA_ARGS__})
#define PH_LOG_NFIELDS_(...) \
  (sizeof(PH_LOG_FIELDS_(__VA_ARGS__)) / sizeof(ph_log_field))

#define PH_LOG(api, ctx, level, msg, ...)                                   \
  do {                                                                      \
    if ((api)->log_enabled((ctx), (level)))                                 \
      (api)->log((ctx), (level), (msg), PH_LOG_FIELDS_(__VA_ARGS__),        \
                 PH_LOG_NFIELDS_(__VA_ARGS__));                             \
  } while (0)

#define PH_LOG_RL(api, ctx, level, msg, ...)                                \
  do {                                                                      \
    static ph_ratelimit ph_rl_;                                             \
    if ((api)->log_enabled((ctx), (level)))                                 \
      (api)->log_rl((ctx), &ph_rl_, (level), (msg),                         \
                    PH_LOG_FIELDS_(__VA_ARGS__),                            \
                    PH_LOG_NFIELDS_(__VA_ARGS__));                          \
  } while (0)

#endif
