/* SPDX-License-Identifier: BSD-2-Clause */
/* The authorization store contract suite (store_contract.h). A test
 * #includes this file after tap.h, so that both count one TAP plan
 * (tap.h keeps its counters per translation unit). */
#include "store_contract.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <proxyhost/access.h>
#include <proxyhost/authz_store.h>

#include "mock_test.h"
#include "tap.h"

#define ROUNDS 500 /* x 10 ms: every wait gives up after 5 s */
#define STR 200

/* ---- the consumer: a module that uses both services ------------------- */

static struct {
  const ph_api *api;
  ph_ctx *ctx;
  const char *provider;
  const ph_access_v1 *ac;
  void *as;
  const ph_az_store_v1 *st;
  void *ss;
  int presence; /* the provider registered "tm.presence" (issue 27) */
} C;

static int client_init(ph_ctx *ctx, const ph_api *a, void **state) {
  C.api = a;
  C.ctx = ctx;
  C.ac = NULL;
  C.st = NULL;
  *state = NULL;
  return PH_OK;
}

static int client_start(void *state) {
  (void)state;
  C.ac = C.api->service_get_named(C.ctx, PH_ACCESS_SERVICE, C.provider,
                                  PH_ACCESS_MAJOR, 0, &C.as);
  C.st = C.api->service_get_named(C.ctx, PH_AZ_STORE_SERVICE, C.provider,
                                  PH_AZ_STORE_MAJOR, 0, &C.ss);
  void *tp;
  C.presence = C.api->service_get_named(C.ctx, "tm.presence", C.provider, 1,
                                        0, &tp) != NULL;
  return C.ac && C.st ? PH_OK : PH_ENOENT;
}

static const char *const client_requires[] = {PH_ACCESS_SERVICE,
                                              PH_AZ_STORE_SERVICE, NULL};
static const ph_module client_mod = {
    PH_MODULE_HEADER("contract_client", "1.0"),
    .requires = client_requires,
    .init = client_init,
    .start = client_start,
};

/* ---- results ---------------------------------------------------------- */

static int in_call;      /* set while a call into the provider runs */
static int inside_calls; /* callbacks that came from inside a call */

typedef struct wres {
  int calls, status;
  uint64_t revision;
  int rev_rc;      /* revision() when the callback ran */
  uint64_t rev_cb; /* its value */
  int kind;
  char id[STR], bearer[STR], detail[STR];
  ph_az_token tok; /* scalars only */
} wres;

static uint64_t rev_now(int *rc) {
  uint64_t v = 0;
  int r = C.ac->revision(C.as, &v);
  if (rc)
    *rc = r;
  return r == PH_OK ? v : 0;
}

static void on_write(void *arg, const ph_az_write_result *res) {
  wres *w = arg;
  inside_calls += in_call;
  w->calls++;
  w->status = res->status;
  w->revision = res->revision;
  w->rev_cb = rev_now(&w->rev_rc);
  w->kind = res->rec.kind;
  snprintf(w->bearer, STR, "%s", res->bearer ? res->bearer : "");
  snprintf(w->detail, STR, "%s", res->detail ? res->detail : "");
  const char *id = NULL;
  if (res->rec.kind == PH_AZ_TOKEN) {
    id = res->rec.u.token.id;
    w->tok = res->rec.u.token;
  } else if (res->rec.kind == PH_AZ_POLICY) {
    id = res->rec.u.policy.id;
  } else if (res->rec.kind == PH_AZ_USER) {
    id = res->rec.u.user.name;
  } else if (res->rec.kind == PH_AZ_AGENT) {
    id = res->rec.u.agent.name;
  }
  snprintf(w->id, STR, "%s", id ? id : "");
  w->tok.id = w->tok.user = w->tok.agent = NULL;
}

typedef struct ares {
  int calls;
  ph_access_result res;
} ares;

static void on_access(void *arg, const ph_access_result *res) {
  ares *a = arg;
  inside_calls += in_call;
  a->calls++;
  a->res = *res;
}

typedef struct authres {
  int calls, verdict;
  uint32_t ttl_ms;
  char id[STR], user[STR];
} authres;

static void on_auth(void *arg, const ph_az_auth_result *res) {
  authres *a = arg;
  inside_calls += in_call;
  a->calls++;
  a->verdict = res->verdict;
  a->ttl_ms = res->ttl_ms;
  snprintf(a->id, STR, "%s", res->token.id ? res->token.id : "");
  snprintf(a->user, STR, "%s", res->token.user ? res->token.user : "");
}

#define LIST_KEEP 32
typedef struct lres {
  int calls, status, more;
  size_t n;
  uint64_t revision;
  char keys[LIST_KEEP][STR]; /* names or ids, in order */
  char text[8192];           /* every string of every record */
} lres;

static void keep_text(lres *l, const char *s) {
  if (s && strlen(l->text) + strlen(s) + 2 < sizeof(l->text)) {
    strcat(l->text, s);
    strcat(l->text, "|");
  }
}

static void on_list(void *arg, const ph_az_list_result *res) {
  lres *l = arg;
  inside_calls += in_call;
  l->calls++;
  l->status = res->status;
  l->n = res->n;
  l->more = res->more;
  l->revision = res->revision;
  l->text[0] = '\0';
  for (size_t i = 0; i < res->n; i++) {
    const ph_az_record *r = &res->recs[i];
    const char *key = NULL;
    switch (r->kind) {
    case PH_AZ_USER:
      key = r->u.user.name;
      keep_text(l, r->u.user.owner);
      break;
    case PH_AZ_TOKEN:
      key = r->u.token.id;
      keep_text(l, r->u.token.user);
      keep_text(l, r->u.token.agent);
      break;
    case PH_AZ_AGENT:
      key = r->u.agent.name;
      keep_text(l, r->u.agent.owner);
      break;
    case PH_AZ_POLICY:
      key = r->u.policy.id;
      keep_text(l, r->u.policy.agent);
      keep_text(l, r->u.policy.subject);
      keep_text(l, r->u.policy.host_pattern);
      break;
    }
    keep_text(l, key);
    if (i < LIST_KEEP)
      snprintf(l->keys[i], STR, "%s", key ? key : "");
  }
}

/* ---- harness ---------------------------------------------------------- */

static const store_contract_env *E;
static char err[8192];

static void wait_calls(ph_mock *m, const int *calls, int want) {
  for (int i = 0; i < ROUNDS && *calls < want; i++)
    ph_mock_run_for(m, 10);
}

static int wait_revision_rc(ph_mock *m, int want_rc) {
  int rc = PH_EINVAL;
  for (int i = 0; i < ROUNDS; i++) {
    rev_now(&rc);
    if (rc == want_rc)
      return 1;
    ph_mock_run_for(m, 10);
  }
  return 0;
}

/* A fresh database and a started mock, ready (revision read). NULL when
 * the environment skips it. */
static ph_mock *boot_pending(int max_pending, int wait_ready) {
  const char *text = E->setup(E->arg, max_pending);
  if (!text)
    return NULL;
  C.provider = E->provider;
  err[0] = '\0';
  ph_mock *m = mock_test_boot(text, &client_mod, err, sizeof err);
  if (!m) {
    printf("# %s\n", err);
    return NULL;
  }
  if (wait_ready && !wait_revision_rc(m, PH_OK)) {
    printf("# the provider never read its revision\n");
    ph_mock_free(m);
    return NULL;
  }
  return m;
}

static ph_mock *boot(void) { return boot_pending(64, 1); }

static void finish(ph_mock *m) {
  if (!m)
    return;
  ph_mock_stop(m);
  ph_mock_free(m);
}

/* One write, waited for. The call's own return when it refused. */
static int write_w(ph_mock *m, const ph_az_write *w, wres *r) {
  memset(r, 0, sizeof(*r));
  in_call = 1;
  int64_t id = C.st->write(C.ss, w, on_write, r);
  in_call = 0;
  if (id <= 0)
    return (int)id;
  wait_calls(m, &r->calls, 1);
  return r->calls == 1 ? r->status : -999;
}

static ph_az_write wr(int action, int kind) {
  ph_az_write w = {.size = sizeof(w), .action = action};
  w.rec.kind = kind;
  return w;
}

static int mk_user(ph_mock *m, const char *name, const char *owner,
                   wres *r) {
  ph_az_write w = wr(PH_AZ_CREATE, PH_AZ_USER);
  w.rec.u.user = (ph_az_user){.name = name, .owner = owner, .enabled = 1};
  return write_w(m, &w, r);
}

static int mk_agent(ph_mock *m, const char *name, const char *owner,
                    wres *r) {
  ph_az_write w = wr(PH_AZ_CREATE, PH_AZ_AGENT);
  w.rec.u.agent = (ph_az_agent){.name = name, .owner = owner, .enabled = 1};
  return write_w(m, &w, r);
}

static int mk_token(ph_mock *m, const char *user, const char *agent,
                    uint32_t scopes, int64_t expires, wres *r) {
  ph_az_write w = wr(PH_AZ_CREATE, PH_AZ_TOKEN);
  w.rec.u.token = (ph_az_token){
      .user = user, .agent = agent, .scopes = scopes, .expires_at = expires};
  return write_w(m, &w, r);
}

static int mk_policy(ph_mock *m, const char *agent, int kind,
                     const char *subject, const char *pattern, uint16_t lo,
                     uint16_t hi, wres *r) {
  ph_az_write w = wr(PH_AZ_CREATE, PH_AZ_POLICY);
  w.rec.u.policy = (ph_az_policy){.agent = agent,
                                  .subject_kind = kind,
                                  .subject = subject,
                                  .host_pattern = pattern,
                                  .port_min = lo,
                                  .port_max = hi,
                                  .protocol = PH_PROTO_TCP};
  return write_w(m, &w, r);
}

static int set_enabled(ph_mock *m, int kind, const char *name, int on,
                       wres *r) {
  ph_az_write w = wr(PH_AZ_UPDATE, kind);
  w.fields = PH_AZ_F_ENABLED;
  if (kind == PH_AZ_USER)
    w.rec.u.user = (ph_az_user){.name = name, .enabled = on};
  else
    w.rec.u.agent = (ph_az_agent){.name = name, .enabled = on};
  return write_w(m, &w, r);
}

static int token_update(ph_mock *m, const char *id, uint32_t fields,
                        uint32_t scopes, int64_t expires, wres *r) {
  ph_az_write w = wr(PH_AZ_UPDATE, PH_AZ_TOKEN);
  w.fields = fields;
  w.rec.u.token = (ph_az_token){.id = id, .scopes = scopes,
                                .expires_at = expires};
  return write_w(m, &w, r);
}

static int del(ph_mock *m, int kind, const char *key, wres *r) {
  ph_az_write w = wr(PH_AZ_DELETE, kind);
  switch (kind) {
  case PH_AZ_USER:
    w.rec.u.user.name = key;
    break;
  case PH_AZ_TOKEN:
    w.rec.u.token.id = key;
    break;
  case PH_AZ_AGENT:
    w.rec.u.agent.name = key;
    break;
  default:
    w.rec.u.policy.id = key;
  }
  return write_w(m, &w, r);
}

static int check(ph_mock *m, const char *token, const char *agent,
                 const char *host, uint16_t port, ares *a) {
  memset(a, 0, sizeof(*a));
  ph_access_request q = {.size = sizeof(q),
                         .protocol = PH_PROTO_TCP,
                         .port = port,
                         .host = host,
                         .principal = token,
                         .agent = agent};
  in_call = 1;
  int64_t id = C.ac->check_open(C.as, &q, on_access, a);
  in_call = 0;
  if (id <= 0)
    return (int)id;
  wait_calls(m, &a->calls, 1);
  return a->calls == 1 ? a->res.verdict : -999;
}

static int authn(ph_mock *m, const char *bearer, authres *a) {
  memset(a, 0, sizeof(*a));
  in_call = 1;
  int64_t id = C.st->authenticate(C.ss, bearer, strlen(bearer), on_auth, a);
  in_call = 0;
  if (id <= 0)
    return (int)id;
  wait_calls(m, &a->calls, 1);
  return a->calls == 1 ? a->verdict : -999;
}

static int list_l(ph_mock *m, const ph_az_list *l, lres *r) {
  memset(r, 0, sizeof(*r));
  in_call = 1;
  int64_t id = C.st->list(C.ss, l, on_list, r);
  in_call = 0;
  if (id <= 0)
    return (int)id;
  wait_calls(m, &r->calls, 1);
  return r->calls == 1 ? r->status : -999;
}

static size_t count(ph_mock *m, int kind) {
  ph_az_list l = {.size = sizeof(l), .kind = kind, .limit = PH_AZ_LIST_MAX};
  lres r;
  return list_l(m, &l, &r) == PH_OK ? r.n : (size_t)-1;
}

/* The totals of every kind: a failed write must leave them as they were. */
static void totals(ph_mock *m, size_t t[5]) {
  for (int k = PH_AZ_USER; k <= PH_AZ_POLICY; k++)
    t[k] = count(m, k);
}

static int same_totals(const size_t a[5], const size_t b[5]) {
  for (int k = PH_AZ_USER; k <= PH_AZ_POLICY; k++)
    if (a[k] != b[k])
      return 0;
  return 1;
}

/* A successful write raised the revision by exactly one, and revision()
 * said so before its callback ran (TM-P1-29). */
static void raised_by_one(int rc, const wres *r, uint64_t before,
                          const char *what) {
  char name[256];
  snprintf(name, sizeof(name), "TM-P1-16..19 TM-TEST-22 %s: PH_OK, revision %llu -> %llu", what,
           (unsigned long long)before, (unsigned long long)before + 1);
  if (!ok(rc == PH_OK && r->revision == before + 1 &&
              rev_now(NULL) == before + 1,
          name))
    printf("#   rc %d (%s), result revision %llu, now %llu\n", rc, r->detail,
           (unsigned long long)r->revision,
           (unsigned long long)rev_now(NULL));
  snprintf(name, sizeof(name),
           "TM-P1-29 %s: revision() is the new one inside the callback",
           what);
  ok(r->rev_rc == PH_OK && r->rev_cb == r->revision, name);
}

/* A failed write changed neither the data nor the revision. */
static void unchanged(ph_mock *m, int rc, int want, uint64_t before,
                      const size_t t0[5], const char *what) {
  char name[256];
  snprintf(name, sizeof(name), "TM-P1-21 %s: fails with %d", what, want);
  if (!ok(rc == want, name))
    printf("#   got %d\n", rc);
  size_t t1[5];
  totals(m, t1);
  ph_mock_run_for(m, 250); /* a re-read of the revision comes in between */
  snprintf(name, sizeof(name),
           "TM-P1-21 TM-TEST-22 %s: data and revision unchanged", what);
  ok(same_totals(t0, t1) && rev_now(NULL) == before, name);
}

/* ---- the cases -------------------------------------------------------- */

/* The fixture most cases start from: alice owns edge1 and bob; alice has
 * a stream token allowed to *.example.com:443 through edge1. */
typedef struct fixture {
  char token[STR], bearer[STR], policy[STR];
} fixture;

static int make_fixture(ph_mock *m, fixture *f) {
  wres r;
  if (mk_user(m, "alice", NULL, &r) != PH_OK ||
      mk_user(m, "bob", "alice", &r) != PH_OK ||
      mk_agent(m, "edge1", "alice", &r) != PH_OK ||
      mk_token(m, "alice", NULL, PH_AZ_SCOPE_STREAM, 0, &r) != PH_OK)
    return -1;
  snprintf(f->token, STR, "%s", r.id);
  snprintf(f->bearer, STR, "%s", r.bearer);
  if (mk_policy(m, "edge1", PH_AZ_SUBJECT_USER, "alice", "*.example.com",
                443, 443, &r) != PH_OK)
    return -1;
  snprintf(f->policy, STR, "%s", r.id);
  return 0;
}

static void case_start(void) {
  ph_mock *m = boot_pending(64, 0);
  if (!ok(m != NULL, "TM-P1-26 the provider starts on a fresh database"))
    return;
  int rc;
  rev_now(&rc);
  is_int(rc, PH_ESTATE, "TM-P1-26 revision() is PH_ESTATE before the first "
                        "read");
  ok(!ph_mock_ready(m), "TM-P1-26 not ready before the first revision read");
  ok(wait_revision_rc(m, PH_OK), "TM-P1-20 revision() answers once read");
  ok(ph_mock_ready(m), "TM-P1-26 ready after the first revision read");
  ok(rev_now(NULL) >= 1, "TM-P1-15 a fresh database starts at revision 1");
  /* TunnelMesh presence (modules/contracts/tm_presence.h): the cluster
   * store provides it, the one-node store does not (relay off), and a
   * caller tells the two apart by this lookup. */
  is_int(C.presence, strcmp(C.provider, "store_pg") == 0,
         "TM-P2-29 tm.presence: provided by store_pg only (store_sqlite: "
         "one node, relay off)");
  uint64_t v;
  is_int(C.ac->revision(C.as, NULL), PH_EINVAL, "revision(NULL) is EINVAL");
  (void)v;
  finish(m);
}

static void case_writes_raise_revision(void) {
  ph_mock *m = boot();
  if (!m)
    return;
  wres r;
  uint64_t b = rev_now(NULL);
  raised_by_one(mk_user(m, "alice", NULL, &r), &r, b, "user create");
  b = rev_now(NULL);
  raised_by_one(mk_user(m, "carol", NULL, &r), &r, b, "user create (carol)");
  b = rev_now(NULL);
  raised_by_one(mk_user(m, "bob", "alice", &r), &r, b,
                "user create with an owner");
  b = rev_now(NULL);
  raised_by_one(mk_agent(m, "edge1", "alice", &r), &r, b, "agent create");
  is_str(r.id, "edge1", "the result holds the agent as stored");
  b = rev_now(NULL);
  raised_by_one(mk_token(m, "alice", NULL, PH_AZ_SCOPE_STREAM, 0, &r), &r,
                b, "TM-P1-16 token create");
  char tok[STR];
  snprintf(tok, STR, "%s", r.id);
  ok(strncmp(tok, "tok_", 4) == 0 && strlen(tok) == PH_AZ_ID_LEN,
     "a token id is tok_ and 16 hex digits");
  b = rev_now(NULL);
  raised_by_one(mk_token(m, "bob", "edge1",
                         PH_AZ_SCOPE_AGENT, 0, &r),
                &r, b, "TM-P1-16 agent token create");
  char agent_tok[STR];
  snprintf(agent_tok, STR, "%s", r.id);
  b = rev_now(NULL);
  raised_by_one(mk_policy(m, "edge1", PH_AZ_SUBJECT_TOKEN, tok, "*", 1,
                          65535, &r),
                &r, b, "TM-P1-19 policy create");
  char pol[STR];
  snprintf(pol, STR, "%s", r.id);
  ok(strncmp(pol, "pol_", 4) == 0 && strlen(pol) == PH_AZ_ID_LEN,
     "a policy id is pol_ and 16 hex digits");

  ph_az_write w = wr(PH_AZ_ROTATE, PH_AZ_TOKEN);
  w.rec.u.token.id = tok;
  b = rev_now(NULL);
  raised_by_one(write_w(m, &w, &r), &r, b, "TM-P1-16 token rotate");
  b = rev_now(NULL);
  raised_by_one(token_update(m, tok, PH_AZ_F_SCOPES, PH_AZ_SCOPE_STREAM, 0,
                             &r),
                &r, b, "TM-P1-16 token scope update");
  b = rev_now(NULL);
  raised_by_one(token_update(m, tok, PH_AZ_F_EXPIRES, 0,
                             (int64_t)time(NULL) + 3600, &r),
                &r, b, "TM-P1-16 token expiry update");
  b = rev_now(NULL);
  raised_by_one(token_update(m, tok, PH_AZ_F_REVOKED, 0, 0, &r), &r, b,
                "TM-P1-16 TM-TEST-22 token revoke");
  ok(r.tok.revoked_at > 0, "a revoked token has revoked_at set");

  b = rev_now(NULL);
  raised_by_one(set_enabled(m, PH_AZ_USER, "bob", 0, &r), &r, b,
                "TM-P1-17 user disable");
  b = rev_now(NULL);
  raised_by_one(set_enabled(m, PH_AZ_USER, "bob", 1, &r), &r, b,
                "TM-P1-17 user restore");
  w = wr(PH_AZ_UPDATE, PH_AZ_USER);
  w.fields = PH_AZ_F_OWNER;
  w.rec.u.user = (ph_az_user){.name = "bob", .owner = "carol"};
  b = rev_now(NULL);
  raised_by_one(write_w(m, &w, &r), &r, b, "TM-P1-17 user owner change");
  w.rec.u.user.owner = NULL;
  b = rev_now(NULL);
  raised_by_one(write_w(m, &w, &r), &r, b, "TM-P1-17 user owner removed");

  b = rev_now(NULL);
  raised_by_one(set_enabled(m, PH_AZ_AGENT, "edge1", 0, &r), &r, b,
                "TM-P1-18 TM-TEST-22 agent disable");
  b = rev_now(NULL);
  raised_by_one(set_enabled(m, PH_AZ_AGENT, "edge1", 1, &r), &r, b,
                "TM-P1-18 agent enable");
  w = wr(PH_AZ_UPDATE, PH_AZ_AGENT);
  w.fields = PH_AZ_F_OWNER;
  w.rec.u.agent = (ph_az_agent){.name = "edge1", .owner = "carol"};
  b = rev_now(NULL);
  raised_by_one(write_w(m, &w, &r), &r, b, "TM-P1-18 agent owner change");

  w = wr(PH_AZ_UPDATE, PH_AZ_POLICY);
  w.fields = PH_AZ_F_HOST | PH_AZ_F_PORTS;
  w.rec.u.policy = (ph_az_policy){.id = pol,
                                  .host_pattern = "10.0.0.0/8",
                                  .port_min = 22,
                                  .port_max = 22};
  b = rev_now(NULL);
  raised_by_one(write_w(m, &w, &r), &r, b,
                "TM-P1-19 TM-TEST-22 policy update");
  b = rev_now(NULL);
  raised_by_one(del(m, PH_AZ_POLICY, pol, &r), &r, b,
                "TM-P1-19 policy delete");
  ok(r.kind == 0, "a delete's result holds no record");
  b = rev_now(NULL);
  raised_by_one(del(m, PH_AZ_TOKEN, tok, &r), &r, b, "token delete");
  b = rev_now(NULL);
  raised_by_one(del(m, PH_AZ_AGENT, "edge1", &r), &r, b,
                "TM-P1-18 agent delete");
  is_int(count(m, PH_AZ_TOKEN), 0,
         "deleting an agent deleted its agent tokens");
  b = rev_now(NULL);
  raised_by_one(del(m, PH_AZ_USER, "bob", &r), &r, b, "TM-P1-17 user delete");
  ok(inside_calls == 0, "no callback ran inside the call that started it");
  (void)agent_tok;
  finish(m);
}

static void case_write_errors(void) {
  ph_mock *m = boot();
  fixture f;
  if (!m || make_fixture(m, &f) < 0) {
    ok(0, "the fixture is made");
    finish(m);
    return;
  }
  wres r;
  size_t t0[5];
  totals(m, t0);
  uint64_t b = rev_now(NULL);
  unchanged(m, mk_user(m, "alice", NULL, &r), PH_EEXIST, b,
            t0, "a user name taken: PH_EEXIST");
  ok(r.detail[0] != '\0', "a failed write says why (detail)");
  unchanged(m, mk_agent(m, "edge1", "alice", &r), PH_EEXIST, b, t0,
            "an agent name taken: PH_EEXIST");
  unchanged(m, mk_user(m, "dave", "nobody", &r), PH_ENOENT, b, t0,
            "a user whose owner does not exist: PH_ENOENT");
  unchanged(m, mk_agent(m, "edge2", "nobody", &r), PH_ENOENT, b, t0,
            "an agent whose owner does not exist: PH_ENOENT");
  unchanged(m, mk_token(m, "nobody", NULL, PH_AZ_SCOPE_STREAM, 0, &r),
            PH_ENOENT, b, t0, "a token of a missing user: PH_ENOENT");
  unchanged(m, mk_token(m, "alice", "edge9", PH_AZ_SCOPE_AGENT, 0, &r),
            PH_ENOENT, b, t0, "an agent token of a missing agent: PH_ENOENT");
  unchanged(m, mk_policy(m, "edge9", PH_AZ_SUBJECT_USER, "alice", "*", 1, 2,
                         &r),
            PH_ENOENT, b, t0, "a policy of a missing agent: PH_ENOENT");
  unchanged(m, mk_policy(m, "edge1", PH_AZ_SUBJECT_TOKEN,
                         "tok_ffffffffffffffff", "*", 1, 2, &r),
            PH_ENOENT, b, t0, "a policy of a missing token: PH_ENOENT");
  unchanged(m, set_enabled(m, PH_AZ_USER, "nobody", 0, &r), PH_ENOENT, b, t0,
            "an update of a missing user: PH_ENOENT");
  unchanged(m, token_update(m, "tok_ffffffffffffffff", PH_AZ_F_REVOKED, 0, 0,
                            &r),
            PH_ENOENT, b, t0, "a revoke of a missing token: PH_ENOENT");
  unchanged(m, del(m, PH_AZ_POLICY, "pol_ffffffffffffffff", &r), PH_ENOENT,
            b, t0, "a delete of a missing policy: PH_ENOENT");
  unchanged(m, del(m, PH_AZ_USER, "alice", &r), PH_EBUSY, b, t0,
            "a delete of a user that owns agents and users: PH_EBUSY");
  unchanged(m, token_update(m, f.token, PH_AZ_F_SCOPES, PH_AZ_SCOPE_AGENT, 0,
                            &r),
            PH_EINVAL, b, t0,
            "a stream token given the agent scope: PH_EINVAL");
  ph_az_write w = wr(PH_AZ_UPDATE, PH_AZ_USER);
  w.fields = PH_AZ_F_OWNER;
  w.rec.u.user = (ph_az_user){.name = "alice", .owner = "bob"};
  unchanged(m, write_w(m, &w, &r), PH_EINVAL, b, t0,
            "an owner loop (alice owned by bob, whom alice owns): PH_EINVAL");
  /* malformed requests are refused by the call itself */
  w = wr(PH_AZ_CREATE, PH_AZ_USER);
  w.rec.u.user = (ph_az_user){.name = "Not Valid", .enabled = 1};
  unchanged(m, write_w(m, &w, &r), PH_EINVAL, b, t0,
            "a malformed name: write returns PH_EINVAL");
  ok(r.calls == 0, "a refused write never calls back");
  w = wr(PH_AZ_UPDATE, PH_AZ_TOKEN);
  w.fields = PH_AZ_F_ENABLED;
  w.rec.u.token.id = f.token;
  unchanged(m, write_w(m, &w, &r), PH_EINVAL, b, t0,
            "a field that does not belong to tokens: PH_EINVAL");
  w = wr(PH_AZ_CREATE, PH_AZ_POLICY);
  w.rec.u.policy = (ph_az_policy){.agent = "edge1",
                                  .subject_kind = PH_AZ_SUBJECT_USER,
                                  .subject = "alice",
                                  .host_pattern = "*",
                                  .port_min = 10,
                                  .port_max = 9,
                                  .protocol = PH_PROTO_TCP};
  unchanged(m, write_w(m, &w, &r), PH_EINVAL, b, t0,
            "reversed ports: PH_EINVAL");
  w.rec.u.policy.port_max = 10;
  w.rec.u.policy.host_pattern = "Example.COM";
  unchanged(m, write_w(m, &w, &r), PH_EINVAL, b, t0,
            "a pattern not in normal form: PH_EINVAL");
  ph_az_write small = w;
  small.size = 4;
  unchanged(m, write_w(m, &small, &r), PH_EINVAL, b, t0,
            "a request too short: PH_EINVAL");
  is_int(C.st->write(C.ss, NULL, on_write, &r), PH_EINVAL,
         "a NULL write: PH_EINVAL");
  is_int(C.st->write(C.ss, &w, NULL, &r), PH_EINVAL,
         "a write without callback: PH_EINVAL");
  finish(m);
}

static int secret_in(const char *text, const char *bearer) {
  const char *secret = strchr(bearer, '.');
  return secret && strstr(text, secret + 1) != NULL;
}

static void case_tokens(void) {
  ph_mock *m = boot();
  fixture f;
  if (!m || make_fixture(m, &f) < 0) {
    ok(0, "the fixture is made");
    finish(m);
    return;
  }
  ok(strlen(f.bearer) == PH_AZ_ID_LEN + 1 + 43 &&
         strncmp(f.bearer, f.token, PH_AZ_ID_LEN) == 0 &&
         f.bearer[PH_AZ_ID_LEN] == '.',
     "token create returns the bearer <id>.<43 characters> once");
  authres a;
  is_int(authn(m, f.bearer, &a), PH_AZ_AUTH_OK,
         "authenticate: the bearer is known");
  ok(strcmp(a.id, f.token) == 0 && strcmp(a.user, "alice") == 0 &&
         a.ttl_ms > 0,
     "authenticate tells the token's id and user, with a ttl");
  lres l;
  ph_az_list q = {.size = sizeof(q), .kind = PH_AZ_TOKEN, .limit = 10};
  ok(list_l(m, &q, &l) == PH_OK && l.n == 1 && !secret_in(l.text, f.bearer),
     "TM-SEC-3 a token list never shows the secret");
  wres r;
  ph_az_write w = wr(PH_AZ_UPDATE, PH_AZ_TOKEN);
  w.fields = PH_AZ_F_SCOPES;
  w.rec.u.token = (ph_az_token){.id = f.token, .scopes = PH_AZ_SCOPE_STREAM};
  ok(write_w(m, &w, &r) == PH_OK && r.bearer[0] == '\0',
     "an update never shows a bearer");

  char wrong[STR];
  snprintf(wrong, STR, "%s", f.bearer);
  wrong[strlen(wrong) - 2] = wrong[strlen(wrong) - 2] == 'A' ? 'B' : 'A';
  is_int(authn(m, wrong, &a), PH_AZ_AUTH_DENY,
         "authenticate: a wrong secret is denied");
  is_int(authn(m, "tok_0123.short", &a), PH_AZ_AUTH_DENY,
         "authenticate: a malformed bearer is a deny, not an error");
  is_int(authn(m, "", &a), PH_AZ_AUTH_DENY, "authenticate: empty: deny");
  char unknown[STR];
  memcpy(unknown, f.bearer, STR);
  memcpy(unknown, "tok_ffffffffffffffff", PH_AZ_ID_LEN);
  is_int(authn(m, unknown, &a), PH_AZ_AUTH_DENY,
         "authenticate: an unknown id is denied");
  is_int(C.st->authenticate(C.ss, NULL, 0, on_auth, &a), PH_EINVAL,
         "authenticate(NULL) is EINVAL");

  w = wr(PH_AZ_ROTATE, PH_AZ_TOKEN);
  w.rec.u.token.id = f.token;
  ok(write_w(m, &w, &r) == PH_OK && r.bearer[0] &&
         strcmp(r.bearer, f.bearer) != 0 &&
         strncmp(r.bearer, f.token, PH_AZ_ID_LEN) == 0,
     "rotate returns a new bearer for the same id");
  char rotated[STR];
  snprintf(rotated, STR, "%s", r.bearer);
  ok(r.tok.rotated_at > 0, "rotate sets rotated_at");
  is_int(authn(m, f.bearer, &a), PH_AZ_AUTH_DENY,
         "TM-P1-16 the old bearer stops working at the rotation");
  is_int(authn(m, rotated, &a), PH_AZ_AUTH_OK, "the new bearer works");

  ares c;
  is_int(check(m, f.token, "edge1", "www.example.com", 443, &c),
         PH_ACCESS_ALLOW, "the token may open its policy's target");
  ok(token_update(m, f.token, PH_AZ_F_REVOKED, 0, 0, &r) == PH_OK,
     "revoke");
  is_int(authn(m, rotated, &a), PH_AZ_AUTH_DENY,
         "TM-TEST-22 a revoked token does not authenticate");
  is_int(check(m, f.token, "edge1", "www.example.com", 443, &c),
         PH_ACCESS_DENY, "TM-TEST-22 a revoked token may not open");

  /* expiry */
  ok(mk_token(m, "alice", NULL, PH_AZ_SCOPE_STREAM,
              (int64_t)time(NULL) + 3600, &r) == PH_OK,
     "a token expiring in an hour");
  char t2[STR], b2[STR];
  snprintf(t2, STR, "%s", r.id);
  snprintf(b2, STR, "%s", r.bearer);
  is_int(authn(m, b2, &a), PH_AZ_AUTH_OK, "it authenticates before expiry");
  ok(mk_policy(m, "edge1", PH_AZ_SUBJECT_TOKEN, t2, "*", 443, 443, &r) ==
         PH_OK,
     "a policy for it");
  ok(check(m, t2, "edge1", "example.net", 443, &c) == PH_ACCESS_ALLOW &&
         c.res.ttl_ms <= 5000,
     "allowed, for at most the positive TTL");
  ok(token_update(m, t2, PH_AZ_F_EXPIRES, 0, (int64_t)time(NULL) + 2, &r) ==
             PH_OK &&
         check(m, t2, "edge1", "example.net", 443, &c) == PH_ACCESS_ALLOW &&
         c.res.ttl_ms <= 2000,
     "an allow never outlives the token's expiry");
  ok(token_update(m, t2, PH_AZ_F_EXPIRES, 0, (int64_t)time(NULL) - 1, &r) ==
         PH_OK,
     "expire it");
  is_int(authn(m, b2, &a), PH_AZ_AUTH_DENY,
         "an expired token does not authenticate");
  is_int(check(m, t2, "edge1", "example.net", 443, &c), PH_ACCESS_DENY,
         "an expired token may not open");

  /* an agent token and its agent */
  ok(mk_token(m, "alice", "edge1", PH_AZ_SCOPE_AGENT, 0, &r) == PH_OK,
     "an agent token");
  char ab[STR];
  snprintf(ab, STR, "%s", r.bearer);
  is_int(authn(m, ab, &a), PH_AZ_AUTH_OK, "the agent token authenticates");
  ok(set_enabled(m, PH_AZ_AGENT, "edge1", 0, &r) == PH_OK, "disable edge1");
  is_int(authn(m, ab, &a), PH_AZ_AUTH_DENY,
         "an agent token of a disabled agent does not authenticate");
  ok(set_enabled(m, PH_AZ_AGENT, "edge1", 1, &r) == PH_OK, "enable edge1");
  ok(set_enabled(m, PH_AZ_USER, "alice", 0, &r) == PH_OK, "disable alice");
  is_int(authn(m, ab, &a), PH_AZ_AUTH_DENY,
         "a token of a disabled user does not authenticate");
  finish(m);
}

static void case_authorization(void) {
  ph_mock *m = boot();
  fixture f;
  if (!m || make_fixture(m, &f) < 0) {
    ok(0, "the fixture is made");
    finish(m);
    return;
  }
  ares c;
  wres r;
  is_int(check(m, f.token, "edge1", "www.example.com", 443, &c),
         PH_ACCESS_ALLOW, "TM-P1-1 a user policy allows a name below it");
  ok(c.res.code == PH_OPEN_OK && c.res.ttl_ms == 5000 &&
         c.res.revision == rev_now(NULL),
     "TM-P1-6 an allow: OK, the positive TTL, the current revision");
  is_int(check(m, f.token, "edge1", "example.com", 443, &c), PH_ACCESS_DENY,
         "*.example.com does not cover example.com itself");
  ok(c.res.code == PH_OPEN_FORBIDDEN && c.res.ttl_ms == 1000,
     "TM-P1-6 a deny: FORBIDDEN, the negative TTL");
  is_int(check(m, f.token, "edge1", "www.example.com", 80, &c),
         PH_ACCESS_DENY, "another port: deny");
  is_int(check(m, f.token, "edge2", "www.example.com", 443, &c),
         PH_ACCESS_DENY, "an unknown agent: deny");
  is_int(check(m, f.token, NULL, "www.example.com", 443, &c), PH_ACCESS_DENY,
         "no agent named: deny");
  is_int(check(m, NULL, "edge1", "www.example.com", 443, &c), PH_ACCESS_DENY,
         "an anonymous client: deny");
  is_int(check(m, "tok_ffffffffffffffff", "edge1", "www.example.com", 443,
               &c),
         PH_ACCESS_DENY, "an unknown token: deny");
  is_int(check(m, "alice", "edge1", "www.example.com", 443, &c),
         PH_ACCESS_DENY, "a principal that is not a token id: deny");
  is_int(check(m, f.token, "edge1", "WWW.example.com", 443, &c), PH_EINVAL,
         "TM-P1-4 a host not in normal form is refused by check_open");
  is_int(check(m, f.token, "edge1", "www.example.com.", 443, &c), PH_EINVAL,
         "TM-P1-4 a trailing dot is refused by check_open");
  is_int(check(m, f.token, "edge1", "www.example.com", 0, &c), PH_EINVAL,
         "port 0 is refused by check_open");

  ok(set_enabled(m, PH_AZ_AGENT, "edge1", 0, &r) == PH_OK, "disable edge1");
  is_int(check(m, f.token, "edge1", "www.example.com", 443, &c),
         PH_ACCESS_DENY, "TM-TEST-22 a disabled agent: deny");
  ok(set_enabled(m, PH_AZ_AGENT, "edge1", 1, &r) == PH_OK, "enable edge1");
  is_int(check(m, f.token, "edge1", "www.example.com", 443, &c),
         PH_ACCESS_ALLOW, "enabled again: allow");

  /* bob (owned by alice) */
  ok(mk_token(m, "bob", NULL, PH_AZ_SCOPE_STREAM, 0, &r) == PH_OK,
     "a token for bob");
  char bt[STR];
  snprintf(bt, STR, "%s", r.id);
  is_int(check(m, bt, "edge1", "www.example.com", 443, &c), PH_ACCESS_DENY,
         "alice's user policy does not cover bob");
  ok(mk_policy(m, "edge1", PH_AZ_SUBJECT_TOKEN, bt, "10.0.0.0/8", 22, 23,
               &r) == PH_OK,
     "a token policy for bob: 10.0.0.0/8 ports 22-23");
  char bp[STR];
  snprintf(bp, STR, "%s", r.id);
  is_int(check(m, bt, "edge1", "10.1.2.3", 23, &c), PH_ACCESS_ALLOW,
         "a CIDR policy allows an address inside it");
  is_int(check(m, bt, "edge1", "11.1.2.3", 23, &c), PH_ACCESS_DENY,
         "an address outside the CIDR: deny");
  is_int(check(m, bt, "edge1", "10.1.2.3", 24, &c), PH_ACCESS_DENY,
         "a port above the range: deny");
  ok(set_enabled(m, PH_AZ_USER, "alice", 0, &r) == PH_OK,
     "disable alice (bob's owner)");
  is_int(check(m, bt, "edge1", "10.1.2.3", 23, &c), PH_ACCESS_DENY,
         "TM-P1-17 a user whose owner is disabled: deny");
  is_int(check(m, f.token, "edge1", "www.example.com", 443, &c),
         PH_ACCESS_DENY, "TM-P1-17 a disabled user: deny");
  ok(set_enabled(m, PH_AZ_USER, "alice", 1, &r) == PH_OK, "restore alice");
  is_int(check(m, bt, "edge1", "10.1.2.3", 23, &c), PH_ACCESS_ALLOW,
         "restored: allow");
  ph_az_write w = wr(PH_AZ_UPDATE, PH_AZ_POLICY);
  w.fields = PH_AZ_F_PORTS;
  w.rec.u.policy = (ph_az_policy){.id = bp, .port_min = 22, .port_max = 22};
  ok(write_w(m, &w, &r) == PH_OK, "narrow bob's policy to port 22");
  is_int(check(m, bt, "edge1", "10.1.2.3", 23, &c), PH_ACCESS_DENY,
         "TM-TEST-22 after a policy update the old port is denied");
  ok(del(m, PH_AZ_POLICY, bp, &r) == PH_OK, "delete bob's policy");
  is_int(check(m, bt, "edge1", "10.1.2.3", 22, &c), PH_ACCESS_DENY,
         "a deleted policy no longer allows");
  ok(mk_policy(m, "edge1", PH_AZ_SUBJECT_USER, "bob", "2001:db8::/32", 443,
               443, &r) == PH_OK,
     "an IPv6 CIDR policy for bob");
  is_int(check(m, bt, "edge1", "2001:db8::7", 443, &c), PH_ACCESS_ALLOW,
         "an IPv6 address in the CIDR: allow");
  ok(mk_token(m, "alice", "edge1", PH_AZ_SCOPE_AGENT, 0, &r) == PH_OK,
     "an agent token for alice");
  char at[STR];
  snprintf(at, STR, "%s", r.id);
  ok(mk_policy(m, "edge1", PH_AZ_SUBJECT_TOKEN, at, "*", 1, 65535, &r) ==
         PH_OK,
     "a policy for the agent token");
  is_int(check(m, at, "edge1", "example.org", 443, &c), PH_ACCESS_DENY,
         "an agent token (no stream scope) may not open streams");
  ok(del(m, PH_AZ_TOKEN, bt, &r) == PH_OK, "delete bob's token");
  is_int(check(m, bt, "edge1", "2001:db8::7", 443, &c), PH_ACCESS_DENY,
         "a deleted token: deny");
  finish(m);
}

static void case_lists(void) {
  ph_mock *m = boot();
  if (!m)
    return;
  wres r;
  const char *names[] = {"u03", "u01", "u05", "u02", "u04"};
  for (int i = 0; i < 5; i++)
    mk_user(m, names[i], i > 2 ? "u01" : NULL, &r);
  mk_agent(m, "a1", "u01", &r);
  mk_agent(m, "a2", "u02", &r);
  for (int i = 0; i < 3; i++)
    mk_token(m, "u01", NULL, PH_AZ_SCOPE_STREAM, 0, &r);
  mk_token(m, "u02", NULL, PH_AZ_SCOPE_STREAM, 0, &r);
  mk_token(m, "u02", "a2", PH_AZ_SCOPE_AGENT, 0, &r);
  mk_policy(m, "a1", PH_AZ_SUBJECT_USER, "u01", "*", 1, 65535, &r);
  mk_policy(m, "a2", PH_AZ_SUBJECT_USER, "u02", "*", 1, 65535, &r);
  mk_policy(m, "a2", PH_AZ_SUBJECT_USER, "u03", "*", 1, 65535, &r);

  lres l;
  ph_az_list q = {.size = sizeof(q), .kind = PH_AZ_USER, .limit = 2};
  ok(list_l(m, &q, &l) == PH_OK && l.n == 2 && l.more &&
         strcmp(l.keys[0], "u01") == 0 && strcmp(l.keys[1], "u02") == 0,
     "users, first page of 2, in name order, more");
  ok(l.revision == rev_now(NULL), "a page tells the revision it was read at");
  q.after = "u02";
  ok(list_l(m, &q, &l) == PH_OK && l.n == 2 && l.more &&
         strcmp(l.keys[0], "u03") == 0,
     "the second page starts after the cursor");
  q.after = "u04";
  ok(list_l(m, &q, &l) == PH_OK && l.n == 1 && !l.more &&
         strcmp(l.keys[0], "u05") == 0,
     "the last page: no more");
  q.after = "u05";
  ok(list_l(m, &q, &l) == PH_OK && l.n == 0 && !l.more,
     "after the last: empty");
  q.after = NULL;
  q.limit = 5;
  ok(list_l(m, &q, &l) == PH_OK && l.n == 5 && !l.more,
     "limit equal to the count: no more");
  q.user = "u01";
  ok(list_l(m, &q, &l) == PH_OK && l.n == 2 && strcmp(l.keys[0], "u02") == 0 &&
         strcmp(l.keys[1], "u04") == 0,
     "users owned by u01");
  ph_az_list t = {.size = sizeof(t), .kind = PH_AZ_TOKEN, .limit = 100,
                  .user = "u01"};
  ok(list_l(m, &t, &l) == PH_OK && l.n == 3, "tokens of u01");
  t.user = NULL;
  t.agent = "a2";
  ok(list_l(m, &t, &l) == PH_OK && l.n == 1, "agent tokens of a2");
  t.agent = NULL;
  t.limit = 2;
  ok(list_l(m, &t, &l) == PH_OK && l.n == 2 && l.more &&
         strcmp(l.keys[0], l.keys[1]) < 0,
     "tokens in id order, paged");
  char after[STR];
  snprintf(after, STR, "%s", l.keys[1]);
  t.after = after;
  t.limit = 100;
  ok(list_l(m, &t, &l) == PH_OK && l.n == 3 && strcmp(l.keys[0], after) > 0,
     "the next token page after the cursor");
  ph_az_list p = {.size = sizeof(p), .kind = PH_AZ_POLICY, .limit = 100,
                  .agent = "a2"};
  ok(list_l(m, &p, &l) == PH_OK && l.n == 2, "policies of a2");
  ph_az_list a = {.size = sizeof(a), .kind = PH_AZ_AGENT, .limit = 100,
                  .user = "u02"};
  ok(list_l(m, &a, &l) == PH_OK && l.n == 1 && strcmp(l.keys[0], "a2") == 0,
     "agents owned by u02");
  ph_az_list bad = {.size = sizeof(bad), .kind = PH_AZ_USER, .limit = 0};
  is_int(list_l(m, &bad, &l), PH_EINVAL, "limit 0: PH_EINVAL");
  bad.limit = PH_AZ_LIST_MAX + 1;
  is_int(list_l(m, &bad, &l), PH_EINVAL, "limit above 1000: PH_EINVAL");
  bad.limit = 1;
  bad.agent = "a1";
  is_int(list_l(m, &bad, &l), PH_EINVAL,
         "an agent filter on users: PH_EINVAL");
  bad.kind = 9;
  is_int(list_l(m, &bad, &l), PH_EINVAL, "an unknown kind: PH_EINVAL");
  finish(m);
}

static void case_cancel_and_bound(void) {
  ph_mock *m = boot_pending(2, 1);
  fixture f;
  if (!m || make_fixture(m, &f) < 0) {
    ok(0, "the fixture is made (max_pending 2)");
    finish(m);
    return;
  }
  ares a[3];
  memset(a, 0, sizeof(a));
  ph_access_request q = {.size = sizeof(q),
                         .protocol = PH_PROTO_TCP,
                         .port = 443,
                         .host = "www.example.com",
                         .principal = f.token,
                         .agent = "edge1"};
  int64_t id0 = C.ac->check_open(C.as, &q, on_access, &a[0]);
  int64_t id1 = C.ac->check_open(C.as, &q, on_access, &a[1]);
  int64_t id2 = C.ac->check_open(C.as, &q, on_access, &a[2]);
  ok(id0 > 0 && id1 > 0 && id2 > 0 && id0 != id1 && id1 != id2,
     "three checks accepted, distinct ids");
  is_int(C.ac->cancel(C.as, id0), PH_OK, "cancel of a check in flight");
  is_int(C.ac->cancel(C.as, id0), PH_ENOENT, "a second cancel: PH_ENOENT");
  wait_calls(m, &a[2].calls, 1);
  wait_calls(m, &a[1].calls, 1);
  ph_mock_run_for(m, 100);
  is_int(a[0].calls, 0, "a cancelled check is never answered");
  ok(a[1].calls == 1 && a[1].res.verdict == PH_ACCESS_ALLOW,
     "the second check, within the bound, is answered");
  ok(a[2].calls == 1 && a[2].res.verdict == PH_ACCESS_UNAVAILABLE &&
         a[2].res.code == PH_OPEN_QUEUE_FULL && a[2].res.ttl_ms == 0,
     "beyond max_pending: UNAVAILABLE queue_full, not to be kept");
  is_int(C.ac->cancel(C.as, id1), PH_ENOENT,
         "cancel of an answered check: PH_ENOENT");

  /* the bound for store calls */
  wres w[3];
  memset(w, 0, sizeof(w));
  ph_az_write cw = wr(PH_AZ_CREATE, PH_AZ_USER);
  const char *nm[] = {"p1", "p2", "p3"};
  for (int i = 0; i < 3; i++) {
    cw.rec.u.user = (ph_az_user){.name = nm[i], .enabled = 1};
    C.st->write(C.ss, &cw, on_write, &w[i]);
  }
  wait_calls(m, &w[0].calls, 1);
  wait_calls(m, &w[1].calls, 1);
  wait_calls(m, &w[2].calls, 1);
  ok(w[0].status == PH_OK && w[1].status == PH_OK &&
         w[2].status == PH_EFULL,
     "a store call beyond max_pending fails with PH_EFULL");
  is_int(count(m, PH_AZ_USER), 4, "and changed nothing (2 + 2 users)");
  lres l;
  ph_az_list lq = {.size = sizeof(lq), .kind = PH_AZ_USER, .limit = 10};
  int64_t lid = C.st->list(C.ss, &lq, on_list, &l);
  memset(&l, 0, sizeof(l));
  is_int(C.st->cancel(C.ss, lid), PH_OK, "cancel of a list");
  ph_mock_run_for(m, 200);
  is_int(l.calls, 0, "a cancelled list is never answered");
  is_int(C.st->cancel(C.ss, 999999), PH_ENOENT, "cancel of an unknown id");
  finish(m);
}

static int destroyed_calls, answered_twice, no_db_answers;
static int per_call[16];
static void on_any_access(void *arg, const ph_access_result *res) {
  (void)res;
  int *n = arg;
  answered_twice += ++*n > 1;
  destroyed_calls++;
  no_db_answers += n == &per_call[9];
}
static void on_any_write(void *arg, const ph_az_write_result *res) {
  (void)res;
  int *n = arg;
  answered_twice += ++*n > 1;
  destroyed_calls++;
}

static void case_destroy_in_flight(void) {
  ph_mock *m = boot();
  fixture f;
  if (!m || make_fixture(m, &f) < 0) {
    ok(0, "the fixture is made");
    finish(m);
    return;
  }
  ph_access_request q = {.size = sizeof(q),
                         .protocol = PH_PROTO_TCP,
                         .port = 443,
                         .host = "www.example.com",
                         .principal = f.token,
                         .agent = "edge1"};
  destroyed_calls = answered_twice = no_db_answers = 0;
  memset(per_call, 0, sizeof(per_call));
  int accepted = 0;
  for (int i = 0; i < 8; i++)
    accepted += C.ac->check_open(C.as, &q, on_any_access, &per_call[i]) > 0;
  ph_az_write w = wr(PH_AZ_CREATE, PH_AZ_USER);
  w.rec.u.user = (ph_az_user){.name = "late", .enabled = 1};
  accepted += C.st->write(C.ss, &w, on_any_write, &per_call[8]) > 0;
  q.principal = "not-a-token"; /* answered without the database */
  accepted += C.ac->check_open(C.as, &q, on_any_access, &per_call[9]) > 0;
  is_int(accepted, 10, "ten calls in flight");
  /* No run: every call is unanswered when the host shuts down. The host
   * finishes the helper jobs before it destroys anything (their answers
   * may still come, once each); what the provider holds itself at destroy
   * is dropped without a call. ASan's leak check sees the rest. */
  ph_mock_free(m);
  ok(destroyed_calls <= 9 && answered_twice == 0,
     "a shutdown with calls in flight answers each at most once");
  is_int(no_db_answers, 0,
         "an answer still waiting in the provider at destroy is dropped");
}

static void case_faults(void) {
  if (!E->revision_delete || !E->revision_set) {
    ok(1, "# SKIP no revision fault hooks");
    return;
  }
  ph_mock *m = boot();
  fixture f;
  if (!m || make_fixture(m, &f) < 0) {
    ok(0, "the fixture is made");
    finish(m);
    return;
  }
  wres r;
  ares c;
  uint64_t b = rev_now(NULL);
  size_t t0[5];
  totals(m, t0);
  if (E->break_db) {
    ok(E->break_db(E->arg) == 0, "the database is broken");
    int rc = mk_user(m, "zed", NULL, &r);
    ok(rc == PH_AZ_EUNAVAILABLE, "TM-P1-21 a write on a broken database: "
                                 "PH_AZ_EUNAVAILABLE");
    if (rc != PH_AZ_EUNAVAILABLE)
      printf("#   got %d\n", rc);
    int v = check(m, f.token, "edge1", "www.example.com", 443, &c);
    ok(v == PH_ACCESS_UNAVAILABLE && c.res.ttl_ms == 0 &&
           c.res.code == PH_OPEN_INTERNAL_ERROR,
       "a check on a broken database: UNAVAILABLE internal_error, ttl 0");
    /* TM-P1-31: failed reads past the staleness bound (5 s after the last
     * good one) make the revision unhealthy; waited for, at most 10 s. */
    int stale = 0;
    for (int i = 0; i < 2 * ROUNDS && !stale; i++) {
      int rc2;
      rev_now(&rc2);
      stale = rc2 == PH_ESTATE;
      if (!stale)
        ph_mock_run_for(m, 10);
    }
    ok(stale, "TM-P1-31 failed re-reads past 5 s: revision() PH_ESTATE");
    /* Readiness follows at the next failed re-read (200 ms at most). */
    for (int i = 0; i < ROUNDS && ph_mock_ready(m); i++)
      ph_mock_run_for(m, 10);
    ok(!ph_mock_ready(m), "TM-P1-31 and readiness fails");
    ok(E->repair_db(E->arg) == 0, "the database is repaired");
    ph_mock_run_for(m, 300);
    size_t t1[5];
    totals(m, t1);
    ok(same_totals(t0, t1) && wait_revision_rc(m, PH_OK) &&
           rev_now(NULL) == b,
       "TM-P1-21 the failed write changed neither data nor revision");
    is_int(check(m, f.token, "edge1", "www.example.com", 443, &c),
           PH_ACCESS_ALLOW, "after the repair: allow again");
  }
  /* a write by another process is picked up by the re-read (TM-P1-6) */
  if (E->revision_bump) {
    ok(E->revision_bump(E->arg) == 0, "another process raises the revision");
    int seen = 0;
    for (int i = 0; i < ROUNDS && !seen; i++) {
      ph_mock_run_for(m, 10);
      seen = rev_now(NULL) == b + 1;
    }
    ok(seen, "TM-P1-6 the revision re-read sees the other process's write");
    b = rev_now(NULL);
  }
  ok(E->revision_delete(E->arg) == 0, "the revision row is deleted");
  ok(wait_revision_rc(m, PH_ESTATE),
     "TM-P1-30 TM-TEST-24 a missing revision row: revision() PH_ESTATE");
  ok(!ph_mock_ready(m), "TM-P1-30 and readiness fails");
  is_int(check(m, f.token, "edge1", "www.example.com", 443, &c),
         PH_ACCESS_UNAVAILABLE, "TM-TEST-24 a check then fails closed");
  totals(m, t0);
  unchanged(m, mk_user(m, "zed", NULL, &r), PH_AZ_EUNAVAILABLE, 0, t0,
            "TM-P1-30 a write without the revision row");
  ok(E->revision_set(E->arg, (int64_t)b) == 0, "the row is back");
  ok(wait_revision_rc(m, PH_OK) && ph_mock_ready(m),
     "healthy and ready again at the same revision");
  ok(E->revision_set(E->arg, (int64_t)b - 1) == 0,
     "the revision is set lower");
  ok(wait_revision_rc(m, PH_ESTATE),
     "TM-P1-30 TM-TEST-24 a revision that went backwards: PH_ESTATE");
  ok(!ph_mock_ready(m), "and readiness fails");
  ok(E->revision_set(E->arg, INT64_MAX) == 0 &&
         wait_revision_rc(m, PH_OK),
     "at INT64_MAX the revision is healthy");
  uint64_t top = rev_now(NULL);
  totals(m, t0);
  int rc = mk_user(m, "zed", NULL, &r);
  ok(rc == PH_AZ_EUNAVAILABLE,
     "TM-P1-30 TM-TEST-24 a write that would overflow the revision fails");
  size_t t1[5];
  totals(m, t1);
  ok(same_totals(t0, t1) && rev_now(NULL) == top,
     "the overflowing write changed nothing");
  ok(E->revision_set(E->arg, -5) == 0 && wait_revision_rc(m, PH_ESTATE),
     "TM-P1-30 a negative revision does not fit: PH_ESTATE");
  finish(m);
}

int store_contract_run(const store_contract_env *env) {
  E = env;
  int before = tap_failed_;
  case_start();
  case_writes_raise_revision();
  case_write_errors();
  case_tokens();
  case_authorization();
  case_lists();
  case_cancel_and_bound();
  case_destroy_in_flight();
  case_faults();
  return tap_failed_ - before;
}
