/* SPDX-License-Identifier: BSD-2-Clause */
/* fakestore: a fault-injecting "access" provider (fakestore.h), for
 * t/unit/auth/test_auth_cache.c. */
#include <stdlib.h>
#include <string.h>

#include <proxyhost/access.h>
#include <proxyhost/module.h>

#include "fakestore.h"

typedef struct held held;
struct held {
  int64_t id;
  ph_access_cb cb;
  void *arg;
  ph_access_result res;
  held *next;
};

typedef struct fstore {
  ph_ctx *ctx;
  int mode;
  int verdict, code;
  uint32_t ttl_ms;
  uint64_t rev;
  int rev_rc;
  int fail_status;
  int64_t next_id, n_calls, n_cancels, n_held;
  held *head, **tail; /* oldest first */
  ph_timer *timer;
  int armed;
  ph_access_request last;
  char last_host[256], last_principal[256], last_agent[256];
} fstore;

static const ph_api *api;

static const ph_conf_key keys[] = {
    PH_CONF_KEY("revision", PH_CONF_INT, "1", 0, 0, 0, NULL,
                "the revision at start", NULL),
    PH_CONF_KEY("start_estate", PH_CONF_BOOL, "false", 0, 0, 0, NULL,
                "revision() answers PH_ESTATE from the start", NULL),
    PH_CONF_END};

static void answer_all(fstore *f) {
  held *list = f->head;
  f->head = NULL;
  f->tail = &f->head;
  while (list) {
    held *h = list;
    list = h->next;
    f->n_held--;
    h->cb(h->arg, &h->res);
    free(h);
  }
}

static void on_timer(ph_timer *t, void *arg) {
  (void)t;
  fstore *f = arg;
  f->armed = 0;
  answer_all(f);
}

static void copy_name(char *dst, const char *src) {
  if (src) {
    strncpy(dst, src, 255);
    dst[255] = '\0';
  }
}

static int64_t check_open(void *self, const ph_access_request *req,
                          ph_access_cb cb, void *arg) {
  fstore *f = self;
  if (!req || !cb || req->size < PH_ACCESS_REQUEST_MIN_SIZE)
    return PH_EINVAL;
  if (f->fail_status < 0) {
    int st = f->fail_status;
    f->fail_status = 0;
    return st;
  }
  f->n_calls++;
  memset(&f->last, 0, sizeof(f->last));
  f->last.size = req->size;
  f->last.protocol = req->protocol;
  f->last.port = req->port;
  copy_name(f->last_host, req->host);
  f->last.host = f->last_host;
  copy_name(f->last_principal, req->principal);
  f->last.principal = req->principal ? f->last_principal : NULL;
  if (PH_ACCESS_HAS(ph_access_request, req->size, agent)) {
    copy_name(f->last_agent, req->agent);
    f->last.agent = req->agent ? f->last_agent : NULL;
  }
  held *h = calloc(1, sizeof(*h));
  if (!h)
    return PH_ENOMEM;
  h->id = ++f->next_id;
  h->cb = cb;
  h->arg = arg;
  h->res.size = sizeof(h->res);
  if (f->n_held >= FAKESTORE_MAX_HELD) {
    h->res.verdict = PH_ACCESS_UNAVAILABLE;
    h->res.code = PH_OPEN_QUEUE_FULL;
  } else {
    h->res.verdict = f->verdict;
    h->res.code = f->code;
    h->res.ttl_ms = f->verdict == PH_ACCESS_UNAVAILABLE ? 0 : f->ttl_ms;
    h->res.revision = f->verdict == PH_ACCESS_UNAVAILABLE ? 0 : f->rev;
  }
  int64_t id = h->id;
  if (f->mode == FS_INSIDE) {
    h->cb(h->arg, &h->res); /* the breach the cache must absorb */
    free(h);
    return id;
  }
  *f->tail = h;
  f->tail = &h->next;
  f->n_held++;
  if (f->mode == FS_NEXT_TURN && !f->armed) {
    f->armed = 1;
    api->timer_set(f->timer, 1, 0);
  }
  return id;
}

static int cancel(void *self, int64_t id) {
  fstore *f = self;
  for (held **pp = &f->head; *pp; pp = &(*pp)->next)
    if ((*pp)->id == id) {
      held *h = *pp;
      *pp = h->next;
      if (!*pp)
        f->tail = pp;
      free(h);
      f->n_held--;
      f->n_cancels++;
      return PH_OK;
    }
  return PH_ENOENT;
}

static int revision(void *self, uint64_t *rev) {
  fstore *f = self;
  if (!rev)
    return PH_EINVAL;
  if (f->rev_rc != PH_OK)
    return f->rev_rc;
  *rev = f->rev;
  return PH_OK;
}

static const ph_access_v1 access_vt = {check_open, cancel, revision};

static void c_set_mode(void *self, int mode) { ((fstore *)self)->mode = mode; }
static void c_set_answer(void *self, int verdict, int code, uint32_t ttl) {
  fstore *f = self;
  f->verdict = verdict;
  f->code = code;
  f->ttl_ms = ttl;
}
static void c_set_revision(void *self, uint64_t rev, int rc) {
  fstore *f = self;
  f->rev = rev;
  f->rev_rc = rc;
}
static int c_release(void *self) {
  fstore *f = self;
  int n = (int)f->n_held;
  answer_all(f);
  return n;
}
static void c_fail_next(void *self, int st) {
  ((fstore *)self)->fail_status = st;
}
static int64_t c_calls(void *self) { return ((fstore *)self)->n_calls; }
static int64_t c_cancels(void *self) { return ((fstore *)self)->n_cancels; }
static int64_t c_held(void *self) { return ((fstore *)self)->n_held; }
static const ph_access_request *c_last(void *self) {
  return &((fstore *)self)->last;
}

static const fakestore_control control_vt = {
    c_set_mode, c_set_answer, c_set_revision, c_release, c_fail_next,
    c_calls,    c_cancels,    c_held,         c_last};

static int fs_init(ph_ctx *ctx, const ph_api *a, void **state) {
  api = a;
  fstore *f = calloc(1, sizeof(*f));
  if (!f)
    return PH_ENOMEM;
  *state = f;
  f->ctx = ctx;
  f->verdict = PH_ACCESS_ALLOW;
  f->code = PH_OPEN_OK;
  f->ttl_ms = 5000;
  f->rev = (uint64_t)a->conf_int(ctx, "revision");
  f->rev_rc = a->conf_int(ctx, "start_estate") ? PH_ESTATE : PH_OK;
  f->tail = &f->head;
  f->timer = a->timer_new(ctx, on_timer, f);
  if (!f->timer)
    return PH_ENOMEM;
  int rc = a->service_register(ctx, PH_ACCESS_SERVICE, PH_ACCESS_MAJOR,
                               PH_ACCESS_MINOR, &access_vt, f);
  if (rc != PH_OK)
    return rc;
  return a->service_register(ctx, FAKESTORE_CONTROL, 1, 0, &control_vt, f);
}

/* Checks still held are dropped without a call (the contract). */
static void fs_destroy(void *state) {
  fstore *f = state;
  if (!f)
    return;
  while (f->head) {
    held *h = f->head;
    f->head = h->next;
    free(h);
  }
  if (f->timer)
    api->timer_free(f->timer);
  free(f);
}

static const char *const fs_provides[] = {PH_ACCESS_SERVICE, FAKESTORE_CONTROL,
                                          NULL};

PROXYHOST_MODULE = {
    PH_MODULE_HEADER("fakestore", "1.0"),
    .description = "test double of a store's \"access\" service",
    .provides = fs_provides,
    .config = keys,
    .init = fs_init,
    .destroy = fs_destroy,
};
