/* SPDX-License-Identifier: BSD-2-Clause */
/* auth_local's "access" service (see access_local.h).
 *
 * A check is decided when it starts (a lookup in memory) and waits in a
 * FIFO queue for the loop's next turn (api->defer_post, no clock tick),
 * so the callback never runs inside check_open. Posting while the call is
 * pending changes nothing, so a steady stream of checks pushes no answer
 * back. The call takes the whole queue as one batch, so a check started
 * from inside a callback is answered on a later turn, not in the same
 * loop over the batch. */
#include "access_local.h"

#include <stdlib.h>
#include <string.h>

#include "lib/host_norm.h" /* the normal form of TM-P1-4, shared */

#define NAME_MAX_LEN 255 /* host, principal and agent, as in RFC 1929 */

typedef struct pending pending;
struct pending {
  int64_t id;
  ph_access_cb cb;
  void *arg;
  ph_access_result res;
  int slot; /* holds one of max_pending (not an over-the-bound answer) */
  pending *next;
};

struct auth_local_access {
  ph_ctx *ctx;
  const ph_api *api;
  auth_local_known_fn known;
  const void *owner;
  uint64_t revision;
  uint32_t ttl_ms;
  int64_t max_pending, slots; /* slots: checks holding one now */
  int64_t next_id;
  pending *queue, **tail; /* waiting for the next turn, oldest first */
  pending *batch;         /* being delivered now */
  ph_defer *turn;         /* delivers queue on the next loop turn */
  ph_series *m_checks[3]; /* by verdict - 1 */
};

static const char *const verdict_names[] = {"allow", "deny", "unavailable",
                                            NULL};

/* 1..NAME_MAX_LEN bytes; NULL is allowed when may_be_null. */
static int name_ok(const char *s, int may_be_null) {
  if (!s)
    return may_be_null;
  size_t n = strnlen(s, NAME_MAX_LEN + 1);
  return n >= 1 && n <= NAME_MAX_LEN;
}

/* Copies what the caller's size covers into r (the rest stays zero: an
 * older caller's defaults) and validates it. Never reads beyond size:
 * what a newer caller added is ignored, and so are the reserved fields. */
static int read_request(const ph_access_request *req, ph_access_request *r) {
  memset(r, 0, sizeof(*r));
  if (req->size < PH_ACCESS_REQUEST_MIN_SIZE)
    return PH_EINVAL;
  memcpy(r, req, PH_ACCESS_REQUEST_MIN_SIZE);
  if (PH_ACCESS_HAS(ph_access_request, req->size, agent))
    r->agent = req->agent;
  if (r->protocol != PH_PROTO_TCP || r->port == 0 || !host_norm_ok(r->host) ||
      !name_ok(r->principal, 1) || !name_ok(r->agent, 1))
    return PH_EINVAL;
  return PH_OK;
}

/* The policy: a known principal may open anything, through any agent
 * (auth_local has none of its own); the connector's policy comes after. */
static void decide(const auth_local_access *s, const ph_access_request *r,
                   ph_access_result *res) {
  int known = r->principal && s->known(s->owner, r->principal);
  res->verdict = known ? PH_ACCESS_ALLOW : PH_ACCESS_DENY;
  res->code = known ? PH_OPEN_OK : PH_OPEN_FORBIDDEN;
  res->ttl_ms = s->ttl_ms;
  res->revision = s->revision;
}

/* Beyond max_pending: fail closed, never cached, retry at once. */
static void over_bound(ph_access_result *res) {
  res->verdict = PH_ACCESS_UNAVAILABLE;
  res->code = PH_OPEN_QUEUE_FULL;
}

static void release(auth_local_access *s, pending *p) {
  if (p->slot)
    s->slots--;
}

static void deliver(ph_defer *t, void *arg) {
  (void)t;
  auth_local_access *s = arg;
  s->batch = s->queue;
  s->queue = NULL;
  s->tail = &s->queue;
  while (s->batch) {
    pending *p = s->batch;
    s->batch = p->next; /* before the callback: it may cancel others */
    release(s, p);
    s->api->inc(s->m_checks[p->res.verdict - 1], 1);
    p->cb(p->arg, &p->res);
    free(p);
  }
}

static void enqueue(auth_local_access *s, pending *p) {
  *s->tail = p;
  s->tail = &p->next;
  s->api->defer_post(s->turn); /* nothing when already pending */
}

static int64_t check_open(void *self, const ph_access_request *req,
                          ph_access_cb cb, void *arg) {
  auth_local_access *s = self;
  ph_access_request r;
  if (!req || !cb || read_request(req, &r) != PH_OK)
    return PH_EINVAL;
  pending *p = calloc(1, sizeof(*p));
  if (!p)
    return PH_ENOMEM;
  p->id = ++s->next_id;
  p->cb = cb;
  p->arg = arg;
  p->res.size = sizeof(p->res);
  if (s->slots >= s->max_pending) {
    over_bound(&p->res);
  } else {
    decide(s, &r, &p->res);
    p->slot = 1;
    s->slots++;
  }
  enqueue(s, p);
  return p->id;
}

/* Takes the check with that id out of list; fixes *tail when given and the
 * last one went. Lists are short: a loop iteration's worth of checks. */
static pending *take(pending **list, pending ***tail, int64_t id) {
  for (pending **pp = list; *pp; pp = &(*pp)->next)
    if ((*pp)->id == id) {
      pending *p = *pp;
      *pp = p->next;
      if (tail && !*pp)
        *tail = pp;
      return p;
    }
  return NULL;
}

static int cancel(void *self, int64_t id) {
  auth_local_access *s = self;
  pending *p = take(&s->batch, NULL, id);
  if (!p)
    p = take(&s->queue, &s->tail, id);
  if (!p)
    return PH_ENOENT;
  release(s, p);
  free(p);
  return PH_OK;
}

/* In memory and always current: never PH_ESTATE. */
static int revision(void *self, uint64_t *rev) {
  const auth_local_access *s = self;
  if (!rev)
    return PH_EINVAL;
  *rev = s->revision;
  return PH_OK;
}

const ph_access_v1 auth_local_access_vt = {check_open, cancel, revision};

static int declare_metric(auth_local_access *s) {
  static const ph_label_def labels[] = {{"result", verdict_names}};
  ph_metric_def d = {"proxyhost_auth_local_access_checks_total",
                     "Access checks (may this principal open this target) "
                     "by result",
                     PH_METRIC_COUNTER, labels, 1, NULL, 0};
  ph_metric *m = s->api->metric(s->ctx, &d);
  if (!m)
    return PH_EINVAL;
  for (int v = 0; v < 3; v++) {
    const char *lv[] = {verdict_names[v]};
    s->m_checks[v] = s->api->series(m, lv);
  }
  return PH_OK;
}

auth_local_access *auth_local_access_new(ph_ctx *ctx, const ph_api *api,
                                         auth_local_known_fn known,
                                         const void *owner) {
  auth_local_access *s = calloc(1, sizeof(*s));
  if (!s)
    return NULL;
  s->ctx = ctx;
  s->api = api;
  s->known = known;
  s->owner = owner;
  s->revision = 1; /* 0 would say "no revision" */
  s->max_pending = 1;
  s->tail = &s->queue;
  s->turn = api->defer_new(ctx, deliver, s);
  if (!s->turn || declare_metric(s) != PH_OK) {
    auth_local_access_free(s);
    return NULL;
  }
  return s;
}

void auth_local_access_free(auth_local_access *s) {
  if (!s)
    return;
  while (s->queue) {
    pending *p = s->queue;
    s->queue = p->next;
    free(p);
  }
  s->api->defer_free(s->turn);
  free(s);
}

void auth_local_access_configure(auth_local_access *s, int64_t max_pending,
                                 uint32_t ttl_ms) {
  s->max_pending = max_pending;
  s->ttl_ms = ttl_ms;
}

void auth_local_access_bump(auth_local_access *s) { s->revision++; }

uint64_t auth_local_access_revision(const auth_local_access *s) {
  return s->revision;
}
