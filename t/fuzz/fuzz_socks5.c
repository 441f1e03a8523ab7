/* SPDX-License-Identifier: BSD-2-Clause */
/* libFuzzer target for the SOCKS5 handshake codec
 * (modules/socks5/socks5_proto.c).
 *
 * Build (from the top of the source tree):
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined \
 *       -Imodules modules/socks5/socks5_proto.c t/fuzz/fuzz_socks5.c \
 *       -o "$F/fuzz_socks5"
 *   mkdir -p "$F/corpus_socks5"
 *   printf '\004\005\001\000\005\001\000\003\007ok.test\000\120' \
 *       > "$F/corpus_socks5/connect"
 * (the leading control byte \004 picks no-auth and the read size; see
 * t/fuzz/README.md for a username/password seed)
 *   "$F/fuzz_socks5" -max_total_time=600 -max_len=2048 "$F/corpus_socks5"
 *
 * The first input byte picks the path (no-auth or username/password) and
 * how the rest is cut into reads; the rest is the client's byte stream,
 * parsed as the module does: greeting, then RFC 1929 when chosen, then
 * the request, from a buffer of at most 600 bytes. Besides memory safety
 * it checks the codec's contract: a complete message is never longer
 * than S5_MAX_MESSAGE nor than the bytes given, every prefix of it is
 * NEED_MORE, verdicts never change as bytes arrive, the host is a
 * NUL-terminated string without embedded NULs, and the encoders stay
 * within their stated sizes. */
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "socks5/socks5_proto.h"

#define BUF 600

static void check(int cond) {
  if (!cond)
    abort();
}

typedef int (*parse_fn)(const uint8_t *, size_t, void *);

static int greeting_(const uint8_t *p, size_t n, void *o) {
  return s5_parse_greeting(p, n, o);
}
static int auth_(const uint8_t *p, size_t n, void *o) {
  return s5_parse_auth(p, n, o);
}
static int request_(const uint8_t *p, size_t n, void *o) {
  return s5_parse_request(p, n, o);
}

/* Parses p[0..n) and checks the contract; returns the verdict. */
static int parse_checked(parse_fn fn, const uint8_t *p, size_t n) {
  union {
    s5_greeting g;
    s5_auth a;
    s5_request q;
  } out;
  /* A private copy of exactly n bytes: reads past n are caught. */
  uint8_t *copy = malloc(n ? n : 1);
  check(copy != NULL);
  memcpy(copy, p, n);
  int r = fn(copy, n, &out);
  check(r <= (int)n && r <= S5_MAX_MESSAGE);
  check(r >= S5_ERR_ADDRESS);
  if (r > 0) {
    for (size_t i = 0; i < (size_t)r; i++) {
      int pr = fn(copy, i, &out);
      check(pr == S5_NEED_MORE);
    }
    fn(copy, (size_t)r, &out);
    if (fn == request_) {
      size_t len = strnlen(out.q.host, sizeof(out.q.host));
      check(len > 0 && len < sizeof(out.q.host));
      check(out.q.port != 0 && out.q.cmd == S5_CMD_CONNECT);
    }
    if (fn == auth_) {
      check(out.a.user >= copy && out.a.user + out.a.user_len <= copy + r);
      check(out.a.pass >= copy && out.a.pass + out.a.pass_len <= copy + r);
      check(out.a.user_len >= 1);
    }
  } else if (r < 0 && n < BUF) {
    /* A verdict stays as more bytes come. */
    uint8_t more[BUF];
    memcpy(more, copy, n);
    memset(more + n, 0x41, sizeof(more) - n);
    check(fn(more, sizeof(more), &out) == r);
  }
  free(copy);
  return r;
}

static void check_encoders(const uint8_t *p, size_t n) {
  uint8_t out[S5_MAX_REPLY + 8];
  memset(out, 0xEE, sizeof(out));
  struct sockaddr_in6 a6 = {.sin6_family = AF_INET6};
  struct sockaddr_in a4 = {.sin_family = AF_INET};
  if (n >= 18)
    memcpy(&a6.sin6_addr, p + 2, 16);
  const struct sockaddr *sa = n > 0 && (p[0] & 1)
                                  ? (const struct sockaddr *)&a6
                                  : (const struct sockaddr *)&a4;
  size_t len = s5_encode_reply(out, n > 1 ? p[1] : 0, sa);
  check(len == 10 || len == 22);
  check(out[S5_MAX_REPLY] == 0xEE); /* nothing written past the reply */
  check(s5_encode_method(out, 0xFF) == 2);
  check(s5_encode_auth_status(out, n & 1) == 2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  int password = data[0] & 1;
  size_t chunk = (size_t)(data[0] >> 1) + 1; /* bytes per simulated read */
  const uint8_t *in = data + 1;
  size_t left = size - 1;
  check_encoders(in, left);

  /* The module's loop: a bounded buffer filled chunk by chunk, one
   * message consumed at a time. */
  uint8_t buf[BUF];
  size_t len = 0;
  parse_fn phases[3] = {greeting_, password ? auth_ : request_, request_};
  int n_phases = password ? 3 : 2;
  int phase = 0;
  while (phase < n_phases) {
    size_t room = sizeof(buf) - len;
    size_t take = left < chunk ? left : chunk;
    if (take > room)
      take = room;
    memcpy(buf + len, in, take);
    len += take;
    in += take;
    left -= take;
    int r = parse_checked(phases[phase], buf, len);
    if (r < 0)
      break; /* the module answers or closes */
    if (r == S5_NEED_MORE) {
      check(len < sizeof(buf)); /* a full buffer always decides */
      if (take == 0)
        break; /* the client stopped sending */
      continue;
    }
    memmove(buf, buf + r, len - (size_t)r);
    len -= (size_t)r;
    phase++;
  }
  return 0;
}
