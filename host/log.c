/* SPDX-License-Identifier: BSD-2-Clause */
#include "log.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"

static int log_level = PH_LOG_INFO;
static int log_format = PH_LOG_FMT_TEXT;
static int log_fd = 2;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

/* Substrings that mark a field as secret, matched case-insensitively. */
static const char *const secret_words[] = {
    "password", "passwd",     "secret",      "token",   "authorization",
    "cookie",   "credential", "dsn",         "private", "api_key",
    "apikey",   "bearer",     "proxy_auth",  NULL};

int log_level_parse(const char *s) {
  for (int i = 0; i < 4; i++)
    if (strcasecmp(s, level_names[i]) == 0)
      return i;
  return -1;
}

int log_format_parse(const char *s) {
  if (strcasecmp(s, "text") == 0 || strcasecmp(s, "kv") == 0)
    return PH_LOG_FMT_TEXT;
  if (strcasecmp(s, "json") == 0)
    return PH_LOG_FMT_JSON;
  return -1;
}

void log_configure(int level, int format) {
  __atomic_store_n(&log_level, level, __ATOMIC_RELAXED);
  log_format = format;
}

int log_open(const char *path) {
  int fd = 2;
  if (path && *path && strcmp(path, "-") != 0) {
    fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (fd < 0)
      return -1;
  }
  pthread_mutex_lock(&log_lock);
  int old = log_fd;
  log_fd = fd;
  pthread_mutex_unlock(&log_lock);
  if (old != 2)
    close(old);
  return 0;
}

void log_close(void) { log_open(NULL); }

int log_enabled(int level) {
  return level <= __atomic_load_n(&log_level, __ATOMIC_RELAXED);
}

int log_key_is_secret(const char *key) {
  char low[64];
  size_t n = 0;
  for (; key[n] && n < sizeof(low) - 1; n++)
    low[n] = (char)tolower((unsigned char)key[n]);
  low[n] = '\0';
  for (int i = 0; secret_words[i]; i++)
    if (strstr(low, secret_words[i]))
      return 1;
  return 0;
}

/* A double-quoted string: quotes, backslashes and newlines escaped, other
 * control bytes as ctl_fmt (JSON wants \u00XX, text the shorter \xXX). */
static void put_quoted(ph_buf *b, const char *s, const char *ctl_fmt) {
  buf_puts(b, "\"");
  for (const char *p = s; *p; p++) {
    unsigned char c = (unsigned char)*p;
    if (c == '"' || c == '\\')
      buf_printf(b, "\\%c", c);
    else if (c == '\n')
      buf_puts(b, "\\n");
    else if (c < 0x20)
      buf_printf(b, ctl_fmt, c);
    else
      buf_append(b, p, 1);
  }
  buf_puts(b, "\"");
}

/* Text values are quoted when they hold spaces, quotes, '=' or controls. */
static void put_text_value(ph_buf *b, const char *s) {
  int quote = (*s == '\0');
  for (const char *p = s; *p; p++)
    if (*p == ' ' || *p == '"' || *p == '=' || (unsigned char)*p < 0x20)
      quote = 1;
  if (quote)
    put_quoted(b, s, "\\x%02x");
  else
    buf_puts(b, s);
}

static void put_json_string(ph_buf *b, const char *s) {
  put_quoted(b, s, "\\u%04x");
}

static void put_field(ph_buf *b, const ph_log_field *f, int json) {
  if (json) {
    buf_puts(b, ",");
    put_json_string(b, f->key);
    buf_puts(b, ":");
  } else {
    buf_printf(b, " %s=", f->key);
  }
  if (log_key_is_secret(f->key)) {
    json ? put_json_string(b, "[redacted]") : buf_puts(b, "[redacted]");
    return;
  }
  switch (f->type) {
  case PH_LF_STR: {
    const char *s = f->v.s ? f->v.s : "";
    json ? put_json_string(b, s) : put_text_value(b, s);
    break;
  }
  case PH_LF_INT:
    buf_printf(b, "%lld", (long long)f->v.i);
    break;
  case PH_LF_UINT:
    buf_printf(b, "%llu", (unsigned long long)f->v.u);
    break;
  case PH_LF_DBL:
    buf_printf(b, "%.6g", f->v.d);
    break;
  default:
    buf_puts(b, json ? "null" : "?");
  }
}

static void format_record(ph_buf *b, const char *module, int level,
                          const char *msg, const ph_log_field *fields,
                          size_t n, uint64_t suppressed) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  char when[96];
  snprintf(when, sizeof(when), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
           tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
           tm.tm_min, tm.tm_sec, (int)(ts.tv_nsec / 1000000));
  const char *lvl = level >= 0 && level < 4 ? level_names[level] : "info";
  const char *mod = module ? module : "host";
  int json = log_format == PH_LOG_FMT_JSON;
  if (json) {
    buf_printf(b, "{\"ts\":\"%s\",\"level\":\"%s\",\"module\":", when, lvl);
    put_json_string(b, mod);
    buf_puts(b, ",\"msg\":");
    put_json_string(b, msg);
  } else {
    buf_printf(b, "ts=%s level=%s module=%s msg=", when, lvl, mod);
    put_text_value(b, msg);
  }
  /* Slot 0 is the empty placeholder the SDK macros add. */
  for (size_t i = 0; i < n; i++)
    if (fields[i].key)
      put_field(b, &fields[i], json);
  if (suppressed) {
    ph_log_field f = PH_UINT("suppressed", suppressed);
    put_field(b, &f, json);
  }
  buf_puts(b, json ? "}\n" : "\n");
}

static void emit(const char *module, int level, const char *msg,
                 const ph_log_field *fields, size_t n, uint64_t suppressed) {
  ph_buf b;
  buf_init(&b, 16384); /* a record longer than this is cut, not dropped */
  format_record(&b, module, level, msg, fields, n, suppressed);
  if (b.len == 0) {
    buf_free(&b);
    return;
  }
  if (b.overflow)
    b.data[b.len - 1] = '\n';
  pthread_mutex_lock(&log_lock);
  size_t off = 0;
  while (off < b.len) {
    ssize_t w = write(log_fd, b.data + off, b.len - off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      break;
    off += (size_t)w;
  }
  pthread_mutex_unlock(&log_lock);
  buf_free(&b);
}

void log_write(const char *module, int level, const char *msg,
               const ph_log_field *fields, size_t n) {
  if (log_enabled(level))
    emit(module, level, msg, fields, n, 0);
}

void log_write_rl(const char *module, ph_ratelimit *rl, int level,
                  const char *msg, const ph_log_field *fields, size_t n) {
  if (!log_enabled(level))
    return;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
  uint32_t burst = rl->burst ? rl->burst : 10;
  uint64_t suppressed = 0;
  pthread_mutex_lock(&log_lock);
  if (now - rl->window_start_ms >= 1000) {
    rl->window_start_ms = now;
    rl->emitted = 0;
  }
  int allow = rl->emitted < burst;
  if (allow) {
    rl->emitted++;
    suppressed = rl->suppressed;
    rl->suppressed = 0;
  } else {
    rl->suppressed++;
  }
  pthread_mutex_unlock(&log_lock);
  if (allow)
    emit(module, level, msg, fields, n, suppressed);
}
