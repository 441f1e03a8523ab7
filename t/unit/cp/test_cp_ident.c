/* SPDX-License-Identifier: BSD-2-Clause */
/* The control plane transport's pure checks (cp_ident.c): which
 * addresses count as loopback for plaintext (CP-1-12, CP-9-9) and the
 * exact SPIFFE id a peer certificate must carry (CP-8-2). */
#include <string.h>

#include "cp_common/grpc/cp_addr_list.h"
#include "cp_common/grpc/cp_grpc.h"
#include "tap.h"

/* A TAP name with one string in it (valid until the next call). */
static const char *named(const char *fmt, const char *arg) {
  static char name[160];
  snprintf(name, sizeof(name), fmt, arg);
  return name;
}

static int sp(const char *uri) {
  return cp_spiffe_check(uri, strlen(uri), "example.org", "prod", "worker",
                         "w1");
}

int main(void) {
  plan_lazy();

  /* ---- loopback ---- */
  static const char *const yes[] = {"127.0.0.1:8443", "127.0.0.1:0",
                                    "127.1.2.3:1", "[::1]:50051",
                                    "127.255.255.254:65535"};
  for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
    char name[128];
    snprintf(name, sizeof(name), "CP-9-9 %s is loopback", yes[i]);
    ok(cp_addr_is_loopback(yes[i]), name);
  }
  static const char *const no[] = {
      "localhost:8443", /* a name: the resolver decides, not us */
      "0.0.0.0:8443",   "[::]:8443",        "10.0.0.1:8443",
      "128.0.0.1:1",    "::1:8443",         "[::1]",
      "127.0.0.1",      "127.0.0.1:",       "127.0.0.1:65536",
      "127.0.0.1:80a",  ":8443",            "",
      "[::1]x:1",       "127.0.0.1 :1",     "ipv4:127.0.0.1:1",
      "dns:///127.0.0.1:1", "[::ffff:8.8.8.8]:1", "127.0.0.1:123456",
      "[127.0.0.1]:1x"};
  for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
    char name[128];
    snprintf(name, sizeof(name), "CP-1-12 '%s' is not loopback", no[i]);
    ok(!cp_addr_is_loopback(no[i]), name);
  }
  ok(!cp_addr_is_loopback(NULL), "CP-1-12 NULL is not loopback");
  ok(cp_addr_is_loopback("[::ffff:127.0.0.1]:1"),
     "CP-9-9 an IPv4-mapped loopback address is loopback");

  /* ---- SPIFFE ---- */
  ok(sp("spiffe://example.org/prod/worker/w1"),
     "CP-8-2 the exact id is accepted");
  static const char *const bad[] = {
      "spiffe://example.org/prod/worker/w2",
      "spiffe://example.org/prod/worker/w1/",
      "spiffe://example.org/prod/worker/w1/x",
      "spiffe://example.org/prod/worker//w1",
      "spiffe://example.org/prod/checker/w1",
      "spiffe://example.org/staging/worker/w1",
      "spiffe://other.org/prod/worker/w1",
      "SPIFFE://example.org/prod/worker/w1",
      "spiffe://Example.org/prod/worker/w1",
      "spiffe://example.org/prod/Worker/w1",
      "spiffe://example.org/prod/worker/W1",
      "spiffe://example.org/prod/worker/w%31",
      "spiffe://example.org/prod/%77orker/w1",
      "spiffe://example.org//prod/worker/w1",
      "spiffe://example.org/prod/worker",
      "spiffe://example.org/prod/worker/",
      "spiffe:///prod/worker/w1",
      "spiffe:/example.org/prod/worker/w1",
      "https://example.org/prod/worker/w1",
      "spiffe://example.org/prod/worker/w1 ",
      " spiffe://example.org/prod/worker/w1",
      "spiffe://example.org/prod/worker/w1?x",
      "spiffe://example.org/prod/worker/w1#x",
      "spiffe://user@example.org/prod/worker/w1",
      "spiffe://example.org:443/prod/worker/w1",
      "",
      "spiffe://"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    ok(!sp(bad[i]), named("CP-8-2 '%s' is refused", bad[i]));
  {
    const char nul[] = "spiffe://example.org/prod/worker/w1\0";
    ok(!cp_spiffe_check(nul, sizeof(nul) - 1, "example.org", "prod",
                        "worker", "w1"),
       "CP-8-2 a NUL after the id is refused");
    const char mid[] = "spiffe://example.org/pr\0d/worker/w1";
    ok(!cp_spiffe_check(mid, sizeof(mid) - 1, "example.org", "pr\0d",
                        "worker", "w1"),
       "CP-8-2 a NUL inside is refused");
    const char tab[] = "spiffe://example.org/prod/worker/w\t1";
    ok(!cp_spiffe_check(tab, sizeof(tab) - 1, "example.org", "prod",
                        "worker", "w\t1"),
       "CP-8-2 a control byte is refused even when expected");
  }
  ok(cp_spiffe_check("spiffe://td/env/checker/c-9", 27, "td", "env",
                     "checker", "c-9"),
     "CP-8-2 a checker id is accepted for role checker");
  ok(!cp_spiffe_check("spiffe://td/env/admin/c", 23, "td", "env", "admin",
                      "c"),
     "CP-8-2 a role other than worker/checker is refused");
  ok(!cp_spiffe_check("spiffe://td/env/worker/", 23, "td", "env", "worker",
                      ""),
     "CP-8-2 an empty expected id is refused");
  ok(!cp_spiffe_check("spiffe://td/a/b/worker/w", 24, "td", "a/b", "worker",
                      "w"),
     "CP-8-2 an expected part with '/' is refused");
  ok(!cp_spiffe_check(NULL, 0, "td", "env", "worker", "w"),
     "CP-8-2 NULL is refused");

  /* ---- the id out of a URI ---- */
  char id[16];
  const char *u = "spiffe://example.org/prod/worker/w-17";
  is_int(cp_spiffe_id(u, strlen(u), "example.org", "prod", "worker", id,
                      sizeof(id)),
         0, "CP-8-2 the worker id is read from an exact URI");
  is_str(id, "w-17", "CP-8-2 and it is the last segment");
  static const char *const noid[] = {
      "spiffe://example.org/prod/worker/",
      "spiffe://example.org/prod/worker/w1/",
      "spiffe://example.org/prod/worker/a/b",
      "spiffe://example.org/prod/checker/w1",
      "spiffe://example.org/prod/worker/w%31",
      "spiffe://example.org/staging/worker/w1",
      "spiffe://example.org/prod/worker/0123456789abcdef"};
  for (size_t i = 0; i < sizeof(noid) / sizeof(noid[0]); i++)
    ok(cp_spiffe_id(noid[i], strlen(noid[i]), "example.org", "prod",
                    "worker", id, sizeof(id)) < 0 &&
           id[0] == '\0',
       named("CP-8-2 no id from '%s'", noid[i]));
  {
    const char nul[] = "spiffe://example.org/prod/worker/w1\0x";
    ok(cp_spiffe_id(nul, sizeof(nul) - 1, "example.org", "prod", "worker",
                    id, sizeof(id)) < 0,
       "CP-8-2 no id when a NUL is inside");
  }
  /* ---- a list of controllers (issue 26 "Several controllers") ---- */
  {
    const char *why = NULL;
    char t[CP_ADDR_LIST_CHARS + 8], a[CP_ADDR_ONE_MAX + 1];
    is_int(cp_addr_list_check("127.0.0.1:7001", &why), 1, "one address");
    is_int(cp_addr_list_check("cp.example.org:443", &why), 1,
           "one name");
    is_int(cp_addr_list_check("127.0.0.1:7001,127.0.0.2:7002", &why), 2,
           "two IPv4 addresses");
    is_int(cp_addr_list_check("[::1]:1,[::1]:2,[::1]:3,[::1]:4", &why), 4,
           "four IPv6 addresses: the bound");
    static const char *const lists_bad[] = {
        "", ",", "127.0.0.1:1,", ",127.0.0.1:1", "127.0.0.1:1,,127.0.0.1:2",
        "127.0.0.1:1,127.0.0.1:1", "127.0.0.1:1,[::1]:2",
        "a.example:1,b.example:2", "127.0.0.1:0", "127.0.0.1:65536",
        "127.0.0.1", "::1:5", "[::1]:1,[::1]:2,[::1]:3,[::1]:4,[::1]:5",
        "[127.0.0.1]:1", "127.0.0.1:1 ,127.0.0.1:2"};
    for (size_t i = 0; i < sizeof(lists_bad) / sizeof(lists_bad[0]); i++) {
      why = NULL;
      ok(cp_addr_list_check(lists_bad[i], &why) < 0 && why,
         named("list refused: '%s'", lists_bad[i]));
    }
    ok(cp_addr_list_target("127.0.0.1:7001", t, sizeof(t)) == 0 &&
           strcmp(t, "127.0.0.1:7001") == 0,
       "one address is its own gRPC target");
    ok(cp_addr_list_target("127.0.0.1:1,127.0.0.1:2", t, sizeof(t)) == 0 &&
           strcmp(t, "ipv4:127.0.0.1:1,127.0.0.1:2") == 0,
       "an IPv4 list is an ipv4: target");
    ok(cp_addr_list_target("[::1]:1,[::1]:2", t, sizeof(t)) == 0 &&
           strcmp(t, "ipv6:[::1]:1,[::1]:2") == 0,
       "an IPv6 list is an ipv6: target");
    ok(cp_addr_list_nth("127.0.0.1:1,127.0.0.2:2", 1, a, sizeof(a)) == 0 &&
           strcmp(a, "127.0.0.2:2") == 0 &&
           cp_addr_list_nth("127.0.0.1:1,127.0.0.2:2", 2, a, sizeof(a)) < 0,
       "the n-th address");
    ok(cp_addr_list_loopback("127.0.0.1:1,[::1]:2") &&
           !cp_addr_list_loopback("127.0.0.1:1,10.0.0.1:2"),
       "CP-1-12 plaintext: every address of a list loopback");
  }
  return done_testing();
}
