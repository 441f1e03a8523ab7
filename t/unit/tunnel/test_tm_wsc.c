/* SPDX-License-Identifier: BSD-2-Clause */
/* RFC 6455 for both ends (tm_wsc.c): the upgrade request (offer in
 * order: TM-PROTO-14, token only in a header), the check of the server's
 * 101 (RFC 6455 section 4.1's rules, the sample key of section 1.3), the
 * server's reading of the request (section 4.2.1: path, upgrade headers,
 * key, version, the first offered name it has, the bearer) at every
 * split, its 101 and refusals, the masked frames a client sends (section
 * 5.3) and a server's unmasked ones, and the decoder in both roles at
 * every split of the input: a client's reading of the server's frames
 * (never masked) and a server's of the client's (always masked: issue 22
 * item 6, section 5.1), with each protocol error (TM-SEC-1: every frame
 * bounds-checked). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "tunnel_common/proto/tm_proto.h"
#include "tunnel_common/session/tm_wsc.h"

/* RFC 6455 section 1.3's example. */
#define RFC_KEY "dGhlIHNhbXBsZSBub25jZQ=="
#define RFC_ACCEPT "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="

static void test_key_and_request(void) {
  const uint8_t nonce[16] = "the sample nonce";
  char key[TM_WSC_KEY_LEN + 1];
  tm_wsc_key(nonce, key);
  is_str(key, RFC_KEY, "the key is base64 of the 16 random bytes (RFC 6455 1.3)");

  char buf[1024];
  int n = tm_wsc_request(buf, sizeof(buf) - 1, "/tunnel", "srv.example:443",
                         TM_SUBPROTO_FULL "," TM_SUBPROTO_OPEN "," TM_SUBPROTO_BASE,
                         "tok123", 6, key);
  ok(n > 0, "a request is written");
  buf[n > 0 ? n : 0] = '\0';
  like(buf, "GET /tunnel HTTP/1.1\r\nHost: srv.example:443\r\n",
       "request line and Host");
  like(buf, "Upgrade: websocket\r\nConnection: Upgrade\r\n", "the upgrade headers");
  like(buf, "Sec-WebSocket-Key: " RFC_KEY "\r\nSec-WebSocket-Version: 13\r\n",
       "key and version 13");
  like(buf,
       "Sec-WebSocket-Protocol: " TM_SUBPROTO_FULL "," TM_SUBPROTO_OPEN
       "," TM_SUBPROTO_BASE "\r\n",
       "TM-PROTO-14: the offer in priority order");
  like(buf, "Authorization: Bearer tok123\r\n", "the token in Authorization");
  ok(n > 4 && !memcmp(buf + n - 4, "\r\n\r\n", 4), "the head ends with an empty line");
  unlike(buf, "/tunnel?", "the token is never in the URL");

  n = tm_wsc_request(buf, sizeof(buf) - 1, "/t", "h:1", "", NULL, 0, key);
  buf[n > 0 ? n : 0] = '\0';
  ok(n > 0 && !strstr(buf, "Sec-WebSocket-Protocol") && !strstr(buf, "Authorization"),
     "no offer and no token: neither header");
  ok(tm_wsc_request(buf, sizeof(buf), "/t", "h:1", NULL, "a\r\nX: y", 7, key) < 0,
     "a token with CR LF is refused (no header injection)");
  ok(tm_wsc_request(buf, sizeof(buf), "/t\r\n", "h:1", NULL, NULL, 0, key) < 0,
     "a path with CR LF is refused");
  ok(tm_wsc_request(buf, 40, "/tunnel", "srv.example:443", NULL, NULL, 0, key) < 0,
     "a request that does not fit is refused");
}

static int answer(const char *head, tm_wsc_answer *a, const char **why) {
  return tm_wsc_response((const uint8_t *)head, strlen(head), RFC_KEY, a, why);
}

#define GOOD_101                                                            \
  "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"              \
  "Connection: Upgrade\r\nSec-WebSocket-Accept: " RFC_ACCEPT "\r\n"

static void test_answer(void) {
  tm_wsc_answer a;
  const char *why;
  const char *h = GOOD_101 "Sec-WebSocket-Protocol: " TM_SUBPROTO_OPEN "\r\n\r\n";
  is_int(answer(h, &a, &why), (int)strlen(h), "a valid 101: its head's length");
  is_str(a.subproto, TM_SUBPROTO_OPEN, "... and the chosen subprotocol");
  h = GOOD_101 "\r\n";
  is_int(answer(h, &a, &why), (int)strlen(h), "no subprotocol is valid (legacy: TM-PROTO-16)");
  is_str(a.subproto, "", "... and reported empty");
  h = "HTTP/1.1 101 Switching Protocols\r\nupgrade:  WebSocket \r\n"
      "connection: keep-alive, upgrade\r\nsec-websocket-accept: " RFC_ACCEPT "\r\n\r\n";
  is_int(answer(h, &a, &why), (int)strlen(h),
         "names and the Upgrade value case-insensitive, Connection as a token list");

  /* Every byte split: MORE until the last byte. */
  h = GOOD_101 "\r\n";
  int more = 1;
  for (size_t i = 0; i < strlen(h); i++)
    if (tm_wsc_response((const uint8_t *)h, i, RFC_KEY, &a, &why) != TM_WSC_HS_MORE)
      more = 0;
  ok(more, "a head cut anywhere asks for more");
  char frames[256];
  snprintf(frames, sizeof(frames), "%s\x82\x01X", h);
  is_int(tm_wsc_response((const uint8_t *)frames, strlen(frames), RFC_KEY, &a, &why),
         (int)strlen(h), "frames after the head are not the head's");

  is_int(answer("HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n", &a, &why),
         TM_WSC_HS_REFUSED, "a 401 is refused");
  is_int(a.status, 401, "... with its status");
  is_int(answer("HTTP/1.1 503 Busy\r\n\r\n", &a, &why), TM_WSC_HS_REFUSED, "a 503 is refused");
  is_int(answer("HTTP/1.0 101 X\r\n\r\n", &a, &why), TM_WSC_HS_BAD,
         "a 101 over HTTP/1.0 is bad");
  like(why ? why : "", "HTTP/1.1", "... saying WebSocket needs HTTP/1.1");
  /* Issue 24 item 12: a plain web server's HTTP/1.0 404 is a wrong path,
   * not "not HTTP/1.1". */
  is_int(answer("HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n", &a,
                &why),
         TM_WSC_HS_REFUSED, "issue 24 item 12: an HTTP/1.0 404 is a refusal");
  is_int(a.status, 404, "... with its status read");
  like(why ? why : "", "Not Found: nothing serves the URL's path",
       "... saying what a 404 means (the path)");
  unlike(why ? why : "", "not HTTP/1.1", "... not \"not HTTP/1.1\"");
  answer("HTTP/1.1 401 Unauthorized\r\n\r\n", &a, &why);
  like(why ? why : "", "refused the token", "a 401 says the token was refused");
  is_int(answer("SSH-2.0-x\r\n\r\n", &a, &why), TM_WSC_HS_BAD, "not HTTP is bad");
  is_int(answer("HTTP/1.1 101 S\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                "Sec-WebSocket-Accept: AAAAAAAAAAAAAAAAAAAAAAAAAAA=\r\n\r\n", &a, &why),
         TM_WSC_HS_BAD, "a wrong Sec-WebSocket-Accept is bad");
  like(why ? why : "", "Accept", "... saying so");
  is_int(answer("HTTP/1.1 101 S\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", &a, &why),
         TM_WSC_HS_BAD, "no Sec-WebSocket-Accept is bad");
  is_int(answer("HTTP/1.1 101 S\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n"
                "Sec-WebSocket-Accept: " RFC_ACCEPT "\r\n\r\n", &a, &why),
         TM_WSC_HS_BAD, "an upgrade to something else is bad");
  is_int(answer("HTTP/1.1 101 S\r\nUpgrade: websocket\r\n"
                "Sec-WebSocket-Accept: " RFC_ACCEPT "\r\n\r\n", &a, &why),
         TM_WSC_HS_BAD, "no Connection: upgrade is bad");
  is_int(answer(GOOD_101 "Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n", &a, &why),
         TM_WSC_HS_BAD, "an extension that was not offered is bad");
  is_int(answer(GOOD_101 "Sec-WebSocket-Protocol: a\r\nSec-WebSocket-Protocol: b\r\n\r\n",
                &a, &why),
         TM_WSC_HS_BAD, "two subprotocols are bad (exactly one: TM-PROTO-15)");
  is_int(answer(GOOD_101 "Bad header line\r\n\r\n", &a, &why), TM_WSC_HS_BAD,
         "a header line without a colon is bad");
  is_int(answer(GOOD_101 "X: a\nb\r\n\r\n", &a, &why), TM_WSC_HS_BAD, "a bare LF is bad");

  char *big = malloc(TM_WSC_RESP_MAX + 64);
  if (big) {
    memset(big, 'a', TM_WSC_RESP_MAX + 64);
    memcpy(big, "HTTP/1.1 101 S\r\nX: ", 19);
    is_int(tm_wsc_response((const uint8_t *)big, TM_WSC_RESP_MAX + 64, RFC_KEY, &a, &why),
           TM_WSC_HS_BAD, "a head longer than TM_WSC_RESP_MAX is bad, not MORE");
    is_int(tm_wsc_response((const uint8_t *)big, TM_WSC_RESP_MAX - 1, RFC_KEY, &a, &why),
           TM_WSC_HS_MORE, "... and one byte shorter still asks for more");
    free(big);
  }
}

static void test_frames_out(void) {
  const uint8_t mask[4] = {0x37, 0xfa, 0x21, 0x3d};
  uint8_t h[TM_WSC_HDR_MAX];
  /* RFC 6455 section 5.7: a masked "Hello". */
  size_t n = tm_wsc_frame_header(h, TM_WSC_OP_TEXT, 5, mask);
  uint8_t pay[5];
  tm_wsc_mask(pay, (const uint8_t *)"Hello", 5, mask, 0);
  const uint8_t want[] = {0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58};
  ok(n == 6 && !memcmp(h, want, 6) && !memcmp(pay, want + 6, 5),
     "RFC 6455 5.7's masked Hello, byte for byte");
  is_int((int)tm_wsc_frame_header(h, TM_WSC_OP_BINARY, 125, mask), 6, "125: 7-bit length");
  is_int((int)tm_wsc_frame_header(h, TM_WSC_OP_BINARY, 126, mask), 8, "126: 16-bit length");
  ok(h[1] == (0x80 | 126) && h[2] == 0 && h[3] == 126, "... big-endian, mask bit set");
  is_int((int)tm_wsc_frame_header(h, TM_WSC_OP_BINARY, 65536, mask), 14, "65536: 64-bit length");
  ok(h[1] == (0x80 | 127) && h[7] == 1 && h[8] == 0 && h[9] == 0, "... big-endian");
  is_int((int)tm_wsc_frame_header(h, TM_WSC_OP_BINARY, 5, NULL), 2,
         "a server's frame: no key");
  ok(h[0] == 0x82 && h[1] == 5, "... and no mask bit");
  is_int((int)tm_wsc_frame_header(h, TM_WSC_OP_BINARY, 65536, NULL), 10,
         "a server's 64-bit length: ten bytes");
  ok(h[1] == 127, "... without the mask bit");

  /* The wide mask equals the byte-wise one at every length and offset. */
  uint8_t src[100], a[100], b[100];
  for (int i = 0; i < 100; i++)
    src[i] = (uint8_t)(i * 7 + 3);
  int same = 1;
  for (size_t len = 0; len <= 100; len++)
    for (size_t off = 0; off < 4; off++) {
      tm_wsc_mask(a, src, len, mask, off);
      for (size_t i = 0; i < len; i++)
        b[i] = src[i] ^ mask[(off + i) & 3];
      if (memcmp(a, b, len))
        same = 0;
    }
  ok(same, "masking eight bytes a step equals RFC 6455 5.3's byte rule");
  memcpy(a, src, 100);
  tm_wsc_mask(a, a, 100, mask, 0);
  tm_wsc_mask(a, a, 100, mask, 0);
  ok(!memcmp(a, src, 100), "in place, twice: the original");
}

/* Feeds in[0..len) in pieces of `step` bytes; collects data and controls
 * into out as text: "D<first><last>:<bytes>|" and "C<op>:<bytes>|", "E" on
 * an error. */
static void decode_role(int role, const uint8_t *orig, size_t len, size_t step,
                        char *out, size_t cap) {
  tm_wsc_rx rx;
  tm_wsc_rx_init(&rx, role);
  size_t o = 0, at = 0;
  /* The server role unmasks in place: each decoding gets its own copy. */
  static uint8_t in[8192];
  if (len > sizeof(in))
    len = sizeof(in);
  memcpy(in, orig, len);
  out[0] = '\0';
  while (at < len) {
    size_t piece = len - at < step ? len - at : step;
    size_t off = 0;
    for (int guard = 0; guard < 10000; guard++) {
      tm_wsc_ev ev;
      size_t used;
      enum tm_wsc_event k = tm_wsc_rx_next(&rx, in + at + off, piece - off, &used, &ev);
      off += used;
      if (k == TM_WSC_EV_NEED)
        break;
      if (k == TM_WSC_EV_ERROR) {
        o += (size_t)snprintf(out + o, cap - o, "E");
        return;
      }
      if (k == TM_WSC_EV_DATA)
        o += (size_t)snprintf(out + o, cap - o, "D%d%d:%.*s|", ev.first, ev.last,
                              (int)ev.len, (const char *)ev.data);
      else
        o += (size_t)snprintf(out + o, cap - o, "C%u:%.*s|", ev.opcode, (int)ev.len,
                              (const char *)ev.data);
      if (o >= cap)
        return;
    }
    at += piece;
  }
}

static void decode(const uint8_t *in, size_t len, size_t step, char *out,
                   size_t cap) {
  decode_role(TM_WSC_CLIENT, in, len, step, out, cap);
}

/* Joins consecutive data pieces so that any split gives the same text. */
static void join(const char *in, char *out) {
  /* "D10:ab|D00:cd|D01:e|" -> "[abcde]" ; controls kept. */
  size_t o = 0;
  while (*in) {
    if (*in == 'D') {
      int first = in[1] == '1', last = in[2] == '1';
      const char *p = in + 4, *bar = strchr(p, '|');
      if (first)
        out[o++] = '[';
      memcpy(out + o, p, (size_t)(bar - p));
      o += (size_t)(bar - p);
      if (last)
        out[o++] = ']';
      in = bar + 1;
    } else if (*in == 'C') {
      const char *bar = strchr(in, '|');
      memcpy(out + o, in, (size_t)(bar - in + 1));
      o += (size_t)(bar - in + 1);
      in = bar + 1;
    } else {
      out[o++] = *in++;
    }
  }
  out[o] = '\0';
}

static int all_splits_role(int role, const uint8_t *in, size_t len,
                           const char *want) {
  char raw[4096], got[4096];
  for (size_t step = 1; step <= len; step++) {
    decode_role(role, in, len, step, raw, sizeof(raw));
    join(raw, got);
    if (strcmp(got, want)) {
      printf("# step %zu: got %s want %s\n", step, got, want);
      return 0;
    }
  }
  return 1;
}

static int all_splits(const uint8_t *in, size_t len, const char *want) {
  return all_splits_role(TM_WSC_CLIENT, in, len, want);
}

/* The same frames as a client sends them: each with a masking key (a
 * different one per frame) and its payload masked. Frames' headers in
 * in are well-formed and unmasked. */
static size_t as_client(const uint8_t *in, size_t n, uint8_t *out) {
  size_t i = 0, o = 0;
  uint8_t key[4] = {0x11, 0x5a, 0xc3, 0x07};
  while (i + 2 <= n) {
    uint64_t len = in[i + 1] & 0x7f;
    size_t h = 2;
    if (len == 126)
      len = ((uint64_t)in[i + 2] << 8) | in[i + 3], h = 4;
    else if (len == 127) {
      len = 0;
      for (int k = 0; k < 8; k++)
        len = (len << 8) | in[i + 2 + k];
      h = 10;
    }
    memcpy(out + o, in + i, h);
    out[o + 1] |= 0x80;
    o += h;
    memcpy(out + o, key, 4);
    o += 4;
    tm_wsc_mask(out + o, in + i + h, (size_t)len, key, 0);
    o += (size_t)len;
    i += h + (size_t)len;
    key[0] = (uint8_t)(key[0] + 37), key[3] ^= 0x5c; /* the next frame's */
  }
  return o;
}

/* Issue 22 item 6: a server requires the mask (RFC 6455 section 5.1). */
static void test_frames_in_server(void) {
  uint8_t buf[512];
  const uint8_t s1[] = {0x82, 3, 'a', 'b', 'c', 0x89, 1, 'p', 0x02, 2, 'd', 'e',
                        0x8a, 0, 0x80, 1, 'f', 0x82, 0};
  size_t n = as_client(s1, sizeof(s1), buf);
  ok(all_splits_role(TM_WSC_SERVER, buf, n, "[abc]C9:p|[de" "C10:|" "f][]"),
     "server role: masked messages, a ping, a fragmented message with a "
     "pong inside, an empty message, unmasked: at every split");
  uint8_t s2[4 + 300];
  s2[0] = 0x82, s2[1] = 126, s2[2] = 1, s2[3] = 44;
  for (int i = 0; i < 300; i++)
    s2[4 + i] = (uint8_t)('a' + i % 26);
  char want2[310];
  want2[0] = '[';
  for (int i = 0; i < 300; i++)
    want2[1 + i] = (char)('a' + i % 26);
  want2[301] = ']';
  want2[302] = '\0';
  n = as_client(s2, sizeof(s2), buf);
  ok(all_splits_role(TM_WSC_SERVER, buf, n, want2),
     "server role: a masked 16-bit length (the key's phase kept across "
     "pieces): at every split");
  const uint8_t s3[10 + 5] = {0x82, 127, 0, 0, 0, 0, 0, 0, 0, 5,
                              'h', 'e', 'l', 'l', 'o'};
  n = as_client(s3, sizeof(s3), buf);
  ok(all_splits_role(TM_WSC_SERVER, buf, n, "[hello]"),
     "server role: a masked 64-bit length: at every split");
  const uint8_t close[] = {0x88, 2, 0x03, 0xe8};
  n = as_client(close, sizeof(close), buf);
  ok(all_splits_role(TM_WSC_SERVER, buf, n, "C8:\x03\xe8|"),
     "server role: a masked close, its code unmasked");

  struct {
    const uint8_t b[12];
    size_t n;
    const char *name;
  } bad[] = {
      {{0x82, 0x02, 'h', 'i'}, 4, "an unmasked binary frame"},
      {{0x82, 0x00}, 2, "an unmasked empty frame"},
      {{0x89, 0x00}, 2, "an unmasked ping"},
      {{0x88, 0x02, 0x03, 0xe8}, 4, "an unmasked close"},
      {{0x02, 0x81, 1, 2, 3, 4, 'a', 0x80, 0x01, 'b'}, 10,
       "a masked fragment, then an unmasked continuation"},
      {{0xc2, 0x81, 1, 2, 3, 4, 'x'}, 7, "a masked frame with RSV1"},
      {{0x89, 0xfe, 0, 126, 1, 2, 3, 4}, 8, "a masked control over 125 bytes"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char got[256];
    int every = 1;
    for (size_t step = 1; step <= bad[i].n; step++) {
      decode_role(TM_WSC_SERVER, bad[i].b, bad[i].n, step, got, sizeof(got));
      if (!strchr(got, 'E'))
        every = 0;
    }
    char name[160];
    snprintf(name, sizeof(name),
             "issue 22 item 6: server role: %s is a protocol error, at every "
             "split", bad[i].name);
    ok(every, name);
  }
  char got[256];
  decode_role(TM_WSC_SERVER, (const uint8_t *)"\x82\x02hi", 4, 4, got,
              sizeof(got));
  is_str(got, "E", "an unmasked frame's payload is never reported");
  /* The client role still refuses a masked frame. */
  n = as_client(s3, sizeof(s3), buf);
  decode_role(TM_WSC_CLIENT, buf, n, n, got, sizeof(got));
  is_str(got, "E", "client role: the same masked frame is an error");
}

#define UP_HEAD(path, extra)                                                   \
  "GET " path " HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"         \
  "Connection: keep-alive, Upgrade\r\nSec-WebSocket-Key: " RFC_KEY "\r\n"      \
  "Sec-WebSocket-Version: 13\r\n" extra "\r\n"

static const char *const srv_names[] = {TM_SUBPROTO_FULL, TM_SUBPROTO_OPEN,
                                        TM_SUBPROTO_BASE, NULL};

static int upgrade(const char *req, tm_wsc_upgrade *up) {
  const char *why;
  return tm_wsc_upgrade_parse((const uint8_t *)req, strlen(req), "/tunnel",
                              srv_names, up, &why);
}

static void test_upgrade(void) {
  tm_wsc_upgrade up;
  static const char good[] = UP_HEAD(
      "/tunnel", "Sec-WebSocket-Protocol: x, " TM_SUBPROTO_OPEN ", "
                 TM_SUBPROTO_FULL "\r\nAuthorization: Bearer tok-1\r\n");
  int n = upgrade(good, &up);
  is_int(n, (int)strlen(good), "a valid upgrade: the head's length");
  is_int(up.status, 0, "... and no refusal");
  is_str(up.key, RFC_KEY, "... its key");
  ok(up.chosen == 1, "TM-PROTO-15: the first name the client offered that "
                     "the server has (open-result before full)");
  ok(up.auth_len == 12 && !memcmp(good + up.auth_off, "Bearer tok-1", 12),
     "the Authorization value, in place");
  /* Every split: MORE until the blank line, then the same verdict. */
  int fine = 1;
  for (size_t l = 0; l < strlen(good); l++) {
    const char *why;
    if (tm_wsc_upgrade_parse((const uint8_t *)good, l, "/tunnel", srv_names,
                             &up, &why) != TM_WSC_HS_MORE)
      fine = 0;
  }
  ok(fine, "any prefix of the head asks for more");
  static const char two[] = UP_HEAD("/tunnel?x=1",
                                    "Sec-WebSocket-Protocol: chat\r\n"
                                    "Sec-WebSocket-Protocol: " TM_SUBPROTO_BASE
                                    "\r\n") "\x82\x80" "abcd";
  n = upgrade(two, &up);
  ok(n == (int)strlen(two) - 6 && up.status == 0 && up.chosen == 2 &&
         up.auth_len == 0,
     "a query is ignored, offers across two headers, frames after the head "
     "not taken, no Authorization");

  struct {
    const char *req;
    int status;
    const char *name;
  } cases[] = {
      {"GET /tunnel HTTP/1.1\r\nHost: x\r\n\r\n", 404, "a plain GET: 404"},
      {UP_HEAD("/other", "Sec-WebSocket-Protocol: " TM_SUBPROTO_BASE "\r\n"),
       404, "another path: 404"},
      {UP_HEAD("/tunnel/", "Sec-WebSocket-Protocol: " TM_SUBPROTO_BASE "\r\n"),
       404, "the path with a slash more: 404"},
      {UP_HEAD("/tunnel", ""), 400, "no offer: 400 (TM-PROTO-14)"},
      {UP_HEAD("/tunnel", "Sec-WebSocket-Protocol: chat, tm-http\r\n"), 400,
       "no TunnelMesh name offered: 400"},
      {"POST /tunnel HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
       "Connection: Upgrade\r\nSec-WebSocket-Key: " RFC_KEY "\r\n"
       "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: " TM_SUBPROTO_BASE
       "\r\n\r\n",
       400, "POST: 400"},
      {"GET /tunnel HTTP/1.1\r\nUpgrade: websocket\r\n"
       "Connection: Upgrade\r\nSec-WebSocket-Key: " RFC_KEY "\r\n"
       "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: " TM_SUBPROTO_BASE
       "\r\n\r\n",
       400, "no Host: 400"},
      {"GET /tunnel HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
       "Sec-WebSocket-Key: " RFC_KEY "\r\nSec-WebSocket-Version: 13\r\n"
       "Sec-WebSocket-Protocol: " TM_SUBPROTO_BASE "\r\n\r\n",
       400, "no Connection: upgrade: 400"},
      {"GET /tunnel HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
       "Connection: Upgrade\r\nSec-WebSocket-Key: abc\r\n"
       "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: " TM_SUBPROTO_BASE
       "\r\n\r\n",
       400, "a key that is not 16 bytes: 400"},
      {"GET /tunnel HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
       "Connection: Upgrade\r\nSec-WebSocket-Key: " RFC_KEY "\r\n"
       "Sec-WebSocket-Version: 8\r\nSec-WebSocket-Protocol: " TM_SUBPROTO_BASE
       "\r\n\r\n",
       426, "version 8: 426"},
      {UP_HEAD("/tunnel", "Sec-WebSocket-Protocol: " TM_SUBPROTO_BASE "\r\n"
                          "Authorization: Bearer a\r\n"
                          "Authorization: Bearer b\r\n"),
       400, "two Authorization headers: 400"},
      {UP_HEAD("/tunnel", "Sec-WebSocket-Protocol: " TM_SUBPROTO_BASE "\r\n"
                          " folded\r\n"),
       400, "a folded line: 400"},
      {UP_HEAD("/tunnel", "Sec-WebSocket-Protocol: " TM_SUBPROTO_BASE "\r\n"
                          "X: a\rb\r\n"),
       400, "a bare CR: 400"},
      {"GET /tunnel HTTP/2.0\r\nHost: x\r\n\r\n", 400, "HTTP/2.0: 400"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const char *why = NULL;
    int rc = tm_wsc_upgrade_parse((const uint8_t *)cases[i].req,
                                  strlen(cases[i].req), "/tunnel", srv_names,
                                  &up, &why);
    ok(rc != TM_WSC_HS_MORE && up.status == cases[i].status && why,
       cases[i].name);
  }
  static char big[TM_WSC_REQ_MAX + 16];
  memset(big, 'a', sizeof(big) - 1);
  memcpy(big, "GET /tunnel HTTP/1.1\r\nX: ", 25);
  const char *why;
  ok(tm_wsc_upgrade_parse((const uint8_t *)big, strlen(big), "/tunnel",
                          srv_names, &up, &why) == TM_WSC_HS_BAD &&
         up.status == 431,
     "a head longer than TM_WSC_REQ_MAX: 431");

  char out[512];
  n = tm_wsc_accept(out, sizeof(out) - 1, RFC_KEY, TM_SUBPROTO_OPEN);
  out[n > 0 ? n : 0] = '\0';
  like(out, "HTTP/1.1 101 Switching Protocols\r\n", "the 101");
  like(out, "Sec-WebSocket-Accept: " RFC_ACCEPT "\r\n",
       "Sec-WebSocket-Accept for RFC 6455 1.3's key");
  like(out, "Sec-WebSocket-Protocol: " TM_SUBPROTO_OPEN "\r\n\r\n",
       "the chosen name, then the blank line");
  tm_wsc_answer a;
  ok(n > 0 && tm_wsc_response((const uint8_t *)out, (size_t)n, RFC_KEY, &a,
                              &why) == n &&
         !strcmp(a.subproto, TM_SUBPROTO_OPEN),
     "our client accepts our server's 101");
  n = tm_wsc_accept(out, sizeof(out) - 1, RFC_KEY, NULL);
  out[n > 0 ? n : 0] = '\0';
  ok(n > 0 && !strstr(out, "Sec-WebSocket-Protocol"),
     "no name (legacy): no Sec-WebSocket-Protocol at all");
  n = tm_wsc_refusal(out, sizeof(out) - 1, 503);
  out[n > 0 ? n : 0] = '\0';
  like(out, "HTTP/1.1 503 ", "a refusal: 503");
  n = tm_wsc_refusal(out, sizeof(out) - 1, 426);
  out[n > 0 ? n : 0] = '\0';
  like(out, "Sec-WebSocket-Version: 13\r\n", "426 names version 13");
}

static void test_frames_in(void) {
  /* binary "abc"; ping "p"; fragmented "de"+"f" with a pong between; empty msg */
  const uint8_t s1[] = {0x82, 3, 'a', 'b', 'c', 0x89, 1, 'p', 0x02, 2, 'd', 'e',
                        0x8a, 0, 0x80, 1, 'f', 0x82, 0};
  ok(all_splits(s1, sizeof(s1), "[abc]C9:p|[de" "C10:|" "f][]"),
     "messages, a ping, a fragmented message with a pong inside, an empty message: at every split");
  /* 16-bit length */
  uint8_t s2[4 + 300];
  s2[0] = 0x82, s2[1] = 126, s2[2] = 1, s2[3] = 44;
  memset(s2 + 4, 'x', 300);
  char want2[310];
  want2[0] = '[';
  memset(want2 + 1, 'x', 300);
  want2[301] = ']';
  want2[302] = '\0';
  ok(all_splits(s2, sizeof(s2), want2), "a 16-bit length: at every split");
  /* 64-bit length */
  uint8_t s3[10 + 5] = {0x82, 127, 0, 0, 0, 0, 0, 0, 0, 5, 'h', 'e', 'l', 'l', 'o'};
  ok(all_splits(s3, sizeof(s3), "[hello]"), "a 64-bit length: at every split");
  {
    tm_wsc_rx rx;
    tm_wsc_ev ev;
    size_t used;
    tm_wsc_rx_init(&rx, TM_WSC_CLIENT);
    tm_wsc_rx_next(&rx, s2, 4 + 100, &used, &ev);
    ok(ev.len == 100 && ev.frame_left == 200,
       "a piece says how much of its frame is still due (200 of 300)");
  }
  const uint8_t close[] = {0x88, 2, 0x03, 0xe8};
  ok(all_splits(close, sizeof(close), "C8:\x03\xe8|"), "a close with its code");
  const uint8_t text[] = {0x81, 2, 'h', 'i'};
  ok(all_splits(text, sizeof(text), "[hi]"), "text is reported (the conn refuses it)");

  struct {
    const uint8_t b[12];
    size_t n;
    const char *name;
  } bad[] = {
      {{0x82, 0x81, 1, 2, 3, 4, 'x'}, 7, "a masked frame from the server"},
      {{0xc2, 1, 'x'}, 3, "RSV1 set (no extension was negotiated)"},
      {{0xa2, 1, 'x'}, 3, "RSV2 set"},
      {{0x83, 1, 'x'}, 3, "an unknown data opcode (3)"},
      {{0x8b, 0}, 2, "an unknown control opcode (0xB)"},
      {{0x80, 1, 'x'}, 3, "a continuation outside a message"},
      {{0x02, 1, 'a', 0x82, 1, 'b'}, 6, "a new message inside a fragmented one"},
      {{0x09, 0}, 2, "a fragmented ping"},
      {{0x89, 126, 0, 126}, 4, "a control frame over 125 bytes"},
      {{0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 1}, 10, "a 64-bit length with its top bit"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char got[256];
    int every = 1;
    for (size_t step = 1; step <= bad[i].n; step++) {
      decode(bad[i].b, bad[i].n, step, got, sizeof(got));
      if (!strchr(got, 'E'))
        every = 0;
    }
    char name[128];
    snprintf(name, sizeof(name), "TM-SEC-1: %s is a protocol error, at every split", bad[i].name);
    ok(every, name);
  }
  tm_wsc_rx rx;
  tm_wsc_rx_init(&rx, TM_WSC_CLIENT);
  tm_wsc_ev ev;
  size_t used;
  uint8_t m[] = {0x82, 0x81, 1, 2, 3, 4, 'x'};
  tm_wsc_rx_next(&rx, m, sizeof(m), &used, &ev);
  uint8_t good[] = {0x82, 1, 'x'};
  is_int(tm_wsc_rx_next(&rx, good, sizeof(good), &used, &ev), TM_WSC_EV_ERROR,
         "after an error the decoder stays failed");
}

int main(void) {
  plan_lazy();
  test_key_and_request();
  test_answer();
  test_frames_out();
  test_frames_in();
  test_frames_in_server();
  test_upgrade();
  return done_testing();
}
