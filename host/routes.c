/* SPDX-License-Identifier: BSD-2-Clause */
/* See routes.h. */
#include "routes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct route {
  char prefix[PH_ROUTE_PREFIX_MAX + 1];
  size_t len;
  ph_ctx *ctx;
  char owner[96];
  ph_route_fn fn;
  ph_route_cancel_fn cancel;
  void *arg;
  uint32_t max_in_flight;
  uint32_t in_flight;
} route;

typedef struct pending {
  int64_t id;
  route *rt;
  routes_done_fn done;
  void *done_arg;
  ph_http_request req;
  struct pending *next;
  char *storage; /* every string of req, one allocation */
} pending;

struct ph_routes {
  route routes[ROUTES_MAX];
  size_t n;
  pending *pending;
  int64_t next_id;
};

ph_routes *routes_new(void) {
  ph_routes *r = calloc(1, sizeof(*r));
  if (r)
    r->next_id = 1;
  return r;
}

static void pending_free(pending *p) {
  free(p->storage);
  free(p);
}

/* Unlinks the pending request id; NULL when there is none. */
static pending *take(ph_routes *r, int64_t id) {
  for (pending **pp = &r->pending; *pp; pp = &(*pp)->next)
    if ((*pp)->id == id) {
      pending *p = *pp;
      *pp = p->next;
      p->rt->in_flight--;
      return p;
    }
  return NULL;
}

void routes_cancel(ph_routes *r, int64_t id) {
  pending *p = r ? take(r, id) : NULL;
  if (!p)
    return;
  p->rt->cancel(p->rt->arg, id);
  pending_free(p);
}

void routes_cancel_all(ph_routes *r) {
  while (r && r->pending)
    routes_cancel(r, r->pending->id);
}

void routes_free(ph_routes *r) {
  routes_cancel_all(r);
  free(r);
}

static int prefix_ok(const char *p, size_t n) {
  if (n <= 4 || n > PH_ROUTE_PREFIX_MAX || memcmp(p, "/v1/", 4) != 0 ||
      p[n - 1] == '/')
    return 0;
  for (size_t i = 4; i < n; i++) {
    char c = p[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '-' || c == '/'))
      return 0;
    if (c == '/' && p[i - 1] == '/')
      return 0;
  }
  return 1;
}

/* path is prefix, or prefix followed by '/' and more. */
static int serves(const route *rt, const char *path, size_t len) {
  return len >= rt->len && memcmp(path, rt->prefix, rt->len) == 0 &&
         (len == rt->len || path[rt->len] == '/');
}

int routes_add(ph_routes *r, ph_ctx *ctx, const char *owner,
               const char *prefix, ph_route_fn fn, ph_route_cancel_fn cancel,
               void *arg, uint32_t max_in_flight, ph_buf *err) {
  size_t n = prefix ? strlen(prefix) : 0;
  if (!prefix || !prefix_ok(prefix, n)) {
    buf_printf(err, "route prefix \"%.*s\" is not /v1/ followed by "
               "[a-z0-9_-/] (at most %d bytes, no trailing /)",
               prefix ? (int)(n > 80 ? 80 : n) : 0, prefix ? prefix : "",
               PH_ROUTE_PREFIX_MAX);
    return PH_EINVAL;
  }
  if (!fn || !cancel) {
    buf_printf(err, "route %s: handle and cancel are required", prefix);
    return PH_EINVAL;
  }
  if (max_in_flight < 1 || max_in_flight > PH_ROUTE_MAX_IN_FLIGHT) {
    buf_printf(err, "route %s: max_in_flight %u is not in 1..%d", prefix,
               max_in_flight, PH_ROUTE_MAX_IN_FLIGHT);
    return PH_EINVAL;
  }
  /* The host's own: GET /v1/status and under it (ui.h). */
  static const route host_status = {.prefix = "/v1/status", .len = 10,
                                    .owner = "proxyhost"};
  route mine = {.len = n};
  memcpy(mine.prefix, prefix, n + 1);
  if (serves(&host_status, prefix, n) || serves(&mine, "/v1/status", 10)) {
    buf_printf(err, "route %s of module %s overlaps /v1/status, which the "
               "host serves", prefix, owner);
    return PH_EEXIST;
  }
  for (size_t i = 0; i < r->n; i++) {
    route *o = &r->routes[i];
    route probe = {.len = n};
    memcpy(probe.prefix, prefix, n + 1);
    if (serves(o, prefix, n) || serves(&probe, o->prefix, o->len)) {
      buf_printf(err, "route %s of module %s overlaps route %s of module %s",
                 prefix, owner, o->prefix, o->owner);
      return PH_EEXIST;
    }
  }
  if (r->n >= ROUTES_MAX) {
    buf_printf(err, "route %s: at most %d routes in a process", prefix,
               ROUTES_MAX);
    return PH_ELIMIT;
  }
  route *rt = &r->routes[r->n++];
  memset(rt, 0, sizeof(*rt));
  memcpy(rt->prefix, prefix, n + 1);
  rt->len = n;
  rt->ctx = ctx;
  snprintf(rt->owner, sizeof(rt->owner), "%s", owner ? owner : "?");
  rt->fn = fn;
  rt->cancel = cancel;
  rt->arg = arg;
  rt->max_in_flight = max_in_flight;
  return PH_OK;
}

static route *find(const ph_routes *r, const char *path, size_t len) {
  for (size_t i = 0; r && i < r->n; i++)
    if (serves(&r->routes[i], path, len))
      return (route *)&r->routes[i];
  return NULL;
}

int routes_match(const ph_routes *r, const char *path, size_t len) {
  return find(r, path, len) != NULL;
}

/* Copies n bytes and a NUL at *at; returns the copy. */
static const char *put(char **at, const char *s, size_t n) {
  char *d = *at;
  if (n)
    memcpy(d, s, n);
  d[n] = '\0';
  *at += n + 1;
  return d;
}

int64_t routes_dispatch(ph_routes *r, const routes_in *in,
                        routes_done_fn done, void *arg) {
  route *rt = find(r, in->path, in->path_len);
  if (!rt)
    return 0;
  if (rt->in_flight >= rt->max_in_flight)
    return PH_EFULL;
  pending *p = calloc(1, sizeof(*p));
  size_t total = in->method_len + in->path_len + in->query_len +
                 in->authorization_len + in->content_type_len +
                 in->body_len + 6;
  if (!p || !(p->storage = malloc(total))) {
    free(p);
    return PH_ENOMEM;
  }
  char *at = p->storage;
  p->req.size = sizeof(p->req);
  p->req.method = put(&at, in->method, in->method_len);
  p->req.path = put(&at, in->path, in->path_len);
  p->req.query = put(&at, in->query ? in->query : "", in->query_len);
  const char *auth = put(&at, in->authorization ? in->authorization : "",
                         in->authorization_len);
  p->req.authorization = in->authorization ? auth : NULL;
  const char *type = put(&at, in->content_type ? in->content_type : "",
                         in->content_type_len);
  p->req.content_type = in->content_type ? type : NULL;
  p->req.body = put(&at, in->body ? in->body : "", in->body_len);
  p->req.body_len = in->body_len;
  p->id = r->next_id++;
  p->rt = rt;
  p->done = done;
  p->done_arg = arg;
  p->next = r->pending;
  r->pending = p;
  rt->in_flight++;
  int64_t id = p->id;
  /* p may be answered and freed inside the handler. */
  rt->fn(rt->arg, id, &p->req);
  return id;
}

int routes_reply(ph_routes *r, ph_ctx *ctx, int64_t id, int status,
                 const char *type, const char *body, size_t body_len) {
  pending *p = NULL;
  for (p = r ? r->pending : NULL; p; p = p->next)
    if (p->id == id)
      break;
  if (!p || p->rt->ctx != ctx)
    return PH_ENOENT;
  if (status < 200 || status > 599 || (!body && body_len > 0) ||
      (type && strpbrk(type, "\r\n")))
    return PH_EINVAL;
  take(r, id);
  p->done(p->done_arg, status, type, body ? body : "", body_len);
  pending_free(p);
  return PH_OK;
}
