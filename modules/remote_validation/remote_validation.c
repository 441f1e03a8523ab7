/* SPDX-License-Identifier: BSD-2-Clause */
/* remote_validation: the "validation" service (<proxyhost/validation.h>)
 * over an HTTP(S) endpoint, the TunnelMesh client's optional auth_url.
 *
 * One validate call goes:
 *   endpoint empty          -> PH_VALIDATION_BYPASS (no lookup, no
 *                              allocation: TM-P1-35)
 *   key in the cache        -> its verdict, on a later loop iteration
 *   a request for the key   -> waits for it (singleflight, TM-P1-36)
 *     is in flight
 *   else                    -> one POST (rv_http.c), max_inflight at once;
 *                              beyond: UNAVAILABLE, never queued
 * The answer is cached by outcome: allow positive_ttl, deny negative_ttl,
 * error (any other status, a timeout, no connection) error_ttl, at most
 * 1 s (TM-P1-41). Keys are HMAC digests (rv_key.h); the verdict cache is
 * lib/kcache (insertion order, TM-P1-43: a component of its own), the
 * flights and the next-turn answers lib/sflight. A reload that changes endpoint, auth_token_file or ca_file
 * clears the cache and retires the HTTP client, whose connections close
 * when its last request ended; requests still in flight then answer their
 * callers but are not cached (TM-P1-40). Destroy closes everything
 * (TM-P1-44).
 *
 * Nothing identifying leaves the module: no username, password, target or
 * response body in a log line, a metric label or an error (TM-P1-39). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/crypto.h>

#include <proxyhost/module.h>
#include <proxyhost/validation.h>

#include "lib/idtab.h"
#include "lib/ilist.h"
#include "lib/kcache.h"
#include "lib/metric_table.h"
#include "lib/sflight.h"
#include "rv_http.h"
#include "rv_key.h"

#define RV_TOKEN_MAX 4096
#define RV_ERROR_TTL_MAX 1000 /* TM-P1-41: errors cached at most 1 s */

static const ph_api *api;

/* The key table, generated from remote_validation.ini.sample (its "; type:"
 * lines) by tools/gen_conf_keys.awk into remote_validation_keys.c.
 * error_ttl's maximum there is RV_ERROR_TTL_MAX, to which the TTL is cut
 * again below (TM-P1-41), whatever the sample allows. */
extern const ph_conf_key rv_keys[];

/* ---- state ----------------------------------------------------------- */

typedef struct rv rv;

/* One request to the endpoint: the lookup of a lib/sflight flight (its
 * key, its generation and the callers waiting for it are there). Cached
 * only while its generation is the current one. */
typedef struct flight {
  rv *r;
  sf_flight *f;
  char *body; /* the JSON, with the password: wiped at the end */
  size_t body_len, body_cap;
} flight;

enum { C_HIT = 0, C_MISS, C_SHARED, C_BYPASS, C_N };
enum { Q_ALLOW = 0, Q_DENY, Q_ERROR, Q_N };
/* The metrics' label values, in the enums' order. */
static const char *const caches[] = {"hit", "miss", "shared", "bypass", NULL};
static const char *const results[] = {"allow", "deny", "error", NULL};

struct rv {
  ph_ctx *ctx;
  rv_keyer keyer;
  kcache *cache; /* digest -> verdict, insertion order */
  rv_http *http; /* NULL: endpoint empty */
  uint64_t generation;
  /* configuration */
  int on;
  int64_t ttl[Q_N];
  int64_t timeout_ms, max_entries, max_inflight, max_pending;
  char *endpoint, *ca_file, *token_file;
  unsigned char token_digest[RV_KEY_LEN]; /* of the token in use */
  sflight *sf; /* the calls: on a flight, or answered on the next turn */
  /* HTTP clients retired by a reload, until their last request ended */
  struct old_http {
    rv_http *h;
    struct old_http *next;
  } *old;
  int curl_inited;
  /* metrics */
  ph_series *m_cache[C_N];
  ph_series *m_req[Q_N];
  ph_series *m_overflow, *m_inflight, *m_entries;
};

/* ---- configuration --------------------------------------------------- */

static int is_loopback_host(const char *h) {
  if (strcmp(h, "localhost") == 0 || strcmp(h, "::1") == 0 ||
      strcmp(h, "[::1]") == 0)
    return 1;
  return strncmp(h, "127.", 4) == 0 && strspn(h, "0123456789.") == strlen(h);
}

/* The endpoint is a URL libcurl parses, http or https, without user
 * information (secrets go in a header, never in a URL), and http only to
 * loopback unless allowed. */
static int check_endpoint(const char *url, int plain_ok, char *why,
                          size_t whylen) {
  CURLU *u = curl_url();
  if (!u)
    return PH_ENOMEM;
  char *scheme = NULL, *host = NULL, *user = NULL;
  int rc = PH_EINVAL;
  if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
      curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
      curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK)
    snprintf(why, whylen, "not a URL (http://HOST[:PORT]/PATH or https://...)");
  else if (curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK)
    snprintf(why, whylen,
             "the URL carries user information: put a token in "
             "auth_token_file instead");
  else if (strcmp(scheme, "https") != 0 && strcmp(scheme, "http") != 0)
    snprintf(why, whylen, "the scheme must be https (or http)");
  else if (strcmp(scheme, "http") == 0 && !plain_ok &&
           !is_loopback_host(host))
    snprintf(why, whylen,
             "http to an address that is not loopback sends credentials in "
             "clear: use https, or set allow_plain_http = true");
  else
    rc = PH_OK;
  curl_free(scheme);
  curl_free(host);
  curl_free(user);
  curl_url_cleanup(u);
  return rc;
}

/* Reads the token file's first line into a new string (wiped by the
 * caller with free_token). */
static char *read_token(const char *path, char *why, size_t whylen) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(why, whylen, "cannot be read");
    return NULL;
  }
  char *buf = malloc(RV_TOKEN_MAX + 2);
  size_t n = 0;
  while (buf && n < RV_TOKEN_MAX + 1) {
    ssize_t k = read(fd, buf + n, RV_TOKEN_MAX + 1 - n);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      break;
    n += (size_t)k;
  }
  close(fd);
  if (!buf) {
    snprintf(why, whylen, "out of memory");
    return NULL;
  }
  buf[n] = '\0';
  size_t line = strcspn(buf, "\r\n");
  int bad = line == 0 || line > RV_TOKEN_MAX;
  for (size_t i = 0; i < line && !bad; i++)
    bad = (unsigned char)buf[i] < 0x21 || (unsigned char)buf[i] > 0x7e;
  if (bad) {
    OPENSSL_cleanse(buf, RV_TOKEN_MAX + 2);
    free(buf);
    snprintf(why, whylen,
             "the first line must be a token of 1 to %d visible ASCII "
             "characters",
             RV_TOKEN_MAX);
    return NULL;
  }
  OPENSSL_cleanse(buf + line, RV_TOKEN_MAX + 2 - line);
  return buf;
}

static void free_token(char *t) {
  if (t) {
    OPENSSL_cleanse(t, strlen(t));
    free(t);
  }
}

static int rv_check(ph_ctx *ctx, const ph_api *a, const char **key,
                    char *why, size_t whylen) {
  const char *ep = a->conf_str(ctx, "endpoint");
  if (!ep || !*ep)
    return PH_OK;
  int rc = check_endpoint(ep, (int)a->conf_int(ctx, "allow_plain_http"),
                          why, whylen);
  if (rc != PH_OK) {
    *key = "endpoint";
    return rc;
  }
  const char *tf = a->conf_str(ctx, "auth_token_file");
  if (tf && *tf) {
    char *t = read_token(tf, why, whylen);
    if (!t) {
      *key = "auth_token_file";
      return PH_EINVAL;
    }
    free_token(t);
  }
  const char *ca = a->conf_str(ctx, "ca_file");
  if (ca && *ca && access(ca, R_OK) != 0) {
    *key = "ca_file";
    snprintf(why, whylen, "cannot be read");
    return PH_EINVAL;
  }
  return PH_OK;
}

/* ---- delivering ------------------------------------------------------ */

/* sflight's delivery. The callback may call validate and cancel. */
static void call(void *owner, sf_fn cb, void *arg, const void *answer) {
  (void)owner;
  ((ph_validation_cb)cb)(arg, *(const int *)answer);
}

/* Later, never inside validate: on the next loop turn, no clock tick. */
static int64_t later(rv *r, int verdict, ph_validation_cb cb, void *arg) {
  return sf_later(r->sf, &verdict, 1, (sf_fn)cb, arg);
}

/* ---- flights --------------------------------------------------------- */

static void flight_free(flight *f) {
  if (f->body) {
    OPENSSL_cleanse(f->body, f->body_cap);
    free(f->body);
  }
  free(f);
}

/* The digests are uniformly random: their first bytes are the hash. */
static uint64_t key_hash(const unsigned char *key) {
  uint64_t h;
  memcpy(&h, key, sizeof(h));
  return h;
}

/* An error is no answer: a denial too, told apart for the stage metric. */
static const int verdict_of[Q_N] = {PH_VALIDATION_ALLOW, PH_VALIDATION_DENY,
                                    PH_VALIDATION_UNAVAILABLE};

/* rv_http's answer: cache it (if still current), then tell everyone. */
static void flight_done(void *arg, int outcome) {
  flight *f = arg;
  rv *r = f->r;
  uint64_t gen = sf_flight_gen(f->f);
  if (outcome < 0 || outcome >= Q_N)
    outcome = Q_ERROR;
  api->inc(r->m_req[outcome], 1);
  /* Only the outcome and the count: never who, what or where. */
  if (api->log_enabled(r->ctx, PH_LOG_DEBUG)) {
    size_t waiting = sf_flight_waiters(f->f);
    PH_LOG(api, r->ctx, PH_LOG_DEBUG, "remote validation answer",
           PH_STR("result", results[outcome]), PH_UINT("callers", waiting),
           PH_STR("current", gen == r->generation ? "yes" : "no"));
  }
  if (outcome == Q_ERROR)
    PH_LOG_RL(api, r->ctx, PH_LOG_WARN,
              "remote validation: the endpoint gave no usable answer "
              "(a deny, cached briefly)");
  api->gauge_set(r->m_inflight, (double)(sf_flights(r->sf) - 1));
  OPENSSL_cleanse(f->body, f->body_cap);
  if (gen == r->generation && r->cache) {
    size_t len;
    const unsigned char *key = sf_flight_key(f->f, &len);
    int64_t now = api->now_ms(r->ctx);
    kcache_put(r->cache, key, len, key_hash(key), &verdict_of[outcome],
               now + r->ttl[outcome], now);
    api->gauge_set(r->m_entries, (double)kcache_count(r->cache));
  }
  /* A callback may cancel a waiter still on the flight or start new
   * validations (other flights). */
  sf_complete(r->sf, f->f, &verdict_of[outcome]);
  flight_free(f);
}

/* ---- the JSON body ---------------------------------------------------- */

static int put(flight *f, const char *p, size_t n) {
  if (f->body_len + n > f->body_cap)
    return -1;
  memcpy(f->body + f->body_len, p, n);
  f->body_len += n;
  return 0;
}

static int put_str(flight *f, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  if (put(f, "\"", 1) < 0)
    return -1;
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    char esc[6] = {'\\', 'u', '0', '0', hex[ch >> 4], hex[ch & 15]};
    int r;
    if (ch == '"' || ch == '\\') {
      char two[2] = {'\\', (char)ch};
      r = put(f, two, 2);
    } else if (ch < 0x20 || ch == 0x7f) {
      r = put(f, esc, 6);
    } else {
      r = put(f, (const char *)&ch, 1);
    }
    if (r < 0)
      return -1;
  }
  return put(f, "\"", 1);
}

/* {"protocol":"tcp","agent":null,"host":"...","port":443,
 *  "username":"...","password":"..."} */
static int build_body(flight *f, const ph_validation_request *q) {
  /* every byte of the four strings may take 6 */
  f->body_cap = 128 + 6 * (255 * 4);
  f->body = malloc(f->body_cap);
  if (!f->body)
    return -1;
  char port[16];
  snprintf(port, sizeof(port), "%u", (unsigned)q->port);
  int bad = put(f, "{\"protocol\":\"tcp\",\"agent\":", 26) < 0;
  if (!bad)
    bad = q->agent ? put_str(f, q->agent, strlen(q->agent)) < 0
                   : put(f, "null", 4) < 0;
  bad = bad || put(f, ",\"host\":", 8) < 0 ||
        put_str(f, q->host, strlen(q->host)) < 0 ||
        put(f, ",\"port\":", 8) < 0 || put(f, port, strlen(port)) < 0 ||
        put(f, ",\"username\":", 12) < 0 ||
        put_str(f, q->username ? q->username : "", q->username_len) < 0 ||
        put(f, ",\"password\":", 12) < 0 ||
        put_str(f, q->password ? q->password : "", q->password_len) < 0 ||
        put(f, "}", 1) < 0;
  return bad ? -1 : 0;
}

/* ---- the service ------------------------------------------------------ */

static int request_ok(const ph_validation_request *q) {
  if (!q || q->size < offsetof(ph_validation_request, reserved) ||
      q->protocol != PH_PROTO_TCP || q->port == 0 || !q->host)
    return 0;
  size_t hl = strnlen(q->host, 256);
  if (hl < 1 || hl > 255)
    return 0;
  if (q->agent) {
    size_t al = strnlen(q->agent, 256);
    if (al < 1 || al > 255)
      return 0;
  }
  return q->username_len <= 255 && q->password_len <= 255 &&
         (q->username || !q->username_len) &&
         (q->password || !q->password_len);
}

static int64_t rv_validate(void *self, const ph_validation_request *q,
                           ph_validation_cb cb, void *arg) {
  rv *r = self;
  if (!r->on) {
    api->inc(r->m_cache[C_BYPASS], 1);
    return PH_VALIDATION_BYPASS; /* nothing asked, nothing allocated */
  }
  if (!cb || !request_ok(q))
    return PH_EINVAL;
  if (sf_waiters(r->sf) >= r->max_pending)
    return PH_EFULL;
  unsigned char key[RV_KEY_LEN];
  if (rv_key_digest(&r->keyer, q, key) != PH_OK)
    return PH_EINVAL;
  uint64_t hash = key_hash(key);
  int v;
  if (kcache_get(r->cache, key, RV_KEY_LEN, hash, api->now_ms(r->ctx), &v,
                 NULL)) {
    api->inc(r->m_cache[C_HIT], 1);
    return later(r, v, cb, arg);
  }
  sf_flight *sf = sf_find(r->sf, key, RV_KEY_LEN, hash, r->generation);
  if (sf) {
    api->inc(r->m_cache[C_SHARED], 1);
    return sf_join(r->sf, sf, (sf_fn)cb, arg);
  }
  api->inc(r->m_cache[C_MISS], 1);
  if (sf_flights(r->sf) >= r->max_inflight || !r->http) {
    /* Never queued without bound: unavailable, and not cached, so the
     * next call asks again. */
    api->inc(r->m_overflow, 1);
    return later(r, PH_VALIDATION_UNAVAILABLE, cb, arg);
  }
  flight *f = calloc(1, sizeof(*f));
  if (!f || build_body(f, q) < 0) {
    if (f)
      flight_free(f);
    return later(r, PH_VALIDATION_UNAVAILABLE, cb, arg);
  }
  f->r = r;
  int64_t id = sf_start(r->sf, key, RV_KEY_LEN, hash, r->generation, 1,
                        (sf_fn)cb, arg, &f->f);
  if (id < 0) {
    flight_free(f);
    return id;
  }
  sf_flight_set_data(f->f, f);
  int rc = rv_http_post(r->http, f->body, f->body_len, flight_done, f);
  if (rc != PH_OK) {
    api->inc(r->m_overflow, 1);
    int verdict = PH_VALIDATION_UNAVAILABLE;
    sf_hold(r->sf); /* on the next turn, never inside validate */
    sf_complete(r->sf, f->f, &verdict);
    sf_unhold(r->sf);
    flight_free(f);
    return id;
  }
  api->gauge_set(r->m_inflight, (double)sf_flights(r->sf));
  return id;
}

/* A flight without waiters goes on: its answer is cached for others. */
static int rv_cancel(void *self, int64_t id) {
  rv *r = self;
  return sf_cancel(r->sf, id);
}

static const ph_validation_v1 rv_vt = {
    .validate = rv_validate,
    .cancel = rv_cancel,
};

/* ---- lifecycle -------------------------------------------------------- */

static int same_str(const char *a, const char *b) {
  return strcmp(a ? a : "", b ? b : "") == 0;
}

static char *dup_or_null(const char *s) { return s && *s ? strdup(s) : NULL; }

/* rv_http_retire's notice: a retired client freed itself. */
static void old_gone(void *arg, rv_http *h) {
  rv *r = arg;
  for (struct old_http **pp = &r->old; *pp; pp = &(*pp)->next)
    if ((*pp)->h == h) {
      struct old_http *o = *pp;
      *pp = o->next;
      free(o);
      return;
    }
}

/* Its connections close once its requests ended (at once when idle). */
static void retire_http(rv *r, rv_http *h) {
  if (!h)
    return;
  struct old_http *o = malloc(sizeof(*o));
  if (!o) {
    rv_http_retire(h, NULL, NULL); /* untracked, still frees itself */
    return;
  }
  o->h = h;
  o->next = r->old;
  r->old = o;
  rv_http_retire(h, old_gone, r);
}

/* A new HTTP client for the configuration in force and token (NULL:
 * none); NULL with *err set when it cannot be made. */
static rv_http *make_http(rv *r, const char *token, int *err) {
  *err = 0;
  const char *ep = api->conf_str(r->ctx, "endpoint");
  if (!ep || !*ep)
    return NULL;
  rv_http_conf hc = {.endpoint = ep,
                     .token = token,
                     .ca_file = api->conf_str(r->ctx, "ca_file"),
                     .timeout_ms = api->conf_int(r->ctx, "timeout"),
                     .max_inflight =
                         (size_t)api->conf_int(r->ctx, "max_inflight")};
  rv_http *h = rv_http_new(api, r->ctx, &hc);
  if (!h)
    *err = PH_ENOMEM;
  return h;
}

/* The token file read now, and its digest (all zero without one): a
 * token rotated in place is a change too. PH_OK or PH_EINVAL (logged). */
static int load_token(rv *r, char **token, unsigned char digest[RV_KEY_LEN]) {
  *token = NULL;
  memset(digest, 0, RV_KEY_LEN);
  const char *tf = api->conf_str(r->ctx, "auth_token_file");
  if (!tf || !*tf)
    return PH_OK;
  char why[160] = "";
  if (!(*token = read_token(tf, why, sizeof(why)))) {
    PH_LOG(api, r->ctx, PH_LOG_ERROR, "remote_validation.auth_token_file",
           PH_STR("reason", why));
    return PH_EINVAL;
  }
  ph_validation_request q = {.size = sizeof(q),
                             .host = "token",
                             .username = *token,
                             .username_len = strlen(*token)};
  if (q.username_len > 255) { /* the digest takes 255 bytes a field */
    q.password = *token + 255;
    q.password_len = q.username_len - 255 > 255 ? 255 : q.username_len - 255;
    q.username_len = 255;
  }
  rv_key_digest(&r->keyer, &q, digest);
  return PH_OK;
}

/* Reads the configuration in force. The first time, and whenever the
 * endpoint, the token file or the CA file changed: a new cache and a new
 * HTTP client, the old one retired. */
static int apply_config(rv *r, int first) {
  const char *ep = api->conf_str(r->ctx, "endpoint");
  const char *ca = api->conf_str(r->ctx, "ca_file");
  const char *tf = api->conf_str(r->ctx, "auth_token_file");
  int64_t max_entries = api->conf_int(r->ctx, "max_entries");
  int64_t timeout = api->conf_int(r->ctx, "timeout");
  int64_t max_inflight = api->conf_int(r->ctx, "max_inflight");
  char *token;
  unsigned char token_digest[RV_KEY_LEN];
  int rc = load_token(r, &token, token_digest);
  if (rc != PH_OK)
    return rc;
  int changed = first || !same_str(ep, r->endpoint) ||
                !same_str(ca, r->ca_file) || !same_str(tf, r->token_file) ||
                memcmp(token_digest, r->token_digest, RV_KEY_LEN) != 0;
  /* The client carries the timeout and the pool's size too. */
  int new_http = changed || timeout != r->timeout_ms ||
                 max_inflight != r->max_inflight;
  int new_cache = changed || max_entries != r->max_entries;
  rv_http *h = NULL;
  kcache *cache = NULL;
  int err = 0;
  if (new_http)
    h = make_http(r, token, &err);
  free_token(token);
  if (err)
    return err;
  kcache_conf kc = {.max_entries = (size_t)max_entries,
                    .value_size = sizeof(int),
                    .policy = KCACHE_FIFO};
  if (new_cache && !(cache = kcache_new(&kc))) {
    rv_http_free(h);
    return PH_ENOMEM;
  }
  memcpy(r->token_digest, token_digest, RV_KEY_LEN);
  r->ttl[Q_ALLOW] = api->conf_int(r->ctx, "positive_ttl");
  r->ttl[Q_DENY] = api->conf_int(r->ctx, "negative_ttl");
  r->ttl[Q_ERROR] = api->conf_int(r->ctx, "error_ttl");
  if (r->ttl[Q_ERROR] > RV_ERROR_TTL_MAX)
    r->ttl[Q_ERROR] = RV_ERROR_TTL_MAX;
  r->max_pending = api->conf_int(r->ctx, "max_pending");
  sf_set_limits(r->sf, max_inflight, r->max_pending, r->max_pending);
  r->timeout_ms = timeout;
  r->max_inflight = max_inflight;
  r->max_entries = max_entries;
  if (new_http) {
    retire_http(r, r->http);
    r->http = h;
  }
  if (new_cache) {
    kcache_free(r->cache);
    r->cache = cache;
    api->gauge_set(r->m_entries, 0);
  }
  if (changed) {
    r->generation++; /* answers from before are not cached */
    free(r->endpoint);
    free(r->ca_file);
    free(r->token_file);
    r->endpoint = dup_or_null(ep);
    r->ca_file = dup_or_null(ca);
    r->token_file = dup_or_null(tf);
    if (!first)
      PH_LOG(api, r->ctx, PH_LOG_INFO,
             "remote validation: endpoint or credentials changed; cache "
             "cleared, old connections closing",
             PH_STR("enabled", ep && *ep ? "yes" : "no"));
  }
  r->on = ep && *ep;
  return PH_OK;
}

static const ph_label_def cache_label[] = {{"cache", caches}};
static const ph_label_def result_label[] = {{"result", results}};

/* In registration order (the order /metrics shows them). */
static const ph_metric_table rv_metrics[] = {
    PH_METRIC("tunnelmesh_remote_validation_cache_requests_total",
              PH_METRIC_COUNTER,
              "Remote validation calls by how the cache answered",
              PH_METRIC_LABELS(cache_label), PH_METRIC_NO_BUCKETS, rv, m_cache),
    PH_METRIC("proxyhost_remote_validation_requests_total", PH_METRIC_COUNTER,
              "Requests to the remote validation endpoint by result",
              PH_METRIC_LABELS(result_label), PH_METRIC_NO_BUCKETS, rv, m_req),
    PH_METRIC("proxyhost_remote_validation_overflow_total", PH_METRIC_COUNTER,
              "Calls answered unavailable without a request: max_inflight "
              "reached",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, rv, m_overflow),
    PH_METRIC("proxyhost_remote_validation_inflight", PH_METRIC_GAUGE,
              "Requests to the remote validation endpoint now",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, rv, m_inflight),
    PH_METRIC("proxyhost_remote_validation_cache_entries", PH_METRIC_GAUGE,
              "Verdicts held in the remote validation cache",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, rv, m_entries),
    PH_METRIC_END};

static int rv_init(ph_ctx *ctx, const ph_api *a, void **state) {
  api = a;
  rv *r = calloc(1, sizeof(*r));
  if (!r)
    return PH_ENOMEM;
  *state = r;
  r->ctx = ctx;
  if (rv_keyer_init(&r->keyer) != PH_OK) {
    PH_LOG(api, ctx, PH_LOG_ERROR,
           "remote validation: no random bytes for the cache key");
    return PH_EINVAL;
  }
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
    return PH_EINVAL;
  r->curl_inited = 1;
  sf_conf sc = {.answer_size = sizeof(int),
                .max_flights = api->conf_int(ctx, "max_inflight"),
                .max_waiters = api->conf_int(ctx, "max_pending"),
                .max_per_key = api->conf_int(ctx, "max_pending"),
                .key_max = RV_KEY_LEN,
                .call = call, /* no orphan: a request outlives its callers */
                .owner = r};
  r->sf = sf_new(api, ctx, &sc);
  if (!r->sf)
    return PH_ENOMEM;
  int rc = ph_metric_table_register(api, ctx, rv_metrics, r);
  if (rc == PH_OK)
    rc = apply_config(r, 1);
  if (rc != PH_OK)
    return rc;
  return api->service_register(ctx, PH_VALIDATION_SERVICE, PH_VALIDATION_MAJOR,
                               PH_VALIDATION_MINOR, &rv_vt, r);
}

static int rv_reload(void *state) { return apply_config(state, 0); }

static void rv_destroy(void *state) {
  rv *r = state;
  if (!r)
    return;
  /* Closing releases every connection and forgets every verdict
   * (TM-P1-44); unanswered calls are dropped without a call. */
  rv_http_free(r->http);
  r->http = NULL;
  sf_flight *sf;
  while (r->sf && (sf = sf_first_flight(r->sf))) {
    flight_free(sf_flight_data(sf));
    sf_discard(r->sf, sf);
  }
  sf_free(r->sf);
  while (r->old) {
    struct old_http *o = r->old;
    r->old = o->next;
    rv_http_free(o->h);
    free(o);
  }
  kcache_free(r->cache);
  rv_keyer_wipe(&r->keyer);
  free(r->endpoint);
  free(r->ca_file);
  free(r->token_file);
  if (r->curl_inited)
    curl_global_cleanup();
  free(r);
}

static const char *const rv_provides[] = {PH_VALIDATION_SERVICE, NULL};

PROXYHOST_MODULE = {
    PH_MODULE_HEADER("remote_validation", "1.0.0"),
    .description = "remote validation of client credentials against an "
                   "HTTP(S) endpoint, with a cache",
    .provides = rv_provides,
    .config = rv_keys,
    .check = rv_check,
    .init = rv_init,
    .reload = rv_reload,
    .destroy = rv_destroy,
};
