/* SPDX-License-Identifier: BSD-2-Clause */
/* fakestore: an "access" provider for tests, driven by the test through a
 * second service, "fakestore.control" (this vtable). It stands for a
 * store (store_sqlite, store_pg) and injects its faults: answers on the
 * next loop turn, held until released, or (a contract breach) inside
 * check_open; any verdict, code and ttl_ms; a revision that rises, falls
 * or cannot be vouched for (PH_ESTATE); check_open refusing. It counts
 * what it was asked. Loop thread only, like "access". */
#ifndef PH_FAKESTORE_H
#define PH_FAKESTORE_H

#include <stdint.h>

#include <proxyhost/access.h>

#define FAKESTORE_CONTROL "fakestore.control"
#define FAKESTORE_MAX_HELD 65536 /* checks waiting; beyond: queue_full */

enum fakestore_mode {
  FS_NEXT_TURN = 0, /* answered by a timer on the next loop turn */
  FS_HOLD,          /* answered when the test calls release */
  FS_INSIDE         /* answered inside check_open (a broken store) */
};

typedef struct fakestore_control {
  void (*set_mode)(void *self, int mode);
  /* The answer to checks from now on (ALLOW, forbidden... ; ttl_ms). */
  void (*set_answer)(void *self, int verdict, int code, uint32_t ttl_ms);
  /* What revision() returns: rc PH_OK with rev, or PH_ESTATE. Verdicts
   * carry the revision current when their check started. */
  void (*set_revision)(void *self, uint64_t rev, int rc);
  /* Answers every held check now, oldest first; how many. */
  int (*release)(void *self);
  /* check_open returns status (< 0) once, instead of accepting. */
  void (*fail_next)(void *self, int status);
  int64_t (*calls)(void *self);   /* check_open calls accepted */
  int64_t (*cancels)(void *self); /* cancel calls that found their check */
  int64_t (*held)(void *self);    /* checks not answered yet */
  /* The last accepted request, as the store saw it (strings copied). */
  const ph_access_request *(*last)(void *self);
} fakestore_control;

#endif
