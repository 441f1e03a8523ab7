/* SPDX-License-Identifier: BSD-2-Clause */
/* The frontends' client access list (client_acl.h, cidr.h) and the
 * access line's client text (access_log.h): allowed and refused clients
 * of both families, IPv4-mapped IPv6 clients, the bounds. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "frontend/access_log.h"
#include "frontend/client_acl.h"
#include "tap.h"

/* The address ip:port of family fam (AF_INET or AF_INET6). */
static struct sockaddr_storage addr(int fam, const char *ip, int port) {
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof(ss));
  if (fam == AF_INET) {
    struct sockaddr_in *a = (struct sockaddr_in *)&ss;
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    inet_pton(AF_INET, ip, &a->sin_addr);
  } else {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    inet_pton(AF_INET6, ip, &a->sin6_addr);
  }
  return ss;
}

static struct sockaddr_storage v4(const char *ip, int port) {
  return addr(AF_INET, ip, port);
}

static struct sockaddr_storage v6(const char *ip, int port) {
  return addr(AF_INET6, ip, port);
}

static int allows(const client_acl *acl, struct sockaddr_storage ss) {
  return client_acl_allows(acl, (const struct sockaddr *)&ss);
}

static void test_default_loopback(void) {
  client_acl acl = {.n = 0};
  ok(client_acl_add(&acl, "127.0.0.0/8") == 0 &&
         client_acl_add(&acl, "::1/128") == 0,
     "the default list parses");
  ok(allows(&acl, v4("127.0.0.1", 1)), "127.0.0.1 allowed");
  ok(allows(&acl, v4("127.0.0.2", 1)), "127.0.0.2 allowed (all of 127/8)");
  ok(allows(&acl, v6("::1", 1)), "::1 allowed");
  ok(!allows(&acl, v4("10.0.0.1", 1)), "10.0.0.1 refused");
  ok(!allows(&acl, v6("2001:db8::1", 1)), "2001:db8::1 refused");
  ok(allows(&acl, v6("::ffff:127.0.0.1", 1)),
     "v4-mapped ::ffff:127.0.0.1 is 127.0.0.1: allowed");
  ok(!allows(&acl, v6("::ffff:10.0.0.1", 1)),
     "v4-mapped ::ffff:10.0.0.1 is 10.0.0.1: refused");
  ok(!client_acl_allows(&acl, NULL), "no address: refused");
  struct sockaddr_storage un;
  memset(&un, 0, sizeof(un));
  un.ss_family = AF_UNIX;
  ok(!allows(&acl, un), "another family: refused");
}

static void test_lists(void) {
  client_acl acl = {.n = 0};
  ok(client_acl_add(&acl, "127.0.0.1/32") == 0, "a /32");
  ok(!allows(&acl, v4("127.0.0.2", 1)), "127.0.0.2 outside 127.0.0.1/32");
  ok(client_acl_add(&acl, "192.0.2.0/24") == 0 &&
         client_acl_add(&acl, "2001:db8::/32") == 0 &&
         client_acl_add(&acl, "::ffff:198.51.100.0/120") == 0,
     "v4, v6 and v4-mapped networks");
  ok(allows(&acl, v4("192.0.2.77", 1)), "192.0.2.77 inside /24");
  ok(!allows(&acl, v4("192.0.3.1", 1)), "192.0.3.1 outside /24");
  ok(allows(&acl, v6("2001:db8:ffff::1", 1)), "inside 2001:db8::/32");
  ok(!allows(&acl, v6("2001:db9::1", 1)), "outside 2001:db8::/32");
  ok(allows(&acl, v4("198.51.100.9", 1)),
     "a v4-mapped network matches plain IPv4 clients");
  ok(allows(&acl, v6("::ffff:192.0.2.1", 1)),
     "an IPv4 network matches a v4-mapped client");
  client_acl all = {.n = 0};
  ok(client_acl_add(&all, "0.0.0.0/0") == 0 && client_acl_add(&all, "::/0") == 0,
     "everyone, written out");
  ok(allows(&all, v4("203.0.113.5", 1)) && allows(&all, v6("2001:db8::5", 1)),
     "0.0.0.0/0, ::/0 allow every client");
}

static void test_bad(void) {
  client_acl acl = {.n = 0};
  static const char *const bad[] = {"",          "localhost",   "10.0.0.0/33",
                                    "::/129",    "10.0.0.0/",   "10.0.0.0/-1",
                                    "10.0.0/8",  "10.0.0.0/8x", "[::1]/128",
                                    "::ffff:10.0.0.0/95"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char what[80];
    snprintf(what, sizeof(what), "\"%s\" is refused", bad[i]);
    is_int(client_acl_add(&acl, bad[i]), -1, what);
  }
  is_int((int)acl.n, 0, "nothing was added");
  for (int i = 0; i < CLIENT_ACL_MAX; i++)
    client_acl_add(&acl, "10.0.0.0/8");
  is_int(client_acl_add(&acl, "10.0.0.0/8"), -2, "at most 64 networks");
}

static void test_peer_text(void) {
  char t[ACCESS_PEER_TEXT];
  struct sockaddr_storage a = v4("127.0.0.2", 40112);
  is_str(access_peer_text(&a, t), "127.0.0.2:40112", "IPv4 client text");
  a = v6("2001:db8::1", 443);
  is_str(access_peer_text(&a, t), "[2001:db8::1]:443", "IPv6 client text");
  a = v6("::ffff:192.0.2.1", 9);
  is_str(access_peer_text(&a, t), "192.0.2.1:9", "v4-mapped as IPv4");
  is_str(access_peer_text(NULL, t), "-", "none");
  char b[300];
  is_str(access_target_text("example.com", 443, b, sizeof(b)),
         "example.com:443", "target name");
  is_str(access_target_text("2001:db8::1", 80, b, sizeof(b)),
         "[2001:db8::1]:80", "target IPv6 literal in brackets");
  is_str(access_socks5_reply_name(0), "succeeded", "reply 0");
  is_str(access_socks5_reply_name(5), "connection_refused", "reply 5");
  is_str(access_socks5_reply_name(-1), "-", "no reply");
  is_str(access_socks5_reply_name(42), "unknown", "an unknown reply");
}

int main(void) {
  plan_lazy();
  test_default_loopback();
  test_lists();
  test_bad();
  test_peer_text();
  return done_testing();
}
