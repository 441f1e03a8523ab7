/* SPDX-License-Identifier: BSD-2-Clause */
/* The admin_api module through the mock host (ph_mock_request, ABI 1.3
 * routes) over the fakeaz test store: the admin token (file modes, 401s
 * that do not say why), every route, bad input answered 4xx with a JSON
 * error and nothing changed (the store's write counter), the store's
 * statuses mapped to HTTP, the bearer shown only by create and rotate,
 * cancellation at the deadline, and the route table. Issue 10, "Managing
 * it without SQL". */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ev.h>

#include "lib/json.h"
#include <proxyhost/mock.h>
#include "api_test.h"
#include "mock_test.h"
#include "tap.h"

#define ADMIN_API PH_BUILD_MODULES "/admin_api/.libs/admin_api.so"
#define FAKEAZ PH_TEST_MODDIR "/fakeaz.so"
#define TOKEN API_TEST_TOKEN
#define AUTH "Bearer " TOKEN

static char dir[64], token_file[128];
static ph_mock *m;

/* The build path may be long: the texts are sized from it. */
#define PATHS (sizeof(FAKEAZ) + sizeof(ADMIN_API) + sizeof(token_file))

static ph_mock *start_with(const char *extra, char *err, size_t errlen) {
  char text[PATHS + 1024];
  snprintf(text, sizeof(text),
           "[proxyhost]\nmodules = %s, %s\n[admin_api]\nstore = fakeaz\n"
           "token_file = %s\n%s",
           FAKEAZ, ADMIN_API, token_file, extra);
  err[0] = '\0';
  return mock_test_boot(text, NULL, err, errlen);
}

/* The last answer's body and length (ph_mock_request's, owned by m). */
static const char *reply_body = "";
static size_t reply_len;

static int req(const char *method, const char *target, const char *auth,
               const char *body) {
  return ph_mock_request(
      m, method, target, auth, body ? "application/json" : NULL, body,
      body ? strlen(body) : 0, 2000, NULL, &reply_body, &reply_len);
}

static const char *reply(void) { return reply_body; }

static long writes(void) {
  const char *t = ph_mock_metrics_text(m);
  const char *p = strstr(t, "\nproxyhost_fakeaz_writes_total ");
  return p ? strtol(p + 31, NULL, 10) : -1;
}

/* The value of a top-level string field of the last reply. */
static const char *field(const char *key) {
  static char out[256];
  static json_tok toks[512];
  json_doc d;
  size_t n = reply_len;
  const char *b = reply_body;
  out[0] = '\0';
  if (json_parse(&d, b, n, toks, 512, 8, NULL) != JSON_OK)
    return "(not json)";
  long v = json_get(&d, 0, key);
  if (v < 0 || json_str(&d, (size_t)v, out, sizeof(out)) < 0)
    return "(none)";
  return out;
}

static void write_token(const char *content, mode_t mode) {
  api_test_write_token(token_file, content, mode);
}

static void test_token_file(void) {
  char err[8192] = "";
  write_token(TOKEN "\n", 0644);
  api_test_refused(start_with("", err, sizeof err),
                   "a group/world-readable token file is refused");
  like(err, "admin_api.token_file: token_file ", "... naming the key");
  like(err,
       "readable or writable by group or others (mode 0644); "
       "make it the owner's only: chmod 600",
       "... with the mode and the fix");
  unlike(err, TOKEN, "... never the token");
  write_token("short\n", 0600);
  api_test_refused(start_with("", err, sizeof err),
                   "a token shorter than 32 characters is refused");
  unlike(err, "short", "... without quoting it");
  unlink(token_file);
  api_test_refused(start_with("", err, sizeof err),
                   "a missing token file is refused");
  like(err, "No such file or directory", "... with the reason");
  write_token(TOKEN "\n", 0600);
  char text[PATHS + 512];
  snprintf(text, sizeof(text),
           "[proxyhost]\nmodules = %s, %s\n[admin_api]\nstore = nope\n"
           "token_file = %s\n",
           FAKEAZ, ADMIN_API, token_file);
  err[0] = '\0';
  ph_mock *x = ph_mock_new(text, err, sizeof err);
  ok(x && ph_mock_init(x, err, sizeof err) < 0,
     "a store that is not loaded is refused");
  like(err,
       "admin_api.store: \"nope\" is not a loaded module instance "
       "that provides the \"authz.store\" service",
       "... naming it");
  ph_mock_free(x);
  /* The keys that served the pool's routes moved to pool_api (issue 25
   * item 6): an upgraded configuration still setting them is refused with
   * where they went, not started without its pool routes. */
  api_test_refused(start_with("authority = redis_ownership\n", err, sizeof err),
                   "[admin_api] authority (moved) is refused");
  like(err,
       "admin_api.authority: moved to [pool_api] authority: the "
       "pool's routes (/v1/pool/*) are the pool_api module's; "
       "load pool_api and set it there",
       "... naming [pool_api] and the module to load");
  api_test_refused(
      start_with("credentials = controlplane_server\n", err, sizeof err),
      "[admin_api] credentials (moved) is refused");
  like(err, "admin_api.credentials: moved to [pool_api] credentials",
       "... naming [pool_api]");
}

static void test_auth(void) {
  is_int(req("GET", "/v1/users", NULL, NULL), 401, "no Authorization: 401");
  like(reply(), "{\"error\":{\"code\":\"unauthorized\",\"message\":",
       "... a JSON error");
  const char *no_auth = strdup(reply());
  is_int(req("GET", "/v1/users", "Bearer wrong-token-wrong-token-wrong-token",
             NULL),
         401, "a wrong token: 401");
  is_str(reply(), no_auth, "... the same answer as no token at all");
  is_int(req("GET", "/v1/users", "Basic " TOKEN, NULL), 401,
         "another scheme: 401");
  is_int(req("GET", "/v1/users", "Bearer " TOKEN "x", NULL), 401,
         "the token with a byte more: 401");
  is_int(req("GET", "/v1/users", "bearer " TOKEN, NULL), 200,
         "the scheme is case-insensitive");
  is_int(req("POST", "/v1/users", "Bearer x", "{\"name\":\"eve\"}"), 401,
         "a write without the token: 401");
  is_int(writes(), 0, "... changed nothing");
  free((void *)no_auth);
}

static void test_users_agents(void) {
  /* The store answers on a later loop turn: the answer must end the
   * mock's wait, not the 30 s deadline (ph_mock_request once blocked in
   * the loop once more after the answer, so every request here took its
   * whole timeout). Not a speed check: 15 s is half the deadline. */
  struct ev_loop *loop = ph_mock_loop(m);
  ev_now_update(loop);
  double asked = ev_now(loop);
  is_int(ph_mock_request(m, "POST", "/v1/users", AUTH, "application/json",
                         "{\"name\":\"alice\"}", 16, 30000, NULL,
                         &reply_body, &reply_len),
         201, "create a user: 201");
  ok(ev_now(loop) - asked < 15.0,
     "... answered when the store answered, before the request's deadline");
  like(reply(), "\"name\":\"alice\",\"owner\":null,\"enabled\":true",
       "... the record");
  is_int(req("POST", "/v1/users", AUTH,
             "{\"name\":\"bob\",\"owner\":\"alice\",\"enabled\":false}"),
         201, "create a user with an owner, disabled");
  is_int(req("POST", "/v1/users", AUTH, "{\"name\":\"alice\"}"), 409,
         "a taken name: 409");
  like(reply(), "\"code\":\"conflict\"", "... code conflict");
  is_int(req("POST", "/v1/users", AUTH,
             "{\"name\":\"carol\",\"owner\":\"nobody\"}"),
         404, "a missing owner: 404");
  like(reply(), "\"message\":\"owner does not exist\"",
       "... with the store's reason");
  is_int(req("GET", "/v1/users/alice", AUTH, NULL), 200, "get one: 200");
  is_str(field("name"), "alice", "... alice");
  is_int(req("GET", "/v1/users/bob", AUTH, NULL), 200, "get another");
  is_str(field("owner"), "alice", "... bob, owned by alice");
  is_int(req("GET", "/v1/users/al", AUTH, NULL), 404,
         "get one that does not exist (a prefix of a name): 404");
  /* get reads the page after the greatest name below the one asked for:
   * the edges of that order ('-' < '.' < digits < '_' < letters). */
  const char *edge[] = {"0", "a", "9", "b", "b-", "b-c", "b.", "b_", "b0",
                        "z", "zz"};
  for (size_t i = 0; i < sizeof(edge) / sizeof(edge[0]); i++) {
    char body[64], path[64], name[80];
    snprintf(body, sizeof(body), "{\"name\":\"%s\"}", edge[i]);
    snprintf(path, sizeof(path), "/v1/users/%s", edge[i]);
    req("POST", "/v1/users", AUTH, body);
    snprintf(name, sizeof(name), "get one named \"%s\" finds it", edge[i]);
    ok(req("GET", path, AUTH, NULL) == 200 &&
           strcmp(field("name"), edge[i]) == 0,
       name);
  }
  for (size_t i = 0; i < sizeof(edge) / sizeof(edge[0]); i++) {
    char path[64];
    snprintf(path, sizeof(path), "/v1/users/%s", edge[i]);
    req("DELETE", path, AUTH, NULL);
  }
  is_int(req("GET", "/v1/users/_x", AUTH, NULL), 404,
         "a name that cannot exist: 404 without asking the store");
  is_int(req("GET", "/v1/tokens/tok_zz", AUTH, NULL), 404,
         "an id that cannot exist: 404");
  is_int(req("GET", "/v1/users", AUTH, NULL), 200, "list: 200");
  like(reply(), "{\"items\":[{\"name\":\"alice\"", "... alice first");
  like(reply(), "\"more\":false,\"next_after\":null,\"revision\":",
       "... no more, the revision");
  is_int(req("GET", "/v1/users?limit=1", AUTH, NULL), 200, "list, limit 1");
  like(reply(), "\"more\":true,\"next_after\":\"alice\"",
       "... more, and where to go on");
  is_int(req("GET", "/v1/users?after=alice&limit=1", AUTH, NULL), 200,
         "list after alice");
  like(reply(), "\"name\":\"bob\"", "... bob");
  is_int(req("GET", "/v1/users?user=alice", AUTH, NULL), 200,
         "list the users alice owns");
  unlike(reply(), "\"name\":\"alice\"", "... not alice herself");
  is_int(req("PATCH", "/v1/users/bob", AUTH, "{\"enabled\":true}"), 200,
         "enable a user");
  like(reply(), "\"enabled\":true", "... enabled");
  is_int(req("PATCH", "/v1/users/bob", AUTH, "{\"owner\":null}"), 200,
         "remove an owner");
  like(reply(), "\"owner\":null", "... no owner");
  is_int(req("PATCH", "/v1/users/nobody", AUTH, "{\"enabled\":true}"), 404,
         "update a missing user: 404");

  is_int(req("POST", "/v1/agents", AUTH,
             "{\"name\":\"edge-1\",\"owner\":\"alice\"}"),
         201, "create an agent");
  is_int(req("POST", "/v1/agents", AUTH, "{\"name\":\"edge-2\"}"), 400,
         "an agent without an owner: 400");
  is_int(req("PATCH", "/v1/agents/edge-1", AUTH, "{\"enabled\":false}"), 200,
         "disable an agent");
  like(reply(), "\"name\":\"edge-1\",\"owner\":\"alice\",\"enabled\":false",
       "... disabled");
  is_int(req("GET", "/v1/agents?user=alice", AUTH, NULL), 200,
         "agents of alice");
  like(reply(), "\"name\":\"edge-1\"", "... edge-1");
  is_int(req("DELETE", "/v1/users/alice", AUTH, NULL), 409,
         "delete a user that owns an agent: 409");
  like(reply(), "\"code\":\"busy\"", "... busy");
}

static void test_tokens_policies(void) {
  is_int(req("POST", "/v1/tokens", AUTH, "{\"user\":\"alice\"}"), 201,
         "create a client token");
  like(reply(), "\"scopes\":[\"stream\"]", "... a stream token by default");
  const char *bearer = field("bearer");
  ok(strncmp(bearer, "tok_0000000000000001.", 21) == 0, "... its bearer, id first");
  like(reply(), "\"notice\":\"the bearer is shown only now",
       "... shown once, said so");
  is_int(req("GET", "/v1/tokens/tok_0000000000000001", AUTH, NULL), 200,
         "get the token");
  unlike(reply(), "fakesecret", "... never its secret again");
  is_str(field("id"), "tok_0000000000000001", "... by id");
  is_int(req("GET", "/v1/tokens?user=alice", AUTH, NULL), 200, "list tokens");
  unlike(reply(), "fakesecret", "... without secrets");
  is_int(req("POST", "/v1/tokens", AUTH,
             "{\"user\":\"alice\",\"agent\":\"edge-1\"}"),
         201, "create an agent token");
  like(reply(), "\"agent\":\"edge-1\",\"scopes\":[\"agent\"]",
       "... an agent token");
  is_int(req("POST", "/v1/tokens/tok_0000000000000001/rotate", AUTH, NULL),
         200, "rotate");
  like(field("bearer"), "tok_0000000000000001.rotated",
       "... a new bearer, shown once");
  like(reply(), "\"rotated_at\":1", "... rotated_at set");
  is_int(req("PATCH", "/v1/tokens/tok_0000000000000001", AUTH,
             "{\"expires_at\":1900000000,\"scopes\":[\"stream\"]}"),
         200, "set expiry and scopes");
  like(reply(), "\"expires_at\":1900000000", "... the expiry");
  unlike(reply(), "bearer", "... no bearer in an update");
  is_int(req("POST", "/v1/tokens/tok_0000000000000001/revoke", AUTH, "{}"),
         200, "revoke");
  unlike(reply(), "\"revoked_at\":0,", "... revoked_at set");
  is_int(req("POST", "/v1/tokens/tok_0000000000000001/rotate", AUTH, NULL),
         400, "rotating a revoked token is refused by the store: 400");

  is_int(req("POST", "/v1/policies", AUTH,
             "{\"agent\":\"edge-1\",\"subject_kind\":\"user\","
             "\"subject\":\"alice\",\"host_pattern\":\"*.example.com\","
             "\"port_min\":443,\"port_max\":443}"),
         201, "create a policy");
  const char *pol = strdup(field("id"));
  ok(strncmp(pol, "pol_", 4) == 0, "... its id");
  like(reply(), "\"protocol\":\"tcp\"", "... tcp");
  char path[64];
  snprintf(path, sizeof(path), "/v1/policies/%s", pol);
  is_int(req("PATCH", path, AUTH, "{\"port_min\":80,\"port_max\":8080}"),
         200, "update a policy's ports");
  like(reply(), "\"port_min\":80,\"port_max\":8080", "... the ports");
  is_int(req("PATCH", path, AUTH, "{\"port_min\":80}"), 400,
         "port_min without port_max: 400");
  is_int(req("GET", "/v1/policies?agent=edge-1", AUTH, NULL), 200,
         "policies of an agent");
  like(reply(), pol, "... the policy");
  is_int(req("DELETE", path, AUTH, NULL), 204, "delete the policy: 204");
  is_int((long)strlen(reply()), 0, "... no body");
  is_int(req("GET", path, AUTH, NULL), 404, "it is gone");
  free((void *)pol);
}

/* Bad input: 4xx with a JSON error, and the store not called. */
static void test_bad_input(void) {
  long before = writes();
  struct {
    const char *method, *target, *body;
    int status;
    const char *what;
  } bad[] = {
      {"POST", "/v1/users", "{\"name\":\"x\",\"name\":\"y\"}", 400,
       "a duplicate field"},
      {"POST", "/v1/users", "{\"name\":\"x\",\"role\":\"admin\"}", 400,
       "an unknown field"},
      {"POST", "/v1/users", "{\"name\":7}", 400, "a number for a name"},
      {"POST", "/v1/users", "{\"name\":\"x\"", 400, "truncated JSON"},
      {"POST", "/v1/users", "[\"x\"]", 400, "an array for a body"},
      {"POST", "/v1/users", "{\"name\":\"x\",\"enabled\":\"yes\"}", 400,
       "a string for a bool"},
      {"POST", "/v1/users", "{\"name\":\"\xc0\xaf\"}", 400, "bad UTF-8"},
      {"POST", "/v1/users", "", 400, "no body"},
      {"PATCH", "/v1/users/bob", "{}", 400, "an update changing nothing"},
      {"POST", "/v1/tokens", "{\"user\":\"alice\",\"scopes\":[\"root\"]}",
       400, "an unknown scope"},
      {"POST", "/v1/tokens", "{\"user\":\"alice\",\"scopes\":[]}", 400,
       "no scopes"},
      {"POST", "/v1/tokens", "{\"user\":\"alice\",\"expires_at\":-1}", 400,
       "a negative expiry"},
      {"POST", "/v1/tokens", "{\"user\":\"alice\",\"expires_at\":1.5}", 400,
       "a fractional expiry"},
      {"POST", "/v1/policies",
       "{\"agent\":\"edge-1\",\"subject_kind\":\"group\",\"subject\":\"a\","
       "\"host_pattern\":\"*\",\"port_min\":1,\"port_max\":2}",
       400, "an unknown subject kind"},
      {"POST", "/v1/policies",
       "{\"agent\":\"edge-1\",\"subject_kind\":\"user\",\"subject\":\"a\","
       "\"host_pattern\":\"*\",\"port_min\":0,\"port_max\":2}",
       400, "port 0"},
      {"POST", "/v1/policies",
       "{\"agent\":\"edge-1\",\"subject_kind\":\"user\",\"subject\":\"a\","
       "\"host_pattern\":\"*\",\"port_min\":1,\"port_max\":2,"
       "\"protocol\":\"udp\"}",
       400, "udp"},
      {"GET", "/v1/users?limit=0", NULL, 400, "limit 0"},
      {"GET", "/v1/users?limit=1001", NULL, 400, "limit above 1000"},
      {"GET", "/v1/users?sort=name", NULL, 400, "an unknown parameter"},
      {"GET", "/v1/users?after=%41", NULL, 400, "a percent escape"},
      {"GET", "/v1/users?limit=1&limit=2", NULL, 400, "a repeated parameter"},
      {"GET", "/v1/users/Alice", NULL, 404, "an upper-case name"},
      {"GET", "/v1/users/alice?x=1", NULL, 400, "a query on get"},
      {"PUT", "/v1/users/alice", "{}", 405, "PUT"},
      {"DELETE", "/v1/users", NULL, 405, "DELETE on a collection"},
      {"GET", "/v1/users/alice/tokens", NULL, 404, "an unknown sub-path"},
      {"POST", "/v1/tokens/tok_0000000000000002/revoke", "{\"now\":1}", 400,
       "a body on revoke"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char name[160];
    snprintf(name, sizeof(name), "bad input: %s: %d", bad[i].what,
             bad[i].status);
    int st = req(bad[i].method, bad[i].target, AUTH, bad[i].body);
    is_int(st, bad[i].status, name);
    snprintf(name, sizeof(name), "bad input: %s: a JSON error", bad[i].what);
    ok(strncmp(reply(), "{\"error\":{\"code\":\"", 18) == 0 &&
           strstr(reply(), "\",\"message\":\"") != NULL,
       name);
  }
  is_int(writes(), before, "bad input changed nothing in the store");
  is_int(ph_mock_request(m, "POST", "/v1/users", AUTH, "text/plain",
                         "{\"name\":\"zed\"}", 14, 2000, NULL, &reply_body,
                         &reply_len),
         415, "a body that is not application/json: 415");
  is_int(writes(), before, "... changed nothing");
}

static void test_routes_and_failures(void) {
  is_int(req("GET", "/v1/routes", AUTH, NULL), 200, "GET /v1/routes");
  like(reply(), "{\"method\":\"POST\",\"path\":\"/v1/tokens/{id}/rotate\"}",
       "... lists the rotate route");
  unlike(reply(), "/v1/pool", "... and none of the pool's (pool_api's)");
  is_int(req("GET", "/v1/pool/proxies", AUTH, NULL), 404,
         "GET /v1/pool/proxies: not admin_api's (the host's 404)");
  ph_mock_stop(m);
  ph_mock_free(m);

  struct {
    const char *fail;
    int status;
    const char *code, *msg;
  } fails[] = {
      {"unavailable", 503, "unavailable", "nothing was changed"},
      {"outcome", 500, "outcome_unknown", "list the records to check"},
      {"full", 503, "busy", "try again"},
  };
  char err[8192] = "";
  for (size_t i = 0; i < 3; i++) {
    char extra[64], name[128];
    snprintf(extra, sizeof(extra), "[fakeaz]\nfail = %s\n", fails[i].fail);
    m = start_with(extra, err, sizeof err);
    ok(m != NULL, "started with a failing store");
    if (!m)
      continue;
    snprintf(name, sizeof(name), "store %s: %d", fails[i].fail,
             fails[i].status);
    is_int(req("POST", "/v1/users", AUTH, "{\"name\":\"x\"}"),
           fails[i].status, name);
    snprintf(name, sizeof(name), "store %s: code %s", fails[i].fail,
             fails[i].code);
    like(reply(), fails[i].code, name);
    like(reply(), fails[i].msg, "... and what to do");
    ph_mock_stop(m);
    ph_mock_free(m);
  }
  m = start_with("[fakeaz]\nfail = hang\n", err, sizeof err);
  ok(m != NULL, "started with a store that never answers");
  if (m) {
    is_int(ph_mock_request(m, "GET", "/v1/users", AUTH, NULL, NULL, 0, 100,
                           NULL, &reply_body, &reply_len),
           504, "no answer by the deadline: 504");
    ph_mock_stop(m);
    ph_mock_free(m);
  }
  m = NULL;
}

int main(void) {
  plan_lazy();
  if (api_test_dirs(dir, sizeof dir, token_file, sizeof token_file,
                    "test_admin_api") < 0)
    return 1;
  test_token_file();
  char err[8192] = "";
  m = api_test_started(start_with("", err, sizeof err), err,
                       "admin_api and fakeaz start");
  if (!m)
    return done_testing();
  test_auth();
  test_users_agents();
  test_tokens_policies();
  test_bad_input();
  test_routes_and_failures();
  unlink(token_file);
  rmdir(dir);
  return done_testing();
}
