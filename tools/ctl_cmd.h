/* SPDX-License-Identifier: BSD-2-Clause */
/* proxyhostctl's command plumbing, shared by proxyhostctl.c (the
 * authorization commands and main) and ctl_pool.c (the pool's): the
 * parsed options, the request and the JSON body builders. */
#ifndef PH_CTL_CMD_H
#define PH_CTL_CMD_H

#include "ctl_http.h"
#include "lib/json.h"

#define EXIT_SERVER 1
#define EXIT_USAGE 2
#define EXIT_UNREACHABLE 3
#define EXIT_DENY 4 /* access check: the verdict is deny (issue 28) */

#define BODY_MAX 4096
#define MAX_POS 4

typedef struct opts {
  const char *admin, *token_file;
  int json, timeout_ms;
  /* Subcommand options. */
  const char *owner, *user, *agent, *token, *after, *limit, *scopes,
      *expires_at, *host, *ports, *port;
  /* The pool's (ctl_pool.c). */
  const char *protocol, *groups, *group, *zone, *capacity, *weight,
      *secret_ref, *expires_at_ms, *position, *client, *listener, *strategy,
      *on_unavailable, *wait_timeout_ms, *sticky, *enabled, *version;
  /* status's (ctl_status.c). */
  const char *offset;
  int disabled, has_owner;
  const char *pos[MAX_POS];
  int npos;
} opts;

/* SHAPE_EXTRACTION: an extraction state (ctl_print_extraction). */
/* SHAPE_VERDICT: a record whose "verdict" of deny exits EXIT_DENY. */
typedef enum shape {
  SHAPE_RECORD,
  SHAPE_LIST,
  SHAPE_NONE,
  SHAPE_EXTRACTION,
  SHAPE_VERDICT
} shape;

typedef struct ctl_body {
  char buf[BODY_MAX];
  json_w w;
} ctl_body;

/* Prints what and the usage; EXIT_USAGE (2). */
int usage_error(const char *what);
/* One request with the admin token; prints the answer. The exit status. */
int call(const opts *o, const char *method, const char *path,
         const char *body, shape sh, const char *collection);
/* One request with the admin token: 0 with *r filled (any HTTP status;
 * ctl_response_drop it), or EXIT_USAGE (no or a bad token file) or
 * EXIT_UNREACHABLE, said in one line on stderr. */
int ctl_fetch(const opts *o, const char *method, const char *path,
              const char *body, ctl_response *r);
/* Zeroes (a bearer may be in it) and frees r's body. */
void ctl_response_drop(ctl_response *r);
/* An answer of 400 or more, on stderr (its body on stdout with --json):
 * EXIT_SERVER. */
int ctl_report_error(const opts *o, const char *path, const ctl_response *r);
/* A key of [a-z0-9._-], 1..128 bytes. */
int key_ok(const char *s);
/* The path of GET /v1/COLLECTION with --after, --limit and the filters
 * into path (cap bytes): 0, or EXIT_USAGE said. */
int list_path(const opts *o, const char *collection, const char *user_filter,
              const char *agent_filter, char *path, size_t cap);
/* GET /v1/COLLECTION with --after, --limit and the filters. */
int list_call(const opts *o, const char *collection, const char *user_filter,
              const char *agent_filter);
/* METHOD /v1/COLLECTION/KEY[SUFFIX]. */
int one_call(const opts *o, const char *method, const char *collection,
             const char *key, const char *suffix, const char *body, shape sh);
void body_begin(ctl_body *b);
const char *body_end(ctl_body *b); /* NULL when it did not fit */
/* "key": v as an integer in lo..hi; 0 or -1. */
int int_into(json_w *w, const char *key, const char *v, long lo, long hi);
int need(const opts *o, int n);

/* ctl_status.c: status [INSTANCE[/PANEL[/TABLE]]] (arg NULL: all). */
int ctl_cmd_status(const opts *o, const char *arg);
/* ctl_agents.c: agent list with the live columns. */
int ctl_agent_list(const opts *o);

/* ctl_pool.c */
int ctl_cmd_proxy(const opts *o, const char *verb);
int ctl_cmd_route(const opts *o, const char *verb);
int ctl_cmd_credential(const opts *o, const char *verb);

#endif
