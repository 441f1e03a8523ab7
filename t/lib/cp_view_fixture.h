/* SPDX-License-Identifier: BSD-2-Clause */
/* WorkerSnapshot messages built in memory the way protobuf-c unpacks them,
 * compiled into pool views (cp_view_compile): the fixture of the view's
 * and the pool's unit tests (t/unit/cp/test_cp_view.c, test_pool_dispatch.c). Static
 * functions: include it in one test file. */
#ifndef PH_CP_VIEW_FIXTURE_H
#define PH_CP_VIEW_FIXTURE_H

#include <stdio.h>
#include <string.h>

#include <proxyhost/abi.h>

#include "cp_common/view/cp_view.h"

/* ---- a snapshot under construction ---------------------------------- */

#define MAXN 16
typedef struct fixture {
  Controlplane__V1__WorkerSnapshot s;
  Google__Protobuf__Timestamp gen, vu;
  Controlplane__V1__RoutingRule rules[MAXN], *rule_p[MAXN];
  Google__Protobuf__Duration wait[MAXN];
  Controlplane__V1__OwnedProxy px[MAXN], *px_p[MAXN];
  Google__Protobuf__Timestamp uu[MAXN], exp[MAXN];
  char *groups[MAXN][4];
  Controlplane__V1__Credential cr[MAXN], *cr_p[MAXN];
  char user[MAXN][32], pass[MAXN][32];
  uint8_t sum[32];
} fixture;

/* The fixture's clock: T0 unless the test sets FX_T0 before including. */
#ifndef FX_T0
#define FX_T0 1800000000000LL
#endif
static int64_t T0 = FX_T0; /* ms; a test may move it (to now) */

static inline void ts_set(Google__Protobuf__Timestamp *t, int64_t ms) {
  google__protobuf__timestamp__init(t);
  t->seconds = ms / 1000;
  t->nanos = (int32_t)(ms % 1000) * 1000000;
}

static inline void fx_init(fixture *f) {
  memset(f, 0, sizeof *f);
  controlplane__v1__worker_snapshot__init(&f->s);
  f->s.version = 42;
  f->s.ownership_epoch = 7;
  ts_set(&f->gen, T0);
  ts_set(&f->vu, T0 + 60000);
  f->s.generated_at = &f->gen;
  f->s.valid_until = &f->vu;
  f->s.cluster_id = "c1";
  f->s.worker_id = "w1";
  f->s.session_id = "s1";
  memset(f->sum, 0x5a, sizeof f->sum);
  f->s.checksum.data = f->sum;
  f->s.checksum.len = sizeof f->sum;
  f->s.routing = f->rule_p;
  f->s.proxies = f->px_p;
  f->s.credentials = f->cr_p;
}

static Controlplane__V1__RoutingRule *
fx_rule(fixture *f, const char *id, const char *host, uint32_t pmin,
        uint32_t pmax, const char *identity, const char *listener,
        const char *group) {
  size_t i = f->s.n_routing++;
  Controlplane__V1__RoutingRule *r = &f->rules[i];
  controlplane__v1__routing_rule__init(r);
  r->rule_id = (char *)id;
  r->host_pattern = (char *)host;
  r->port_min = pmin;
  r->port_max = pmax;
  r->client_identity = (char *)(identity ? identity : "");
  r->listener = (char *)(listener ? listener : "");
  r->target_group = (char *)group;
  r->strategy = "round_robin";
  r->on_unavailable = CONTROLPLANE__V1__ON_UNAVAILABLE__ON_UNAVAILABLE_REJECT;
  f->rule_p[i] = r;
  return r;
}

static Controlplane__V1__OwnedProxy *
fx_proxy(fixture *f, const char *id, const char *g1, const char *g2,
         const char *secret_ref) {
  size_t i = f->s.n_proxies++;
  Controlplane__V1__OwnedProxy *p = &f->px[i];
  controlplane__v1__owned_proxy__init(p);
  p->proxy_id = (char *)id;
  p->protocol = CONTROLPLANE__V1__UPSTREAM_PROTOCOL__UPSTREAM_PROTOCOL_SOCKS5;
  p->host = "127.0.0.1";
  p->port = 1080 + (uint32_t)i;
  f->groups[i][0] = (char *)g1;
  f->groups[i][1] = (char *)g2;
  p->groups = f->groups[i];
  p->n_groups = g2 ? 2 : g1 ? 1 : 0;
  p->zone = "z1";
  p->capacity = 10;
  p->weight = 5;
  ts_set(&f->exp[i], T0 + 50000);
  ts_set(&f->uu[i], T0 + 40000);
  p->expires_at = &f->exp[i];
  p->usable_until = &f->uu[i];
  if (secret_ref) {
    p->secret_ref = (char *)secret_ref;
    p->credential_version = 1;
  }
  f->px_p[i] = p;
  return p;
}

static inline void fx_cred(fixture *f, const char *ref, uint64_t ver,
                    const char *user, const char *pass) {
  size_t i = f->s.n_credentials++;
  Controlplane__V1__Credential *c = &f->cr[i];
  controlplane__v1__credential__init(c);
  c->secret_ref = (char *)ref;
  c->credential_version = ver;
  snprintf(f->user[i], sizeof f->user[i], "%s", user);
  snprintf(f->pass[i], sizeof f->pass[i], "%s", pass);
  c->username = f->user[i];
  c->password = f->pass[i];
  f->cr_p[i] = c;
}

static inline ph_pool_view *compile(fixture *f, int64_t obtained, int64_t stale) {
  cp_view_opts o = {obtained, stale};
  ph_pool_view *v = NULL;
  const char *why = NULL;
  int rc = cp_view_compile(&f->s, &o, &v, &why);
  if (rc != PH_OK)
    printf("# compile: %d %s\n", rc, why ? why : "");
  return v;
}

#endif
