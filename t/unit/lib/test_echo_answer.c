/* SPDX-License-Identifier: BSD-2-Clause */
/* The echo endpoint's answer (modules/echo/echo_answer.h, issue 26,
 * CP-6-4): the peer address, the headers and the nonce come back as
 * JSON; bad, over-size and non-GET requests get their status; the answer
 * is read back by the checker's own reader (chk_echo.h). */
#include <stdio.h>
#include <string.h>

#include "checker/chk_echo.h"
#include "echo/echo_answer.h"
#include "tap.h"

static char out[ECHO_ANSWER_MAX];

static const char *body_of(const char *resp) {
  const char *b = strstr(resp, "\r\n\r\n");
  return b ? b + 4 : "";
}

int main(void) {
  plan_lazy();
  int st = 0;
  const char *req = "GET /?nonce=abc123 HTTP/1.1\r\nHost: e\r\n"
                    "X-Forwarded-For: 10.1.2.3\r\nVia: 1.1 tp\r\n\r\n";
  ok(echo_head_complete(req, strlen(req)) == ECHO_WHOLE, "a whole head");
  ok(echo_head_complete(req, 10) == ECHO_MORE, "a partial head wants more");
  size_t n = echo_answer(req, strlen(req), "192.0.2.7", out, sizeof(out), &st);
  out[n] = 0;
  is_int(st, 200, "CP-6-4 GET answered 200");
  ok(strstr(out, "\"remote_addr\":\"192.0.2.7\"") != NULL,
     "CP-6-4 the peer address the echo saw");
  ok(strstr(out, "\"nonce\":\"abc123\"") != NULL,
     "CP-6-4 the nonce of the query comes back");
  ok(strstr(out, "[\"X-Forwarded-For\",\"10.1.2.3\"]") != NULL,
     "CP-6-4 the request's headers come back");
  ok(strstr(out, "Content-Length: ") != NULL && strstr(out, "Connection: close"),
     "framed and closed");
  const char *b = body_of(out);
  chk_echo_result r;
  const char *own[] = {"10.1.2.3"};
  ok(chk_echo_read(b, strlen(b), "abc123", own, 1, &r) == 0 &&
         r.anonymity == CHK_ANON_TRANSPARENT &&
         !strcmp(r.egress_ip, "192.0.2.7"),
     "CP-6-4 the checker's address in X-Forwarded-For: transparent");
  const char *own2[] = {"10.1.2.30"};
  ok(chk_echo_read(b, strlen(b), "abc123", own2, 1, &r) == 0 &&
         r.anonymity == CHK_ANON_ANONYMOUS,
     "CP-6-4 forwarding headers without its address (10.1.2.3 is not "
     "10.1.2.30): anonymous");
  ok(chk_echo_read(b, strlen(b), "other", own, 1, &r) != 0,
     "CP-6-4 another nonce: bad_echo");

  const char *hdr = "GET /x HTTP/1.1\r\nHost: e\r\nX-Proxyhost-Nonce: n-9\r\n"
                    "Accept: */*\r\n\r\n";
  n = echo_answer(hdr, strlen(hdr), "::1", out, sizeof(out), &st);
  out[n] = 0;
  b = body_of(out);
  ok(chk_echo_read(b, strlen(b), "n-9", own, 1, &r) == 0 &&
         r.anonymity == CHK_ANON_ELITE && !strcmp(r.egress_ip, "::1"),
     "CP-6-4 the nonce header; no forwarding header: elite");

  const char *head = "HEAD / HTTP/1.1\r\nHost: e\r\n\r\n";
  n = echo_answer(head, strlen(head), "192.0.2.7", out, sizeof(out), &st);
  out[n] = 0;
  ok(st == 200 && !strcmp(body_of(out), ""), "HEAD: 200 without a body");

  const char *post = "POST / HTTP/1.1\r\nHost: e\r\n\r\n";
  echo_answer(post, strlen(post), "192.0.2.7", out, sizeof(out), &st);
  is_int(st, 405, "another method: 405");
  const char *bad = "GET / HTTP/1.1\r\nBad Header\r\n\r\n";
  echo_answer(bad, strlen(bad), "192.0.2.7", out, sizeof(out), &st);
  is_int(st, 400, "a malformed head: 400");
  static char big[ECHO_HEAD_MAX + 64];
  strcpy(big, "GET / HTTP/1.1\r\n");
  for (int i = 0; i < 70; i++)
    strcat(big, "X-A: b\r\n");
  strcat(big, "\r\n");
  echo_answer(big, strlen(big), "192.0.2.7", out, sizeof(out), &st);
  is_int(st, 431, "more than 64 fields: 431");
  const char *ctl = "GET / HTTP/1.1\r\nX-A: \xff\xfe\r\n\r\n";
  n = echo_answer(ctl, strlen(ctl), "192.0.2.7", out, sizeof(out), &st);
  out[n] = 0;
  ok(st == 200 && strstr(out, "\"??\""), "bytes outside ASCII echoed as '?'");

  /* The reader's token boundaries. */
  ok(chk_addr_in("for=10.0.0.1;proto=http", 23, "10.0.0.1"),
     "an address inside Forwarded is found");
  ok(!chk_addr_in("10.0.0.10", 9, "10.0.0.1"), "a longer address is not it");
  ok(chk_echo_read("<html>hi</html>", 15, "n", own, 1, &r) != 0,
     "CP-6-4 a canned page is not an echo answer");
  return done_testing();
}
