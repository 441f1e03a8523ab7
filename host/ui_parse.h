/* SPDX-License-Identifier: BSD-2-Clause */
/* The status page's parsers of network bytes: the Cookie header (the
 * session) and the login form's body (the token). Pure: bytes in, result
 * out, no I/O, no allocation; fuzzed by t/fuzz/fuzz_ui_cookie.c and
 * t/fuzz/fuzz_ui_form.c. */
#ifndef PH_UI_PARSE_H
#define PH_UI_PARSE_H

#include <stddef.h>

/* The session cookie is named after the admin listener's port,
 * "ph_session_9470": a browser keeps cookies per host, not per port, so
 * two listeners on one address must not share one cookie. */
#define UI_SESSION_COOKIE_PREFIX "ph_session_"
#define UI_COOKIE_NAME_MAX 24 /* the prefix, 5 digits, NUL, to spare */
#define UI_SESSION_HEX 64     /* 32 random bytes as lowercase hex */

/* Finds the session in a Cookie header's value ("a=b; NAME=HEX"), NAME
 * being the cookie's name (NUL-terminated, not empty; the caller's own,
 * never from the network): other cookies are skipped whatever they hold
 * (the admin listener's host may serve other applications' cookies, and
 * other listeners' sessions on other ports); ours must be exactly
 * UI_SESSION_HEX lowercase hex digits and be there once. 1 with the id
 * copied into id (UI_SESSION_HEX + 1 bytes, NUL-terminated); 0 when
 * absent, malformed or given twice, or when name is NULL or empty. */
int ui_cookie_session(const char *v, size_t n, const char *name,
                      char id[UI_SESSION_HEX + 1]);

/* Percent-decodes s[0..n) as application/x-www-form-urlencoded does
 * ("%41" is 'A', '+' a space) into out, at most max bytes, not
 * NUL-terminated: the length, or -1 (a bad escape, longer than max). */
long ui_form_decode(const char *s, size_t n, char *out, size_t max);

/* Reads an application/x-www-form-urlencoded body holding exactly one
 * field, "token" (percent escapes and '+' decoded), into out (cap bytes,
 * NUL-terminated). Strict: any other field, a second token, a bad
 * escape, a decoded NUL or control byte, or a value longer than cap - 1,
 * refuses. The decoded length, or -1. */
long ui_form_token(const char *body, size_t n, char *out, size_t cap);

#endif
