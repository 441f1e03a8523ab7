/* SPDX-License-Identifier: BSD-2-Clause */
/* libFuzzer target for what admin_api reads from a /v1/pool/ request
 * (modules/pool_api/api_pool.c): list queries and JSON bodies read into
 * pool.store lists and writes, through a fake store, and a PATCH's body
 * applied onto a stored row. It checks that exactly one answer comes for
 * every request (an error with a message, or a store call), that a write
 * reaching the store has the kind and the action its route asks for, the
 * key of its path, NUL-terminated strings inside the row and at most 8
 * groups, that a PATCH carries expect_revision, that every number the
 * body gave is within its type (the messages are static strings: a
 * refusal never quotes the body, a password sent as a field). Input byte 0
 * picks the pool route; the rest is the query (a list) or the body. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <proxyhost/abi.h>

#include "pool_api/api_pool.h"
#include "pool_api/pool_routes.h"

static void check(int cond) {
  if (!cond)
    abort();
}

static int replies, store_calls;
static ph_pool_write last_write;
static ph_pool_list_cb list_cb;
static void *list_arg;
static char last_body[1024];

static void reply(void *arg, int http, const char *body, size_t len) {
  (void)arg;
  replies++;
  check(http >= 200 && http <= 599);
  check(http == 204 || (body && len > 0));
  snprintf(last_body, sizeof(last_body), "%.*s", (int)(len < 1000 ? len : 1000),
           body ? body : "");
}

static int64_t f_snapshot(void *self, ph_pool_snapshot_cb cb, void *arg) {
  (void)self, (void)cb, (void)arg;
  return PH_EINVAL;
}
static int f_revision(void *self, uint64_t *out) {
  (void)self;
  *out = 1;
  return PH_OK;
}
static int64_t f_write(void *self, const ph_pool_write *w, ph_pool_write_cb cb,
                       void *arg) {
  (void)self, (void)cb, (void)arg;
  store_calls++;
  last_write = *w;
  return 1;
}
static int64_t f_list(void *self, const ph_pool_list *l, ph_pool_list_cb cb,
                      void *arg) {
  (void)self;
  store_calls++;
  check(l->limit >= 1 && l->limit <= PH_POOL_LIST_MAX);
  list_cb = cb;
  list_arg = arg;
  return 2;
}
static int f_cancel(void *self, int64_t id) {
  (void)self, (void)id;
  return PH_OK;
}
static const ph_pool_store_v1 fake = {f_snapshot, f_revision, f_write, f_list,
                                      f_cancel};

static int terminated(const char *s, size_t cap) {
  return memchr(s, '\0', cap) != NULL;
}

static void check_row(const ph_pool_write *w) {
  if (w->kind == PH_POOL_KIND_PROXY) {
    const ph_pool_proxy_row *p = &w->u.proxy;
    check(terminated(p->proxy_id, sizeof(p->proxy_id)) &&
          terminated(p->host, sizeof(p->host)) &&
          terminated(p->zone, sizeof(p->zone)) &&
          terminated(p->secret_ref, sizeof(p->secret_ref)));
    check(p->n_groups <= PH_POOL_GROUPS_MAX);
    for (uint32_t i = 0; i < p->n_groups; i++)
      check(terminated(p->groups[i], sizeof(p->groups[i])));
  } else if (w->kind == PH_POOL_KIND_ROUTE) {
    const ph_pool_route_row *r = &w->u.route;
    check(terminated(r->rule_id, sizeof(r->rule_id)) &&
          terminated(r->host_pattern, sizeof(r->host_pattern)) &&
          terminated(r->target_group, sizeof(r->target_group)) &&
          terminated(r->strategy, sizeof(r->strategy)) &&
          terminated(r->sticky_key, sizeof(r->sticky_key)) &&
          terminated(r->listener, sizeof(r->listener)) &&
          terminated(r->client_identity, sizeof(r->client_identity)));
  } else {
    check(w->kind == PH_POOL_KIND_CREDENTIAL);
    check(terminated(w->u.credential.secret_ref,
                     sizeof(w->u.credential.secret_ref)));
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 8192)
    return 0;
  size_t store_routes[64], n = 0;
  for (size_t i = 0; i < pool_n_routes && n < 64; i++)
    if (pool_routes[i].kind != 0)
      store_routes[n++] = i;
  check(n > 0);
  const api_route *rt = &pool_routes[store_routes[data[0] % n]];
  size_t len = size - 1;
  char *p = malloc(len + 1);
  if (!p)
    return 0;
  memcpy(p, data + 1, len);
  p[len] = '\0';
  api_pool_call c;
  memset(&c, 0, sizeof(c));
  c.st = &fake;
  c.kind = rt->kind;
  c.op = rt->op;
  snprintf(c.key, sizeof(c.key), "%s", "k1");
  c.reply = reply;
  replies = store_calls = 0;
  list_cb = NULL;
  memset(&last_write, 0, sizeof(last_write));
  int is_read = c.op == OP_LIST || c.op == OP_GET;
  api_pool_start(&c, c.op == OP_LIST ? p : "", is_read ? "" : p,
                 is_read ? 0 : len);
  if (c.op == OP_UPDATE && list_cb) {
    /* The read a PATCH waits for: a stored row, then the body on it. */
    check(replies == 0);
    ph_pool_proxy_row px;
    ph_pool_route_row ro;
    memset(&px, 0, sizeof(px));
    memset(&ro, 0, sizeof(ro));
    snprintf(px.proxy_id, sizeof(px.proxy_id), "k1");
    px.n_groups = 1;
    snprintf(px.groups[0], sizeof(px.groups[0]), "g");
    snprintf(ro.rule_id, sizeof(ro.rule_id), "k1");
    ph_pool_list_result res = {.size = sizeof(res),
                               .status = PH_OK,
                               .kind = c.kind,
                               .proxies = &px,
                               .routes = &ro,
                               .n = 1,
                               .revision = 7};
    store_calls = 0;
    list_cb(list_arg, &res);
    if (store_calls)
      check(last_write.expect_revision == 7);
  }
  /* One answer: a reply, or the store call that will bring it (a PATCH:
   * its read, then the reply or the write). */
  check(c.op == OP_UPDATE ? replies + store_calls >= 1
                          : replies + store_calls == 1);
  if (store_calls && last_write.size) {
    check(last_write.kind == c.kind && last_write.size == sizeof(last_write));
    check_row(&last_write);
    switch (c.op) {
    case OP_CREATE:
      check(last_write.action == PH_POOL_CREATE);
      break;
    case OP_UPDATE:
      check(last_write.action == PH_POOL_UPDATE);
      break;
    case OP_DELETE:
      check(last_write.action == PH_POOL_DELETE);
      break;
    case OP_MOVE:
      check(last_write.action == PH_POOL_MOVE);
      break;
    case OP_ROTATE:
      check(last_write.action == PH_POOL_ROTATE);
      break;
    default:
      check(0);
    }
    if (c.op != OP_CREATE) {
      const char *k = c.kind == PH_POOL_KIND_PROXY   ? last_write.u.proxy.proxy_id
                      : c.kind == PH_POOL_KIND_ROUTE ? last_write.u.route.rule_id
                                                     : last_write.u.credential.secret_ref;
      check(strcmp(k, "k1") == 0);
    }
  }
  api_pool_free(&c);
  free(p);
  return 0;
}
