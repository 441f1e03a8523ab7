/* SPDX-License-Identifier: BSD-2-Clause */
/* The pool_api module through the mock host (ph_mock_request, ABI 1.3
 * routes) over a real store_sqlite (issue 25 item 6: the pool's routes
 * split from admin_api): its keys checked (the store must provide
 * pool.store; the admin token file as admin_api's), 401s that do not say
 * why, its own route table at GET /v1/pool and only its own prefix, a
 * proxy created and listed, extraction off without [pool_api] authority
 * (501 naming the key), a malformed proxy id 400, a wrong method 405 and
 * a body that is not JSON 415. The pool's routes in depth: pool_admin.sh,
 * extraction.sh; api_extract.c alone: test_api_extract. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <proxyhost/mock.h>

#include "api_test.h"
#include "mock_test.h"
#include "tap.h"

#define POOL_API PH_BUILD_MODULES "/pool_api/.libs/pool_api.so"
#define STORE PH_BUILD_MODULES "/store_sqlite/.libs/store_sqlite.so"
#define FAKEAZ PH_TEST_MODDIR "/fakeaz.so"
#define TOKEN API_TEST_TOKEN
#define AUTH "Bearer " TOKEN

static char dir[64], token_file[128], db[128];
static ph_mock *m;

#define PATHS (sizeof(STORE) + sizeof(POOL_API) + sizeof(FAKEAZ) + 3 * 128)

/* A host with store_sqlite and pool_api; pool_lines replace [pool_api]'s
 * store line. NULL (with err) when check, init or start fails. */
static ph_mock *start_with(const char *pool_lines, char *err, size_t errlen) {
  char text[PATHS + 1024];
  snprintf(text, sizeof(text),
           "[proxyhost]\nmodules = %s, %s, %s\n"
           "[store_sqlite]\npath = %s\n"
           "[pool_api]\ntoken_file = %s\n%s",
           FAKEAZ, STORE, POOL_API, db, token_file, pool_lines);
  err[0] = '\0';
  return mock_test_boot(text, NULL, err, errlen);
}

/* The last answer's body (ph_mock_request's, owned by m). */
static const char *reply_body = "";

static int req(const char *method, const char *target, const char *auth,
               const char *type, const char *body) {
  return ph_mock_request(m, method, target, auth, type, body,
                         body ? strlen(body) : 0, 5000, NULL, &reply_body,
                         NULL);
}

static const char *reply(void) { return reply_body; }

static void write_token(mode_t mode) {
  api_test_write_token(token_file, TOKEN "\n", mode);
}

static void test_keys(void) {
  char err[8192] = "";
  write_token(0600);
  api_test_refused(start_with("", err, sizeof err),
                   "no [pool_api] store: refused");
  like(err, "pool_api.store: required: the pool.store provider",
       "... naming the key and the service");
  api_test_refused(start_with("store = fakeaz\n", err, sizeof err),
                   "a store without pool.store (fakeaz): refused");
  like(err,
       "pool_api.store: \"fakeaz\" is not a loaded module instance "
       "that provides the \"pool.store\" service",
       "... naming it and the service");
  api_test_refused(
      start_with("store = store_sqlite\nauthority = redis_ownership\n", err,
                 sizeof err),
      "an authority that is not loaded: refused");
  like(err, "pool_api.authority: ", "... naming the key");
  write_token(0644);
  api_test_refused(start_with("store = store_sqlite\n", err, sizeof err),
                   "a group/world-readable token file: refused");
  like(err, "pool_api.token_file: ", "... naming the key");
  unlike(err, TOKEN, "... never the token");
  write_token(0600);
}

static void test_routes(void) {
  is_int(req("GET", "/v1/pool", NULL, NULL, NULL), 401, "no token: 401");
  like(reply(), "{\"error\":{\"code\":\"unauthorized\"", "... a JSON error");
  is_int(req("GET", "/v1/pool/proxies", "Bearer nope", NULL, NULL), 401,
         "a wrong token: 401");
  is_int(req("GET", "/v1/pool", AUTH, NULL, NULL), 200,
         "GET /v1/pool: the route table");
  like(reply(), "{\"method\":\"GET\",\"path\":\"/v1/pool/proxies\"}",
       "... lists the proxies");
  like(reply(),
       "{\"method\":\"POST\",\"path\":\"/v1/pool/proxies/{proxy_id}/"
       "extraction\"}",
       "... and extraction");
  unlike(reply(), "/v1/users", "... and none of admin_api's");
  ok(req("GET", "/v1/users", AUTH, NULL, NULL) == 404 &&
         !strstr(reply(), "\"error\":{"),
     "GET /v1/users: not pool_api's (the host's 404)");
  is_int(req("GET", "/v1/pool/proxies", AUTH, NULL, NULL), 200,
         "list proxies: 200");
  like(reply(), "\"items\":[]", "... none yet");
  is_int(req("POST", "/v1/pool/proxies", AUTH, "application/json",
             "{\"proxy_id\":\"p1\",\"protocol\":\"http_connect\","
             "\"host\":\"192.0.2.1\",\"port\":3128,\"groups\":[\"g\"],"
             "\"capacity\":10}"),
         201, "create a proxy: 201");
  is_int(req("GET", "/v1/pool/proxies/p1", AUTH, NULL, NULL), 200,
         "read it back: 200");
  like(reply(), "\"proxy_id\":\"p1\"", "... p1");
  is_int(req("POST", "/v1/pool/proxies/p1/extraction", AUTH, NULL, NULL), 501,
         "extraction without [pool_api] authority: 501");
  like(reply(), "[pool_api] authority is not set", "... naming the key");
  is_int(req("GET", "/v1/pool/proxies/P%31/extraction", AUTH, NULL, NULL), 400,
         "a malformed proxy id: 400");
  is_int(req("PUT", "/v1/pool/proxies/p1", AUTH, "application/json", "{}"), 405,
         "PUT: 405");
  is_int(req("POST", "/v1/pool/routes", AUTH, "text/plain", "{}"), 415,
         "a body that is not application/json: 415");
  is_int(req("GET", "/v1/pool/nothing", AUTH, NULL, NULL), 404,
         "an unknown path under /v1/pool: 404");
  like(reply(), "\"not_found\"", "... the module's JSON error");
}

int main(void) {
  plan_lazy();
  if (api_test_dirs(dir, sizeof dir, token_file, sizeof token_file,
                    "test_pool_api") < 0)
    return 1;
  snprintf(db, sizeof(db), "%s/pool.db", dir);
  test_keys();
  char err[8192] = "";
  m = api_test_started(start_with("store = store_sqlite\n", err, sizeof err),
                       err, "pool_api and store_sqlite start");
  if (!m)
    return done_testing();
  test_routes();
  ph_mock_stop(m);
  ph_mock_free(m);
  unlink(token_file);
  char p[160];
  const char *sfx[] = {"", "-wal", "-shm"};
  for (size_t i = 0; i < 3; i++) {
    snprintf(p, sizeof(p), "%s%s", db, sfx[i]);
    unlink(p);
  }
  rmdir(dir);
  return done_testing();
}
