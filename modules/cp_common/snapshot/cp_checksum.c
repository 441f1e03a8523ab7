/* SPDX-License-Identifier: BSD-2-Clause */
/* The canonical encoding and SHA-256 of cp_checksum.h; the byte layout is
 * docs/api/controlplane.md, "Checksum" (keep the two in step: the Python
 * vector test reads the document's rules, not this file). */
#include "cp_checksum.h"
#include "cp_snapshot_time.h"
#include "cp_sort.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

/* The domain tag, the first field: a checksum of anything else never
 * equals a snapshot's. */
#define CP_CHECKSUM_TAG "controlplane.v1.WorkerSnapshot/checksum/1"

/* Bytes are gathered in a small buffer and fed to the digest in blocks. */
typedef struct sink {
  EVP_MD_CTX *md;
  size_t n;
  int failed;
  unsigned char buf[2048];
} sink;

static void flush(sink *k) {
  if (k->n && EVP_DigestUpdate(k->md, k->buf, k->n) != 1)
    k->failed = 1;
  k->n = 0;
}

/* The general case: n bytes across as many flushes as they need. */
static void put_slow(sink *k, const unsigned char *b, size_t n) {
  while (n) {
    if (k->n == sizeof k->buf)
      flush(k);
    size_t m = sizeof k->buf - k->n;
    if (m > n)
      m = n;
    memcpy(k->buf + k->n, b, m);
    k->n += m;
    b += m;
    n -= m;
  }
}

/* Inline, as the fast path: a snapshot's fields are a few bytes each,
 * and the calls around them cost more than the digest (t/bench/cpsnap:
 * the sink was 60% of a checksum, SHA-256 26%). */
static inline void put(sink *k, const void *p, size_t n) {
  if (n <= sizeof k->buf - k->n) {
    memcpy(k->buf + k->n, p, n);
    k->n += n;
    return;
  }
  put_slow(k, p, n);
}

static inline void put_u64(sink *k, uint64_t v) {
  unsigned char b[8];
  for (int i = 7; i >= 0; i--, v >>= 8)
    b[i] = (unsigned char)(v & 0xff);
  put(k, b, 8);
}

static inline void put_u32(sink *k, uint32_t v) {
  unsigned char b[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
                        (unsigned char)(v >> 8), (unsigned char)v};
  put(k, b, 4);
}

static inline void put_u8(sink *k, unsigned v) {
  unsigned char b = (unsigned char)v;
  put(k, &b, 1);
}

/* Two's complement, as the unsigned value of the same width. */
static inline void put_i64(sink *k, int64_t v) { put_u64(k, (uint64_t)v); }
static inline void put_i32(sink *k, int32_t v) { put_u32(k, (uint32_t)v); }

static void put_str(sink *k, const char *s) {
  size_t n = s ? strlen(s) : 0;
  /* Strings are bounded far below 4 GiB by the checker; a longer one would
   * need a wider prefix, so it is cut at the prefix's range. */
  if (n > UINT32_MAX)
    n = UINT32_MAX;
  put_u32(k, (uint32_t)n);
  if (n) /* s may be NULL, and memcpy's source never */
    put(k, s, n);
}

static void put_ts(sink *k, const Google__Protobuf__Timestamp *t) {
  if (!t) {
    put_u8(k, 0);
    return;
  }
  put_u8(k, 1);
  put_i64(k, t->seconds);
  put_i32(k, t->nanos);
}

static void put_dur(sink *k, const Google__Protobuf__Duration *d) {
  if (!d) {
    put_u8(k, 0);
    return;
  }
  put_u8(k, 1);
  put_i64(k, d->seconds);
  put_i32(k, d->nanos);
}

static void put_rule(sink *k, const Controlplane__V1__RoutingRule *r) {
  put_str(k, r->rule_id);
  put_str(k, r->host_pattern);
  put_u32(k, r->port_min);
  put_u32(k, r->port_max);
  put_str(k, r->client_identity);
  put_str(k, r->listener);
  put_str(k, r->target_group);
  put_str(k, r->strategy);
  put_i32(k, (int32_t)r->on_unavailable);
  put_dur(k, r->wait_timeout);
  put_str(k, r->sticky_key);
}

/* The earlier of a proxy's own time (NULL: none) and the shared lease's
 * (NULL: no shared lease form): what the proxy ends at. */
static const Google__Protobuf__Timestamp *
earlier(const Google__Protobuf__Timestamp *own,
        const Google__Protobuf__Timestamp *shared) {
  if (!shared)
    return own;
  if (!own || cp_ts_cmp(shared, own) < 0)
    return shared;
  return own;
}

/* A proxy as the record the worker ends up with: with the shared lease
 * form (s_exp and s_usable set), its times are the earlier of its own and
 * the lease's, so that both forms of one snapshot have one checksum. */
static void put_proxy_at(sink *k, const Controlplane__V1__OwnedProxy *p,
                         const Google__Protobuf__Timestamp *s_exp,
                         const Google__Protobuf__Timestamp *s_usable) {
  put_str(k, p->proxy_id);
  put_i32(k, (int32_t)p->protocol);
  put_str(k, p->host);
  put_u32(k, p->port);
  put_u32(k, (uint32_t)p->n_groups);
  for (size_t i = 0; i < p->n_groups; i++)
    put_str(k, p->groups[i]);
  put_str(k, p->zone);
  put_u32(k, p->capacity);
  put_u32(k, p->weight);
  put_ts(k, earlier(p->expires_at, s_exp));
  put_ts(k, earlier(p->usable_until, s_usable));
  put_str(k, p->secret_ref);
  put_u64(k, p->credential_version);
  put_u8(k, p->draining ? 1 : 0);
  /* health (CP-6-7) only when set: a snapshot without it keeps the
   * checksum it had before the field existed. */
  if (p->health != CONTROLPLANE__V1__PROXY_HEALTH__PROXY_HEALTH_UNSPECIFIED)
    put_i32(k, (int32_t)p->health);
}

static void put_proxy(sink *k, const Controlplane__V1__OwnedProxy *p) {
  put_proxy_at(k, p, NULL, NULL);
}

static void put_cred(sink *k, const Controlplane__V1__Credential *c) {
  put_str(k, c->secret_ref);
  put_u64(k, c->credential_version);
  put_str(k, c->username);
  put_str(k, c->password);
}

static int sink_open(sink *k) {
  k->n = 0;
  k->failed = 0;
  k->md = EVP_MD_CTX_new();
  if (!k->md || EVP_DigestInit_ex(k->md, EVP_sha256(), NULL) != 1)
    k->failed = 1;
  return k->failed ? -1 : 0;
}

static int sink_close(sink *k, uint8_t out[CP_CHECKSUM_LEN]) {
  unsigned len = 0;
  if (!k->failed)
    flush(k);
  if (k->failed || EVP_DigestFinal_ex(k->md, out, &len) != 1 ||
      len != CP_CHECKSUM_LEN) {
    memset(out, 0, CP_CHECKSUM_LEN);
    k->failed = 1;
  }
  EVP_MD_CTX_free(k->md);
  /* The buffer held credential material. */
  OPENSSL_cleanse(k->buf, sizeof k->buf);
  return k->failed ? -1 : 0;
}

int cp_id_cmp(const char *a, const char *b) {
  return strcmp(a ? a : "", b ? b : ""); /* strcmp compares as unsigned */
}

int cp_proxy_ptr_cmp(const void *a, const void *b) {
  const Controlplane__V1__OwnedProxy *x = *(const void *const *)a;
  const Controlplane__V1__OwnedProxy *y = *(const void *const *)b;
  return cp_id_cmp(x->proxy_id, y->proxy_id);
}

int cp_credential_ptr_cmp(const void *a, const void *b) {
  const Controlplane__V1__Credential *x = *(const void *const *)a;
  const Controlplane__V1__Credential *y = *(const void *const *)b;
  int c = cp_id_cmp(x->secret_ref, y->secret_ref);
  if (c)
    return c;
  return x->credential_version < y->credential_version   ? -1
         : x->credential_version > y->credential_version ? 1
                                                          : 0;
}

/* v in cmp's order: v itself when it already is (what the builder
 * emits), else a sorted copy in *copy (freed by the caller); NULL for an
 * empty one. */
static void *const *in_order(void *const *v, size_t n,
                             int (*cmp)(const void *, const void *),
                             void ***copy, int *err) {
  *copy = NULL;
  if (!n)
    return NULL;
  if (cp_is_sorted(v, n, sizeof *v, cmp))
    return v;
  void **s = malloc(n * sizeof *s);
  if (!s) {
    *err = 1;
    return NULL;
  }
  memcpy(s, v, n * sizeof *s);
  qsort(s, n, sizeof *s, cmp);
  *copy = s;
  return s;
}

int cp_checksum_snapshot(const Controlplane__V1__WorkerSnapshot *s,
                         uint8_t out[CP_CHECKSUM_LEN]) {
  int err = 0;
  void **px_copy, **cr_copy;
  void *const *px = in_order((void *const *)s->proxies, s->n_proxies,
                             cp_proxy_ptr_cmp, &px_copy, &err);
  void *const *cr = in_order((void *const *)s->credentials, s->n_credentials,
                             cp_credential_ptr_cmp, &cr_copy, &err);
  sink k;
  if (err || sink_open(&k) != 0) {
    free(px_copy);
    free(cr_copy);
    if (!err)
      EVP_MD_CTX_free(k.md);
    memset(out, 0, CP_CHECKSUM_LEN);
    return -1;
  }
  put_str(&k, CP_CHECKSUM_TAG);
  put_u64(&k, s->version);
  put_u64(&k, s->ownership_epoch);
  put_ts(&k, s->valid_until);
  put_u32(&k, (uint32_t)s->n_routing);
  for (size_t i = 0; i < s->n_routing; i++)
    put_rule(&k, s->routing[i]);
  put_u32(&k, (uint32_t)s->n_proxies);
  /* Both of the shared lease's times or neither (the checker refuses one
   * alone). */
  int shared = s->lease_expires_at && s->lease_usable_until;
  for (size_t i = 0; i < s->n_proxies; i++)
    put_proxy_at(&k, px[i], shared ? s->lease_expires_at : NULL,
                 shared ? s->lease_usable_until : NULL);
  put_u32(&k, (uint32_t)s->n_credentials);
  for (size_t i = 0; i < s->n_credentials; i++)
    put_cred(&k, cr[i]);
  free(px_copy);
  free(cr_copy);
  return sink_close(&k, out);
}

int cp_checksum_equal(const ProtobufCBinaryData *b,
                      const uint8_t sum[CP_CHECKSUM_LEN]) {
  if (!b || b->len != CP_CHECKSUM_LEN || !b->data)
    return 0;
  unsigned char d = 0; /* not secret, but no early exit costs nothing */
  for (size_t i = 0; i < CP_CHECKSUM_LEN; i++)
    d |= (unsigned char)(b->data[i] ^ sum[i]);
  return d == 0;
}

void cp_checksum_proxy(const Controlplane__V1__OwnedProxy *p,
                       uint8_t out[CP_CHECKSUM_LEN]) {
  sink k;
  if (sink_open(&k) == 0)
    put_proxy(&k, p);
  sink_close(&k, out);
}

void cp_checksum_rule(const Controlplane__V1__RoutingRule *r,
                      uint8_t out[CP_CHECKSUM_LEN]) {
  sink k;
  if (sink_open(&k) == 0)
    put_rule(&k, r);
  sink_close(&k, out);
}

void cp_checksum_credential(const Controlplane__V1__Credential *c,
                            uint8_t out[CP_CHECKSUM_LEN]) {
  sink k;
  if (sink_open(&k) == 0)
    put_cred(&k, c);
  sink_close(&k, out);
}
