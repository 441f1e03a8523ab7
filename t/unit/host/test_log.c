/* SPDX-License-Identifier: BSD-2-Clause */
/* Structured logging: formats, levels, redaction of secret-named fields,
 * and per-call-site rate limiting. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "tap.h"

static char path[] = "/tmp/ph-test-log-XXXXXX";

static char *slurp(void) {
  static char data[65536];
  FILE *f = fopen(path, "r");
  size_t n = f ? fread(data, 1, sizeof(data) - 1, f) : 0;
  data[n] = '\0';
  if (f)
    fclose(f);
  return data;
}

static void reset(void) {
  FILE *f = fopen(path, "w");
  if (f)
    fclose(f);
}

static int count_lines(const char *s) {
  int n = 0;
  for (; *s; s++)
    n += *s == '\n';
  return n;
}

static void test_text(void) {
  reset();
  log_configure(PH_LOG_INFO, PH_LOG_FMT_TEXT);
  HLOG(PH_LOG_INFO, "listener started", PH_STR("addr", "127.0.0.1"),
       PH_INT("port", 1080), PH_STR("note", "two words"));
  HLOG(PH_LOG_DEBUG, "hidden debug record");
  const char *s = slurp();
  like(s, "level=info module=host msg=\"listener started\" addr=127.0.0.1 "
          "port=1080 note=\"two words\"",
       "key=value record with quoting");
  unlike(s, "hidden debug record", "records below the level are dropped");
  is_int(count_lines(s), 1, "one line per record");
}

static void test_redaction(void) {
  reset();
  log_configure(PH_LOG_DEBUG, PH_LOG_FMT_TEXT);
  ph_log_field f[] = {PH_STR("password", "hunter2"),
                      PH_STR("api_token", "tok-123"),
                      PH_STR("Proxy_Authorization", "Basic Zm9vOmJhcg=="),
                      PH_STR("dsn", "postgres://u:pw@h/db"),
                      PH_STR("user", "alice")};
  log_write("socks5", PH_LOG_INFO, "auth", f, 5);
  const char *s = slurp();
  unlike_each(s, "secret value (password, token, authorization, dsn) never "
              "written", "hunter2", "tok-123", "Zm9vOmJhcg", "pw@h");
  like_each(s, "password marked redacted, ordinary fields kept, module named",
            "password=[redacted]", "user=alice", "module=socks5");
}

/* A hostile value (a newline, a control byte) cannot forge a record or
 * reach a terminal raw, in either format. */
static void test_control_bytes(void) {
  reset();
  log_configure(PH_LOG_INFO, PH_LOG_FMT_TEXT);
  HLOG(PH_LOG_INFO, "x", PH_STR("v", "a\nlevel=error msg=forged\x01"));
  const char *s = slurp();
  is_int(count_lines(s), 1, "text: a newline in a value stays in its record");
  like(s, "v=\"a\\nlevel=error msg=forged\\x01\"",
       "text: newline and control bytes escaped inside quotes");
  reset();
  log_configure(PH_LOG_INFO, PH_LOG_FMT_JSON);
  HLOG(PH_LOG_INFO, "x", PH_STR("v", "a\nb\x01"));
  s = slurp();
  is_int(count_lines(s), 1, "json: one line");
  like(s, "\"v\":\"a\\nb\\u0001\"", "json: \\n and \\u0001");
}

static void test_json(void) {
  reset();
  log_configure(PH_LOG_INFO, PH_LOG_FMT_JSON);
  HLOG(PH_LOG_WARN, "say \"hi\"", PH_STR("path", "a\\b"), PH_INT("n", -3),
       PH_STR("secret", "s3cr3t"));
  const char *s = slurp();
  like_each(s,
            "json: an object per line, quotes and backslashes escaped, "
            "integers unquoted, secrets redacted",
            "{\"ts\":\"",
            "\"level\":\"warn\",\"module\":\"host\",\"msg\":\"say \\\"hi\\\"\"",
            "\"path\":\"a\\\\b\"", "\"n\":-3", "\"secret\":\"[redacted]\"");
  unlike(s, "s3cr3t", "secret value absent in json");
  /* A real JSON parser must accept the line. */
  char cmd[256];
  snprintf(cmd, sizeof(cmd),
           "python3 -c 'import json,sys; [json.loads(l) for l in "
           "open(\"%s\")]' 2>/dev/null",
           path);
  is_int(system(cmd), 0, "python's json module parses every line");
}

static void test_rate_limit(void) {
  reset();
  log_configure(PH_LOG_INFO, PH_LOG_FMT_TEXT);
  ph_ratelimit rl = {0};
  ph_log_field f[] = {PH_INT("errno", 24)};
  for (int i = 0; i < 100; i++)
    log_write_rl(NULL, &rl, PH_LOG_WARN, "accept failed", f, 1);
  is_int(count_lines(slurp()), 10, "burst of 10 records per second");
  usleep(1100 * 1000);
  log_write_rl(NULL, &rl, PH_LOG_WARN, "accept failed", f, 1);
  const char *s = slurp();
  is_int(count_lines(s), 11, "a new second allows a record");
  like(s, "suppressed=90", "the next record reports what was suppressed");
}

static void test_parse(void) {
  is_int(log_level_parse("debug"), PH_LOG_DEBUG, "level debug");
  is_int(log_level_parse("WARN"), PH_LOG_WARN, "level names ignore case");
  is_int(log_level_parse("loud"), -1, "unknown level");
  is_int(log_format_parse("json"), PH_LOG_FMT_JSON, "format json");
  is_int(log_format_parse("xml"), -1, "unknown format");
  ok(log_key_is_secret("db_password"), "db_password is secret");
  ok(!log_key_is_secret("stage"), "stage is not secret");
}

int main(void) {
  plan_lazy();
  int fd = mkstemp(path);
  if (fd < 0)
    return 1;
  close(fd);
  ok(log_open(path) == 0, "log file opened");
  test_text();
  test_redaction();
  test_control_bytes();
  test_json();
  test_rate_limit();
  test_parse();
  log_close();
  unlink(path);
  return done_testing();
}
