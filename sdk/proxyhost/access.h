/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proxyhost SDK: the "access" service: may this principal open this
 * target (through this agent)?
 *
 * The "authorizer" service answers "is this user/password known"; this one
 * answers the question that comes after it, per stream: a frontend or the
 * tunnel server asks whether an authenticated principal may open a stream
 * to host:port, through an agent when one is named. The verdict is made to
 * be cached (the TunnelMesh authorization cache): it says how
 * long it may be kept and under which policy revision it was computed, so
 * a cache drops it when the revision moves. An allow is not a
 * dial: the connector's own target policy still applies afterwards.
 *
 * Service name "access", major 1 (PH_ACCESS_MAJOR). Get it at start:
 *
 *   void *aself;
 *   const ph_access_v1 *ac =
 *       api->service_get(ctx, PH_ACCESS_SERVICE, PH_ACCESS_MAJOR, 0, &aself);
 *
 * Threads: loop thread only, for check_open, cancel, revision and the
 * callback.
 *
 * Fail closed: anything but PH_ACCESS_ALLOW is a denial, including
 * PH_ACCESS_UNAVAILABLE (the policy could not be consulted), a verdict
 * value this header does not know and a result too short to hold one.
 */
#ifndef PROXYHOST_ACCESS_H
#define PROXYHOST_ACCESS_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/connector.h>

#define PH_ACCESS_SERVICE "access"
#define PH_ACCESS_MAJOR 1
#define PH_ACCESS_MINOR 0

/* Zero is no verdict, so a result left zeroed by mistake is a denial. */
typedef enum ph_access_verdict {
  PH_ACCESS_ALLOW = 1,      /* may open; code PH_OPEN_OK */
  PH_ACCESS_DENY = 2,       /* the policy says no; code PH_OPEN_FORBIDDEN */
  PH_ACCESS_UNAVAILABLE = 3 /* no answer from the policy (code
                               PH_OPEN_QUEUE_FULL, PH_OPEN_TIMEOUT or
                               PH_OPEN_INTERNAL_ERROR); never cached */
} ph_access_verdict;

/*
 * The question. The caller fills it and sets size = sizeof(ph_access_request)
 * of the headers it was built with, and zeroes what it does not use (a
 * designated initialiser does both). The provider copies what it keeps:
 * every string may be freed once check_open returns.
 *
 * Everything the verdict may depend on is in here and nothing else is: a
 * cache keyed by (principal, agent, protocol, host, port, revision), the
 * TunnelMesh cache's key, is exact. That is why there is no client address.
 * Never put a secret (a password, a bearer token) in any field: the fields
 * become cache keys.
 *
 * Growth: later minors add fields at the end or give a reserved field a
 * meaning, and such a field's zero is its old behaviour. A provider reads
 * a field only when size covers all of it (PH_ACCESS_HAS), so a field an
 * older caller did not have reads as its zero/NULL default, and it ignores
 * the bytes a newer caller added beyond its own sizeof and the reserved
 * fields (never refuses them). A caller that needs a provider to honour a
 * newer field asks service_get for the minor that added it.
 */
typedef struct ph_access_request {
  uint32_t size;         /* the caller's sizeof; at least
                            PH_ACCESS_REQUEST_MIN_SIZE */
  uint8_t protocol;      /* ph_protocol (PH_PROTO_TCP) */
  uint16_t port;         /* target port, 1..65535 */
  const char *host;      /* target, NUL-terminated, 1..255 bytes, in the
                            normal form: a name in lower case
                            without a trailing dot, or an address in its
                            standard text form (IPv6 without brackets) */
  const char *principal; /* who asks, as authenticated (a user name, a
                            token's id), NUL-terminated, 1..255 bytes; NULL
                            for an anonymous client */
  /* --- PH_ACCESS_REQUEST_MIN_SIZE: the fields below may be absent --- */
  const char *agent;     /* the agent the stream goes through,
                            NUL-terminated, 1..255 bytes; NULL when none is
                            involved (a local open, or not chosen yet) */
  void *reserved[4];     /* zero */
} ph_access_request;

/* The smallest size a provider accepts: the fields every question has. */
#define PH_ACCESS_REQUEST_MIN_SIZE offsetof(ph_access_request, agent)

/* Whether a struct of that type whose size field says size holds all of
 * field: PH_ACCESS_HAS(ph_access_request, req->size, agent). For the
 * provider reading a request and the caller reading a result. */
#define PH_ACCESS_HAS(type, size, field)                                     \
  ((size) >= offsetof(type, field) + sizeof(((type *)0)->field))

/*
 * The answer, valid only during the callback. size is the provider's
 * sizeof(ph_access_result): read a field only when size covers it (fields
 * a later minor adds are absent from an older provider's result).
 */
typedef struct ph_access_result {
  uint32_t size;     /* the provider's sizeof */
  int verdict;       /* ph_access_verdict */
  int code;          /* ph_open_code, the stable reason (stage
                        "authorization" in an open result):
                        ALLOW: PH_OPEN_OK; DENY: PH_OPEN_FORBIDDEN;
                        UNAVAILABLE: PH_OPEN_QUEUE_FULL (the provider's
                        in-flight bound), PH_OPEN_TIMEOUT (the store did not
                        answer in time) or PH_OPEN_INTERNAL_ERROR (the store
                        failed, or its revision is not healthy). A caller
                        maps an unknown code to PH_OPEN_INTERNAL_ERROR. */
  uint32_t ttl_ms;   /* how long the caller may keep the verdict, from
                        now; 0: do not keep it. Always 0 for UNAVAILABLE.
                        A cache may keep it shorter, never longer. */
  uint64_t revision; /* the policy revision the verdict was computed
                        under (see revision() below); 0 when the provider
                        has none, and for UNAVAILABLE */
  uint32_t retry_after_ms; /* UNAVAILABLE: when trying again may succeed
                              (0: no hint); else 0 */
  uint32_t reserved32;     /* zero */
  void *reserved[4];       /* zero */
} ph_access_result;

/* Called exactly once per accepted check, on the loop thread, never from
 * inside check_open itself, and never after cancel returned. res is valid
 * only during the call. arg is the caller's: passed back untouched, never
 * freed by the provider. The callback may call check_open and cancel.
 * Checks still unanswered when the provider is destroyed are dropped
 * without a call; the host destroys a service's users before its
 * provider. */
typedef void (*ph_access_cb)(void *arg, const ph_access_result *res);

typedef struct ph_access_v1 {
  /* Starts a check. Never blocks: a provider at its in-flight bound
   * answers UNAVAILABLE with PH_OPEN_QUEUE_FULL through the callback.
   * Returns an id > 0, or a negative ph_status and then cb is never
   * called: PH_EINVAL for a malformed request (NULL req or cb, size below
   * PH_ACCESS_REQUEST_MIN_SIZE, an unknown protocol, port 0, a host or a
   * string out of bounds or not in normal form), PH_ENOMEM. */
  int64_t (*check_open)(void *self, const ph_access_request *req,
                        ph_access_cb cb, void *arg);
  /* Abandons a check: the callback is not called afterwards and the
   * check's slot is free. PH_OK, or PH_ENOENT when the id is unknown,
   * already answered or already cancelled. */
  int (*cancel)(void *self, int64_t id);
  /* The revision source of a cache: the current policy revision, without
   * I/O. PH_OK with *revision set (it only grows while the provider runs;
   * 0 means the provider keeps no revision, and its verdicts are bounded by
   * ttl_ms alone). PH_ESTATE when the provider cannot vouch for its
   * revision now (its store is unreachable beyond its staleness bound, or
   * its revision went backwards, is missing or overflowed):
   * then a cache must not serve an allow it holds and asks
   * check_open again. PH_EINVAL when revision is NULL. A cache keeps a
   * fresh verdict only when its revision equals the current one: a verdict
   * computed before the revision moved is already stale when it arrives. */
  int (*revision)(void *self, uint64_t *revision);
} ph_access_v1;

#endif
