/* SPDX-License-Identifier: BSD-2-Clause */
/* ro_reply: see ro_reply.h. */
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "ro_reply.h"

const char *const ro_result_names[CP_AUTH_RESULT_COUNT + 1] = {
    "ok",          "replay",       "stale_session", "fence_closed",
    "baseline_mismatch", "stale_epoch", "not_issued", "seq_smaller",
    "seq_conflict", "limit",       "unavailable",   NULL};

/* The scripts' result words, in cp_auth_result order. */
static const char *const words[CP_AUTH_RESULT_COUNT] = {
    "ok",          "replay",      "stale",       "fence_closed",
    "baseline_mismatch", "stale_epoch", "not_issued", "seq_smaller",
    "seq_conflict", "limit",      NULL};

static int word_of(const redisReply *e) {
  if (!e || (e->type != REDIS_REPLY_STRING && e->type != REDIS_REPLY_STATUS))
    return -1;
  for (int i = 0; i < CP_AUTH_UNAVAILABLE; i++)
    if (e->len == strlen(words[i]) && memcmp(e->str, words[i], e->len) == 0)
      return i;
  return -1;
}

/* Element i as a non-negative integer, or -1. */
static int64_t int_at(const redisReply *r, size_t i) {
  if (i >= r->elements || !r->element[i] ||
      r->element[i]->type != REDIS_REPLY_INTEGER || r->element[i]->integer < 0)
    return -1;
  return r->element[i]->integer;
}

/* Element i as a string of at most PH_POOL_ID_MAX bytes without NUL. */
static const char *id_at(const redisReply *r, size_t i) {
  if (i >= r->elements || !r->element[i] ||
      r->element[i]->type != REDIS_REPLY_STRING ||
      r->element[i]->len > PH_POOL_ID_MAX ||
      memchr(r->element[i]->str, 0, r->element[i]->len))
    return NULL;
  return r->element[i]->str;
}

static cp_auth_result fail(cp_auth_reply *out, ro_reply_mem *mem) {
  ro_reply_mem_free(mem);
  memset(out, 0, sizeof(*out));
  out->size = sizeof(*out);
  out->result = CP_AUTH_UNAVAILABLE;
  return out->result;
}

static int counts_ok(const redisReply *r, size_t from, size_t per) {
  return r->elements >= from && (r->elements - from) % per == 0 &&
         (r->elements - from) / per <= PH_POOL_PROXIES_MAX;
}

cp_auth_result ro_reply_parse(ro_script s, const redisReply *r,
                              cp_auth_reply *out, ro_reply_mem *mem) {
  memset(mem, 0, sizeof(*mem));
  memset(out, 0, sizeof(*out));
  out->size = sizeof(*out);
  if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 1)
    return fail(out, mem);
  int w = word_of(r->element[0]);
  if (w < 0)
    return fail(out, mem);
  out->result = (cp_auth_result)w;
  int ok = w == CP_AUTH_OK;
  int64_t a, b, c;
  switch (s) {
  case RO_S_REGISTER:
  case RO_S_CHECKER_REGISTER:
    if (!ok)
      return w == CP_AUTH_LIMIT ? out->result : fail(out, mem);
    if ((a = int_at(r, 1)) < 1 || (b = int_at(r, 2)) < 0 ||
        (c = int_at(r, 3)) < 0)
      return fail(out, mem);
    out->epoch = (uint64_t)a;
    out->replaced = b != 0;
    out->session_expires_ms = c;
    break;
  case RO_S_NEXT_VERSION:
    if (!ok || (a = int_at(r, 1)) < 1)
      return fail(out, mem);
    out->version = (uint64_t)a;
    break;
  case RO_S_ISSUE:
    if (!ok && w != CP_AUTH_STALE_SESSION)
      return fail(out, mem);
    break;
  case RO_S_ACK:
    if ((a = int_at(r, 1)) < 1)
      return fail(out, mem);
    out->epoch = (uint64_t)a;
    break;
  case RO_S_RUNTIME:
    if (ok || w == CP_AUTH_REPLAY) {
      if ((a = int_at(r, 1)) < 0 || !counts_ok(r, 2, 1))
        return fail(out, mem);
      out->session_expires_ms = a;
      size_t n = r->elements - 2;
      if (n) {
        mem->revoke = calloc(n, sizeof(*mem->revoke));
        if (!mem->revoke)
          return fail(out, mem);
        for (size_t i = 0; i < n; i++)
          if (!(mem->revoke[i] = id_at(r, 2 + i)))
            return fail(out, mem);
      }
      out->revoke = mem->revoke;
      out->n_revoke = n;
    }
    break;
  case RO_S_CHECKER_ALIVE:
    if (w == CP_AUTH_STALE_SESSION && r->elements == 1)
      break;
    if (!ok || r->elements != 5 || (a = int_at(r, 1)) < 0 ||
        (b = int_at(r, 2)) < 0 || b > UINT32_MAX || (c = int_at(r, 3)) < 0 ||
        c > UINT32_MAX || !(out->zone = id_at(r, 4)))
      return fail(out, mem);
    out->session_expires_ms = a;
    out->max_concurrency = (uint32_t)b;
    out->tiers = (uint32_t)c;
    break;
  case RO_S_OUTCOMES:
  case RO_S_OBSERVATIONS:
    if (w != CP_AUTH_STALE_SESSION) {
      if ((a = int_at(r, 1)) < 0)
        return fail(out, mem);
      out->sequence = (uint64_t)a;
    }
    break;
  case RO_S_ASSIGN:
    if (!ok || (a = int_at(r, 1)) < 1 || (b = int_at(r, 2)) < 0 ||
        (c = int_at(r, 3)) < 0 || int_at(r, 4) < 0 || int_at(r, 5) < 0 ||
        int_at(r, 6) < 0 || int_at(r, 7) < 0 ||
        int_at(r, 7) > PH_POOL_PROXIES_MAX || int_at(r, 8) < 0 ||
        int_at(r, 8) > PH_POOL_PROXIES_MAX || r->elements != 9)
      return fail(out, mem);
    out->epoch = (uint64_t)a;
    out->assigned = (uint32_t)b;
    out->released = (uint32_t)c;
    out->extracted = (uint32_t)int_at(r, 4);
    out->moving = (uint32_t)int_at(r, 5);
    out->rebalance_limited = (int)int_at(r, 6);
    out->n_reclaiming = (uint32_t)int_at(r, 7);
    out->n_extracted = (uint32_t)int_at(r, 8);
    break;
  case RO_S_OWNED:
    if (ok) {
      if ((a = int_at(r, 1)) < 1 || !(out->zone = id_at(r, 2)) ||
          !counts_ok(r, 3, 3))
        return fail(out, mem);
      out->epoch = (uint64_t)a;
      size_t n = (r->elements - 3) / 3;
      if (n) {
        mem->owned = calloc(n, sizeof(*mem->owned));
        if (!mem->owned)
          return fail(out, mem);
        for (size_t i = 0; i < n; i++) {
          int64_t reclaim = int_at(r, 5 + 3 * i);
          mem->owned[i].proxy_id = id_at(r, 3 + 3 * i);
          mem->owned[i].lease_until_ms = int_at(r, 4 + 3 * i);
          mem->owned[i].reclaim = reclaim == 1;
          if (!mem->owned[i].proxy_id || mem->owned[i].lease_until_ms < 0 ||
              reclaim < 0 || reclaim > 1)
            return fail(out, mem);
        }
      }
      out->owned = mem->owned;
      out->n_owned = n;
    } else if (w != CP_AUTH_STALE_SESSION) {
      return fail(out, mem);
    }
    break;
  case RO_S_USABLE:
    if (!ok || (a = int_at(r, 1)) < 1 || !counts_ok(r, 2, 4))
      return fail(out, mem);
    out->epoch = (uint64_t)a;
    {
      size_t n = (r->elements - 2) / 4;
      if (n) {
        mem->usable = calloc(n, sizeof(*mem->usable));
        if (!mem->usable)
          return fail(out, mem);
        for (size_t i = 0; i < n; i++) {
          cp_auth_usable *u = &mem->usable[i];
          size_t at = 2 + 4 * i;
          int64_t v = int_at(r, at + 1), ac = int_at(r, at + 2),
                  re = int_at(r, at + 3);
          u->owner = id_at(r, at);
          if (!u->owner || v < 0 || v > 1 || ac < 0 || ac > UINT32_MAX ||
              re < 0 || re > UINT32_MAX)
            return fail(out, mem);
          u->valid = (int)v;
          u->active = v ? (uint32_t)ac : 0;
          u->reserved = v ? (uint32_t)re : 0;
        }
      }
      out->usable = mem->usable;
      out->n_usable = n;
    }
    break;
  case RO_S_EXTRACT:
    if (w == CP_AUTH_LIMIT && r->elements == 1)
      break;
    if (!ok || r->elements != 5 || (a = int_at(r, 1)) < 0 ||
        a > CP_EXTRACT_EXTRACTED || (b = int_at(r, 2)) < 0 ||
        !(out->extract_owner = id_at(r, 3)) ||
        (a == CP_EXTRACT_EXTRACTED) != (b > 0) ||
        (a != CP_EXTRACT_RECLAIMING && out->extract_owner[0]) ||
        (c = int_at(r, 4)) < 0 || c > 3 || (c && a != CP_EXTRACT_AVAILABLE))
      return fail(out, mem);
    out->extract_state = (cp_extract_state)a;
    out->extracted_ms = b;
    out->extract_refused = (int)c;
    break;
  case RO_S_HEALTH:
    if (w == CP_AUTH_LIMIT && r->elements == 1)
      break;
    if (!ok || !counts_ok(r, 1, 2))
      return fail(out, mem);
    {
      size_t n = (r->elements - 1) / 2;
      if (n && !(mem->health = calloc(n, sizeof(*mem->health))))
        return fail(out, mem);
      for (size_t i = 0; i < n; i++) {
        cp_auth_health *h = &mem->health[i];
        h->proxy_id = id_at(r, 1 + 2 * i);
        a = int_at(r, 2 + 2 * i);
        if (!h->proxy_id || a < 1 || a > 3)
          return fail(out, mem);
        h->health = (int)a;
      }
      out->health = mem->health;
      out->n_health = n;
    }
    break;
  case RO_S_MEMBERS:
    if (w == CP_AUTH_LIMIT && r->elements == 1)
      break;
    if (!ok || r->elements < 2 || (a = int_at(r, 1)) < 0 ||
        r->elements - 2 > CP_AUTH_MEMBERS_MAX)
      return fail(out, mem);
    {
      size_t n = r->elements - 2;
      if (n && !(mem->members = calloc(n, sizeof(*mem->members))))
        return fail(out, mem);
      for (size_t i = 0; i < n; i++)
        if (!(mem->members[i] = id_at(r, 2 + i)) || !mem->members[i][0])
          return fail(out, mem);
      out->lease_end_ms = a;
      out->members = mem->members;
      out->n_members = n;
    }
    break;
  case RO_S_PASSIVE:
    if (ok && r->elements == 2 && (a = int_at(r, 1)) >= 0) {
      out->passive_dropped = a > UINT32_MAX ? UINT32_MAX : (uint32_t)a;
      break;
    }
    if (!ok || !counts_ok(r, 1, 3))
      return fail(out, mem);
    {
      size_t n = (r->elements - 1) / 3;
      if (n && !(mem->passive = calloc(n, sizeof(*mem->passive))))
        return fail(out, mem);
      for (size_t i = 0; i < n; i++) {
        cp_auth_passive *q = &mem->passive[i];
        q->proxy_id = id_at(r, 1 + 3 * i);
        a = int_at(r, 2 + 3 * i);
        b = int_at(r, 3 + 3 * i);
        if (!q->proxy_id || !q->proxy_id[0] || a < 0 || b < 0)
          return fail(out, mem);
        q->fail_units = a > UINT32_MAX ? UINT32_MAX : (uint32_t)a;
        q->ok_units = b > UINT32_MAX ? UINT32_MAX : (uint32_t)b;
      }
      out->passive = mem->passive;
      out->n_passive = n;
    }
    break;
  default:
    return fail(out, mem);
  }
  return out->result;
}

void ro_reply_mem_free(ro_reply_mem *mem) {
  free(mem->revoke);
  free(mem->owned);
  free(mem->usable);
  free(mem->health);
  free(mem->members);
  free(mem->passive);
  memset(mem, 0, sizeof(*mem));
}
