/* SPDX-License-Identifier: BSD-2-Clause */
/* See admin_http.h. */
#include "admin_http.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "lib/json.h"

static int key_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

/* Matches path against a template; 1 with the parameter in key. */
static int match_template(const char *tpl, const char *path, char *key,
                          size_t max) {
  while (*tpl) {
    if (*tpl == '{') {
      const char *close = strchr(tpl, '}');
      size_t n = 0;
      while (path[n] && path[n] != '/') {
        if (!key_char(path[n]))
          return 0;
        n++;
      }
      if (n == 0 || n > max)
        return 0;
      memcpy(key, path, n);
      key[n] = '\0';
      path += n;
      tpl = close + 1;
      continue;
    }
    if (*tpl++ != *path++)
      return 0;
  }
  return *path == '\0';
}

const api_route *api_route_match(const api_route *tbl, size_t n,
                                 const char *method, const char *path,
                                 char *key, size_t max, int *path_known) {
  *path_known = 0;
  key[0] = '\0';
  if (max > API_KEY_LIMIT)
    max = API_KEY_LIMIT;
  for (size_t i = 0; i < n; i++) {
    char k[API_KEY_LIMIT + 1] = "";
    if (!match_template(tbl[i].path, path, k, max))
      continue;
    *path_known = 1;
    if (strcmp(tbl[i].method, method) == 0) {
      memcpy(key, k, strlen(k) + 1);
      return &tbl[i];
    }
  }
  return NULL;
}

long api_write_routes(const api_route *tbl, size_t n, char *buf, size_t cap) {
  json_w w;
  json_w_init(&w, buf, cap);
  json_w_obj(&w);
  json_w_key(&w, "routes");
  json_w_arr(&w);
  for (size_t i = 0; i < n; i++) {
    json_w_obj(&w);
    json_w_key(&w, "method");
    json_w_str(&w, tbl[i].method);
    json_w_key(&w, "path");
    json_w_str(&w, tbl[i].path);
    json_w_obj_end(&w);
  }
  json_w_arr_end(&w);
  json_w_obj_end(&w);
  return json_w_finish(&w);
}

size_t api_write_error(char *buf, size_t cap, const char *code,
                       const char *message) {
  json_w w;
  json_w_init(&w, buf, cap);
  json_w_obj(&w);
  json_w_key(&w, "error");
  json_w_obj(&w);
  json_w_key(&w, "code");
  json_w_str(&w, code);
  json_w_key(&w, "message");
  json_w_str(&w, message);
  json_w_obj_end(&w);
  json_w_obj_end(&w);
  long n = json_w_finish(&w);
  if (n < 0)
    n = snprintf(buf, cap, "{\"error\":{\"code\":\"%s\",\"message\":\"\"}}",
                 code);
  return (size_t)n < cap ? (size_t)n : cap - 1;
}

int api_is_json_type(const char *t) {
  if (!t)
    return 0;
  size_t n = strlen(API_JSON_TYPE);
  return strncasecmp(t, API_JSON_TYPE, n) == 0 &&
         (t[n] == '\0' || t[n] == ';' || t[n] == ' ');
}

int api_query_next(const char **q, api_qpair *kv) {
  const char *p = *q;
  if (!p || !*p)
    return 0;
  const char *amp = strchr(p, '&');
  size_t n = amp ? (size_t)(amp - p) : strlen(p);
  const char *eq = memchr(p, '=', n);
  if (!eq)
    return -1;
  kv->k = p;
  kv->kl = (size_t)(eq - p);
  kv->v = eq + 1;
  kv->vl = n - kv->kl - 1;
  *q = amp ? amp + 1 : p + n;
  return 1;
}

int api_qpair_is(const api_qpair *p, const char *name) {
  return p->kl == strlen(name) && memcmp(p->k, name, p->kl) == 0;
}
