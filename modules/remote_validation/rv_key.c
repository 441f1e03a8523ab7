/* SPDX-License-Identifier: BSD-2-Clause */
/* remote_validation: the HMAC cache key (rv_key.h). */
#include "rv_key.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <proxyhost/abi.h>

int rv_keyer_init(rv_keyer *k) {
  size_t got = 0;
  for (int tries = 0; got < sizeof(k->secret) && tries < 16; tries++) {
    ssize_t n = getrandom(k->secret + got, sizeof(k->secret) - got, 0);
    if (n > 0)
      got += (size_t)n;
    else if (n < 0 && errno != EINTR)
      break;
  }
  return got == sizeof(k->secret) ? PH_OK : PH_EINVAL;
}

void rv_keyer_wipe(rv_keyer *k) { OPENSSL_cleanse(k->secret, sizeof(k->secret)); }

/* Tags keep fields apart even where lengths would line up. */
enum { TAG_PROTOCOL = 1, TAG_AGENT, TAG_HOST, TAG_PORT, TAG_USER, TAG_PASS };

/* The absent agent is a length no present one can have. */
#define LEN_NULL 0xFFFFFFFFu

static size_t put_field(unsigned char *p, int tag, const void *v,
                        size_t len, int null) {
  uint32_t l = null ? LEN_NULL : (uint32_t)len;
  p[0] = (unsigned char)tag;
  p[1] = (unsigned char)(l >> 24);
  p[2] = (unsigned char)(l >> 16);
  p[3] = (unsigned char)(l >> 8);
  p[4] = (unsigned char)l;
  if (!null && len)
    memcpy(p + 5, v, len);
  return 5 + (null ? 0 : len);
}

int rv_key_digest(const rv_keyer *k, const ph_validation_request *rq,
                  unsigned char out[RV_KEY_LEN]) {
  /* six fields of at most 255 bytes and a 5-byte prefix each */
  unsigned char buf[6 * (5 + 255)];
  size_t hl = rq->host ? strlen(rq->host) : 0;
  size_t al = rq->agent ? strlen(rq->agent) : 0;
  if (hl < 1 || hl > 255 || (rq->agent && (al < 1 || al > 255)) ||
      rq->username_len > 255 || rq->password_len > 255 ||
      (rq->username_len && !rq->username) ||
      (rq->password_len && !rq->password))
    return PH_EINVAL;
  unsigned char proto = rq->protocol;
  unsigned char port[2] = {(unsigned char)(rq->port >> 8),
                           (unsigned char)rq->port};
  size_t n = 0;
  n += put_field(buf + n, TAG_PROTOCOL, &proto, 1, 0);
  n += put_field(buf + n, TAG_AGENT, rq->agent, al, rq->agent == NULL);
  n += put_field(buf + n, TAG_HOST, rq->host, hl, 0);
  n += put_field(buf + n, TAG_PORT, port, 2, 0);
  n += put_field(buf + n, TAG_USER, rq->username, rq->username_len, 0);
  n += put_field(buf + n, TAG_PASS, rq->password, rq->password_len, 0);
  unsigned int ol = RV_KEY_LEN;
  unsigned char *r = HMAC(EVP_sha256(), k->secret, (int)sizeof(k->secret),
                          buf, n, out, &ol);
  OPENSSL_cleanse(buf, sizeof(buf));
  return r && ol == RV_KEY_LEN ? PH_OK : PH_EINVAL;
}
