/* SPDX-License-Identifier: BSD-2-Clause */
/* The SOCKS5 handshake codec: greetings, RFC 1929 authentication,
 * requests for every address type, incremental parsing (every prefix of
 * a valid message asks for more, never a verdict), hostile lengths, and
 * the encoded answers. Covers TM-PROTO-3 (the domain name reaches the
 * connector unresolved), TM-PROTO-7 (BIND and UDP ASSOCIATE answer
 * "command not supported"), TM-PROTO-30..36 (the reply codes, with
 * open_map_socks5) and TM-SEC-1 (bounded input). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "frontend/open_map.h"
#include "socks5/socks5_proto.h"
#include "tap.h"

/* Every strict prefix of a complete message is NEED_MORE. */
static int prefixes_need_more(int (*parse)(const uint8_t *, size_t, void *),
                              const uint8_t *p, size_t n) {
  uint8_t out[512];
  for (size_t i = 0; i < n; i++)
    if (parse(p, i, out) != S5_NEED_MORE)
      return 0;
  return 1;
}

static int greeting_(const uint8_t *p, size_t n, void *o) {
  return s5_parse_greeting(p, n, o);
}
static int auth_(const uint8_t *p, size_t n, void *o) {
  return s5_parse_auth(p, n, o);
}
static int request_(const uint8_t *p, size_t n, void *o) {
  return s5_parse_request(p, n, o);
}

static void test_greeting(void) {
  s5_greeting g;
  const uint8_t none[] = {5, 1, 0};
  is_int(s5_parse_greeting(none, sizeof(none), &g), 3, "greeting parsed");
  ok(g.no_auth && !g.password, "no-auth offered");
  ok(prefixes_need_more(greeting_, none, sizeof(none)),
     "a partial greeting waits for more");

  const uint8_t both[] = {5, 3, 0x80, 2, 0, 0xEE};
  is_int(s5_parse_greeting(both, sizeof(both), &g), 5,
         "greeting length excludes what follows (pipelined)");
  ok(g.no_auth && g.password, "both methods seen among unknown ones");

  const uint8_t v4[] = {4, 1, 0};
  is_int(s5_parse_greeting(v4, 1, &g), S5_ERR_VERSION,
         "SOCKS4 refused at the first byte");
  const uint8_t zero[] = {5, 0};
  is_int(s5_parse_greeting(zero, 2, &g), S5_ERR_MALFORMED,
         "no methods at all is malformed");

  uint8_t big[2 + 255];
  memset(big, 0x7F, sizeof(big));
  big[0] = 5;
  big[1] = 255;
  is_int(s5_parse_greeting(big, 200, &g), S5_NEED_MORE,
         "255 methods: waits for all of them");
  is_int(s5_parse_greeting(big, sizeof(big), &g), 257,
         "255 methods: the largest greeting");
  ok(!g.no_auth && !g.password, "nothing acceptable in it");
}

static void test_auth(void) {
  s5_auth a;
  const uint8_t m[] = {1, 5, 'a', 'l', 'i', 'c', 'e', 3, 'p', 'w', 'd', 9};
  is_int(s5_parse_auth(m, sizeof(m), &a), 11, "RFC 1929 request parsed");
  ok(a.user_len == 5 && memcmp(a.user, "alice", 5) == 0, "username");
  ok(a.pass_len == 3 && memcmp(a.pass, "pwd", 3) == 0, "password");
  ok(prefixes_need_more(auth_, m, 11), "a partial request waits");

  const uint8_t empty_pass[] = {1, 1, 'u', 0};
  is_int(s5_parse_auth(empty_pass, 4, &a), 4,
         "an empty password is passed on (the authorizer decides)");
  const uint8_t no_user[] = {1, 0, 0};
  is_int(s5_parse_auth(no_user, 3, &a), S5_ERR_MALFORMED,
         "an empty username is malformed");
  const uint8_t v5[] = {5, 1, 'u', 0};
  is_int(s5_parse_auth(v5, 4, &a), S5_ERR_VERSION,
         "sub-negotiation version must be 1");

  uint8_t big[S5_MAX_MESSAGE];
  memset(big, 'x', sizeof(big));
  big[0] = 1;
  big[1] = 255;
  big[2 + 255] = 255;
  is_int(s5_parse_auth(big, sizeof(big), &a), S5_MAX_MESSAGE,
         "255+255 bytes: the largest message fits S5_MAX_MESSAGE");
  is_int(s5_parse_auth(big, sizeof(big) - 1, &a), S5_NEED_MORE,
         "one byte short waits");
}

static void test_request(void) {
  s5_request q;
  const uint8_t v4[] = {5, 1, 0, 1, 127, 0, 0, 1, 0x1F, 0x90, 'G'};
  is_int(s5_parse_request(v4, sizeof(v4), &q), 10, "IPv4 CONNECT parsed");
  is_str(q.host, "127.0.0.1", "IPv4 address as text");
  is_int(q.port, 8080, "port in network order");
  is_int(q.atyp, S5_ATYP_IPV4, "address type");
  ok(prefixes_need_more(request_, v4, 10), "partial IPv4 request waits");

  uint8_t v6[22] = {5, 1, 0, 4};
  v6[4 + 15] = 1; /* ::1 */
  v6[20] = 0x01;
  v6[21] = 0xBB;
  is_int(s5_parse_request(v6, sizeof(v6), &q), 22, "IPv6 CONNECT parsed");
  is_str(q.host, "::1", "IPv6 address as text");
  is_int(q.port, 443, "IPv6 port");
  ok(prefixes_need_more(request_, v6, 22), "partial IPv6 request waits");

  const uint8_t dn[] = {5,   1,   0,   3,   11,  'e', 'x', 'a', 'm',
                        'p', 'l', 'e', '.', 'o', 'r', 'g', 0,   80};
  is_int(s5_parse_request(dn, sizeof(dn), &q), 18, "domain CONNECT parsed");
  is_str(q.host, "example.org", "the name is kept unresolved (remote DNS)");
  is_int(q.atyp, S5_ATYP_DOMAIN, "domain address type");
  ok(prefixes_need_more(request_, dn, sizeof(dn)), "partial domain waits");

  uint8_t longest[4 + 1 + 255 + 2];
  memset(longest, 'a', sizeof(longest));
  memcpy(longest, "\x05\x01\x00\x03\xff", 5);
  longest[sizeof(longest) - 2] = 0;
  longest[sizeof(longest) - 1] = 1;
  is_int(s5_parse_request(longest, sizeof(longest), &q), 262,
         "a 255-byte name is the longest request");
  is_int((long long)strlen(q.host), 255, "and is kept whole");

  const uint8_t bind[] = {5, 2, 0, 1, 1, 2, 3, 4, 0, 80};
  is_int(s5_parse_request(bind, 2, &q), S5_ERR_COMMAND,
         "BIND refused as soon as the command byte arrives");
  is_int(s5_error_reply(S5_ERR_COMMAND), 0x07, "BIND answers 0x07");
  const uint8_t udp[] = {5, 3, 0, 1};
  is_int(s5_parse_request(udp, 4, &q), S5_ERR_COMMAND,
         "UDP ASSOCIATE refused too");
  const uint8_t atyp[] = {5, 1, 0, 9, 1, 2};
  is_int(s5_parse_request(atyp, 4, &q), S5_ERR_ATYP,
         "unknown address type refused at its byte");
  is_int(s5_error_reply(S5_ERR_ATYP), 0x08, "and answers 0x08");
  const uint8_t empty[] = {5, 1, 0, 3, 0, 0, 80};
  is_int(s5_parse_request(empty, sizeof(empty), &q), S5_ERR_ADDRESS,
         "an empty name is refused");
  const uint8_t nul[] = {5, 1, 0, 3, 3, 'a', 0, 'b', 0, 80};
  is_int(s5_parse_request(nul, sizeof(nul), &q), S5_ERR_ADDRESS,
         "a NUL inside the name is refused (no truncated host)");
  const uint8_t port0[] = {5, 1, 0, 1, 1, 2, 3, 4, 0, 0};
  is_int(s5_parse_request(port0, sizeof(port0), &q), S5_ERR_ADDRESS,
         "port 0 is refused");
  is_int(s5_error_reply(S5_ERR_ADDRESS), 0x01,
         "an unusable address answers general failure");
  const uint8_t v4req[] = {4, 1, 0, 80};
  is_int(s5_parse_request(v4req, 4, &q), S5_ERR_VERSION,
         "a wrong version in the request");
  is_int(s5_error_reply(S5_ERR_VERSION), -1, "gets no reply at all");
}

static void test_encode(void) {
  uint8_t b[S5_MAX_REPLY];
  is_int(s5_encode_method(b, S5_METHOD_UNACCEPTABLE), 2, "method answer");
  ok(b[0] == 5 && b[1] == 0xFF, "0xFF: no acceptable method");
  is_int(s5_encode_auth_status(b, 1), 2, "auth status");
  ok(b[0] == 1 && b[1] == 0, "success status");
  s5_encode_auth_status(b, 0);
  ok(b[1] != 0, "failure status is non-zero");

  struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons(4242)};
  inet_pton(AF_INET, "10.1.2.3", &a4.sin_addr);
  is_int(s5_encode_reply(b, 0, (struct sockaddr *)&a4), 10, "IPv4 reply");
  const uint8_t want4[] = {5, 0, 0, 1, 10, 1, 2, 3, 0x10, 0x92};
  ok(memcmp(b, want4, 10) == 0, "BND.ADDR and BND.PORT of the target socket");

  struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons(443)};
  inet_pton(AF_INET6, "2001:db8::1", &a6.sin6_addr);
  is_int(s5_encode_reply(b, 0, (struct sockaddr *)&a6), 22, "IPv6 reply");
  ok(b[3] == 4 && b[4] == 0x20 && b[19] == 1 && b[20] == 1 && b[21] == 0xBB,
     "IPv6 bound address encoded");

  is_int(s5_encode_reply(b, SOCKS5_CONNECTION_REFUSED, NULL), 10,
         "error reply without an address");
  const uint8_t wante[] = {5, 5, 0, 1, 0, 0, 0, 0, 0, 0};
  ok(memcmp(b, wante, 10) == 0, "0.0.0.0:0 in error replies");
}

/* The seed's table, through the mapping the module uses. */
static void test_mapping(void) {
  is_int(open_map_socks5(PH_OPEN_OK), 0x00, "TM-PROTO-30 ok -> 0x00");
  is_int(open_map_socks5(PH_OPEN_FORBIDDEN), 0x02,
         "TM-PROTO-31 forbidden -> 0x02");
  is_int(open_map_socks5(PH_OPEN_NETWORK_UNREACHABLE), 0x03,
         "TM-PROTO-32 network_unreachable -> 0x03");
  is_int(open_map_socks5(PH_OPEN_HOST_UNREACHABLE), 0x04,
         "TM-PROTO-33 host_unreachable -> 0x04");
  is_int(open_map_socks5(PH_OPEN_AGENT_OFFLINE), 0x04,
         "TM-PROTO-33 agent_offline -> 0x04");
  is_int(open_map_socks5(PH_OPEN_CONNECTION_REFUSED), 0x05,
         "TM-PROTO-34 connection_refused -> 0x05");
  is_int(open_map_socks5(PH_OPEN_TIMEOUT), 0x06, "TM-PROTO-35 timeout -> 0x06");
  is_int(open_map_socks5(PH_OPEN_QUEUE_FULL), 0x01,
         "TM-PROTO-35 queue_full -> 0x01");
  is_int(open_map_socks5(PH_OPEN_INTERNAL_ERROR), 0x01,
         "TM-PROTO-36 others -> 0x01");
  is_int(open_map_socks5(1234), 0x01, "TM-PROTO-36 unknown -> 0x01");
  is_int(open_map_socks5(PH_OPEN_UNSUPPORTED_CAPABILITY), 0x01,
         "TM-PROTO-36 unsupported_capability -> 0x01");
}

/* Arbitrary bytes: never a read past n, and verdicts are stable. */
static void test_garbage(void) {
  uint8_t buf[600];
  unsigned x = 12345;
  int stable = 1;
  for (int round = 0; round < 2000; round++) {
    for (size_t i = 0; i < sizeof(buf); i++) {
      x = x * 1103515245u + 12345u;
      buf[i] = (uint8_t)(x >> 16);
    }
    buf[0] = 5;
    size_t n = (x >> 8) % sizeof(buf);
    s5_request q;
    int whole = s5_parse_request(buf, n, &q);
    int first = S5_NEED_MORE;
    for (size_t i = 0; i <= n && first == S5_NEED_MORE; i++)
      first = s5_parse_request(buf, i, &q);
    if (first != whole)
      stable = 0;
  }
  ok(stable, "random requests: the first verdict is the final one");
}

int main(void) {
  plan_lazy();
  test_greeting();
  test_auth();
  test_request();
  test_encode();
  test_mapping();
  test_garbage();
  return done_testing();
}
