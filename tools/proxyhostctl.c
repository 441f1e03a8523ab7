/* SPDX-License-Identifier: BSD-2-Clause */
/* proxyhostctl: manage users, tokens, agents and policies, and the proxy
 * pool (proxies, routes, credential references: ctl_pool.c), through the
 * admin_api module's JSON API on the admin listener (docs/api/openapi.yaml,
 * proxyhostctl(1)), and show what runs: the host's /v1/status (status:
 * ctl_status.c; agent list's live columns: ctl_agents.c). The admin token is read from a file (--token-file or
 * PROXYHOSTCTL_TOKEN_FILE), never from the command line, where other users
 * could see it.
 *
 * Exit statuses: 0 done; 1 the server refused (a 4xx or 5xx answer, its
 * error printed); 2 usage (bad arguments, a bad token file); 3 the admin
 * listener could not be reached or did not answer HTTP; 4 access check
 * answered deny. An error is one line and a hint (issue 28). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/bw.h"
#include "ctl_cmd.h"
#include "ctl_http.h"
#include "ctl_print.h"
#include "lib/json.h"

#define DEFAULT_ADMIN "127.0.0.1:9470"
#define TOKEN_MAX 256

static const char usage_text[] =
    "usage: proxyhostctl [--admin ADDR] [--token-file FILE] [--json] "
    "COMMAND ...\n"
    "\n"
    "  user create NAME [--owner USER] [--disabled]\n"
    "  user list [--owner USER] [--after NAME] [--limit N]\n"
    "  user show|enable|disable|delete NAME\n"
    "  user set-owner NAME USER|-\n"
    "  token create --user USER [--agent AGENT] [--scopes stream,agent]\n"
    "               [--expires-at UNIXTIME]\n"
    "  token list [--user USER] [--agent AGENT] [--after ID] [--limit N]\n"
    "  token show|rotate|revoke ID\n"
    "  token set-expiry ID UNIXTIME|never\n"
    "  token set-scopes ID stream,agent\n"
    "  agent create NAME --owner USER [--disabled]\n"
    "  agent list [--owner USER] [--after NAME] [--limit N]\n"
    "               (with online, node and last_seen from the status of\n"
    "               tunnel_server on the same admin listener)\n"
    "  agent show|enable|disable|delete NAME\n"
    "  agent set-owner NAME USER\n"
    "  policy create --agent AGENT (--user USER | --token ID) --host PATTERN\n"
    "                --ports N[-M]\n"
    "  policy list [--agent AGENT] [--after ID] [--limit N]\n"
    "  policy show|delete ID\n"
    "  policy update ID [--user USER | --token ID] [--host PATTERN]\n"
    "                [--ports N[-M]]\n"
    "  proxy add ID --protocol http_connect|socks5|http --host HOST --port N\n"
    "            --groups G[,G...] --capacity N [--weight N] [--zone Z]\n"
    "            [--secret-ref REF] [--expires-at-ms MS]\n"
    "  proxy list [--after ID] [--limit N]\n"
    "  proxy show|drain|disable|enable|delete ID\n"
    "  proxy update ID [any option of proxy add]\n"
    "  proxy extract ID   take it out of the pool, exclusively (exit 0 also\n"
    "                     when reclaiming: its owner drains it first)\n"
    "  proxy extraction ID   its state: available, reclaiming, extracted\n"
    "  proxy return ID    give an extracted proxy back to the pool\n"
    "  route add ID --position N --host PATTERN --group G --strategy NAME\n"
    "            [--ports N[-M]|any] [--client IDENTITY] [--listener NAME]\n"
    "            [--on-unavailable reject|wait|direct] [--wait-timeout-ms N]\n"
    "            [--sticky username|header:NAME] [--disabled]\n"
    "  route list [--after POSITION] [--limit N]\n"
    "  route show|delete ID\n"
    "  route move ID POSITION\n"
    "  route update ID [any option of route add but --position;\n"
    "               --enabled yes|no]\n"
    "  credential add SECRET_REF [--version N]\n"
    "  credential list [--after SECRET_REF] [--limit N]\n"
    "  credential show|rotate|delete SECRET_REF\n"
    "               (a reference to a file of the controller's secrets_dir;\n"
    "               no credential material is ever given here)\n"
    "  access check --token ID --agent AGENT --host HOST --port N\n"
    "               (what a stream open would be answered now)\n"
    "  status [INSTANCE[/PANEL[/TABLE]]] [--offset N] [--limit N]\n"
    "               what runs: the host's process panel, then every\n"
    "               module's panels (a table: its first rows; by its\n"
    "               path: a page of it)\n"
    "  admin-token new FILE\n"
    "\n"
    "  --admin ADDR       the admin listener, IPv4:PORT or [IPv6]:PORT\n"
    "                     (default $PROXYHOSTCTL_ADMIN, else " DEFAULT_ADMIN
    ")\n"
    "  --token-file FILE  the admin token's file, mode 0600 (default\n"
    "                     $PROXYHOSTCTL_TOKEN_FILE); never on the command "
    "line\n"
    "  --json             print the server's JSON as it is\n"
    "  --timeout SECONDS  wait at most this long (default 10)\n"
    "\n"
    "Exit status: 0 done, 1 refused by the server, 2 usage, 3 the admin\n"
    "listener could not be reached, 4 access check's verdict is deny.\n"
    "A token's bearer is printed once, by token create and token rotate.\n";

/* An error is one line and where to look (issue 28): the whole usage
 * only for proxyhostctl without a command, and with --help. */
int usage_error(const char *what) {
  fprintf(stderr, "proxyhostctl: %s\nrun proxyhostctl --help for the "
                  "commands and options\n",
          what);
  return EXIT_USAGE;
}

/* ---- the admin token ------------------------------------------------- */

static int read_token(const char *path, char *out, size_t cap) {
  if (!path || !*path) {
    fprintf(stderr, "proxyhostctl: no admin token: give --token-file FILE "
                    "or set PROXYHOSTCTL_TOKEN_FILE\n");
    return -1;
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0) {
    fprintf(stderr, "proxyhostctl: token file %s: %s\n", path,
            strerror(errno));
    if (fd >= 0)
      close(fd);
    return -1;
  }
  if (st.st_mode & 077) {
    fprintf(stderr,
            "proxyhostctl: token file %s is readable or writable by group "
            "or others (mode %04o): chmod 600 it\n",
            path, (unsigned)(st.st_mode & 07777));
    close(fd);
    return -1;
  }
  ssize_t n = read(fd, out, cap - 1);
  close(fd);
  if (n <= 0) {
    fprintf(stderr, "proxyhostctl: token file %s is empty\n", path);
    return -1;
  }
  size_t len = (size_t)n;
  while (len > 0 && (out[len - 1] == '\n' || out[len - 1] == '\r'))
    len--;
  out[len] = '\0';
  for (size_t i = 0; i < len; i++)
    if (out[i] <= 0x20 || out[i] >= 0x7f) {
      fprintf(stderr, "proxyhostctl: token file %s must hold one token on "
                      "one line\n", path);
      return -1;
    }
  return len ? 0 : -1;
}

static int admin_token_new(const char *path) {
  unsigned char raw[32];
  if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
    fprintf(stderr, "proxyhostctl: no random bytes: %s\n", strerror(errno));
    return EXIT_SERVER;
  }
  char hex[2 * sizeof(raw) + 2];
  for (size_t i = 0; i < sizeof(raw); i++)
    snprintf(hex + 2 * i, 3, "%02x", raw[i]);
  hex[2 * sizeof(raw)] = '\n';
  hex[2 * sizeof(raw) + 1] = '\0';
  memset(raw, 0, sizeof(raw));
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
                0600);
  if (fd < 0) {
    fprintf(stderr, "proxyhostctl: %s: %s%s\n", path, strerror(errno),
            errno == EEXIST ? " (remove it first to replace the token)" : "");
    return EXIT_USAGE;
  }
  /* The mode does not depend on the umask. */
  int rc = fchmod(fd, 0600) == 0 &&
                   write(fd, hex, strlen(hex)) == (ssize_t)strlen(hex)
               ? 0
               : -1;
  memset(hex, 0, sizeof(hex));
  if (close(fd) < 0 || rc < 0) {
    fprintf(stderr, "proxyhostctl: %s: %s\n", path, strerror(errno));
    unlink(path);
    return EXIT_SERVER;
  }
  printf("admin token written to %s (mode 0600)\n"
         "set [admin_api] token_file = %s, and give proxyhostctl "
         "--token-file %s\n",
         path, path, path);
  return 0;
}

/* ---- the request ----------------------------------------------------- */

int ctl_fetch(const opts *o, const char *method, const char *path,
              const char *body, ctl_response *r) {
  char token[TOKEN_MAX + 2];
  memset(r, 0, sizeof(*r));
  if (read_token(o->token_file, token, sizeof(token)) < 0)
    return EXIT_USAGE;
  char err[256];
  int rc = ctl_request(o->admin, method, path, token, body, o->timeout_ms, r,
                       err, sizeof(err));
  memset(token, 0, sizeof(token));
  if (rc < 0) {
    fprintf(stderr, "proxyhostctl: %s\n", err);
    return EXIT_UNREACHABLE;
  }
  return 0;
}

void ctl_response_drop(ctl_response *r) {
  if (r->body)
    memset(r->body, 0, r->len); /* a bearer may be in it */
  free(r->body);
  r->body = NULL;
}

int ctl_report_error(const opts *o, const char *path,
                     const ctl_response *r) {
  if (o->json)
    fprintf(stdout, "%s\n", r->body);
  if (!ctl_print_error(stderr, r->status, r->body, r->len) &&
      r->status == 404)
    /* The host's 404: no module serves the prefix (issue 25 item 6). */
    fprintf(stderr,
            "hint: no module on %s serves %s: /v1/pool/... is the "
            "pool_api module's, the rest admin_api's; load it in "
            "[proxyhost] modules\n",
            o->admin, path);
  return EXIT_SERVER;
}

int call(const opts *o, const char *method, const char *path,
                const char *body, shape sh, const char *collection) {
  ctl_response r;
  int ex = ctl_fetch(o, method, path, body, &r);
  if (ex)
    return ex;
  if (r.status >= 400) {
    ex = ctl_report_error(o, path, &r);
  } else if (o->json) {
    if (r.len)
      fprintf(stdout, "%s\n", r.body);
  } else if (sh == SHAPE_LIST) {
    if (ctl_print_list(stdout, r.body, r.len, ctl_columns(collection)) < 0)
      fprintf(stdout, "%s\n", r.body);
  } else if (sh == SHAPE_EXTRACTION && r.len) {
    if (ctl_print_extraction(stdout, r.body, r.len) < 0)
      fprintf(stdout, "%s\n", r.body);
  } else if ((sh == SHAPE_RECORD || sh == SHAPE_VERDICT) && r.len) {
    if (ctl_print_record(stdout, r.body, r.len) < 0)
      fprintf(stdout, "%s\n", r.body);
  } else if (r.status == 204) {
    fprintf(stdout, "deleted\n");
  }
  if (sh == SHAPE_VERDICT && r.status < 400 && r.len &&
      ctl_string_field_is(r.body, r.len, "verdict", "deny"))
    ex = EXIT_DENY;
  ctl_response_drop(&r);
  return ex;
}

/* A key is [a-z0-9._-]: it goes into the path as it is (at most 128
 * bytes: a pool id or secret_ref). */
int key_ok(const char *s) {
  return s && *s && strlen(s) <= 128 &&
         strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789._-") == strlen(s);
}

int list_path(const opts *o, const char *collection,
              const char *user_filter, const char *agent_filter, char *path,
              size_t cap) {
  ph_bw w;
  ph_bw_init(&w, path, cap, PH_BW_TEXT);
  ph_bw_printf(&w, "/v1/%s", collection);
  char sep = '?';
  const char *names[] = {"after", "limit", "user", "agent"};
  const char *vals[] = {o->after, o->limit, user_filter, agent_filter};
  for (int i = 0; i < 4; i++) {
    if (!vals[i])
      continue;
    if (!key_ok(vals[i]))
      return usage_error("a filter value is not a name, an id or a number");
    ph_bw_printf(&w, "%c%s=%s", sep, names[i], vals[i]);
    sep = '&';
  }
  if (ph_bw_over(&w)) /* never: four filters of key_ok's length fit */
    return usage_error("the filters make too long a path");
  return 0;
}

int list_call(const opts *o, const char *collection,
                     const char *user_filter, const char *agent_filter) {
  char path[512];
  int ex = list_path(o, collection, user_filter, agent_filter, path,
                     sizeof(path));
  return ex ? ex : call(o, "GET", path, NULL, SHAPE_LIST, collection);
}

int one_call(const opts *o, const char *method, const char *collection,
                    const char *key, const char *suffix, const char *body,
                    shape sh) {
  if (!key_ok(key))
    return usage_error("give a name or an id of [a-z0-9._-]");
  char path[256];
  snprintf(path, sizeof(path), "/v1/%s/%s%s", collection, key,
           suffix ? suffix : "");
  return call(o, method, path, body, sh, collection);
}

void body_begin(ctl_body *b) {
  json_w_init(&b->w, b->buf, sizeof(b->buf));
  json_w_obj(&b->w);
}

const char *body_end(ctl_body *b) {
  json_w_obj_end(&b->w);
  return json_w_finish(&b->w) < 0 ? NULL : b->buf;
}

static int scopes_into(json_w *w, const char *list) {
  json_w_key(w, "scopes");
  json_w_arr(w);
  char copy[64];
  snprintf(copy, sizeof(copy), "%s", list);
  int n = 0;
  for (char *save = NULL, *t = strtok_r(copy, ",", &save); t;
       t = strtok_r(NULL, ",", &save), n++) {
    if (strcmp(t, "stream") != 0 && strcmp(t, "agent") != 0)
      return -1;
    json_w_str(w, t);
  }
  json_w_arr_end(w);
  return n ? 0 : -1;
}

int int_into(json_w *w, const char *key, const char *v, long lo,
                    long hi) {
  char *end;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (!*v || *end || errno || x < lo || x > hi)
    return -1;
  json_w_key(w, key);
  json_w_int(w, x);
  return 0;
}

static int ports_into(json_w *w, const char *ports) {
  char lo[8] = "", hi[8] = "";
  const char *dash = strchr(ports, '-');
  size_t n = dash ? (size_t)(dash - ports) : strlen(ports);
  if (n == 0 || n >= sizeof(lo) || (dash && strlen(dash + 1) >= sizeof(hi)))
    return -1;
  memcpy(lo, ports, n);
  snprintf(hi, sizeof(hi), "%s", dash ? dash + 1 : lo);
  return int_into(w, "port_min", lo, 1, 65535) < 0 ||
                 int_into(w, "port_max", hi, 1, 65535) < 0
             ? -1
             : 0;
}

static int subject_into(json_w *w, const opts *o) {
  if (!!o->user == !!o->token)
    return -1;
  json_w_key(w, "subject_kind");
  json_w_str(w, o->user ? "user" : "token");
  json_w_key(w, "subject");
  json_w_str(w, o->user ? o->user : o->token);
  return 0;
}

/* ---- commands -------------------------------------------------------- */

int need(const opts *o, int n) { return o->npos == n; }

static int cmd_user_agent(const opts *o, const char *what, int is_agent) {
  const char *coll = is_agent ? "agents" : "users";
  ctl_body b;
  if (strcmp(what, "create") == 0) {
    if (!need(o, 1) || (is_agent && !o->owner))
      return usage_error(is_agent ? "agent create NAME --owner USER"
                                  : "user create NAME [--owner USER]");
    body_begin(&b);
    json_w_key(&b.w, "name");
    json_w_str(&b.w, o->pos[0]);
    if (o->owner) {
      json_w_key(&b.w, "owner");
      json_w_str(&b.w, o->owner);
    }
    if (o->disabled) {
      json_w_key(&b.w, "enabled");
      json_w_bool(&b.w, 0);
    }
    const char *j = body_end(&b);
    if (!j)
      return usage_error("an argument is too long or not UTF-8");
    char path[32];
    snprintf(path, sizeof(path), "/v1/%s", coll);
    return call(o, "POST", path, j, SHAPE_RECORD, coll);
  }
  if (strcmp(what, "list") == 0)
    return !need(o, 0)  ? usage_error("list takes no argument")
           : is_agent ? ctl_agent_list(o)
                      : list_call(o, coll, o->owner, NULL);
  if (strcmp(what, "show") == 0 || strcmp(what, "delete") == 0) {
    if (!need(o, 1))
      return usage_error("give one name");
    int del = what[0] == 'd';
    return one_call(o, del ? "DELETE" : "GET", coll, o->pos[0], NULL, NULL,
                    del ? SHAPE_NONE : SHAPE_RECORD);
  }
  if (strcmp(what, "enable") == 0 || strcmp(what, "disable") == 0) {
    if (!need(o, 1))
      return usage_error("give one name");
    body_begin(&b);
    json_w_key(&b.w, "enabled");
    json_w_bool(&b.w, what[0] == 'e');
    return one_call(o, "PATCH", coll, o->pos[0], NULL, body_end(&b),
                    SHAPE_RECORD);
  }
  if (strcmp(what, "set-owner") == 0) {
    if (!need(o, 2))
      return usage_error("set-owner NAME USER");
    body_begin(&b);
    json_w_key(&b.w, "owner");
    if (strcmp(o->pos[1], "-") == 0 && !is_agent)
      json_w_null(&b.w);
    else
      json_w_str(&b.w, o->pos[1]);
    const char *j = body_end(&b);
    if (!j)
      return usage_error("an argument is too long or not UTF-8");
    return one_call(o, "PATCH", coll, o->pos[0], NULL, j, SHAPE_RECORD);
  }
  return usage_error("unknown subcommand");
}

static int cmd_token(const opts *o, const char *what) {
  ctl_body b;
  if (strcmp(what, "create") == 0) {
    if (!need(o, 0) || !o->user)
      return usage_error("token create --user USER [--agent AGENT]");
    body_begin(&b);
    json_w_key(&b.w, "user");
    json_w_str(&b.w, o->user);
    if (o->agent) {
      json_w_key(&b.w, "agent");
      json_w_str(&b.w, o->agent);
    }
    if ((o->scopes && scopes_into(&b.w, o->scopes) < 0) ||
        (o->expires_at &&
         int_into(&b.w, "expires_at", o->expires_at, 1, 0x7fffffffL) < 0))
      return usage_error("--scopes is stream,agent; --expires-at a Unix "
                         "time");
    const char *j = body_end(&b);
    if (!j)
      return usage_error("an argument is too long or not UTF-8");
    return call(o, "POST", "/v1/tokens", j, SHAPE_RECORD, "tokens");
  }
  if (strcmp(what, "list") == 0)
    return need(o, 0) ? list_call(o, "tokens", o->user, o->agent)
                      : usage_error("list takes no argument");
  if (!need(o, what[0] == 's' && what[1] == 'e' ? 2 : 1))
    return usage_error("give the token id (and the value)");
  if (strcmp(what, "show") == 0)
    return one_call(o, "GET", "tokens", o->pos[0], NULL, NULL, SHAPE_RECORD);
  if (strcmp(what, "delete") == 0)
    return one_call(o, "DELETE", "tokens", o->pos[0], NULL, NULL,
                    SHAPE_NONE);
  if (strcmp(what, "rotate") == 0)
    return one_call(o, "POST", "tokens", o->pos[0], "/rotate", NULL,
                    SHAPE_RECORD);
  if (strcmp(what, "revoke") == 0)
    return one_call(o, "POST", "tokens", o->pos[0], "/revoke", NULL,
                    SHAPE_RECORD);
  body_begin(&b);
  if (strcmp(what, "set-expiry") == 0) {
    if (strcmp(o->pos[1], "never") == 0) {
      json_w_key(&b.w, "expires_at");
      json_w_int(&b.w, 0);
    } else if (int_into(&b.w, "expires_at", o->pos[1], 1, 0x7fffffffL) < 0) {
      return usage_error("set-expiry ID UNIXTIME|never");
    }
  } else if (strcmp(what, "set-scopes") == 0) {
    if (scopes_into(&b.w, o->pos[1]) < 0)
      return usage_error("set-scopes ID stream,agent");
  } else {
    return usage_error("unknown subcommand");
  }
  return one_call(o, "PATCH", "tokens", o->pos[0], NULL, body_end(&b),
                  SHAPE_RECORD);
}

static int cmd_policy(const opts *o, const char *what) {
  ctl_body b;
  if (strcmp(what, "create") == 0) {
    body_begin(&b);
    if (!need(o, 0) || !o->agent || !o->host || !o->ports)
      return usage_error("policy create --agent AGENT (--user USER | --token "
                         "ID) --host PATTERN --ports N[-M]");
    json_w_key(&b.w, "agent");
    json_w_str(&b.w, o->agent);
    if (subject_into(&b.w, o) < 0)
      return usage_error("give one of --user and --token");
    json_w_key(&b.w, "host_pattern");
    json_w_str(&b.w, o->host);
    if (ports_into(&b.w, o->ports) < 0)
      return usage_error("--ports N or N-M, 1..65535");
    const char *j = body_end(&b);
    if (!j)
      return usage_error("an argument is too long or not UTF-8");
    return call(o, "POST", "/v1/policies", j, SHAPE_RECORD, "policies");
  }
  if (strcmp(what, "list") == 0)
    return need(o, 0) ? list_call(o, "policies", NULL, o->agent)
                      : usage_error("list takes no argument");
  if (!need(o, 1))
    return usage_error("give the policy id");
  if (strcmp(what, "show") == 0)
    return one_call(o, "GET", "policies", o->pos[0], NULL, NULL,
                    SHAPE_RECORD);
  if (strcmp(what, "delete") == 0)
    return one_call(o, "DELETE", "policies", o->pos[0], NULL, NULL,
                    SHAPE_NONE);
  if (strcmp(what, "update") == 0) {
    body_begin(&b);
    if ((o->user || o->token) && subject_into(&b.w, o) < 0)
      return usage_error("give one of --user and --token");
    if (o->host) {
      json_w_key(&b.w, "host_pattern");
      json_w_str(&b.w, o->host);
    }
    if (o->ports && ports_into(&b.w, o->ports) < 0)
      return usage_error("--ports N or N-M, 1..65535");
    if (!o->user && !o->token && !o->host && !o->ports)
      return usage_error("policy update ID: give what changes");
    const char *j = body_end(&b);
    if (!j)
      return usage_error("an argument is too long or not UTF-8");
    return one_call(o, "PATCH", "policies", o->pos[0], NULL, j,
                    SHAPE_RECORD);
  }
  return usage_error("unknown subcommand");
}

/* GET /v1/authorize: the stream path's answer for one stream. The host
 * may hold ':' (IPv6) but nothing that needs escaping in a query. */
static int cmd_access(const opts *o, const char *what) {
  if (strcmp(what, "check") != 0 || !need(o, 0))
    return usage_error("access check --token ID --agent AGENT --host HOST "
                       "--port N");
  if (!key_ok(o->token) || !key_ok(o->agent) || !o->host || !o->port ||
      strlen(o->host) > 255 || strlen(o->port) > 5 ||
      strspn(o->host, "abcdefghijklmnopqrstuvwxyz0123456789._-:") !=
          strlen(o->host) ||
      strspn(o->port, "0123456789") != strlen(o->port))
    return usage_error("access check needs --token ID --agent AGENT --host "
                       "HOST (lower case, no trailing dot) --port N");
  char path[512];
  snprintf(path, sizeof(path), "/v1/authorize?token=%s&agent=%s&host=%s&port=%s",
           o->token, o->agent, o->host, o->port);
  return call(o, "GET", path, NULL, SHAPE_VERDICT, "authorize");
}

/* Options that take a value, and where they go. */
static const char **opt_slot(opts *o, const char *name) {
  static const struct {
    const char *name;
    size_t off;
  } table[] = {
      {"--admin", offsetof(opts, admin)},
      {"--token-file", offsetof(opts, token_file)},
      {"--owner", offsetof(opts, owner)},
      {"--user", offsetof(opts, user)},
      {"--agent", offsetof(opts, agent)},
      {"--token", offsetof(opts, token)},
      {"--after", offsetof(opts, after)},
      {"--limit", offsetof(opts, limit)},
      {"--scopes", offsetof(opts, scopes)},
      {"--expires-at", offsetof(opts, expires_at)},
      {"--host", offsetof(opts, host)},
      {"--ports", offsetof(opts, ports)},
      {"--port", offsetof(opts, port)},
      {"--protocol", offsetof(opts, protocol)},
      {"--groups", offsetof(opts, groups)},
      {"--group", offsetof(opts, group)},
      {"--zone", offsetof(opts, zone)},
      {"--capacity", offsetof(opts, capacity)},
      {"--weight", offsetof(opts, weight)},
      {"--secret-ref", offsetof(opts, secret_ref)},
      {"--expires-at-ms", offsetof(opts, expires_at_ms)},
      {"--position", offsetof(opts, position)},
      {"--client", offsetof(opts, client)},
      {"--listener", offsetof(opts, listener)},
      {"--strategy", offsetof(opts, strategy)},
      {"--on-unavailable", offsetof(opts, on_unavailable)},
      {"--wait-timeout-ms", offsetof(opts, wait_timeout_ms)},
      {"--sticky", offsetof(opts, sticky)},
      {"--enabled", offsetof(opts, enabled)},
      {"--version", offsetof(opts, version)},
      {"--offset", offsetof(opts, offset)},
  };
  for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
    if (strcmp(name, table[i].name) == 0)
      return (const char **)((char *)o + table[i].off);
  return NULL;
}

int main(int argc, char **argv) {
  opts o;
  memset(&o, 0, sizeof(o));
  o.admin = getenv("PROXYHOSTCTL_ADMIN");
  o.token_file = getenv("PROXYHOSTCTL_TOKEN_FILE");
  o.timeout_ms = 10000;
  const char *words[2] = {NULL, NULL};
  int nwords = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(usage_text, stdout);
      return 0;
    }
    if (strcmp(a, "--json") == 0) {
      o.json = 1;
    } else if (strcmp(a, "--disabled") == 0) {
      o.disabled = 1;
    } else if (strcmp(a, "--timeout") == 0) {
      if (++i >= argc || atoi(argv[i]) < 1 || atoi(argv[i]) > 600)
        return usage_error("--timeout takes 1..600 seconds");
      o.timeout_ms = atoi(argv[i]) * 1000;
    } else if (strncmp(a, "--", 2) == 0 && strlen(a) > 2) {
      const char **slot = opt_slot(&o, a);
      if (!slot)
        return usage_error(strcmp(a, "--bearer") == 0 ||
                                   strcmp(a, "--admin-token") == 0
                               ? "the admin token is read from a file: use "
                                 "--token-file FILE"
                               : "unknown option");
      if (++i >= argc)
        return usage_error("an option needs a value");
      *slot = argv[i];
    } else if (nwords < 2) {
      words[nwords++] = a;
    } else if (o.npos < MAX_POS) {
      o.pos[o.npos++] = a;
    } else {
      return usage_error("too many arguments");
    }
  }
  if (!o.admin || !*o.admin)
    o.admin = DEFAULT_ADMIN;
  if (nwords == 0) {
    fprintf(stderr, "proxyhostctl: give a command\n%s", usage_text);
    return EXIT_USAGE;
  }
  if (strcmp(words[0], "help") == 0) { /* as --help */
    fputs(usage_text, stdout);
    return 0;
  }
  static const char *const nouns[] = {"admin-token", "user",  "agent",
                                      "token",       "policy", "access",
                                      "proxy",       "route", "credential",
                                      "status",      NULL};
  size_t k = 0;
  while (nouns[k] && strcmp(nouns[k], words[0]) != 0)
    k++;
  if (!nouns[k]) {
    char what[160];
    snprintf(what, sizeof(what), "unknown command \"%.100s\"", words[0]);
    return usage_error(what);
  }
  char aerr[256];
  if (strcmp(words[0], "status") == 0) { /* status [PATH]: no verb */
    if (o.npos)
      return usage_error("status takes one INSTANCE[/PANEL[/TABLE]]");
    if (ctl_admin_check(o.admin, aerr, sizeof(aerr)) < 0)
      return usage_error(aerr);
    return ctl_cmd_status(&o, nwords > 1 ? words[1] : NULL);
  }
  if (nwords < 2) {
    char what[160];
    snprintf(what, sizeof(what), "%s: give a subcommand", words[0]);
    return usage_error(what);
  }
  const char *noun = words[0], *verb = words[1];
  if (strcmp(noun, "admin-token") != 0 &&
      ctl_admin_check(o.admin, aerr, sizeof(aerr)) < 0)
    return usage_error(aerr);
  if (strcmp(noun, "admin-token") == 0) {
    if (strcmp(verb, "new") != 0 || !need(&o, 1))
      return usage_error("admin-token new FILE");
    return admin_token_new(o.pos[0]);
  }
  if (strcmp(noun, "user") == 0)
    return cmd_user_agent(&o, verb, 0);
  if (strcmp(noun, "agent") == 0)
    return cmd_user_agent(&o, verb, 1);
  if (strcmp(noun, "token") == 0)
    return cmd_token(&o, verb);
  if (strcmp(noun, "policy") == 0)
    return cmd_policy(&o, verb);
  if (strcmp(noun, "access") == 0)
    return cmd_access(&o, verb);
  if (strcmp(noun, "proxy") == 0)
    return ctl_cmd_proxy(&o, verb);
  if (strcmp(noun, "route") == 0)
    return ctl_cmd_route(&o, verb);
  if (strcmp(noun, "credential") == 0)
    return ctl_cmd_credential(&o, verb);
  return usage_error("unknown command");
}
