/* SPDX-License-Identifier: BSD-2-Clause */
/* The stores' engine-neutral code (modules/store_common): the
 * authorization decision and its host patterns (az_eval), token material
 * and bearer parsing (az_token), and request validation (az_validate).
 * Pure code: no database, no host. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <proxyhost/access.h>
#include <proxyhost/authz_store.h>

#include "store_common/az_eval.h"
#include "store_common/az_token.h"
#include "store_common/az_validate.h"
#include "tap.h"

#define NOW 1700000000
#define POS 5000
#define NEG 1000
#define TOK "tok_0123456789abcdef"

/* ---- host patterns ------------------------------------------------------ */

static void match(const char *pattern, const char *host, int want) {
  char name[256];
  snprintf(name, sizeof(name), "TM-P1-4 pattern '%s' %s '%s'", pattern,
           want ? "matches" : "does not match", host);
  is_int(az_host_match(pattern, host), want, name);
}

static void test_patterns(void) {
  match("*", "example.com", 1);
  match("*", "192.0.2.7", 1);
  match("*", "2001:db8::1", 1);
  match("example.com", "example.com", 1);
  match("example.com", "www.example.com", 0);
  match("example.com", "example.co", 0);
  match("example.com", "xexample.com", 0);
  match("*.example.com", "www.example.com", 1);
  match("*.example.com", "a.b.example.com", 1);
  match("*.example.com", "example.com", 0);     /* strictly below */
  match("*.example.com", ".example.com", 0);    /* no label before */
  match("*.example.com", "wwwexample.com", 0);  /* not a label boundary */
  match("*.example.com", "www.example.com.evil", 0);
  /* case and one trailing dot do not change a name */
  match("example.com", "EXAMPLE.com", 1);
  match("Example.COM", "example.com", 1);
  match("example.com", "example.com.", 1);
  match("example.com.", "example.com", 1);
  match("*.example.com", "WWW.EXAMPLE.COM.", 1);
  match("example.com", "example.com..", 0);
  /* nonsense patterns match nothing */
  match("", "example.com", 0);
  match("*.", "example.com", 0);
  match("*x.example.com", "ax.example.com", 0);
  match("www.*.com", "www.example.com", 0);
  match("**", "example.com", 0);
  match("example.com", "", 0);
  /* addresses: only address and CIDR patterns */
  match("192.0.2.7", "192.0.2.7", 1);
  match("192.0.2.7", "192.0.2.8", 0);
  match("192.0.2.7", "192.0.2.7.example", 0);
  match("10.0.0.0/8", "10.255.255.255", 1);
  match("10.0.0.0/8", "10.0.0.0", 1);
  match("10.0.0.0/8", "11.0.0.0", 0);
  match("10.0.0.0/8", "9.255.255.255", 0);
  match("192.0.2.0/31", "192.0.2.1", 1);
  match("192.0.2.0/31", "192.0.2.2", 0);
  match("192.0.2.7/32", "192.0.2.7", 1);
  match("0.0.0.0/0", "203.0.113.9", 1);
  match("0.0.0.0/0", "2001:db8::1", 0); /* another family */
  match("0.0.0.0/0", "example.com", 0); /* a CIDR never matches a name */
  match("2001:db8::1", "2001:db8::1", 1);
  match("2001:db8::1", "2001:db8:0:0::1", 1); /* the same address */
  match("2001:db8::1", "2001:db8::2", 0);
  match("2001:db8::/32", "2001:db8:ffff::1", 1);
  match("2001:db8::/32", "2001:db9::1", 0);
  match("::/0", "::1", 1);
  match("::/0", "10.0.0.1", 0);
  match("10.0.0.0/8", "::ffff:10.1.2.3", 1); /* IPv4-mapped is IPv4 */
  match("192.0.2.7", "example.com", 0);
  match("example.com", "192.0.2.7", 0);
  match("*", "", 0);
}

/* ---- the decision ------------------------------------------------------- */

static az_policy_row pol_user(const char *pattern, int lo, int hi) {
  az_policy_row p = {PH_AZ_SUBJECT_USER, "alice", pattern, lo, hi,
                     PH_PROTO_TCP};
  return p;
}

static az_facts good_facts(const az_policy_row *rows, size_t n) {
  az_facts f = {.token_found = 1,
                .token_id = TOK,
                .token_user = "alice",
                .scopes = PH_AZ_SCOPE_STREAM,
                .user_found = 1,
                .user_enabled = 1,
                .agent_found = 1,
                .agent_enabled = 1,
                .policies = rows,
                .n_policies = n};
  return f;
}

static ph_access_request good_req(const char *host, uint16_t port) {
  ph_access_request r = {.size = sizeof(r),
                         .protocol = PH_PROTO_TCP,
                         .port = port,
                         .host = host,
                         .principal = TOK,
                         .agent = "edge1"};
  return r;
}

static az_decision decide(const az_facts *f, const ph_access_request *r) {
  az_decision d;
  az_decide(f, r, NOW, POS, NEG, &d);
  return d;
}

static void is_deny(const az_facts *f, const ph_access_request *r,
                    const char *why, const char *name) {
  az_decision d = decide(f, r);
  ok(d.verdict == PH_ACCESS_DENY && d.code == PH_OPEN_FORBIDDEN &&
         d.ttl_ms == NEG,
     name);
  if (why && d.reason && strcmp(d.reason, why) != 0)
    printf("#   reason '%s', want '%s'\n", d.reason, why);
}

static void test_decide(void) {
  az_policy_row rows[] = {pol_user("*.example.com", 443, 443)};
  az_facts f = good_facts(rows, 1);
  ph_access_request r = good_req("www.example.com", 443);
  az_decision d = decide(&f, &r);
  ok(d.verdict == PH_ACCESS_ALLOW && d.code == PH_OPEN_OK,
     "TM-P1-1 a stream token with a matching user policy is allowed");
  is_int(d.ttl_ms, POS, "TM-P1-6 an allow keeps the positive TTL");

  az_facts g = f;
  r.agent = NULL;
  is_deny(&g, &r, "no agent", "no agent named: deny");
  r = good_req("www.example.com", 443);
  r.size = PH_ACCESS_REQUEST_MIN_SIZE; /* an older caller: no agent field */
  is_deny(&g, &r, "no agent", "a request too short to name an agent: deny");
  r = good_req("www.example.com", 443);
  r.principal = NULL;
  is_deny(&g, &r, "no principal", "an anonymous request: deny");
  r = good_req("www.example.com", 443);

  g.token_found = 0;
  is_deny(&g, &r, "no token", "an unknown token: deny");
  g = f;
  g.token_id = "tok_ffffffffffffffff";
  is_deny(&g, &r, "no token", "facts of another token: deny");
  g = f;
  g.scopes = PH_AZ_SCOPE_AGENT;
  is_deny(&g, &r, "no stream scope", "an agent-only token cannot open: deny");
  g.scopes = PH_AZ_SCOPE_AGENT | PH_AZ_SCOPE_STREAM;
  ok(decide(&g, &r).verdict == PH_ACCESS_ALLOW, "both scopes: allow");
  g = f;
  g.revoked_at = NOW - 10;
  is_deny(&g, &r, "revoked", "TM-TEST-22 a revoked token: deny");
  g = f;
  g.expires_at = NOW;
  is_deny(&g, &r, "expired", "a token expiring now: deny");
  g.expires_at = NOW - 1;
  is_deny(&g, &r, "expired", "an expired token: deny");
  g.expires_at = NOW + 2;
  d = decide(&g, &r);
  ok(d.verdict == PH_ACCESS_ALLOW && d.ttl_ms == 2000,
     "an allow never outlives the token's expiry (2 s left: ttl 2000)");
  g.expires_at = NOW + 3600;
  is_int(decide(&g, &r).ttl_ms, POS, "a far expiry keeps the positive TTL");
  g.expires_at = INT64_MAX;
  is_int(decide(&g, &r).ttl_ms, POS, "an expiry at INT64_MAX does not wrap");
  g = f;
  g.user_enabled = 0;
  is_deny(&g, &r, "user disabled", "a disabled user: deny");
  g = f;
  g.user_found = 0;
  is_deny(&g, &r, "user disabled", "a missing user: deny");
  g = f;
  g.user_has_owner = 1;
  g.owner_found = 1;
  g.owner_enabled = 1;
  ok(decide(&g, &r).verdict == PH_ACCESS_ALLOW, "an enabled owner: allow");
  g.owner_enabled = 0;
  is_deny(&g, &r, "owner disabled", "a disabled owner: deny");
  g.owner_found = 0;
  is_deny(&g, &r, "owner disabled", "an owner that is missing: deny");
  g = f;
  g.agent_enabled = 0;
  is_deny(&g, &r, "agent disabled", "TM-TEST-22 a disabled agent: deny");
  g.agent_found = 0;
  is_deny(&g, &r, "agent disabled", "an unknown agent: deny");
  g = f;
  g.n_policies = 0;
  is_deny(&g, &r, "no policy", "no policy: deny");

  /* ports */
  az_policy_row ports[] = {pol_user("*", 1000, 2000)};
  g = good_facts(ports, 1);
  r = good_req("example.org", 1000);
  ok(decide(&g, &r).verdict == PH_ACCESS_ALLOW, "port at port_min: allow");
  r.port = 2000;
  ok(decide(&g, &r).verdict == PH_ACCESS_ALLOW, "port at port_max: allow");
  r.port = 999;
  is_deny(&g, &r, "no policy", "port below port_min: deny");
  r.port = 2001;
  is_deny(&g, &r, "no policy", "port above port_max: deny");
  az_policy_row all[] = {pol_user("*", 1, 65535)};
  g = good_facts(all, 1);
  r.port = 65535;
  ok(decide(&g, &r).verdict == PH_ACCESS_ALLOW, "port 65535 in 1..65535");
  r.port = 1;
  ok(decide(&g, &r).verdict == PH_ACCESS_ALLOW, "port 1 in 1..65535");
  r.port = 0;
  is_deny(&g, &r, "bad request", "port 0: deny");
  r.port = 80;
  r.protocol = 2;
  is_deny(&g, &r, "bad request", "an unknown protocol: deny");
  r.protocol = PH_PROTO_TCP;
  az_policy_row badrow[] = {pol_user("*", 0, 70000)};
  g = good_facts(badrow, 1);
  is_deny(&g, &r, "no policy", "a row with ports out of range: deny");
  az_policy_row proto2[] = {pol_user("*", 1, 65535)};
  proto2[0].protocol = 2;
  g = good_facts(proto2, 1);
  is_deny(&g, &r, "no policy", "a row of another protocol: deny");

  /* subjects */
  az_policy_row by_token[] = {
      {PH_AZ_SUBJECT_TOKEN, TOK, "*", 1, 65535, PH_PROTO_TCP}};
  g = good_facts(by_token, 1);
  ok(decide(&g, &r).verdict == PH_ACCESS_ALLOW,
     "a policy naming the token: allow");
  az_policy_row other_token[] = {{PH_AZ_SUBJECT_TOKEN, "tok_ffffffffffffffff",
                                  "*", 1, 65535, PH_PROTO_TCP}};
  g = good_facts(other_token, 1);
  is_deny(&g, &r, "no policy", "a policy naming another token: deny");
  az_policy_row other_user[] = {
      {PH_AZ_SUBJECT_USER, "bob", "*", 1, 65535, PH_PROTO_TCP}};
  g = good_facts(other_user, 1);
  is_deny(&g, &r, "no policy", "a policy naming another user: deny");
  az_policy_row weird[] = {{3, "alice", "*", 1, 65535, PH_PROTO_TCP},
                           {PH_AZ_SUBJECT_USER, NULL, "*", 1, 65535,
                            PH_PROTO_TCP}};
  g = good_facts(weird, 2);
  is_deny(&g, &r, "no policy", "an unknown subject kind or none: deny");
  az_policy_row several[] = {pol_user("a.example", 1, 65535),
                             pol_user("10.0.0.0/8", 22, 22),
                             pol_user("b.example", 80, 80)};
  g = good_facts(several, 3);
  r = good_req("b.example", 80);
  ok(decide(&g, &r).verdict == PH_ACCESS_ALLOW,
     "the third of three policies allows");
  r = good_req("10.1.1.1", 22);
  ok(decide(&g, &r).verdict == PH_ACCESS_ALLOW, "a CIDR policy allows");
  r = good_req("10.1.1.1", 80);
  is_deny(&g, &r, "no policy", "the CIDR's port does not match: deny");
  az_facts zero;
  memset(&zero, 0, sizeof(zero));
  is_deny(&zero, &r, "no token", "zeroed facts deny");
}

/* ---- token material ----------------------------------------------------- */

static void test_tokens(void) {
  char id[PH_AZ_ID_LEN + 1], id2[PH_AZ_ID_LEN + 1];
  ok(az_id_new(AZ_TOKEN_PREFIX, id) == 0 && az_id_valid(id, "tok_") &&
         strlen(id) == PH_AZ_ID_LEN,
     "a token id is tok_ and 16 hex digits");
  ok(az_id_new(AZ_TOKEN_PREFIX, id2) == 0 && strcmp(id, id2) != 0,
     "two token ids differ");
  ok(az_id_new(AZ_POLICY_PREFIX, id) == 0 && az_id_valid(id, "pol_") &&
         !az_id_valid(id, "tok_"),
     "a policy id is pol_ and 16 hex digits");
  ok(!az_id_valid("tok_0123456789ABCDEF", "tok_"), "upper-case hex refused");
  ok(!az_id_valid("tok_0123456789abcde", "tok_"), "15 digits refused");
  ok(!az_id_valid("tok_0123456789abcdef0", "tok_"), "17 digits refused");
  ok(!az_id_valid(NULL, "tok_"), "NULL refused");

  char s1[AZ_SECRET_LEN + 1], s2[AZ_SECRET_LEN + 1];
  ok(az_secret_new(s1) == 0 && strlen(s1) == AZ_SECRET_LEN,
     "a secret is 43 characters");
  ok(az_secret_new(s2) == 0 && strcmp(s1, s2) != 0, "two secrets differ");
  ok(strspn(s1, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                "0123456789-_") == AZ_SECRET_LEN,
     "a secret is base64url");

  char bearer[AZ_BEARER_LEN + 1];
  ok(az_id_new(AZ_TOKEN_PREFIX, id) == 0 &&
         az_bearer_format(id, s1, bearer) == 0 &&
         strlen(bearer) == AZ_BEARER_LEN && bearer[PH_AZ_ID_LEN] == '.',
     "a bearer is <id>.<secret>");
  char pid[PH_AZ_ID_LEN + 1], hash[AZ_HASH_HEX_LEN + 1],
      want[AZ_HASH_HEX_LEN + 1];
  ok(az_bearer_parse(bearer, strlen(bearer), pid, hash) == 0 &&
         strcmp(pid, id) == 0,
     "a bearer parses back to its id");
  ok(az_secret_hash(s1, AZ_SECRET_LEN, want) == 0 && az_hash_eq(hash, want),
     "the parsed hash is SHA-256 of the secret");
  ok(strstr(hash, s1) == NULL && strlen(hash) == 64,
     "the hash is 64 hex characters, not the secret");
  /* known answer: SHA-256("abc") */
  ok(az_secret_hash("abc", 3, want) == 0 &&
         strcmp(want, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff"
                      "61f20015ad") == 0,
     "SHA-256 known answer");

  char bad[AZ_BEARER_LEN + 8];
  memcpy(bad, bearer, sizeof(bearer));
  ok(az_bearer_parse(bad, AZ_BEARER_LEN - 1, pid, hash) < 0 && !*pid &&
         !*hash,
     "a bearer one byte short is malformed");
  memcpy(bad, bearer, AZ_BEARER_LEN);
  bad[AZ_BEARER_LEN] = 'A';
  ok(az_bearer_parse(bad, AZ_BEARER_LEN + 1, pid, hash) < 0,
     "a bearer one byte long is malformed");
  memcpy(bad, bearer, AZ_BEARER_LEN);
  bad[PH_AZ_ID_LEN] = ':';
  ok(az_bearer_parse(bad, AZ_BEARER_LEN, pid, hash) < 0, "no dot: malformed");
  memcpy(bad, bearer, AZ_BEARER_LEN);
  bad[PH_AZ_ID_LEN + 5] = '=';
  ok(az_bearer_parse(bad, AZ_BEARER_LEN, pid, hash) < 0,
     "a non-base64url byte: malformed");
  memcpy(bad, bearer, AZ_BEARER_LEN);
  bad[PH_AZ_ID_LEN + 5] = '\0';
  ok(az_bearer_parse(bad, AZ_BEARER_LEN, pid, hash) < 0,
     "a NUL inside: malformed");
  memcpy(bad, bearer, AZ_BEARER_LEN);
  bad[AZ_BEARER_LEN - 1] = 'B'; /* value 1: stray low bits */
  ok(az_bearer_parse(bad, AZ_BEARER_LEN, pid, hash) < 0,
     "a last character with stray bits: malformed (one spelling only)");
  memcpy(bad, bearer, AZ_BEARER_LEN);
  memcpy(bad, "pol_", 4);
  ok(az_bearer_parse(bad, AZ_BEARER_LEN, pid, hash) < 0,
     "a policy id in a bearer: malformed");
  ok(az_bearer_parse(NULL, 0, pid, hash) < 0, "NULL: malformed");
  ok(az_bearer_format("tok_x", s1, bearer) < 0, "format refuses a bad id");

  ok(!az_hash_eq(want, NULL) && !az_hash_eq("abc", "abc"),
     "hash comparison refuses NULL and short strings");
  char other[AZ_HASH_HEX_LEN + 1];
  memcpy(other, want, sizeof(other));
  other[63] = other[63] == '0' ? '1' : '0';
  ok(!az_hash_eq(want, other) && az_hash_eq(want, want),
     "hashes differing in the last digit are unequal");
  az_wipe(s1, sizeof(s1));
  ok(s1[0] == 0 && s1[42] == 0, "az_wipe clears a secret");
}

/* ---- validation --------------------------------------------------------- */

static int wv(const ph_az_write *w) { return az_validate_write(w, NULL); }

static void test_names_and_patterns(void) {
  ok(az_name_valid("alice") && az_name_valid("a") && az_name_valid("0ps") &&
         az_name_valid("a.b_c-d"),
     "names of [a-z0-9._-] starting alphanumeric");
  ok(!az_name_valid("") && !az_name_valid(".a") && !az_name_valid("-a") &&
         !az_name_valid("Alice") && !az_name_valid("a b") &&
         !az_name_valid(NULL),
     "empty, leading punctuation, upper case, spaces refused");
  char n64[66];
  memset(n64, 'a', 64);
  n64[64] = '\0';
  ok(az_name_valid(n64), "a 64-byte name");
  n64[64] = 'a';
  n64[65] = '\0';
  ok(!az_name_valid(n64), "a 65-byte name refused");

  const char *good[] = {"*", "example.com", "*.example.com", "localhost",
                        "192.0.2.7", "2001:db8::1", "10.0.0.0/8",
                        "2001:db8::/32", "0.0.0.0/0", "a-b_c.example"};
  for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++) {
    char name[128];
    snprintf(name, sizeof(name), "pattern '%s' is valid", good[i]);
    ok(az_pattern_valid(good[i]), name);
  }
  const char *bad[] = {"",           "Example.com", "example.com.",
                       "*.",         "*",           "**",
                       "a.*.com",    "*example.com", "10.0.0.1/8",
                       "10.0.0.0/33", "2001:db8::1/129", "[2001:db8::1]",
                       "a..b",        "10.0.0",       "exa mple.com",
                       "2001:DB8::1", "2001:db8::gg", "*.10.0.0.1"};
  for (size_t i = 1; i < sizeof(bad) / sizeof(*bad); i++) {
    if (strcmp(bad[i], "*") == 0)
      continue;
    char name[128];
    snprintf(name, sizeof(name), "pattern '%s' is refused", bad[i]);
    ok(!az_pattern_valid(bad[i]), name);
  }
  ok(!az_pattern_valid("") && !az_pattern_valid(NULL),
     "empty and NULL patterns refused");
  char longp[300];
  memset(longp, 'a', 256);
  longp[256] = '\0';
  ok(!az_pattern_valid(longp), "a 256-byte pattern refused");
}

static ph_az_write w_create(int kind) {
  ph_az_write w = {.size = sizeof(w), .action = PH_AZ_CREATE};
  w.rec.kind = kind;
  switch (kind) {
  case PH_AZ_USER:
    w.rec.u.user = (ph_az_user){.name = "alice", .enabled = 1};
    break;
  case PH_AZ_TOKEN:
    w.rec.u.token =
        (ph_az_token){.user = "alice", .scopes = PH_AZ_SCOPE_STREAM};
    break;
  case PH_AZ_AGENT:
    w.rec.u.agent =
        (ph_az_agent){.name = "edge1", .owner = "alice", .enabled = 1};
    break;
  default:
    w.rec.u.policy = (ph_az_policy){.agent = "edge1",
                                    .subject_kind = PH_AZ_SUBJECT_USER,
                                    .subject = "alice",
                                    .host_pattern = "*.example.com",
                                    .port_min = 443,
                                    .port_max = 443,
                                    .protocol = PH_PROTO_TCP};
  }
  return w;
}

static void test_validate_write(void) {
  const char *detail = NULL;
  for (int k = PH_AZ_USER; k <= PH_AZ_POLICY; k++) {
    ph_az_write w = w_create(k);
    is_int(az_validate_write(&w, &detail), PH_OK, "a good create is valid");
  }
  ph_az_write w = w_create(PH_AZ_USER);
  w.size = 8;
  ok(az_validate_write(&w, &detail) == PH_EINVAL && detail,
     "a request too short is EINVAL with a detail");
  w = w_create(PH_AZ_USER);
  w.rec.kind = 9;
  is_int(wv(&w), PH_EINVAL, "an unknown kind");
  w = w_create(PH_AZ_USER);
  w.action = 9;
  is_int(wv(&w), PH_EINVAL, "an unknown action");
  w = w_create(PH_AZ_USER);
  w.rec.u.user.owner = "alice";
  is_int(wv(&w), PH_EINVAL, "a user owning itself");
  w = w_create(PH_AZ_USER);
  w.rec.u.user.enabled = 2;
  is_int(wv(&w), PH_EINVAL, "enabled 2");
  w = w_create(PH_AZ_USER);
  w.fields = PH_AZ_F_ENABLED;
  is_int(wv(&w), PH_EINVAL, "a create with fields");
  w = w_create(PH_AZ_TOKEN);
  w.rec.u.token.scopes = 0;
  is_int(wv(&w), PH_EINVAL, "a token without scopes");
  w.rec.u.token.scopes = 4;
  is_int(wv(&w), PH_EINVAL, "an unknown scope bit");
  w = w_create(PH_AZ_TOKEN);
  w.rec.u.token.scopes = PH_AZ_SCOPE_AGENT;
  ok(az_validate_write(&w, &detail) == PH_EINVAL &&
         strstr(detail, "agent"),
     "an agent token without an agent");
  w.rec.u.token.agent = "edge1";
  is_int(wv(&w), PH_OK, "an agent token with its agent");
  w = w_create(PH_AZ_TOKEN);
  w.rec.u.token.agent = "edge1";
  is_int(wv(&w), PH_EINVAL, "a stream token naming an agent");
  w = w_create(PH_AZ_TOKEN);
  w.rec.u.token.expires_at = -1;
  is_int(wv(&w), PH_EINVAL, "a negative expiry");
  w = w_create(PH_AZ_AGENT);
  w.rec.u.agent.owner = NULL;
  is_int(wv(&w), PH_EINVAL, "an agent without an owner");
  w = w_create(PH_AZ_POLICY);
  w.rec.u.policy.port_min = 0;
  is_int(wv(&w), PH_EINVAL, "port_min 0");
  w = w_create(PH_AZ_POLICY);
  w.rec.u.policy.port_min = 444;
  ok(az_validate_write(&w, &detail) == PH_EINVAL &&
         strcmp(detail, "port_min above port_max") == 0,
     "port_min above port_max, said so");
  w = w_create(PH_AZ_POLICY);
  w.rec.u.policy.host_pattern = "Example.com";
  is_int(wv(&w), PH_EINVAL, "a pattern not in normal form");
  w = w_create(PH_AZ_POLICY);
  w.rec.u.policy.protocol = 0;
  is_int(wv(&w), PH_EINVAL, "protocol 0");
  w = w_create(PH_AZ_POLICY);
  w.rec.u.policy.subject_kind = PH_AZ_SUBJECT_TOKEN;
  is_int(wv(&w), PH_EINVAL, "a token subject that is a user name");
  w.rec.u.policy.subject = TOK;
  is_int(wv(&w), PH_OK, "a token subject");
  w.rec.u.policy.subject_kind = 3;
  is_int(wv(&w), PH_EINVAL, "subject kind 3");

  /* updates */
  ph_az_write u = {.size = sizeof(u), .action = PH_AZ_UPDATE};
  u.rec.kind = PH_AZ_USER;
  u.rec.u.user.name = "alice";
  is_int(wv(&u), PH_EINVAL, "an update without fields");
  u.fields = PH_AZ_F_ENABLED;
  is_int(wv(&u), PH_OK, "a user update of enabled");
  u.fields = PH_AZ_F_SCOPES;
  ok(az_validate_write(&u, &detail) == PH_EINVAL && detail,
     "a field that does not belong to users");
  u.fields = PH_AZ_F_OWNER;
  u.rec.u.user.owner = NULL;
  is_int(wv(&u), PH_OK, "a user update clearing the owner");
  u.rec.kind = PH_AZ_TOKEN;
  u.rec.u.token = (ph_az_token){.id = TOK};
  u.fields = PH_AZ_F_REVOKED | PH_AZ_F_EXPIRES | PH_AZ_F_SCOPES;
  is_int(wv(&u), PH_EINVAL, "a token update of scopes 0");
  u.rec.u.token.scopes = PH_AZ_SCOPE_STREAM;
  is_int(wv(&u), PH_OK, "a token update of three fields");
  u.fields = PH_AZ_F_ENABLED;
  is_int(wv(&u), PH_EINVAL, "enabled does not belong to tokens");
  u.rec.kind = PH_AZ_POLICY;
  u.rec.u.policy = (ph_az_policy){.id = "pol_0123456789abcdef",
                                  .port_min = 10,
                                  .port_max = 9};
  u.fields = PH_AZ_F_PORTS;
  is_int(wv(&u), PH_EINVAL, "a policy update of reversed ports");
  u.rec.u.policy.port_max = 10;
  is_int(wv(&u), PH_OK, "a policy update of one port");
  u.rec.u.policy.id = TOK;
  is_int(wv(&u), PH_EINVAL, "a policy named by a token id");

  ph_az_write d = {.size = sizeof(d), .action = PH_AZ_DELETE};
  d.rec.kind = PH_AZ_AGENT;
  d.rec.u.agent.name = "Edge";
  is_int(wv(&d), PH_EINVAL, "a delete of a bad name");
  d.rec.u.agent.name = "edge1";
  is_int(wv(&d), PH_OK, "a delete of an agent");
  ph_az_write r = {.size = sizeof(r), .action = PH_AZ_ROTATE};
  r.rec.kind = PH_AZ_USER;
  r.rec.u.user.name = "alice";
  is_int(wv(&r), PH_EINVAL, "only tokens rotate");
  r.rec.kind = PH_AZ_TOKEN;
  r.rec.u.token.id = TOK;
  is_int(wv(&r), PH_OK, "a rotate of a token");
  is_int(az_validate_write(NULL, NULL), PH_EINVAL, "NULL write");
}

static void test_validate_list(void) {
  ph_az_list l = {.size = sizeof(l), .kind = PH_AZ_TOKEN, .limit = 10};
  is_int(az_validate_list(&l, NULL), PH_OK, "a token list");
  l.limit = 0;
  is_int(az_validate_list(&l, NULL), PH_EINVAL, "limit 0");
  l.limit = PH_AZ_LIST_MAX + 1;
  is_int(az_validate_list(&l, NULL), PH_EINVAL, "limit 1001");
  l.limit = PH_AZ_LIST_MAX;
  is_int(az_validate_list(&l, NULL), PH_OK, "limit 1000");
  l.after = "alice";
  is_int(az_validate_list(&l, NULL), PH_EINVAL, "a name as a token cursor");
  l.after = TOK;
  l.user = "alice";
  l.agent = "edge1";
  is_int(az_validate_list(&l, NULL), PH_OK, "tokens by user and agent");
  l.kind = PH_AZ_USER;
  l.after = "bob";
  is_int(az_validate_list(&l, NULL), PH_EINVAL, "users have no agent filter");
  l.agent = NULL;
  is_int(az_validate_list(&l, NULL), PH_OK, "users owned by a user");
  l.kind = PH_AZ_POLICY;
  l.after = NULL;
  is_int(az_validate_list(&l, NULL), PH_EINVAL, "policies have no user filter");
  l.user = NULL;
  l.agent = "edge1";
  is_int(az_validate_list(&l, NULL), PH_OK, "policies of an agent");
  l.kind = 7;
  is_int(az_validate_list(&l, NULL), PH_EINVAL, "an unknown kind");
  l.kind = PH_AZ_AGENT;
  l.agent = NULL;
  l.size = 4;
  is_int(az_validate_list(&l, NULL), PH_EINVAL, "a list too short");
}

int main(void) {
  plan_lazy();
  test_patterns();
  test_decide();
  test_tokens();
  test_names_and_patterns();
  test_validate_write();
  test_validate_list();
  return done_testing();
}
