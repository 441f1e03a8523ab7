/* SPDX-License-Identifier: BSD-2-Clause */
/* See ui.h. */
#include "ui.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "lib/admin_token.h"
#include "log.h"
#include "status_json.h"
#include "ui_page.h"
#include "ui_parse.h"
#include "ui_session.h"
#include "ui_throttle.h"

#define HTML_TYPE "text/html; charset=utf-8"
#define JSON_TYPE "application/json"
#define TEXT_TYPE "text/plain; charset=utf-8"
#define CSS_TYPE "text/css; charset=utf-8"
#define QUERY_STORE 512

/* Every /ui/ answer carries them (status-spec). */
#define UI_SECURITY_HEADERS                                                   \
  "Content-Security-Policy: default-src 'none'; style-src 'self'; "          \
  "img-src 'self'; form-action 'self'; frame-ancestors 'none'; "             \
  "base-uri 'none'\r\n"                                                       \
  "X-Content-Type-Options: nosniff\r\n"                                       \
  "Referrer-Policy: no-referrer\r\n"                                          \
  "Cache-Control: no-store\r\n"

#define OFF_TEXT "status page off: set [admin] token_file\n"

/* proxyhost_admin_logins_total{result} */
enum login_result {
  LOGIN_OK,
  LOGIN_WRONG,
  LOGIN_BAD,
  LOGIN_THROTTLED,
  LOGIN_RESULTS
};
static const char *const login_results[] = {"ok", "wrong_token", "bad_form",
                                            "throttled", NULL};

struct ph_ui {
  ph_panels *status;
  ui_clock_fn clock;
  void *clock_arg;
  admin_token token; /* len 0: the pages are off */
  double ttl;        /* seconds */
  uint32_t rows;
  ui_sessions sessions;
  ui_throttle throttle;
  char cookie[UI_COOKIE_NAME_MAX]; /* ph_session_PORT */
  ph_series *m_logins[LOGIN_RESULTS];
  ph_ratelimit login_rl;
};

static double mono_clock(void *arg) {
  (void)arg;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void register_metrics(ph_ui *u, ph_registry *reg) {
  if (!reg)
    return;
  static const ph_label_def result_label[] = {{"result", login_results}};
  ph_metric_def d = {"proxyhost_admin_logins_total",
                     "Logins to the status page (/ui/login) by result",
                     PH_METRIC_COUNTER, result_label, 1, NULL, 0};
  ph_buf err;
  buf_init(&err, 0);
  ph_metric *m = metrics_register(reg, &d, &err);
  buf_free(&err);
  for (int i = 0; m && i < LOGIN_RESULTS; i++) {
    const char *v[] = {login_results[i]};
    u->m_logins[i] = metrics_series(m, v);
  }
}

ph_ui *ui_new(ph_panels *status, ph_registry *registry, ui_clock_fn clock,
              void *clock_arg) {
  ph_ui *u = calloc(1, sizeof(*u));
  if (!u)
    return NULL;
  u->status = status;
  u->clock = clock ? clock : mono_clock;
  u->clock_arg = clock_arg;
  u->ttl = 1800;
  u->rows = 50;
  sessions_reset(&u->sessions, 16);
  throttle_reset(&u->throttle, 10);
  ui_set_port(u, 0);
  register_metrics(u, registry);
  return u;
}

void ui_set_port(ph_ui *u, int port) {
  snprintf(u->cookie, sizeof(u->cookie), UI_SESSION_COOKIE_PREFIX "%d",
           port < 0 || port > 65535 ? 0 : port);
}

void ui_free(ph_ui *u) {
  if (!u)
    return;
  admin_token_wipe(&u->token);
  sessions_reset(&u->sessions, 1);
  free(u);
}

int ui_configure(ph_ui *u, const ui_settings *st, char *why, size_t whylen) {
  u->ttl = (double)st->session_ttl_ms / 1000.0;
  u->rows = st->status_rows < 1 ? 1
            : st->status_rows > STATUS_ROWS_MAX ? STATUS_ROWS_MAX
                                                : (uint32_t)st->status_rows;
  admin_token next;
  int rc = 0;
  if (!st->token_file || !*st->token_file)
    admin_token_wipe(&next);
  else if (admin_token_load(st->token_file, &next, why, whylen) < 0)
    rc = -1; /* next is wiped: the pages are off */
  int same = next.len == u->token.len &&
             admin_token_equal(&u->token, (const char *)next.tok, next.len);
  if (!same)
    sessions_reset(&u->sessions, st->max_sessions);
  else
    sessions_limit(&u->sessions, st->max_sessions);
  u->token = next;
  admin_token_wipe(&next);
  int lf = st->login_failures < 1                  ? 1
           : st->login_failures > UI_THROTTLE_MAX ? UI_THROTTLE_MAX
                                                  : st->login_failures;
  if (lf != u->throttle.max)
    throttle_reset(&u->throttle, lf);
  return rc;
}

static int is(const char *p, size_t n, const char *s) {
  return n == strlen(s) && memcmp(p, s, n) == 0;
}

static int starts(const char *p, size_t n, const char *s) {
  size_t k = strlen(s);
  return n >= k && memcmp(p, s, k) == 0 && (n == k || p[k] == '/');
}

int ui_owns(const char *path, size_t len) {
  return starts(path, len, "/ui") || starts(path, len, "/v1/status");
}

int ui_takes_body(const char *method, size_t mlen, const char *path,
                  size_t plen) {
  return is(method, mlen, "POST") &&
         (is(path, plen, "/ui/login") || is(path, plen, "/ui/logout"));
}

/* ---- answers ---------------------------------------------------------- */

static void answer(ui_out *o, int status, const char *type, const char *text) {
  o->status = status;
  o->type = type;
  buf_reset(&o->body);
  buf_puts(&o->body, text);
}

static void json_error(ui_out *o, int status, const char *code,
                       const char *message) {
  o->status = status;
  o->type = JSON_TYPE;
  buf_reset(&o->body);
  /* code and message are this file's own constants: no escaping needed. */
  buf_printf(&o->body, "{\"error\":{\"code\":\"%s\",\"message\":\"%s\"}}\n",
             code, message);
}

static void html_error(ui_out *o, int status, const char *title,
                       const char *message) {
  o->status = status;
  o->type = HTML_TYPE;
  buf_reset(&o->body);
  page_message(&o->body, title, message);
}

static void login_form(ui_out *o, int status, const char *message) {
  o->status = status;
  o->type = HTML_TYPE;
  buf_reset(&o->body);
  page_login(&o->body, message);
}

static int has_session(ph_ui *u, const ui_in *in, char id[UI_SESSION_HEX + 1]) {
  return in->cookie &&
         ui_cookie_session(in->cookie, in->cookie_len, u->cookie, id) &&
         sessions_valid(&u->sessions, id, u->clock(u->clock_arg));
}

static int has_bearer(ph_ui *u, const ui_in *in) {
  char a[ADMIN_TOKEN_MAX + 16];
  if (!in->req.authorization || in->req.authorization_len >= sizeof(a))
    return 0;
  memcpy(a, in->req.authorization, in->req.authorization_len);
  a[in->req.authorization_len] = '\0';
  int ok = admin_token_check(&u->token, a);
  explicit_bzero(a, sizeof(a));
  return ok;
}

static void count_login(ph_ui *u, enum login_result r) {
  if (u->m_logins[r])
    metrics_inc(u->m_logins[r], 1);
  if (r == LOGIN_OK)
    return;
  /* Never what was sent: only that it failed and why. */
  ph_log_field f[] = {PH_STR("result", login_results[r])};
  log_write_rl(NULL, &u->login_rl, PH_LOG_WARN, "status page login refused",
               f, 1);
}

static int form_type(const ui_in *in) {
  static const char t[] = "application/x-www-form-urlencoded";
  size_t n = sizeof(t) - 1;
  return in->req.content_type && in->req.content_type_len >= n &&
         strncasecmp(in->req.content_type, t, n) == 0 &&
         (in->req.content_type_len == n || in->req.content_type[n] == ';' ||
          in->req.content_type[n] == ' ');
}

/* Too many failures this last minute: 429 before anything sent is read,
 * so the answer says nothing of the token (not an oracle). */
static int throttled(ph_ui *u, ui_out *o) {
  int wait = throttle_wait(&u->throttle, u->clock(u->clock_arg));
  if (wait == 0)
    return 0;
  count_login(u, LOGIN_THROTTLED);
  buf_printf(&o->head, "Retry-After: %d\r\n", wait);
  login_form(o, 429, "too many failed logins: try again in a minute");
  return 1;
}

static void login(ph_ui *u, const ui_in *in, ui_out *o) {
  if (throttled(u, o))
    return;
  char tok[ADMIN_TOKEN_MAX + 1];
  long n = form_type(in) ? ui_form_token(in->req.body, in->req.body_len, tok,
                                          sizeof(tok))
                         : -1;
  if (n < 0) {
    throttle_fail(&u->throttle, u->clock(u->clock_arg));
    count_login(u, LOGIN_BAD);
    login_form(o, 400, "bad request: send the form");
    return;
  }
  int ok = admin_token_equal(&u->token, tok, (size_t)n);
  explicit_bzero(tok, sizeof(tok));
  if (!ok) {
    throttle_fail(&u->throttle, u->clock(u->clock_arg));
    count_login(u, LOGIN_WRONG);
    login_form(o, 401, "wrong token");
    return;
  }
  char id[UI_SESSION_HEX + 1];
  int evicted;
  if (sessions_open(&u->sessions, u->clock(u->clock_arg), u->ttl, id,
                    &evicted) < 0) {
    html_error(o, 503, "Unavailable", "no randomness for a session id");
    return;
  }
  count_login(u, LOGIN_OK);
  if (evicted)
    log_write(NULL, PH_LOG_INFO,
              "status page: oldest session ended ([admin] max_sessions)",
              NULL, 0);
  buf_printf(&o->head,
             "Set-Cookie: %s=%s; Path=/; HttpOnly; SameSite=Strict; "
             "Max-Age=%lld\r\nLocation: /ui/\r\n",
             u->cookie, id, (long long)u->ttl);
  explicit_bzero(id, sizeof(id));
  answer(o, 303, TEXT_TYPE, "logged in: /ui/\n");
}

static void logout(ph_ui *u, const ui_in *in, ui_out *o) {
  char id[UI_SESSION_HEX + 1];
  if (in->cookie &&
      ui_cookie_session(in->cookie, in->cookie_len, u->cookie, id))
    sessions_close(&u->sessions, id);
  buf_printf(&o->head,
             "Set-Cookie: %s=; Path=/; HttpOnly; SameSite=Strict; "
             "Max-Age=0\r\nLocation: /ui/login\r\n",
             u->cookie);
  answer(o, 303, TEXT_TYPE, "logged out: /ui/login\n");
}

/* Whether a query string names a parameter "token". */
static int query_has_token(const char *q, size_t n) {
  for (size_t i = 0; i < n;) {
    size_t end = i;
    while (end < n && q[end] != '&')
      end++;
    if ((end - i == 5 && memcmp(q + i, "token", 5) == 0) ||
        (end - i > 5 && memcmp(q + i, "token=", 6) == 0))
      return 1;
    i = end + 1;
  }
  return 0;
}

/* The panels rest ("/INSTANCE/PANEL/TABLE", "" or "/") and the query
 * select, as a page (html) or as JSON. */
static void read_status(ph_ui *u, const ui_in *in, const char *rest,
                        size_t rest_len, int html, ui_out *o) {
  status_query q;
  char store[QUERY_STORE];
  int rc = status_parse(rest, rest_len, in->req.query, in->req.query_len,
                        u->rows, &q, store, sizeof(store));
  if (rc == 0) {
    o->type = html ? HTML_TYPE : JSON_TYPE;
    rc = html ? page_status(u->status, &q, &o->body)
              : status_json(u->status, &q, &o->body);
  }
  if (rc == 200) {
    o->status = 200;
    return;
  }
  const char *why = rc == 400   ? "bad query: offset, limit and key, for a table"
                    : rc == 404 ? "no such instance, panel or table"
                                : "the status could not be built";
  if (html)
    html_error(o, rc, rc == 400 ? "Bad request" : rc == 404 ? "Not found"
                                                            : "Unavailable",
               why);
  else
    json_error(o, rc, rc == 400 ? "bad_request" : rc == 404 ? "not_found"
                                                            : "unavailable",
               why);
}

static void serve_ui(ph_ui *u, const ui_in *in, ui_out *o) {
  buf_puts(&o->head, UI_SECURITY_HEADERS);
  const char *p = in->req.path + 3; /* after "/ui" */
  size_t n = in->req.path_len - 3;
  int get = is(in->req.method, in->req.method_len, "GET") ||
            is(in->req.method, in->req.method_len, "HEAD");
  int post = is(in->req.method, in->req.method_len, "POST");
  if (in->req.query && query_has_token(in->req.query, in->req.query_len)) {
    html_error(o, 400, "Bad request",
               "the token never goes in a URL: log in with the form");
    return;
  }
  int fixed = is(p, n, "/login") || is(p, n, "/logout") ||
              is(p, n, "/style.css");
  if (fixed && in->req.query) {
    html_error(o, 400, "Bad request", "this page takes no query");
    return;
  }
  if (is(p, n, "/login") && (get || post)) {
    if (post)
      login(u, in, o);
    else
      login_form(o, 200, NULL);
    return;
  }
  if (is(p, n, "/logout") && post) {
    logout(u, in, o);
    return;
  }
  if (is(p, n, "/style.css") && get) {
    answer(o, 200, CSS_TYPE, page_css);
    return;
  }
  const char *allow = is(p, n, "/login") ? "GET, HEAD, POST"
                      : is(p, n, "/logout") ? "POST"
                                            : "GET, HEAD";
  if (!get || is(p, n, "/logout")) {
    buf_printf(&o->head, "Allow: %s\r\n", allow);
    html_error(o, 405, "Method not allowed", "method not allowed");
    return;
  }
  char id[UI_SESSION_HEX + 1];
  if (!has_session(u, in, id)) {
    login_form(o, 401, NULL);
    return;
  }
  read_status(u, in, n ? p : "/", n ? n : 1, 1, o);
}

static void serve_json(ph_ui *u, const ui_in *in, ui_out *o) {
  if (!is(in->req.method, in->req.method_len, "GET") &&
      !is(in->req.method, in->req.method_len, "HEAD")) {
    buf_puts(&o->head, "Allow: GET, HEAD\r\n");
    json_error(o, 405, "method_not_allowed", "GET or HEAD");
    return;
  }
  char id[UI_SESSION_HEX + 1];
  if (!has_bearer(u, in) && !has_session(u, in, id)) {
    buf_puts(&o->head, "WWW-Authenticate: Bearer\r\n");
    json_error(o, 401, "unauthorized",
               "send Authorization: Bearer <admin token> or log in at /ui/");
    return;
  }
  read_status(u, in, in->req.path + 10, in->req.path_len - 10, 0, o);
}

void ui_serve(ph_ui *u, const ui_in *in, ui_out *o) {
  o->status = 500;
  o->type = TEXT_TYPE;
  if (!u || u->token.len == 0) {
    answer(o, 404, TEXT_TYPE, OFF_TEXT);
    return;
  }
  if (starts(in->req.path, in->req.path_len, "/ui"))
    serve_ui(u, in, o);
  else
    serve_json(u, in, o);
  if (o->body.overflow || o->head.overflow) {
    buf_reset(&o->body);
    buf_reset(&o->head);
    answer(o, 503, TEXT_TYPE, "the answer was too large\n");
  }
}
