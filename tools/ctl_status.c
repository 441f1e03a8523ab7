/* SPDX-License-Identifier: BSD-2-Clause */
/* proxyhostctl status (issue 28): GET /v1/status[/INSTANCE[/PANEL[/TABLE]]]
 * with the admin token, printed as a one-screen summary
 * (ctl_status_print.c) or, with --json, as received. An error is one line:
 * the host's message, or what its 404 means here. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_cmd.h"
#include "ctl_print.h"
#include "ctl_status_print.h"
#include "lib/bw.h"
#include "lib/section_name.h"

#define INSTANCE_MAX 129 /* a section name: [a-z0-9_], one dot inside */
#define NAME_MAX_ 48     /* PH_STATUS_NAME_MAX: a panel's, a table's */
#define OFFSET_MAX 1000000000L
#define LIMIT_MAX 500L /* [admin] status_rows at most */

/* A part of INSTANCE/PANEL/TABLE: 1..max bytes of [a-z0-9_]; an
 * instance (a section name, the host's rule: lib/section_name.h) may
 * hold one dot, neither first nor last. */
static int part_ok(const char *s, size_t n, int instance) {
  return n <= (instance ? INSTANCE_MAX : NAME_MAX_) &&
         ph_section_name_ok(s, n, instance);
}

/* The parts of arg, checked: 1..3, or 0 when it is not such a path. */
static int parts_of(const char *arg) {
  int n = 0;
  for (const char *p = arg;; n++) {
    const char *slash = strchr(p, '/');
    size_t len = slash ? (size_t)(slash - p) : strlen(p);
    if (n == 3 || !part_ok(p, len, n == 0))
      return 0;
    if (!slash)
      return n + 1;
    p = slash + 1;
  }
}

/* A decimal in lo..hi: 0, or -1. */
static int number_ok(const char *v, long lo, long hi) {
  char *end;
  errno = 0;
  long x = v && *v ? strtol(v, &end, 10) : -1;
  return v && *v && !*end && !errno && x >= lo && x <= hi ? 0 : -1;
}

/* The first line of a text answer, printable, at most 200 bytes. */
static void first_line(const ctl_response *r, char *out, size_t cap) {
  size_t n = 0;
  for (size_t i = 0; i < r->len && n + 1 < cap && n < 200; i++) {
    unsigned char c = (unsigned char)r->body[i];
    if (c == '\n' || c == '\r')
      break;
    out[n++] = c < 0x20 || c >= 0x7f ? '?' : (char)c;
  }
  out[n] = '\0';
}

/* One line on stderr: the API's error, or what the host's text means. */
static void status_error(const opts *o, const char *arg,
                         const ctl_response *r) {
  char code[64], msg[512], text[256];
  if (ctl_api_error(r->body, r->len, code, sizeof(code), msg,
                    sizeof(msg))) {
    fprintf(stderr, "error: %d %s: %s\n", r->status, code, msg);
    return;
  }
  first_line(r, text, sizeof(text));
  if (r->status == 404 && strncmp(text, "status page off", 15) != 0) {
    if (arg)
      fprintf(stderr, "error: 404: %s has no status %s (proxyhostctl "
                      "status shows what there is)\n", o->admin, arg);
    else
      fprintf(stderr, "error: 404: no status page on %s: set [admin] "
                      "token_file there (or it is a proxyhost older than "
                      "the status page)\n", o->admin);
  } else if (text[0]) {
    fprintf(stderr, "error: %d: %s\n", r->status, text);
  } else {
    fprintf(stderr, "error: the server answered %d\n", r->status);
  }
}

int ctl_cmd_status(const opts *o, const char *arg) {
  int parts = arg ? parts_of(arg) : 0;
  if (arg && !parts)
    return usage_error("status [INSTANCE[/PANEL[/TABLE]]]: names of "
                       "[a-z0-9_] (an instance may hold one dot)");
  if ((o->offset || o->limit) && parts != 3)
    return usage_error("--offset and --limit page one table: status "
                       "INSTANCE/PANEL/TABLE");
  if ((o->offset && number_ok(o->offset, 0, OFFSET_MAX) < 0) ||
      (o->limit && number_ok(o->limit, 1, LIMIT_MAX) < 0))
    return usage_error("--offset takes 0..1000000000, --limit 1..500");
  char path[512];
  ph_bw w;
  ph_bw_init(&w, path, sizeof(path), PH_BW_TEXT);
  ph_bw_printf(&w, "/v1/status%s%s", arg ? "/" : "", arg ? arg : "");
  if (o->offset)
    ph_bw_printf(&w, "?offset=%s", o->offset);
  if (o->limit)
    ph_bw_printf(&w, "%climit=%s", o->offset ? '&' : '?', o->limit);
  ctl_response r;
  int ex = ctl_fetch(o, "GET", path, NULL, &r);
  if (ex)
    return ex;
  if (r.status >= 400) {
    if (o->json)
      fprintf(stdout, "%s\n", r.body);
    status_error(o, arg, &r);
    ex = EXIT_SERVER;
  } else if (o->json) {
    fwrite(r.body, 1, r.len, stdout);
    if (r.len && r.body[r.len - 1] != '\n')
      fputc('\n', stdout);
  } else {
    /* A table asked by its path: its whole page; else the first rows. */
    ctl_status_view v = {ctl_status_width(stdout),
                         parts == 3 ? (unsigned)LIMIT_MAX
                                    : CTL_STATUS_ROWS_SUMMARY};
    if (ctl_print_status(stdout, r.body, r.len, &v) < 0) {
      fprintf(stderr, "proxyhostctl: the answer of %s to %s is not a "
                      "status document (try --json)\n", o->admin, path);
      ex = EXIT_SERVER;
    }
  }
  ctl_response_drop(&r);
  return ex;
}
