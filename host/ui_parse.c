/* SPDX-License-Identifier: BSD-2-Clause */
/* See ui_parse.h. */
#include "ui_parse.h"

#include <string.h>

#include "lib/hex.h"

static int is_ows(char c) { return c == ' ' || c == '\t'; }

int ui_cookie_session(const char *v, size_t n, const char *name,
                      char id[UI_SESSION_HEX + 1]) {
  const size_t nl = name ? strlen(name) : 0;
  if (nl == 0)
    return 0;
  int found = 0;
  for (size_t i = 0; i < n;) {
    while (i < n && is_ows(v[i]))
      i++;
    size_t end = i;
    while (end < n && v[end] != ';')
      end++;
    size_t e = end;
    while (e > i && is_ows(v[e - 1]))
      e--;
    if (e - i > nl && memcmp(v + i, name, nl) == 0 && v[i + nl] == '=') {
      const char *val = v + i + nl + 1;
      size_t vl = e - i - nl - 1;
      if (vl >= 2 && val[0] == '"' && val[vl - 1] == '"') {
        val++; /* RFC 6265 allows a quoted value */
        vl -= 2;
      }
      int ok = vl == UI_SESSION_HEX && !found;
      for (size_t k = 0; ok && k < vl; k++)
        ok = (val[k] >= '0' && val[k] <= '9') || (val[k] >= 'a' && val[k] <= 'f');
      if (!ok)
        return 0; /* malformed, or a second one: no session */
      memcpy(id, val, UI_SESSION_HEX);
      id[UI_SESSION_HEX] = '\0';
      found = 1;
    }
    i = end + 1;
  }
  return found;
}

long ui_form_decode(const char *s, size_t n, char *out, size_t max) {
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c == '%') {
      int a = i + 2 < n ? ph_hex_value((unsigned char)s[i + 1]) : -1;
      int b = i + 2 < n ? ph_hex_value((unsigned char)s[i + 2]) : -1;
      if (a < 0 || b < 0)
        return -1;
      c = (char)(a * 16 + b);
      i += 2;
    } else if (c == '+') {
      c = ' ';
    }
    if (o >= max)
      return -1;
    out[o++] = c;
  }
  return (long)o;
}

long ui_form_token(const char *body, size_t n, char *out, size_t cap) {
  static const char name[] = "token=";
  const size_t nl = sizeof(name) - 1;
  if (!body || cap < 1 || n < nl || memcmp(body, name, nl) != 0 ||
      memchr(body + nl, '&', n - nl) || memchr(body + nl, '=', n - nl))
    return -1; /* not the form, or a second field: the form has one */
  long k = ui_form_decode(body + nl, n - nl, out, cap - 1);
  for (long i = 0; i < k; i++)
    if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f)
      k = -1;
  if (k < 0) {
    memset(out, 0, cap);
    return -1;
  }
  out[k] = '\0';
  return k;
}
