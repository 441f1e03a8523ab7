/* SPDX-License-Identifier: BSD-2-Clause */
/* The one scriptable fake authorizer of the unit tests: a
 * ph_authorizer_v1 (authorizer.h) whose verdicts a table of rows decides
 * per user (and password), counting checks, answers and cancels.
 *
 *   static const fa_row rows[] = {
 *       {.user = "alice", .pass = "secret", .verdict = PH_AUTH_ALLOW},
 *       {.user = "down", .pass = NULL, .verdict = PH_AUTH_UNAVAILABLE},
 *       {.user = "slow", .pass = NULL, .verdict = PH_AUTH_DENY, .delay_ms =
 * 5000},
 *       {.user = "sync", .pass = NULL, .verdict = PH_AUTH_DENY, .when =
 * FA_INSIDE},
 *       {.user = NULL}};                        anyone else: PH_AUTH_DENY
 *   static fake_authorizer FA;
 *   fake_authorizer_init(&FA, api, ctx, rows);  in a test module's init
 *   api->service_register(ctx, PH_AUTHORIZER_SERVICE, 1, 0,
 *                         &fake_authorizer_vt, &FA);
 *   ... FA.checks, FA.cancels, FA.answered, FA.last_user
 *   fake_authorizer_free(&FA);                  in its destroy
 *
 * The first row whose user matches (exactly, "*" for anyone) and whose
 * password matches (NULL: any) decides. Loop thread only; every answer
 * but FA_INSIDE's comes on a later loop turn. */
#ifndef PH_FAKE_AUTHORIZER_H
#define PH_FAKE_AUTHORIZER_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/authorizer.h>
#include <proxyhost/module.h>

typedef enum fa_when {
  FA_LATER = 0, /* a timer of delay_ms (1 if 0) */
  FA_INSIDE,    /* inside check_password, against authorizer.h's contract */
  FA_HELD,      /* when the test calls fake_authorizer_answer() */
  FA_NEVER      /* never: only a cancel ends it */
} fa_when;

typedef struct fa_row {
  const char *user; /* NULL ends the table */
  const char *pass; /* NULL: any password */
  int verdict;      /* PH_AUTH_* */
  fa_when when;
  int delay_ms;
} fa_row;

#define FA_MAX_PENDING 16

typedef struct fa_pending {
  struct fake_authorizer *fa;
  int64_t id; /* 0: free */
  int verdict;
  ph_auth_cb cb;
  void *arg;
  ph_timer *t;
} fa_pending;

typedef struct fake_authorizer {
  const ph_api *api;
  ph_ctx *ctx;
  const fa_row *rows;
  /* At most this many checks pending at once (0: FA_MAX_PENDING); one
   * more is refused with PH_EINVAL. */
  int max_pending;
  fa_pending p[FA_MAX_PENDING];
  int64_t next_id;
  int checks, answered, cancels;
  char last_user[64];
} fake_authorizer;

extern const ph_authorizer_v1 fake_authorizer_vt;

void fake_authorizer_init(fake_authorizer *fa, const ph_api *api, ph_ctx *ctx,
                          const fa_row *rows);
/* fake_authorizer_init, then fa registered as the host's authorizer
 * service (PH_AUTHORIZER_MAJOR.PH_AUTHORIZER_MINOR), in a test module's
 * init: what service_register returned (< 0: refused). */
int fake_authorizer_serve(fake_authorizer *fa, const ph_api *api, ph_ctx *ctx,
                          const fa_row *rows);
/* Answers the pending check id now, from inside this call, with
 * verdict. PH_OK, or PH_ENOENT when id is not pending. */
int fake_authorizer_answer(fake_authorizer *fa, int64_t id, int verdict);
/* Between cases: forgets what is pending (no callback runs) and the
 * counters; keeps the rows, the bound and the id sequence. */
void fake_authorizer_clear(fake_authorizer *fa);
/* Checks not answered nor cancelled yet. */
int fake_authorizer_pending(const fake_authorizer *fa);
/* Frees the timers of what is pending (no callback runs). */
void fake_authorizer_free(fake_authorizer *fa);

#endif
