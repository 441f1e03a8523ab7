/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for the configuration store (host/conf.h, host/conf_*.c):
 * loading, includes, precedence, validation, error reporting and
 * redaction. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

#include "buf.h"
#include "conf.h"
#include "tap.h"

static const ph_conf_key host_keys[] = {
    {.name = "threads", .type = PH_CONF_INT, .def = "4", .min = 1, .max = 64},
    PH_CONF_END};

static const ph_conf_key socks5_keys[] = {
    {.name = "listen",
     .type = PH_CONF_STRING,
     .def = "127.0.0.1:1080",
     .min = 1,
     .max = 64},
    {.name = "max_clients",
     .type = PH_CONF_INT,
     .def = "100",
     .min = 1,
     .max = 65535},
    {.name = "enabled", .type = PH_CONF_BOOL, .def = "true"},
    {.name = "timeout",
     .type = PH_CONF_DURATION,
     .def = "5s",
     .min = 100,
     .max = 3600000},
    {.name = "buffer",
     .type = PH_CONF_SIZE,
     .def = "64KiB",
     .min = 1024,
     .max = 1 << 30},
    {.name = "peers", .type = PH_CONF_LIST, .max = 4},
    {.name = "stream.window", .type = PH_CONF_INT, .def = "16"},
    {.name = "retry-delay", .type = PH_CONF_DURATION, .def = "250ms"},
    {.name = "offset", .type = PH_CONF_INT},
    {.name = "password",
     .type = PH_CONF_STRING,
     .max = 16,
     .flags = PH_CONF_SENSITIVE},
    {.name = "pin",
     .type = PH_CONF_INT,
     .def = "1234",
     .min = 0,
     .max = 9999,
     .flags = PH_CONF_SENSITIVE},
    {.name = "mode",
     .type = PH_CONF_ENUM,
     .def = "fast",
     .choices = "fast|safe"},
    PH_CONF_END};

static const ph_conf_key pool_keys[] = {
    {.name = "control_plane_address",
     .type = PH_CONF_STRING,
     .min = 1,
     .flags = PH_CONF_REQUIRED,
     .env = "PROXY_POOL_CONTROL_PLANE_ADDRESS"},
    PH_CONF_END};

static int declare_std(ph_conf *c) {
  int a = conf_declare(c, "proxyhost", host_keys);
  int b = conf_declare(c, "socks5", socks5_keys);
  return a < 0 || b < 0 ? -1 : 0;
}

/* Loads text as t.ini, applies the --set list, declares the standard
 * sections and finalizes. *rc gets finalize's result (or -1 if loading
 * failed, with finalize still run so that every error is in err). */
static ph_conf *setup(const char *text, const char *const *sets,
                      char *const *env, ph_buf *err, int *rc) {
  ph_conf *c = conf_new();
  int r = conf_load_string(c, "t.ini", text, err);
  for (size_t i = 0; sets && sets[i]; i++)
    if (conf_set_cli(c, sets[i], err) < 0)
      r = -1;
  declare_std(c);
  if (conf_finalize(c, env, err) < 0)
    r = -1;
  *rc = r;
  return c;
}

static size_t count_lines(const char *s) {
  size_t n = 0;
  for (; s && *s; s++)
    n += *s == '\n';
  return n;
}

static char *print_conf(const ph_conf *c) {
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  conf_print(c, f);
  fclose(f);
  return out;
}

/* ---- temporary files --------------------------------------------------- */

static char tmpdir[64];
static char *created[64];
static size_t n_created;

static const char *path_in(const char *rel) {
  static char p[4][256];
  static int i;
  i = (i + 1) % 4;
  snprintf(p[i], sizeof(p[i]), "%s/%s", tmpdir, rel);
  return p[i];
}

static void make_dir(const char *rel) {
  const char *p = path_in(rel);
  if (mkdir(p, 0700) == 0 && n_created < 64)
    created[n_created++] = strdup(p);
}

static void write_file(const char *rel, const char *text) {
  const char *p = path_in(rel);
  FILE *f = fopen(p, "w");
  if (!f)
    return;
  fputs(text, f);
  fclose(f);
  if (n_created < 64)
    created[n_created++] = strdup(p);
}

static void remove_tmp(void) {
  /* Files and subdirectories, newest first, then the directory itself. */
  while (n_created > 0) {
    char *p = created[--n_created];
    if (unlink(p) < 0)
      rmdir(p);
    free(p);
  }
  rmdir(tmpdir);
}

/* ---- tests ------------------------------------------------------------- */

static void test_parsers(void) {
  int64_t v = -1;
  ok(conf_parse_duration_ms("250ms", &v) == 0 && v == 250, "250ms");
  ok(conf_parse_duration_ms("5s", &v) == 0 && v == 5000, "5s");
  ok(conf_parse_duration_ms("2m", &v) == 0 && v == 120000, "2m");
  ok(conf_parse_duration_ms("1h", &v) == 0 && v == 3600000, "1h");
  ok(conf_parse_duration_ms("0", &v) == 0 && v == 0, "bare 0 duration");
  ok(conf_parse_duration_ms("5", &v) < 0, "duration needs a unit");
  ok(conf_parse_duration_ms("5x", &v) < 0, "unknown duration unit");
  ok(conf_parse_duration_ms("-5s", &v) < 0, "negative duration");
  ok(conf_parse_duration_ms("5 s", &v) < 0, "space before unit");
  ok(conf_parse_duration_ms("", &v) < 0, "empty duration");
  ok(conf_parse_duration_ms("9223372036854775807ms", &v) == 0 && v == INT64_MAX,
     "largest duration");
  ok(conf_parse_duration_ms("9223372036854775808ms", &v) < 0,
     "duration digits overflow");
  ok(conf_parse_duration_ms("2562047788016h", &v) < 0,
     "duration unit overflow");

  ok(conf_parse_size("512", &v) == 0 && v == 512, "512 bytes");
  ok(conf_parse_size("10B", &v) == 0 && v == 10, "10B");
  ok(conf_parse_size("64KiB", &v) == 0 && v == 65536, "64KiB");
  ok(conf_parse_size("1K", &v) == 0 && v == 1024, "1K is binary");
  ok(conf_parse_size("16MiB", &v) == 0 && v == 16 << 20, "16MiB");
  ok(conf_parse_size("2G", &v) == 0 && v == 2LL << 30, "2G");
  ok(conf_parse_size("1GiB", &v) == 0 && v == 1 << 30, "1GiB");
  ok(conf_parse_size("1KB", &v) < 0, "KB is not a unit");
  ok(conf_parse_size("1.5M", &v) < 0, "fractional size");
  ok(conf_parse_size("-1", &v) < 0, "negative size");
  ok(conf_parse_size("99999999999999999999", &v) < 0, "size digits overflow");
  ok(conf_parse_size("8589934591G", &v) == 0, "large size fits");
  ok(conf_parse_size("8589934592G", &v) < 0, "size overflow");

  ok(conf_parse_bool("True", &v) == 0 && v == 1, "True");
  ok(conf_parse_bool("NO", &v) == 0 && v == 0, "NO");
  ok(conf_parse_bool("on", &v) == 0 && v == 1, "on");
  ok(conf_parse_bool("off", &v) == 0 && v == 0, "off");
  ok(conf_parse_bool("1", &v) == 0 && v == 1, "1");
  ok(conf_parse_bool("0", &v) == 0 && v == 0, "0");
  ok(conf_parse_bool("2", &v) < 0, "2 is not a bool");
  ok(conf_parse_bool("", &v) < 0, "empty is not a bool");
}

static void test_basic(void) {
  ph_buf err;
  buf_init(&err, 0);
  int rc;
  ph_conf *c = setup("; comment\n"
                     "[socks5]\n"
                     "listen = 0.0.0.0:1081 ; inline comment\n"
                     "max_clients = 500\n"
                     "enabled = Off\n"
                     "timeout = 2m\n"
                     "buffer = 1MiB\n"
                     "peers = a.example,  b.example ,c\n"
                     "stream.window = -7\n"
                     "mode = safe\n",
                     NULL, NULL, &err, &rc);
  is_int(rc, 0, "valid config finalizes");
  is_str(err.data ? err.data : "", "", "no errors");
  is_str(conf_str(c, "socks5", "listen"), "0.0.0.0:1081", "string value");
  is_int(conf_int(c, "socks5", "max_clients"), 500, "int value");
  is_int(conf_int(c, "socks5", "enabled"), 0, "bool value");
  is_str(conf_str(c, "socks5", "enabled"), "Off", "bool text as written");
  is_int(conf_int(c, "socks5", "timeout"), 120000, "duration in ms");
  is_str(conf_str(c, "socks5", "timeout"), "2m", "duration text");
  is_int(conf_int(c, "socks5", "buffer"), 1 << 20, "size in bytes");
  is_int(conf_list_len(c, "socks5", "peers"), 3, "list length");
  is_str(conf_list_at(c, "socks5", "peers", 1), "b.example",
         "list item trimmed");
  ok(conf_list_at(c, "socks5", "peers", 3) == NULL, "list index past end");
  is_str(conf_str(c, "socks5", "peers"), "a.example,b.example,c",
         "list text joined after trimming");
  is_int(conf_int(c, "socks5", "stream.window"), -7,
         "dotted key, unbounded negative int");
  is_str(conf_str(c, "socks5", "mode"), "safe", "enum value");
  is_int(conf_int(c, "socks5", "retry-delay"), 250, "default applied");
  is_int(conf_int(c, "socks5", "offset"), 0, "NULL default is 0");
  is_str(conf_str(c, "socks5", "offset"), "0", "NULL int default text");
  is_str(conf_str(c, "socks5", "password"), "", "NULL string default");
  is_int(conf_list_len(c, "socks5", "password"), 0, "not a list");
  ok(conf_is_set(c, "socks5", "max_clients"), "file value is set");
  ok(!conf_is_set(c, "socks5", "retry-delay"), "default is not set");
  ok(conf_str(c, "socks5", "nope") == NULL, "unknown key: NULL");
  ok(conf_int(c, "nope", "max_clients") == 0, "unknown section: 0");
  ok(conf_str(c, "nope", "x") == NULL, "unknown section: NULL");
  is_int(conf_file_count(c), 0, "a string is not a file");
  conf_free(c);
  buf_free(&err);
}

/* The line limit (docs/configuration.md, "Line limit"). Debian's libinih
 * sizes its line buffer from a process-wide variable, which the reader
 * sets to the documented limit; a libinih built with a fixed buffer keeps
 * its own (199 bytes by default) and the reader refuses longer lines. */
#if defined(HAVE_DECL_INI_MAX_LINE) && HAVE_DECL_INI_MAX_LINE
#define MAXL 8191
#else
#define MAXL (INI_MAX_LINE - 1)
#endif

/* Loads text (as name) into a fresh store with the standard sections and
 * finalizes it; the errors of both steps end up in err. */
static ph_conf *load_text(const char *name, const char *text, ph_buf *err,
                          int *load_rc, int *fin_rc) {
  ph_conf *c = conf_new();
  *load_rc = conf_load_string(c, name, text, err);
  declare_std(c);
  *fin_rc = conf_finalize(c, NULL, err);
  return c;
}

/* "key = " + filler to exactly len bytes, in out. */
static void line_of(char *out, size_t n, const char *key, char fill,
                    size_t len) {
  int k = snprintf(out, n, "%s = ", key);
  memset(out + k, fill, len - (size_t)k);
  out[len] = '\0';
}

/* A line or a text of up to MAXL + 2 lines' worth: one allocation each. */
#define BIG (3 * (MAXL + 64))

static void test_crlf_and_line_limit(void) {
  ph_buf err;
  buf_init(&err, 0);
  int rc;
  /* "listen = " + filler: the longest line allowed, and one byte more. */
  char *ok_line = malloc(BIG), *long_line = malloc(BIG), *text = malloc(BIG);
  line_of(ok_line, BIG, "listen", 'x', MAXL);
  line_of(long_line, BIG, "listen", 'y', MAXL + 1);
  static const ph_conf_key long_keys[] = {
      {.name = "listen", .type = PH_CONF_STRING}, PH_CONF_END};
  snprintf(text, BIG, "[wide]\r\n%s\r\n", ok_line);
  ph_conf *c = conf_new();
  is_int(conf_load_string(c, "w.ini", text, &err), 0,
         "a line of the limit's length with CRLF loads");
  conf_declare(c, "wide", long_keys);
  is_int(conf_finalize(c, NULL, &err), 0, "and validates");
  is_str(conf_str(c, "wide", "listen"), ok_line + 9, "value is not truncated");
  conf_free(c);

  buf_reset(&err);
  snprintf(text, BIG, "[wide]\n%s\nlisten = short\n", long_line);
  c = conf_new();
  is_int(conf_load_string(c, "w.ini", text, &err), -1,
         "a line one byte over the limit is refused");
  char want[160];
  snprintf(want, sizeof(want),
           "w.ini:2: wide.listen: line too long (max %d bytes)\n", MAXL);
  is_str(err.data, want, "too-long line error names file:line, key, limit");
  conf_declare(c, "wide", long_keys);
  is_int(conf_finalize(c, NULL, &err), 0,
         "the rest of the line is not read as a new line");
  is_str(conf_str(c, "wide", "listen"), "short",
         "line after the long one keeps its number and value");
  conf_free(c);

  buf_reset(&err);
  c = setup("[socks5]\nmax_clients = 5\n\n\n\nmax_clients = 6\n", NULL, NULL,
            &err, &rc);
  like(err.data,
       "t.ini:6: socks5.max_clients: duplicate key, first set at "
       "t.ini:2",
       "lines are counted across blank lines");
  conf_free(c);
  free(ok_line);
  free(long_line);
  free(text);
  buf_free(&err);
}

/* Issue 24 item 2: values longer than inih's default 199-byte buffer (a
 * module_path under a deep build directory, a long modules list, a
 * certificate path) are read whole, and every kind of line follows the
 * same rules as a short one. */
static void test_long_values(void) {
  if (MAXL < 1000) {
    printf("ok %d # SKIP this libinih has a fixed %d-byte line buffer\n",
           ++tap_n_, MAXL + 1);
    return;
  }
  ph_buf err;
  buf_init(&err, 0);

  char *text = malloc(BIG), *v = malloc(BIG), *cont = malloc(BIG);
  char *com = malloc(BIG), *sect = malloc(BIG);
  static const ph_conf_key long_keys[] = {
      {.name = "path", .type = PH_CONF_STRING},
      {.name = "dirs", .type = PH_CONF_LIST},
      PH_CONF_END};
  memset(v, 'p', 900);
  v[0] = '/';
  v[900] = '\0';
  memset(cont, 'c', 700);
  cont[700] = '\0';
  /* A long comment whose tail, cut at 199 bytes, would be a key line. */
  memset(com, ';', 500);
  snprintf(com + 500, BIG - 500, "path = /tail");
  memset(sect, 's', 300);
  sect[300] = '\0';
  snprintf(text, BIG,
           "[wide]\n"
           "path = %s   ; a comment after a long value\n" /* 2 */
           "%s\n"                                          /* 3 */
           "dirs : %s/a, %s/b\n"                           /* 4 */
           "    %s ; a long continuation line\n",          /* 5 */
           v, com, v, v, cont);
  ph_conf *c = conf_new();
  is_int(conf_load_string(c, "long.ini", text, &err), 0,
         "issue 24 item 2: lines of 1-2 KiB load");
  conf_declare(c, "wide", long_keys);
  conf_finalize(c, NULL, &err);
  is_str(conf_str(c, "wide", "path"), v,
         "a 907-byte value is read whole, its inline comment dropped");
  is_int(conf_list_len(c, "wide", "dirs"), 3,
         "a long list line and its long continuation line: 3 items");
  snprintf(text, BIG, "%s/b", v);
  is_str(conf_list_at(c, "wide", "dirs", 1), text, "the second item whole");
  is_str(conf_list_at(c, "wide", "dirs", 2), cont,
         "the continuation line whole, without its comment");
  ok(!err.data || !*err.data, "no error");
  conf_free(c);

  /* A long section header is a header: the key after it is not wide's. */
  buf_reset(&err);
  snprintf(text, BIG, "[wide]\npath = here\n[%s]\npath = elsewhere\n", sect);
  c = conf_new();
  is_int(conf_load_string(c, "s.ini", text, &err), 0,
         "a 302-byte section header loads");
  conf_declare(c, "wide", long_keys);
  conf_finalize(c, NULL, &err);
  unlike(err.data, "duplicate", "the key after it is in its section");
  snprintf(text, BIG, "s.ini:3: %s: unknown section", sect);
  like(err.data, text, "which is named in full (and unknown here)");
  conf_free(c);

  /* An empty key on a long line: inih keeps no key to continue. */
  buf_reset(&err);
  snprintf(text, BIG, "[wide]\n = %s\n  more\n", v);
  c = conf_new();
  conf_load_string(c, "e.ini", text, &err);
  conf_declare(c, "wide", long_keys);
  conf_finalize(c, NULL, &err);
  like(err.data, "e.ini:2: missing key name before '='",
       "a long line without a key name is refused");
  conf_free(c);
  free(text);
  free(v);
  free(cont);
  free(com);
  free(sect);
  buf_free(&err);
}

/* inih cuts a long line and reads the rest as a new line: never here. */
static void test_long_lines_never_truncated(void) {
  ph_buf err;
  buf_init(&err, 0);
  int lrc, frc;
  char *a = malloc(BIG), *b = malloc(BIG), *text = malloc(BIG);
  char want[200];

  /* A too-long comment whose tail, cut at the limit, would be a key. */
  memset(a, ';', MAXL);
  snprintf(a + MAXL, BIG - MAXL, "max_clients = 7");
  snprintf(text, BIG, "[socks5]\n%s\n", a);
  ph_conf *c = load_text("c.ini", text, &err, &lrc, &frc);
  is_int(lrc, -1, "a too-long comment line is refused too");
  snprintf(want, sizeof(want), "c.ini:2: line too long (max %d bytes)\n",
           MAXL);
  is_str(err.data, want, "long comment: file:line, nothing else");
  is_int(conf_int(c, "socks5", "max_clients"), 100,
         "long comment: its tail did not become a key");
  conf_free(c);

  /* Section headers and continuation lines are lines like the others. */
  buf_reset(&err);
  memset(a, 's', MAXL + 10);
  a[MAXL + 10] = '\0';
  line_of(b, BIG, "  more", 'p', MAXL + 50);
  snprintf(text, BIG, "[%s]\n[socks5]\npeers = x\n%s\n", a, b);
  c = load_text("h.ini", text, &err, &lrc, &frc);
  snprintf(want, sizeof(want), "h.ini:1: line too long (max %d bytes)", MAXL);
  like(err.data, want, "a too-long section header is refused with file:line");
  snprintf(want, sizeof(want),
           "h.ini:4: socks5.peers: continuation line too long (max %d bytes)",
           MAXL);
  like(err.data, want,
       "a too-long continuation line is refused with file:line and its key");
  is_str(conf_str(c, "socks5", "peers"), "x",
         "nothing of the long continuation line was appended");
  conf_free(c);
  /* ... of an include line: no key to name. */
  buf_reset(&err);
  line_of(b, BIG, "  more", 'p', MAXL + 50);
  snprintf(text, BIG, "[proxyhost]\ninclude = nosuch*.ini\n%s\n", b);
  c = load_text("i.ini", text, &err, &lrc, &frc);
  snprintf(want, sizeof(want),
           "i.ini:3: continuation line too long (max %d bytes)", MAXL);
  like(err.data, want, "a too-long continuation of an include line");
  conf_free(c);

  /* The last line without a newline, and CR LF at the limit. */
  buf_reset(&err);
  line_of(a, BIG, "listen", 'z', MAXL + 1);
  snprintf(text, BIG, "[socks5]\nmax_clients = 9\n%s", a);
  c = load_text("eof.ini", text, &err, &lrc, &frc);
  snprintf(want, sizeof(want),
           "eof.ini:3: socks5.listen: line too long (max %d bytes)\n", MAXL);
  is_str(err.data, want, "a long last line without a newline is refused");
  is_str(conf_str(c, "socks5", "listen"), "127.0.0.1:1080",
         "long last line: the key keeps its default");
  conf_free(c);
  buf_reset(&err);
  line_of(a, BIG, "peers", 'q', MAXL);
  line_of(b, BIG, "offset", '1', MAXL + 1);
  snprintf(text, BIG, "[socks5]\r\n%s\r\n%s\r\n", a, b);
  c = load_text("crlf.ini", text, &err, &lrc, &frc);
  snprintf(want, sizeof(want),
           "crlf.ini:3: socks5.offset: line too long (max %d bytes)\n", MAXL);
  is_str(err.data, want,
         "CR LF: the terminator does not count, limit + 1 bytes are refused");
  is_int(strlen(conf_str(c, "socks5", "peers")), MAXL - 8,
         "CR LF: the line of the limit's length is read whole");
  conf_free(c);
  free(a);
  free(b);
  free(text);
  buf_free(&err);
}

#if defined(HAVE_DECL_INI_MAX_LINE) && HAVE_DECL_INI_MAX_LINE
/* Debian's libinih takes its options from process-wide variables: set
 * them the worst way and read the same text; the reader pins them. */
static void test_inih_options_pinned(void) {
  ph_buf err;
  buf_init(&err, 0);
  int lrc, frc;
  char *a = malloc(BIG), *b = malloc(BIG), *text = malloc(BIG);
  char want[200];
  line_of(a, BIG, "peers", 'q', MAXL);
  line_of(b, BIG, "listen", 'y', MAXL + 1);
  snprintf(text, BIG,
           "[socks5]\n%s\n  more ; a comment\nmax_clients = 3\n%s\n"
           "no equals sign\nmode = safe\n",
           a, b);
  static char odd_prefixes[] = "m";
  ini_use_stack = false;
  ini_allow_realloc = true;
  ini_initial_alloc = 16;
  ini_max_line = 64;
  ini_stop_on_first_error = true;
  ini_allow_no_value = true;
  ini_allow_multiline = false;
  ini_allow_inline_comments = false;
  ini_start_comment_prefixes = odd_prefixes;
  ph_conf *c = load_text("pin.ini", text, &err, &lrc, &frc);
  is_int(ini_max_line, MAXL + 1, "pinned: inih reads lines of the limit");
  ok(!ini_allow_realloc && ini_use_stack && !ini_stop_on_first_error,
     "pinned: no realloc continuation reads, every error reported");
  snprintf(want, sizeof(want),
           "pin.ini:5: socks5.listen: line too long (max %d bytes)\n"
           "pin.ini:6: syntax error: expected key = value\n",
           MAXL);
  is_str(err.data, want,
         "pinned: the long line is refused with file:line, and the error "
         "after it is reported too");
  is_int(conf_list_len(c, "socks5", "peers"), 2,
         "pinned: a line of the limit's length is read whole, then its "
         "continuation");
  is_int(strlen(conf_list_at(c, "socks5", "peers", 0)), MAXL - 8,
         "pinned: the value is not glued to the next line");
  is_str(conf_list_at(c, "socks5", "peers", 1), "more",
         "pinned: inline comments as documented");
  is_int(conf_int(c, "socks5", "max_clients"), 3,
         "pinned: the line after it is its own line");
  is_str(conf_str(c, "socks5", "mode"), "safe",
         "pinned: comment prefixes and continuation rules as documented");
  conf_free(c);
  free(a);
  free(b);
  free(text);
  buf_free(&err);
}
#endif
static void test_errors(void) {
  ph_buf err;
  buf_init(&err, 0);
  int rc;
  ph_conf *c = setup("[nosuch]\n"                         /* 1 */
                     "x = 1\n"                            /* 2 */
                     "[socks5]\n"                         /* 3 */
                     "bogus = 1\n"                        /* 4 */
                     "max_clients = 70000\n"              /* 5 */
                     "timeout = 5\n"                      /* 6 */
                     "buffer = 12 bytes\n"                /* 7 */
                     "enabled = maybe\n"                  /* 8 */
                     "stream.window = 12abc\n"            /* 9 */
                     "peers = a,,b\n"                     /* 10 */
                     "listen = \n"                        /* 11 */
                     "mode = slow\n"                      /* 12 */
                     "retry-delay = 99999999999999999h\n" /* 13 */
                     "offset = 99999999999999999999\n"    /* 14 */
                     "[proxyhost]\n"                      /* 15 */
                     "threads = 99999999999999999999x\n", /* 16 */
                     NULL, NULL, &err, &rc);
  is_int(rc, -1, "invalid config fails");
  like(err.data, "t.ini:1: nosuch"
         ": unknown section: no module of that name is loaded;"
         " add nosuch to [proxyhost] modules\n", "unknown section");
  unlike(err.data, "nosuch.x", "keys of an unknown section not repeated");
  like(err.data, "t.ini:4: socks5.bogus: unknown key\n", "unknown key");
  like(err.data,
       "t.ini:5: socks5.max_clients: 70000 is above the maximum 65535\n",
       "int above the maximum (TM-CFG-25)");
  like(err.data,
       "t.ini:6: socks5.timeout: not a duration (use 250ms, 5s, 2m, 1h)\n",
       "bad duration");
  like(err.data, "t.ini:7: socks5.buffer: not a size", "bad size");
  like(err.data, "t.ini:8: socks5.enabled: not a boolean", "bad bool");
  like(err.data, "t.ini:9: socks5.stream.window: not an integer", "bad int");
  like(err.data, "t.ini:10: socks5.peers: empty list item", "bad list");
  like(err.data, "t.ini:11: socks5.listen: value is too short",
       "string below min length");
  like(err.data, "t.ini:12: socks5.mode: slow is not one of fast|safe",
       "bad enum");
  like(err.data, "t.ini:13: socks5.retry-delay: duration out of range",
       "duration overflow (TM-CFG-25)");
  like(err.data, "t.ini:14: socks5.offset: integer out of range",
       "int overflow (TM-CFG-25)");
  like(err.data, "t.ini:16: proxyhost.threads: not an integer",
       "overflowing digits with junk are not a number");
  is_int(count_lines(err.data), 13, "every error reported, one per line");
  conf_free(c);

  buf_reset(&err);
  c = setup("[socks5]\nmax_clients = 0\ntimeout = 2h\nbuffer = 2GiB\n"
            "peers = a,b,c,d,e\nlisten = "
            "0123456789012345678901234567890123456789012345678901234567890"
            "1234\n",
            NULL, NULL, &err, &rc);
  like(err.data, "t.ini:2: socks5.max_clients: 0 is below the minimum 1\n",
       "int below the minimum");
  like(err.data, "t.ini:3: socks5.timeout: 2h is above the maximum 1h\n",
       "duration bound in its unit");
  like(err.data, "t.ini:4: socks5.buffer: 2GiB is above the maximum 1GiB\n",
       "size bound in its unit");
  like(err.data, "t.ini:5: socks5.peers: too many items (5, max 4)",
       "list count bound");
  like(err.data, "t.ini:6: socks5.listen: value is too long (65 bytes, max 64)",
       "string above max length");
  conf_free(c);

  buf_reset(&err);
  c = setup("orphan = 1\n[Bad]\nx = 1\n[socks5\nwords without equals\n"
            "[socks5]\n= 3\n",
            NULL, NULL, &err, &rc);
  is_int(rc, -1, "syntax errors fail the load");
  like(err.data, "t.ini:1: orphan: key outside any section\n",
       "key outside any section");
  like(err.data,
       "t.ini:2: invalid section name (use [a-z0-9_]+ or NAME.INSTANCE)\n",
       "section names are [a-z0-9_]+");
  unlike(err.data, "Bad.x", "keys under a rejected header are skipped");
  like(err.data, "t.ini:4: syntax error: no ']'", "unclosed section");
  like(err.data, "t.ini:5: syntax error: expected key = value",
       "line without '='");
  like(err.data, "t.ini:7: missing key name", "empty key name");
  conf_free(c);

  buf_reset(&err);
  c = setup("[socks5]\nmax_clients = 1\n  2\npeers = a\n  b, c\n", NULL, NULL,
            &err, &rc);
  like(err.data,
       "t.ini:3: socks5.max_clients: continuation line (leading whitespace) "
       "is only allowed for list keys",
       "continuation of a non-list key");
  is_int(count_lines(err.data), 1, "list continuation is fine");
  conf_free(c);

  /* Invalid defaults and bad declarations are module bugs, reported too. */
  static const ph_conf_key bad_keys[] = {
      {.name = "n", .type = PH_CONF_INT, .def = "ten"},
      {.name = "m", .type = PH_CONF_INT, .min = 1, .max = 5},
      {.name = "req",
       .type = PH_CONF_INT,
       .min = 1,
       .max = 5,
       .flags = PH_CONF_REQUIRED},
      PH_CONF_END};
  buf_reset(&err);
  c = conf_new();
  conf_load_string(c, "t.ini", "[mod]\nreq = 3\n", &err);
  is_int(conf_declare(c, "mod", bad_keys), 0, "declaring is fine");
  is_int(conf_declare(c, "mod", bad_keys), -1, "re-declaring is an error");
  is_int(conf_finalize(c, NULL, &err), -1, "invalid defaults fail");
  like(err.data, "mod.n: invalid default: not an integer\n",
       "bad default text");
  like(err.data, "mod.m: invalid default: 0 is below the minimum 1\n",
       "NULL default outside the bounds");
  unlike(err.data, "mod.req: invalid default",
         "required key without default needs none");
  like(err.data, "mod: section declared twice", "declared twice reported");
  conf_free(c);
  buf_free(&err);
}

/* An unknown key names the nearest declared key within two edits. */
static void test_nearest_key(void) {
  ph_buf err;
  buf_init(&err, 0);
  int rc;
  ph_conf *c = setup("[socks5]\n"         /* 1 */
                     "lisetn = x\n"       /* 2: a swap */
                     "max_client = 3\n"   /* 3: a deletion */
                     "tmieout = 1s\n"     /* 4: a swap */
                     "zzzzzz = 1\n"       /* 5: nothing near */
                     "pn = 1\n"           /* 6: one edit from pin */
                     "x = 1\n"            /* 7: too short to guess */
                     "[proxyhost]\n"      /* 8 */
                     "thread = 2\n",      /* 9 */
                     NULL, NULL, &err, &rc);
  is_int(rc, -1, "unknown keys fail");
  like(err.data,
       "t.ini:2: socks5.lisetn: unknown key (did you mean \"listen\"?)\n",
       "a transposition is one edit");
  like(err.data,
       "t.ini:3: socks5.max_client: unknown key (did you mean "
       "\"max_clients\"?)\n",
       "a missing letter");
  like(err.data,
       "t.ini:4: socks5.tmieout: unknown key (did you mean \"timeout\"?)\n",
       "another transposition");
  like(err.data, "t.ini:5: socks5.zzzzzz: unknown key\n",
       "no suggestion when nothing is within two edits");
  like(err.data, "t.ini:6: socks5.pn: unknown key (did you mean \"pin\"?)\n",
       "a short key");
  like(err.data, "t.ini:7: socks5.x: unknown key\n",
       "a one-letter key is not guessed");
  like(err.data,
       "t.ini:9: proxyhost.thread: unknown key (did you mean \"threads\"?)\n",
       "the host's own sections too");
  conf_free(c);
  buf_reset(&err);
  c = setup("", (const char *const[]){"socks5.buffr=1KiB", NULL}, NULL, &err,
            &rc);
  is_str(err.data,
         "--set: socks5.buffr: unknown key (did you mean \"buffer\"?)\n",
         "--set too");
  conf_free(c);
  buf_free(&err);
}

static void test_required(void) {
  ph_buf err;
  buf_init(&err, 0);
  ph_conf *c = conf_new();
  conf_declare(c, "pool", pool_keys);
  is_int(conf_finalize(c, NULL, &err), -1, "missing required key fails");
  is_str(err.data,
         "pool.control_plane_address: required key is not set "
         "(environment PROXY_POOL_CONTROL_PLANE_ADDRESS)\n",
         "required error without file:line when no header, naming the "
         "environment name");
  conf_free(c);

  buf_reset(&err);
  c = conf_new();
  conf_load_string(c, "p.ini", "; pool\n[pool]\n", &err);
  conf_declare(c, "pool", pool_keys);
  is_int(conf_finalize(c, NULL, &err), -1, "still missing");
  is_str(err.data,
         "p.ini:2: pool.control_plane_address: required key is not set "
         "(environment PROXY_POOL_CONTROL_PLANE_ADDRESS)\n",
         "required error names the section header");
  conf_free(c);

  buf_reset(&err);
  char *env[] = {"PROXY_POOL_CONTROL_PLANE_ADDRESS=cp:443", NULL};
  c = conf_new();
  conf_declare(c, "pool", pool_keys);
  is_int(conf_finalize(c, env, &err), 0, "required key set by alias");
  is_str(conf_str(c, "pool", "control_plane_address"), "cp:443", "alias value");
  conf_free(c);
  buf_free(&err);
}

static void test_cli_syntax(void) {
  ph_buf err;
  buf_init(&err, 0);
  ph_conf *c = conf_new();
  is_int(conf_set_cli(c, "noequals", &err), -1, "--set without '='");
  is_int(conf_set_cli(c, "nodot=1", &err), -1, "--set without section");
  is_int(conf_set_cli(c, ".key=1", &err), -1, "--set with empty section");
  is_int(conf_set_cli(c, "socks5.=1", &err), -1, "--set with empty key");
  is_int(conf_set_cli(c, "Socks5.x=1", &err), -1, "--set bad section name");
  is_int(conf_set_cli(c, "socks5password=hunter2", &err), -1,
         "--set without a dot before '='");
  is_int(conf_set_cli(c, "proxyhost.include=/etc/*", &err), -1,
         "--set include");
  is_int(count_lines(err.data), 7, "one error per bad --set");
  like(err.data, "--set: expected section.key=value\n", "syntax message");
  like(err.data, "--set: socks5password: expected section.key=value",
       "names the key part");
  unlike(err.data, "hunter2", "--set errors do not echo the value");
  is_int(conf_set_cli(c, "socks5.stream.window = 9", &err), 0,
         "section is the text before the first dot");
  buf_reset(&err);
  conf_set_cli(c, "socks5.nope=1", &err);
  declare_std(c);
  is_int(conf_finalize(c, NULL, &err), -1, "unknown --set key fails");
  is_str(err.data, "--set: socks5.nope: unknown key\n", "--set source named");
  conf_free(c);

  buf_reset(&err);
  c = conf_new();
  conf_set_cli(c, "zzz.a=1", &err);
  declare_std(c);
  conf_finalize(c, NULL, &err);
  is_str(err.data, "--set: zzz"
         ": unknown section: no module of that name is loaded;"
         " add zzz to [proxyhost] modules\n", "unknown --set section");
  conf_free(c);

  buf_reset(&err);
  c = conf_new();
  conf_set_cli(c, "socks5.stream.window=9", &err);
  declare_std(c);
  is_int(conf_finalize(c, NULL, &err), 0, "dotted key via --set");
  is_int(conf_int(c, "socks5", "stream.window"), 9, "dotted key value");
  conf_free(c);
  buf_free(&err);
}

static void test_lists(void) {
  ph_buf err;
  buf_init(&err, 0);
  int rc;
  const char *text = "[socks5]\n"
                     "peers = a, b\n"
                     "max_clients = 9\n"
                     "peers = c\n"
                     "peers =\n"
                     "peers = d\n";
  ph_conf *c = conf_new();
  conf_load_string(c, "t.ini", text, &err);
  is_str(conf_raw(c, "socks5", "peers", NULL), "a, b,c,,d",
         "conf_raw joins the raw list lines with ','");
  is_str(conf_raw(c, "socks5", "max_clients", NULL), "9", "conf_raw single");
  ok(conf_raw(c, "socks5", "listen", NULL) == NULL, "conf_raw unset: NULL");
  declare_std(c);
  is_int(conf_finalize(c, NULL, &err), 0, "repeated list lines append");
  is_int(conf_list_len(c, "socks5", "peers"), 4, "items from every line");
  is_str(conf_list_at(c, "socks5", "peers", 2), "c", "third item");
  is_str(conf_list_at(c, "socks5", "peers", 3), "d", "fourth item");
  is_str(conf_str(c, "socks5", "peers"), "a,b,c,d", "joined list text");
  char *printed = print_conf(c);
  like(printed, "peers = a,b,c,d  ; from t.ini:2, t.ini:4, t.ini:6\n",
       "--print-config names every line a list came from (blank ones "
       "add nothing and are not named)");
  free(printed);
  ph_buf where;
  buf_init(&where, 0);
  conf_where_item(c, "socks5", "peers", "c", &where);
  is_str(where.data, "t.ini:4: ", "conf_where_item: the line that holds c");
  buf_reset(&where);
  conf_where_item(c, "socks5", "peers", "b", &where);
  is_str(where.data, "t.ini:2: ", "conf_where_item: an item after a comma");
  buf_reset(&where);
  conf_where_item(c, "socks5", "peers", "zz", &where);
  is_str(where.data, "t.ini:2: ", "conf_where_item: not there: the key's");
  buf_free(&where);
  conf_free(c);

  buf_reset(&err);
  c = setup("[socks5]\npeers = a, b\n  c ; comment\n\td\n", NULL, NULL, &err,
            &rc);
  is_int(rc, 0, "continuation lines append to a list");
  is_str(conf_str(c, "socks5", "peers"), "a,b,c,d",
         "continuation items, inline comment dropped");
  conf_free(c);

  buf_reset(&err);
  c = setup("[socks5]\npeers = a,b,c\npeers = d,e\n", NULL, NULL, &err, &rc);
  like(err.data, "t.ini:2: socks5.peers: too many items (5, max 4)",
       "count bound applies to all lines together");
  conf_free(c);

  buf_reset(&err);
  c = setup("[socks5]\npeers = a\npeers = b,\n", NULL, NULL, &err, &rc);
  is_str(err.data, "t.ini:3: socks5.peers: empty list item\n",
         "list error points at its own line");
  conf_free(c);
  buf_free(&err);
}

/* covers TM-CFG-1 */
/* Every configuration key follows CLI > env > file > default. */
static void test_precedence(void) {
  ph_buf err;
  buf_init(&err, 0);
  int rc;
  const char *file = "[socks5]\n"
                     "max_clients = 10\n"
                     "timeout = 10s\n"
                     "buffer = 10KiB\n";
  char *env[] = {"PROXYHOST_SOCKS5_MAX_CLIENTS=20",
                 "PROXYHOST_SOCKS5_TIMEOUT= 20s ",
                 "PROXYHOST_SOCKS5_STREAM_WINDOW=21",
                 "PROXYHOST_SOCKS5_RETRY_DELAY=22ms",
                 "PROXYHOST_NOSUCH_KEY=1",
                 "PROXYHOST_SOCKS5_BOGUS=1",
                 NULL};
  const char *sets[] = {"socks5.max_clients=30", "socks5.max_clients=31", NULL};
  ph_conf *c = setup(file, sets, env, &err, &rc);
  is_int(rc, 0, "layers validate; unknown PROXYHOST_ variables ignored");
  is_int(conf_int(c, "socks5", "max_clients"), 31,
         "--set beats env and file (last --set wins)");
  is_int(conf_int(c, "socks5", "timeout"), 20000, "env beats file");
  is_int(conf_int(c, "socks5", "buffer"), 10240, "file beats default");
  is_str(conf_str(c, "socks5", "listen"), "127.0.0.1:1080",
         "default when nothing sets it");
  is_int(conf_int(c, "socks5", "stream.window"), 21,
         "env name maps '.' to '_'");
  is_int(conf_int(c, "socks5", "retry-delay"), 22, "env name maps '-' to '_'");
  ok(conf_is_set(c, "socks5", "timeout"), "env value counts as set");

  char *out = print_conf(c);
  like(out, "max_clients = 31  ; from --set\n", "print names --set");
  like(out, "timeout = 20s  ; from env PROXYHOST_SOCKS5_TIMEOUT\n",
       "print names the env variable");
  like(out, "buffer = 10KiB  ; from t.ini:4\n", "print names file:line");
  like(out, "listen = 127.0.0.1:1080  ; from default\n",
       "print names the default");
  free(out);
  conf_free(c);

  /* conf_raw follows the same order before any declaration. */
  c = conf_new();
  buf_reset(&err);
  conf_load_string(c, "t.ini", file, &err);
  is_str(conf_raw(c, "socks5", "buffer", env), "10KiB", "raw: file");
  like(conf_raw(c, "socks5", "timeout", env), "20s", "raw: env");
  conf_set_cli(c, "socks5.timeout=30s", &err);
  is_str(conf_raw(c, "socks5", "timeout", env), "30s", "raw: --set");
  is_str(conf_raw(c, "socks5", "stream.window", env), "21",
         "raw: env without a file entry");
  conf_free(c);

  /* The key's .env alias, and the PROXYHOST_ name winning over it. */
  char *alias_env[] = {"PROXY_POOL_CONTROL_PLANE_ADDRESS=alias:1", NULL};
  char *both_env[] = {"PROXY_POOL_CONTROL_PLANE_ADDRESS=alias:1",
                      "PROXYHOST_POOL_CONTROL_PLANE_ADDRESS=ours:2", NULL};
  c = conf_new();
  buf_reset(&err);
  conf_load_string(c, "t.ini", "[pool]\ncontrol_plane_address = file:0\n",
                   &err);
  conf_declare(c, "pool", pool_keys);
  is_int(conf_finalize(c, alias_env, &err), 0, "alias finalizes");
  is_str(conf_str(c, "pool", "control_plane_address"), "alias:1",
         "alias env beats file");
  is_int(conf_finalize(c, both_env, &err), 0, "both names finalize");
  is_str(conf_str(c, "pool", "control_plane_address"), "ours:2",
         "PROXYHOST_ name beats the alias");
  is_str(conf_raw(c, "pool", "control_plane_address", alias_env), "alias:1",
         "conf_raw knows the alias once declared");
  conf_set_cli(c, "pool.control_plane_address=cli:3", &err);
  declare_std(c);
  is_int(conf_finalize(c, both_env, &err), 0, "with --set");
  is_str(conf_str(c, "pool", "control_plane_address"), "cli:3",
         "--set beats both env names");
  conf_free(c);

  /* Errors name the layer the bad value came from. */
  char *bad_env[] = {"PROXYHOST_SOCKS5_MAX_CLIENTS=70000", NULL};
  buf_reset(&err);
  c = setup("[socks5]\nmax_clients = 7\n", NULL, bad_env, &err, &rc);
  is_str(err.data,
         "env PROXYHOST_SOCKS5_MAX_CLIENTS: socks5.max_clients: 70000 is "
         "above the maximum 65535\n",
         "env error names the variable");
  conf_free(c);
  const char *bad_set[] = {"socks5.enabled=perhaps", NULL};
  buf_reset(&err);
  c = setup("", bad_set, NULL, &err, &rc);
  is_str(err.data,
         "--set: socks5.enabled: not a boolean (use true/false, yes/no, "
         "on/off, 1/0)\n",
         "--set error names --set");
  conf_free(c);
  buf_free(&err);
}

static void test_redaction(void) {
  ph_buf err;
  buf_init(&err, 0);
  int rc;
  ph_conf *c = setup("[socks5]\npassword = hunter2\n", NULL, NULL, &err, &rc);
  is_int(rc, 0, "secret loads");
  is_str(conf_str(c, "socks5", "password"), "hunter2",
         "getter returns the secret");
  char *out = print_conf(c);
  like(out, "[socks5]\n", "section header printed");
  like(out, "password = [redacted]  ; from t.ini:2\n",
       "secret redacted (TM-CFG-26)");
  like(out, "pin = [redacted]  ; from default\n", "secret default redacted");
  unlike(out, "hunter2", "secret absent from print");
  unlike(out, "1234", "secret default absent from print");
  like(out, "[proxyhost]\nthreads = 4  ; from default\n",
       "sections in declaration order");
  ok(out && strstr(out, "[proxyhost]") < strstr(out, "[socks5]"),
     "proxyhost printed before socks5");
  free(out);
  conf_free(c);

  buf_reset(&err);
  char *env[] = {"PROXYHOST_SOCKS5_PIN=123456", NULL};
  c = setup("[socks5]\npassword = hunter2hunter2hunter2\n", NULL, env, &err,
            &rc);
  is_int(rc, -1, "bad secrets fail");
  like(err.data, "t.ini:2: socks5.password: value is too long",
       "secret error still explains");
  like(err.data,
       "env PROXYHOST_SOCKS5_PIN: socks5.pin: value is above the maximum "
       "9999\n",
       "secret int error without the value");
  unlike(err.data, "hunter2", "secret string not echoed");
  unlike(err.data, "123456", "secret int not echoed");
  conf_free(c);

  buf_reset(&err);
  c = setup("[socks5]\n", NULL, NULL, &err, &rc);
  out = print_conf(c);
  like(out, "password =   ; from default\n", "empty unset secret prints empty");
  free(out);
  conf_free(c);
  buf_free(&err);
}

static void test_includes(void) {
  ph_buf err;
  buf_init(&err, 0);
  snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_conf.XXXXXX");
  if (!mkdtemp(tmpdir)) {
    ok(0, "mkdtemp");
    return;
  }
  make_dir("conf.d");
  make_dir("empty.d");
  /* Written 20, 10, 30: neither creation order nor its reverse is sorted,
   * so only glob's sorting gives 10, 20, 30. */
  write_file("conf.d/20-b.ini", "[socks5]\npeers = from-b\nmax_clients = 2\n");
  write_file("conf.d/10-a.ini", "[socks5]\npeers = from-a\n");
  write_file("conf.d/30-c.ini", "[socks5]\npeers = from-c\n");
  write_file("conf.d/README", "not ini at all\n");
  write_file("main.ini", "[proxyhost]\n"
                         "include = conf.d/*.ini\n"
                         "include = empty.d/*.ini\n"
                         "threads = 8\n"
                         "[socks5]\n"
                         "peers = from-main\n");
  ph_conf *c = conf_new();
  is_int(conf_load_file(c, path_in("main.ini"), &err), 0,
         "includes load; no match is not an error");
  is_str(err.data ? err.data : "", "", "no load errors");
  is_int(conf_file_count(c), 4, "four files read");
  is_str(conf_file_at(c, 0), path_in("main.ini"), "main first");
  is_str(conf_file_at(c, 1), path_in("conf.d/10-a.ini"), "10-a second");
  is_str(conf_file_at(c, 2), path_in("conf.d/20-b.ini"), "20-b third");
  is_str(conf_file_at(c, 3), path_in("conf.d/30-c.ini"), "30-c fourth");
  ok(conf_file_at(c, 4) == NULL, "no fifth file");
  declare_std(c);
  is_int(conf_finalize(c, NULL, &err), 0,
         "include is not an unknown key of [proxyhost]");
  is_str(conf_str(c, "socks5", "peers"), "from-a,from-b,from-c,from-main",
         "entries in include order");
  is_int(conf_int(c, "proxyhost", "threads"), 8, "main file keys");
  char *out = print_conf(c);
  char want[512];
  snprintf(want, sizeof(want), "max_clients = 2  ; from %s:3\n",
           path_in("conf.d/20-b.ini"));
  like(out, want, "included values name their own file:line");
  unlike(out, "include", "include is not printed as a key");
  free(out);
  conf_free(c);

  /* Absolute patterns, and duplicates across files. */
  char text[512];
  snprintf(text, sizeof(text), "[proxyhost]\ninclude = %s\n",
           path_in("conf.d/2*.ini"));
  write_file("abs.ini", text);
  write_file("dup.ini", "[socks5]\nmax_clients = 1\n");
  snprintf(text, sizeof(text),
           "[proxyhost]\ninclude = dup.ini\n"
           "include = %s\n",
           path_in("conf.d/20-b.ini"));
  write_file("dupmain.ini", text);
  buf_reset(&err);
  c = conf_new();
  is_int(conf_load_file(c, path_in("abs.ini"), &err), 0, "absolute include");
  is_int(conf_file_count(c), 2, "absolute include read");
  conf_free(c);
  buf_reset(&err);
  c = conf_new();
  conf_load_file(c, path_in("dupmain.ini"), &err);
  declare_std(c);
  is_int(conf_finalize(c, NULL, &err), -1, "duplicate across files");
  snprintf(want, sizeof(want),
           "%s:3: socks5.max_clients: duplicate key, first set at %s:2\n",
           path_in("conf.d/20-b.ini"), path_in("dup.ini"));
  is_str(err.data, want, "duplicate names both places");
  conf_free(c);

  /* A cycle: a includes b includes a. */
  write_file("a.ini", "[proxyhost]\ninclude = b.ini\n");
  write_file("b.ini", "[socks5]\nmax_clients = 3\n[proxyhost]\n"
                      "include = a.ini\n");
  buf_reset(&err);
  c = conf_new();
  is_int(conf_load_file(c, path_in("a.ini"), &err), -1, "cycle refused");
  snprintf(want, sizeof(want),
           "%s:4: include: %s: already read (include cycle?)\n",
           path_in("b.ini"), path_in("a.ini"));
  is_str(err.data, want, "cycle error names the include line");
  conf_free(c);

  /* A plain file name that is not there is a typo: refused. A pattern
   * that matches nothing is an empty conf.d: fine. */
  write_file("typo.ini", "[proxyhost]\ninclude = nothere.ini\n");
  buf_reset(&err);
  c = conf_new();
  is_int(conf_load_file(c, path_in("typo.ini"), &err), -1,
         "a missing plain include is refused");
  like(err.data, "typo.ini:2: include: ", "and named with file:line");
  conf_free(c);

  /* Depth: d0 includes d1 ... includes d9. */
  for (int i = 0; i <= 9; i++) {
    char name[32];
    snprintf(name, sizeof(name), "d%d.ini", i);
    if (i < 9)
      snprintf(text, sizeof(text), "[proxyhost]\ninclude = d%d.ini\n", i + 1);
    else
      snprintf(text, sizeof(text), "[proxyhost]\n");
    write_file(name, text);
  }
  buf_reset(&err);
  c = conf_new();
  is_int(conf_load_file(c, path_in("d1.ini"), &err), 0,
         "eight levels of include are fine");
  conf_free(c);
  buf_reset(&err);
  c = conf_new();
  is_int(conf_load_file(c, path_in("d0.ini"), &err), -1,
         "nine levels are refused");
  snprintf(want, sizeof(want), "%s:2: include: nested deeper than 8 files\n",
           path_in("d8.ini"));
  is_str(err.data, want, "depth error at the ninth include");
  conf_free(c);

  buf_reset(&err);
  c = conf_new();
  is_int(conf_load_file(c, path_in("missing.ini"), &err), -1,
         "missing top file");
  like(err.data, "missing.ini: No such file or directory", "says why");
  conf_free(c);

  remove_tmp();
  buf_free(&err);
}

static void test_bounds(void) {
  ph_buf err, text;
  buf_init(&err, 0);
  buf_init(&text, 0);
  for (int i = 0; i < 90; i++)
    buf_printf(&text, "[s%d]\n", i);
  ph_conf *c = conf_new();
  is_int(conf_load_string(c, "t.ini", text.data, &err), -1,
         "too many sections");
  like(err.data, "t.ini:81: too many sections (max 80)\n", "section bound");
  conf_free(c);

  buf_reset(&text);
  buf_reset(&err);
  buf_puts(&text, "[socks5]\n");
  for (int i = 0; i < 4100; i++)
    buf_printf(&text, "peers = p%d\n", i);
  c = conf_new();
  is_int(conf_load_string(c, "t.ini", text.data, &err), -1, "too many entries");
  is_str(err.data, "t.ini:4098: too many entries (max 4096)\n",
         "entry bound reported once");
  ok(conf_set_cli(c, "socks5.x=1", &err) < 0, "--set counts too");
  conf_free(c);
  buf_free(&text);
  buf_free(&err);
}


/* ---- module instances (ABI 1.2): [socks5.public] ----------------------- */

/* The host declares one section per instance, each with the module's
 * keys. */
static ph_conf *setup_instances(const char *text, const char *const *sets,
                                char *const *env, ph_buf *err, int *rc) {
  ph_conf *c = conf_new();
  int r = conf_load_string(c, "t.ini", text, err);
  for (size_t i = 0; sets && sets[i]; i++)
    if (conf_set_cli(c, sets[i], err) < 0)
      r = -1;
  declare_std(c);
  conf_declare(c, "socks5.public", socks5_keys);
  if (conf_finalize(c, env, err) < 0)
    r = -1;
  *rc = r;
  return c;
}

static void test_instances(void) {
  ph_buf err;
  buf_init(&err, 0);
  int rc;
  ph_conf *c = setup_instances("[socks5]\nlisten = 127.0.0.1:1\n"
                               "[socks5.public]\nlisten = 0.0.0.0:2\n"
                               "max_clients = 7\n",
                               NULL, NULL, &err, &rc);
  is_int(rc, 0, "an instance section validates");
  is_str(conf_str(c, "socks5", "listen"), "127.0.0.1:1",
         "the default instance has its section");
  is_str(conf_str(c, "socks5.public", "listen"), "0.0.0.0:2",
         "the instance has its own");
  is_int(conf_int(c, "socks5.public", "max_clients"), 7, "its own values");
  is_int(conf_int(c, "socks5", "max_clients"), 100,
         "and the other keeps its default");
  char *printed = print_conf(c);
  like(printed, "\n[socks5.public]\nlisten = 0.0.0.0:2  ; from t.ini:4\n",
       "--print-config shows the instance section with file:line");
  like(printed, "[socks5.public]\nlisten = 0.0.0.0:2  ; from t.ini:4\n"
                "max_clients = 7  ; from t.ini:5\n",
       "with its own sources");
  free(printed);
  conf_free(c);

  /* Validation is the same: unknown keys, bounds, file:line. */
  buf_reset(&err);
  c = setup_instances("[socks5.public]\nnope = 1\nmax_clients = 0\n"
                      "password = hunter2hunter2hunter2\n",
                      NULL, NULL, &err, &rc);
  is_int(rc, -1, "bad instance values fail");
  like(err.data, "t.ini:2: socks5.public.nope: unknown key\n",
       "unknown key in an instance section, with file:line");
  like(err.data, "t.ini:3: socks5.public.max_clients: ", "bounds checked");
  like(err.data, "t.ini:4: socks5.public.password: ", "lengths checked");
  unlike(err.data, "hunter2", "a sensitive value is not echoed");
  conf_free(c);

  /* A section for an instance that is not loaded is an unknown section. */
  buf_reset(&err);
  c = setup_instances("[socks5.private]\nlisten = 1.2.3.4:5\n", NULL, NULL,
                      &err, &rc);
  is_int(rc, -1, "section of an instance not loaded fails");
  is_str(err.data, "t.ini:1: socks5.private"
         ": unknown section: no module of that name is loaded;"
         " add socks5.private to [proxyhost] modules\n",
         "named as an unknown section, with file:line");
  conf_free(c);

  /* Headers: one dot, both parts [a-z0-9_]+. */
  static const char *const bad[] = {"[socks5.]\n", "[.public]\n",
                                    "[socks5.a.b]\n", "[socks5.Pub]\n",
                                    NULL};
  for (size_t i = 0; bad[i]; i++) {
    buf_reset(&err);
    c = setup_instances(bad[i], NULL, NULL, &err, &rc);
    ok(rc == -1 && strstr(err.data ? err.data : "",
                          "invalid section name (use [a-z0-9_]+ or "
                          "NAME.INSTANCE)"),
       "bad instance header refused");
    conf_free(c);
  }

  /* --set addresses an instance as NAME.INSTANCE.KEY. */
  buf_reset(&err);
  const char *sets[] = {"socks5.public.max_clients=9", "socks5.max_clients=8",
                        "socks5.stream.window=5", NULL};
  c = setup_instances("[socks5.public]\nmax_clients = 7\n", sets, NULL, &err,
                      &rc);
  is_int(rc, 0, "--set on an instance section");
  is_int(conf_int(c, "socks5.public", "max_clients"), 9,
         "--set NAME.INSTANCE.KEY sets the instance's key");
  is_int(conf_int(c, "socks5", "max_clients"), 8,
         "--set NAME.KEY the default instance's");
  is_int(conf_int(c, "socks5", "stream.window"), 5,
         "no [socks5.stream]: socks5.stream.window is the dotted key");
  buf_reset(&err);
  conf_where(c, "socks5.public", "max_clients", &err);
  is_str(err.data, "--set: ", "the source is --set");
  conf_free(c);

  buf_reset(&err);
  const char *typo[] = {"socks5.privat.listen=1.2.3.4:1", NULL};
  c = setup_instances("", typo, NULL, &err, &rc);
  is_int(rc, -1, "--set on an instance not loaded fails");
  is_str(err.data, "--set: socks5.privat"
         ": unknown section: no module of that name is loaded;"
         " add socks5.privat to [proxyhost] modules\n",
         "as an unknown section");
  conf_free(c);

  /* Both readings declared: refused, never guessed. */
  static const ph_conf_key window_keys[] = {
      {.name = "window", .type = PH_CONF_INT, .def = "1"}, PH_CONF_END};
  buf_reset(&err);
  c = conf_new();
  conf_set_cli(c, "socks5.stream.window=3", &err);
  declare_std(c);
  conf_declare(c, "socks5.stream", window_keys);
  is_int(conf_finalize(c, NULL, &err), -1, "an ambiguous --set fails");
  like(err.data, "--set: socks5.stream.window: ambiguous",
       "named as ambiguous");
  conf_free(c);

  /* The environment: the instance's '.' is "__". */
  buf_reset(&err);
  char *env[] = {"PROXYHOST_SOCKS5__PUBLIC_MAX_CLIENTS=11",
                 "PROXYHOST_SOCKS5_MAX_CLIENTS=12", NULL};
  c = setup_instances("", NULL, env, &err, &rc);
  is_int(rc, 0, "environment overrides");
  is_int(conf_int(c, "socks5.public", "max_clients"), 11,
         "PROXYHOST_SOCKS5__PUBLIC_MAX_CLIENTS sets [socks5.public]");
  is_int(conf_int(c, "socks5", "max_clients"), 12,
         "PROXYHOST_SOCKS5_MAX_CLIENTS sets [socks5] only");
  buf_reset(&err);
  conf_where(c, "socks5.public", "max_clients", &err);
  is_str(err.data, "env PROXYHOST_SOCKS5__PUBLIC_MAX_CLIENTS: ",
         "and is named as the source");
  conf_free(c);

  /* conf_raw sees an instance's --set before any declaration. */
  buf_reset(&err);
  c = conf_new();
  conf_set_cli(c, "socks5.public.listen=9.9.9.9:9", &err);
  is_str(conf_raw(c, "socks5.public", "listen", NULL), "9.9.9.9:9",
         "raw: instance --set");
  conf_free(c);
  buf_free(&err);
}

int main(void) {
  plan_lazy();
  test_parsers();
  test_basic();
  test_crlf_and_line_limit();
  test_long_values();
  test_long_lines_never_truncated();
#if defined(HAVE_DECL_INI_MAX_LINE) && HAVE_DECL_INI_MAX_LINE
  test_inih_options_pinned();
#endif
  test_errors();
  test_nearest_key();
  test_required();
  test_cli_syntax();
  test_lists();
  test_precedence();
  test_redaction();
  test_includes();
  test_bounds();
  test_instances();
  return done_testing();
}
