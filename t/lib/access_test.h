/* SPDX-License-Identifier: BSD-2-Clause */
/* The harness of the tests of an "access" provider (<proxyhost/access.h>:
 * auth_local, auth_cache) asked by a consumer module on the mock host:
 * one record per check's answer, the callback that fills it (and cancels
 * from inside it when asked to), and check_open bracketed so that an
 * answer given from inside the call is counted. The consumer's start sets
 * AT.vt and AT.self; AT.loop (optional) records the answering iteration.
 *
 *   access_answer a = {0};
 *   access_test_check(&req, &a);   ...   is_int(AT.called_inside, 0, ...);
 */
#ifndef PH_ACCESS_TEST_H
#define PH_ACCESS_TEST_H

#include <stdint.h>

#include <ev.h>
#include <proxyhost/access.h>

typedef struct access_answer {
  int calls;
  ph_access_result res;
  int64_t cancel_id;  /* cancelled from inside the callback when > 0 */
  int cancel_rc;      /* what that cancel returned */
  unsigned iteration; /* the loop iteration that answered (AT.loop set) */
} access_answer;

static struct {
  const ph_access_v1 *vt; /* the provider asked */
  void *self;
  struct ev_loop *loop; /* the running mock's, or NULL */
  int in_call;          /* set while check_open runs */
  int called_inside;    /* answers given from inside check_open */
} AT;

/* The callback: arg is the access_answer. */
static inline void access_test_on_answer(void *arg,
                                         const ph_access_result *res) {
  access_answer *a = arg;
  if (AT.in_call)
    AT.called_inside++;
  a->calls++;
  a->res = *res;
  if (AT.loop)
    a->iteration = ev_iteration(AT.loop);
  if (a->cancel_id > 0)
    a->cancel_rc = AT.vt->cancel(AT.self, a->cancel_id);
}

/* check_open of r into a: its id (or error). */
static inline int64_t access_test_check(const ph_access_request *r,
                                        access_answer *a) {
  AT.in_call = 1;
  int64_t id = AT.vt->check_open(AT.self, r, access_test_on_answer, a);
  AT.in_call = 0;
  return id;
}

#endif
