/* SPDX-License-Identifier: BSD-2-Clause */
/* The upstream handshakes (modules/upstream/up_hs.h, issue 13), CP-5-3: the
 * HTTP CONNECT or SOCKS5 handshake with the proxy, and what each failure
 * of it is (UP_HS_REFUSED, UP_HS_AUTH, UP_HS_MALFORMED).
 *
 * Every answer is fed as a caller following the I/O rule feeds it (peek
 * at most want(), consume what feed() says) in 1-, 2-, 3- and 7-byte
 * reads and all at once, with the requests written whole and a byte at a
 * time: the state, the status, the bytes consumed and the bytes written
 * must be the same every way. The requests are compared with hand-written
 * bytes; bytes after the handshake stay unconsumed; the credentials are
 * nowhere in the handshake after their message was sent, after the end
 * and after up_hs_wipe() (CP-1-18, CP-8-5); and the bounds (255-byte
 * host, user and password; 256 refused). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <proxyhost/abi.h>
#include <proxyhost/pool_store.h>

#include <arpa/inet.h>

#include "lib/host_norm.h"
#include "tap.h"
#include "upstream/up_hs.h"

#define HTTP PH_POOL_UPSTREAM_HTTP_CONNECT
#define SOCKS PH_POOL_UPSTREAM_SOCKS5
#define NO_CHECK ((size_t)-1)
#define MAX_STEPS 100000 /* every drive loop ends within this */

/* ---- A caller following the I/O rule --------------------------------- */

typedef struct run {
  up_hs_state st;
  int status;
  size_t consumed;    /* of the answer bytes */
  uint8_t sent[4096]; /* everything written */
  size_t sent_len;
  int rule_broken; /* consume > given, or MORE not consuming all */
  int stuck;       /* MORE with nothing to send and want() 0 */
} run;

static void write_all(up_hs *h, run *r, size_t write_chunk) {
  const uint8_t *d;
  size_t n;
  int steps = 0;
  while ((n = up_hs_pending_out(h, &d)) > 0 && steps++ < MAX_STEPS) {
    size_t k = n < write_chunk ? n : write_chunk;
    if (r->sent_len + k <= sizeof(r->sent)) {
      memcpy(r->sent + r->sent_len, d, k);
      r->sent_len += k;
    }
    up_hs_sent(h, k);
  }
}

/* Drives h against the proxy's answer bytes, chunk bytes per read (at
 * most want()), the requests written write_chunk bytes at a time; eof:
 * the proxy closes after the last answer byte. */
static run drive(up_hs *h, const uint8_t *ans, size_t len, size_t chunk,
                 size_t write_chunk, int eof) {
  run r;
  memset(&r, 0, sizeof(r));
  r.st = UP_HS_MORE;
  size_t pos = 0;
  for (int steps = 0; steps < MAX_STEPS && r.st == UP_HS_MORE; steps++) {
    write_all(h, &r, write_chunk);
    size_t want = up_hs_want(h);
    size_t avail = len - pos;
    if (want == 0) {
      r.stuck = 1;
      break;
    }
    if (avail == 0 && !eof)
      break; /* waiting for the proxy */
    size_t give = avail < chunk ? avail : chunk;
    if (give > want)
      give = want;
    size_t c = 12345;
    r.st = up_hs_feed(h, ans + pos, give, eof && give == avail, &c);
    if (c > give || (r.st == UP_HS_MORE && c != give))
      r.rule_broken = 1;
    pos += c <= give ? c : give;
    if (avail == 0)
      break; /* the EOF was told */
  }
  r.status = h->status;
  r.consumed = pos;
  return r;
}

/* ---- Secrets ---------------------------------------------------------- */

/* 1 when none of the needles appears anywhere in the handshake's bytes. */
static int holds_none(const up_hs *h, const char *const *needles) {
  for (; *needles; needles++)
    if (memmem(h, sizeof(*h), *needles, strlen(*needles)))
      return 0;
  return 1;
}

static int out_is_clear(const up_hs *h) {
  for (size_t i = 0; i < sizeof(h->out); i++)
    if (h->out[i])
      return 0;
  return h->user == NULL && h->pass == NULL && h->user_len == 0 &&
         h->pass_len == 0;
}

/* ---- One case, every way ---------------------------------------------- */

typedef struct hs_case {
  const char *name;
  int protocol;
  const char *host;
  uint16_t port;
  const char *user, *pass; /* NULL: none */
  const void *ans;
  size_t ans_len;
  int eof;
  up_hs_state want;
  int want_status;
  size_t want_consumed;  /* NO_CHECK, or the bytes the handshake used */
  const void *want_sent; /* NULL: not compared */
  size_t want_sent_len;
} hs_case;

static const char *const secrets[] = {"s3cr3t-pw", "YWxpY2U6czNjcjN0LXB3",
                                      NULL};

static int init_case(up_hs *h, const hs_case *c) {
  return up_hs_init(h, c->protocol, c->host, c->port, c->user,
                    c->user ? (uint32_t)strlen(c->user) : 0, c->pass,
                    c->pass ? (uint32_t)strlen(c->pass) : 0);
}

static void check_case(const hs_case *c) {
  static const size_t chunks[] = {1, 2, 3, 7, (size_t)-1};
  static const size_t writes[] = {(size_t)-1, 1};
  char name[256];
  run first;
  int same = 1, rule = 1, clean = 1, inited = 1;
  for (size_t wi = 0; wi < 2; wi++) {
    for (size_t ci = 0; ci < sizeof(chunks) / sizeof(chunks[0]); ci++) {
      up_hs h;
      if (init_case(&h, c) != PH_OK) {
        inited = 0;
        continue;
      }
      run r = drive(&h, c->ans, c->ans_len, chunks[ci], writes[wi], c->eof);
      if (r.rule_broken || r.stuck)
        rule = 0;
      if (r.st != UP_HS_MORE && (!out_is_clear(&h) || !holds_none(&h, secrets)))
        clean = 0;
      if (wi == 0 && ci == 0) {
        first = r;
      } else if (r.st != first.st || r.status != first.status ||
                 r.consumed != first.consumed || r.sent_len != first.sent_len ||
                 memcmp(r.sent, first.sent, r.sent_len) != 0) {
        same = 0;
        printf("# %s: chunk %zu write %zu: %s/%d/%zu, first %s/%d/%zu\n",
               c->name, chunks[ci], writes[wi], up_hs_state_name(r.st),
               r.status, r.consumed, up_hs_state_name(first.st), first.status,
               first.consumed);
      }
    }
  }
  snprintf(name, sizeof(name), "CP-5-3 %s: init", c->name);
  if (!ok(inited, name))
    return;
  snprintf(name, sizeof(name), "CP-5-3 %s: %s", c->name,
           up_hs_state_name(c->want));
  is_int(first.st, c->want, name);
  snprintf(name, sizeof(name),
           "%s: the same fed byte by byte, in pieces "
           "and at once, written whole or byte by byte",
           c->name);
  ok(same, name);
  snprintf(name, sizeof(name), "%s: each read consumed as the I/O rule says",
           c->name);
  ok(rule, name);
  snprintf(name, sizeof(name), "%s: status %d", c->name, c->want_status);
  is_int(first.status, c->want_status, name);
  if (c->want_consumed != NO_CHECK) {
    snprintf(name, sizeof(name), "%s: consumed exactly %zu answer bytes",
             c->name, c->want_consumed);
    is_int(first.consumed, c->want_consumed, name);
  }
  if (c->want_sent) {
    snprintf(name, sizeof(name), "%s: the exact request bytes", c->name);
    if (!ok(first.sent_len == c->want_sent_len &&
                memcmp(first.sent, c->want_sent, c->want_sent_len) == 0,
            name))
      printf("#   sent %zu bytes: %.*s\n", first.sent_len, (int)first.sent_len,
             first.sent);
  }
  if (first.st != UP_HS_MORE) {
    snprintf(name, sizeof(name),
             "CP-8-5 %s: no credential left in the handshake at its end",
             c->name);
    ok(clean, name);
  }
}

#define S(lit) lit, sizeof(lit) - 1

/* ---- CONNECT ---------------------------------------------------------- */

static const char connect_plain[] =
    "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n";
/* alice:s3cr3t-pw */
static const char connect_auth[] =
    "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n"
    "Proxy-Authorization: Basic YWxpY2U6czNjcjN0LXB3\r\n\r\n";

static void test_connect_answers(void) {
  const char ok200[] = "HTTP/1.1 200 Connection established\r\n\r\nTARGET";
  const hs_case cases[] = {
      {"CONNECT 200, target bytes after it", HTTP, "example.com", 443, NULL,
       NULL, S(ok200), 0, UP_HS_DONE, 200, sizeof(ok200) - 1 - 6,
       S(connect_plain)},
      {"CONNECT with Basic credentials, 200", HTTP, "example.com", 443, "alice",
       "s3cr3t-pw", S("HTTP/1.0 200 OK\r\nProxy-agent: t\r\n\r\n"), 0,
       UP_HS_DONE, 200, 35, S(connect_auth)},
      {"CONNECT 200 with bare LF line ends", HTTP, "example.com", 443, NULL,
       NULL, S("HTTP/1.0 200 OK\nVia: x\n\nZ"), 0, UP_HS_DONE, 200, 24, NULL,
       0},
      {"CONNECT 200 with CRLF then a bare LF empty line", HTTP, "example.com",
       443, NULL, NULL, S("HTTP/1.1 200 OK\r\n\nZ"), 0, UP_HS_DONE, 200, 18,
       NULL, 0},
      {"CONNECT 200 without a reason phrase", HTTP, "example.com", 443, NULL,
       NULL, S("HTTP/1.1 200\r\n\r\n"), 0, UP_HS_DONE, 200, 16, NULL, 0},
      {"CONNECT 204 is a 2xx", HTTP, "example.com", 443, NULL, NULL,
       S("HTTP/1.1 204 No Content\r\n\r\n"), 0, UP_HS_DONE, 204, NO_CHECK, NULL,
       0},
      {"CONNECT 200 with Content-Length: 0", HTTP, "example.com", 443, NULL,
       NULL, S("HTTP/1.1 200 OK\r\ncontent-LENGTH:  00 \r\n\r\n"), 0,
       UP_HS_DONE, 200, NO_CHECK, NULL, 0},
      {"CONNECT 200 with look-alike field names", HTTP, "example.com", 443,
       NULL, NULL,
       S("HTTP/1.1 200 OK\r\nContent-Lengthy: 5\r\nContent-Lengt: 5\r\n"
         "Transfer-Encodings: chunked\r\nX-Content-Length: 9\r\n\r\n"),
       0, UP_HS_DONE, 200, NO_CHECK, NULL, 0},
      {"CONNECT 200 with every tchar in a field name", HTTP, "example.com", 443,
       NULL, NULL, S("HTTP/1.1 200 OK\r\nX!#$%&'*+-.^_`|~09az: v\r\n\r\n"), 0,
       UP_HS_DONE, 200, NO_CHECK, NULL, 0},
      {"CONNECT a field name with '@'", HTTP, "example.com", 443, NULL, NULL,
       S("HTTP/1.1 200 OK\r\nX@Y: v\r\n\r\n"), 0, UP_HS_MALFORMED, 200,
       NO_CHECK, NULL, 0},
      {"CONNECT 200 with a body (Content-Length: 5)", HTTP, "example.com", 443,
       NULL, NULL, S("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"), 0,
       UP_HS_MALFORMED, 200, NO_CHECK, NULL, 0},
      {"CONNECT 200 with Transfer-Encoding", HTTP, "example.com", 443, NULL,
       NULL, S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"), 0,
       UP_HS_MALFORMED, 200, NO_CHECK, NULL, 0},
      {"CONNECT 200 with an empty Content-Length", HTTP, "example.com", 443,
       NULL, NULL, S("HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n"), 0,
       UP_HS_MALFORMED, 200, NO_CHECK, NULL, 0},
      {"CONNECT 200 with Content-Length: 0 0", HTTP, "example.com", 443, NULL,
       NULL, S("HTTP/1.1 200 OK\r\nContent-Length: 0 0\r\n\r\n"), 0,
       UP_HS_MALFORMED, 200, NO_CHECK, NULL, 0},
      {"CONNECT 200 with Content-Length: -0", HTTP, "example.com", 443, NULL,
       NULL, S("HTTP/1.1 200 OK\r\nContent-Length: -0\r\n\r\n"), 0,
       UP_HS_MALFORMED, 200, NO_CHECK, NULL, 0},
      {"CONNECT 407", HTTP, "example.com", 443, NULL, NULL,
       S("HTTP/1.1 407 Proxy Authentication Required\r\n"
         "Proxy-Authenticate: Basic realm=\"p\"\r\nContent-Length: 0\r\n\r\n"),
       0, UP_HS_AUTH, 407, NO_CHECK, NULL, 0},
      {"CONNECT 407 to our credentials", HTTP, "example.com", 443, "alice",
       "s3cr3t-pw", S("HTTP/1.0 407 Denied\r\n"), 1, UP_HS_AUTH, 407, NO_CHECK,
       S(connect_auth)},
      {"CONNECT 401 to our credentials (tinyproxy's answer to wrong ones)",
       HTTP, "example.com", 443, "alice", "s3cr3t-pw",
       S("HTTP/1.0 401 Unauthorized\r\nServer: tinyproxy/1.11.1\r\n\r\n"), 1,
       UP_HS_AUTH, 401, 27, S(connect_auth)},
      {"CONNECT 403", HTTP, "example.com", 443, NULL, NULL,
       S("HTTP/1.1 403 Forbidden\r\n\r\n"), 0, UP_HS_REFUSED, 403, NO_CHECK,
       NULL, 0},
      {"CONNECT 502 decided at its status line", HTTP, "example.com", 443, NULL,
       NULL, S("HTTP/1.1 502 Bad Gateway\r\n"), 0, UP_HS_REFUSED, 502, NO_CHECK,
       NULL, 0},
      {"CONNECT 100 (no interim answers to CONNECT)", HTTP, "example.com", 443,
       NULL, NULL, S("HTTP/1.1 100 Continue\r\n\r\n"), 0, UP_HS_REFUSED, 100,
       NO_CHECK, NULL, 0},
      {"CONNECT 302", HTTP, "example.com", 443, NULL, NULL,
       S("HTTP/1.1 302 Found\r\nLocation: /x\r\n\r\n"), 0, UP_HS_REFUSED, 302,
       NO_CHECK, NULL, 0},
      {"CONNECT status 099", HTTP, "example.com", 443, NULL, NULL,
       S("HTTP/1.1 099 Low\r\n\r\n"), 0, UP_HS_MALFORMED, -1, NO_CHECK, NULL,
       0},
      {"CONNECT status 600", HTTP, "example.com", 443, NULL, NULL,
       S("HTTP/1.1 600 High\r\n\r\n"), 0, UP_HS_MALFORMED, -1, NO_CHECK, NULL,
       0},
      {"CONNECT two-digit status", HTTP, "example.com", 443, NULL, NULL,
       S("HTTP/1.1 20\r\n\r\n"), 0, UP_HS_MALFORMED, -1, NO_CHECK, NULL, 0},
      {"CONNECT four-digit status", HTTP, "example.com", 443, NULL, NULL,
       S("HTTP/1.1 2000 OK\r\n\r\n"), 0, UP_HS_MALFORMED, -1, NO_CHECK, NULL,
       0},
      {"CONNECT HTTP/2 status line", HTTP, "example.com", 443, NULL, NULL,
       S("HTTP/2 200\r\n\r\n"), 0, UP_HS_MALFORMED, -1, NO_CHECK, NULL, 0},
      {"CONNECT lower-case http/1.1", HTTP, "example.com", 443, NULL, NULL,
       S("http/1.1 200 OK\r\n\r\n"), 0, UP_HS_MALFORMED, -1, NO_CHECK, NULL, 0},
      {"CONNECT two spaces before the status", HTTP, "example.com", 443, NULL,
       NULL, S("HTTP/1.1  200 OK\r\n\r\n"), 0, UP_HS_MALFORMED, -1, NO_CHECK,
       NULL, 0},
      {"CONNECT a SOCKS5 answer", HTTP, "example.com", 443, NULL, NULL,
       S("\x05\x00"), 0, UP_HS_MALFORMED, -1, NO_CHECK, NULL, 0},
      {"CONNECT an SSH banner", HTTP, "example.com", 443, NULL, NULL,
       S("SSH-2.0-OpenSSH_9.2\r\n"), 0, UP_HS_MALFORMED, -1, NO_CHECK, NULL, 0},
      {"CONNECT a control byte in the reason", HTTP, "example.com", 443, NULL,
       NULL, S("HTTP/1.1 200 O\001K\r\n\r\n"), 0, UP_HS_MALFORMED, -1, NO_CHECK,
       NULL, 0},
      {"CONNECT a bare CR in the status line", HTTP, "example.com", 443, NULL,
       NULL, S("HTTP/1.1 200 OK\rX\r\n\r\n"), 0, UP_HS_MALFORMED, -1, NO_CHECK,
       NULL, 0},
      {"CONNECT a bare CR in a field", HTTP, "example.com", 443, NULL, NULL,
       S("HTTP/1.1 200 OK\r\nA: b\rc\r\n\r\n"), 0, UP_HS_MALFORMED, 200,
       NO_CHECK, NULL, 0},
      {"CONNECT a CR then not LF at the end", HTTP, "example.com", 443, NULL,
       NULL, S("HTTP/1.1 200 OK\r\n\rX"), 0, UP_HS_MALFORMED, 200, NO_CHECK,
       NULL, 0},
      {"CONNECT an obs-fold line", HTTP, "example.com", 443, NULL, NULL,
       S("HTTP/1.1 200 OK\r\nA: b\r\n c\r\n\r\n"), 0, UP_HS_MALFORMED, 200,
       NO_CHECK, NULL, 0},
      {"CONNECT white space before a colon", HTTP, "example.com", 443, NULL,
       NULL, S("HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\n"), 0,
       UP_HS_MALFORMED, 200, NO_CHECK, NULL, 0},
      {"CONNECT a field line without a colon", HTTP, "example.com", 443, NULL,
       NULL, S("HTTP/1.1 200 OK\r\nNoColon\r\n\r\n"), 0, UP_HS_MALFORMED, 200,
       NO_CHECK, NULL, 0},
      {"CONNECT an empty field name", HTTP, "example.com", 443, NULL, NULL,
       S("HTTP/1.1 200 OK\r\n: x\r\n\r\n"), 0, UP_HS_MALFORMED, 200, NO_CHECK,
       NULL, 0},
      {"CONNECT a NUL in a field value", HTTP, "example.com", 443, NULL, NULL,
       "HTTP/1.1 200 OK\r\nA: \0\r\n\r\n", 23, 0, UP_HS_MALFORMED, 200,
       NO_CHECK, NULL, 0},
      {"CONNECT closed before the status line's end", HTTP, "example.com", 443,
       NULL, NULL, S("HTTP/1.1 200 O"), 1, UP_HS_MALFORMED, -1, NO_CHECK, NULL,
       0},
      {"CONNECT closed before the head's end", HTTP, "example.com", 443, NULL,
       NULL, S("HTTP/1.1 200 OK\r\nVia: x\r\n"), 1, UP_HS_MALFORMED, 200,
       NO_CHECK, NULL, 0},
      {"CONNECT closed at once", HTTP, "example.com", 443, NULL, NULL, "", 0, 1,
       UP_HS_MALFORMED, -1, 0, S(connect_plain)},
      {"CONNECT waits for the rest of a head", HTTP, "example.com", 443, NULL,
       NULL, S("HTTP/1.1 200 OK\r\nVia: x\r\n\r"), 0, UP_HS_MORE, 200, 26, NULL,
       0},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    check_case(&cases[i]);
}

/* The head's bound: exactly UP_HS_HEAD_MAX bytes is a head, one more is
 * not; a peek never asks for more than what is left of it. */
static void test_connect_head_bound(void) {
  static uint8_t head[UP_HS_HEAD_MAX + 16];
  const char start[] = "HTTP/1.1 200 OK\r\nX-Pad: ";
  for (size_t extra = 0; extra <= 1; extra++) {
    size_t len = UP_HS_HEAD_MAX + extra;
    memcpy(head, start, sizeof(start) - 1);
    memset(head + sizeof(start) - 1, 'a', len - (sizeof(start) - 1) - 4);
    memcpy(head + len - 4, "\r\n\r\n", 4);
    memcpy(head + len, "TARGET", 6);
    hs_case c = {extra ? "CONNECT head of UP_HS_HEAD_MAX + 1 bytes"
                       : "CONNECT head of exactly UP_HS_HEAD_MAX bytes",
                 HTTP,
                 "example.com",
                 443,
                 NULL,
                 NULL,
                 head,
                 len + 6,
                 0,
                 extra ? UP_HS_MALFORMED : UP_HS_DONE,
                 200,
                 UP_HS_HEAD_MAX,
                 NULL,
                 0};
    check_case(&c);
  }
  up_hs h;
  up_hs_init(&h, HTTP, "example.com", 443, NULL, 0, NULL, 0);
  is_int(up_hs_want(&h), 0, "want() is 0 while the CONNECT is unsent");
  up_hs_sent(&h, 10);
  is_int(up_hs_want(&h), 0, "want() is 0 while part of it is unsent");
  const uint8_t *d;
  up_hs_sent(&h, up_hs_pending_out(&h, &d));
  is_int(up_hs_want(&h), UP_HS_HEAD_MAX, "want() is the head's bound");
  size_t c;
  up_hs_feed(&h, (const uint8_t *)"HTTP/1.1 2", 10, 0, &c);
  is_int(c, 10, "a partial head is consumed as it comes");
  is_int(up_hs_want(&h), UP_HS_HEAD_MAX - 10, "want() is what is left");
}

static void test_connect_requests(void) {
  const uint8_t ok200[] = "HTTP/1.1 200 OK\r\n\r\n";
  const char v6[] = "CONNECT [2001:db8::1]:8080 HTTP/1.1\r\n"
                    "Host: [2001:db8::1]:8080\r\n\r\n";
  const char v4[] = "CONNECT 192.0.2.7:1 HTTP/1.1\r\nHost: 192.0.2.7:1\r\n\r\n";
  const char norm[] = "CONNECT www.example.org:65535 HTTP/1.1\r\n"
                      "Host: www.example.org:65535\r\n\r\n";
  /* "" : "" is base64(":") */
  const char empty[] = "CONNECT a:80 HTTP/1.1\r\nHost: a:80\r\n"
                       "Proxy-Authorization: Basic Og==\r\n\r\n";
  /* "u" : "pw" is base64("u:pw"), one padding byte */
  const char pad1[] = "CONNECT a:80 HTTP/1.1\r\nHost: a:80\r\n"
                      "Proxy-Authorization: Basic dTpwdw==\r\n\r\n";
  const char pad0[] = "CONNECT a:80 HTTP/1.1\r\nHost: a:80\r\n"
                      "Proxy-Authorization: Basic dTpwdzE=\r\n\r\n";
  const char pad2[] = "CONNECT a:80 HTTP/1.1\r\nHost: a:80\r\n"
                      "Proxy-Authorization: Basic dTpwdzEy\r\n\r\n";
  const hs_case cases[] = {
      {"CONNECT to an IPv6 literal (brackets)", HTTP, "[2001:DB8::1]", 8080,
       NULL, NULL, S(ok200), 0, UP_HS_DONE, 200, 19, S(v6)},
      {"CONNECT to an IPv6 literal (bare)", HTTP, "2001:db8:0::1", 8080, NULL,
       NULL, S(ok200), 0, UP_HS_DONE, 200, 19, S(v6)},
      {"CONNECT to an IPv4 literal", HTTP, "192.0.2.7", 1, NULL, NULL, S(ok200),
       0, UP_HS_DONE, 200, 19, S(v4)},
      {"CONNECT to a name in normal form", HTTP, "WWW.Example.ORG.", 65535,
       NULL, NULL, S(ok200), 0, UP_HS_DONE, 200, 19, S(norm)},
      {"CONNECT through PH_POOL_UPSTREAM_HTTP", PH_POOL_UPSTREAM_HTTP,
       "www.example.org", 65535, NULL, NULL, S(ok200), 0, UP_HS_DONE, 200, 19,
       S(norm)},
      {"CONNECT with empty user and password", HTTP, "a", 80, "", "", S(ok200),
       0, UP_HS_DONE, 200, 19, S(empty)},
      {"CONNECT Basic with two padding bytes", HTTP, "a", 80, "u", "pw",
       S(ok200), 0, UP_HS_DONE, 200, 19, S(pad1)},
      {"CONNECT Basic with one padding byte", HTTP, "a", 80, "u", "pw1",
       S(ok200), 0, UP_HS_DONE, 200, 19, S(pad0)},
      {"CONNECT Basic without padding", HTTP, "a", 80, "u", "pw12", S(ok200), 0,
       UP_HS_DONE, 200, 19, S(pad2)},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    check_case(&cases[i]);
}

/* ---- SOCKS5 ----------------------------------------------------------- */

static const uint8_t greet_none[] = {5, 1, 0};
static const uint8_t greet_pw[] = {5, 1, 2};
/* alice / s3cr3t-pw */
static const uint8_t auth_req[] = {1,   5,   'a', 'l', 'i', 'c', 'e', 9,  's',
                                   '3', 'c', 'r', '3', 't', '-', 'p', 'w'};
static const uint8_t conn_name[] = {5,   1,   0,   3,   11,   'e',
                                    'x', 'a', 'm', 'p', 'l',  'e',
                                    '.', 'c', 'o', 'm', 0x01, 0xBB};

static size_t cat(uint8_t *out, const void *a, size_t na, const void *b,
                  size_t nb, const void *c, size_t nc) {
  memcpy(out, a, na);
  if (nb)
    memcpy(out + na, b, nb);
  if (nc)
    memcpy(out + na + nb, c, nc);
  return na + nb + nc;
}

static void test_socks5_success(void) {
  uint8_t sent[600];
  size_t n;
  /* No credentials: greeting, CONNECT by name; reply with an IPv4 BND. */
  n = cat(sent, greet_none, 3, conn_name, sizeof(conn_name), NULL, 0);
  const uint8_t a1[] = {5, 0,    5,    0,   0,   1,   10,  0,   0,
                        1, 0x1F, 0x90, 'T', 'A', 'R', 'G', 'E', 'T'};
  hs_case c1 = {"SOCKS5 no auth, CONNECT by name, target bytes after it",
                SOCKS,
                "example.com",
                443,
                NULL,
                NULL,
                a1,
                sizeof(a1),
                0,
                UP_HS_DONE,
                0,
                12,
                sent,
                n};
  check_case(&c1);

  /* Credentials: only 0x02 offered, RFC 1929, CONNECT to an IPv4
   * literal; reply with an IPv6 BND. */
  uint8_t sent2[600];
  const uint8_t conn_v4[] = {5, 1, 0, 1, 127, 0, 0, 1, 0, 80};
  n = cat(sent2, greet_pw, 3, auth_req, sizeof(auth_req), conn_v4,
          sizeof(conn_v4));
  uint8_t a2[2 + 2 + 22 + 1] = {5, 2, 1, 0, 5, 0, 0, 4};
  a2[sizeof(a2) - 2] = 0x30; /* the port's low byte, then one target byte */
  a2[sizeof(a2) - 1] = 'T';
  hs_case c2 = {"SOCKS5 username/password, CONNECT to IPv4, IPv6 BND",
                SOCKS,
                "127.0.0.1",
                80,
                "alice",
                "s3cr3t-pw",
                a2,
                sizeof(a2),
                0,
                UP_HS_DONE,
                0,
                sizeof(a2) - 1,
                sent2,
                n};
  check_case(&c2);

  /* An IPv6 target (brackets or not); a domain BND of 4 bytes. */
  uint8_t sent3[600];
  const uint8_t conn_v6[] = {5, 1, 0, 4, 0x20, 0x01, 0x0d, 0xb8, 0, 0,    0,
                             0, 0, 0, 0, 0,    0,    0,    0,    1, 0xFF, 0xFF};
  n = cat(sent3, greet_none, 3, conn_v6, sizeof(conn_v6), NULL, 0);
  const uint8_t a3[] = {5, 0, 5, 0, 0, 3, 4, 'b', 'n', 'd', '1', 0, 80, 'X'};
  hs_case c3 = {"SOCKS5 CONNECT to IPv6, a domain BND",
                SOCKS,
                "[2001:db8::1]",
                65535,
                NULL,
                NULL,
                a3,
                sizeof(a3),
                0,
                UP_HS_DONE,
                0,
                sizeof(a3) - 1,
                sent3,
                n};
  check_case(&c3);

  /* A domain BND of length 0 (7 bytes: the shortest reply). */
  const uint8_t a4[] = {5, 0, 5, 0, 0, 3, 0, 0, 80, 'X', 'Y'};
  hs_case c4 = {"SOCKS5 the shortest reply (empty domain BND)",
                SOCKS,
                "example.com",
                443,
                NULL,
                NULL,
                a4,
                sizeof(a4),
                0,
                UP_HS_DONE,
                0,
                9,
                NULL,
                0};
  check_case(&c4);

  /* An empty password is PLEN 0. */
  uint8_t sent5[600];
  const uint8_t auth_empty[] = {1, 1, 'u', 0};
  n = cat(sent5, greet_pw, 3, auth_empty, sizeof(auth_empty), conn_name,
          sizeof(conn_name));
  const uint8_t a5[] = {5, 2, 1, 0, 5, 0, 0, 1, 0, 0, 0, 0, 0, 0};
  hs_case c5 = {"SOCKS5 an empty password",
                SOCKS,
                "example.com",
                443,
                "u",
                "",
                a5,
                sizeof(a5),
                0,
                UP_HS_DONE,
                0,
                sizeof(a5),
                sent5,
                n};
  check_case(&c5);
}

static void test_socks5_failures(void) {
  const uint8_t ff[] = {5, 0xFF};
  const uint8_t ff_pw[] = {5, 0xFF};
  const uint8_t skip_auth[] = {5, 0};
  const uint8_t want_auth[] = {5, 2};
  const uint8_t bad_ver[] = {4, 0};
  const uint8_t auth_no[] = {5, 2, 1, 1};
  const uint8_t auth_v5[] = {5, 2, 5, 0};
  const uint8_t rep5[] = {5, 0, 5, 5, 0, 1, 0, 0, 0, 0, 0, 0};
  const uint8_t rep1_short[] = {5, 0, 5, 1, 0, 1};
  const uint8_t rep_ver[] = {5, 0, 4, 0, 0, 1, 0, 0, 0, 0, 0, 0};
  const uint8_t rep_rsv[] = {5, 0, 5, 0, 1, 1, 0, 0, 0, 0, 0, 0};
  const uint8_t rep_atyp[] = {5, 0, 5, 0, 0, 2, 0, 0, 0, 0, 0, 0};
  const uint8_t rep_cut[] = {5, 0, 5, 0, 0, 1, 0, 0, 0};
  const uint8_t rep_cut_name[] = {5, 0, 5, 0, 0, 3, 9, 'a', 'b'};
  const uint8_t method_cut[] = {5};
  const uint8_t http[] = "HTTP/1.1 400 Bad Request\r\n\r\n";
  const hs_case cases[] = {
      {"SOCKS5 method 0xFF without credentials", SOCKS, "example.com", 443,
       NULL, NULL, ff, 2, 0, UP_HS_AUTH, -1, 2, greet_none, 3},
      {"SOCKS5 method 0xFF to our credentials", SOCKS, "example.com", 443,
       "alice", "s3cr3t-pw", ff_pw, 2, 0, UP_HS_AUTH, -1, 2, greet_pw, 3},
      {"SOCKS5 proxy choosing no auth when 0x02 was offered", SOCKS,
       "example.com", 443, "alice", "s3cr3t-pw", skip_auth, 2, 0,
       UP_HS_MALFORMED, -1, 2, greet_pw, 3},
      {"SOCKS5 proxy choosing 0x02 when only 0x00 was offered", SOCKS,
       "example.com", 443, NULL, NULL, want_auth, 2, 0, UP_HS_MALFORMED, -1, 2,
       greet_none, 3},
      {"SOCKS5 method answer of version 4", SOCKS, "example.com", 443, NULL,
       NULL, bad_ver, 2, 0, UP_HS_MALFORMED, -1, 2, NULL, 0},
      {"SOCKS5 RFC 1929 failure status", SOCKS, "example.com", 443, "alice",
       "s3cr3t-pw", auth_no, sizeof(auth_no), 0, UP_HS_AUTH, -1, 4, NULL, 0},
      {"SOCKS5 RFC 1929 answer of version 5", SOCKS, "example.com", 443,
       "alice", "s3cr3t-pw", auth_v5, sizeof(auth_v5), 0, UP_HS_MALFORMED, -1,
       4, NULL, 0},
      {"SOCKS5 REP 5 (connection refused)", SOCKS, "example.com", 443, NULL,
       NULL, rep5, sizeof(rep5), 0, UP_HS_REFUSED, 5, NO_CHECK, NULL, 0},
      {"SOCKS5 REP 1 in a short reply, then closed", SOCKS, "example.com", 443,
       NULL, NULL, rep1_short, sizeof(rep1_short), 1, UP_HS_REFUSED, 1,
       NO_CHECK, NULL, 0},
      {"SOCKS5 reply of version 4", SOCKS, "example.com", 443, NULL, NULL,
       rep_ver, sizeof(rep_ver), 0, UP_HS_MALFORMED, -1, NO_CHECK, NULL, 0},
      {"SOCKS5 reply with RSV 1", SOCKS, "example.com", 443, NULL, NULL,
       rep_rsv, sizeof(rep_rsv), 0, UP_HS_MALFORMED, -1, NO_CHECK, NULL, 0},
      {"SOCKS5 reply with ATYP 2", SOCKS, "example.com", 443, NULL, NULL,
       rep_atyp, sizeof(rep_atyp), 0, UP_HS_MALFORMED, -1, NO_CHECK, NULL, 0},
      {"SOCKS5 reply cut short by a close", SOCKS, "example.com", 443, NULL,
       NULL, rep_cut, sizeof(rep_cut), 1, UP_HS_MALFORMED, -1, NO_CHECK, NULL,
       0},
      {"SOCKS5 reply waits for the rest of its BND", SOCKS, "example.com", 443,
       NULL, NULL, rep_cut_name, sizeof(rep_cut_name), 0, UP_HS_MORE, -1,
       sizeof(rep_cut_name), NULL, 0},
      {"SOCKS5 method answer cut short by a close", SOCKS, "example.com", 443,
       NULL, NULL, method_cut, 1, 1, UP_HS_MALFORMED, -1, 1, NULL, 0},
      {"SOCKS5 closed at once", SOCKS, "example.com", 443, NULL, NULL, "", 0, 1,
       UP_HS_MALFORMED, -1, 0, greet_none, 3},
      {"SOCKS5 an HTTP answer", SOCKS, "example.com", 443, NULL, NULL, http,
       sizeof(http) - 1, 0, UP_HS_MALFORMED, -1, 2, NULL, 0},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    check_case(&cases[i]);
}

/* want() is exact for every SOCKS5 message, so a peek of want() bytes
 * never reaches the target's; a caller that peeks more still consumes
 * only the handshake's bytes. */
static void test_socks5_want(void) {
  up_hs h;
  const uint8_t *d;
  size_t c;
  up_hs_init(&h, SOCKS, "example.com", 443, "alice", 5, "s3cr3t-pw", 9);
  is_int(up_hs_want(&h), 0, "SOCKS5 want() 0 while the greeting is unsent");
  up_hs_sent(&h, up_hs_pending_out(&h, &d));
  is_int(up_hs_want(&h), 2, "SOCKS5 want() 2 for the method selection");
  is_int(up_hs_feed(&h, (const uint8_t *)"\x05\x02\x01\x00", 4, 0, &c),
         UP_HS_MORE, "SOCKS5 method selection read");
  is_int(c, 2, "given more, only the method selection is consumed");
  is_int(up_hs_want(&h), 0, "want() 0 while the RFC 1929 request is unsent");
  is_int(up_hs_pending_out(&h, &d), sizeof(auth_req),
         "the RFC 1929 request is due");
  ok(h.user == NULL && h.pass == NULL,
     "CP-8-5 the borrowed credentials are forgotten once copied");
  up_hs_sent(&h, 5);
  up_hs_sent(&h, sizeof(auth_req) - 5);
  ok(out_is_clear(&h) && holds_none(&h, secrets),
     "CP-8-5 the RFC 1929 request is wiped once sent");
  is_int(up_hs_want(&h), 2, "want() 2 for the RFC 1929 status");
  is_int(up_hs_feed(&h, (const uint8_t *)"\x01\x00", 2, 0, &c), UP_HS_MORE,
         "RFC 1929 success");
  up_hs_sent(&h, up_hs_pending_out(&h, &d));
  is_int(up_hs_want(&h), 5, "want() 5 for the reply's first bytes");
  is_int(up_hs_feed(&h, (const uint8_t *)"\x05\x00\x00", 3, 0, &c), UP_HS_MORE,
         "a partial reply");
  is_int(c, 3, "a partial reply is consumed as it comes");
  is_int(up_hs_want(&h), 2, "want() is the rest of the first 5 bytes");
  is_int(up_hs_feed(&h, (const uint8_t *)"\x03\x04", 2, 0, &c), UP_HS_MORE,
         "ATYP domain, length 4");
  is_int(up_hs_want(&h), 6, "want() is exactly the domain and the port");
  is_int(up_hs_feed(&h, (const uint8_t *)"abcd\x00\x50TARGET", 12, 0, &c),
         UP_HS_DONE, "the reply is whole");
  is_int(c, 6, "given more, only the reply is consumed (target bytes stay)");
  is_int(up_hs_want(&h), 0, "want() 0 after the end");
  is_int(up_hs_feed(&h, (const uint8_t *)"TARGET", 6, 0, &c), UP_HS_DONE,
         "feed() after the end says the same");
  is_int(c, 0, "and consumes nothing");

  /* IPv4 BND: 5 then 5. */
  up_hs_init(&h, SOCKS, "example.com", 443, NULL, 0, NULL, 0);
  up_hs_sent(&h, up_hs_pending_out(&h, &d));
  up_hs_feed(&h, (const uint8_t *)"\x05\x00", 2, 0, &c);
  up_hs_sent(&h, up_hs_pending_out(&h, &d));
  up_hs_feed(&h, (const uint8_t *)"\x05\x00\x00\x01\x7f", 5, 0, &c);
  is_int(up_hs_want(&h), 5,
         "IPv4 BND: want() is the 3 address bytes left "
         "and the port");
  up_hs_init(&h, SOCKS, "example.com", 443, NULL, 0, NULL, 0);
  up_hs_sent(&h, up_hs_pending_out(&h, &d));
  up_hs_feed(&h, (const uint8_t *)"\x05\x00", 2, 0, &c);
  up_hs_sent(&h, up_hs_pending_out(&h, &d));
  up_hs_feed(&h, (const uint8_t *)"\x05\x00\x00\x04\x00", 5, 0, &c);
  is_int(up_hs_want(&h), 17,
         "IPv6 BND: want() is the 15 address bytes "
         "left and the port");
}

/* ---- Credentials ------------------------------------------------------ */

static void test_credentials(void) {
  up_hs h;
  const uint8_t *d;
  size_t c;
  up_hs_init(&h, HTTP, "example.com", 443, "alice", 5, "s3cr3t-pw", 9);
  ok(h.user == NULL && h.pass == NULL,
     "CP-8-5 CONNECT: the borrowed credentials are forgotten at once");
  size_t n = up_hs_pending_out(&h, &d);
  ok(memmem(d, n, "YWxpY2U6czNjcjN0LXB3", 20) != NULL,
     "the credentials are in the output buffer until sent");
  up_hs_sent(&h, n - 1);
  ok(!holds_none(&h, secrets), "still there with one byte unsent");
  up_hs_sent(&h, 1);
  ok(out_is_clear(&h) && holds_none(&h, secrets),
     "CP-8-5 CONNECT: wiped as soon as sent (before any answer)");

  /* After a failure. */
  up_hs_init(&h, HTTP, "example.com", 443, "alice", 5, "s3cr3t-pw", 9);
  is_int(up_hs_feed(&h, NULL, 0, 1, &c), UP_HS_MALFORMED,
         "closed with the request unsent");
  ok(out_is_clear(&h) && holds_none(&h, secrets),
     "CP-8-5 wiped after a failure with the request unsent");
  is_int(up_hs_pending_out(&h, &d), 0, "nothing to send after the end");

  /* up_hs_wipe() before the end ends the handshake. */
  up_hs_init(&h, SOCKS, "example.com", 443, "alice", 5, "s3cr3t-pw", 9);
  up_hs_sent(&h, up_hs_pending_out(&h, &d));
  up_hs_feed(&h, (const uint8_t *)"\x05\x02", 2, 0, &c);
  ok(!holds_none(&h, secrets), "the RFC 1929 request is built");
  up_hs_wipe(&h);
  ok(out_is_clear(&h) && holds_none(&h, secrets),
     "up_hs_wipe() clears an unsent RFC 1929 request");
  is_int(up_hs_pending_out(&h, &d), 0, "nothing to send after a wipe");
  is_int(up_hs_want(&h), 0, "nothing to read after a wipe");
  is_int(up_hs_feed(&h, (const uint8_t *)"\x01\x00", 2, 0, &c), UP_HS_MALFORMED,
         "a wiped handshake is over");
  up_hs_wipe(&h);
  ok(out_is_clear(&h), "up_hs_wipe() twice");

  /* A SOCKS5 handshake wiped before its auth step never borrows again. */
  const char *user = "alice", *pass = "s3cr3t-pw";
  up_hs_init(&h, SOCKS, "example.com", 443, user, 5, pass, 9);
  ok(h.user == user && h.pass == pass,
     "SOCKS5 borrows the credentials until its auth step");
  up_hs_wipe(&h);
  ok(h.user == NULL && h.pass == NULL, "up_hs_wipe() forgets them");
}

/* ---- Bounds and arguments --------------------------------------------- */

/* A name of len bytes in labels of at most 63. */
static void long_name(char *out, size_t len) {
  for (size_t i = 0; i < len; i++)
    out[i] = (i % 64 == 63) ? '.' : 'a';
  out[len] = '\0';
}

static void test_bounds(void) {
  char host255[300], host256[300], f255[300], f256[300];
  long_name(host255, 255);
  long_name(host256, 256);
  memset(f255, 'u', 255);
  f255[255] = '\0';
  memset(f256, 'u', 256);
  f256[256] = '\0';
  up_hs h;
  const uint8_t *d;
  is_int(up_hs_init(&h, HTTP, host255, 65535, f255, 255, f255, 255), PH_OK,
         "CONNECT: 255-byte host, user and password");
  is_int(up_hs_pending_out(&h, &d), 1264,
         "the longest CONNECT request is 1,264 bytes (fits UP_HS_OUT_MAX)");
  is_int(up_hs_init(&h, SOCKS, host255, 65535, f255, 255, f255, 255), PH_OK,
         "SOCKS5: 255-byte host, user and password");
  size_t c;
  up_hs_sent(&h, up_hs_pending_out(&h, &d));
  up_hs_feed(&h, (const uint8_t *)"\x05\x02", 2, 0, &c);
  is_int(up_hs_pending_out(&h, &d), 513, "the RFC 1929 request is 513 bytes");
  ok(d[1] == 255 && d[2 + 255] == 255, "ULEN and PLEN are 255");
  up_hs_sent(&h, 513);
  up_hs_feed(&h, (const uint8_t *)"\x01\x00", 2, 0, &c);
  is_int(up_hs_pending_out(&h, &d), 4 + 1 + 255 + 2,
         "the CONNECT by a 255-byte name is 262 bytes");
  ok(d[3] == 3 && d[4] == 255 && memcmp(d + 5, host255, 255) == 0,
     "ATYP 3 with the whole name");

  const int protos[] = {HTTP, SOCKS};
  for (int i = 0; i < 2; i++) {
    const char *p = protos[i] == HTTP ? "CONNECT" : "SOCKS5";
    char name[128];
#define REFUSED(cond, what)                                                    \
  do {                                                                         \
    snprintf(name, sizeof(name), "%s: %s refused", p, what);                   \
    int rc_ = (cond);                                                          \
    is_int(rc_, PH_EINVAL, name);                                              \
  } while (0)
    REFUSED(up_hs_init(&h, protos[i], host256, 80, NULL, 0, NULL, 0),
            "a 256-byte host");
    REFUSED(up_hs_init(&h, protos[i], "a", 80, f256, 256, "p", 1),
            "a 256-byte user");
    REFUSED(up_hs_init(&h, protos[i], "a", 80, "u", 1, f256, 256),
            "a 256-byte password");
    REFUSED(up_hs_init(&h, protos[i], "a", 80, "u", 1, NULL, 3),
            "a NULL password with a length");
    REFUSED(up_hs_init(&h, protos[i], "", 80, NULL, 0, NULL, 0),
            "an empty host");
    REFUSED(up_hs_init(&h, protos[i], NULL, 80, NULL, 0, NULL, 0),
            "a NULL host");
    REFUSED(up_hs_init(&h, protos[i], "a b", 80, NULL, 0, NULL, 0),
            "a host with a space");
    REFUSED(up_hs_init(&h, protos[i], "a\r\nX: y", 80, NULL, 0, NULL, 0),
            "a host with CR LF");
    REFUSED(up_hs_init(&h, protos[i], "a:80", 80, NULL, 0, NULL, 0),
            "a host with a port");
    REFUSED(up_hs_init(&h, protos[i], "[a.example]", 80, NULL, 0, NULL, 0),
            "a name in brackets");
    REFUSED(up_hs_init(&h, protos[i], "[192.0.2.1]", 80, NULL, 0, NULL, 0),
            "an IPv4 literal in brackets");
    REFUSED(up_hs_init(&h, protos[i], "a", 0, NULL, 0, NULL, 0), "port 0");
    ok(h.user == NULL && h.phase == 0, "a refused init holds nothing");
    is_int(up_hs_feed(&h, (const uint8_t *)"x", 1, 0, &c), UP_HS_MALFORMED,
           "feed() after a refused init");
  }
  is_int(up_hs_init(&h, 0, "a", 80, NULL, 0, NULL, 0), PH_EINVAL,
         "an unknown protocol refused");
  is_int(up_hs_init(&h, HTTP, "a", 80, "a:b", 3, "p", 1), PH_EINVAL,
         "CONNECT: a user name with ':' refused (RFC 7617)");
  is_int(up_hs_init(&h, SOCKS, "a", 80, "a:b", 3, "p", 1), PH_OK,
         "SOCKS5: a user name with ':' is fine");
  is_int(up_hs_init(&h, SOCKS, "a", 80, "", 0, "p", 1), PH_EINVAL,
         "SOCKS5: an empty user name refused (RFC 1929 ULEN 1..255)");
  is_int(up_hs_init(NULL, HTTP, "a", 80, NULL, 0, NULL, 0), PH_EINVAL,
         "a NULL handshake refused");
}

static void test_names(void) {
  is_str(up_hs_state_name(UP_HS_MORE), "more", "state name more");
  is_str(up_hs_state_name(UP_HS_DONE), "done", "state name done");
  is_str(up_hs_state_name(UP_HS_REFUSED), "refused", "state name refused");
  is_str(up_hs_state_name(UP_HS_AUTH), "auth", "state name auth");
  is_str(up_hs_state_name(UP_HS_MALFORMED), "malformed",
         "state name malformed");
  is_str(up_hs_state_name((up_hs_state)42), "unknown", "an unknown state");
}

/* The host a handshake sends is host_norm's normal form, whatever the
 * spelling: an IPv4 literal already in normal form is taken as it is
 * (the checker's per-check fast path), and every other spelling (leading
 * zeros, too few or too many parts, a part over 255) goes the
 * host_norm way, with the same result and kind as before. */
static void test_ipv4_normal_form(void) {
  static const char *const hosts[] = {
      "127.0.0.1", "0.0.0.0",   "10.0.0.10", "255.255.255.255",
      "1.2.3.4",   "01.2.3.4",  "1.2.3.04",  "1.02.3.4",
      "1.2.3",     "1.2.3.4.5", "1.2.3.256", "192.168.000.1",
      "10.0.0.0",  "100.0.0.1", NULL};
  int all = 1;
  for (size_t i = 0; hosts[i]; i++) {
    up_hs h;
    char norm[HOST_NORM_MAX + 1], want[HOST_NORM_MAX + 64];
    int nr = host_norm(hosts[i], norm);
    int rc = up_hs_init(&h, HTTP, hosts[i], 80, NULL, 0, NULL, 0);
    if ((rc == PH_OK) != (nr == 0)) {
      diag("%s: init %d, host_norm %d", hosts[i], rc, nr);
      all = 0;
      continue;
    }
    if (rc != PH_OK)
      continue;
    unsigned char a[16];
    int kind = inet_pton(AF_INET, norm, a) == 1    ? UP_HS_HOST_IPV4
               : inet_pton(AF_INET6, norm, a) == 1 ? UP_HS_HOST_IPV6
                                                   : UP_HS_HOST_NAME;
    const uint8_t *d;
    size_t n = up_hs_pending_out(&h, &d);
    int w = snprintf(want, sizeof(want), "CONNECT %s:80 HTTP/1.1\r\n", norm);
    if (strcmp(h.host, norm) || h.host_kind != kind || w < 0 ||
        n < (size_t)w || memcmp(d, want, (size_t)w)) {
      diag("%s: host %s kind %d, want %s kind %d", hosts[i], h.host,
           h.host_kind, norm, kind);
      all = 0;
    }
    up_hs_wipe(&h);
  }
  ok(all, "an IPv4 literal is sent in host_norm's normal form, with its "
          "kind, however it was spelt");
}

/* up_hs_basic alone (the pool's absolute-form forwarding uses it too):
 * the token, its bound, and what it refuses. */
static void test_basic_token(void) {
  char out[UP_HS_BASIC_MAX + 8];
  size_t n = up_hs_basic("alice", 5, "s3cr3t-pw", 9, out, sizeof(out));
  ok(n == 20 && memcmp(out, "YWxpY2U6czNjcjN0LXB3", 20) == 0,
     "basic: base64(alice:s3cr3t-pw)");
  n = up_hs_basic("", 0, NULL, 0, out, sizeof(out));
  ok(n == 4 && memcmp(out, "Og==", 4) == 0, "basic: empty user and password");
  char u[UP_HS_FIELD_MAX + 1], pw[UP_HS_FIELD_MAX + 1];
  memset(u, 'u', sizeof(u));
  memset(pw, 'p', sizeof(pw));
  n = up_hs_basic(u, UP_HS_FIELD_MAX, pw, UP_HS_FIELD_MAX, out, sizeof(out));
  is_int((int)n, (int)UP_HS_BASIC_MAX, "basic: the longest token is "
                                       "UP_HS_BASIC_MAX");
  is_int((int)up_hs_basic(u, UP_HS_FIELD_MAX, pw, UP_HS_FIELD_MAX, out,
                          UP_HS_BASIC_MAX - 1),
         0, "basic: one byte short of room: refused");
  is_int((int)up_hs_basic(u, UP_HS_FIELD_MAX + 1, pw, 1, out, sizeof(out)), 0,
         "basic: a user name over 255 bytes: refused");
  is_int((int)up_hs_basic("a:b", 3, "pw", 2, out, sizeof(out)), 0,
         "basic: a user name with ':' (RFC 7617): refused");
  is_int((int)up_hs_basic("a", 1, NULL, 2, out, sizeof(out)), 0,
         "basic: a password length without bytes: refused");
}

/* up_hs_proxy_auth: the whole Proxy-Authorization value an `http`
 * upstream gets with requests forwarded in absolute form (the pool's
 * PH_OPEN_F_HTTP_FORWARD, the checker's), NUL-terminated, in the
 * caller's buffer; the same refusals as the token. */
static void test_proxy_auth(void) {
  char out[UP_HS_PROXY_AUTH_MAX + 1];
  size_t n = up_hs_proxy_auth("alice", 5, "s3cr3t-pw", 9, out, sizeof(out));
  is_int((int)n, 26, "proxy auth: \"Basic \" and the token");
  is_str(out, "Basic YWxpY2U6czNjcjN0LXB3",
         "proxy auth: the value, NUL-terminated");
  char u[UP_HS_FIELD_MAX], pw[UP_HS_FIELD_MAX];
  memset(u, 'u', sizeof(u));
  memset(pw, 'p', sizeof(pw));
  n = up_hs_proxy_auth(u, UP_HS_FIELD_MAX, pw, UP_HS_FIELD_MAX, out,
                       sizeof(out));
  is_int((int)n, (int)UP_HS_PROXY_AUTH_MAX,
         "proxy auth: the longest value is UP_HS_PROXY_AUTH_MAX");
  ok(out[n] == '\0', "proxy auth: the longest value is NUL-terminated");
  is_int((int)up_hs_proxy_auth(u, UP_HS_FIELD_MAX, pw, UP_HS_FIELD_MAX, out,
                               UP_HS_PROXY_AUTH_MAX),
         0, "proxy auth: no room for the NUL: refused");
  is_int((int)up_hs_proxy_auth("a:b", 3, "pw", 2, out, sizeof(out)), 0,
         "proxy auth: a user name with ':' (RFC 7617): refused");
  is_int((int)up_hs_proxy_auth("alice", 5, "pw", 2, out, 4), 0,
         "proxy auth: no room for the scheme: refused");
}

int main(void) {
  plan_lazy();
  test_connect_answers();
  test_connect_head_bound();
  test_connect_requests();
  test_socks5_success();
  test_socks5_failures();
  test_socks5_want();
  test_credentials();
  test_bounds();
  test_names();
  test_ipv4_normal_form();
  test_basic_token();
  test_proxy_auth();
  return done_testing();
}
