/* SPDX-License-Identifier: BSD-2-Clause */
/* The "access" service auth_cache provides (<proxyhost/access.h>): the
 * store's, with the cache in front (TM-P1-1).
 *
 *   cache off (enabled = false)   straight to the store, "bypass"
 *                                 (TM-UPG-11)
 *   entry found, usable           its verdict on a later loop turn, "hit"
 *   a flight for the key          joins it, "shared" (TM-P1-8)
 *   otherwise                     a store check, "miss"
 *
 * A found allow is usable only while the store vouches for its revision
 * (TM-SEC-4); a found deny always is, until its TTL (TM-P1-33). */
#include "auth_cache_int.h"

#include <string.h>

#include "lib/access_req.h"

void ac_unavailable(ph_access_result *res, int code) {
  memset(res, 0, sizeof(*res));
  res->size = sizeof(*res);
  res->verdict = PH_ACCESS_UNAVAILABLE;
  res->code = code;
}

static int64_t answer_hit(acache *s, const cache_verdict *v, int64_t now,
                          ph_access_cb cb, void *arg) {
  ph_access_result res;
  memset(&res, 0, sizeof(res));
  res.size = sizeof(res);
  res.verdict = v->verdict;
  res.code = v->code;
  /* What is left of it: a caller keeping it may not outlive the cache. */
  int64_t left = v->expires_ms - now;
  res.ttl_ms = left > UINT32_MAX ? UINT32_MAX : (uint32_t)left;
  res.revision = cache_gen_revision(s->cur);
  int64_t id = sc_answer_later(s, &res, 1, cb, arg);
  if (id == PH_EFULL) { /* max_waiters */
    ac_unavailable(&res, PH_OPEN_QUEUE_FULL);
    id = sc_answer_later(s, &res, 0, cb, arg);
  }
  return id;
}

static int64_t lookup_or_fetch(acache *s, const ph_access_request *r,
                               ph_access_cb cb, void *arg) {
  unsigned char key[CACHE_KEY_MAX];
  size_t len = cache_key_encode(r, key);
  uint64_t hash = cache_key_hash(key, len);
  if (!s->enabled)
    return sc_check(s, r, key, len, hash, 1, cb, arg);
  rw_refresh(s); /* a rise switches generations before the lookup */
  if (s->cur) {
    int64_t now = s->api->now_ms(s->ctx);
    cache_verdict v;
    int found = cache_gen_get(s->cur, key, len, hash, now, &v);
    s->api->gauge_set(s->m_entries, (double)cache_gen_count(s->cur));
    if (found && (v.verdict == PH_ACCESS_DENY || rw_allows_ok(s))) {
      s->api->inc(s->m_req[AC_HIT], 1);
      return answer_hit(s, &v, now, cb, arg);
    }
  }
  return sc_check(s, r, key, len, hash, 0, cb, arg);
}

static int64_t check_open(void *self, const ph_access_request *req,
                          ph_access_cb cb, void *arg) {
  acache *s = self;
  ph_access_request r;
  if (!req || !cb || access_req_read(req, &r) != PH_OK)
    return PH_EINVAL;
  sf_hold(s->sf); /* answers wait for the next turn */
  int64_t id = lookup_or_fetch(s, &r, cb, arg);
  sf_unhold(s->sf);
  return id;
}

static int cancel(void *self, int64_t id) { return sc_cancel(self, id); }

/* The store's: the verdicts carry its revisions. */
static int revision(void *self, uint64_t *rev) {
  acache *s = self;
  if (!rev)
    return PH_EINVAL;
  return s->store->revision(s->store_self, rev);
}

const ph_access_v1 access_cache_vt = {check_open, cancel, revision};
