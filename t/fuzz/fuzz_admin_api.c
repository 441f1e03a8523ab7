/* SPDX-License-Identifier: BSD-2-Clause */
/* libFuzzer target for what admin_api reads from a request
 * (modules/admin_api/api_json.c, api_routes.c): the path matched against
 * the route table, the list query, and the JSON body read into an
 * authz.store write.
 *
 * It checks the contract: a match names a route of the table and a key
 * of [a-z0-9._-] within API_KEY_MAX; a refused body or query always has
 * a reason; an accepted write has an action and the kind asked for, an
 * update names at least one field, and every string it points to is
 * NUL-terminated inside the body struct within its bound; a query's
 * limit is within 1..PH_AZ_LIST_MAX. (The pool's routes are pool_api's:
 * fuzz_admin_pool.c.)
 * Input byte 0 picks the route (its kind and op), byte 1 what the rest
 * is (bit 0: a path, bit 1: a query, else a body). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "admin_api/api_json.h"
#include "admin_api/api_routes.h"

static void check(int cond) {
  if (!cond)
    abort();
}

static void check_str(const api_body *b, const char *s, size_t cap) {
  if (!s)
    return;
  const char *lo = (const char *)b, *hi = lo + sizeof(*b);
  check(s >= lo && s < hi);
  check(memchr(s, '\0', cap) != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2)
    return 0;
  const api_route *rt = &api_routes[data[0] % api_n_routes];
  size_t len = size - 2;
  char *p = malloc(len + 1);
  if (!p)
    return 0;
  memcpy(p, data + 2, len);
  p[len] = '\0';
  const char *msg = NULL;
  if (data[1] & 1) {
    char key[API_PATH_KEY_MAX + 1];
    int known = 0;
    const api_route *m = api_match(rt->method, p, key, &known);
    if (m) {
      check(m >= api_routes && m < api_routes + api_n_routes && known);
      check(strlen(key) <= API_KEY_MAX);
      check(strspn(key, "abcdefghijklmnopqrstuvwxyz0123456789._-") ==
            strlen(key));
    }
  } else if (data[1] & 2) {
    api_query q;
    if (api_query_parse(&q, p, &msg) == 0) {
      check(q.list.limit >= 1 && q.list.limit <= PH_AZ_LIST_MAX);
      check(!q.list.after || q.list.after == q.after);
      check(!q.list.user || q.list.user == q.user);
      check(!q.list.agent || q.list.agent == q.agent);
    } else {
      check(msg != NULL);
    }
  } else if (rt->op != OP_LIST && rt->op != OP_GET && rt->op != OP_ROUTES &&
             rt->op != OP_AUTHORIZE) {
    api_body *b = malloc(sizeof(*b));
    if (b) {
      int rc = api_body_parse(b, rt->kind, rt->op, "k", p, len, &msg);
      if (rc == 0) {
        check(b->w.action >= PH_AZ_CREATE && b->w.action <= PH_AZ_ROTATE);
        check(b->w.rec.kind == rt->kind);
        check(rt->op != OP_UPDATE || b->w.fields != 0);
        const ph_az_record *r = &b->w.rec;
        switch (r->kind) {
        case PH_AZ_USER:
          check_str(b, r->u.user.name, sizeof(b->name));
          check_str(b, r->u.user.owner, sizeof(b->owner));
          break;
        case PH_AZ_AGENT:
          check_str(b, r->u.agent.name, sizeof(b->name));
          check_str(b, r->u.agent.owner, sizeof(b->owner));
          break;
        case PH_AZ_TOKEN:
          check_str(b, r->u.token.id, sizeof(b->id));
          check_str(b, r->u.token.user, sizeof(b->user));
          check_str(b, r->u.token.agent, sizeof(b->agent));
          check(rt->op != OP_CREATE || (r->u.token.scopes & ~3u) == 0);
          break;
        case PH_AZ_POLICY:
          check_str(b, r->u.policy.id, sizeof(b->id));
          check_str(b, r->u.policy.agent, sizeof(b->agent));
          check_str(b, r->u.policy.subject, sizeof(b->subject));
          check_str(b, r->u.policy.host_pattern, sizeof(b->host));
          check(rt->op != OP_CREATE || r->u.policy.port_min >= 1);
          break;
        }
      } else {
        check(rc == -1 && msg != NULL);
      }
      free(b);
    }
  }
  free(p);
  return 0;
}
