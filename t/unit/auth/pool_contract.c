/* SPDX-License-Identifier: BSD-2-Clause */
/* The pool.store contract suite (pool_contract.h). #included after
 * store_contract.c, whose harness (wait_calls, err, in_call) it uses. */
#include "pool_contract.h"

#include <proxyhost/pool_store.h>

/* ---- the consumer ------------------------------------------------------ */

static struct {
  const ph_api *api;
  ph_ctx *ctx;
  const char *provider;
  const ph_pool_store_v1 *st;
  void *ss;
} P;

static int pclient_init(ph_ctx *ctx, const ph_api *a, void **state) {
  P.api = a;
  P.ctx = ctx;
  P.st = NULL;
  *state = NULL;
  return PH_OK;
}

static int pclient_start(void *state) {
  (void)state;
  P.st = P.api->service_get_named(P.ctx, PH_POOL_STORE_SERVICE, P.provider,
                                  PH_POOL_STORE_MAJOR, 0, &P.ss);
  return P.st ? PH_OK : PH_ENOENT;
}

MOCK_TEST_MODULE(pclient_mod, "pool_contract_client", "1.0",
                 .requires = MOCK_TEST_NAMES(PH_POOL_STORE_SERVICE),
                 .init = pclient_init, .start = pclient_start);

static const pool_contract_env *PE;

static uint64_t prev_now(int *rc) {
  uint64_t v = 0;
  int r = P.st->revision(P.ss, &v);
  if (rc)
    *rc = r;
  return r == PH_OK ? v : 0;
}

/* ---- results ------------------------------------------------------------ */

typedef struct pwres {
  int calls, status, kind;
  uint64_t revision, rev_cb;
  char detail[STR];
  ph_pool_proxy_row proxy;
  ph_pool_route_row route;
  ph_pool_credential_ref cred;
} pwres;

static void on_pwrite(void *arg, const ph_pool_write_result *res) {
  pwres *w = arg;
  inside_calls += in_call;
  w->calls++;
  w->status = res->status;
  w->kind = res->kind;
  w->revision = res->revision;
  w->rev_cb = prev_now(NULL);
  snprintf(w->detail, STR, "%s", res->detail ? res->detail : "");
  if (res->status == PH_OK && res->kind == PH_POOL_KIND_PROXY)
    w->proxy = res->u.proxy;
  if (res->status == PH_OK && res->kind == PH_POOL_KIND_ROUTE)
    w->route = res->u.route;
  if (res->status == PH_OK && res->kind == PH_POOL_KIND_CREDENTIAL)
    w->cred = res->u.credential;
}

#define SNAP_KEEP 16
typedef struct psnap {
  int calls, status;
  uint64_t revision, rev_cb;
  size_t n_routes, n_proxies, n_creds;
  uint32_t positions[SNAP_KEEP];
  char rules[SNAP_KEEP][PH_POOL_ID_MAX + 1];
  ph_pool_proxy_row proxies[SNAP_KEEP];
  ph_pool_credential_ref creds[SNAP_KEEP];
  int refs_resolved; /* every proxy's secret_ref is among credentials */
  int sorted;        /* routes by position, proxies and refs by key */
} psnap;

static void on_psnap(void *arg, const ph_pool_snapshot *s) {
  psnap *x = arg;
  inside_calls += in_call;
  x->calls++;
  x->status = s->status;
  x->revision = s->revision;
  x->rev_cb = prev_now(NULL);
  x->n_routes = s->n_routes;
  x->n_proxies = s->n_proxies;
  x->n_creds = s->n_credentials;
  x->sorted = 1;
  for (size_t i = 0; i < s->n_routes; i++) {
    if (i < SNAP_KEEP) {
      x->positions[i] = s->routes[i].position;
      snprintf(x->rules[i], sizeof(x->rules[i]), "%s", s->routes[i].rule_id);
    }
    if (i && s->routes[i - 1].position >= s->routes[i].position)
      x->sorted = 0;
  }
  x->refs_resolved = 1;
  for (size_t i = 0; i < s->n_proxies; i++) {
    const ph_pool_proxy_row *p = &s->proxies[i];
    if (i < SNAP_KEEP)
      x->proxies[i] = *p;
    if (i && strcmp(s->proxies[i - 1].proxy_id, p->proxy_id) >= 0)
      x->sorted = 0;
    if (!p->secret_ref[0])
      continue;
    int found = 0;
    for (size_t j = 0; j < s->n_credentials; j++)
      if (strcmp(s->credentials[j].secret_ref, p->secret_ref) == 0 &&
          s->credentials[j].credential_version == p->credential_version)
        found = 1;
    if (!found)
      x->refs_resolved = 0;
  }
  for (size_t i = 0; i < s->n_credentials; i++) {
    if (i < SNAP_KEEP)
      x->creds[i] = s->credentials[i];
    if (i && strcmp(s->credentials[i - 1].secret_ref,
                    s->credentials[i].secret_ref) >= 0)
      x->sorted = 0;
  }
}

typedef struct plres {
  int calls, status, more;
  size_t n;
  uint64_t revision;
  char keys[SNAP_KEEP][PH_POOL_SECRET_REF_MAX + 1];
  uint32_t positions[SNAP_KEEP];
} plres;

static void on_plist(void *arg, const ph_pool_list_result *res) {
  plres *l = arg;
  inside_calls += in_call;
  l->calls++;
  l->status = res->status;
  l->more = res->more;
  l->n = res->n;
  l->revision = res->revision;
  for (size_t i = 0; i < res->n && i < SNAP_KEEP; i++) {
    const char *k = res->kind == PH_POOL_KIND_PROXY
                        ? res->proxies[i].proxy_id
                    : res->kind == PH_POOL_KIND_ROUTE
                        ? res->routes[i].rule_id
                        : res->credentials[i].secret_ref;
    snprintf(l->keys[i], sizeof(l->keys[i]), "%s", k);
    if (res->kind == PH_POOL_KIND_ROUTE)
      l->positions[i] = res->routes[i].position;
  }
}

/* ---- harness ------------------------------------------------------------- */

static ph_mock *pboot(void) {
  const char *text = PE->base->setup(PE->base->arg, 64);
  if (!text)
    return NULL;
  P.provider = PE->base->provider;
  err[0] = '\0';
  ph_mock *m = mock_test_boot(text, &pclient_mod, err, sizeof err);
  if (!m) {
    printf("# %s\n", err);
    return NULL;
  }
  int rc = PH_ESTATE;
  for (int i = 0; i < ROUNDS && rc != PH_OK; i++) {
    prev_now(&rc);
    if (rc != PH_OK)
      ph_mock_run_for(m, 10);
  }
  if (rc != PH_OK) {
    printf("# the provider never read its pool revision\n");
    ph_mock_stop(m);
    ph_mock_free(m);
    return NULL;
  }
  return m;
}

static void pfinish(ph_mock *m) {
  if (!m)
    return;
  ph_mock_stop(m);
  ph_mock_free(m);
}

static int pw(ph_mock *m, const ph_pool_write *w, pwres *r) {
  memset(r, 0, sizeof(*r));
  in_call = 1;
  int64_t id = P.st->write(P.ss, w, on_pwrite, r);
  in_call = 0;
  if (id <= 0)
    return (int)id;
  wait_calls(m, &r->calls, 1);
  return r->calls == 1 ? r->status : -999;
}

static int psnapshot(ph_mock *m, psnap *x) {
  memset(x, 0, sizeof(*x));
  in_call = 1;
  int64_t id = P.st->snapshot(P.ss, on_psnap, x);
  in_call = 0;
  if (id <= 0)
    return (int)id;
  wait_calls(m, &x->calls, 1);
  return x->calls == 1 ? x->status : -999;
}

static int plist(ph_mock *m, const ph_pool_list *l, plres *r) {
  memset(r, 0, sizeof(*r));
  in_call = 1;
  int64_t id = P.st->list(P.ss, l, on_plist, r);
  in_call = 0;
  if (id <= 0)
    return (int)id;
  wait_calls(m, &r->calls, 1);
  return r->calls == 1 ? r->status : -999;
}

static ph_pool_write pwr(int action, int kind) {
  ph_pool_write w;
  memset(&w, 0, sizeof(w));
  w.size = sizeof(w);
  w.action = action;
  w.kind = kind;
  return w;
}

static ph_pool_proxy_row proxy_row(const char *id, const char *ref) {
  ph_pool_proxy_row p;
  memset(&p, 0, sizeof(p));
  snprintf(p.proxy_id, sizeof(p.proxy_id), "%s", id);
  p.protocol = PH_POOL_UPSTREAM_HTTP_CONNECT;
  snprintf(p.host, sizeof(p.host), "proxy-%s.example.net", id);
  p.port = 3128;
  snprintf(p.groups[0], sizeof(p.groups[0]), "%s", "residential");
  snprintf(p.groups[1], sizeof(p.groups[1]), "%s", "eu");
  p.n_groups = 2;
  snprintf(p.zone, sizeof(p.zone), "%s", "eu-west-1a");
  p.capacity = 100;
  p.weight = 10;
  snprintf(p.secret_ref, sizeof(p.secret_ref), "%s", ref ? ref : "");
  p.admin_state = PH_POOL_ADMIN_ACTIVE;
  return p;
}

static ph_pool_route_row route_row(const char *id, uint32_t position) {
  ph_pool_route_row r;
  memset(&r, 0, sizeof(r));
  snprintf(r.rule_id, sizeof(r.rule_id), "%s", id);
  r.position = position;
  r.enabled = 1;
  snprintf(r.host_pattern, sizeof(r.host_pattern), "%s", "*.example.com");
  r.port_min = 443;
  r.port_max = 443;
  snprintf(r.target_group, sizeof(r.target_group), "%s", "residential");
  snprintf(r.strategy, sizeof(r.strategy), "%s", "round_robin");
  r.on_unavailable = PH_POOL_ON_UNAVAILABLE_WAIT;
  r.wait_timeout_ms = 2000;
  snprintf(r.sticky_key, sizeof(r.sticky_key), "%s", "header:X-Session");
  return r;
}

static int mk_cred(ph_mock *m, const char *ref, pwres *r) {
  ph_pool_write w = pwr(PH_POOL_CREATE, PH_POOL_KIND_CREDENTIAL);
  snprintf(w.u.credential.secret_ref, sizeof(w.u.credential.secret_ref),
           "%s", ref);
  return pw(m, &w, r);
}

static int mk_proxy(ph_mock *m, const char *id, const char *ref, pwres *r) {
  ph_pool_write w = pwr(PH_POOL_CREATE, PH_POOL_KIND_PROXY);
  w.u.proxy = proxy_row(id, ref);
  return pw(m, &w, r);
}

static int mk_route(ph_mock *m, const char *id, uint32_t pos, pwres *r) {
  ph_pool_write w = pwr(PH_POOL_CREATE, PH_POOL_KIND_ROUTE);
  w.u.route = route_row(id, pos);
  return pw(m, &w, r);
}

/* The counts of the three kinds and the revision, by a snapshot. */
typedef struct ptotals {
  size_t routes, proxies, creds;
  uint64_t revision;
  int ok;
} ptotals;

static ptotals ptotal(ph_mock *m) {
  psnap x;
  ptotals t = {0};
  t.ok = psnapshot(m, &x) == PH_OK;
  t.routes = x.n_routes;
  t.proxies = x.n_proxies;
  t.creds = x.n_creds;
  t.revision = x.revision;
  return t;
}

static int same(ptotals a, ptotals b) {
  return a.ok && b.ok && a.routes == b.routes && a.proxies == b.proxies &&
         a.creds == b.creds && a.revision == b.revision;
}

/* A write that committed: PH_OK, revision + 1, revision() already so. */
static void raised(int rc, const pwres *r, uint64_t before,
                   const char *name) {
  char t[300];
  snprintf(t, sizeof(t), "CP-1-19 %s: committed, the pool revision +1, "
                         "revision() already so in the callback",
           name);
  ok(rc == PH_OK && r->revision == before + 1 && r->rev_cb == r->revision,
     t);
  if (rc != PH_OK)
    printf("#   status %d detail '%s'\n", rc, r->detail);
}

/* A write refused with want: nothing changed, a detail given. */
static void refused(ph_mock *m, int rc, const pwres *r, int want,
                    ptotals before, const char *detail_has,
                    const char *name) {
  char t[300];
  snprintf(t, sizeof(t), "%s: refused (%d)", name, want);
  ok(rc == want, t);
  if (rc != want)
    printf("#   got %d detail '%s'\n", rc, r->detail);
  if (detail_has) {
    snprintf(t, sizeof(t), "%s: the detail names it (\"%s\")", name,
             detail_has);
    ok(strstr(r->detail, detail_has) != NULL, t);
    if (!strstr(r->detail, detail_has))
      printf("#   detail '%s'\n", r->detail);
  }
  snprintf(t, sizeof(t), "%s: neither data nor revision changed", name);
  ok(same(before, ptotal(m)), t);
}

/* ---- cases ------------------------------------------------------------------ */

static void pcase_writes(void) {
  ph_mock *m = pboot();
  if (!m) {
    ok(0, "pool.store: a provider starts and reads its pool revision");
    return;
  }
  ok(1, "pool.store: the provider registers the service and its revision "
        "is readable");
  pwres r;
  int rc;
  uint64_t b = prev_now(NULL);
  ok(b >= 1, "a fresh pool's revision is at least 1");
  psnap x;
  ok(psnapshot(m, &x) == PH_OK && x.n_routes == 0 && x.n_proxies == 0 &&
         x.n_creds == 0 && x.revision == b,
     "CP-1-19 a fresh pool's snapshot: empty, at the current revision");

  rc = mk_cred(m, "upstream-a", &r);
  raised(rc, &r, b, "credential add");
  is_int(r.cred.credential_version, 1, "a new credential reference: version 1");
  b = r.revision;
  rc = mk_proxy(m, "p1", "upstream-a", &r);
  raised(rc, &r, b, "proxy add");
  ok(r.kind == PH_POOL_KIND_PROXY && r.proxy.n_groups == 2 &&
         strcmp(r.proxy.groups[0], "eu") == 0 &&
         strcmp(r.proxy.groups[1], "residential") == 0 &&
         r.proxy.credential_version == 1 && r.proxy.port == 3128 &&
         r.proxy.admin_state == PH_POOL_ADMIN_ACTIVE,
     "the proxy as stored: groups sorted, its credential's version");
  b = r.revision;
  ptotals t0 = ptotal(m);
  rc = mk_proxy(m, "p2", "no-such-ref", &r);
  refused(m, rc, &r, PH_ENOENT, t0, "secret_ref",
          "CP-8-4 a proxy naming an unknown secret_ref");
  rc = mk_proxy(m, "p1", NULL, &r);
  refused(m, rc, &r, PH_EEXIST, t0, "proxy_id", "a proxy_id taken");
  rc = mk_proxy(m, "p2", NULL, &r);
  raised(rc, &r, b, "a proxy without credentials");
  b = r.revision;
  rc = mk_route(m, "r20", 20, &r);
  raised(rc, &r, b, "route add");
  ok(r.route.position == 20 && r.route.wait_timeout_ms == 2000 &&
         strcmp(r.route.sticky_key, "header:X-Session") == 0,
     "CP-1-24 the route as stored, wait_timeout with WAIT");
  b = r.revision;
  t0 = ptotal(m);
  rc = mk_route(m, "r21", 20, &r);
  refused(m, rc, &r, PH_EEXIST, t0, "position", "a position taken");
  rc = mk_route(m, "r20", 30, &r);
  refused(m, rc, &r, PH_EEXIST, t0, "rule_id", "a rule_id taken");

  ph_pool_write w = pwr(PH_POOL_UPDATE, PH_POOL_KIND_PROXY);
  w.u.proxy = proxy_row("p2", "upstream-a");
  w.u.proxy.capacity = 7;
  w.u.proxy.n_groups = 1;
  rc = pw(m, &w, &r);
  raised(rc, &r, b, "proxy update");
  ok(r.proxy.capacity == 7 && r.proxy.n_groups == 1 &&
         strcmp(r.proxy.secret_ref, "upstream-a") == 0,
     "the update replaced the fields and the groups");
  b = r.revision;
  w = pwr(PH_POOL_SET_STATE, PH_POOL_KIND_PROXY);
  snprintf(w.u.proxy.proxy_id, sizeof(w.u.proxy.proxy_id), "p2");
  w.u.proxy.admin_state = PH_POOL_ADMIN_DRAINING;
  rc = pw(m, &w, &r);
  raised(rc, &r, b, "proxy drain (admin state)");
  ok(r.proxy.admin_state == PH_POOL_ADMIN_DRAINING && r.proxy.capacity == 7,
     "CP-1-19 drain set the admin state only");
  b = r.revision;
  w.u.proxy.admin_state = PH_POOL_ADMIN_DISABLED;
  rc = pw(m, &w, &r);
  raised(rc, &r, b, "proxy disable");
  b = r.revision;

  w = pwr(PH_POOL_MOVE, PH_POOL_KIND_ROUTE);
  snprintf(w.u.route.rule_id, sizeof(w.u.route.rule_id), "r20");
  w.u.route.position = 5;
  rc = pw(m, &w, &r);
  raised(rc, &r, b, "route move");
  ok(r.route.position == 5 && strcmp(r.route.target_group, "residential") == 0,
     "the move changed the position only");
  b = r.revision;
  w = pwr(PH_POOL_UPDATE, PH_POOL_KIND_ROUTE);
  w.u.route = route_row("r20", 999);
  w.u.route.enabled = 0;
  w.u.route.on_unavailable = PH_POOL_ON_UNAVAILABLE_DIRECT;
  w.u.route.wait_timeout_ms = 0;
  rc = pw(m, &w, &r);
  raised(rc, &r, b, "route update");
  ok(r.route.position == 5 && r.route.enabled == 0 &&
         r.route.on_unavailable == PH_POOL_ON_UNAVAILABLE_DIRECT,
     "an update keeps the position (a move is its own write)");
  b = r.revision;

  w = pwr(PH_POOL_ROTATE, PH_POOL_KIND_CREDENTIAL);
  snprintf(w.u.credential.secret_ref, sizeof(w.u.credential.secret_ref),
           "upstream-a");
  rc = pw(m, &w, &r);
  raised(rc, &r, b, "credential rotate");
  is_int(r.cred.credential_version, 2, "CP-1-18 rotate: version + 1");
  b = r.revision;
  ok(psnapshot(m, &x) == PH_OK && x.n_proxies == 2 &&
         x.proxies[0].credential_version == 2 &&
         x.proxies[1].credential_version == 2 && x.refs_resolved,
     "CP-1-18 every proxy of the reference carries the new version");

  t0 = ptotal(m);
  w = pwr(PH_POOL_DELETE, PH_POOL_KIND_CREDENTIAL);
  snprintf(w.u.credential.secret_ref, sizeof(w.u.credential.secret_ref),
           "upstream-a");
  rc = pw(m, &w, &r);
  refused(m, rc, &r, PH_EBUSY, t0, "proxies still use",
          "delete of a credential proxies use");
  w = pwr(PH_POOL_DELETE, PH_POOL_KIND_ROUTE);
  snprintf(w.u.route.rule_id, sizeof(w.u.route.rule_id), "nosuch");
  rc = pw(m, &w, &r);
  refused(m, rc, &r, PH_ENOENT, t0, "no such route", "delete of a missing route");
  w.expect_revision = b - 1;
  snprintf(w.u.route.rule_id, sizeof(w.u.route.rule_id), "r20");
  rc = pw(m, &w, &r);
  refused(m, rc, &r, PH_ESTATE, t0, "changed",
          "a write whose expect_revision is stale");
  w.expect_revision = b;
  rc = pw(m, &w, &r);
  raised(rc, &r, b, "route delete (expect_revision current)");
  b = r.revision;
  for (int i = 1; i <= 2; i++) {
    w = pwr(PH_POOL_DELETE, PH_POOL_KIND_PROXY);
    snprintf(w.u.proxy.proxy_id, sizeof(w.u.proxy.proxy_id), "p%d", i);
    rc = pw(m, &w, &r);
    raised(rc, &r, b, "proxy delete");
    b = r.revision;
  }
  w = pwr(PH_POOL_DELETE, PH_POOL_KIND_CREDENTIAL);
  snprintf(w.u.credential.secret_ref, sizeof(w.u.credential.secret_ref),
           "upstream-a");
  rc = pw(m, &w, &r);
  raised(rc, &r, b, "credential delete once unused");
  ok(psnapshot(m, &x) == PH_OK && x.n_routes + x.n_proxies + x.n_creds == 0 &&
         x.revision == r.revision,
     "everything deleted: an empty pool at the last revision");
  is_int(inside_calls, 0, "no callback ran inside a call");
  pfinish(m);
}

/* One bad field each: refused before the database, with a detail naming
 * the field, and nothing changed. */
static void pcase_bounds(void) {
  ph_mock *m = pboot();
  if (!m) {
    ok(0, "pool.store: bounds: the provider starts");
    return;
  }
  pwres r;
  ok(mk_cred(m, "c1", &r) == PH_OK && mk_proxy(m, "base", "c1", &r) == PH_OK &&
         mk_route(m, "base", 1, &r) == PH_OK,
     "a credential, a proxy and a route to refuse changes to");
  ptotals t0 = ptotal(m);
  static const struct {
    const char *field, *detail;
  } proxies[] = {{"proxy_id", "proxy_id"},     {"protocol", "protocol"},
                 {"host", "host"},             {"port", "port"},
                 {"groups0", "groups"},        {"groups9", "groups"},
                 {"groupchar", "group"},       {"groupdup", "twice"},
                 {"zone", "zone"},             {"capacity0", "capacity"},
                 {"capacitymax", "capacity"},  {"weight", "weight"},
                 {"expires", "expires_at"},    {"secret_ref", "secret_ref"},
                 {"admin_state", "admin_state"}};
  for (size_t i = 0; i < sizeof(proxies) / sizeof(proxies[0]); i++) {
    ph_pool_write w = pwr(PH_POOL_CREATE, PH_POOL_KIND_PROXY);
    ph_pool_proxy_row *p = &w.u.proxy;
    *p = proxy_row("bad", NULL);
    const char *f = proxies[i].field;
    if (!strcmp(f, "proxy_id"))
      snprintf(p->proxy_id, sizeof(p->proxy_id), "Bad/Id");
    else if (!strcmp(f, "protocol"))
      p->protocol = 9;
    else if (!strcmp(f, "host"))
      snprintf(p->host, sizeof(p->host), "Proxy.Example.NET");
    else if (!strcmp(f, "port"))
      p->port = 0;
    else if (!strcmp(f, "groups0"))
      p->n_groups = 0;
    else if (!strcmp(f, "groups9"))
      p->n_groups = PH_POOL_GROUPS_MAX + 1;
    else if (!strcmp(f, "groupchar"))
      snprintf(p->groups[0], sizeof(p->groups[0]), "EU west");
    else if (!strcmp(f, "groupdup"))
      snprintf(p->groups[1], sizeof(p->groups[1]), "residential");
    else if (!strcmp(f, "zone"))
      snprintf(p->zone, sizeof(p->zone), "Zone A");
    else if (!strcmp(f, "capacity0"))
      p->capacity = 0;
    else if (!strcmp(f, "capacitymax"))
      p->capacity = PH_POOL_CAPACITY_MAX + 1;
    else if (!strcmp(f, "weight"))
      p->weight = PH_POOL_WEIGHT_MAX + 1;
    else if (!strcmp(f, "expires"))
      p->expires_at_ms = -1;
    else if (!strcmp(f, "secret_ref"))
      snprintf(p->secret_ref, sizeof(p->secret_ref), "../etc/passwd");
    else
      p->admin_state = 0;
    char name[120];
    snprintf(name, sizeof(name), "a proxy with a bad %s", f);
    int rc = pw(m, &w, &r);
    refused(m, rc, &r, PH_EINVAL, t0, proxies[i].detail, name);
  }
  static const struct {
    const char *field, *detail;
  } routes[] = {{"rule_id", "rule_id"},       {"pattern", "host_pattern"},
                {"ports_order", "ports"},     {"ports_half", "ports"},
                {"wait0", "wait_timeout"},    {"waitmax", "wait_timeout"},
                {"rejectwait", "wait_timeout"}, {"on_unavailable", "on_unavailable"},
                {"sticky", "sticky_key"},     {"strategy", "strategy"},
                {"target_group", "target_group"}, {"listener", "listener"},
                {"identity", "client_identity"}, {"enabled", "enabled"}};
  for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
    ph_pool_write w = pwr(PH_POOL_CREATE, PH_POOL_KIND_ROUTE);
    ph_pool_route_row *q = &w.u.route;
    *q = route_row("bad", 50);
    const char *f = routes[i].field;
    if (!strcmp(f, "rule_id"))
      q->rule_id[0] = '\0';
    else if (!strcmp(f, "pattern"))
      snprintf(q->host_pattern, sizeof(q->host_pattern), "a*b.example");
    else if (!strcmp(f, "ports_order"))
      q->port_min = 500, q->port_max = 400;
    else if (!strcmp(f, "ports_half"))
      q->port_min = 0, q->port_max = 80;
    else if (!strcmp(f, "wait0"))
      q->wait_timeout_ms = 0;
    else if (!strcmp(f, "waitmax"))
      q->wait_timeout_ms = PH_POOL_WAIT_TIMEOUT_MAX_MS + 1;
    else if (!strcmp(f, "rejectwait"))
      q->on_unavailable = PH_POOL_ON_UNAVAILABLE_REJECT;
    else if (!strcmp(f, "on_unavailable"))
      q->on_unavailable = 7;
    else if (!strcmp(f, "sticky"))
      snprintf(q->sticky_key, sizeof(q->sticky_key), "cookie:x");
    else if (!strcmp(f, "strategy"))
      q->strategy[0] = '\0';
    else if (!strcmp(f, "target_group"))
      snprintf(q->target_group, sizeof(q->target_group), "A B");
    else if (!strcmp(f, "listener"))
      snprintf(q->listener, sizeof(q->listener), "-x");
    else if (!strcmp(f, "identity"))
      snprintf(q->client_identity, sizeof(q->client_identity), "a b");
    else
      q->enabled = 2;
    char name[120];
    snprintf(name, sizeof(name), "a route with a bad %s", f);
    int rc = pw(m, &w, &r);
    refused(m, rc, &r, PH_EINVAL, t0, routes[i].detail, name);
  }
  ph_pool_write w = pwr(PH_POOL_CREATE, PH_POOL_KIND_CREDENTIAL);
  snprintf(w.u.credential.secret_ref, sizeof(w.u.credential.secret_ref),
           "user:pass@x");
  int rc = pw(m, &w, &r);
  refused(m, rc, &r, PH_EINVAL, t0, "secret_ref",
          "CP-8-4 a secret_ref that is not a controlled reference");
  w = pwr(PH_POOL_UPDATE, PH_POOL_KIND_CREDENTIAL);
  snprintf(w.u.credential.secret_ref, sizeof(w.u.credential.secret_ref), "c1");
  rc = pw(m, &w, &r);
  refused(m, rc, &r, PH_EINVAL, t0, NULL,
          "a credential is rotated, not updated");
  w = pwr(PH_POOL_MOVE, PH_POOL_KIND_PROXY);
  rc = pw(m, &w, &r);
  refused(m, rc, &r, PH_EINVAL, t0, NULL, "a proxy is not moved");
  w = pwr(PH_POOL_CREATE, 9);
  rc = pw(m, &w, &r);
  refused(m, rc, &r, PH_EINVAL, t0, "kind", "an unknown kind");
  ok(P.st->write(P.ss, NULL, on_pwrite, &r) == PH_EINVAL &&
         P.st->write(P.ss, &w, NULL, &r) == PH_EINVAL &&
         P.st->snapshot(P.ss, NULL, NULL) == PH_EINVAL,
     "NULL requests or callbacks: PH_EINVAL from the call");
  pfinish(m);
}

/* snapshot() and list(): one consistent read, in order. */
static void pcase_reads(void) {
  ph_mock *m = pboot();
  if (!m) {
    ok(0, "pool.store: reads: the provider starts");
    return;
  }
  pwres r;
  int all = mk_cred(m, "ref-b", &r) == PH_OK && mk_cred(m, "ref-a", &r) == PH_OK;
  static const char *const ids[] = {"p5", "p3", "p1", "p4", "p2"};
  for (int i = 0; i < 5; i++)
    all &= mk_proxy(m, ids[i], i % 2 ? "ref-a" : (i ? "ref-b" : NULL), &r) ==
           PH_OK;
  static const uint32_t pos[] = {300, 100, 200, 0, 4294967295u};
  static const char *const rules[] = {"r300", "r100", "r200", "r0", "rmax"};
  for (int i = 0; i < 5; i++)
    all &= mk_route(m, rules[i], pos[i], &r) == PH_OK;
  ok(all, "2 credentials, 5 proxies and 5 routes written out of order");
  psnap x;
  int rc = psnapshot(m, &x);
  ok(rc == PH_OK && x.n_routes == 5 && x.n_proxies == 5 && x.n_creds == 2,
     "CP-1-19 the snapshot has every route, proxy and credential reference");
  ok(x.sorted && x.positions[0] == 0 && x.positions[1] == 100 &&
         x.positions[4] == 4294967295u && strcmp(x.rules[0], "r0") == 0 &&
         strcmp(x.rules[4], "rmax") == 0,
     "CP-1-19 routes in the configured (position) order, to UINT32_MAX");
  ok(strcmp(x.proxies[0].proxy_id, "p1") == 0 &&
         strcmp(x.proxies[4].proxy_id, "p5") == 0 &&
         x.proxies[2].n_groups == 2,
     "proxies by proxy_id, each with its groups");
  ok(x.refs_resolved, "CP-1-18 every secret_ref a proxy names is among the "
                      "credential references, at the proxy's version");
  ok(x.revision == r.revision && x.rev_cb == x.revision,
     "the snapshot's revision is the state's (the last write's)");

  ph_pool_list l = {.size = sizeof(l), .kind = PH_POOL_KIND_PROXY, .limit = 2};
  plres pl;
  rc = plist(m, &l, &pl);
  ok(rc == PH_OK && pl.n == 2 && pl.more && strcmp(pl.keys[0], "p1") == 0 &&
         strcmp(pl.keys[1], "p2") == 0 && pl.revision == x.revision,
     "list proxies: a page of 2, more, at the revision");
  l.after = "p2";
  rc = plist(m, &l, &pl);
  ok(rc == PH_OK && pl.n == 2 && strcmp(pl.keys[0], "p3") == 0,
     "list proxies after p2");
  l.after = "p4";
  rc = plist(m, &l, &pl);
  ok(rc == PH_OK && pl.n == 1 && !pl.more && strcmp(pl.keys[0], "p5") == 0,
     "the last page: no more");
  l = (ph_pool_list){.size = sizeof(l), .kind = PH_POOL_KIND_ROUTE,
                     .limit = 2, .from_position = 101};
  rc = plist(m, &l, &pl);
  ok(rc == PH_OK && pl.n == 2 && pl.more && pl.positions[0] == 200 &&
         pl.positions[1] == 300,
     "list routes from a position, in position order");
  l = (ph_pool_list){.size = sizeof(l), .kind = PH_POOL_KIND_ROUTE,
                     .limit = 1, .key = "r100"};
  rc = plist(m, &l, &pl);
  ok(rc == PH_OK && pl.n == 1 && pl.positions[0] == 100,
     "list one route by its key");
  l = (ph_pool_list){.size = sizeof(l), .kind = PH_POOL_KIND_CREDENTIAL,
                     .limit = 10};
  rc = plist(m, &l, &pl);
  ok(rc == PH_OK && pl.n == 2 && strcmp(pl.keys[0], "ref-a") == 0,
     "list credential references by secret_ref");
  l = (ph_pool_list){.size = sizeof(l), .kind = PH_POOL_KIND_PROXY,
                     .limit = 1, .key = "nosuch"};
  rc = plist(m, &l, &pl);
  ok(rc == PH_OK && pl.n == 0, "a key that names nothing: an empty page");
  l.limit = 0;
  ok(P.st->list(P.ss, &l, on_plist, &pl) == PH_EINVAL,
     "list limit 0: PH_EINVAL");
  l.limit = PH_POOL_LIST_MAX + 1;
  ok(P.st->list(P.ss, &l, on_plist, &pl) == PH_EINVAL,
     "list limit over PH_POOL_LIST_MAX: PH_EINVAL");

  /* cancel: no callback. */
  ph_pool_write w = pwr(PH_POOL_CREATE, PH_POOL_KIND_CREDENTIAL);
  snprintf(w.u.credential.secret_ref, sizeof(w.u.credential.secret_ref), "c9");
  memset(&r, 0, sizeof(r));
  int64_t id = P.st->write(P.ss, &w, on_pwrite, &r);
  ok(id > 0 && P.st->cancel(P.ss, id) == PH_OK, "a write cancelled");
  ph_mock_run_for(m, 300);
  is_int(r.calls, 0, "a cancelled call gets no callback");
  ok(P.st->cancel(P.ss, id) == PH_ENOENT, "cancel twice: PH_ENOENT");

  /* Another process's write: the poll sees it (no I/O in revision()). */
  if (PE->exec) {
    uint64_t b = prev_now(NULL);
    ok(PE->exec(PE->base->arg, "UPDATE pool_revision SET revision = "
                               "revision + 5 WHERE id = 1") == 0,
       "another process raises the pool revision");
    int seen = 0;
    for (int i = 0; i < ROUNDS && !seen; i++) {
      ph_mock_run_for(m, 10);
      seen = prev_now(NULL) >= b + 5;
    }
    ok(seen, "revision() follows it by the store's own poll");
    ok(PE->exec(PE->base->arg, "DELETE FROM pool_revision") == 0,
       "the pool revision row is deleted");
    int rc2 = PH_OK;
    for (int i = 0; i < ROUNDS && rc2 == PH_OK; i++) {
      ph_mock_run_for(m, 10);
      prev_now(&rc2);
    }
    is_int(rc2, PH_ESTATE, "a missing pool revision row: revision() "
                           "PH_ESTATE");
    ptotals t;
    memset(&t, 0, sizeof(t));
    ok(mk_cred(m, "c10", &r) == PH_AZ_EUNAVAILABLE,
       "and a write fails closed (unavailable)");
    ok(psnapshot(m, &x) == PH_AZ_EUNAVAILABLE,
       "and so does a snapshot");
    (void)t;
  }
  pfinish(m);
}

int pool_contract_run(const pool_contract_env *env) {
  PE = env;
  int before = tap_failed_;
  pcase_writes();
  pcase_bounds();
  pcase_reads();
  return tap_failed_ - before;
}
