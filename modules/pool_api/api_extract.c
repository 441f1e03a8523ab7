/* SPDX-License-Identifier: BSD-2-Clause */
/* See api_extract.h. */
#include "api_extract.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <proxyhost/abi.h>

#include "admin_kit/admin_http.h"
#include "lib/json.h"

static void reply_error(api_extract_call *c, int http, const char *code,
                        const char *message) {
  char buf[512];
  size_t n = api_write_error(buf, sizeof(buf), code, message);
  c->reply(c->arg, http, buf, n);
}

int api_extract_op(api_op op) {
  switch (op) {
  case OP_EXTRACTION:
    return CP_EXTRACT_GET;
  case OP_EXTRACT:
    return CP_EXTRACT_REQUEST;
  case OP_RETURN:
    return CP_EXTRACT_RELEASE;
  default:
    return 0;
  }
}

int api_extract_time(int64_t ms, char *out, size_t cap) {
  /* Up to year 9999: the format's four digits. */
  if (ms < 0 || ms > 253402300799999LL || cap < 25)
    return -1;
  time_t s = (time_t)(ms / 1000);
  struct tm tm;
  if (!gmtime_r(&s, &tm))
    return -1;
  char base[24];
  if (strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
    return -1;
  snprintf(out, cap, "%s.%03dZ", base, (int)(ms % 1000));
  return 0;
}

/* ---- the authority's answer ---------------------------------------------- */

static void reply_state(api_extract_call *c, const cp_auth_reply *rep) {
  const char *state;
  switch (rep->extract_state) {
  case CP_EXTRACT_AVAILABLE:
    state = "available";
    break;
  case CP_EXTRACT_RECLAIMING:
    state = "reclaiming";
    break;
  case CP_EXTRACT_EXTRACTED:
    state = "extracted";
    break;
  default:
    reply_error(c, 503, "unavailable",
                "the authority answered an unknown extraction state");
    return;
  }
  char when[32] = "";
  if (rep->extract_state == CP_EXTRACT_EXTRACTED &&
      api_extract_time(rep->extracted_ms, when, sizeof(when)) < 0) {
    reply_error(c, 503, "unavailable",
                "the authority answered an extraction time out of range");
    return;
  }
  char buf[512];
  json_w w;
  json_w_init(&w, buf, sizeof(buf));
  json_w_obj(&w);
  json_w_key(&w, "proxy_id");
  json_w_str(&w, c->key);
  json_w_key(&w, "state");
  json_w_str(&w, state);
  if (rep->extract_state == CP_EXTRACT_RECLAIMING) {
    json_w_key(&w, "owner");
    json_w_str(&w, rep->extract_owner ? rep->extract_owner : "");
  } else if (rep->extract_state == CP_EXTRACT_EXTRACTED) {
    json_w_key(&w, "extracted_at");
    json_w_str(&w, when);
  }
  json_w_obj_end(&w);
  long n = json_w_finish(&w);
  if (n < 0) {
    reply_error(c, 500, "internal", "the answer could not be written");
    return;
  }
  /* 202: asked for, not done yet; the owner drains it first. */
  int http = c->op == OP_EXTRACT &&
                     rep->extract_state == CP_EXTRACT_RECLAIMING
                 ? 202
                 : 200;
  c->reply(c->arg, http, buf, (size_t)n);
}

static void on_extract(void *arg, const cp_auth_reply *rep) {
  api_extract_call *c = arg;
  c->auth_call = 0;
  switch (rep->result) {
  case CP_AUTH_OK:
    /* minor 5: only an AVAILABLE proxy (or one without a verdict) is
     * extracted (CP-6-7, the seed's AVAILABLE -> EXTRACTED). */
    if (rep->size >= offsetof(cp_auth_reply, extract_refused) + sizeof(int) &&
        rep->extract_refused) {
      reply_error(c, 409, rep->extract_refused == 3 ? "unhealthy" : "suspect",
                  rep->extract_refused == 3
                      ? "the proxy is UNHEALTHY: only an AVAILABLE proxy "
                        "is extracted"
                      : "the proxy is SUSPECT: only an AVAILABLE proxy is "
                        "extracted");
      return;
    }
    reply_state(c, rep);
    return;
  case CP_AUTH_LIMIT:
    reply_error(c, 409, "limit",
                "as many proxies as the pool may hold are already extracted "
                "or reclaiming: return some first");
    return;
  case CP_AUTH_UNAVAILABLE:
    reply_error(c, 503, "unavailable",
                "Redis is unavailable or did not answer in time; the "
                "extraction state is unknown: try again");
    return;
  default:
    /* Nothing else is an answer of extract: fail closed. */
    reply_error(c, 503, "unavailable",
                "the authority answered unexpectedly; try again");
  }
}

static void ask_authority(api_extract_call *c) {
  if (!c->auth->extract) {
    /* A provider of cp.authority minor 2 that has no extract yet. */
    reply_error(c, 501, "not_implemented",
                "the [pool_api] authority does not implement exclusive "
                "extraction yet");
    return;
  }
  int64_t id = c->auth->extract(c->auth_self, c->key,
                                (cp_extract_op)api_extract_op(c->op),
                                on_extract, c);
  if (id > 0) {
    c->auth_call = id;
    return;
  }
  switch ((int)id) {
  case PH_EINVAL:
    reply_error(c, 400, "invalid", "the authority refused the proxy id");
    return;
  case PH_EFULL:
    reply_error(c, 503, "busy",
                "the authority has too many calls in flight; try again");
    return;
  default: /* PH_ENOMEM, PH_ESTATE (stopping) */
    reply_error(c, 503, "unavailable", "the authority is not available");
  }
}

/* ---- the store's answer -------------------------------------------------- */

static void on_list(void *arg, const ph_pool_list_result *res) {
  api_extract_call *c = arg;
  c->store_call = 0;
  if (res->status != PH_OK) {
    if (res->status == PH_EFULL)
      reply_error(c, 503, "busy",
                  "the store has too many calls in flight; try again");
    else
      reply_error(c, 503, "unavailable",
                  "the store is unavailable; Redis was not asked");
    return;
  }
  if (res->n != 1 || !res->proxies ||
      strcmp(res->proxies[0].proxy_id, c->key) != 0) {
    reply_error(c, 404, "not_found", "no such proxy");
    return;
  }
  ask_authority(c);
}

void api_extract_start(api_extract_call *c, size_t body_len) {
  c->store_call = c->auth_call = 0;
  if (body_len > 0) {
    reply_error(c, 400, "invalid", "this call takes no body");
    return;
  }
  if (!api_extract_op(c->op)) {
    reply_error(c, 500, "internal", "not an extraction route");
    return;
  }
  /* A return needs no store: it also clears what a proxy deleted from
   * the store while extracted left in Redis (or its id, created again,
   * would start out extracted). */
  if (api_extract_op(c->op) == CP_EXTRACT_RELEASE) {
    ask_authority(c);
    return;
  }
  /* The proxy must exist in the store before Redis is asked (CP-4-5:
   * only a proxy of the pool is extracted). */
  ph_pool_list l;
  memset(&l, 0, sizeof(l));
  l.size = sizeof(l);
  l.kind = PH_POOL_KIND_PROXY;
  l.key = c->key;
  l.limit = 1;
  int64_t id = c->st->list(c->st_self, &l, on_list, c);
  if (id > 0) {
    c->store_call = id;
    return;
  }
  if (id == PH_EFULL)
    reply_error(c, 503, "busy",
                "the store has too many calls in flight; try again");
  else if (id == PH_EINVAL)
    reply_error(c, 404, "not_found", "no such proxy");
  else
    reply_error(c, 503, "unavailable", "the store is unavailable");
}

void api_extract_cancel(api_extract_call *c) {
  if (c->store_call > 0)
    c->st->cancel(c->st_self, c->store_call);
  if (c->auth_call > 0 && c->auth)
    c->auth->cancel(c->auth_self, c->auth_call);
  c->store_call = c->auth_call = 0;
}
