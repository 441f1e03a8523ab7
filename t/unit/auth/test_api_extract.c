/* SPDX-License-Identifier: BSD-2-Clause */
/* pool_api's exclusive extraction (modules/pool_api/api_extract.c)
 * against a fake pool.store and a fake cp.authority (cp_authority.h,
 * minor 2): the store is asked before the authority (a missing proxy is
 * 404 and the authority never hears of it), each op reaches extract with
 * its cp_extract_op, every authority answer maps to its HTTP status and
 * body (200, 202 for a reclaiming POST, 409 limit, 503 unavailable, 501
 * without extract), refusals of the call itself (PH_EINVAL, PH_EFULL,
 * PH_ESTATE), exactly one reply per request, and a cancel that reaches
 * whichever call is outstanding. The real thing end to end:
 * t/integration/extraction.sh. */
#include <stdio.h>
#include <string.h>

#include <proxyhost/abi.h>

#include "pool_api/api_extract.h"
#include "tap.h"

/* ---- the fakes ----------------------------------------------------------- */

static int replies, last_http;
static char last_body[512];
static int store_lists, store_cancels, auth_calls, auth_cancels;
static int64_t auth_cancelled_id;
static ph_pool_list_cb list_cb;
static void *list_arg;
static char list_key[160];
static cp_auth_cb ext_cb;
static void *ext_arg;
static int ext_op;
static int64_t ext_ret = 7; /* what extract returns */

static void reply(void *arg, int http, const char *body, size_t len) {
  (void)arg;
  replies++;
  last_http = http;
  snprintf(last_body, sizeof(last_body), "%.*s", (int)len, body ? body : "");
}

static int64_t f_list(void *self, const ph_pool_list *l, ph_pool_list_cb cb,
                      void *arg) {
  (void)self;
  store_lists++;
  snprintf(list_key, sizeof(list_key), "%s", l->key ? l->key : "");
  list_cb = cb;
  list_arg = arg;
  return 3;
}
static int f_store_cancel(void *self, int64_t id) {
  (void)self, (void)id;
  store_cancels++;
  return PH_OK;
}
static const ph_pool_store_v1 store = {.list = f_list,
                                       .cancel = f_store_cancel};

static int64_t f_extract(void *self, const char *proxy_id, cp_extract_op op,
                         cp_auth_cb cb, void *arg) {
  (void)self, (void)proxy_id;
  auth_calls++;
  ext_op = (int)op;
  ext_cb = cb;
  ext_arg = arg;
  return ext_ret;
}
static int f_auth_cancel(void *self, int64_t id) {
  (void)self;
  auth_cancels++;
  auth_cancelled_id = id;
  return PH_OK;
}
static const cp_authority_v1 auth = {.cancel = f_auth_cancel,
                                     .extract = f_extract};
static const cp_authority_v1 auth_no_extract = {.cancel = f_auth_cancel};

/* ---- driving ------------------------------------------------------------- */

static void reset(api_extract_call *c, api_op op, const cp_authority_v1 *a) {
  memset(c, 0, sizeof(*c));
  c->st = &store;
  c->auth = a;
  c->op = op;
  snprintf(c->key, sizeof(c->key), "p1");
  c->reply = reply;
  replies = last_http = store_lists = store_cancels = auth_calls =
      auth_cancels = 0;
  last_body[0] = '\0';
  list_cb = NULL;
  ext_cb = NULL;
  ext_op = 0;
  ext_ret = 7;
}

/* The store answers with p1 (found) or nothing. */
static void store_answers(int found) {
  ph_pool_proxy_row px;
  memset(&px, 0, sizeof(px));
  snprintf(px.proxy_id, sizeof(px.proxy_id), "p1");
  ph_pool_list_result res = {.size = sizeof(res),
                             .status = PH_OK,
                             .kind = PH_POOL_KIND_PROXY,
                             .proxies = found ? &px : NULL,
                             .n = found ? 1 : 0};
  list_cb(list_arg, &res);
}

static void auth_answers(cp_auth_result r, cp_extract_state s, int64_t ms,
                         const char *owner) {
  cp_auth_reply rep;
  memset(&rep, 0, sizeof(rep));
  rep.size = sizeof(rep);
  rep.result = r;
  rep.extract_state = s;
  rep.extracted_ms = ms;
  rep.extract_owner = owner;
  ext_cb(ext_arg, &rep);
}

/* One full request: store finds p1, the authority answers. */
static void run(api_op op, cp_auth_result r, cp_extract_state s, int64_t ms,
                const char *owner) {
  api_extract_call c;
  reset(&c, op, &auth);
  api_extract_start(&c, 0);
  if (list_cb)
    store_answers(1);
  if (ext_cb)
    auth_answers(r, s, ms, owner);
}

int main(void) {
  plan_lazy();
  api_extract_call c;

  /* The store first: a missing proxy never reaches Redis (CP-4-5). */
  reset(&c, OP_EXTRACT, &auth);
  api_extract_start(&c, 0);
  is_int(store_lists, 1, "CP-4-5 the store is asked first");
  is_str(list_key, "p1", "... for the path's proxy id");
  is_int(replies + auth_calls, 0, "... and nothing else yet");
  store_answers(0);
  is_int(last_http, 404, "CP-4-5 a proxy the store does not have: 404");
  like(last_body, "\"not_found\"", "... not_found");
  is_int(auth_calls, 0, "... and the authority is never asked");
  is_int(replies, 1, "... one reply");

  /* Each op's cp_extract_op. */
  run(OP_EXTRACTION, CP_AUTH_OK, CP_EXTRACT_AVAILABLE, 0, "");
  is_int(ext_op, CP_EXTRACT_GET, "GET asks CP_EXTRACT_GET");
  is_int(last_http, 200, "... 200");
  is_str(last_body, "{\"proxy_id\":\"p1\",\"state\":\"available\"}",
         "... available: no owner, no extracted_at");
  run(OP_EXTRACT, CP_AUTH_OK, CP_EXTRACT_EXTRACTED, 1714564800123LL, "");
  is_int(ext_op, CP_EXTRACT_REQUEST, "CP-1-5 POST asks CP_EXTRACT_REQUEST");
  is_int(last_http, 200, "CP-1-5 CP-4-5 extracted at once: 200");
  is_str(last_body,
         "{\"proxy_id\":\"p1\",\"state\":\"extracted\","
         "\"extracted_at\":\"2024-05-01T12:00:00.123Z\"}",
         "... with extracted_at in RFC 3339, ms, UTC");
  run(OP_EXTRACT, CP_AUTH_OK, CP_EXTRACT_RECLAIMING, 0, "w1");
  is_int(last_http, 202, "CP-4-2 POST of an owned proxy: 202 (reclaiming)");
  is_str(last_body,
         "{\"proxy_id\":\"p1\",\"state\":\"reclaiming\",\"owner\":\"w1\"}",
         "... naming the owner that drains it");
  run(OP_EXTRACTION, CP_AUTH_OK, CP_EXTRACT_RECLAIMING, 0, "w1");
  is_int(last_http, 200, "GET of a reclaiming proxy: 200");
  run(OP_RETURN, CP_AUTH_OK, CP_EXTRACT_AVAILABLE, 0, "");
  is_int(ext_op, CP_EXTRACT_RELEASE, "DELETE asks CP_EXTRACT_RELEASE");
  is_int(last_http, 200, "... 200 available");
  is_int(store_lists, 0,
         "... without asking the store: a proxy deleted while extracted can "
         "still be returned");

  /* The authority's failures. */
  run(OP_EXTRACT, CP_AUTH_LIMIT, CP_EXTRACT_AVAILABLE, 0, "");
  is_int(last_http, 409, "CP_AUTH_LIMIT: 409");
  like(last_body, "\"limit\"", "... code limit");
  run(OP_EXTRACT, CP_AUTH_UNAVAILABLE, CP_EXTRACT_AVAILABLE, 0, "");
  is_int(last_http, 503, "CP_AUTH_UNAVAILABLE: 503 (fail closed)");
  like(last_body, "\"unavailable\"", "... code unavailable");
  run(OP_EXTRACT, CP_AUTH_STALE_SESSION, CP_EXTRACT_AVAILABLE, 0, "");
  is_int(last_http, 503, "an answer extract never gives: 503");
  run(OP_EXTRACT, CP_AUTH_OK, (cp_extract_state)9, 0, "");
  is_int(last_http, 503, "an unknown state: 503, not a guess");
  run(OP_EXTRACTION, CP_AUTH_OK, CP_EXTRACT_EXTRACTED, -5, "");
  is_int(last_http, 503, "an extraction time out of range: 503");
  is_int(replies, 1, "... one reply");

  /* The call refused. */
  int64_t refusals[] = {PH_EINVAL, PH_EFULL, PH_ESTATE, PH_ENOMEM};
  int want[] = {400, 503, 503, 503};
  for (size_t i = 0; i < 4; i++) {
    reset(&c, OP_EXTRACT, &auth);
    ext_ret = refusals[i];
    api_extract_start(&c, 0);
    store_answers(1);
    char name[96];
    snprintf(name, sizeof(name), "extract returning %lld: %d, one reply",
             (long long)refusals[i], want[i]);
    ok(last_http == want[i] && replies == 1 && c.auth_call == 0, name);
  }

  /* No extract in the vtable (not landed yet): 501 after the store. */
  reset(&c, OP_EXTRACT, &auth_no_extract);
  api_extract_start(&c, 0);
  store_answers(1);
  is_int(last_http, 501, "a cp.authority without extract: 501");
  like(last_body, "does not implement exclusive extraction", "... saying so");

  /* A body is refused before anything is asked. */
  reset(&c, OP_EXTRACT, &auth);
  api_extract_start(&c, 2);
  ok(last_http == 400 && store_lists == 0, "a body: 400, the store not asked");

  /* Not an extraction op. */
  reset(&c, OP_GET, &auth);
  api_extract_start(&c, 0);
  ok(last_http == 500 && store_lists == 0, "another op: 500, nothing asked");

  /* Cancel while the store reads, then while the authority answers. */
  reset(&c, OP_EXTRACT, &auth);
  api_extract_start(&c, 0);
  api_extract_cancel(&c);
  ok(store_cancels == 1 && auth_cancels == 0 && replies == 0,
     "cancel during the store's read cancels it, no reply");
  reset(&c, OP_EXTRACT, &auth);
  api_extract_start(&c, 0);
  store_answers(1);
  api_extract_cancel(&c);
  ok(auth_cancels == 1 && auth_cancelled_id == 7 && store_cancels == 0 &&
         replies == 0,
     "cancel during the authority's call cancels that call, no reply");
  api_extract_cancel(&c);
  is_int(auth_cancels, 1, "a second cancel does nothing");

  /* The time format. */
  char t[32];
  ok(api_extract_time(0, t, sizeof(t)) == 0 &&
         strcmp(t, "1970-01-01T00:00:00.000Z") == 0,
     "time 0 is the epoch");
  ok(api_extract_time(253402300799999LL, t, sizeof(t)) == 0 &&
         strcmp(t, "9999-12-31T23:59:59.999Z") == 0,
     "the last ms of year 9999");
  ok(api_extract_time(253402300800000LL, t, sizeof(t)) < 0,
     "year 10000 refused");
  ok(api_extract_time(5, t, 10) < 0, "a short buffer refused");
  return done_testing();
}
