/* SPDX-License-Identifier: BSD-2-Clause */
/* redis_ownership through the mock host against a real redis-server that
 * this test starts (t/lib/redis.sh, with a password: AUTH is exercised):
 * every fence rule of the cp.authority service as its own test, named by
 * its CP requirement; the races (a re-registration while the old session
 * still issues, a delayed report after a negative ACK, a killed worker
 * whose proxies move only after its session and its lease, a lease that
 * ends before the session or with a worker registering again without
 * ACKing: the proxies move when the lease ends); draining;
 * usable counts; Redis flushing its scripts, stopped, frozen and
 * restarted; and, after it all, a dump of every key and value, which must
 * hold no secret. Every wait is a bounded loop on a condition. */
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "contracts/cp_authority.h"
#include <proxyhost/mock.h>
#include "mock_test.h"
#include "tap.h"

#define MODULE PH_BUILD_MODULES "/redis_ownership/.libs/redis_ownership.so"
#define REDIS_SH PH_TEST_LIBDIR "/redis.sh"
#define PASSWORD "redis-auth-Zq81xv"
/* A proxy password the authority never receives: it must not be in
 * Redis either (nothing carries credentials to it). */
#define PROXY_SECRET "proxy-pass-Kd93hw"

static char rdir[512];
static int rport;
static redisContext *rc; /* the test's own view of Redis */

static ph_mock *M;
static const cp_authority_v1 *A;
static void *S;
static char err[8192];

/* ---- redis-server and a direct connection -------------------------- */

static int redis_sh(const char *cmd) {
  char line[1024];
  snprintf(line, sizeof(line), "REDIS_PASSWORD=%s sh %s %s %s >/dev/null",
           PASSWORD, REDIS_SH, cmd, rdir);
  return system(line);
}

static int direct_connect(void) {
  if (rc)
    redisFree(rc);
  rc = redisConnect("127.0.0.1", rport);
  if (!rc || rc->err)
    return -1;
  redisReply *r = redisCommand(rc, "AUTH %s", PASSWORD);
  int ok_ = r && r->type == REDIS_REPLY_STATUS;
  freeReplyObject(r);
  return ok_ ? 0 : -1;
}

static redisReply *rcmd(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  redisReply *r = redisvCommand(rc, fmt, ap);
  va_end(ap);
  return r;
}

static long long rint_(const char *fmt, const char *a) {
  redisReply *r = rcmd(fmt, a);
  long long v = -999;
  if (r && r->type == REDIS_REPLY_INTEGER)
    v = r->integer;
  else if (r && r->type == REDIS_REPLY_STRING)
    v = atoll(r->str);
  freeReplyObject(r);
  return v;
}

/* HGET key field as a string ("" when absent) into out. */
static const char *rhget(const char *key, const char *field, char *out,
                         size_t n) {
  redisReply *r = rcmd("HGET %s %s", key, field);
  snprintf(out, n, "%s", r && r->type == REDIS_REPLY_STRING ? r->str : "");
  freeReplyObject(r);
  return out;
}

static long long redis_time_ms(void) {
  redisReply *r = rcmd("TIME");
  long long v = -1;
  if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2)
    v = atoll(r->element[0]->str) * 1000 + atoll(r->element[1]->str) / 1000;
  freeReplyObject(r);
  return v;
}

static int start_redis(void) {
  char tmpl[] = "/tmp/ph-redis-test.XXXXXX";
  if (!mkdtemp(tmpl))
    return -1;
  snprintf(rdir, sizeof(rdir), "%s/r", tmpl);
  char line[1024];
  snprintf(line, sizeof(line), "REDIS_PASSWORD=%s sh %s start %s", PASSWORD,
           REDIS_SH, rdir);
  FILE *p = popen(line, "r");
  if (!p)
    return -1;
  if (fscanf(p, "%d", &rport) != 1)
    rport = 0;
  int rc_ = pclose(p);
  return rc_ == 0 && rport > 0 ? direct_connect() : -1;
}

static void stop_redis_all(void) {
  if (rdir[0]) {
    redis_sh("stop");
    char line[1024];
    snprintf(line, sizeof(line), "rm -rf %.500s", rdir);
    char *slash = strrchr(line, '/');
    if (slash)
      *slash = 0; /* the mkdtemp directory */
    if (system(line) != 0)
      printf("# could not remove the test directory\n");
  }
}

static int redis_pid(void) {
  char path[600];
  snprintf(path, sizeof(path), "%s/redis.pid", rdir);
  FILE *f = fopen(path, "r");
  int pid = 0;
  if (f) {
    if (fscanf(f, "%d", &pid) != 1)
      pid = 0;
    fclose(f);
  }
  return pid;
}

/* ---- the module ----------------------------------------------------- */

static int start_mod(const char *cluster, const char *extra) {
  char text[4096];
  snprintf(text, sizeof(text),
           "[proxyhost]\nmodules = %s\n"
           "[redis_ownership]\naddress = 127.0.0.1:%d\npassword = %s\n"
           "cluster_id = %s\ncommand_timeout = 500ms\n%s%s%s",
           MODULE, rport, PASSWORD, cluster,
           strstr(extra, "reconnect.")
               ? ""
               : "reconnect.min = 50ms\nreconnect.max = 400ms\n",
           /* each test's cluster is fresh: no hold unless it tests it */
           strstr(extra, "hold_fresh_state") ? "" : "hold_fresh_state = false\n",
           extra);
  err[0] = '\0';
  M = mock_test_boot(text, NULL, err, sizeof err);
  if (!M) {
    printf("# %s", err[0] ? err : "(no reason)\n");
    M = NULL;
    return -1;
  }
  A = ph_mock_service(M, CP_AUTHORITY_SERVICE, NULL, CP_AUTHORITY_MAJOR,
                      CP_AUTHORITY_MINOR, &S);
  for (int i = 0; i < 200 && !ph_mock_ready(M); i++)
    ph_mock_run_for(M, 10);
  return A && ph_mock_ready(M) ? 0 : -1;
}

static void stop_mod(void) {
  if (M) {
    ph_mock_stop(M);
    ph_mock_free(M);
  }
  M = NULL;
  A = NULL;
}

/* A reply, copied out of the callback. */
typedef struct got {
  int calls;
  int result;
  uint64_t epoch, version, sequence;
  uint32_t max_concurrency, tiers; /* minor 4: checker_alive */
  int replaced;
  int64_t expires;
  size_t n_revoke, n_owned, n_usable;
  char revoke[32][PH_POOL_ID_MAX + 1];
  char owned[32][PH_POOL_ID_MAX + 1];
  int64_t lease[32];
  char owner[32][PH_POOL_ID_MAX + 1];
  int valid[32];
  uint32_t active[32], reserved[32];
  uint32_t assigned, released, extracted;
  int reclaim[32];
  int xstate;
  int64_t xms;
  char xowner[PH_POOL_ID_MAX + 1];
  int xrefused;
  size_t n_health;
  char hid[32][PH_POOL_ID_MAX + 1];
  int health[32];
  size_t n_members; /* minor 6 */
  char member[32][PH_POOL_ID_MAX + 1];
  int64_t lease_end;
  size_t n_passive; /* minor 7 */
  char pid[32][PH_POOL_ID_MAX + 1];
  uint32_t pfail[32], pok[32], pdropped;
  char zone[PH_POOL_ID_MAX + 1]; /* minor 8: owned, checker_alive */
  uint32_t n_reclaiming, n_extracted; /* minor 8: assign */
} got;

static void on_reply(void *arg, const cp_auth_reply *r) {
  got *g = arg;
  g->calls++;
  g->result = r->result;
  g->epoch = r->epoch;
  g->version = r->version;
  g->sequence = r->sequence;
  g->replaced = r->replaced;
  g->expires = r->session_expires_ms;
  g->assigned = r->assigned;
  g->released = r->released;
  g->extracted = r->extracted;
  g->max_concurrency = r->max_concurrency;
  g->tiers = r->tiers;
  g->xstate = (int)r->extract_state;
  g->xms = r->extracted_ms;
  snprintf(g->xowner, sizeof(g->xowner), "%s",
           r->extract_owner ? r->extract_owner : "");
  g->xrefused = r->extract_refused;
  g->n_members = r->n_members < 32 ? r->n_members : 32;
  for (size_t i = 0; i < g->n_members; i++)
    snprintf(g->member[i], sizeof(g->member[i]), "%s", r->members[i]);
  g->lease_end = r->lease_end_ms;
  g->n_passive = r->n_passive < 32 ? r->n_passive : 32;
  for (size_t i = 0; i < g->n_passive; i++) {
    snprintf(g->pid[i], sizeof(g->pid[i]), "%s", r->passive[i].proxy_id);
    g->pfail[i] = r->passive[i].fail_units;
    g->pok[i] = r->passive[i].ok_units;
  }
  g->pdropped = r->passive_dropped;
  snprintf(g->zone, sizeof(g->zone), "%s", r->zone ? r->zone : "(null)");
  g->n_reclaiming = r->n_reclaiming;
  g->n_extracted = r->n_extracted;
  g->n_health = r->n_health < 32 ? r->n_health : 32;
  for (size_t i = 0; i < g->n_health; i++) {
    snprintf(g->hid[i], sizeof(g->hid[i]), "%s", r->health[i].proxy_id);
    g->health[i] = r->health[i].health;
  }
  g->n_revoke = r->n_revoke < 32 ? r->n_revoke : 32;
  for (size_t i = 0; i < g->n_revoke; i++)
    snprintf(g->revoke[i], sizeof(g->revoke[i]), "%s", r->revoke[i]);
  g->n_owned = r->n_owned < 32 ? r->n_owned : 32;
  for (size_t i = 0; i < g->n_owned; i++) {
    snprintf(g->owned[i], sizeof(g->owned[i]), "%s", r->owned[i].proxy_id);
    g->lease[i] = r->owned[i].lease_until_ms;
    g->reclaim[i] = r->owned[i].reclaim;
  }
  g->n_usable = r->n_usable < 32 ? r->n_usable : 32;
  for (size_t i = 0; i < g->n_usable; i++) {
    snprintf(g->owner[i], sizeof(g->owner[i]), "%s", r->usable[i].owner);
    g->valid[i] = r->usable[i].valid;
    g->active[i] = r->usable[i].active;
    g->reserved[i] = r->usable[i].reserved;
  }
}

/* Answers that came from inside the call itself (the contract says never). */
static int inline_answers;

/* Runs the loop until call id answered (bounded: 4 s of loop). */
static got wait_raw(int64_t id, got *g) {
  if (id <= 0) {
    g->result = (int)id - 1000; /* a refusal: never a cp_auth_result */
    return *g;
  }
  for (int i = 0; i < 400 && g->calls == 0; i++)
    ph_mock_run_for(M, 10);
  if (g->calls != 1)
    g->result = -1;
  return *g;
}

/* wait_raw, and first: the call did not answer from inside itself. */
static got wait_for(int64_t id, got *g) {
  if (id > 0 && g->calls != 0)
    inline_answers++;
  return wait_raw(id, g);
}

/* The reply buffer of the call being made: CALL sets it, then evaluates
 * the call, which passes it as its callback's arg. */
static got ring[4];
static int ring_at;
static got *G;
static got *fresh(void) {
  got *g = &ring[ring_at++ % 4];
  memset(g, 0, sizeof(*g));
  return g;
}
#define CALL(expr) (G = fresh(), wait_for((expr), G))

static void d32(uint8_t d[32], int b) { memset(d, b, 32); }

static got reg(const char *w, const char *zone, const char *s) {
  return CALL(A->register_worker(S, w, "inst1", zone, s, on_reply, G));
}

/* Register, a new version, issue it and ACK it: the fence is open. */
static int acked(const char *w, const char *zone, const char *s,
                 uint64_t *version, uint64_t *epoch) {
  got r = reg(w, zone, s);
  got v = CALL(A->next_version(S, on_reply, G));
  uint8_t ck[32];
  d32(ck, 0x11);
  got i = CALL(A->issue(S, w, s, v.version, r.epoch, ck, on_reply, G));
  got a = CALL(A->ack(S, w, s, v.version, r.epoch, ck, 1, on_reply, G));
  *version = v.version;
  *epoch = r.epoch;
  return r.result == CP_AUTH_OK && v.result == CP_AUTH_OK &&
                 i.result == CP_AUTH_OK && a.result == CP_AUTH_OK
             ? 0
             : -1;
}

/* A new version issued and acked on an existing session. */
static int reack(const char *w, const char *s, uint64_t epoch,
                 uint64_t *version) {
  got v = CALL(A->next_version(S, on_reply, G));
  uint8_t ck[32];
  d32(ck, 0x12);
  got i = CALL(A->issue(S, w, s, v.version, epoch, ck, on_reply, G));
  got a = CALL(A->ack(S, w, s, v.version, epoch, ck, 1, on_reply, G));
  *version = v.version;
  return i.result == CP_AUTH_OK && a.result == CP_AUTH_OK ? 0 : -1;
}

static got report(const char *w, const char *s, uint64_t seq, int dig,
                  uint64_t v, uint64_t e, const cp_auth_counter *c,
                  size_t n) {
  uint8_t d[32];
  d32(d, dig);
  return CALL(A->report_runtime(S, w, s, seq, d, v, e, c, n, on_reply, G));
}

static got outcomes(const char *w, const char *s, uint64_t seq, int dig) {
  uint8_t d[32];
  d32(d, dig);
  return CALL(A->report_outcomes(S, w, s, seq, d, on_reply, G));
}

static got assign(const cp_auth_proxy *p, size_t n, const char *const *dr,
                  size_t nd) {
  return CALL(A->assign(S, p, n, dr, nd, on_reply, G));
}

static got owned(const char *w, const char *s) {
  return CALL(A->owned(S, w, s, on_reply, G));
}

static got usable(const char *const *ids, size_t n) {
  return CALL(A->usable(S, ids, n, on_reply, G));
}

static got extract(const char *id, cp_extract_op op) {
  return CALL(A->extract(S, id, op, on_reply, G));
}

/* The reclaim mark owned() gives id, or -1 when id is not owned. */
static int reclaim_of(const got *g, const char *id) {
  for (size_t i = 0; i < g->n_owned; i++)
    if (strcmp(g->owned[i], id) == 0)
      return g->reclaim[i];
  return -1;
}

/* How many of g's owned proxies are marked draining (reclaim). */
static int n_marked(const got *g) {
  int n = 0;
  for (size_t i = 0; i < g->n_owned; i++)
    n += g->reclaim[i];
  return n;
}

static int has(const got *g, const char *id) {
  for (size_t i = 0; i < g->n_owned; i++)
    if (strcmp(g->owned[i], id) == 0)
      return 1;
  return 0;
}

/* ---- the fences ----------------------------------------------------- */

static void test_sessions(void) {
  if (start_mod("c-sess", "session_ttl = 5s\nmax_issued_refs = 3\n") < 0) {
    ok(0, "module starts against redis-server");
    return;
  }
  is_str(A->cluster_id(S), "c-sess",
         "cluster_id (minor 1): the cluster this instance serves");
  char sid[CP_AUTH_SESSION_HEX + 1], sid2[CP_AUTH_SESSION_HEX + 1];
  is_int(A->new_session_id(sid), PH_OK, "new_session_id");
  A->new_session_id(sid2);
  ok(strlen(sid) == 32 && strspn(sid, "0123456789abcdef") == 32 &&
         strcmp(sid, sid2) != 0,
     "session ids: 128 random bits, lower-case hex, different each time");

  got r = reg("w1", "za", sid);
  is_int(r.result, CP_AUTH_OK, "CP-2-1: register answers");
  ok(r.epoch >= 1, "CP-2-1: register returns the current ownership epoch");
  ok(!r.replaced, "CP-2-1: a first session replaces nothing");
  long long pttl = rint_("PTTL %s", "ph:cp:{c-sess}:w:w1:session");
  ok(pttl > 0 && pttl <= 5000,
     "CP-1-7: the session has a Redis server-side TTL (session_ttl)");
  ok(r.expires > 0, "CP-1-7: register tells when the session expires");

  got v1 = CALL(A->next_version(S, on_reply, G));
  got v2 = CALL(A->next_version(S, on_reply, G));
  ok(v1.result == CP_AUTH_OK && v2.version == v1.version + 1,
     "CP-3-1: next_version is monotonic per cluster");

  uint8_t ck[32], other[32];
  d32(ck, 0xa1);
  d32(other, 0xa2);
  got i = CALL(A->issue(S, "w1", sid, v1.version, r.epoch, ck, on_reply, G));
  is_int(i.result, CP_AUTH_OK, "CP-1-36: issue with the current session");
  i = CALL(A->issue(S, "w1", "not-current", v2.version, r.epoch, ck, on_reply,
                    G));
  is_int(i.result, CP_AUTH_STALE_SESSION,
         "CP-1-36: issue with another session fails");
  is_int(cp_auth_grpc_status(i.result), 9,
         "CP-2-8: ... as FAILED_PRECONDITION");

  got a = CALL(A->ack(S, "w1", sid, v1.version, r.epoch, other, 1, on_reply,
                      G));
  is_int(a.result, CP_AUTH_NOT_ISSUED,
         "CP-1-8: a positive ACK of a checksum never issued is rejected");
  a = CALL(A->ack(S, "w1", sid, v2.version, r.epoch, ck, 1, on_reply, G));
  is_int(a.result, CP_AUTH_NOT_ISSUED,
         "CP-1-8: a positive ACK of a version never issued is rejected");
  a = CALL(A->ack(S, "w1", sid, v1.version, r.epoch + 1, ck, 1, on_reply, G));
  is_int(a.result, CP_AUTH_NOT_ISSUED,
         "CP-1-8: a positive ACK of an epoch never issued is rejected");

  got rt = report("w1", sid, 1, 1, v1.version, r.epoch, NULL, 0);
  is_int(rt.result, CP_AUTH_FENCE_CLOSED,
         "CP-1-10: no runtime report before a positive ACK");

  a = CALL(A->ack(S, "w1", sid, v1.version, r.epoch, ck, 1, on_reply, G));
  is_int(a.result, CP_AUTH_OK, "CP-1-8: the issued triple is accepted");

  /* The reference set is bounded: the oldest drop out. */
  uint64_t vs[5];
  for (int k = 0; k < 5; k++) {
    got v = CALL(A->next_version(S, on_reply, G));
    vs[k] = v.version;
    CALL(A->issue(S, "w1", sid, vs[k], r.epoch, ck, on_reply, G));
  }
  is_int(rint_("ZCARD %s", "ph:cp:{c-sess}:w:w1:refs"), 3,
         "max_issued_refs bounds the issued references");
  a = CALL(A->ack(S, "w1", sid, vs[0], r.epoch, ck, 1, on_reply, G));
  is_int(a.result, CP_AUTH_NOT_ISSUED,
         "CP-1-8: a dropped (oldest) reference is no longer accepted");
  a = CALL(A->ack(S, "w1", sid, vs[4], r.epoch, ck, 1, on_reply, G));
  is_int(a.result, CP_AUTH_OK, "CP-1-8: the newest reference is accepted");
  a = CALL(A->ack(S, "w1", sid, vs[3], r.epoch, ck, 1, on_reply, G));
  is_int(a.result, CP_AUTH_BASELINE_MISMATCH,
         "CP-2-13: a positive ACK older than the baseline is rejected");

  /* Runtime fence. */
  uint64_t base = vs[4], ep = r.epoch;
  cp_auth_counter c1[] = {{"p1", 3, 1, 0}};
  rt = report("w1", sid, 5, 5, base, ep, c1, 1);
  is_int(rt.result, CP_AUTH_OK, "CP-2-13: a report on the baseline");
  ok(rt.expires > 0, "CP-1-9: an accepted report renews the session TTL");
  rt = report("w1", sid, 6, 6, base + 1, ep, c1, 1);
  is_int(rt.result, CP_AUTH_BASELINE_MISMATCH,
         "CP-2-13: a version ahead of the baseline is rejected");
  rt = report("w1", sid, 6, 6, base, ep + 1, c1, 1);
  is_int(rt.result, CP_AUTH_BASELINE_MISMATCH,
         "CP-2-13: an epoch ahead of the baseline is rejected");
  rt = report("w1", sid, 6, 6, base - 1, ep, c1, 1);
  is_int(rt.result, CP_AUTH_BASELINE_MISMATCH,
         "CP-2-13: a version behind the baseline is rejected");

  char buf[128];
  cp_auth_counter c7[] = {{"p1", 7, 0, 0}};
  rt = report("w1", sid, 5, 5, base, ep, c7, 1);
  is_int(rt.result, CP_AUTH_REPLAY,
         "CP-2-10: same sequence, same digest: an idempotent replay");
  is_str(rhget("ph:cp:{c-sess}:w:w1:counts", "p:p1", buf, sizeof(buf)),
         "3:1:0", "CP-2-10: a replay is not applied again");
  rt = report("w1", sid, 5, 9, base, ep, c1, 1);
  is_int(rt.result, CP_AUTH_SEQ_CONFLICT,
         "CP-2-10: same sequence, other digest: rejected");
  is_int(cp_auth_grpc_status(rt.result), 6, "CP-2-10: ... ALREADY_EXISTS");
  rt = report("w1", sid, 4, 4, base, ep, c1, 1);
  is_int(rt.result, CP_AUTH_SEQ_SMALLER,
         "CP-2-9: a smaller sequence is rejected");
  is_int(cp_auth_grpc_status(rt.result), 10, "CP-2-9: ... ABORTED");
  rt = report("w1", sid, 7, 7, base, ep, NULL, 0);
  is_int(rt.result, CP_AUTH_OK, "CP-2-9: a larger sequence is accepted");
  is_str(rhget("ph:cp:{c-sess}:w:w1:counts", "p:p1", buf, sizeof(buf)), "",
         "CP-1-9, CP-2-14: an empty report replaces every counter (zero)");
  is_str(rhget("ph:cp:{c-sess}:w:w1:counts", "m:session", buf, sizeof(buf)),
         sid, "CP-2-14: ... and still records the session's report");
  pttl = rint_("PTTL %s", "ph:cp:{c-sess}:w:w1:counts");
  ok(pttl > 0, "the counters expire server-side (runtime_ttl)");

  /* Issue 23 item 7: a negative ACK is an ACK too; only a triple the
   * controller issued may close the fence (CP-1-8). */
  a = CALL(A->ack(S, "w1", sid, base, ep, other, 0, on_reply, G));
  is_int(a.result, CP_AUTH_NOT_ISSUED,
         "CP-1-8 (issue 23 item 7): a negative ACK of a checksum never "
         "issued is rejected");
  a = CALL(A->ack(S, "w1", sid, base + 1000, ep, ck, 0, on_reply, G));
  is_int(a.result, CP_AUTH_NOT_ISSUED,
         "CP-1-8 (issue 23 item 7): ... of a version never issued");
  a = CALL(A->ack(S, "w1", sid, base, ep + 1, ck, 0, on_reply, G));
  is_int(a.result, CP_AUTH_NOT_ISSUED,
         "CP-1-8 (issue 23 item 7): ... of an epoch never issued");
  rt = report("w1", sid, 8, 8, base, ep, NULL, 0);
  is_int(rt.result, CP_AUTH_OK,
         "CP-1-8 (issue 23 item 7): ... and the fence stays open");

  /* Negative ACK closes the fence; a delayed old report never reopens it. */
  a = CALL(A->ack(S, "w1", sid, base, ep, ck, 0, on_reply, G));
  is_int(a.result, CP_AUTH_OK, "CP-1-10: a negative ACK is taken");
  rt = report("w1", sid, 8, 8, base, ep, NULL, 0);
  is_int(rt.result, CP_AUTH_FENCE_CLOSED,
         "CP-1-10: after a negative ACK runtime writes are rejected");
  rt = report("w1", sid, 6, 6, base, ep, c1, 1);
  is_int(rt.result, CP_AUTH_FENCE_CLOSED,
         "CP-1-10: a delayed older report is rejected too");
  rt = report("w1", sid, 9, 9, base, ep, NULL, 0);
  is_int(rt.result, CP_AUTH_FENCE_CLOSED,
         "CP-1-10: ... and did not reopen the fence");
  a = CALL(A->ack(S, "w1", sid, base, ep, ck, 1, on_reply, G));
  rt = report("w1", sid, 10, 10, base, ep, NULL, 0);
  is_int(rt.result, CP_AUTH_OK, "CP-1-10: a new positive ACK reopens it");

  /* Outcomes. */
  got o = outcomes("w1", sid, 3, 0x33);
  ok(o.result == CP_AUTH_OK && o.sequence == 3,
     "CP-1-30: an outcome batch is acknowledged with its sequence");
  o = outcomes("w1", sid, 3, 0x33);
  ok(o.result == CP_AUTH_REPLAY && o.sequence == 3,
     "CP-5-12: same sequence, same digest: an idempotent replay");
  o = outcomes("w1", sid, 3, 0x34);
  is_int(o.result, CP_AUTH_SEQ_CONFLICT,
         "CP-5-13: same sequence, other digest rejected");
  is_int(cp_auth_grpc_status(o.result), 6, "CP-5-13: ... ALREADY_EXISTS");
  o = outcomes("w1", sid, 2, 0x22);
  ok(o.result == CP_AUTH_SEQ_SMALLER && o.sequence == 3,
     "CP-5-14: a smaller sequence is rejected; the last acknowledged is 3");
  is_int(cp_auth_grpc_status(o.result), 10, "CP-5-14: ... ABORTED");
  o = outcomes("w1", sid, 4, 0x44);
  ok(o.result == CP_AUTH_OK && o.sequence == 4,
     "CP-5-11: increasing sequences are accepted");
  o = outcomes("w1", "old", 5, 0x55);
  is_int(o.result, CP_AUTH_STALE_SESSION,
         "CP-2-5: outcomes of a non-current session are rejected");
  char d44[65];
  memset(d44, '4', 64);
  d44[64] = 0;
  is_str(rhget("ph:cp:{c-sess}:w:w1:session", "out_digest", buf, sizeof(buf)),
         d44, "CP-1-31: Redis keeps one digest (SHA-256 hex) per session");
  is_str(rhget("ph:cp:{c-sess}:w:w1:session", "out_seq", buf, sizeof(buf)),
         "4", "CP-1-31: ... and one sequence");
  is_int(rint_("PTTL %s", "ph:cp:{c-sess}:w:w1:session") > 0, 1,
         "CP-5-18: the outcome fence has no TTL of its own (the session's)");

  /* Re-registration replaces all of it. */
  r = reg("w1", "za", sid2);
  ok(r.result == CP_AUTH_OK && r.replaced,
     "CP-2-7: re-registering replaces the session");
  o = outcomes("w1", sid2, 1, 0x01);
  ok(o.result == CP_AUTH_OK && o.sequence == 1,
     "CP-5-18: the outcome fence is cleared with session replacement");
  a = CALL(A->ack(S, "w1", sid2, base, ep, ck, 1, on_reply, G));
  is_int(a.result, CP_AUTH_NOT_ISSUED,
         "CP-2-7: the issued references are cleared");
  rt = report("w1", sid2, 11, 11, base, ep, NULL, 0);
  is_int(rt.result, CP_AUTH_FENCE_CLOSED,
         "CP-2-7: the ACK baseline and runtime fence are cleared");
  is_int(rint_("EXISTS %s", "ph:cp:{c-sess}:w:w1:counts"), 0,
         "CP-2-7: the runtime counters are cleared");
  rt = report("w1", sid, 12, 12, base, ep, NULL, 0);
  is_int(rt.result, CP_AUTH_STALE_SESSION,
         "CP-2-5: the replaced session's reports are rejected");
  stop_mod();
}

/* An old stream keeps issuing after its session was replaced (CP-2-8). */
static void test_replaced_race(void) {
  if (start_mod("c-race", "") < 0) {
    ok(0, "module starts");
    return;
  }
  uint64_t v_old, ep;
  acked("w1", "za", "s-old", &v_old, &ep);
  got r = reg("w1", "za", "s-new");
  uint64_t v_new;
  ok(r.replaced && reack("w1", "s-new", ep, &v_new) == 0,
     "CP-2-8: the new session has its own baseline");
  char before[64], after[64], ckb[80], cka[80];
  rhget("ph:cp:{c-race}:w:w1:session", "base_version", before, sizeof(before));
  rhget("ph:cp:{c-race}:w:w1:session", "base_checksum", ckb, sizeof(ckb));
  uint8_t ck[32];
  d32(ck, 0x77);
  got v = CALL(A->next_version(S, on_reply, G));
  /* The old stream's calls, interleaved while the new one works. */
  int64_t ids[3];
  static got gi, ga, gr;
  memset(&gi, 0, sizeof(gi));
  memset(&ga, 0, sizeof(ga));
  memset(&gr, 0, sizeof(gr));
  uint8_t dg[32];
  d32(dg, 0x01);
  ids[0] = A->issue(S, "w1", "s-old", v.version, ep, ck, on_reply, &gi);
  ids[1] = A->ack(S, "w1", "s-old", v.version, ep, ck, 1, on_reply, &ga);
  ids[2] = A->report_runtime(S, "w1", "s-old", 100, dg, v_old, ep, NULL, 0,
                             on_reply, &gr);
  ok(gi.calls + ga.calls + gr.calls == 0,
     "the old stream's calls are all in flight at once");
  got rn = report("w1", "s-new", 1, 1, v_new, ep, NULL, 0);
  wait_raw(ids[0], &gi);
  wait_raw(ids[1], &ga);
  wait_raw(ids[2], &gr);
  is_int(gi.result, CP_AUTH_STALE_SESSION,
         "CP-2-8: the old session's issue fails (FAILED_PRECONDITION)");
  is_int(ga.result, CP_AUTH_STALE_SESSION,
         "CP-2-8: the old session's ACK fails (FAILED_PRECONDITION)");
  is_int(gr.result, CP_AUTH_STALE_SESSION,
         "CP-2-5: the old session's report fails (FAILED_PRECONDITION)");
  is_int(rn.result, CP_AUTH_OK, "CP-2-8: the new session reports meanwhile");
  rhget("ph:cp:{c-race}:w:w1:session", "base_version", after, sizeof(after));
  rhget("ph:cp:{c-race}:w:w1:session", "base_checksum", cka, sizeof(cka));
  ok(strcmp(before, after) == 0 && strcmp(ckb, cka) == 0,
     "CP-2-8: the new session's ACK baseline is untouched");
  redisReply *z = rcmd("ZRANGE %s 0 -1", "ph:cp:{c-race}:w:w1:refs");
  int found = 0;
  for (size_t k = 0; z && k < z->elements; k++)
    if (atoll(z->element[k]->str) == (long long)v.version)
      found = 1;
  freeReplyObject(z);
  ok(!found, "CP-2-8: the old issue left no reference for the new session");
  stop_mod();
}

/* ---- ownership ------------------------------------------------------ */

static void test_assign(void) {
  if (start_mod("c-own", "max_owned_per_worker = 2\n") < 0) {
    ok(0, "module starts");
    return;
  }
  uint64_t v1, v2, ep;
  acked("w1", "za", "s1", &v1, &ep);
  acked("w2", "zb", "s2", &v2, &ep);
  cp_auth_proxy ps[] = {{"pa", 10, "za"}, {"pb", 10, "zb"}, {"pc", 50, "zc"},
                        {"pd", 5, "zc"},  {"pe", 5, "zc"}};
  got a = assign(ps, 5, NULL, 0);
  ok(a.result == CP_AUTH_OK && a.assigned == 4,
     "CP-1-16: assign gives unowned proxies to live workers, at most "
     "max_owned_per_worker each");
  ok(a.epoch > ep, "CP-4-1: the ownership epoch rises when ownership changes");
  got o1 = owned("w1", "s1"), o2 = owned("w2", "s2");
  ok(has(&o1, "pa") && has(&o2, "pb"),
     "CP-1-16: a worker in the proxy's zone is preferred");
  ok(o1.n_owned == 2 && o2.n_owned == 2,
     "CP-1-16: the ownership index is bounded per worker");
  ok((has(&o1, "pc") && !has(&o1, "pd") && !has(&o1, "pe")) ||
         (has(&o2, "pc") && !has(&o2, "pd") && !has(&o2, "pe")),
     "CP-1-16: by capacity: the worker with the least owned capacity first");
  int dup = 0;
  for (size_t i = 0; i < o1.n_owned; i++)
    dup |= has(&o2, o1.owned[i]);
  ok(!dup, "CP-4-1: no proxy has two owners");
  long long now = redis_time_ms();
  ok(o1.n_owned && o1.lease[0] > now,
     "CP-1-16: owned() gives each proxy's lease expiry (Redis time)");
  is_str(o1.zone, "za", "issue 28: owned() says the zone the session registered");
  is_str(o2.zone, "zb", "... each worker its own");
  got again = assign(ps, 5, NULL, 0);
  ok(again.assigned == 0 && again.released == 0 && again.epoch == a.epoch,
     "CP-4-1: nothing changed: the epoch stays");
  got st = owned("w1", "other");
  is_int(st.result, CP_AUTH_STALE_SESSION,
         "CP-1-16: owned() of a non-current session fails");
  stop_mod();
}

/* The fresh-state hold: a Redis without the cluster's state (here a new
 * cluster; in production a Redis that lost its data) gives no proxy for
 * one lease, since a gateway may still use an ownership Redis forgot
 * until that lease ends (CP-4-1). Ownerships of a Redis that kept its
 * state are given at once after a restart of the module. */
static void test_fresh_hold(void) {
  if (start_mod("c-hold", "hold_fresh_state = true\nownership_lease = 1s\n"
                          "session_ttl = 5s\n") < 0) {
    ok(0, "module starts");
    return;
  }
  uint64_t v1, ep;
  acked("w1", "za", "s1", &v1, &ep);
  cp_auth_proxy ps[] = {{"pa", 10, "za"}, {"pb", 10, "za"}};
  long long t0 = redis_time_ms();
  got a = assign(ps, 1, NULL, 0);
  ok(a.result == CP_AUTH_OK && a.assigned == 0,
     "CP-4-1: a Redis without the cluster's state: nothing assigned at first");
  long long f = rint_("GET %s", "ph:cp:{c-hold}:assign_from");
  ok(f >= t0 + 1000 && f <= redis_time_ms() + 1000,
     "CP-4-1: ... until one ownership_lease from then (Redis time)");
  int assigned = 0, early = 0;
  for (int round = 0; round < 100 && !assigned; round++) {
    got r = assign(ps, 1, NULL, 0);
    long long now = redis_time_ms();
    if (r.assigned > 0) {
      assigned = 1;
      if (now < f)
        early = 1;
    }
    ph_mock_run_for(M, 50);
  }
  ok(assigned && !early, "CP-4-1: assigned once the hold is over, not before");
  stop_mod();
  if (start_mod("c-hold", "hold_fresh_state = true\nownership_lease = 1s\n"
                          "session_ttl = 5s\n") < 0) {
    ok(0, "module starts again");
    return;
  }
  got b = assign(ps + 1, 1, NULL, 0);
  ok(b.result == CP_AUTH_OK && b.assigned == 1,
     "CP-4-1: a module restart on a Redis that kept its state: no hold");
  stop_mod();
}

/* w2 is killed: its proxies move only after its session AND its lease
 * expired, and at no instant do two workers own one proxy. */
static void test_killed_worker(void) {
  if (start_mod("c-kill", "session_ttl = 1s\nownership_lease = 2s\n") < 0) {
    ok(0, "module starts");
    return;
  }
  uint64_t v1, v2, ep1, ep2;
  acked("w1", "za", "s1", &v1, &ep1);
  acked("w2", "zb", "s2", &v2, &ep2);
  cp_auth_proxy ps[] = {{"pa", 10, "za"}, {"pb", 10, "zb"}};
  got a = assign(ps, 2, NULL, 0);
  uint64_t ep = a.epoch;
  /* Both ACK the epoch the assignment made. */
  reack("w1", "s1", ep, &v1);
  reack("w2", "s2", ep, &v2);
  got rep = report("w2", "s2", 1, 1, v2, ep, NULL, 0);
  is_int(rep.result, CP_AUTH_OK, "w2 reports once, then dies");
  got o2 = owned("w2", "s2");
  int64_t w2_lease = 0;
  for (size_t i = 0; i < o2.n_owned; i++)
    if (strcmp(o2.owned[i], "pb") == 0)
      w2_lease = o2.lease[i];
  ok(has(&o2, "pb") && w2_lease > 0, "pb belongs to w2, with its lease");
  int two = 0, moved = 0, early = 0, session_gone_seen = 0;
  uint64_t seq = 1;
  for (int round = 0; round < 80 && !moved; round++) {
    seq++;
    got e = report("w1", "s1", seq, (int)seq, v1, ep, NULL, 0);
    if (e.result == CP_AUTH_STALE_EPOCH || e.result == CP_AUTH_BASELINE_MISMATCH) {
      /* The epoch rose: w1 takes the new snapshot, as a gateway would. */
      got cur = CALL(A->usable(S, NULL, 0, on_reply, G));
      ep = cur.epoch;
      reack("w1", "s1", ep, &v1);
      continue;
    }
    assign(ps, 2, NULL, 0);
    got x1 = owned("w1", "s1");
    got x2 = owned("w2", "s2");
    int w2_has = x2.result == CP_AUTH_OK && has(&x2, "pb");
    if (x2.result == CP_AUTH_STALE_SESSION)
      session_gone_seen = 1;
    if (has(&x1, "pb")) {
      moved = 1;
      long long now = redis_time_ms();
      if (now < w2_lease || rint_("EXISTS %s", "ph:cp:{c-kill}:w:w2:session"))
        early = 1;
    }
    if (has(&x1, "pb") && w2_has)
      two = 1;
    ph_mock_run_for(M, 50);
  }
  ok(session_gone_seen, "CP-1-7: the killed worker's session expired");
  ok(moved, "CP-4-6: the killed worker's proxy moved to the live worker");
  ok(!early, "CP-4-6: ... only after both its session and its lease expired");
  ok(!two, "CP-4-1: at no instant did the proxy have two owners");
  char w[64];
  is_str(rhget("ph:cp:{c-kill}:owner:pb", "worker", w, sizeof(w)), "w1",
         "CP-4-1: the authoritative owner is the live worker");
  stop_mod();
}

/* The other order: the lease lapses first while the session lives on.
 * Ownership ends with the lease whatever the session does (issue 22 item
 * 13, CP-4-6: the lease is the ownership's validity), and the counts stop
 * counting as soon as the lease lapsed (CP-2-15). */
static void test_lease_first(void) {
  if (start_mod("c-lease", "session_ttl = 3s\nownership_lease = 1s\n"
                           "runtime_ttl = 3s\n") < 0) {
    ok(0, "module starts");
    return;
  }
  uint64_t v1, v2, ep1, ep2;
  acked("w1", "za", "s1", &v1, &ep1);
  acked("w2", "zb", "s2", &v2, &ep2);
  cp_auth_proxy ps[] = {{"pb", 10, "zb"}};
  got a = assign(ps, 1, NULL, 0);
  uint64_t ep = a.epoch;
  reack("w2", "s2", ep, &v2);
  reack("w1", "s1", ep, &v1);
  cp_auth_counter c[] = {{"pb", 1, 0, 0}};
  got rep = report("w2", "s2", 1, 1, v2, ep, c, 1);
  is_int(rep.result, CP_AUTH_OK, "w2 reports once, then stops reporting");
  const char *ids[] = {"pb"};
  int lapsed = 0, counted = 0, moved = 0, early = 0, session = 0;
  for (int round = 0; round < 100 && !moved; round++) {
    report("w1", "s1", (uint64_t)round + 1, round, v1, ep, NULL, 0);
    char until[64];
    long long lease = atoll(rhget("ph:cp:{c-lease}:owner:pb", "until", until,
                                  sizeof(until)));
    /* Redis's time before usable() runs: when it is past the lease
     * already, usable() (later) must not count the lapsed counts. Read
     * after, a slow machine would see a lapse that happened after. */
    long long before = redis_time_ms();
    got u = usable(ids, 1);
    if (lease > 0 && before > lease) {
      lapsed = 1;
      if (u.valid[0])
        counted = 1; /* counts of a lapsed lease must not count */
    }
    /* Only once a lapse was seen: an assign in a round whose time read
     * came just before the lapse could move the proxy with no round
     * having seen the lapsed counts (seen under load in distcheck). */
    if (!lapsed) {
      ph_mock_run_for(M, 50);
      continue;
    }
    assign(ps, 1, NULL, 0);
    char w[64];
    rhget("ph:cp:{c-lease}:owner:pb", "worker", w, sizeof(w));
    if (strcmp(w, "w1") == 0) {
      moved = 1;
      early = redis_time_ms() < lease;
      session = rint_("EXISTS %s", "ph:cp:{c-lease}:w:w2:session") == 1;
    }
    ph_mock_run_for(M, 50);
  }
  ok(lapsed && !counted, "CP-2-15: w2's counts were not used once its lease lapsed");
  ok(moved && session,
     "issue 22 item 13: the proxy moved once w2's lease lapsed, its session "
     "still alive");
  ok(!early, "CP-4-6: ... not before the lease's end (Redis time)");
  stop_mod();
}

/* Issue 22 item 13: a worker that registers again and again (two
 * processes sharing its id, a gateway NACKing every snapshot) and never
 * ACKs or reports keeps a live session, never a lease: its proxies go to
 * a worker that reports once the lease ended, never before, and never
 * back to it while that worker can take them. */
static void test_reregister_without_ack(void) {
  if (start_mod("c-rereg", "session_ttl = 30s\nownership_lease = 1s\n") < 0) {
    ok(0, "module starts");
    return;
  }
  uint64_t v2, ep2;
  acked("w2", "zb", "s2-0", &v2, &ep2);
  cp_auth_proxy ps[] = {{"pa", 10, "zb"}, {"pb", 10, "zb"}};
  got a = assign(ps, 2, NULL, 0);
  ok(a.assigned == 2, "w2, alone, owns both proxies");
  char until[64];
  long long lease = atoll(rhget("ph:cp:{c-rereg}:owner:pa", "until", until,
                                sizeof(until)));
  uint64_t v1, ep1;
  acked("w1", "za", "s1", &v1, &ep1);
  int moved = 0, early = 0, two = 0, session = 1;
  uint64_t seq = 0;
  for (int round = 0; round < 100 && !moved; round++) {
    char sid[32];
    snprintf(sid, sizeof(sid), "s2-%d", round + 1);
    reg("w2", "zb", sid); /* again, never an ACK */
    got cur = usable(NULL, 0);
    if (cur.epoch != ep1) { /* w1 follows the epoch, as a gateway would */
      ep1 = cur.epoch;
      reack("w1", "s1", ep1, &v1);
    }
    seq++;
    report("w1", "s1", seq, (int)seq, v1, ep1, NULL, 0);
    assign(ps, 2, NULL, 0);
    got o1 = owned("w1", "s1");
    got o2 = owned("w2", sid);
    if (has(&o1, "pa") && has(&o1, "pb")) {
      moved = 1;
      early = redis_time_ms() < lease;
      session = o2.result == CP_AUTH_OK;
    }
    if ((has(&o1, "pa") && has(&o2, "pa")) || (has(&o1, "pb") && has(&o2, "pb")))
      two = 1;
    ph_mock_run_for(M, 100);
  }
  ok(moved, "issue 22 item 13: w1 got both proxies of the re-registering w2");
  ok(session, "... while w2's session lived");
  ok(!early, "CP-4-6: ... not before w2's lease ended (Redis time)");
  ok(!two, "CP-4-1: at no instant did a proxy have two owners");
  stop_mod();
}

static void test_draining(void) {
  if (start_mod("c-drain", "") < 0) {
    ok(0, "module starts");
    return;
  }
  uint64_t v, ep;
  acked("w1", "za", "s1", &v, &ep);
  cp_auth_proxy ps[] = {{"p1", 10, "za"}, {"p2", 10, "za"}};
  got a = assign(ps, 2, NULL, 0);
  ep = a.epoch;
  reack("w1", "s1", ep, &v);
  uint64_t seq = 0;
  cp_auth_counter busy[] = {{"p1", 2, 1, 1}};
  const char *dr[] = {"p1"};
  got d = assign(ps + 1, 1, dr, 1);
  ok(d.released == 0, "CP-4-4: a draining proxy with unknown counts stays owned");
  got r = report("w1", "s1", ++seq, 1, v, ep, busy, 1);
  ok(r.result == CP_AUTH_OK && r.n_revoke == 1 &&
         strcmp(r.revoke[0], "p1") == 0,
     "CP-4-7: the report's answer names the draining owned proxy to revoke");
  d = assign(ps + 1, 1, dr, 1);
  got o = owned("w1", "s1");
  ok(d.released == 0 && has(&o, "p1"),
     "CP-4-4: not cleared while active/reserved are not zero");
  cp_auth_counter idle_stale[] = {{"p1", 0, 0, 1}};
  r = report("w1", "s1", ++seq, 2, v, ep, idle_stale, 1);
  d = assign(ps + 1, 1, dr, 1);
  o = owned("w1", "s1");
  ok(d.released == 0 && has(&o, "p1"),
     "CP-4-4: zero counts on a snapshot from before the drain do not clear");
  reack("w1", "s1", ep, &v);
  cp_auth_counter still[] = {{"p1", 0, 1, 1}};
  r = report("w1", "s1", ++seq, 3, v, ep, still, 1);
  d = assign(ps + 1, 1, dr, 1);
  ok(d.released == 0, "CP-4-4: reserved alone keeps the ownership");
  r = report("w1", "s1", ++seq, 4, v, ep, NULL, 0);
  d = assign(ps + 1, 1, dr, 1);
  o = owned("w1", "s1");
  ok(d.released == 1 && !has(&o, "p1") && has(&o, "p2"),
     "CP-4-4: cleared once both active and reserved are zero");
  ok(d.epoch > ep, "CP-4-4: clearing raises the epoch");
  is_int(rint_("EXISTS %s", "ph:cp:{c-drain}:owner:p1"), 0,
         "CP-4-5: the proxy has no owner now");
  stop_mod();
}

/* Issue 23 item 11 (CP-2-15, CP-2-16): the drain release, the one
 * production consumer of runtime counts, uses them only while the report's
 * epoch is the current one; a report from before an epoch change is
 * unknown counts, never idle. */
static void test_drain_epoch(void) {
  if (start_mod("c-dep", "") < 0) {
    ok(0, "module starts");
    return;
  }
  uint64_t v, ep;
  acked("w1", "za", "s1", &v, &ep);
  cp_auth_proxy ps[] = {{"p1", 10, "za"}, {"p2", 10, "za"}};
  got a = assign(ps, 2, NULL, 0);
  ep = a.epoch;
  const char *dr[] = {"p1"};
  got d = assign(ps + 1, 1, dr, 1); /* the drain mark: this version */
  reack("w1", "s1", ep, &v);        /* a snapshot built after it */
  got r = report("w1", "s1", 1, 1, v, ep, NULL, 0);
  is_int(r.result, CP_AUTH_OK, "an idle report on a snapshot after the mark");
  rint_("INCR %s", "ph:cp:{c-dep}:epoch"); /* another worker's change */
  d = assign(ps + 1, 1, dr, 1);
  got o = owned("w1", "s1");
  ok(d.released == 0 && has(&o, "p1"),
     "issue 23 item 11, CP-2-15: idle counts of an older epoch do not end a "
     "draining ownership");
  reack("w1", "s1", ep + 1, &v);
  r = report("w1", "s1", 2, 2, v, ep + 1, NULL, 0);
  d = assign(ps + 1, 1, dr, 1);
  o = owned("w1", "s1");
  ok(r.result == CP_AUTH_OK && d.released == 1 && !has(&o, "p1"),
     "CP-4-4: ... ended once a report on the current epoch shows it idle");
  stop_mod();
}

/* Issue 23 item 4 (CP-4-1, CP-4-4): a worker that joins (or returns)
 * gets its share through the drain: the owner's snapshots mark the moved
 * proxies draining, and the assign after the owner reported them idle
 * ends the ownership and gives them to the newcomer in the same step. */
static void test_rebalance(void) {
  if (start_mod("c-reb", "rebalance_max = 2\n") < 0) {
    ok(0, "module starts");
    return;
  }
  uint64_t v1, v2, ep;
  acked("w1", "za", "s1", &v1, &ep);
  cp_auth_proxy ps[] = {{"p1", 10, "za"}, {"p2", 10, "za"}, {"p3", 10, "za"},
                        {"p4", 10, "za"}, {"p5", 10, "za"}, {"p6", 10, "za"}};
  got a = assign(ps, 6, NULL, 0);
  ep = a.epoch;
  reack("w1", "s1", ep, &v1);
  report("w1", "s1", 1, 1, v1, ep, NULL, 0);
  got o1 = owned("w1", "s1");
  is_int((long long)o1.n_owned, 6, "one live worker owns all six");
  /* w2 joins: registered, ACKed, reporting. */
  acked("w2", "za", "s2", &v2, &ep);
  report("w2", "s2", 1, 1, v2, ep, NULL, 0);
  a = assign(ps, 6, NULL, 0);
  o1 = owned("w1", "s1");
  got o2 = owned("w2", "s2");
  int marked = n_marked(&o1);
  ok(o1.n_owned == 6 && o2.n_owned == 0 && marked == 2,
     "issue 23 item 4: a joining worker's share is drained from the owner "
     "first (rebalance_max = 2 at once), nobody owns it twice");
  /* w1 drains with one of them busy. */
  const char *busy_id = NULL;
  for (size_t i = 0; i < o1.n_owned && !busy_id; i++)
    if (o1.reclaim[i])
      busy_id = o1.owned[i];
  cp_auth_counter busy[] = {{busy_id, 1, 0, 1}};
  reack("w1", "s1", ep, &v1);
  report("w1", "s1", 2, 2, v1, ep, busy, 1);
  a = assign(ps, 6, NULL, 0);
  o1 = owned("w1", "s1");
  o2 = owned("w2", "s2");
  ok(a.released == 1 && a.assigned == 1 && o1.n_owned == 5 &&
         o2.n_owned == 1 && has(&o1, busy_id) && !has(&o2, busy_id),
     "CP-4-4: the idle one moves in one step; the busy one stays with its "
     "stream");
  ok(reclaim_of(&o2, o2.owned[0]) == 0,
     "... and is not draining at its new owner");
  /* Until balanced: bounded rounds of (snapshot, idle report, assign). */
  uint64_t s1 = 2, s2 = 1;
  for (int i = 0; i < 10 && o2.n_owned < 3; i++) {
    ep = a.epoch;
    reack("w1", "s1", ep, &v1);
    reack("w2", "s2", ep, &v2);
    s1++;
    s2++;
    report("w1", "s1", s1, (int)s1, v1, ep, NULL, 0);
    report("w2", "s2", s2, (int)s2, v2, ep, NULL, 0);
    a = assign(ps, 6, NULL, 0);
    o1 = owned("w1", "s1");
    o2 = owned("w2", "s2");
    int dup = 0;
    for (size_t k = 0; k < o1.n_owned; k++)
      dup |= has(&o2, o1.owned[k]);
    if (dup)
      break;
  }
  ok(o1.n_owned == 3 && o2.n_owned == 3,
     "issue 23 item 4: balanced within bounded rounds (3 and 3)");
  a = assign(ps, 6, NULL, 0);
  o1 = owned("w1", "s1");
  marked = n_marked(&o1);
  ok(a.assigned == 0 && a.released == 0 && marked == 0,
     "... and then nothing moves");
  /* A worker without a current report (stopped) gets nothing moved to it. */
  acked("w3", "za", "s3", &v2, &ep);
  a = assign(ps, 6, NULL, 0);
  o1 = owned("w1", "s1");
  marked = n_marked(&o1);
  is_int(marked, 0, "issue 23 item 4: nothing drains towards a worker that "
                    "has not reported on the current epoch");
  stop_mod();
}

/* A worker whose report is not on the current epoch (a controller just
 * restarted, its report not in yet) still holds its own proxies: the
 * rebalance compares a proxy's move against its owner keeping it, so a
 * proxy in its owner's zone does not move to another zone's worker just
 * because the owner cannot take new ones right now (cp_e2e.sh 61 under
 * ASan: p3 of zone z2 moved from w2, the only z2 worker, to w1). */
static void test_rebalance_owner_stale(void) {
  if (start_mod("c-rbs", "rebalance_max = 2\n") < 0) {
    ok(0, "module starts");
    return;
  }
  uint64_t v1, v2, ep;
  acked("w1", "z1", "s1", &v1, &ep);
  acked("w2", "z2", "s2", &v2, &ep);
  cp_auth_proxy ps[] = {{"p1", 10, "z1"}, {"p2", 10, "z1"}, {"p3", 10, "z2"},
                        {"p4", 30, ""},   {"p5", 5, ""}};
  got a = assign(ps, 5, NULL, 0);
  got o1 = owned("w1", "s1"), o2 = owned("w2", "s2");
  ok(has(&o1, "p1") && has(&o1, "p2") && has(&o1, "p5") && has(&o2, "p3") &&
         has(&o2, "p4"),
     "CP-1-16 zone first, then the least owned capacity: w1 p1 p2 p5, w2 p3 "
     "p4");
  ep = a.epoch;
  reack("w1", "s1", ep, &v1);
  reack("w2", "s2", ep, &v2);
  report("w1", "s1", 1, 1, v1, ep, NULL, 0);
  report("w2", "s2", 1, 1, v2, ep, NULL, 0);
  a = assign(ps, 5, NULL, 0);
  o2 = owned("w2", "s2");
  is_int(n_marked(&o2), 0, "both reporting: nothing moves (p3 stays in z2)");
  rint_("INCR %s", "ph:cp:{c-rbs}:epoch"); /* w2's report is now old */
  reack("w1", "s1", ep + 1, &v1);
  report("w1", "s1", 2, 2, v1, ep + 1, NULL, 0);
  a = assign(ps, 5, NULL, 0);
  o1 = owned("w1", "s1");
  o2 = owned("w2", "s2");
  ok(n_marked(&o2) == 0 && has(&o2, "p3") && has(&o2, "p4"),
     "issue 23 item 4: an owner whose report is not current yet keeps its "
     "proxies (no move out of its zone)");
  stop_mod();
}

/* Exclusive extraction (CP-1-5, CP-4-2..5): an unowned proxy at once; an
 * owned one reclaimed through the drain, extracted in the assign that
 * ends its ownership; neither given out meanwhile; release. */
static void test_extraction(void) {
  if (start_mod("c-x", "") < 0) {
    ok(0, "module starts");
    return;
  }
  uint64_t v, ep;
  acked("w1", "za", "s1", &v, &ep);
  got x = extract("p9", CP_EXTRACT_GET);
  ok(x.result == CP_AUTH_OK && x.xstate == CP_EXTRACT_AVAILABLE && x.xms == 0,
     "a proxy never extracted is AVAILABLE");
  long long t0 = redis_time_ms();
  x = extract("p9", CP_EXTRACT_REQUEST);
  ok(x.result == CP_AUTH_OK && x.xstate == CP_EXTRACT_EXTRACTED &&
         x.xms >= t0 && x.xms <= redis_time_ms(),
     "CP-1-5, CP-4-5: an unowned proxy is EXTRACTED at once, at Redis time");
  int64_t first = x.xms;
  x = extract("p9", CP_EXTRACT_REQUEST);
  ok(x.xstate == CP_EXTRACT_EXTRACTED && x.xms == first,
     "a second request is idempotent (the first extraction's time)");
  cp_auth_proxy ps[] = {{"p1", 10, "za"}, {"p9", 10, "za"}};
  got a = assign(ps, 2, NULL, 0);
  got o = owned("w1", "s1");
  ok(a.result == CP_AUTH_OK && has(&o, "p1") && !has(&o, "p9"),
     "CP-4-5: assign gives out the available proxy, not the extracted one");
  ok(a.n_reclaiming == 0 && a.n_extracted == 1,
     "issue 28: assign counts the extracted proxy (0 reclaiming, 1 extracted)");
  ep = a.epoch;
  reack("w1", "s1", ep, &v);
  is_int(reclaim_of(&o, "p1"), 0, "owned(): no reclaim mark before a request");

  /* p1 is owned by w1 and busy: RECLAIMING until w1 drained it. */
  x = extract("p1", CP_EXTRACT_REQUEST);
  ok(x.result == CP_AUTH_OK && x.xstate == CP_EXTRACT_RECLAIMING &&
         strcmp(x.xowner, "w1") == 0 && x.xms == 0,
     "CP-4-2: an owned proxy is RECLAIMING, naming its owner");
  x = extract("p1", CP_EXTRACT_GET);
  ok(x.xstate == CP_EXTRACT_RECLAIMING && strcmp(x.xowner, "w1") == 0,
     "GET says so too");
  o = owned("w1", "s1");
  is_int(reclaim_of(&o, "p1"), 1,
         "CP-4-2: owned() marks it, so the owner's snapshots mark it draining");
  uint64_t seq = 0;
  cp_auth_counter busy[] = {{"p1", 1, 0, 1}};
  report("w1", "s1", ++seq, 1, v, ep, busy, 1);
  a = assign(ps, 1, NULL, 0);
  o = owned("w1", "s1");
  ok(a.extracted == 0 && has(&o, "p1") &&
         extract("p1", CP_EXTRACT_GET).xstate == CP_EXTRACT_RECLAIMING,
     "CP-4-3, CP-4-4: still owned and RECLAIMING while active is not zero");
  ok(a.n_reclaiming == 1 && a.n_extracted == 1,
     "issue 28: ... assign counts it reclaiming (1 reclaiming, 1 extracted)");
  /* The owner's zero counts count only on a snapshot built after the
   * request (the drain mark). */
  reack("w1", "s1", ep, &v);
  report("w1", "s1", ++seq, 2, v, ep, NULL, 0);
  long long t1 = redis_time_ms();
  a = assign(ps, 1, NULL, 0);
  o = owned("w1", "s1");
  x = extract("p1", CP_EXTRACT_GET);
  ok(a.result == CP_AUTH_OK && a.released == 1 && a.extracted == 1 &&
         !has(&o, "p1") && x.xstate == CP_EXTRACT_EXTRACTED && x.xms >= t1,
     "CP-4-4, CP-4-5: at zero the assign ends the ownership and extracts it "
     "in the same step");
  ok(a.n_reclaiming == 0 && a.n_extracted == 2,
     "issue 28: ... and counts it extracted in that step (0 and 2)");
  is_int(rint_("EXISTS %s", "ph:cp:{c-x}:owner:p1"), 0, "... and it has no owner");
  a = assign(ps, 2, NULL, 0);
  o = owned("w1", "s1");
  ok(!has(&o, "p1") && !has(&o, "p9"), "CP-4-1: nobody gets an extracted proxy");

  /* release: AVAILABLE, and assign gives it out again */
  x = extract("p1", CP_EXTRACT_RELEASE);
  ok(x.result == CP_AUTH_OK && x.xstate == CP_EXTRACT_AVAILABLE, "release: AVAILABLE");
  is_int(extract("p1", CP_EXTRACT_GET).xstate, CP_EXTRACT_AVAILABLE, "GET agrees");
  a = assign(ps, 2, NULL, 0);
  o = owned("w1", "s1");
  ok(has(&o, "p1") && !has(&o, "p9"), "a released proxy is given out again");
  ok(a.n_reclaiming == 0 && a.n_extracted == 1,
     "issue 28: ... and is counted no more (0 and 1)");

  /* A withdrawn reclaim: the mark goes, the ownership stays. */
  x = extract("p1", CP_EXTRACT_REQUEST);
  is_int(x.xstate, CP_EXTRACT_RECLAIMING, "reclaimed again");
  reack("w1", "s1", a.epoch, &v);
  got rr = report("w1", "s1", ++seq, 3, v, a.epoch, NULL, 0);
  ok(rr.result == CP_AUTH_OK && rr.n_revoke == 1 && strcmp(rr.revoke[0], "p1") == 0,
     "CP-4-7: while reclaiming, the owner's runtime answer names it to revoke");
  extract("p1", CP_EXTRACT_RELEASE);
  rr = report("w1", "s1", ++seq, 4, v, a.epoch, NULL, 0);
  ok(rr.result == CP_AUTH_OK && rr.n_revoke == 0,
     "once withdrawn, no runtime answer names it any more");
  a = assign(ps, 2, NULL, 0);
  o = owned("w1", "s1");
  ok(has(&o, "p1") && reclaim_of(&o, "p1") == 0 && a.extracted == 0,
     "release withdraws a pending reclaim: still owned, no mark");

  /* Refusals */
  is_int(A->extract(S, "bad id", CP_EXTRACT_GET, on_reply, NULL), PH_EINVAL,
         "a malformed id is refused");
  is_int(A->extract(S, "p1", (cp_extract_op)9, on_reply, NULL), PH_EINVAL,
         "an unknown op is refused");
  is_int(A->extract(S, "p1", CP_EXTRACT_GET, NULL, NULL), PH_EINVAL,
         "no callback is refused");
  stop_mod();
}

/* The pool's health (minor 5, CP-6-7): the reducer's one step per change,
 * read back whole, and exclusive extraction only of an AVAILABLE proxy
 * (or one without a verdict). */
static void test_health(void) {
  if (start_mod("c-h", "") < 0) {
    ok(0, "module starts");
    return;
  }
  got g = CALL(A->health_all(S, on_reply, G));
  ok(g.result == CP_AUTH_OK && g.n_health == 0, "CP-6-7: no verdict at first");
  ok(CALL(A->health_set(S, "p1", 3, on_reply, G)).result == CP_AUTH_OK &&
         CALL(A->health_set(S, "p2", 2, on_reply, G)).result == CP_AUTH_OK &&
         CALL(A->health_set(S, "p3", 1, on_reply, G)).result == CP_AUTH_OK,
     "CP-6-7: three verdicts set");
  is_int(rint_("HGET %s p1", "ph:cp:{c-h}:health"), 3,
         "CP-6-7: in one hash of the cluster's keys");
  g = CALL(A->health_all(S, on_reply, G));
  int seen = 0;
  for (size_t i = 0; i < g.n_health; i++)
    seen += (strcmp(g.hid[i], "p1") == 0 && g.health[i] == 3) +
            (strcmp(g.hid[i], "p2") == 0 && g.health[i] == 2) +
            (strcmp(g.hid[i], "p3") == 0 && g.health[i] == 1);
  ok(g.n_health == 3 && seen == 3, "CP-6-7: read back whole");
  got x = extract("p1", CP_EXTRACT_REQUEST);
  ok(x.result == CP_AUTH_OK && x.xstate == CP_EXTRACT_AVAILABLE &&
         x.xrefused == 3,
     "CP-6-7: an UNHEALTHY proxy is not extracted (refused: 3)");
  x = extract("p2", CP_EXTRACT_REQUEST);
  ok(x.xstate == CP_EXTRACT_AVAILABLE && x.xrefused == 2,
     "CP-6-7: nor a SUSPECT one (refused: 2)");
  is_int(extract("p1", CP_EXTRACT_GET).xstate, CP_EXTRACT_AVAILABLE,
         "... nothing changed");
  x = extract("p3", CP_EXTRACT_REQUEST);
  ok(x.xstate == CP_EXTRACT_EXTRACTED && x.xrefused == 0,
     "CP-6-7: AVAILABLE -> EXTRACTED");
  x = extract("p4", CP_EXTRACT_REQUEST);
  ok(x.xstate == CP_EXTRACT_EXTRACTED && x.xrefused == 0,
     "CP-6-7: a proxy without a verdict is extracted too");
  ok(CALL(A->health_set(S, "p1", 0, on_reply, G)).result == CP_AUTH_OK,
     "CP-6-7: 0 removes a verdict");
  is_int(rint_("HEXISTS %s p1", "ph:cp:{c-h}:health"), 0, "... its field");
  x = extract("p1", CP_EXTRACT_REQUEST);
  ok(x.xstate == CP_EXTRACT_EXTRACTED, "... and p1 may be extracted now");
  is_int(A->health_set(S, "bad id", 1, on_reply, NULL), PH_EINVAL,
         "a malformed id is refused");
  is_int(A->health_set(S, "p1", 4, on_reply, NULL), PH_EINVAL,
         "a verdict out of 0..3 is refused");
  stop_mod();
}

/* A reclaimed proxy whose owner crashed: extracted once the session and
 * the lease lapsed (CP-4-6), given to no live worker meanwhile. */
static void test_extraction_crashed_owner(void) {
  if (start_mod("c-xc", "session_ttl = 1s\nownership_lease = 1s\n") < 0) {
    ok(0, "module starts");
    return;
  }
  uint64_t v, ep;
  acked("w1", "za", "s1", &v, &ep);
  cp_auth_proxy ps[] = {{"p1", 10, "za"}};
  assign(ps, 1, NULL, 0);
  got x = extract("p1", CP_EXTRACT_REQUEST);
  is_int(x.xstate, CP_EXTRACT_RECLAIMING, "w1 owns p1: RECLAIMING");
  acked("w2", "za", "s2", &v, &ep); /* a live worker that could take it */
  int extracted = 0, stolen = 0;
  for (int i = 0; i < 100 && !extracted; i++) { /* at most ~5 s */
    acked("w2", "za", "s2", &v, &ep);
    assign(ps, 1, NULL, 0);
    char w[64];
    rhget("ph:cp:{c-xc}:owner:p1", "worker", w, sizeof(w));
    if (strcmp(w, "w2") == 0)
      stolen = 1;
    extracted = extract("p1", CP_EXTRACT_GET).xstate == CP_EXTRACT_EXTRACTED;
    ph_mock_run_for(M, 50);
  }
  ok(extracted, "CP-4-6: extracted once the crashed owner's session and lease lapsed");
  ok(!stolen, "CP-4-1: the live worker never got it meanwhile");
  stop_mod();
}

static void test_usable(void) {
  if (start_mod("c-use", "session_ttl = 2s\nruntime_ttl = 1s\n") < 0) {
    ok(0, "module starts");
    return;
  }
  uint64_t v, ep;
  acked("w1", "za", "s1", &v, &ep);
  cp_auth_proxy ps[] = {{"p1", 10, "za"}, {"p2", 10, "za"}};
  got a = assign(ps, 2, NULL, 0);
  ep = a.epoch;
  reack("w1", "s1", ep, &v);
  cp_auth_counter c[] = {{"p1", 4, 2, 0}};
  got r = report("w1", "s1", 1, 1, v, ep, c, 1);
  is_int(r.result, CP_AUTH_OK, "a report on the current epoch");
  const char *ids[] = {"p1", "p2", "nobody"};
  got u = usable(ids, 3);
  ok(u.result == CP_AUTH_OK && u.n_usable == 3, "usable answers every id");
  ok(u.valid[0] && u.active[0] == 4 && u.reserved[0] == 2 &&
         strcmp(u.owner[0], "w1") == 0,
     "CP-2-15: counts used when session, report TTL, ownership and epoch "
     "are valid at once");
  ok(u.valid[1] && u.active[1] == 0 && u.reserved[1] == 0,
     "CP-2-14: a proxy absent from a valid report counts zero");
  ok(!u.valid[2] && strcmp(u.owner[2], "") == 0,
     "CP-2-16: a proxy without an owner: zero capacity (not valid)");
  /* The epoch moves: the report no longer counts. */
  cp_auth_proxy more[] = {{"p1", 10, "za"}, {"p2", 10, "za"}, {"p3", 1, ""}};
  got b = assign(more, 3, NULL, 0);
  u = usable(ids, 1);
  ok(b.epoch > ep && !u.valid[0] && u.active[0] == 0,
     "CP-2-15: a report of an older epoch: zero capacity");
  r = report("w1", "s1", 2, 2, v, ep, c, 1);
  is_int(r.result, CP_AUTH_STALE_EPOCH,
         "CP-2-6: a report on the baseline's epoch, now below the current "
         "one, is rejected");
  is_int(cp_auth_grpc_status(r.result), 9, "CP-2-6: ... FAILED_PRECONDITION");
  {
    uint8_t ck[32];
    d32(ck, 0x66);
    got nv = CALL(A->next_version(S, on_reply, G));
    CALL(A->issue(S, "w1", "s1", nv.version, ep, ck, on_reply, G));
    got sa = CALL(A->ack(S, "w1", "s1", nv.version, ep, ck, 1, on_reply, G));
    is_int(sa.result, CP_AUTH_STALE_EPOCH,
           "CP-2-6: a positive ACK of an issued triple with an older epoch "
           "is rejected");
    ok(sa.epoch == b.epoch, "CP-2-6: ... and tells the current epoch");
  }
  reack("w1", "s1", b.epoch, &v);
  r = report("w1", "s1", 2, 2, v, b.epoch, c, 1);
  u = usable(ids, 1);
  ok(u.valid[0], "CP-2-15: valid again after a report on the new epoch");
  /* The report's TTL lapses (runtime_ttl) while the session lives. */
  int lapsed = 0;
  for (int i = 0; i < 60 && !lapsed; i++) {
    ph_mock_run_for(M, 50);
    u = usable(ids, 1);
    lapsed = !u.valid[0];
  }
  ok(lapsed && rint_("EXISTS %s", "ph:cp:{c-use}:w:w1:session") == 1,
     "CP-2-16: an expired report means zero capacity, never idle capacity");
  /* The session lapses. */
  r = report("w1", "s1", 3, 3, v, b.epoch, c, 1);
  int gone = 0;
  for (int i = 0; i < 80 && !gone; i++) {
    ph_mock_run_for(M, 50);
    gone = rint_("EXISTS %s", "ph:cp:{c-use}:w:w1:session") == 0;
  }
  u = usable(ids, 1);
  ok(gone && !u.valid[0], "CP-2-16: no session: zero capacity");
  /* CP-5-18: the outcome fence went with the expired session. */
  reg("w1", "za", "s1");
  got o = outcomes("w1", "s1", 1, 1);
  ok(o.result == CP_AUTH_OK,
     "CP-5-18: the outcome fence is cleared with session expiry");
  stop_mod();
}

/* ---- bounds and arguments ------------------------------------------ */

static void test_bounds(void) {
  if (start_mod("c-bounds", "max_inflight = 2\nmax_workers = 2\n") < 0) {
    ok(0, "module starts");
    return;
  }
  uint8_t d[32];
  d32(d, 1);
  is_int(A->issue(S, "w{1}", "s", 1, 1, d, on_reply, NULL), PH_EINVAL,
         "an id with a hash-tag brace is refused (PH_EINVAL)");
  is_int(A->issue(S, "w:1", "s", 1, 1, d, on_reply, NULL), PH_EINVAL,
         "an id with ':' is refused (keys cannot be forged)");
  is_int(A->report_outcomes(S, "w1", "s", CP_AUTH_SEQ_MAX + 1, d, on_reply,
                            NULL),
         PH_EINVAL, "a sequence beyond 2^53-1 is refused");
  cp_auth_proxy bad[] = {{"p", 0, ""}};
  is_int(A->assign(S, bad, 1, NULL, 0, on_reply, NULL), PH_EINVAL,
         "a capacity of 0 is refused");
  static got g1, g2, g3;
  memset(&g1, 0, sizeof(g1));
  memset(&g2, 0, sizeof(g2));
  int64_t i1 = A->next_version(S, on_reply, &g1);
  int64_t i2 = A->next_version(S, on_reply, &g2);
  int64_t i3 = A->next_version(S, on_reply, &g3);
  is_int(i3, PH_EFULL, "max_inflight: one call more is refused (PH_EFULL)");
  is_int(A->cancel(S, i2), PH_OK, "a pending call can be cancelled");
  wait_for(i1, &g1);
  for (int i = 0; i < 20; i++)
    ph_mock_run_for(M, 10);
  ok(g1.calls == 1 && g2.calls == 0,
     "a cancelled call's callback never runs; the other answers");
  is_int(A->cancel(S, i1), PH_ENOENT, "an answered call cannot be cancelled");
  reg("wa", "", "s1");
  reg("wb", "", "s1");
  got r = reg("wc", "", "s1");
  is_int(r.result, CP_AUTH_LIMIT, "max_workers bounds the workers set");
  r = reg("wa", "", "s2");
  is_int(r.result, CP_AUTH_OK, "a known worker may still re-register");
  stop_mod();

  ok(start_mod("c-bad}", "") < 0, "a cluster_id with a brace is refused");
  stop_mod();
  ok(start_mod("c", "reconnect.min = 2s\nreconnect.max = 1s\n") < 0,
     "reconnect.max below reconnect.min is refused");
  stop_mod();
}

/* database = 3: every key goes to that database (SELECT after AUTH). */
static void test_database(void) {
  if (start_mod("c-db", "database = 3\n") < 0) {
    ok(0, "module starts with database = 3");
    return;
  }
  got v = CALL(A->next_version(S, on_reply, G));
  is_int(v.result, CP_AUTH_OK, "a call with database = 3");
  is_int(rint_("EXISTS %s", "ph:cp:{c-db}:version"), 0,
         "nothing written to database 0");
  freeReplyObject(rcmd("SELECT 3"));
  is_int(rint_("GET %s", "ph:cp:{c-db}:version"), (long long)v.version,
         "the key is in database 3");
  freeReplyObject(rcmd("FLUSHDB"));
  freeReplyObject(rcmd("SELECT 0"));
  stop_mod();
}

/* ---- failures ------------------------------------------------------- */

/* The value of a series ("name{labels} "), from its own line. */
static double metric(const char *series) {
  double v;
  return ph_mock_metric(M, series, NULL, &v) == PH_OK ? v : -1;
}

static void test_failures(void) {
  if (start_mod("c-fail", "") < 0) {
    ok(0, "module starts");
    return;
  }
  ok(metric("proxyhost_cp_redis_connected") == 1,
     "proxyhost_cp_redis_connected is 1 while up");
  got v = CALL(A->next_version(S, on_reply, G));
  is_int(v.result, CP_AUTH_OK, "a call while up");

  /* The script cache is flushed: NOSCRIPT, SCRIPT LOAD, the call again. */
  freeReplyObject(rcmd("SCRIPT FLUSH"));
  v = CALL(A->next_version(S, on_reply, G));
  is_int(v.result, CP_AUTH_OK, "NOSCRIPT: the script is loaded again");

  /* Stopped. */
  redis_sh("stop");
  got u = CALL(A->next_version(S, on_reply, G));
  is_int(u.result, CP_AUTH_UNAVAILABLE, "Redis stopped: UNAVAILABLE");
  is_int(cp_auth_grpc_status(u.result), 14, "... the gRPC status UNAVAILABLE");
  for (int i = 0; i < 50 && ph_mock_ready(M); i++)
    ph_mock_run_for(M, 10);
  ok(!ph_mock_ready(M), "Redis stopped: the module is not ready (/readyz)");
  double failed0 =
      metric("proxyhost_cp_redis_connects_total{result=\"failed\"}");
  u = CALL(A->register_worker(S, "w1", "i", "", "s", on_reply, G));
  is_int(u.result, CP_AUTH_UNAVAILABLE, "every call answers UNAVAILABLE");
  ph_mock_run_for(M, 1500);
  double failed1 =
      metric("proxyhost_cp_redis_connects_total{result=\"failed\"}");
  /* 1.5 s at reconnect.min 50 ms doubling to 400 ms: about 6 attempts; a
   * tight loop would make hundreds. */
  ok(failed1 > failed0 && failed1 - failed0 <= 15,
     "no tight reconnect loop while Redis is down (bounded, backed off)");
  printf("# failed attempts in 1.5 s: %.0f\n", failed1 - failed0);
  ok(metric("proxyhost_cp_redis_connected") == 0, "connected gauge is 0");

  /* Restarted. */
  ok(redis_sh("restart") == 0 && direct_connect() == 0, "Redis restarted");
  for (int i = 0; i < 300 && !ph_mock_ready(M); i++)
    ph_mock_run_for(M, 10);
  ok(ph_mock_ready(M), "restarted: the module is ready again");
  v = CALL(A->next_version(S, on_reply, G));
  is_int(v.result, CP_AUTH_OK, "restarted: calls work again (scripts reloaded)");

  /* Frozen: connected, but no answer. */
  int pid = redis_pid();
  ok(pid > 0 && kill(pid, SIGSTOP) == 0, "Redis frozen (SIGSTOP)");
  u = CALL(A->next_version(S, on_reply, G));
  is_int(u.result, CP_AUTH_UNAVAILABLE,
         "a frozen Redis: UNAVAILABLE within command_timeout");
  ok(!ph_mock_ready(M), "a frozen Redis: not ready");
  kill(pid, SIGCONT);
  for (int i = 0; i < 300 && !ph_mock_ready(M); i++)
    ph_mock_run_for(M, 10);
  v = CALL(A->next_version(S, on_reply, G));
  ok(ph_mock_ready(M) && v.result == CP_AUTH_OK, "thawed: recovered");
  const char *t = ph_mock_metrics_text(M);
  like(t, "proxyhost_cp_redis_calls_total{script=\"next_version\",result=\"ok\"}",
       "calls counted by script and result");
  like(t, "proxyhost_cp_redis_calls_total{script=\"next_version\",result=\"unavailable\"}",
       "UNAVAILABLE answers counted");
  like(t, "proxyhost_cp_redis_call_seconds_bucket{script=\"register\"",
       "the latency histogram");
  unlike(t, PASSWORD, "the Redis password is not in the metrics");
  stop_mod();
}

/* ---- after the run: nothing secret in Redis ----------------------- */

/* Minor 4 (issue 26): checker sessions through the C calls: their own
 * keys, a server-side TTL, max_checkers, checker_alive, and the outcome
 * fence on a checker's session (CP-1-3, CP-6-1, CP-6-2). */
static void test_checkers(void) {
  if (start_mod("c-chk", "session_ttl = 5s\n") < 0) {
    ok(0, "module starts against redis-server (checkers)");
    return;
  }
  char k1[CP_AUTH_SESSION_HEX + 1], k2[CP_AUTH_SESSION_HEX + 1];
  A->new_session_id(k1);
  A->new_session_id(k2);
  got r = CALL(A->register_checker(S, "c1", "i1", "za", k1, 1, 4, 6, on_reply,
                                   G));
  is_int(r.result, CP_AUTH_OK, "CP-1-3: register_checker answers");
  ok(r.expires > 0 && !r.replaced, "CP-1-3: ... with the session's expiry");
  long long pttl = rint_("PTTL %s", "ph:cp:{c-chk}:c:c1:session");
  ok(pttl > 0 && pttl <= 5000, "CP-1-3: the checker session has a server-side TTL");
  r = CALL(A->register_checker(S, "c2", "i1", "za", k2, 1, 4, 6, on_reply, G));
  is_int(r.result, CP_AUTH_LIMIT, "CP-1-3: max_checkers (1) bounds the live checkers");
  r = CALL(A->register_checker(S, "c1", "i1", "za", k1, 1, 0, 6, on_reply, G));
  is_int(r.result, -1000 + PH_EINVAL, "max_concurrency 0: PH_EINVAL, no call");
  r = CALL(A->checker_alive(S, "c1", k1, on_reply, G));
  ok(r.result == CP_AUTH_OK && r.max_concurrency == 4 && r.tiers == 6 &&
         r.expires > 0 && strcmp(r.zone, "za") == 0,
     "CP-6-1: checker_alive renews and says max_concurrency, tiers and the "
     "zone (issue 28)");
  r = CALL(A->checker_alive(S, "c1", k2, on_reply, G));
  is_int(r.result, CP_AUTH_STALE_SESSION, "checker_alive of another session: stale");
  uint8_t d[32], e[32];
  d32(d, 0xc1);
  d32(e, 0xc2);
  r = CALL(A->report_observations(S, "c1", k1, 1, d, on_reply, G));
  ok(r.result == CP_AUTH_OK && r.sequence == 1, "CP-6-2: an observation batch");
  r = CALL(A->report_observations(S, "c1", k1, 1, d, on_reply, G));
  is_int(r.result, CP_AUTH_REPLAY, "CP-6-2: the same batch: replay");
  r = CALL(A->report_observations(S, "c1", k1, 1, e, on_reply, G));
  is_int(r.result, CP_AUTH_SEQ_CONFLICT, "CP-6-2: other content: conflict");
  r = CALL(A->report_observations(S, "c1", k2, 2, d, on_reply, G));
  is_int(r.result, CP_AUTH_STALE_SESSION, "CP-6-2: a session not current: stale");
  r = CALL(A->report_outcomes(S, "c1", k1, 2, d, on_reply, G));
  is_int(r.result, CP_AUTH_STALE_SESSION,
         "a checker's session is no worker session (outcomes refused)");
  stop_mod();
}

/* Minor 6 (issue 26 "Several controllers"): the controllers that
 * schedule checks, each with a lease in Redis time (lua/members.lua). */
static void test_members(void) {
  if (start_mod("c-mem", "") < 0) {
    ok(0, "module starts against redis-server (members)");
    return;
  }
  got r = CALL(A->members(S, "ctl-b", 60000, on_reply, G));
  ok(r.result == CP_AUTH_OK && r.n_members == 1 && r.lease_end > 0 &&
         strcmp(r.member[0], "ctl-b") == 0,
     "a controller joins with a lease");
  r = CALL(A->members(S, "ctl-a", 60000, on_reply, G));
  ok(r.result == CP_AUTH_OK && r.n_members == 2 &&
         strcmp(r.member[0], "ctl-a") == 0 &&
         strcmp(r.member[1], "ctl-b") == 0,
     "a second one: both listed, by id");
  r = CALL(A->members(S, "ctl-c", 0, on_reply, G));
  ok(r.result == CP_AUTH_OK && r.n_members == 2 && r.lease_end == 0,
     "lease 0: a controller without checkers reads the set, not in it");
  r = CALL(A->members(S, "ctl-b", 0, on_reply, G));
  ok(r.result == CP_AUTH_OK && r.n_members == 1 &&
         strcmp(r.member[0], "ctl-a") == 0,
     "lease 0 of a member: it leaves");
  r = CALL(A->members(S, "ctl-d", 1, on_reply, G));
  ok(r.result == CP_AUTH_OK && r.n_members == 2, "a member with a 1 ms lease");
  int gone = 0;
  for (int i = 0; i < 200 && !gone; i++) { /* Redis's clock moves on */
    r = CALL(A->members(S, "ctl-c", 0, on_reply, G));
    gone = r.result == CP_AUTH_OK && r.n_members == 1;
    if (!gone)
      usleep(5000);
  }
  ok(gone, "a lapsed lease drops out of the set (Redis time)");
  for (int i = 0; i < CP_AUTH_MEMBERS_MAX - 1; i++) {
    char id[24]; /* "many-" and any int */
    snprintf(id, sizeof(id), "many-%d", i);
    r = CALL(A->members(S, id, 60000, on_reply, G));
  }
  ok(r.result == CP_AUTH_OK && r.n_members == CP_AUTH_MEMBERS_MAX,
     "CP_AUTH_MEMBERS_MAX members");
  r = CALL(A->members(S, "one-more", 60000, on_reply, G));
  is_int(r.result, CP_AUTH_LIMIT, "one more: CP_AUTH_LIMIT");
  r = CALL(A->members(S, "ctl-a", 60000, on_reply, G));
  is_int(r.result, CP_AUTH_OK, "a member renews at the bound");
  r = CALL(A->members(S, "", 60000, on_reply, G));
  is_int(r.result, -1000 + PH_EINVAL, "an empty id: PH_EINVAL, no call");
  long long pttl = rint_("PTTL %s", "ph:cp:{c-mem}:members");
  ok(pttl > 0 && pttl <= 60000, "the set expires with its last lease");
  stop_mod();
}

/* Minor 7 (issue 26 "Several controllers"): outcome counts handed to a
 * proxy's member (lua/passive.lua): added up, taken once, short-lived. */
static void test_passive(void) {
  if (start_mod("c-pas", "") < 0) {
    ok(0, "module starts against redis-server (passive)");
    return;
  }
  cp_auth_passive a[2] = {{"p1", 200, 100}, {"p2", 0, 300}};
  got r = CALL(A->passive_push(S, "ctl-a", a, 2, 60000, on_reply, G));
  ok(r.result == CP_AUTH_OK && r.pdropped == 0, "two proxies' counts pushed");
  cp_auth_passive b[1] = {{"p1", 100, 0}};
  r = CALL(A->passive_push(S, "ctl-a", b, 1, 60000, on_reply, G));
  ok(r.result == CP_AUTH_OK, "a second push for p1");
  long long pttl = rint_("PTTL %s", "ph:cp:{c-pas}:passive:ctl-a");
  ok(pttl > 0 && pttl <= 60000, "the hash lives ttl_ms after the last push");
  r = CALL(A->passive_take(S, "ctl-a", on_reply, G));
  int p1 = r.n_passive == 2 && strcmp(r.pid[0], "p1") == 0 ? 0 : 1;
  ok(r.result == CP_AUTH_OK && r.n_passive == 2 && r.pfail[p1] == 300 &&
         r.pok[p1] == 100 && r.pfail[1 - p1] == 0 && r.pok[1 - p1] == 300,
     "the member takes the sums, per proxy");
  r = CALL(A->passive_take(S, "ctl-a", on_reply, G));
  ok(r.result == CP_AUTH_OK && r.n_passive == 0, "... once: the hash is gone");
  r = CALL(A->passive_push(S, "ctl-a", a, 0, 60000, on_reply, G));
  is_int(r.result, -1000 + PH_EINVAL, "an empty push: PH_EINVAL, no call");
  stop_mod();
}

static void test_secrets(void) {
  char line[2048], path[700];
  snprintf(path, sizeof(path), "%s/dump.txt", rdir);
  snprintf(line, sizeof(line), "REDIS_PASSWORD=%s sh %s dump %s >%s",
           PASSWORD, REDIS_SH, rdir, path);
  ok(system(line) == 0, "every key and value dumped (redis-cli --scan, DUMP)");
  FILE *f = fopen(path, "r");
  size_t n = 0, keys = 0, foreign = 0;
  static char all[1 << 20];
  if (f) {
    n = fread(all, 1, sizeof(all) - 1, f);
    fclose(f);
  }
  all[n] = 0;
  for (char *p = all; (p = strstr(p, "key ")) != NULL; p += 4)
    if (p == all || p[-1] == '\n') {
      keys++;
      if (strncmp(p + 4, "ph:cp:{", 7) != 0)
        foreign++;
    }
  ok(keys > 10, "the dump holds the run's keys");
  is_int(foreign, 0, "every key is under ph:cp:{<cluster>}:");
  ok(!strstr(all, PASSWORD), "CP-1-32: the Redis password is in no key");
  ok(!strstr(all, PROXY_SECRET),
     "CP-1-32: no proxy password (it never received any) is in Redis");
  ok(!strstr(all, "password") && !strstr(all, "secret"),
     "CP-1-32: no credential field in Redis");
}

int main(void) {
  plan_lazy();
  signal(SIGPIPE, SIG_IGN);
  err[0] = '\0';
  if (start_redis() < 0) {
    ok(0, "redis-server starts (install the Debian package redis-server)");
    stop_redis_all();
    return done_testing();
  }
  ok(1, "redis-server started");
  test_sessions();
  test_replaced_race();
  test_assign();
  test_fresh_hold();
  test_killed_worker();
  test_lease_first();
  test_reregister_without_ack();
  test_draining();
  test_drain_epoch();
  test_rebalance();
  test_rebalance_owner_stale();
  test_extraction();
  test_extraction_crashed_owner();
  test_health();
  test_usable();
  test_bounds();
  test_checkers();
  test_members();
  test_passive();
  test_database();
  test_secrets(); /* before the restarts, which empty Redis */
  test_failures();
  is_int(inline_answers, 0, "no call ever answered from inside itself");
  if (rc)
    redisFree(rc);
  stop_redis_all();
  return done_testing();
}
