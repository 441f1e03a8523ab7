/* SPDX-License-Identifier: BSD-2-Clause */
/* The checker's messages (issue 26): RegisterChecker, WatchCheckTasks and
 * ReportObservations requests packed, the register answer and each
 * CheckTask read into bounded copies (times as Unix ms here, at the
 * wire; CP-7-3: an unknown enum value or a missing deadline is refused).
 * Pure: no I/O; any thread. Fuzzed: t/fuzz/fuzz_chk_task.c. */
#ifndef PH_CHK_WIRE_H
#define PH_CHK_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/pool_store.h>

#include "chk_echo.h"
#include "chk_url.h"
#include "cp_common/snapshot/cp_buf.h"


#define CHK_TARGET_MAX (CHK_PATH_MAX + CHK_HOST_MAX + 16)
#define CHK_NONCE_MAX 128u

/* A task, copied out of its message. The credentials are malloc'ed and
 * wiped by chk_task_wipe (CP-1-18: memory only, wiped after). */
typedef struct chk_task {
  char task_id[PH_POOL_ID_MAX + 1], proxy_id[PH_POOL_ID_MAX + 1],
      target_group[PH_POOL_ID_MAX + 1];
  int tier, protocol;
  char host[CHK_HOST_MAX + 1];
  uint16_t port;
  char *user, *pass; /* NULL: none */
  uint32_t user_len, pass_len;
  char target[CHK_TARGET_MAX + 1];
  char echo_url[CHK_TARGET_MAX + 1];
  char nonce[CHK_NONCE_MAX + 1];
  int64_t deadline_ms;
} chk_task;

void chk_task_wipe(chk_task *t);

/* Reads a CheckTask. PH_OK; PH_EINVAL with *why (static) when it cannot
 * be run: then t->task_id and t->proxy_id are set when they were
 * well-formed (the checker answers CHECKER_ERROR bad_task for it), else
 * empty. PH_ENOMEM. */
int chk_read_task(const uint8_t *msg, size_t len, chk_task *t,
                  const char **why);

/* Called once per task of a message: rc and why as chk_read_task's; t is
 * the callee's (it moves or wipes the credentials). */
typedef void (*chk_task_fn)(void *arg, int rc, chk_task *t, const char *why);

/* Reads every task of one stream message (a CheckTask and its `more`,
 * unpacked once), fn for each in order; a task beyond max (the
 * max_tasks_per_message the checker asked for; 0 counts as 1) is
 * PH_EINVAL. Returns the number of tasks seen (1 for an unreadable
 * message, given to fn as PH_EINVAL with an empty task). */
int chk_read_tasks(const uint8_t *msg, size_t len, uint32_t max,
                   chk_task_fn fn, void *arg);

/* The same, each task read straight into dst(arg)'s chk_task (a free
 * slot's: no copy of the 3.4 KB) or, when dst returns NULL, into one of
 * the reader's own; fn gets that pointer. */
typedef chk_task *(*chk_task_dst_fn)(void *arg);
int chk_read_tasks_into(const uint8_t *msg, size_t len, uint32_t max,
                        chk_task_dst_fn dst, chk_task_fn fn, void *arg);

/* One observation (HealthObservation). */
typedef struct chk_obs {
  char task_id[PH_POOL_ID_MAX + 1], proxy_id[PH_POOL_ID_MAX + 1],
      target_group[PH_POOL_ID_MAX + 1];
  int tier, status, reason, anonymity;
  int64_t latency_ms, observed_at_ms;
  char egress_ip[CHK_ADDR_MAX];
} chk_obs;

int chk_pack_register(const char *cluster, const char *checker,
                      const char *instance, const char *zone,
                      uint32_t max_concurrency, const int *tiers,
                      size_t n_tiers, cp_buf *out);
/* max_tasks: WatchCheckTasksRequest.max_tasks_per_message. */
int chk_pack_watch(const char *checker, const char *session,
                   uint32_t max_tasks, cp_buf *out);

/* The batch obs[0..n) under seq, and its digest (cp_observation_digest:
 * checker_id and session_id left out). */
int chk_pack_observations(const char *checker, const char *session,
                          uint64_t seq, const chk_obs *obs, size_t n,
                          cp_buf *out, uint8_t digest[32]);

/* RegisterCheckerResponse: PH_OK with the session id and its TTL (0 when
 * the controller gave none), PH_EINVAL with *why. */
int chk_read_registered(const uint8_t *msg, size_t len, char *session,
                        size_t cap, int64_t *ttl_ms, const char **why);
/* ReportObservationsResponse: PH_OK with acknowledged_sequence. */
int chk_read_obs_ack(const uint8_t *msg, size_t len, uint64_t *acked);

#endif
