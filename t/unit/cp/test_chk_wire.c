/* SPDX-License-Identifier: BSD-2-Clause */
/* The checker's messages and observation queue (modules/checker/
 * chk_wire.h, chk_report.h; issue 26): a CheckTask read into bounded
 * copies (credentials included, wiped), RegisterChecker carrying
 * max_concurrency and tiers (CP-6-1), several tasks in one stream
 * message (CheckTask.more, up to max_tasks_per_message), batches numbered from 1 per session
 * with the digest of the batch without the checker and session ids, and
 * resent byte for byte until acknowledged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checker/chk_probe.h"
#include "checker/chk_report.h"
#include "checker/chk_wire.h"
#include "controlplane/v1/controlplane.pb-c.h"
#include "cp_common/view/cp_outcomes.h"
#include "tap.h"

static size_t pack_task(uint8_t *buf, int tier, const char *user) {
  Controlplane__V1__CheckTask t;
  controlplane__v1__check_task__init(&t);
  Controlplane__V1__Credential c;
  controlplane__v1__credential__init(&c);
  Google__Protobuf__Timestamp d;
  google__protobuf__timestamp__init(&d);
  d.seconds = 2000000000;
  t.task_id = "t1";
  t.proxy_id = "p1";
  t.tier = (Controlplane__V1__CheckTier)tier;
  t.protocol = CONTROLPLANE__V1__UPSTREAM_PROTOCOL__UPSTREAM_PROTOCOL_SOCKS5;
  t.host = "192.0.2.1";
  t.port = 1080;
  t.echo_url = "http://192.0.2.9:8089/";
  t.nonce = "abc";
  t.deadline = &d;
  if (user) {
    c.username = (char *)user;
    c.password = "pw";
    t.credential = &c;
  }
  return controlplane__v1__check_task__pack(&t, buf);
}

typedef struct seen {
  int n, ok, creds;
  char ids[4][8];
} seen;

static void on_task(void *arg, int rc, chk_task *t, const char *why) {
  seen *s = arg;
  (void)why;
  if (s->n < 4)
    snprintf(s->ids[s->n], sizeof(s->ids[0]), "%.7s", t->task_id);
  s->n++;
  s->ok += rc == 0;
  s->creds += t->user_len == 5;
  chk_task_wipe(t);
}

static chk_task into[2];
static const chk_task *into_got[3];
static int into_n, into_clean;

static chk_task *into_dst(void *arg) {
  (void)arg;
  return into_n < 2 ? &into[into_n] : NULL;
}

static void on_into(void *arg, int rc, chk_task *t, const char *why) {
  if (into_n < 3)
    into_got[into_n] = t;
  into_n++;
  into_clean += !t->target[0] && !t->target_group[0] && t->port == 1080 &&
                !strcmp(t->host, "192.0.2.1") && t->deadline_ms > 0;
  on_task(arg, rc, t, why);
}

/* Several tasks in one stream message, as the controller's coalescing
 * sends them: the first task's bytes, then each further one appended as
 * CheckTask.more (field 15), which is what protobuf-c packs too. */
static void test_batched(void) {
  uint8_t one[512], msg[2048];
  size_t len = pack_task(one, CHK_TIER_BASIC, "alice"), at = 0;
  for (int i = 0; i < 3; i++) {
    one[3] = (uint8_t)('1' + i); /* task_id "t1", "t2", "t3" */
    if (i) {
      msg[at++] = (15 << 3) | 2;
      msg[at++] = (uint8_t)len; /* < 128: one varint byte */
    }
    memcpy(msg + at, one, len);
    at += len;
  }
  Controlplane__V1__CheckTask *m =
      controlplane__v1__check_task__unpack(NULL, at, msg);
  ok(m && m->n_more == 2 && !strcmp(m->more[1]->task_id, "t3"),
     "CP-7-1 appended tasks are CheckTask.more to any protobuf reader");
  controlplane__v1__check_task__free_unpacked(m, NULL);
  seen s = {0};
  is_int(chk_read_tasks(msg, at, 3, on_task, &s), 3,
         "CP-6-2 one message, three tasks, unpacked once");
  ok(s.ok == 3 && s.creds == 3 && !strcmp(s.ids[0], "t1") &&
         !strcmp(s.ids[2], "t3"),
     "each task read in order with its own credentials");
  memset(&s, 0, sizeof(s));
  (void)chk_read_tasks(msg, at, 2, on_task, &s);
  ok(s.n == 3 && s.ok == 2 && !strcmp(s.ids[2], "t3"),
     "more tasks than max_tasks_per_message: the extra one refused, its "
     "id kept for the answer");
  memset(&s, 0, sizeof(s));
  (void)chk_read_tasks(msg, at, 0, on_task, &s);
  ok(s.ok == 1, "a checker that asked for no batching runs only the first");

  /* Read in place (round 5): each task straight into the caller's
   * chk_task, left full of the previous task's bytes (a reused slot); a
   * field the message lacks (target, target group) reads as absent. */
  into_n = 0;
  memset(into, 0xA5, sizeof(into));
  memset(&s, 0, sizeof(s));
  is_int(chk_read_tasks_into(msg, at, 2, into_dst, on_into, &s), 3,
         "CP-6-2 three tasks read in place");
  ok(s.ok == 2 && s.n == 3 && into_got[0] == &into[0] &&
         into_got[1] == &into[1] && into_got[2] != &into[0] &&
         into_got[2] != &into[1] && into_clean == 3,
     "each task in the chk_task dst gave (the reader's own once dst has "
     "none), every absent field empty, no leftover bytes read");
  cp_buf b = {0};
  ok(chk_pack_watch("k1", "s1", 64, &b) == 0, "watch packed");
  Controlplane__V1__WatchCheckTasksRequest *w =
      controlplane__v1__watch_check_tasks_request__unpack(NULL, b.len, b.data);
  ok(w && w->max_tasks_per_message == 64,
     "WatchCheckTasks says how many tasks a message may carry");
  controlplane__v1__watch_check_tasks_request__free_unpacked(w, NULL);
  cp_buf_free(&b);
}

int main(void) {
  plan_lazy();
  test_batched();
  uint8_t buf[1024];
  chk_task t;
  const char *why = NULL;
  size_t n = pack_task(buf, CHK_TIER_EGRESS, "alice");
  ok(chk_read_task(buf, n, &t, &why) == 0 && t.tier == CHK_TIER_EGRESS &&
         t.port == 1080 && !strcmp(t.nonce, "abc") &&
         t.deadline_ms == 2000000000000LL && t.user_len == 5 &&
         !memcmp(t.user, "alice", 5) && t.pass_len == 2,
     "CP-6-2 a task read with its deadline and its credentials");
  chk_task_wipe(&t);
  ok(!t.user && !t.pass, "credentials wiped and freed");
  n = pack_task(buf, 9, NULL);
  ok(chk_read_task(buf, n, &t, &why) != 0 && !strcmp(t.task_id, "t1"),
     "CP-7-3 an unknown tier is refused, its task id kept for the answer");
  ok(chk_read_task((const uint8_t *)"\xff\xff", 2, &t, &why) != 0,
     "bytes that are not a task are refused");

  cp_buf b = {0};
  int tiers[] = {CHK_TIER_BASIC, CHK_TIER_TARGET};
  ok(chk_pack_register("c", "k1", "i", "z", 48, tiers, 2, &b) == 0,
     "register packed");
  Controlplane__V1__RegisterCheckerRequest *r =
      controlplane__v1__register_checker_request__unpack(NULL, b.len, b.data);
  ok(r && r->max_concurrency == 48 && r->n_tiers == 2 &&
         r->tiers[1] == CONTROLPLANE__V1__CHECK_TIER__CHECK_TIER_TARGET &&
         !strcmp(r->checker_id, "k1"),
     "CP-6-1 RegisterChecker carries max_concurrency and the tiers");
  controlplane__v1__register_checker_request__free_unpacked(r, NULL);
  cp_buf_free(&b);

  chk_report q;
  ok(chk_report_init(&q, 4, 2) == 0, "a queue of 4, batches of 2");
  chk_obs o = {0};
  strcpy(o.task_id, "t");
  strcpy(o.proxy_id, "p");
  o.tier = CHK_TIER_BASIC;
  o.status = CHK_FAILED;
  o.reason = CHK_R_DIAL_REFUSED;
  for (int i = 0; i < 5; i++)
    chk_report_push(&q, &o);
  ok(q.len == 4 && q.dropped == 1, "the fifth is dropped and counted");
  const cp_buf *pb = NULL;
  ok(chk_report_next(&q, "k1", "s1", &pb) == 1 && q.seq == 1, "batch 1 cut");
  Controlplane__V1__ReportObservationsRequest *m =
      controlplane__v1__report_observations_request__unpack(NULL, pb->len,
                                                            pb->data);
  uint8_t d[32];
  ok(m && m->sequence == 1 && m->n_observations == 2 &&
         !strcmp(m->observations[0]->reason, "dial_refused") &&
         !strcmp(m->session_id, "s1") &&
         cp_observation_digest(m, d) == 0 && !memcmp(d, q.digest, 32),
     "CP-6-2 the batch: sequence, reason code, the digest without the ids");
  controlplane__v1__report_observations_request__free_unpacked(m, NULL);
  uint8_t *first = malloc(pb->len);
  size_t first_len = pb->len;
  memcpy(first, pb->data, pb->len);
  ok(chk_report_ack(&q, 0) == 0, "nothing acknowledged: still in flight");
  ok(chk_report_next(&q, "k1", "s1", &pb) == 1 && pb->len == first_len &&
         !memcmp(pb->data, first, first_len),
     "the batch goes again, the same bytes under the same sequence");
  free(first);
  ok(chk_report_ack(&q, 1) == 1, "acknowledged");
  ok(chk_report_next(&q, "k1", "s1", &pb) == 1 && q.seq == 2, "batch 2");
  chk_report_session(&q);
  ok(q.len == 2 && q.seq == 0, "a new session: the batch in flight is back");
  ok(chk_report_next(&q, "k1", "s2", &pb) == 1 && q.seq == 1,
     "and numbered from 1 again");
  chk_report_free(&q);
  return done_testing();
}
