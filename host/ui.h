/* SPDX-License-Identifier: BSD-2-Clause */
/* The host's own admin pages (issue 28): GET /v1/status[/...] (JSON) and
 * the status page under /ui/ (server-rendered HTML, a login form, a
 * session cookie, a logout), behind the admin token ([admin] token_file).
 * The admin listener (admin.c) hands it the requests whose path it owns
 * (ui_owns) before any module's route; it answers at once, from memory.
 * Loop thread only.
 *
 * Authorization: /v1/status takes "Authorization: Bearer <token>" or the
 * session cookie; /ui/ pages the cookie only (the login form sets it);
 * /ui/login and /ui/style.css need nothing. Sessions: a bounded table
 * (max_sessions; a login beyond it drops the oldest), each expiring
 * session_ttl after its login, ids of 32 random bytes compared in
 * constant time, carried in a cookie named after the listener's port
 * (ph_session_PORT: browsers share cookies across the ports of a host).
 * Logins: after login_failures failures within a minute the form answers
 * 429 with Retry-After, whatever is sent (ui_throttle.h); the Bearer
 * token of /v1/status is not throttled. Without a token file every path
 * answers 404. */
#ifndef PH_UI_H
#define PH_UI_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "metrics.h"
#include "routes.h"
#include "status.h"



typedef struct ph_ui ph_ui;

/* Seconds on a clock that does not jump (tests give their own). */
typedef double (*ui_clock_fn)(void *arg);

typedef struct ui_settings {
  const char *token_file; /* NULL or "": the pages are off */
  int64_t session_ttl_ms; /* 60000..86400000 */
  int max_sessions;       /* 1..UI_SESSIONS_MAX */
  int status_rows;        /* 1..STATUS_ROWS_MAX */
  int login_failures;     /* 1..UI_THROTTLE_MAX a minute */
} ui_settings;

/* registry may be NULL (no metric); clock NULL: CLOCK_MONOTONIC. */
ph_ui *ui_new(ph_panels *status, ph_registry *registry, ui_clock_fn clock,
              void *clock_arg);
void ui_free(ph_ui *u);

/* Takes the settings (at start and at every reload): reads the token file
 * again (a token that changed ends every session), trims the sessions to
 * max_sessions; a changed login_failures starts the throttle's window
 * afresh. 0; -1 with the reason in why when the token file cannot
 * be read: then the pages are off (fail closed) until a reload reads it. */
int ui_configure(ph_ui *u, const ui_settings *st, char *why, size_t whylen);

/* The port the admin listener is bound to: the session cookie is
 * ph_session_PORT. Called once the listener is bound, before it serves. */
void ui_set_port(ph_ui *u, int port);

/* Whether path is the host's: /ui, /ui/..., /v1/status, /v1/status/.... */
int ui_owns(const char *path, size_t len);
/* Whether a request to path with this method has a body to read first
 * (POST /ui/login, POST /ui/logout). */
int ui_takes_body(const char *method, size_t mlen, const char *path,
                  size_t plen);

/* A request: what a module's route gets (routes.h), and the Cookie. */
typedef struct ui_in {
  routes_in req;
  const char *cookie; /* NULL when absent */
  size_t cookie_len;
} ui_in;

typedef struct ui_out {
  int status;
  const char *type; /* static */
  ph_buf head;      /* extra header lines, each ending in CRLF */
  ph_buf body;
} ui_out;

/* Answers in (out's buffers initialised by the caller with buf_init;
 * the caller frees them). HEAD is answered as GET; the caller leaves
 * the body out. */
void ui_serve(ph_ui *u, const ui_in *in, ui_out *out);

#endif
