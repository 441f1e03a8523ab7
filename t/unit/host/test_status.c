/* SPDX-License-Identifier: BSD-2-Clause */
/* Status panels (ABI 1.7, issue 28; status-spec): a test module's panels
 * read through the mock host (ph_mock_status) as GET /v1/status would:
 * fields in order, numeric cells, the host's paging (offset, limit, key,
 * more, PH_ELIMIT once the page is full), the bounds, a UTF-8 cut,
 * registration errors; the HTML renderer's escaping; and the status
 * page's sessions expiring on a test clock (ui.c), their cookie named
 * after the listener's port, the login throttle ([admin] login_failures)
 * on the test clock, the login form and the Cookie header parsers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <proxyhost/mock.h>
#include <proxyhost/module.h>

#include "status.h"
#include "tap.h"
#include "ui.h"
#include "ui_page.h"
#include "ui_parse.h"

static const ph_api *api;
static int reg_rc[8];
static int row_rc[64];
static int n_row_rc;
static int field_limit_rc, table_limit_rc, bad_num_rc, no_table_rc;
static int rows_total = 25;

static void fill_main(void *arg, ph_panel *p) {
  (void)arg;
  api->status_field(p, "name", "<script>alert(1)</script>");
  api->status_field_int(p, "count", -42);
  api->status_field(p, "none", NULL);
  api->status_field(p, "name", "second"); /* the first stays */
  no_table_rc = api->status_row(p, (const char *const[]){"x"}, 1);
  static const char *const cols[] = {"agent", "streams", "note"};
  api->status_table(p, "agents", cols, 3, PH_STATUS_COL_NUM(1));
  bad_num_rc = api->status_row(p, (const char *const[]){"a", "1x", ""}, 3);
  n_row_rc = 0;
  for (int i = 0; i < rows_total; i++) {
    char name[16], n[16];
    snprintf(name, sizeof(name), "a%02d", i);
    snprintf(n, sizeof(n), "%d", i);
    const char *cells[] = {name, i == 3 ? "" : n, NULL};
    int rc = api->status_row(p, cells, 3);
    if (n_row_rc < 64)
      row_rc[n_row_rc++] = rc;
    if (rc == PH_ELIMIT)
      break;
  }
  static const char *const c2[] = {"k"};
  api->status_table(p, "other", c2, 1, 0);
  api->status_row(p, (const char *const[]){"v"}, 1);
}

static void fill_bounds(void *arg, ph_panel *p) {
  (void)arg;
  char name[16];
  for (int i = 0; i <= PH_STATUS_FIELDS_MAX; i++) {
    snprintf(name, sizeof(name), "f%d", i);
    field_limit_rc = api->status_field_int(p, name, i);
  }
  static const char *const cols[] = {"c"};
  for (int i = 0; i <= PH_STATUS_TABLES_MAX; i++) {
    snprintf(name, sizeof(name), "t%d", i);
    table_limit_rc = api->status_table(p, name, cols, 1, 0);
  }
  /* A long UTF-8 value: "é" (2 bytes) repeated past the cut. */
  char longv[PH_STATUS_VALUE_MAX * 2 + 2] = "x";
  for (size_t i = 1; i + 2 < sizeof(longv); i += 2)
    memcpy(longv + i, "\xc3\xa9", 2);
  longv[sizeof(longv) - 1] = '\0';
  api->status_field(p, "long", longv);
}

static int st_init(ph_ctx *ctx, const ph_api *a, void **state) {
  api = a;
  *state = NULL;
  reg_rc[0] = a->status_register(ctx, "main", "Main <b>", fill_main, NULL);
  reg_rc[1] = a->status_register(ctx, "main", "Again", fill_main, NULL);
  reg_rc[2] = a->status_register(ctx, "Bad-Name", "x", fill_main, NULL);
  reg_rc[3] = a->status_register(ctx, "nofill", "x", NULL, NULL);
  reg_rc[4] = a->status_register(ctx, "bounds", "Bounds", fill_bounds, NULL);
  char name[16];
  int last = PH_OK;
  for (int i = 2; i <= PH_STATUS_PANELS_MAX; i++) {
    snprintf(name, sizeof(name), "p%d", i);
    last = a->status_register(ctx, name, "x", fill_bounds, NULL);
  }
  reg_rc[5] = last;
  return PH_OK;
}

static const ph_module st_mod = {
    PH_MODULE_HEADER("st", "1.0"),
    .init = st_init,
};

static const char *get(ph_mock *m, const char *target, int want) {
  const char *json = NULL;
  int rc = ph_mock_status(m, target, &json);
  char name[256];
  snprintf(name, sizeof(name), "%s: %d", target, want);
  is_int(rc, want, name);
  return json ? json : "";
}

static void test_panels(void) {
  char err[512] = "";
  ph_mock *m = ph_mock_new("[admin]\nstatus_rows = 10\n", err, sizeof(err));
  ok(m && ph_mock_add(m, &st_mod, err, sizeof(err)) == 0 &&
         ph_mock_init(m, err, sizeof(err)) == 0 &&
         ph_mock_start(m, err, sizeof(err)) == 0,
     "a module with panels starts in the mock host");
  is_int(reg_rc[0], PH_OK, "status_register: PH_OK");
  is_int(reg_rc[1], PH_EEXIST, "... the same name twice: PH_EEXIST");
  is_int(reg_rc[2], PH_EINVAL, "... a name not [a-z0-9_]: PH_EINVAL");
  is_int(reg_rc[3], PH_EINVAL, "... no fill: PH_EINVAL");
  is_int(reg_rc[5], PH_ELIMIT, "... past PH_STATUS_PANELS_MAX: PH_ELIMIT");

  const char *j = get(m, "/v1/status/st/main", 200);
  like(j, "{\"status_version\":1,\"instances\":[{\"instance\":\"st\","
          "\"module\":\"st\",\"panels\":[{\"name\":\"main\",\"title\":\"Main <b>\"",
       "JSON: the instance, the module, the panel and its title");
  like(j, "\"fields\":{\"name\":\"<script>alert(1)</script>\",\"count\":-42,"
          "\"none\":null}",
       "fields in order, a number, null; a repeated name keeps the first");
  is_int(no_table_rc, PH_EINVAL, "status_row before any table: PH_EINVAL");
  is_int(bad_num_rc, PH_EINVAL, "a numeric cell that is not an integer: PH_EINVAL");
  like(j, "\"columns\":[\"agent\",\"streams\",\"note\"],\"rows\":[[\"a00\",0,\"\"],"
          "[\"a01\",1,\"\"],[\"a02\",2,\"\"],[\"a03\",null,\"\"]",
       "rows: numeric cells as numbers, an empty one null, NULL cells empty");
  like(j, "[\"a09\",9,\"\"]],\"offset\":0,\"more\":true}",
       "the first page holds status_rows rows, more=true");
  is_int(n_row_rc, 11, "the module was stopped at the 11th row");
  is_int(row_rc[10], PH_ELIMIT, "... by PH_ELIMIT once the page was full");
  like(j, "{\"name\":\"other\",\"columns\":[\"k\"],\"rows\":[[\"v\"]]",
       "a second table after the first");

  j = get(m, "/v1/status/st/main/agents?offset=20&limit=3", 200);
  like(j, "\"rows\":[[\"a20\",20,\"\"],[\"a21\",21,\"\"],[\"a22\",22,\"\"]],"
          "\"offset\":20,\"more\":true",
       "offset and limit pick a page");
  unlike(j, "\"other\"", "... of that table only");
  j = get(m, "/v1/status/st/main/agents?offset=22&limit=5", 200);
  like(j, "[\"a24\",24,\"\"]],\"offset\":22,\"more\":false",
       "the last page: more=false");
  j = get(m, "/v1/status/st/main/agents?key=a17", 200);
  like(j, "\"rows\":[[\"a17\",17,\"\"]],\"offset\":0,\"more\":false",
       "key selects the row whose first cell it is");
  j = get(m, "/v1/status/st/main/agents?key=a%31%37", 200);
  like(j, "[[\"a17\",17,", "... percent-decoded");
  /* Refused: a bad query (400), a name nothing has (404). */
  static const struct {
    const char *target;
    int status;
  } refused[] = {
      {"/v1/status/st/main/agents?limit=11", 400},
      {"/v1/status/st/main/agents?limit=0", 400},
      {"/v1/status/st/main/agents?offset=1000000001", 400},
      {"/v1/status/st/main/agents?offset=-1", 400},
      {"/v1/status/st/main/agents?offset=1&offset=2", 400},
      {"/v1/status/st/main/agents?token=x", 400},
      {"/v1/status/st/main/agents?key=%zz", 400},
      {"/v1/status/st/main?offset=1", 400},
      {"/v1/status/st/main/nope", 404},
      {"/v1/status/st/nope", 404},
      {"/v1/status/nope", 404},
      {"/v1/status/st/main/agents/x", 404},
      {"/v1/status/ST", 404},
  };
  for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
    get(m, refused[i].target, refused[i].status);

  j = get(m, "/v1/status", 200);
  like(j, "{\"instance\":\"proxyhost\",\"module\":\"proxyhost\",\"panels\":"
          "[{\"name\":\"process\",\"title\":\"Process\"",
       "/v1/status: the host's own panel first");
  like(j, "\"tables\":[{\"name\":\"modules\",\"columns\":[\"instance\","
          "\"module\",\"version\"],\"rows\":[[\"st\",\"st\",\"1.0\"]]",
       "... its modules table lists the instance");

  j = get(m, "/v1/status/st/bounds", 200);
  is_int(field_limit_rc, PH_ELIMIT, "past PH_STATUS_FIELDS_MAX fields: PH_ELIMIT");
  is_int(table_limit_rc, PH_ELIMIT, "past PH_STATUS_TABLES_MAX tables: PH_ELIMIT");
  like(j, "\"f63\":63}", "... the fields before the bound are kept");
  unlike(j, "\"f64\"", "... the one past it dropped");
  unlike(j, "\"long\"", "a field past the bound is dropped too");
  ph_mock_stop(m);
  ph_mock_free(m);
}

static void test_clean(void) {
  char out[PH_STATUS_VALUE_MAX + 1];
  char in[PH_STATUS_VALUE_MAX + 8];
  memset(in, 'a', PH_STATUS_VALUE_MAX - 1);
  memcpy(in + PH_STATUS_VALUE_MAX - 1, "\xc3\xa9z", 4);
  size_t n = status_clean(out, sizeof(out), in);
  is_int(n, PH_STATUS_VALUE_MAX - 1, "a 2-byte character across the cut is left out whole");
  n = status_clean(out, sizeof(out), "a\xff" "b\xc3(\xed\xa0\x80");
  is_str(out, "a?b?(???", "invalid UTF-8 bytes become '?' (surrogates too)");
  (void)n;
}

static void test_html(void) {
  ph_buf b;
  buf_init(&b, 0);
  page_esc(&b, "<script>alert('x') & \"y\"</script>");
  is_str(b.data, "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;",
         "HTML: & < > \" ' escaped");
  buf_free(&b);
}

static void test_parsers(void) {
  char id[UI_SESSION_HEX + 1];
  char hex[UI_SESSION_HEX + 1];
  memset(hex, 'a', UI_SESSION_HEX);
  hex[UI_SESSION_HEX] = '\0';
  char hdr[256];
  const char *name = "ph_session_9471"; /* the listener on port 9471's */
  snprintf(hdr, sizeof(hdr), "x=1; ph_session_9471=%s; y=\"2\"", hex);
  ok(ui_cookie_session(hdr, strlen(hdr), name, id) && strcmp(id, hex) == 0,
     "Cookie: our session among others");
  snprintf(hdr, sizeof(hdr), "ph_session_9471=%s; ph_session_9471=%s", hex, hex);
  ok(!ui_cookie_session(hdr, strlen(hdr), name, id), "Cookie: ours twice: refused");
  snprintf(hdr, sizeof(hdr), "ph_session_9471=%.63s", hex);
  ok(!ui_cookie_session(hdr, strlen(hdr), name, id), "Cookie: 63 digits: refused");
  snprintf(hdr, sizeof(hdr), "ph_session_9471=%.63sA", hex);
  ok(!ui_cookie_session(hdr, strlen(hdr), name, id), "Cookie: upper case: refused");
  snprintf(hdr, sizeof(hdr), "ph_session_9472=%s", hex);
  ok(!ui_cookie_session(hdr, strlen(hdr), name, id),
     "Cookie: the session of the listener on another port is not ours");
  snprintf(hdr, sizeof(hdr), "ph_session_94710=%s; ph_session=%s", hex, hex);
  ok(!ui_cookie_session(hdr, strlen(hdr), name, id),
     "Cookie: a longer port, and the old shared name ph_session, are not ours");
  snprintf(hdr, sizeof(hdr), "ph_session_9472=%.63sb; ph_session_9471=%s", hex, hex);
  ok(ui_cookie_session(hdr, strlen(hdr), name, id) && strcmp(id, hex) == 0,
     "Cookie: both listeners' sessions in one header: ours is read");
  ok(!ui_cookie_session(hdr, strlen(hdr), "ph_session_947", id),
     "Cookie: a name that is a prefix of the cookie's is not it");
  ok(!ui_cookie_session(hdr, strlen(hdr), "", id) &&
         !ui_cookie_session(hdr, strlen(hdr), NULL, id),
     "Cookie: no name, no session");
  char tok[64];
  is_int(ui_form_token("token=ab%2Bc+d", 14, tok, sizeof(tok)), 6, "form: decoded");
  is_str(tok, "ab+c d", "... '+' a space, %2B a plus");
  is_int(ui_form_token("token=a&x=1", 11, tok, sizeof(tok)), -1, "form: a second field: refused");
  is_int(ui_form_token("tok=a", 5, tok, sizeof(tok)), -1, "form: another field: refused");
  is_int(ui_form_token("token=%0a", 9, tok, sizeof(tok)), -1, "form: a control byte: refused");
  is_int(ui_form_token("token=%4", 8, tok, sizeof(tok)), -1, "form: a cut escape: refused");
  is_int(ui_form_token("token=abcdefgh", 14, tok, 4), -1, "form: longer than the buffer: refused");
}

/* ---- sessions on a test clock ------------------------------------------ */

static double now_s;
static double test_clock(void *arg) {
  (void)arg;
  return now_s;
}

static int serve(ph_ui *u, const char *method, const char *path,
                 const char *cookie, const char *body, ui_out *o) {
  ui_in in = {0};
  in.req.method = method;
  in.req.method_len = strlen(method);
  in.req.path = path;
  in.req.path_len = strlen(path);
  in.req.content_type = "application/x-www-form-urlencoded";
  in.req.content_type_len = strlen(in.req.content_type);
  in.req.body = body;
  in.req.body_len = body ? strlen(body) : 0;
  in.cookie = cookie;
  in.cookie_len = cookie ? strlen(cookie) : 0;
  buf_reset(&o->head);
  buf_reset(&o->body);
  ui_serve(u, &in, o);
  return o->status;
}

/* A ui on the test clock, its listener on port 9471, reading a token
 * file of TOKEN with max_sessions and login_failures as given. */
#define TOKEN "0123456789abcdef0123456789abcdef"
typedef struct ui_fix {
  char tf[32];
  ph_panels *s;
  ph_ui *u;
  ui_settings st;
  ui_out o;
  char good[128]; /* the login form with the right token */
} ui_fix;

static void fix_open(ui_fix *f, int max_sessions, int login_failures) {
  snprintf(f->tf, sizeof(f->tf), "/tmp/ph_status_tokXXXXXX");
  int fd = mkstemp(f->tf);
  ok(fd >= 0 && write(fd, TOKEN, strlen(TOKEN)) == (ssize_t)strlen(TOKEN),
     "a token file");
  close(fd);
  f->s = status_new();
  f->u = ui_new(f->s, NULL, test_clock, NULL);
  ui_set_port(f->u, 9471);
  ui_settings st = {f->tf, 60000, max_sessions, 50, login_failures};
  f->st = st;
  char why[256];
  is_int(ui_configure(f->u, &f->st, why, sizeof(why)), 0,
         "ui_configure reads it");
  buf_init(&f->o.head, 0);
  buf_init(&f->o.body, 0);
  snprintf(f->good, sizeof(f->good), "token=%s", TOKEN);
}

static void fix_close(ui_fix *f) {
  ui_free(f->u);
  status_free(f->s);
  buf_free(&f->o.head);
  buf_free(&f->o.body);
  unlink(f->tf);
}

static void test_sessions(void) {
  ui_fix f;
  fix_open(&f, 2, 10);
  ph_ui *u = f.u;
  const char *body = f.good;
  now_s = 1000;
  is_int(serve(u, "POST", "/ui/login", NULL, body, &f.o), 303, "login: 303");
  char cookie[128];
  const char *sc = f.o.head.data ? strstr(f.o.head.data, "ph_session_9471=") : NULL;
  snprintf(cookie, sizeof(cookie), "%.80s", sc ? sc : "");
  like(f.o.head.data, "Set-Cookie: ph_session_9471=", "... the cookie is named after the listener's port");
  like(f.o.head.data, "Max-Age=60", "... Max-Age is session_ttl");
  char other[128];
  snprintf(other, sizeof(other), "ph_session_9472=%s", cookie + 16);
  is_int(serve(u, "GET", "/ui/", other, NULL, &f.o), 401,
         "... the same id under another port's name opens nothing");
  is_int(serve(u, "GET", "/ui/", cookie, NULL, &f.o), 200, "the session opens /ui/");
  now_s = 1059.5;
  is_int(serve(u, "GET", "/ui/", cookie, NULL, &f.o), 200, "... still just before session_ttl");
  now_s = 1060;
  is_int(serve(u, "GET", "/ui/", cookie, NULL, &f.o), 401, "... expired at session_ttl");
  is_int(serve(u, "GET", "/v1/status", cookie, NULL, &f.o), 401,
         "... for /v1/status too");
  is_int(serve(u, "POST", "/ui/login", NULL, "token=wrong", &f.o), 401,
         "a wrong token: 401");
  unlike(f.o.body.data, "wrong</", "... the form does not echo it");
  is_int(serve(u, "GET", "/ui/style.css", NULL, NULL, &f.o), 200, "style.css needs no session");
  is_int(serve(u, "PUT", "/ui/login", NULL, NULL, &f.o), 405, "PUT /ui/login: 405");
  fix_close(&f);
}

/* [admin] login_failures (status-spec gap: a login throttle): a sliding
 * minute on the test clock, one window for the listener. */
static void test_throttle(void) {
  ui_fix f;
  fix_open(&f, 16, 3);
  ph_ui *u = f.u;
  const char *good = f.good;
  char why[256];
  now_s = 2000;
  is_int(serve(u, "POST", "/ui/login", NULL, "token=wrong1", &f.o), 401, "failure 1: 401");
  now_s = 2010;
  is_int(serve(u, "POST", "/ui/login", NULL, "tok=x", &f.o), 400,
         "failure 2 (a malformed form counts): 400");
  now_s = 2020;
  is_int(serve(u, "POST", "/ui/login", NULL, "token=wrong3", &f.o), 401, "failure 3: 401");
  is_int(serve(u, "POST", "/ui/login", NULL, good, &f.o), 429,
         "then the right token: 429 (the throttle is no oracle)");
  like(f.o.head.data, "Retry-After: 40\r\n", "... Retry-After: until the first failure is a minute old");
  unlike(f.o.head.data, "Set-Cookie", "... no session");
  like(f.o.body.data, "too many failed logins", "... the form says why");
  is_int(serve(u, "POST", "/ui/login", NULL, "token=wrong4", &f.o), 429,
         "a wrong token: 429 too, the same answer");
  like(f.o.head.data, "Retry-After: 40\r\n", "... and throttled tries do not stretch the window");
  is_int(serve(u, "GET", "/ui/login", NULL, NULL, &f.o), 200, "GET /ui/login still shows the form");
  char bearer[128];
  snprintf(bearer, sizeof(bearer), "Bearer %s", TOKEN);
  {
    ui_in in = {0};
    in.req.method = "GET";
    in.req.method_len = 3;
    in.req.path = "/v1/status";
    in.req.path_len = strlen(in.req.path);
    in.req.authorization = bearer;
    in.req.authorization_len = strlen(bearer);
    buf_reset(&f.o.head);
    buf_reset(&f.o.body);
    ui_serve(u, &in, &f.o);
    is_int(f.o.status, 200, "/v1/status with the Bearer token is not throttled");
  }
  now_s = 2059.5;
  is_int(serve(u, "POST", "/ui/login", NULL, good, &f.o), 429, "at 59.5 s: still 429");
  like(f.o.head.data, "Retry-After: 1\r\n", "... Retry-After rounded up, never 0");
  now_s = 2060;
  is_int(serve(u, "POST", "/ui/login", NULL, "token=wrong5", &f.o), 401,
         "once the first failure is a minute old, one more try: a wrong token is 401");
  now_s = 2061;
  is_int(serve(u, "POST", "/ui/login", NULL, good, &f.o), 429,
         "... and counts: 3 failures within the minute again (2010, 2020, 2060), 429");
  like(f.o.head.data, "Retry-After: 9\r\n", "... until the oldest of them (2010) is a minute old");
  now_s = 2070;
  is_int(serve(u, "POST", "/ui/login", NULL, good, &f.o), 303,
         "once 2010 is a minute old (2 failures left within it) the right token logs in");
  is_int(ui_configure(u, &f.st, why, sizeof(why)), 0, "a reload with the same limit");
  is_int(serve(u, "POST", "/ui/login", NULL, "token=w", &f.o), 401, "... keeps the window: one more failure");
  is_int(serve(u, "POST", "/ui/login", NULL, good, &f.o), 429, "... makes 3 within the minute: 429");
  f.st.login_failures = 5;
  is_int(ui_configure(u, &f.st, why, sizeof(why)), 0, "a reload with login_failures = 5");
  is_int(serve(u, "POST", "/ui/login", NULL, good, &f.o), 303, "... starts the window afresh");
  fix_close(&f);
}

int main(void) {
  plan_lazy();
  test_panels();
  test_clean();
  test_html();
  test_parsers();
  test_sessions();
  test_throttle();
  return done_testing();
}
