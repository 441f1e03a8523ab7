/* SPDX-License-Identifier: BSD-2-Clause */
/* libFuzzer target for the upstream proxy handshakes
 * (modules/upstream/up_hs.c, up_connect.c, up_socks5.c): arbitrary bytes as
 * the upstream proxy's answers to an HTTP CONNECT or a SOCKS5 handshake,
 * with and without credentials.
 *
 * Build (from the top of the source tree):
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined \
 *       -Isdk -Imodules modules/upstream/up_hs.c \
 *       modules/upstream/up_connect.c modules/upstream/up_socks5.c \
 *       modules/lib/host_norm.c t/fuzz/fuzz_up_hs.c -lcrypto \
 *       -o "$F/fuzz_up_hs"
 *   rm -rf "$F/corpus_up_hs" && cp -R t/fuzz/seeds/up_hs "$F/corpus_up_hs"
 *   "$F/fuzz_up_hs" -max_total_time=600 -max_len=9000 "$F/corpus_up_hs"
 *
 * Input byte 0: bit 0 SOCKS5 (else CONNECT), bit 1 with credentials,
 * bit 2 the proxy closes after the last byte, bits 3-5 the read size
 * (1, 2, 3, 5, 8, 64, 512, all); byte 1 the target (a name, an IPv4 or
 * an IPv6 literal); the rest is what the proxy sends.
 *
 * Besides memory safety it checks the contract: the same state, status,
 * consumed count and written bytes whatever the read size, and when the
 * caller offers more than want(); a read consumes at most what it was
 * given, and with UP_HS_MORE all of it; the decision is made at the last
 * consumed byte (one byte less is UP_HS_MORE); want() within its bounds
 * and requests within UP_HS_OUT_MAX; each state with the status it can
 * have (CONNECT: 2xx done, 407 and 401 auth, 100..599 refused;
 * SOCKS5: REP 0 done, 1..255 refused, -1 auth); a CONNECT success ends
 * at its empty line; after the end feed() says the same and consumes nothing;
 * and no credential byte is left in the handshake at its end. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <proxyhost/abi.h>
#include <proxyhost/pool_store.h>

#include "upstream/up_hs.h"

#define SENT_MAX 4096
#define STEPS_MAX 100000

static const char USER[] = "fz-user";
static const char PASS[] = "fz-pass-XYZ";
/* base64("fz-user:fz-pass-XYZ") */
static const char BASIC[] = "ZnotdXNlcjpmei1wYXNzLVhZWg==";

static void check(int cond) {
  if (!cond)
    abort();
}

typedef struct result {
  up_hs_state st;
  int status;
  size_t consumed;
  uint8_t sent[SENT_MAX];
  size_t sent_len;
} result;

static const char *target(uint8_t pick) {
  switch (pick % 3) {
  case 0:
    return "upstream.example";
  case 1:
    return "192.0.2.1";
  default:
    return "2001:db8::1";
  }
}

static void start(up_hs *h, int socks, int auth, uint8_t host) {
  int rc = up_hs_init(
      h, socks ? PH_POOL_UPSTREAM_SOCKS5 : PH_POOL_UPSTREAM_HTTP_CONNECT,
      target(host), 443, auth ? USER : NULL, auth ? (uint32_t)strlen(USER) : 0,
      auth ? PASS : NULL, auth ? (uint32_t)strlen(PASS) : 0);
  check(rc == PH_OK);
}

/* 1 when needle is somewhere in the n bytes at hay. */
static int contains(const void *hay, size_t n, const char *needle) {
  const uint8_t *p = hay;
  size_t k = strlen(needle);
  for (size_t i = 0; i + k <= n; i++)
    if (memcmp(p + i, needle, k) == 0)
      return 1;
  return 0;
}

static void no_secret(const up_hs *h) {
  check(!contains(h, sizeof(*h), PASS));
  check(!contains(h, sizeof(*h), BASIC));
  for (size_t i = 0; i < sizeof(h->out); i++)
    check(h->out[i] == 0);
  check(!h->user && !h->pass);
}

/* A caller: reads of at most chunk bytes, capped at want() unless
 * beyond_want (then feed() is offered all that is left). */
static void drive(up_hs *h, const uint8_t *in, size_t n, size_t chunk,
                  int beyond_want, int eof, result *r) {
  size_t pos = 0;
  memset(r, 0, sizeof(*r));
  r->st = UP_HS_MORE;
  for (int steps = 0; steps < STEPS_MAX && r->st == UP_HS_MORE; steps++) {
    const uint8_t *d;
    size_t k;
    while ((k = up_hs_pending_out(h, &d)) > 0) {
      check(k <= UP_HS_OUT_MAX);
      check(r->sent_len + k <= SENT_MAX);
      memcpy(r->sent + r->sent_len, d, k);
      r->sent_len += k;
      up_hs_sent(h, k);
    }
    size_t want = up_hs_want(h);
    check(want > 0); /* MORE with nothing to send reads */
    check(want <=
          (h->protocol == PH_POOL_UPSTREAM_SOCKS5 ? 262u : UP_HS_HEAD_MAX));
    size_t avail = n - pos;
    if (avail == 0 && !eof)
      break;
    size_t give = avail < chunk ? avail : chunk;
    if (!beyond_want && give > want)
      give = want;
    size_t c = (size_t)-1;
    r->st = up_hs_feed(h, in + pos, give, eof && give == avail, &c);
    check(c <= give);
    if (r->st == UP_HS_MORE)
      check(c == give || (beyond_want && c == want));
    pos += c;
    if (avail == 0)
      break;
  }
  r->status = h->status;
  r->consumed = pos;
  if (r->st != UP_HS_MORE) {
    size_t c = 1;
    check(up_hs_feed(h, in, n, eof, &c) == r->st && c == 0);
    check(up_hs_want(h) == 0 && up_hs_pending_out(h, NULL) == 0);
    no_secret(h);
  }
}

static void same(const result *a, const result *b) {
  check(a->st == b->st && a->status == b->status &&
        a->consumed == b->consumed && a->sent_len == b->sent_len &&
        memcmp(a->sent, b->sent, a->sent_len) == 0);
}

static void check_states(const result *r, int socks, const uint8_t *in) {
  switch (r->st) {
  case UP_HS_DONE:
    if (socks) {
      check(r->status == 0);
    } else {
      check(r->status >= 200 && r->status <= 299);
      check(r->consumed >= 2 && r->consumed <= UP_HS_HEAD_MAX);
      check(in[r->consumed - 1] == '\n');
      check(in[r->consumed - 2] == '\n' ||
            (r->consumed >= 3 && in[r->consumed - 2] == '\r' &&
             in[r->consumed - 3] == '\n'));
      check(memcmp(in, "HTTP/1.", 7) == 0);
    }
    break;
  case UP_HS_REFUSED:
    if (socks)
      check(r->status >= 1 && r->status <= 255);
    else
      check(r->status >= 100 && r->status <= 599 && r->status != 407 &&
            r->status != 401 && r->status / 100 != 2);
    break;
  case UP_HS_AUTH:
    check(socks ? r->status == -1 : (r->status == 407 || r->status == 401));
    break;
  case UP_HS_MORE:
  case UP_HS_MALFORMED:
    break;
  default:
    check(0);
  }
}

static void check_requests(const result *r, int socks, int auth) {
  if (socks) {
    check(r->sent_len >= 3 && r->sent[0] == 5 && r->sent[1] == 1 &&
          r->sent[2] == (auth ? 2 : 0));
  } else {
    check(r->sent_len > 8 && memcmp(r->sent, "CONNECT ", 8) == 0);
    check(contains(r->sent, r->sent_len, BASIC) == auth);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const size_t chunks[] = {1, 2, 3, 5, 8, 64, 512, (size_t)-1};
  if (size < 2)
    return 0;
  int socks = data[0] & 1, auth = (data[0] >> 1) & 1, eof = (data[0] >> 2) & 1;
  size_t chunk = chunks[(data[0] >> 3) & 7];
  uint8_t host = data[1];
  const uint8_t *in = data + 2;
  size_t n = size - 2;

  static up_hs h; /* static: big, and zeroed before each use by init */
  static result a, b, c, d;
  start(&h, socks, auth, host);
  drive(&h, in, n, chunk, 0, eof, &a);
  start(&h, socks, auth, host);
  drive(&h, in, n, (size_t)-1, 0, eof, &b);
  same(&a, &b);
  start(&h, socks, auth, host);
  drive(&h, in, n, (size_t)-1, 1, eof, &c);
  same(&a, &c);
  check_states(&a, socks, in);
  check_requests(&a, socks, auth);

  /* The decision was made at the last consumed byte: one less (and no
   * close) is not decided yet. */
  if (a.st != UP_HS_MORE && a.consumed > 0 &&
      !(eof && a.consumed == n && a.st == UP_HS_MALFORMED)) {
    start(&h, socks, auth, host);
    drive(&h, in, a.consumed - 1, (size_t)-1, 0, 0, &d);
    check(d.st == UP_HS_MORE && d.consumed == a.consumed - 1);
  }
  /* A close after the consumed bytes changes nothing that was decided,
   * and ends what was not. */
  start(&h, socks, auth, host);
  drive(&h, in, a.consumed, (size_t)-1, 0, 1, &d);
  check(d.st == (a.st == UP_HS_MORE ? UP_HS_MALFORMED : a.st));
  up_hs_wipe(&h);
  no_secret(&h);
  return 0;
}
