/* SPDX-License-Identifier: BSD-2-Clause */
/* proxyhostctl's pool commands (proxyhostctl(1)): proxies, routes and
 * credential references through the admin API's /v1/pool/ routes
 * (docs/api/openapi.yaml). The values are checked by the server (the one
 * validation of store_common/pool_validate.c); here only the shape of the
 * arguments. No command takes credential material: a credential is a
 * secret_ref (a file of the controller's secrets_dir) and a version. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_cmd.h"
#include "ctl_http.h"
#include "ctl_proxy_live.h"

static int long_into(json_w *w, const char *key, const char *v, long long lo,
                     long long hi) {
  char *end;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (!*v || *end || errno || x < lo || x > hi)
    return -1;
  json_w_key(w, key);
  json_w_int(w, x);
  return 0;
}

static void str_into(json_w *w, const char *key, const char *v) {
  json_w_key(w, key);
  json_w_str(w, v);
}

/* The proxy options given, into the body. 0 or -1 (a bad number). */
static int proxy_fields(const opts *o, json_w *w) {
  if (o->protocol)
    str_into(w, "protocol", o->protocol);
  if (o->host)
    str_into(w, "host", o->host);
  if (o->zone)
    str_into(w, "zone", o->zone);
  if (o->secret_ref)
    str_into(w, "secret_ref", o->secret_ref);
  if (o->groups) {
    json_w_key(w, "groups");
    json_w_arr(w);
    char copy[1024];
    snprintf(copy, sizeof(copy), "%s", o->groups);
    for (char *save = NULL, *t = strtok_r(copy, ",", &save); t;
         t = strtok_r(NULL, ",", &save))
      json_w_str(w, t);
    json_w_arr_end(w);
  }
  if ((o->port && int_into(w, "port", o->port, 0, 65535) < 0) ||
      (o->capacity && long_into(w, "capacity", o->capacity, 0, 4294967295LL) < 0) ||
      (o->weight && long_into(w, "weight", o->weight, 0, 4294967295LL) < 0) ||
      (o->expires_at_ms &&
       long_into(w, "expires_at_ms", o->expires_at_ms, 0, INT64_MAX) < 0))
    return -1;
  return 0;
}

static int send_body(const opts *o, const char *method, const char *coll,
                     const char *key, const char *suffix, ctl_body *b) {
  const char *text = body_end(b);
  if (!text)
    return usage_error("the arguments are too long");
  return one_call(o, method, coll, key, suffix, text, SHAPE_RECORD);
}

static int post_new(const opts *o, const char *coll, ctl_body *b) {
  const char *text = body_end(b);
  if (!text)
    return usage_error("the arguments are too long");
  char path[64];
  snprintf(path, sizeof(path), "/v1/%s", coll);
  return call(o, "POST", path, text, SHAPE_RECORD, coll);
}

/* After the proxy's record: what the controller holds on it now (its
 * status panel "proxies", issue 28). The record's exit status stays. */
static int show_live(const opts *o, const char *id, int ex) {
  char path[256];
  if (ex != 0 || o->json || ctl_live_path(id, path, sizeof(path)) < 0)
    return ex;
  ctl_response r;
  if (ctl_fetch(o, "GET", path, NULL, &r) != 0)
    return ex;
  int rc = r.status == 200 ? ctl_print_live(stdout, r.body, r.len, id) : -1;
  if (rc == 0)
    printf("state: unknown (not in the controller's view)\n");
  else if (rc < 0)
    printf("state: unknown (the controller's status answered %d%s)\n",
           r.status,
           r.status == 404 ? ": no controlplane_server, or no [admin] "
                             "token_file on it"
                           : "");
  ctl_response_drop(&r);
  return ex;
}

int ctl_cmd_proxy(const opts *o, const char *verb) {
  const char *coll = "pool/proxies";
  ctl_body b;
  if (strcmp(verb, "list") == 0)
    return need(o, 0) ? list_call(o, coll, NULL, NULL)
                      : usage_error("proxy list [--after ID] [--limit N]");
  if (!need(o, 1))
    return usage_error("give the proxy's id");
  const char *id = o->pos[0];
  if (strcmp(verb, "show") == 0)
    return show_live(o, id,
                     one_call(o, "GET", coll, id, NULL, NULL, SHAPE_RECORD));
  if (strcmp(verb, "delete") == 0)
    return one_call(o, "DELETE", coll, id, NULL, NULL, SHAPE_NONE);
  /* Exclusive extraction (CP-1-5): the state in Redis, through admin_api. */
  if (strcmp(verb, "extract") == 0)
    return one_call(o, "POST", coll, id, "/extraction", NULL,
                    SHAPE_EXTRACTION);
  if (strcmp(verb, "extraction") == 0)
    return one_call(o, "GET", coll, id, "/extraction", NULL,
                    SHAPE_EXTRACTION);
  if (strcmp(verb, "return") == 0)
    return one_call(o, "DELETE", coll, id, "/extraction", NULL,
                    SHAPE_EXTRACTION);
  body_begin(&b);
  if (strcmp(verb, "drain") == 0 || strcmp(verb, "disable") == 0 ||
      strcmp(verb, "enable") == 0) {
    str_into(&b.w, "admin_state", strcmp(verb, "drain") == 0     ? "draining"
                                  : strcmp(verb, "disable") == 0 ? "disabled"
                                                                 : "active");
    return send_body(o, "PATCH", coll, id, NULL, &b);
  }
  if (strcmp(verb, "add") == 0) {
    if (!o->protocol || !o->host || !o->port || !o->groups || !o->capacity)
      return usage_error("proxy add ID --protocol P --host HOST --port N "
                         "--groups G[,G] --capacity N");
    if (!key_ok(id))
      return usage_error("the id is [a-z0-9._-], 1..128 bytes");
    str_into(&b.w, "proxy_id", id);
    if (proxy_fields(o, &b.w) < 0)
      return usage_error("a number is not an integer in its bounds");
    return post_new(o, coll, &b);
  }
  if (strcmp(verb, "update") == 0) {
    if (proxy_fields(o, &b.w) < 0)
      return usage_error("a number is not an integer in its bounds");
    return send_body(o, "PATCH", coll, id, NULL, &b);
  }
  return usage_error("proxy add|list|show|update|drain|disable|enable|delete|"
                     "extract|extraction|return");
}

/* The route options given (not the id or position), into the body. */
static int route_fields(const opts *o, json_w *w) {
  if (o->host)
    str_into(w, "host_pattern", o->host);
  if (o->group)
    str_into(w, "target_group", o->group);
  if (o->strategy)
    str_into(w, "strategy", o->strategy);
  if (o->client)
    str_into(w, "client_identity", o->client);
  if (o->listener)
    str_into(w, "listener", o->listener);
  if (o->on_unavailable)
    str_into(w, "on_unavailable", o->on_unavailable);
  if (o->sticky)
    str_into(w, "sticky_key", o->sticky);
  if (o->disabled) {
    json_w_key(w, "enabled");
    json_w_bool(w, 0);
  } else if (o->enabled) {
    if (strcmp(o->enabled, "yes") != 0 && strcmp(o->enabled, "no") != 0)
      return -1;
    json_w_key(w, "enabled");
    json_w_bool(w, strcmp(o->enabled, "yes") == 0);
  }
  if (o->ports) {
    if (strcmp(o->ports, "any") == 0) {
      json_w_key(w, "port_min");
      json_w_int(w, 0);
      json_w_key(w, "port_max");
      json_w_int(w, 0);
    } else {
      char lo[8] = "", hi[8] = "";
      const char *dash = strchr(o->ports, '-');
      size_t n = dash ? (size_t)(dash - o->ports) : strlen(o->ports);
      if (n == 0 || n >= sizeof(lo) || (dash && strlen(dash + 1) >= sizeof(hi)))
        return -1;
      memcpy(lo, o->ports, n);
      snprintf(hi, sizeof(hi), "%s", dash ? dash + 1 : lo);
      if (int_into(w, "port_min", lo, 1, 65535) < 0 ||
          int_into(w, "port_max", hi, 1, 65535) < 0)
        return -1;
    }
  }
  if (o->wait_timeout_ms &&
      long_into(w, "wait_timeout_ms", o->wait_timeout_ms, 0, 4294967295LL) < 0)
    return -1;
  return 0;
}

int ctl_cmd_route(const opts *o, const char *verb) {
  const char *coll = "pool/routes";
  ctl_body b;
  if (strcmp(verb, "list") == 0)
    return need(o, 0) ? list_call(o, coll, NULL, NULL)
                      : usage_error("route list [--after POSITION] [--limit N]");
  if (strcmp(verb, "move") == 0) {
    if (!need(o, 2))
      return usage_error("route move ID POSITION");
    body_begin(&b);
    if (long_into(&b.w, "position", o->pos[1], 0, 4294967295LL) < 0)
      return usage_error("a position is 0..4294967295");
    return send_body(o, "POST", coll, o->pos[0], "/move", &b);
  }
  if (!need(o, 1))
    return usage_error("give the route's id");
  const char *id = o->pos[0];
  if (strcmp(verb, "show") == 0)
    return one_call(o, "GET", coll, id, NULL, NULL, SHAPE_RECORD);
  if (strcmp(verb, "delete") == 0)
    return one_call(o, "DELETE", coll, id, NULL, NULL, SHAPE_NONE);
  body_begin(&b);
  if (strcmp(verb, "add") == 0) {
    if (!o->position || !o->host || !o->group || !o->strategy)
      return usage_error("route add ID --position N --host PATTERN --group G "
                         "--strategy NAME");
    if (!key_ok(id))
      return usage_error("the id is [a-z0-9._-], 1..128 bytes");
    str_into(&b.w, "rule_id", id);
    if (long_into(&b.w, "position", o->position, 0, 4294967295LL) < 0 ||
        route_fields(o, &b.w) < 0)
      return usage_error("a number, the ports or --enabled are not valid");
    return post_new(o, coll, &b);
  }
  if (strcmp(verb, "update") == 0) {
    if (o->position)
      return usage_error("a route's position changes with route move");
    if (route_fields(o, &b.w) < 0)
      return usage_error("a number, the ports or --enabled are not valid");
    return send_body(o, "PATCH", coll, id, NULL, &b);
  }
  return usage_error("route add|list|show|update|move|delete");
}

int ctl_cmd_credential(const opts *o, const char *verb) {
  const char *coll = "pool/credentials";
  if (strcmp(verb, "list") == 0)
    return need(o, 0)
               ? list_call(o, coll, NULL, NULL)
               : usage_error("credential list [--after SECRET_REF] [--limit N]");
  if (!need(o, 1))
    return usage_error("give the secret_ref (no material: it names a file "
                       "of the controller's secrets_dir)");
  const char *ref = o->pos[0];
  if (strcmp(verb, "show") == 0)
    return one_call(o, "GET", coll, ref, NULL, NULL, SHAPE_RECORD);
  if (strcmp(verb, "delete") == 0)
    return one_call(o, "DELETE", coll, ref, NULL, NULL, SHAPE_NONE);
  if (strcmp(verb, "rotate") == 0)
    return one_call(o, "POST", coll, ref, "/rotate", NULL, SHAPE_RECORD);
  if (strcmp(verb, "add") == 0) {
    if (!key_ok(ref))
      return usage_error("a secret_ref is [a-z0-9._-], 1..128 bytes");
    ctl_body b;
    body_begin(&b);
    str_into(&b.w, "secret_ref", ref);
    if (o->version &&
        long_into(&b.w, "credential_version", o->version, 1, INT64_MAX) < 0)
      return usage_error("--version is 1 or more");
    return post_new(o, coll, &b);
  }
  return usage_error("credential add|list|show|rotate|delete");
}
