/* SPDX-License-Identifier: BSD-2-Clause */
/* The direct connector's target policy (pure code): host parsing, CIDR,
 * host-suffix and port rules, allow lists, and the process's own
 * listeners (CP-1-25: a direct route passes the target policy; TM-P0-6:
 * the policy check is part of the dial task and does no I/O). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "direct/policy.h"
#include "tap.h"

/* A sockaddr for "ip" and port. */
static struct sockaddr_storage sa(const char *ip, uint16_t port) {
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof(ss));
  struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
  struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
  if (inet_pton(AF_INET, ip, &s4->sin_addr) == 1) {
    s4->sin_family = AF_INET;
    s4->sin_port = htons(port);
  } else if (inet_pton(AF_INET6, ip, &s6->sin6_addr) == 1) {
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(port);
  } else {
    printf("# bad test address %s\n", ip);
    abort();
  }
  return ss;
}

static size_t sa_size(const struct sockaddr_storage *ss) {
  return ss->ss_family == AF_INET ? sizeof(struct sockaddr_in)
                                  : sizeof(struct sockaddr_in6);
}

/* The whole decision for a literal address: port, then the address. */
static int addr_ok(const policy *p, const char *ip, uint16_t port) {
  struct sockaddr_storage ss = sa(ip, port);
  int v = policy_check_name(p, NULL, port);
  return v != POLICY_DENIED &&
         policy_check_addr(p, (const struct sockaddr *)&ss, v);
}

/* The whole decision for a name resolving to ip. */
static int name_ok(const policy *p, const char *name, const char *ip,
                   uint16_t port) {
  int v = policy_check_name(p, name, port);
  if (v == POLICY_DENIED)
    return 0;
  struct sockaddr_storage ss = sa(ip, port);
  return policy_check_addr(p, (const struct sockaddr *)&ss, v);
}

static void listen_on(policy *p, const char *ip, uint16_t port, int bound) {
  struct sockaddr_storage ss = sa(ip, port);
  policy_listener(p, (const struct sockaddr *)&ss, sa_size(&ss), bound);
}

static void test_parse_host(void) {
  struct sockaddr_storage ss;
  char name[POLICY_MAX_NAME + 1];
  is_int(policy_parse_host("192.0.2.7", 80, &ss, name), POLICY_HOST_LITERAL,
         "IPv4 literal");
  ok(ss.ss_family == AF_INET &&
         ntohs(((struct sockaddr_in *)&ss)->sin_port) == 80,
     "IPv4 literal carries the port");
  is_int(policy_parse_host("2001:db8::1", 443, &ss, name), POLICY_HOST_LITERAL,
         "IPv6 literal");
  ok(ss.ss_family == AF_INET6 &&
         ntohs(((struct sockaddr_in6 *)&ss)->sin6_port) == 443,
     "IPv6 literal carries the port");
  is_int(policy_parse_host("[::1]", 1, &ss, name), POLICY_HOST_LITERAL,
         "bracketed IPv6 literal");
  is_int(policy_parse_host("[127.0.0.1]", 1, &ss, name), POLICY_HOST_BAD,
         "brackets only around IPv6");
  is_int(policy_parse_host("Www.Example.COM.", 1, &ss, name), POLICY_HOST_NAME,
         "a name with a trailing dot");
  is_str(name, "www.example.com", "names are lower-cased, dot removed");
  is_int(policy_parse_host("_srv-x.example", 1, &ss, name), POLICY_HOST_NAME,
         "underscores and hyphens are allowed");
  const char *bad[] = {"",         ".",    "a..b", ".a",
                       "bad name", "a%b",  "a/b",  "a:b",
                       "[::1",     "::1]", "a\tb", "ex\xc3\xa4mple.com"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    is_int(policy_parse_host(bad[i], 1, &ss, name), POLICY_HOST_BAD,
           "malformed host refused");
  char label[80];
  memset(label, 'a', 64);
  label[64] = '\0';
  is_int(policy_parse_host(label, 1, &ss, name), POLICY_HOST_BAD,
         "a 64-byte label is refused");
  label[63] = '\0';
  is_int(policy_parse_host(label, 1, &ss, name), POLICY_HOST_NAME,
         "a 63-byte label is fine");
  char longname[300];
  size_t k = 0;
  while (k + 2 < 255) {
    longname[k++] = 'a';
    longname[k++] = '.';
  }
  longname[k++] = 'a';
  longname[k] = '\0';
  is_int(policy_parse_host(longname, 1, &ss, name), POLICY_HOST_BAD,
         "a name over 253 bytes is refused");
}

/* Rules added to a deny list, one TAP line each: what add returns. */
typedef struct rule_case {
  const char *text;
  int want;
  const char *what;
} rule_case;

static void add_rules(policy *p, int (*add)(policy *, int, const char *),
                      const rule_case *c, size_t n) {
  for (size_t i = 0; i < n; i++)
    is_int(add(p, POLICY_DENY, c[i].text), c[i].want, c[i].what);
}

static void test_cidrs(void) {
  static const rule_case cidrs[] = {
      {"10.1.2.3/8", 0, "host bits are allowed and masked"},
      {"192.168.1.1", 0, "a bare IPv4 address is /32"},
      {"2001:db8::/32", 0, "IPv6 prefix"},
      {"::ffff:172.16.0.0/108", 0, "IPv4-mapped prefix is the IPv4 prefix"},
      {"fe80::/10", 0, "odd prefix"},
  };
  policy *p = policy_new();
  add_rules(p, policy_add_cidr, cidrs, sizeof(cidrs) / sizeof(cidrs[0]));
  const char *bad[] = {"10.0.0.0/33",  "::/129",   "abc",
                       "10.0.0.0/",    "/8",       "10.0.0.0/-1",
                       "10.0.0.0/8/8", "10.0.0/8", "::ffff:10.0.0.0/95",
                       "10.0.0.0/ 8",  ""};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    is_int(policy_add_cidr(p, POLICY_DENY, bad[i]), -1, "bad CIDR refused");

  ok(!addr_ok(p, "10.200.3.4", 80), "inside 10/8 denied");
  ok(addr_ok(p, "11.0.0.1", 80), "outside 10/8 allowed");
  ok(!addr_ok(p, "192.168.1.1", 80), "the /32 denied");
  ok(addr_ok(p, "192.168.1.2", 80), "its neighbour allowed");
  ok(!addr_ok(p, "::ffff:10.0.0.1", 80),
     "an IPv4-mapped IPv6 address is checked as IPv4");
  ok(!addr_ok(p, "172.31.255.255", 80), "mapped prefix applies to IPv4");
  ok(addr_ok(p, "172.32.0.0", 80), "outside the mapped prefix");
  ok(!addr_ok(p, "2001:db8:ffff::1", 80), "inside the IPv6 prefix");
  ok(addr_ok(p, "2001:db9::1", 80), "outside the IPv6 prefix");
  ok(!addr_ok(p, "febf::1", 80), "inside fe80::/10");
  ok(addr_ok(p, "fec0::1", 80), "outside fe80::/10");
  policy_free(p);

  p = policy_new();
  int rc = 0;
  for (int i = 0; i < POLICY_MAX_RULES && rc == 0; i++)
    rc = policy_add_cidr(p, POLICY_DENY, "10.0.0.0/8");
  is_int(rc, 0, "a list holds POLICY_MAX_RULES rules");
  is_int(policy_add_cidr(p, POLICY_DENY, "10.0.0.0/8"), -2,
         "one more is refused");
  policy_free(p);
}

static void test_hosts(void) {
  static const rule_case hosts[] = {
      {".Blocked.Example", 0, "suffix pattern"},
      {"exact.example.", 0, "exact pattern (trailing dot ignored)"},
      {"*.example", -1, "wildcards are not a pattern syntax"},
      {"..", -1, "empty label refused"},
      {"", -1, "empty pattern refused"},
  };
  policy *p = policy_new();
  add_rules(p, policy_add_host, hosts, sizeof(hosts) / sizeof(hosts[0]));
  ok(!name_ok(p, "blocked.example", "192.0.2.1", 80),
     ".suffix matches the domain itself");
  ok(!name_ok(p, "a.b.blocked.example", "192.0.2.1", 80),
     ".suffix matches names under it");
  ok(name_ok(p, "notblocked.example", "192.0.2.1", 80),
     ".suffix does not match a longer label");
  ok(!name_ok(p, "exact.example", "192.0.2.1", 80), "exact name denied");
  ok(name_ok(p, "www.exact.example", "192.0.2.1", 80),
     "exact pattern does not cover subdomains");
  ok(addr_ok(p, "192.0.2.1", 80), "host rules do not apply to literals");
  policy_free(p);
}

static void test_ports(void) {
  policy *p = policy_new();
  is_int(policy_add_ports(p, POLICY_DENY, "25"), 0, "single port");
  is_int(policy_add_ports(p, POLICY_ALLOW, "80"), 0, "allow 80");
  is_int(policy_add_ports(p, POLICY_ALLOW, "8000-8999"), 0, "allow range");
  is_int(policy_add_ports(p, POLICY_ALLOW, "25"), 0, "allow 25 as well");
  const char *bad[] = {"0",  "65536", "70000", "5-3", "a",     "1-",
                       "-1", "",      "1-2-3", "+5",  "123456"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    is_int(policy_add_ports(p, POLICY_DENY, bad[i]), -1, "bad port refused");
  ok(addr_ok(p, "192.0.2.1", 80), "allowed port");
  ok(addr_ok(p, "192.0.2.1", 8000) && addr_ok(p, "192.0.2.1", 8999),
     "range is inclusive");
  ok(!addr_ok(p, "192.0.2.1", 9000), "outside the allowed ports");
  ok(!addr_ok(p, "192.0.2.1", 25), "deny wins over allow");
  is_int(policy_check_name(p, "a.example", 443), POLICY_DENIED,
         "the port is checked before DNS");
  policy_free(p);
}

static void test_allow_lists(void) {
  policy *p = policy_new();
  policy_add_host(p, POLICY_ALLOW, ".corp.example");
  is_int(policy_check_name(p, "www.corp.example", 443), POLICY_PASS_BY_NAME,
         "allowed name passes by name");
  is_int(policy_check_name(p, "www.other.example", 443), POLICY_DENIED,
         "allow_hosts alone denies other names before DNS");
  ok(name_ok(p, "www.corp.example", "203.0.113.9", 443),
     "an allowed name may resolve anywhere");
  ok(!addr_ok(p, "203.0.113.9", 443),
     "literals are not names: allow_hosts does not allow them");
  policy_free(p);

  p = policy_new();
  policy_add_cidr(p, POLICY_ALLOW, "198.51.100.0/24");
  policy_add_host(p, POLICY_ALLOW, "www.corp.example");
  policy_add_cidr(p, POLICY_DENY, "198.51.100.66");
  ok(addr_ok(p, "198.51.100.7", 443), "literal inside allow_cidrs");
  ok(!addr_ok(p, "198.51.101.7", 443), "literal outside allow_cidrs");
  ok(name_ok(p, "other.example", "198.51.100.7", 443),
     "any name resolving inside allow_cidrs");
  ok(!name_ok(p, "other.example", "192.0.2.1", 443),
     "a name resolving outside allow_cidrs");
  ok(name_ok(p, "www.corp.example", "192.0.2.1", 443),
     "allow_hosts passes whatever the address");
  ok(!name_ok(p, "www.corp.example", "198.51.100.66", 443),
     "deny_cidrs still applies to an allowed name");
  policy_free(p);
}

static void test_own_listeners(void) {
  policy *p = policy_new();
  listen_on(p, "127.0.0.1", 1080, 1);
  is_int((int)policy_listener_count(p), 1, "listener remembered");
  ok(!addr_ok(p, "127.0.0.1", 1080), "our listener's address and port");
  ok(addr_ok(p, "127.0.0.1", 1081), "another port is fine");
  ok(addr_ok(p, "127.0.0.2", 1080), "another loopback address is fine");
  ok(!addr_ok(p, "0.0.0.0", 1080), "0.0.0.0 reaches the local host");
  ok(!addr_ok(p, "::", 1080), ":: reaches the local host");
  ok(!addr_ok(p, "::ffff:127.0.0.1", 1080), "IPv4-mapped form of it");
  is_int(policy_check_name(p, "localhost", 1080), POLICY_DENIED,
         "localhost:1080 is refused before DNS");
  is_int(policy_check_name(p, "db.localhost", 1080), POLICY_DENIED,
         "*.localhost is loopback too");
  is_int(policy_check_name(p, "localhost", 1081), POLICY_PASS,
         "localhost on another port passes");
  ok(!name_ok(p, "self.example", "127.0.0.1", 1080),
     "a name resolving to our listener is refused after DNS");

  listen_on(p, "0.0.0.0", 8080, 1);
  ok(!addr_ok(p, "127.0.0.9", 8080), "wildcard: any loopback address");
  ok(!addr_ok(p, "::1", 8080), "wildcard: IPv6 loopback too");
  ok(addr_ok(p, "10.9.8.7", 8080), "wildcard: a remote address is fine");
  struct sockaddr_storage local = sa("10.9.8.7", 0);
  policy_add_local(p, (const struct sockaddr *)&local);
  ok(!addr_ok(p, "10.9.8.7", 8080), "wildcard: a local interface address");
  policy_clear_local(p);
  ok(addr_ok(p, "10.9.8.7", 8080), "local addresses can be replaced");
  is_int(policy_check_name(p, "localhost", 8080), POLICY_DENIED,
         "wildcard listener: localhost refused");

  listen_on(p, "::1", 1443, 1);
  ok(!addr_ok(p, "::1", 1443), "IPv6 listener");
  ok(addr_ok(p, "127.0.0.1", 1443), "not reachable over IPv4 loopback");

  /* Copy to a new policy (what a reload does), then close listeners. */
  policy *q = policy_new();
  policy_copy_learned(q, p);
  ok(!addr_ok(q, "127.0.0.1", 1080), "learned listeners survive a reload");
  policy_free(q);

  listen_on(p, "127.0.0.1", 1080, 1); /* a second identical listener */
  listen_on(p, "127.0.0.1", 1080, 0);
  ok(!addr_ok(p, "127.0.0.1", 1080), "one of two identical listeners closed");
  listen_on(p, "127.0.0.1", 1080, 0);
  ok(addr_ok(p, "127.0.0.1", 1080), "both closed: allowed again");
  listen_on(p, "127.0.0.1", 1080, 0);
  ok(addr_ok(p, "127.0.0.1", 1080), "closing an unknown listener is harmless");

  policy_set_deny_own(p, 0);
  ok(addr_ok(p, "127.0.0.1", 8080), "deny_own_listeners off");
  policy_free(p);

  p = policy_new();
  struct sockaddr_storage un;
  memset(&un, 0, sizeof(un));
  un.ss_family = AF_UNIX;
  is_int(policy_listener(p, (const struct sockaddr *)&un, sizeof(un), 1), -1,
         "non-IP listener refused");
  struct sockaddr_storage v6 = sa("::1", 5);
  is_int(policy_listener(p, (const struct sockaddr *)&v6, 8, 1), -1,
         "short address refused");
  int rc = 0;
  for (int i = 0; i < POLICY_MAX_LISTENERS && rc == 0; i++) {
    struct sockaddr_storage s = sa("127.0.0.1", (uint16_t)(2000 + i));
    rc = policy_listener(p, (const struct sockaddr *)&s, sa_size(&s), 1);
  }
  is_int(rc, 0, "POLICY_MAX_LISTENERS listeners fit");
  struct sockaddr_storage s = sa("127.0.0.1", 9999);
  is_int(policy_listener(p, (const struct sockaddr *)&s, sa_size(&s), 1), -2,
         "one more is reported");
  policy_free(p);
}

int main(void) {
  plan_lazy();
  test_parse_host();
  test_cidrs();
  test_hosts();
  test_ports();
  test_allow_lists();
  test_own_listeners();
  return done_testing();
}
