/* SPDX-License-Identifier: BSD-2-Clause */
/* modules/lib/b64.{c,h} (issue 25: the one base64 that auth_local's
 * password hashes and http_proxy's Basic credentials both used a copy
 * of): RFC 4648 section 10's vectors both ways, padded and unpadded;
 * decoding with and without padding, every byte outside the alphabet,
 * lengths no encoding has, and the output bound exactly at and one
 * under; all 256 byte values round-tripped at every length to 64. */
#include <string.h>

#include "lib/b64.h"
#include "tap.h"

static const struct {
  const char *raw, *padded, *unpadded;
} vectors[] = {{"", "", ""},
               {"f", "Zg==", "Zg"},
               {"fo", "Zm8=", "Zm8"},
               {"foo", "Zm9v", "Zm9v"},
               {"foob", "Zm9vYg==", "Zm9vYg"},
               {"fooba", "Zm9vYmE=", "Zm9vYmE"},
               {"foobar", "Zm9vYmFy", "Zm9vYmFy"}};

static void test_vectors(void) {
  for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
    const char *raw = vectors[i].raw;
    size_t n = strlen(raw);
    char out[16], back[16];
    memset(out, 'x', sizeof(out));
    is_int((int)b64_encode(raw, n, out, 1), (int)strlen(vectors[i].padded),
           "encode padded: length");
    is_str(out, vectors[i].padded, "encode padded: RFC 4648 vector");
    is_int((int)B64_LEN_PADDED(n), (int)strlen(vectors[i].padded),
           "B64_LEN_PADDED");
    is_int((int)b64_encode(raw, n, out, 0), (int)strlen(vectors[i].unpadded),
           "encode unpadded: length");
    is_str(out, vectors[i].unpadded, "encode unpadded: vector");
    is_int((int)B64_LEN_UNPADDED(n), (int)strlen(vectors[i].unpadded),
           "B64_LEN_UNPADDED");
    const char *forms[] = {vectors[i].padded, vectors[i].unpadded};
    for (int f = 0; f < 2; f++) {
      memset(back, 0, sizeof(back));
      ok(b64_decode(forms[f], strlen(forms[f]), back, n) == (ssize_t)n &&
             !memcmp(back, raw, n),
         f ? "decode unpadded: exactly the bytes, in a buffer of n"
           : "decode padded: exactly the bytes, in a buffer of n");
      if (n)
        is_int((int)b64_decode(forms[f], strlen(forms[f]), back, n - 1), -1,
               "decode: one byte short of room refused");
    }
  }
}

static void test_refused(void) {
  char out[64];
  static const char *const bad[] = {"Zm9v!", "Zm 9v", "Zm9v\n", "Zm-v",
                                    "Zm_v",  "Z",     "Zm9vY",  "=Zm9",
                                    "Zm=v",  "Zg===="};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    is_int((int)b64_decode(bad[i], strlen(bad[i]), out, sizeof(out)), -1,
           bad[i]);
  /* An embedded NUL is a byte outside the alphabet. */
  is_int((int)b64_decode("Zm\0v", 4, out, sizeof(out)), -1, "a NUL refused");
  int outside = 0;
  for (int c = 0; c < 256; c++) {
    char in[4] = {'Z', 'm', '9', (char)c};
    int alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                (c >= '0' && c <= '9') || c == '+' || c == '/' || c == '=';
    if (!alpha && b64_decode(in, 4, out, sizeof(out)) != -1)
      outside++;
  }
  is_int(outside, 0, "every byte outside the alphabet (and '=') refused");
}

static void test_round_trip(void) {
  unsigned char raw[64], back[64];
  char text[B64_LEN_PADDED(64) + 1];
  int bad = 0;
  for (int seed = 0; seed < 4; seed++)
    for (size_t n = 0; n <= sizeof(raw); n++) {
      for (size_t i = 0; i < n; i++)
        raw[i] = (unsigned char)(i * 37 + (size_t)seed * 101 + n);
      for (int pad = 0; pad < 2; pad++) {
        size_t len = b64_encode(raw, n, text, pad);
        if (len != (pad ? B64_LEN_PADDED(n) : B64_LEN_UNPADDED(n)) ||
            text[len] != '\0' || b64_decode(text, len, back, n) != (ssize_t)n ||
            memcmp(back, raw, n))
          bad++;
      }
    }
  is_int(bad, 0, "lengths 0..64, padded and not: decode(encode(x)) == x");
}

int main(void) {
  plan_lazy();
  test_vectors();
  test_refused();
  test_round_trip();
  return done_testing();
}
