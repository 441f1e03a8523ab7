/* SPDX-License-Identifier: BSD-2-Clause */
/* The C side of t/integration/cp_checksum_vector.sh: builds fixed
 * snapshots (proxies and credentials out of order, ids that are prefixes
 * of one another and differ in case, negative and missing times, empty
 * lists), prints each one's fields as one JSON object per line with the
 * checksum cp_checksum_snapshot computes, for t/lib/cp_checksum.py to
 * compute again from docs/api/controlplane.md's definition. With
 * `--wire FILE` it prints instead the checksum of the WorkerSnapshot whose
 * wire bytes FILE holds (written by the Python side). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cp_common/snapshot/cp_checksum.h"

typedef Controlplane__V1__WorkerSnapshot Snap;
typedef Controlplane__V1__OwnedProxy Proxy;
typedef Controlplane__V1__RoutingRule Rule;
typedef Controlplane__V1__Credential Cred;
typedef Google__Protobuf__Timestamp Ts;
typedef Google__Protobuf__Duration Dur;

/* JSON strings: the vectors use printable ASCII only, so escaping " and \
 * is all JSON needs. */
static void js(const char *s) {
  putchar('"');
  for (; s && *s; s++) {
    if (*s == '"' || *s == '\\')
      putchar('\\');
    putchar(*s);
  }
  putchar('"');
}

static void jts(const Ts *t) {
  if (!t)
    printf("null");
  else
    printf("[%" PRId64 ",%" PRId32 "]", (int64_t)t->seconds, t->nanos);
}

static void jdur(const Dur *d) {
  if (!d)
    printf("null");
  else
    printf("[%" PRId64 ",%" PRId32 "]", (int64_t)d->seconds, d->nanos);
}

/* ,"name": and the value, for the fields after an object's first. */
static void jsf(const char *name, const char *s) {
  printf(",\"%s\":", name);
  js(s);
}

static void jtsf(const char *name, const Ts *t) {
  printf(",\"%s\":", name);
  jts(t);
}

static void dump(const char *name, const Snap *s) {
  uint8_t sum[CP_CHECKSUM_LEN];
  if (cp_checksum_snapshot(s, sum) != 0) {
    printf("{\"error\":\"checksum failed\"}\n");
    return;
  }
  printf("{\"name\":");
  js(name);
  printf(",\"version\":%" PRIu64 ",\"ownership_epoch\":%" PRIu64
         ",\"valid_until\":",
         s->version, s->ownership_epoch);
  jts(s->valid_until);
  jtsf("lease_expires_at", s->lease_expires_at);
  jtsf("lease_usable_until", s->lease_usable_until);
  printf(",\"routing\":[");
  for (size_t i = 0; i < s->n_routing; i++) {
    const Rule *r = s->routing[i];
    printf("%s{\"rule_id\":", i ? "," : "");
    js(r->rule_id);
    jsf("host_pattern", r->host_pattern);
    printf(",\"port_min\":%" PRIu32 ",\"port_max\":%" PRIu32
           ",\"client_identity\":",
           r->port_min, r->port_max);
    js(r->client_identity);
    jsf("listener", r->listener);
    jsf("target_group", r->target_group);
    jsf("strategy", r->strategy);
    printf(",\"on_unavailable\":%d,\"wait_timeout\":", (int)r->on_unavailable);
    jdur(r->wait_timeout);
    jsf("sticky_key", r->sticky_key);
    printf("}");
  }
  printf("],\"proxies\":[");
  for (size_t i = 0; i < s->n_proxies; i++) {
    const Proxy *p = s->proxies[i];
    printf("%s{\"proxy_id\":", i ? "," : "");
    js(p->proxy_id);
    printf(",\"protocol\":%d,\"host\":", (int)p->protocol);
    js(p->host);
    printf(",\"port\":%" PRIu32 ",\"groups\":[", p->port);
    for (size_t g = 0; g < p->n_groups; g++) {
      if (g)
        putchar(',');
      js(p->groups[g]);
    }
    printf("],\"zone\":");
    js(p->zone);
    printf(",\"capacity\":%" PRIu32 ",\"weight\":%" PRIu32 ",\"expires_at\":",
           p->capacity, p->weight);
    jts(p->expires_at);
    jtsf("usable_until", p->usable_until);
    jsf("secret_ref", p->secret_ref);
    printf(",\"credential_version\":%" PRIu64 ",\"draining\":%s}",
           p->credential_version, p->draining ? "true" : "false");
  }
  printf("],\"credentials\":[");
  for (size_t i = 0; i < s->n_credentials; i++) {
    const Cred *c = s->credentials[i];
    printf("%s{\"secret_ref\":", i ? "," : "");
    js(c->secret_ref);
    printf(",\"credential_version\":%" PRIu64 ",\"username\":",
           c->credential_version);
    js(c->username);
    jsf("password", c->password);
    printf("}");
  }
  printf("],\"checksum\":\"");
  for (int i = 0; i < CP_CHECKSUM_LEN; i++)
    printf("%02x", sum[i]);
  printf("\"}\n");
}

static int wire(const char *path) {
  static uint8_t buf[1 << 20];
  FILE *f = fopen(path, "rb");
  if (!f)
    return 2;
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  Snap *s = controlplane__v1__worker_snapshot__unpack(NULL, n, buf);
  uint8_t sum[CP_CHECKSUM_LEN];
  if (!s || cp_checksum_snapshot(s, sum) != 0)
    return 1;
  for (int i = 0; i < CP_CHECKSUM_LEN; i++)
    printf("%02x", sum[i]);
  printf("\n");
  printf("# unknown fields kept by the decoder: %u\n",
         (unsigned)s->base.n_unknown_fields);
  controlplane__v1__worker_snapshot__free_unpacked(s, NULL);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--wire") == 0)
    return wire(argv[2]);
  /* 1. Empty: no lists, no valid_until. */
  Snap e = CONTROLPLANE__V1__WORKER_SNAPSHOT__INIT;
  dump("empty", &e);

  /* 2. Everything, in an order the checksum must not depend on. */
  Ts vu = {PROTOBUF_C_MESSAGE_INIT(&google__protobuf__timestamp__descriptor),
           1800000000, 123000000};
  Ts ex1 = {PROTOBUF_C_MESSAGE_INIT(&google__protobuf__timestamp__descriptor),
            1800000030, 0};
  Ts us1 = {PROTOBUF_C_MESSAGE_INIT(&google__protobuf__timestamp__descriptor),
            1800000025, 999000000};
  Ts neg = {PROTOBUF_C_MESSAGE_INIT(&google__protobuf__timestamp__descriptor),
            -1, 1000000};
  Dur wt = {PROTOBUF_C_MESSAGE_INIT(&google__protobuf__duration__descriptor),
            2, 500000000};
  Rule r1 = CONTROLPLANE__V1__ROUTING_RULE__INIT, r2 = r1, r3 = r1;
  r1.rule_id = "zz-first";
  r1.host_pattern = "*.example.com";
  r1.port_min = 443;
  r1.port_max = 443;
  r1.client_identity = "alice";
  r1.listener = "main";
  r1.target_group = "eu";
  r1.strategy = "round_robin";
  r1.on_unavailable = CONTROLPLANE__V1__ON_UNAVAILABLE__ON_UNAVAILABLE_WAIT;
  r1.wait_timeout = &wt;
  r1.sticky_key = "header:X-Session";
  r2.rule_id = "aa-second";
  r2.host_pattern = "*";
  r2.target_group = "any";
  r2.strategy = "sticky";
  r2.on_unavailable = CONTROLPLANE__V1__ON_UNAVAILABLE__ON_UNAVAILABLE_DIRECT;
  r2.sticky_key = "username";
  r3.rule_id = "quote\"back\\slash";
  r3.host_pattern = "exact.test";
  r3.port_min = 1;
  r3.port_max = 65535;
  r3.target_group = "g";
  r3.strategy = "least_active";
  r3.on_unavailable = 7; /* unknown to this build: enters as its number */
  Rule *rules[] = {&r1, &r2, &r3};

  char *g1[] = {"eu", "any"}, *g2[] = {"any"};
  Proxy p1 = CONTROLPLANE__V1__OWNED_PROXY__INIT, p2 = p1, p3 = p1, p4 = p1;
  p1.proxy_id = "px-10";
  p1.protocol = CONTROLPLANE__V1__UPSTREAM_PROTOCOL__UPSTREAM_PROTOCOL_SOCKS5;
  p1.host = "10.0.0.1";
  p1.port = 1080;
  p1.groups = g1;
  p1.n_groups = 2;
  p1.zone = "eu-west-1a";
  p1.capacity = 100;
  p1.weight = 5;
  p1.expires_at = &ex1;
  p1.usable_until = &us1;
  p1.secret_ref = "vault/b";
  p1.credential_version = 3;
  p1.draining = 1;
  p2.proxy_id = "px-1";
  p2.protocol =
      CONTROLPLANE__V1__UPSTREAM_PROTOCOL__UPSTREAM_PROTOCOL_HTTP_CONNECT;
  p2.host = "proxy.example.net";
  p2.port = 3128;
  p2.groups = g2;
  p2.n_groups = 1;
  p2.capacity = 1;
  p2.weight = 1000;
  p2.expires_at = &ex1;
  p2.usable_until = &neg;
  p3.proxy_id = "PX-2"; /* upper case sorts before lower case */
  p3.protocol = CONTROLPLANE__V1__UPSTREAM_PROTOCOL__UPSTREAM_PROTOCOL_HTTP;
  p3.host = "::1";
  p3.port = 8080;
  p3.groups = g2;
  p3.n_groups = 1;
  p3.capacity = 1000000;
  p3.weight = 1;
  p3.secret_ref = "vault/a";
  p3.credential_version = 18446744073709551615ULL;
  p4.proxy_id = "px-1.a";
  p4.protocol = CONTROLPLANE__V1__UPSTREAM_PROTOCOL__UPSTREAM_PROTOCOL_SOCKS5;
  p4.host = "h";
  p4.port = 1;
  p4.secret_ref = "vault/b";
  p4.credential_version = 2;
  Proxy *proxies[] = {&p1, &p2, &p3, &p4};

  Cred c1 = CONTROLPLANE__V1__CREDENTIAL__INIT, c2 = c1, c3 = c1;
  c1.secret_ref = "vault/b";
  c1.credential_version = 3;
  c1.username = "user b3";
  c1.password = "p@ss:w0rd \"quoted\"";
  c2.secret_ref = "vault/b";
  c2.credential_version = 2;
  c2.username = "user b2";
  c2.password = "";
  c3.secret_ref = "vault/a";
  c3.credential_version = 18446744073709551615ULL;
  c3.username = "";
  c3.password = "~!#$%^&*()_+{}|<>?";
  Cred *creds[] = {&c1, &c2, &c3};

  Snap s = CONTROLPLANE__V1__WORKER_SNAPSHOT__INIT;
  s.version = 42;
  s.ownership_epoch = 0x0102030405060708ULL;
  s.valid_until = &vu;
  s.routing = rules;
  s.n_routing = 3;
  s.proxies = proxies;
  s.n_proxies = 4;
  s.credentials = creds;
  s.n_credentials = 3;
  s.cluster_id = "not-in-the-checksum";
  dump("full", &s);

  /* 3. The same with the rules in another order: another checksum. */
  Rule *rules2[] = {&r2, &r1, &r3};
  s.routing = rules2;
  dump("rules-reordered", &s);

  /* 4. The shared lease form (issue 26): each proxy's times are the
   * earlier of its own (absent in px-1.a and PX-2) and the lease's, and
   * seconds tie at px-10's expires_at while the nanos decide. */
  Ts le = {PROTOBUF_C_MESSAGE_INIT(&google__protobuf__timestamp__descriptor),
           1800000030, 500};
  Ts lu = {PROTOBUF_C_MESSAGE_INIT(&google__protobuf__timestamp__descriptor),
           1800000025, 0};
  s.routing = rules;
  s.lease_expires_at = &le;
  s.lease_usable_until = &lu;
  dump("shared-lease", &s);
  return 0;
}
