/* SPDX-License-Identifier: BSD-2-Clause */
/* The scriptable fake authorizer of the unit tests (fake_authorizer.h). */
#include "fake_authorizer.h"

#include <stdio.h>
#include <string.h>

static int same(const char *want, const char *got, size_t len) {
  return strlen(want) == len && memcmp(want, got, len) == 0;
}

static const fa_row *match(const fake_authorizer *fa, const char *user,
                           size_t ulen, const char *pass, size_t plen) {
  static const fa_row deny = {.verdict = PH_AUTH_DENY};
  for (const fa_row *r = fa->rows; r && r->user; r++)
    if ((strcmp(r->user, "*") == 0 || same(r->user, user, ulen)) &&
        (!r->pass || same(r->pass, pass, plen)))
      return r;
  return &deny;
}

static void answer(fa_pending *q) {
  q->id = 0;
  q->fa->answered++;
  q->cb(q->arg, q->verdict);
}

static void answer_cb(ph_timer *t, void *arg) {
  fa_pending *q = arg;
  q->fa->api->timer_free(t);
  q->t = NULL;
  answer(q);
}

static int64_t fa_check(void *self, const char *user, size_t ulen,
                        const char *pass, size_t plen, ph_auth_cb cb,
                        void *arg) {
  fake_authorizer *fa = self;
  int max = fa->max_pending > 0 && fa->max_pending < FA_MAX_PENDING
                ? fa->max_pending
                : FA_MAX_PENDING;
  fa_pending *q = NULL;
  int live = 0;
  for (int i = 0; i < FA_MAX_PENDING; i++) {
    live += fa->p[i].id != 0;
    if (!q && fa->p[i].id == 0)
      q = &fa->p[i];
  }
  if (!q || live >= max)
    return PH_EINVAL;
  fa->checks++;
  snprintf(fa->last_user, sizeof(fa->last_user), "%.*s", (int)ulen, user);
  const fa_row *r = match(fa, user, ulen, pass, plen);
  int64_t id = ++fa->next_id;
  if (r->when == FA_INSIDE) {
    fa->answered++;
    cb(arg, r->verdict);
    return id;
  }
  memset(q, 0, sizeof(*q));
  q->fa = fa;
  q->id = id;
  q->verdict = r->verdict;
  q->cb = cb;
  q->arg = arg;
  if (r->when == FA_LATER) {
    q->t = fa->api->timer_new(fa->ctx, answer_cb, q);
    fa->api->timer_set(q->t, (uint64_t)(r->delay_ms > 0 ? r->delay_ms : 1), 0);
  }
  return id;
}

static int fa_cancel(void *self, int64_t id) {
  fake_authorizer *fa = self;
  for (int i = 0; i < FA_MAX_PENDING; i++)
    if (id > 0 && fa->p[i].id == id) {
      if (fa->p[i].t)
        fa->api->timer_free(fa->p[i].t);
      fa->p[i].t = NULL;
      fa->p[i].id = 0;
      fa->cancels++;
      return PH_OK;
    }
  return PH_ENOENT;
}

const ph_authorizer_v1 fake_authorizer_vt = {fa_check, fa_cancel};

void fake_authorizer_init(fake_authorizer *fa, const ph_api *api, ph_ctx *ctx,
                          const fa_row *rows) {
  memset(fa, 0, sizeof(*fa));
  fa->api = api;
  fa->ctx = ctx;
  fa->rows = rows;
}

int fake_authorizer_answer(fake_authorizer *fa, int64_t id, int verdict) {
  for (int i = 0; i < FA_MAX_PENDING; i++)
    if (id > 0 && fa->p[i].id == id) {
      if (fa->p[i].t)
        fa->api->timer_free(fa->p[i].t);
      fa->p[i].t = NULL;
      fa->p[i].verdict = verdict;
      answer(&fa->p[i]);
      return PH_OK;
    }
  return PH_ENOENT;
}

int fake_authorizer_serve(fake_authorizer *fa, const ph_api *api, ph_ctx *ctx,
                          const fa_row *rows) {
  fake_authorizer_init(fa, api, ctx, rows);
  return api->service_register(ctx, PH_AUTHORIZER_SERVICE, PH_AUTHORIZER_MAJOR,
                               PH_AUTHORIZER_MINOR, &fake_authorizer_vt, fa);
}

void fake_authorizer_clear(fake_authorizer *fa) {
  fake_authorizer keep = *fa;
  fake_authorizer_free(fa);
  fake_authorizer_init(fa, keep.api, keep.ctx, keep.rows);
  fa->next_id = keep.next_id;
  fa->max_pending = keep.max_pending;
}

int fake_authorizer_pending(const fake_authorizer *fa) {
  int n = 0;
  for (int i = 0; i < FA_MAX_PENDING; i++)
    n += fa->p[i].id != 0;
  return n;
}

void fake_authorizer_free(fake_authorizer *fa) {
  for (int i = 0; i < FA_MAX_PENDING; i++) {
    if (fa->p[i].id != 0 && fa->p[i].t)
      fa->api->timer_free(fa->p[i].t);
    fa->p[i].t = NULL;
    fa->p[i].id = 0;
  }
}
