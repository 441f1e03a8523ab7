/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cp_authority.h: the "cp.authority" service (major 1), the control
 * plane's Redis authority, provided by the redis_ownership module for the
 * controller (controlplane_server). A private header of the tree, not
 * part of the installed SDK.
 *
 * Every call is ONE server-side atomic step in Redis (a Lua script run
 * with EVALSHA; docs/operations/controller-redis.md lists the keys and
 * the fences). Time is Redis server time only (CP-2-12).
 *
 * One instance serves one cluster: its [redis_ownership] cluster_id.
 * Several clusters in one process are several named instances
 * ([redis_ownership.eu]), told apart with api->service_get_named.
 *
 * The contract of every call below:
 *  - loop thread only;
 *  - returns a call id > 0 and then calls cb(arg, reply) exactly once, on
 *    the loop thread, never from inside the call itself; or returns a
 *    negative ph_status and never calls cb: PH_EINVAL (an argument out of
 *    its bounds: an id longer than PH_POOL_ID_MAX or not of
 *    [A-Za-z0-9._-], a sequence above CP_AUTH_SEQ_MAX, too many items),
 *    PH_EFULL (max_inflight calls already in flight), PH_ENOMEM,
 *    PH_ESTATE (the module is stopping);
 *  - the reply and everything it points to are owned by the module and
 *    valid only during the callback: copy what you keep;
 *  - Redis down, or no answer within command_timeout: the reply's result
 *    is CP_AUTH_UNAVAILABLE (UNAVAILABLE; fail closed);
 *  - strings passed in are copied during the call; digests and checksums
 *    are raw SHA-256 (32 bytes), stored as lower-case hex.
 * cancel(self, id) drops a pending call: its callback is not called.
 * When the module stops (after its users stopped), every pending call
 * answers CP_AUTH_UNAVAILABLE; after that every call is PH_ESTATE.
 */
#ifndef PH_CP_AUTHORITY_H
#define PH_CP_AUTHORITY_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/pool_store.h>

#include "cp_status.h" /* gRPC codes by name */

#define CP_AUTHORITY_SERVICE "cp.authority"
#define CP_AUTHORITY_MAJOR 1
#define CP_AUTHORITY_MINOR 8 /* 1: cluster_id; 2: extract; 3: rebalance;
                                4: checker sessions; 5: health;
                                6: controller members; 7: passive;
                                8: zone, extraction counts (status) */

#define CP_AUTH_DIGEST_LEN 32 /* SHA-256 */
/* Sequences, versions and epochs travel through Lua numbers (doubles):
 * anything above 2^53 - 1 is refused with PH_EINVAL. */
#define CP_AUTH_SEQ_MAX 9007199254740991ULL
/* A session id made by new_session_id: 128 random bits, lower-case hex. */
#define CP_AUTH_SESSION_HEX 32
/* minor 6: at most this many controllers schedule checks at once. */
#define CP_AUTH_MEMBERS_MAX 16
/* minor 7: at most this many proxies in one passive_push. */
#define CP_AUTH_PASSIVE_PUSH_MAX 4096

/* What a call found. The gRPC status each maps to (ARCHITECTURE.md §7) is
 * cp_auth_grpc_status() below. */
typedef enum cp_auth_result {
  CP_AUTH_OK = 0,
  CP_AUTH_REPLAY,            /* same sequence, same digest: accepted, not
                                applied twice (CP-2-10, CP-5-12) */
  CP_AUTH_STALE_SESSION,     /* not the worker's current session (CP-2-8) */
  CP_AUTH_FENCE_CLOSED,      /* runtime fence closed: no positive ACK yet
                                or a negative one since (CP-1-10) */
  CP_AUTH_BASELINE_MISMATCH, /* version/epoch not the ACK baseline
                                (CP-2-13); an ACK older than the baseline */
  CP_AUTH_STALE_EPOCH,       /* epoch below the current one (CP-2-6) */
  CP_AUTH_NOT_ISSUED,        /* ACK of a triple never issued (CP-1-8) */
  CP_AUTH_SEQ_SMALLER,       /* sequence below the accepted (CP-5-14) */
  CP_AUTH_SEQ_CONFLICT,      /* same sequence, other digest (CP-5-13) */
  CP_AUTH_LIMIT,             /* a bound held in Redis (max_workers) */
  CP_AUTH_UNAVAILABLE,       /* Redis down, slow, or an unexpected answer */
  CP_AUTH_RESULT_COUNT
} cp_auth_result;

/* The gRPC status of a result (ARCHITECTURE.md §7). */
static inline int cp_auth_grpc_status(cp_auth_result r) {
  switch (r) {
  case CP_AUTH_OK:
  case CP_AUTH_REPLAY:
    return CP_GRPC_OK;
  case CP_AUTH_SEQ_SMALLER:
    return CP_GRPC_ABORTED;
  case CP_AUTH_SEQ_CONFLICT:
    return CP_GRPC_ALREADY_EXISTS;
  case CP_AUTH_LIMIT:
    return CP_GRPC_RESOURCE_EXHAUSTED;
  case CP_AUTH_STALE_SESSION:
  case CP_AUTH_FENCE_CLOSED:
  case CP_AUTH_BASELINE_MISMATCH:
  case CP_AUTH_STALE_EPOCH:
  case CP_AUTH_NOT_ISSUED:
    return CP_GRPC_FAILED_PRECONDITION;
  default:
    return CP_GRPC_UNAVAILABLE;
  }
}

/* One counter of a runtime report: only proxies with active or reserved
 * non-zero, or draining (CP-2-14). */
typedef struct cp_auth_counter {
  const char *proxy_id;
  uint32_t active, reserved;
  int draining;
} cp_auth_counter;

/* A proxy the store says is usable, for assign. */
typedef struct cp_auth_proxy {
  const char *proxy_id;
  uint32_t capacity; /* 1..PH_POOL_CAPACITY_MAX */
  const char *zone;  /* "" when none */
} cp_auth_proxy;

/* owned(): one proxy of the worker's ownership index (CP-1-16). */
typedef struct cp_auth_owned {
  const char *proxy_id;
  int64_t lease_until_ms; /* Redis server time, Unix ms */
  int reclaim; /* minor 2: an extraction waits for this ownership to end
                  (minor 3: or a rebalance moves the proxy to another
                  worker): the worker's snapshots mark the proxy draining
                  (CP-4-2) */
} cp_auth_owned;

/* Exclusive extraction (minor 2; CP-1-5, CP-4-2..5): what extract() does. */
typedef enum cp_extract_op {
  CP_EXTRACT_GET = 1, /* read the proxy's extraction state */
  CP_EXTRACT_REQUEST, /* AVAILABLE -> EXTRACTED, now or once unowned */
  CP_EXTRACT_RELEASE  /* EXTRACTED or RECLAIMING -> AVAILABLE */
} cp_extract_op;

/* A proxy's extraction state in Redis. */
typedef enum cp_extract_state {
  CP_EXTRACT_AVAILABLE = 0, /* not extracted: assign may give it out */
  CP_EXTRACT_RECLAIMING,    /* requested while a worker owns it: that
                               worker drains it, nobody else gets it */
  CP_EXTRACT_EXTRACTED      /* taken out of the pool: no owner, none given */
} cp_extract_state;

/* usable(): one proxy's counts, in the order asked. valid is 1 only when
 * the owner's session, its report's TTL, the ownership lease and the
 * report's epoch are all valid at once (CP-2-15); otherwise valid is 0,
 * active and reserved are 0, and the caller must count the proxy's
 * capacity as zero available (CP-2-16). */
typedef struct cp_auth_usable {
  const char *proxy_id;
  const char *owner; /* the worker owning it now, "" when none */
  int valid;
  uint32_t active, reserved;
} cp_auth_usable;

/* minor 5, health_all(): one proxy's verdict in Redis. */
typedef struct cp_auth_health {
  const char *proxy_id;
  int health; /* CONTROLPLANE__V1__PROXY_HEALTH__*: 1..3 */
} cp_auth_health;

/* minor 7: one proxy's gateway outcomes aggregated at a controller that
 * is not its member, for the member's reducer: failure and success units
 * (CS_HYST_UNIT a whole outcome, failures weighted by stage). */
typedef struct cp_auth_passive {
  const char *proxy_id;
  uint32_t fail_units, ok_units;
} cp_auth_passive;

typedef struct cp_auth_reply {
  uint32_t size;          /* sizeof(cp_auth_reply) in the module */
  cp_auth_result result;
  uint64_t epoch;         /* register, ack, assign, owned, usable */
  uint64_t version;       /* next_version */
  uint64_t sequence;      /* report_outcomes: the last acknowledged */
  int replaced;           /* register: an older session was replaced */
  int64_t session_expires_ms; /* register, report_runtime (Unix ms) */
  const char *const *revoke;  /* report_runtime: owned proxies the last */
  size_t n_revoke;            /* assign saw draining or removed (CP-4-7) */
  const cp_auth_owned *owned; /* owned */
  size_t n_owned;
  const cp_auth_usable *usable; /* usable */
  size_t n_usable;
  uint32_t assigned, released; /* assign: proxies given, ownerships ended */
  /* minor 2, extract: the state after the call; when EXTRACTED, since
   * when (Unix ms, Redis time); when RECLAIMING, the owning worker. */
  cp_extract_state extract_state;
  int64_t extracted_ms;
  const char *extract_owner; /* "" unless RECLAIMING */
  uint32_t extracted;        /* assign: reclaims completed (EXTRACTED) */
  /* minor 3, assign: proxies newly set moving to another worker
   * (rebalancing, through the drain); rebalance_limited 1 when
   * [redis_ownership] rebalance_max held a move back. */
  uint32_t moving;
  int rebalance_limited;
  /* minor 4, checker_alive: what the checker registered (max_concurrency,
   * and its tiers as a bit mask: bit t for CheckTier t). */
  uint32_t max_concurrency;
  uint32_t tiers;
  /* minor 5: health_all: every verdict in Redis; extract REQUEST: 0, or
   * the health (SUSPECT 2, UNHEALTHY 3) that refused it (extract_state
   * is then AVAILABLE: nothing changed). */
  const cp_auth_health *health;
  size_t n_health;
  int extract_refused;
  /* minor 6, members: the controllers whose lease is live, by id, and
   * the end of the caller's own lease (Unix ms, Redis time; 0 when it
   * left). */
  const char *const *members;
  size_t n_members;
  int64_t lease_end_ms;
  /* minor 7, passive_take: the aggregates handed to the caller (at most
   * PH_POOL_PROXIES_MAX); passive_push: how many proxies did not fit. */
  const cp_auth_passive *passive;
  size_t n_passive;
  uint32_t passive_dropped;
  /* minor 8 (a caller checks size > offsetof(cp_auth_reply, zone)):
   * owned and checker_alive: the zone the session registered ("" for
   * none, at most PH_POOL_ID_MAX bytes); assign: how many proxies are
   * RECLAIMING and EXTRACTED after the step (cp_extract_state). */
  const char *zone;
  uint32_t n_reclaiming, n_extracted;
} cp_auth_reply;

typedef void (*cp_auth_cb)(void *arg, const cp_auth_reply *reply);

typedef struct cp_authority_v1 {
  /* Any thread. Writes a new session id (CP_AUTH_SESSION_HEX lower-case
   * hex digits from OpenSSL RAND_bytes, and a NUL) into out. PH_OK, or
   * PH_EINVAL when the random generator fails (out is then ""). */
  int (*new_session_id)(char out[CP_AUTH_SESSION_HEX + 1]);

  /* RegisterWorker (CP-1-7, CP-2-1, CP-2-7, CP-5-18): makes session_id
   * the worker's only session (server-side TTL session_ttl) and clears
   * the old one's issued references, ACK baseline, runtime counters,
   * runtime and outcome fences. Ownership stays with the worker id.
   * Reply: epoch, replaced, session_expires_ms; CP_AUTH_LIMIT when
   * max_workers other workers are known. */
  int64_t (*register_worker)(void *self, const char *worker_id,
                             const char *instance_id, const char *zone,
                             const char *session_id, cp_auth_cb cb,
                             void *arg);
  /* The next snapshot version of the cluster (INCR, CP-3-1): version. */
  int64_t (*next_version)(void *self, cp_auth_cb cb, void *arg);
  /* Records an issued snapshot reference (version, epoch, checksum) only
   * while session_id is current (CP-1-36; else CP_AUTH_STALE_SESSION,
   * CP-2-8). At most max_issued_refs are kept, the oldest dropped. */
  int64_t (*issue)(void *self, const char *worker_id, const char *session_id,
                   uint64_t version, uint64_t epoch,
                   const uint8_t checksum[CP_AUTH_DIGEST_LEN], cp_auth_cb cb,
                   void *arg);
  /* AcknowledgeSnapshot, either kind only for a triple issued to the
   * session (CP-1-8, else NOT_ISSUED). positive: with the current epoch
   * (CP-2-6, else STALE_EPOCH) and a version not below the baseline (else
   * BASELINE_MISMATCH); sets the ACK baseline and opens the runtime
   * fence. Negative: closes the runtime fence (CP-1-10). Reply: epoch. */
  int64_t (*ack)(void *self, const char *worker_id, const char *session_id,
                 uint64_t version, uint64_t epoch,
                 const uint8_t checksum[CP_AUTH_DIGEST_LEN], int positive,
                 cp_auth_cb cb, void *arg);
  /* ReportRuntime: fence open (FENCE_CLOSED), version and epoch equal to
   * the baseline (BASELINE_MISMATCH, CP-2-13) and to the current epoch
   * (STALE_EPOCH), report_sequence strictly increasing (SEQ_SMALLER;
   * same sequence: REPLAY with the same digest, else SEQ_CONFLICT;
   * CP-2-9, CP-2-10). Accepted: the counters replace the session's
   * (n = 0: all zero, CP-1-9, CP-2-14; at most max_owned_per_worker),
   * expire after runtime_ttl, the session's TTL is renewed, and so are
   * the leases of the proxies the worker owns. Reply:
   * session_expires_ms and revoke: the owned proxies the last assign was
   * told are draining or removed (a drain signal only, CP-4-7). */
  int64_t (*report_runtime)(void *self, const char *worker_id,
                            const char *session_id, uint64_t report_sequence,
                            const uint8_t digest[CP_AUTH_DIGEST_LEN],
                            uint64_t version, uint64_t epoch,
                            const cp_auth_counter *counters, size_t n,
                            cp_auth_cb cb, void *arg);
  /* ReportOutcomes: the (session, sequence, SHA-256) fence (CP-1-30,
   * CP-5-11..14): REPLAY for the same digest, SEQ_CONFLICT for another,
   * SEQ_SMALLER below. One sequence and one digest per session, cleared
   * with it (CP-1-31, CP-5-18). Reply: sequence, the last acknowledged. */
  int64_t (*report_outcomes)(void *self, const char *worker_id,
                             const char *session_id, uint64_t sequence,
                             const uint8_t digest[CP_AUTH_DIGEST_LEN],
                             cp_auth_cb cb, void *arg);
  /* Ownership, run periodically (CP-1-16, CP-4-1, CP-4-4, CP-4-6).
   * usable: the proxies the store says are usable (at most
   * PH_POOL_PROXIES_MAX); draining: the ids the store marks draining or
   * removed. A usable proxy without an owner goes to a live worker
   * (one in its zone first, then any; the least owned capacity first;
   * at most max_owned_per_worker each; a proxy whose lease just ended
   * to another worker than its owner when one can take it). An
   * ownership ends when its lease (ownership_lease, renewed by accepted
   * runtime reports) expired, whatever the worker's session does, or,
   * for a draining proxy, when its
   * owner's current report, made on a snapshot built after the proxy
   * began draining and on the current epoch (CP-2-15), shows active and
   * reserved zero. Minor 3: rebalancing (issue 23 item 4): an owned
   * proxy that a worker reporting on the current epoch could take while
   * still owning less capacity than its owner would keep is marked
   * moving (its owner's snapshots mark it draining, owned(): reclaim);
   * its ownership ends as a draining one's, and the same step gives it
   * to that worker; at most rebalance_max move at once. The epoch rises
   * when anything changed. Reply: epoch, assigned, released, extracted,
   * moving, rebalance_limited. */
  int64_t (*assign)(void *self, const cp_auth_proxy *usable, size_t n_usable,
                    const char *const *draining, size_t n_draining,
                    cp_auth_cb cb, void *arg);
  /* The worker's owned proxies with their lease expiry, for its snapshot
   * (CP-1-16); STALE_SESSION when session_id is not current. Reply:
   * epoch, owned. */
  int64_t (*owned)(void *self, const char *worker_id, const char *session_id,
                   cp_auth_cb cb, void *arg);
  /* The counts of these proxies as the dispatcher may use them (CP-2-15,
   * CP-2-16); at most PH_POOL_PROXIES_MAX ids. Reply: epoch, usable. */
  int64_t (*usable)(void *self, const char *const *proxy_ids, size_t n,
                    cp_auth_cb cb, void *arg);
  /* Drops a pending call: its callback will not be called. PH_OK, or
   * PH_ENOENT when it is not pending (answered, cancelled, unknown). */
  int (*cancel)(void *self, int64_t call);

  /* ---- minor 1 ----------------------------------------------------- */
  /* Any time after init, loop thread: the cluster this instance serves
   * (its cluster_id; its keys are under ph:cp:{cluster_id}:), owned by
   * the module, valid until it is destroyed. Never NULL. The controller
   * compares it with its own at start (--check-config cannot when the
   * provider is an instance it does not name). */
  const char *(*cluster_id)(void *self);

  /* ---- minor 2 ----------------------------------------------------- */
  /* Exclusive extraction of one proxy (CP-1-5, CP-4-2..5), one atomic
   * step in Redis; proxy_id as for the other calls (the caller checks
   * that the store has it). The reply's extract_state is the state after
   * the call:
   *  - GET: EXTRACTED (extracted_ms), RECLAIMING (extract_owner) or
   *    AVAILABLE;
   *  - REQUEST: EXTRACTED at once when no worker owns the proxy (CP-4-5),
   *    idempotent when already EXTRACTED (the first extracted_ms);
   *    otherwise RECLAIMING: from then on the owner's snapshots mark the
   *    proxy draining (owned(): reclaim, CP-4-2), assign treats it as
   *    draining (the ownership ends once the owner's report on such a
   *    snapshot shows active and reserved zero, CP-4-3, CP-4-4, or when
   *    a crashed owner's session and lease lapsed, CP-4-6) and, in that
   *    same step, makes it EXTRACTED; assign never gives a RECLAIMING or
   *    EXTRACTED proxy to anyone. CP_AUTH_LIMIT when PH_POOL_PROXIES_MAX
   *    proxies are already RECLAIMING or EXTRACTED;
   *  - RELEASE: AVAILABLE (a pending reclaim is withdrawn); the next
   *    assign may give the proxy out again.
   * The control-plane protocol carries none of this (CP-1-4). */
  int64_t (*extract)(void *self, const char *proxy_id, cp_extract_op op,
                     cp_auth_cb cb, void *arg);

  /* ---- minor 4: checker sessions (issue 26, CP-6-1, CP-6-2) ---------- */
  /* Checkers are workers of a second kind: their sessions and fences are
   * kept apart from workers' (ph:cp:{c}:c:<checker_id>:session), so a
   * checker id may equal a worker id. */
  /* RegisterChecker: makes session_id the checker's only session
   * (server-side TTL session_ttl, like a worker's), keeping
   * max_concurrency and tiers (a bit mask) with it. CP_AUTH_LIMIT when
   * max_checkers other checkers hold a live session. Reply: epoch,
   * replaced, session_expires_ms. */
  int64_t (*register_checker)(void *self, const char *checker_id,
                              const char *instance_id, const char *zone,
                              const char *session_id, uint32_t max_checkers,
                              uint32_t max_concurrency, uint32_t tiers,
                              cp_auth_cb cb, void *arg);
  /* Renews the session's TTL while it is the checker's current one (else
   * STALE_SESSION). Reply: session_expires_ms, max_concurrency, tiers. */
  int64_t (*checker_alive)(void *self, const char *checker_id,
                           const char *session_id, cp_auth_cb cb, void *arg);
  /* ReportObservations: the same (session, sequence, SHA-256) fence as
   * report_outcomes (the same script), on the checker's session. */
  int64_t (*report_observations)(void *self, const char *checker_id,
                                 const char *session_id, uint64_t sequence,
                                 const uint8_t digest[CP_AUTH_DIGEST_LEN],
                                 cp_auth_cb cb, void *arg);
  /* ---- minor 5 ----------------------------------------------------- */
  /* The pool's health (CP-6-7), written by the controller's reducer
   * alone, one atomic step per change (lua/health.lua): proxy_id's
   * verdict becomes health (CONTROLPLANE__V1__PROXY_HEALTH__*: 1..3), or
   * none (0: the proxy left the pool or has no verdict). Every
   * controller's snapshots carry it (health_all); extract REQUEST refuses
   * a SUSPECT or UNHEALTHY proxy (reply extract_refused). */
  int64_t (*health_set)(void *self, const char *proxy_id, int health,
                        cp_auth_cb cb, void *arg);
  /* Every verdict in Redis (at most PH_POOL_PROXIES_MAX; more is
   * CP_AUTH_LIMIT). Reply: health, n_health. */
  int64_t (*health_all)(void *self, cp_auth_cb cb, void *arg);
  /* ---- minor 6 ----------------------------------------------------- */
  /* The controllers that schedule checks (issue 26 "Several
   * controllers", lua/members.lua): member_id's lease is renewed to
   * lease_ms from now (Redis time), or, lease_ms 0, member_id leaves.
   * Lapsed leases are dropped first. Reply: members, n_members (every
   * live one, sorted by id, at most CP_AUTH_MEMBERS_MAX), lease_end_ms;
   * CP_AUTH_LIMIT when CP_AUTH_MEMBERS_MAX others are live. */
  int64_t (*members)(void *self, const char *member_id, int64_t lease_ms,
                     cp_auth_cb cb, void *arg);
  /* ---- minor 7 ----------------------------------------------------- */
  /* Gateway outcomes that reached a controller which is not the proxies'
   * member, aggregated per proxy (lua/passive.lua): added to member_id's
   * hash of counters (ph:cp:{cluster}:passive:<member_id>), which lives
   * ttl_ms after the last push; a proxy new to the hash when it already
   * holds PH_POOL_PROXIES_MAX is dropped (reply passive_dropped). n is 1
   * to CP_AUTH_PASSIVE_PUSH_MAX. Nothing but the counters reaches Redis. */
  int64_t (*passive_push)(void *self, const char *member_id,
                          const cp_auth_passive *p, size_t n, int64_t ttl_ms,
                          cp_auth_cb cb, void *arg);
  /* member_id takes its hash in one atomic step (read and deleted).
   * Reply: passive, n_passive. */
  int64_t (*passive_take)(void *self, const char *member_id, cp_auth_cb cb,
                          void *arg);
} cp_authority_v1;

#endif
