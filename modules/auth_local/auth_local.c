/* SPDX-License-Identifier: BSD-2-Clause */
/* auth_local: the "authorizer" service from a user list in the module's
 * configuration section, with passwords stored as PBKDF2 hashes (made by
 * proxyhost-passwd). Hash checks run on the host's helper threads; recent
 * successful checks are remembered (lib/kcache, keyed by a SHA-256 of
 * user and password, for cache_ttl) so a browser opening many streams
 * does not pay the hash each time. Anything but a verified match is a denial.
 *
 * It also provides the "access" service (access_local.c): a user in the
 * list may open any target, anyone else may not; its revision moves when
 * a reload changes the list. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <proxyhost/authorizer.h>
#include <proxyhost/module.h>

#include "access_local.h"
#include "lib/kcache.h"
#include "lib/metric_table.h"
#include "lib/sflight.h"
#include "pwhash.h"

#define CRED_MAX 255
#define KEY_LEN 32          /* SHA-256(user NUL password) */

typedef struct user {
  char name[CRED_MAX + 1];
  pwhash hash;
} user;

typedef struct check check;
typedef struct auth auth;

/* One hash job: the lookup of a flight (lib/sflight.h) whose waiter is
 * the caller, or nobody once it cancelled: the job still runs and still
 * fills the cache. */
struct check {
  auth *a;
  sf_flight *f;
  int verdict;
  pwhash hash; /* copy: the user list may be reloaded meanwhile */
  int known;   /* the user exists (else a dummy hash is checked) */
  char password[CRED_MAX + 1];
  size_t password_len;
};

struct auth {
  ph_ctx *ctx;
  user *users;
  size_t n_users;
  pwhash dummy; /* checked for unknown users: same cost, no enumeration */
  kcache *cache;       /* FIFO, KCACHE_SECRET: key -> nothing, expiry */
  uint64_t cache_gen;  /* bumped when a reload replaces the cache */
  int64_t cache_ttl_ms;
  int64_t max_pending; /* hash jobs at once (flights) */
  sflight *sf;         /* the jobs, and answers for the next loop turn */
  auth_local_access *access;
  ph_series *m_checks[3][2]; /* verdict x cache hit/miss */
};

static const ph_api *api;

static const char *const verdicts[] = {"allow", "deny", "unavailable", NULL};
static const char *const caches[] = {"miss", "hit", NULL};
static const ph_label_def check_labels[] = {{"result", verdicts},
                                            {"cache", caches}};
static const ph_metric_table auth_metrics[] = {
    PH_METRIC("proxyhost_auth_local_checks_total", PH_METRIC_COUNTER,
              "Password checks by result and cache use",
              PH_METRIC_LABELS(check_labels), PH_METRIC_NO_BUCKETS, auth,
              m_checks),
    PH_METRIC_END};

/* The key table, generated from auth_local.ini.sample (its "; type:" lines)
 * by tools/gen_conf_keys.awk into auth_local_keys.c: users' count (1024) and
 * cache_size's maximum (100000) are held there only. */
extern const ph_conf_key auth_keys[];

static void cred_key(const char *u, size_t ul, const char *p, size_t pl,
                     unsigned char out[32]) {
  EVP_MD_CTX *md = EVP_MD_CTX_new();
  unsigned int n = 0;
  if (md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1 &&
      EVP_DigestUpdate(md, u, ul) == 1 && EVP_DigestUpdate(md, "", 1) == 1 &&
      EVP_DigestUpdate(md, p, pl) == 1 &&
      EVP_DigestFinal_ex(md, out, &n) == 1 && n == 32) {
    EVP_MD_CTX_free(md);
    return;
  }
  EVP_MD_CTX_free(md);
  memset(out, 0xff, 32); /* cannot match a real entry's expiry check */
}

/* The key is a SHA-256 output, already uniform: its first bytes are the
 * hash, and only verified credentials are put, so no client can aim
 * entries at one bucket. */
static uint64_t key_hash(const unsigned char *key) {
  uint64_t h;
  memcpy(&h, key, sizeof(h));
  return h;
}

/* Remembers a verification, unless a reload replaced the cache since the
 * check started: it was verified against the old user list. */
static void cache_put(auth *a, const check *c) {
  size_t len;
  const unsigned char *key = sf_flight_key(c->f, &len);
  if (a->cache_ttl_ms == 0 || sf_flight_gen(c->f) != a->cache_gen)
    return;
  int64_t now = api->now_ms(a->ctx);
  const char v = 1;
  kcache_put(a->cache, key, len, key_hash(key), &v, now + a->cache_ttl_ms,
             now);
}

static void count(auth *a, int verdict, int hit) {
  api->inc(a->m_checks[verdict][hit], 1);
}

static void free_check(check *c) {
  OPENSSL_cleanse(c->password, sizeof(c->password));
  free(c);
}

/* sflight's delivery. */
static void call(void *owner, sf_fn cb, void *arg, const void *answer) {
  (void)owner;
  ((ph_auth_cb)cb)(arg, *(const int *)answer);
}

/* Helper thread: the slow part. Touches only the check itself. */
static void verify_work(void *arg) {
  check *c = arg;
  int ok = pwhash_verify(&c->hash, c->password, c->password_len);
  c->verdict = ok && c->known ? PH_AUTH_ALLOW : PH_AUTH_DENY;
  OPENSSL_cleanse(c->password, sizeof(c->password));
}

static void verify_done(void *arg, int status) {
  check *c = arg;
  auth *a = c->a;
  int verdict = status == PH_OK ? c->verdict : PH_AUTH_UNAVAILABLE;
  /* Remembered even when its requester gave up: a client whose timeout is
   * shorter than one verification would otherwise retry into a fresh one
   * every time and never get in. */
  if (verdict == PH_AUTH_ALLOW)
    cache_put(a, c);
  for (size_t i = sf_flight_waiters(c->f); i > 0; i--)
    count(a, verdict, 0);
  sf_complete(a->sf, c->f, &verdict);
  free_check(c);
}

/* The answer on the next loop turn, no clock tick. */
static int64_t later(auth *a, int verdict, int hit, ph_auth_cb cb,
                     void *arg) {
  int64_t id = sf_later(a->sf, &verdict, 0, (sf_fn)cb, arg);
  if (id > 0)
    count(a, verdict, hit);
  return id;
}

static const user *find_user(const auth *a, const char *name, size_t len) {
  for (size_t i = 0; i < a->n_users; i++)
    if (strlen(a->users[i].name) == len &&
        memcmp(a->users[i].name, name, len) == 0)
      return &a->users[i];
  return NULL;
}

/* For the access service: is name one of the users? */
static int user_known(const void *owner, const char *name) {
  return find_user(owner, name, strlen(name)) != NULL;
}

/* Not shared with a check of the same credentials in flight (shared =
 * 0): each check is its own job, as the bound max_pending counts them. */
static int64_t check_password(void *self, const char *u, size_t ul,
                              const char *p, size_t pl, ph_auth_cb cb,
                              void *arg) {
  auth *a = self;
  if (!u || !p || !cb || ul == 0 || ul > CRED_MAX || pl > CRED_MAX)
    return PH_EINVAL;
  unsigned char key[KEY_LEN];
  cred_key(u, ul, p, pl, key);
  char v;
  if (kcache_get(a->cache, key, KEY_LEN, key_hash(key), api->now_ms(a->ctx),
                 &v, NULL)) {
    OPENSSL_cleanse(key, sizeof(key));
    return later(a, PH_AUTH_ALLOW, 1, cb, arg);
  }
  check *c = calloc(1, sizeof(*c));
  if (!c) {
    OPENSSL_cleanse(key, sizeof(key));
    return PH_ENOMEM;
  }
  int64_t id = sf_start(a->sf, key, KEY_LEN, key_hash(key), a->cache_gen, 0,
                        (sf_fn)cb, arg, &c->f);
  OPENSSL_cleanse(key, sizeof(key));
  if (id < 0) {
    free_check(c);
    return id == PH_EFULL ? later(a, PH_AUTH_UNAVAILABLE, 0, cb, arg) : id;
  }
  c->a = a;
  const user *usr = find_user(a, u, ul);
  c->known = usr != NULL;
  c->hash = usr ? usr->hash : a->dummy;
  memcpy(c->password, p, pl);
  c->password_len = pl;
  if (api->submit(a->ctx, verify_work, verify_done, c) <= 0) {
    int verdict = PH_AUTH_UNAVAILABLE;
    count(a, verdict, 0);
    sf_hold(a->sf); /* the answer on the next turn, not now */
    sf_complete(a->sf, c->f, &verdict);
    sf_unhold(a->sf);
    free_check(c);
  }
  return id;
}

/* A job still running keeps its max_pending slot and runs on, so that a
 * right password is remembered for the client's next try; only the
 * answer is dropped. */
static int cancel_check(void *self, int64_t id) {
  auth *a = self;
  return sf_cancel(a->sf, id);
}

static const ph_authorizer_v1 authorizer_vt = {check_password, cancel_check};

/* Parses every NAME:HASH entry of "users" into a new array (*out, *n):
 * the one parser of the key, for check, init and reload. PH_OK, or an
 * error with a reason naming the entry by its position, never by its text
 * (it holds a password hash). a is passed in because check runs before
 * init set the module's api. */
static int parse_users(const ph_api *a, ph_ctx *ctx, user **out, size_t *n,
                       char *why, size_t whylen) {
  size_t count = a->conf_list_len(ctx, "users");
  user *users = calloc(count ? count : 1, sizeof(*users));
  if (!users) {
    snprintf(why, whylen, "out of memory");
    return PH_ENOMEM;
  }
  for (size_t i = 0; i < count; i++) {
    const char *item = a->conf_list_at(ctx, "users", i);
    const char *colon = item ? strchr(item, ':') : NULL;
    size_t nl = colon ? (size_t)(colon - item) : 0;
    if (!colon || nl == 0 || nl > CRED_MAX ||
        pwhash_parse(colon + 1, &users[i].hash) < 0) {
      snprintf(why, whylen,
               "entry %zu is not NAME:HASH (make HASH with proxyhost-passwd)",
               i + 1);
      free(users);
      return PH_EINVAL;
    }
    memcpy(users[i].name, item, nl);
    for (size_t j = 0; j < i; j++)
      if (strcmp(users[j].name, users[i].name) == 0) {
        snprintf(why, whylen, "entry %zu: duplicate user (as entry %zu)",
                 i + 1, j + 1);
        free(users);
        return PH_EINVAL;
      }
  }
  *out = users;
  *n = count;
  return PH_OK;
}

/* ph_module.check: the users list, parsed and dropped. */
static int auth_check(ph_ctx *ctx, const ph_api *a, const char **key,
                      char *why, size_t whylen) {
  user *users;
  size_t n;
  int rc = parse_users(a, ctx, &users, &n, why, whylen);
  if (rc != PH_OK) {
    *key = "users";
    return rc;
  }
  OPENSSL_cleanse(users, n * sizeof(*users));
  free(users);
  return PH_OK;
}

static int same_hash(const pwhash *x, const pwhash *y) {
  return x->iterations == y->iterations && x->salt_len == y->salt_len &&
         memcmp(x->salt, y->salt, sizeof(x->salt)) == 0 &&
         memcmp(x->hash, y->hash, sizeof(x->hash)) == 0;
}

/* Whether the new list has the same entries as the current one, in any
 * order. A changed hash counts as a change (a rotated credential, as the
 * seed bumps its revision on a token rotation), an order change does
 * not. Names are unique in both lists, so equal counts and every new
 * entry found in the old list make the same set. */
static int same_users(const auth *a, const user *users, size_t n) {
  if (n != a->n_users)
    return 0;
  for (size_t i = 0; i < n; i++) {
    const user *old = find_user(a, users[i].name, strlen(users[i].name));
    if (!old || !same_hash(&old->hash, &users[i].hash))
      return 0;
  }
  return 1;
}

/* Replaces the user list; nothing is replaced on error. A list that
 * differs from the one it replaces moves the access revision. */
static int load_users(auth *a) {
  user *users;
  size_t n;
  char why[256];
  int rc = parse_users(api, a->ctx, &users, &n, why, sizeof(why));
  if (rc != PH_OK) {
    PH_LOG(api, a->ctx, PH_LOG_ERROR, "auth_local.users refused",
           PH_STR("reason", why));
    return rc;
  }
  if (a->users && !same_users(a, users, n))
    auth_local_access_bump(a->access);
  free(a->users);
  a->users = users;
  a->n_users = n;
  /* Unknown users cost what known ones do: no enumeration by timing. */
  a->dummy.iterations = n ? users[0].hash.iterations : PWHASH_DEFAULT_ITER;
  return PH_OK;
}

/* The new cache is made first: new users never meet the old cache. */
static int apply_config(auth *a) {
  kcache_conf kc = {.max_entries = (size_t)api->conf_int(a->ctx, "cache_size"),
                    .value_size = 1,
                    .policy = KCACHE_FIFO,
                    .flags = KCACHE_SECRET};
  kcache *cache = kcache_new(&kc);
  if (!cache)
    return PH_ENOMEM;
  int rc = load_users(a);
  if (rc != PH_OK) {
    kcache_free(cache);
    return rc;
  }
  /* A reload forgets what was remembered, and what checks still in
   * flight would remember (verified against the old list). */
  kcache_free(a->cache);
  a->cache = cache;
  a->cache_gen++;
  a->cache_ttl_ms = api->conf_int(a->ctx, "cache_ttl");
  a->max_pending = api->conf_int(a->ctx, "max_pending");
  sf_set_limits(a->sf, a->max_pending, a->max_pending, 1);
  auth_local_access_configure(a->access, a->max_pending,
                              (uint32_t)api->conf_int(a->ctx, "access_ttl"));
  return PH_OK;
}

static int auth_init(ph_ctx *ctx, const ph_api *host, void **state) {
  api = host;
  auth *a = calloc(1, sizeof(*a));
  if (!a)
    return PH_ENOMEM;
  *state = a;
  a->ctx = ctx;
  /* A fixed dummy hash for unknown users; its cost is set with the users. */
  memset(&a->dummy, 0, sizeof(a->dummy));
  a->dummy.salt_len = PWHASH_SALT_LEN;
  if (ph_metric_table_register(api, ctx, auth_metrics, a) != PH_OK)
    return PH_EINVAL;
  sf_conf sc = {.answer_size = sizeof(int),
                .max_flights = api->conf_int(ctx, "max_pending"),
                .max_waiters = api->conf_int(ctx, "max_pending"),
                .max_per_key = 1,
                .key_max = KEY_LEN,
                .call = call, /* no orphan: a job outlives its caller */
                .owner = a};
  a->sf = sf_new(api, ctx, &sc);
  if (!a->sf)
    return PH_ENOMEM;
  a->access = auth_local_access_new(ctx, api, user_known, a);
  if (!a->access)
    return PH_ENOMEM;
  int rc = apply_config(a);
  if (rc != PH_OK)
    return rc;
  rc = api->service_register(ctx, PH_AUTHORIZER_SERVICE, PH_AUTHORIZER_MAJOR,
                             PH_AUTHORIZER_MINOR, &authorizer_vt, a);
  if (rc != PH_OK)
    return rc;
  return api->service_register(ctx, PH_ACCESS_SERVICE, PH_ACCESS_MAJOR,
                               PH_ACCESS_MINOR, &auth_local_access_vt,
                               a->access);
}

static int auth_reload(void *state) { return apply_config(state); }

static void auth_destroy(void *state) {
  auth *a = state;
  if (!a)
    return;
  /* The host delivered every job's done before destroy: no flight is
   * left; undelivered answers go without a call. */
  sf_free(a->sf);
  auth_local_access_free(a->access);
  free(a->users);
  kcache_free(a->cache);
  free(a);
}

static const char *const auth_provides[] = {PH_AUTHORIZER_SERVICE,
                                            PH_ACCESS_SERVICE, NULL};

PROXYHOST_MODULE = {
    PH_MODULE_HEADER("auth_local", "1.1.0"),
    .description = "username/password authorizer and access policy from "
                   "the configuration",
    .provides = auth_provides,
    .config = auth_keys,
    .check = auth_check,
    .init = auth_init,
    .reload = auth_reload,
    .destroy = auth_destroy,
};
