/* SPDX-License-Identifier: BSD-2-Clause */
/* The checker's messages (chk_wire.h). */
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <proxyhost/abi.h>

#include "chk_probe.h"
#include "chk_wire.h"
#include "controlplane/v1/controlplane.pb-c.h"
#include "cp_common/snapshot/cp_snapshot_arena.h"
#include "cp_common/snapshot/cp_snapshot_time.h"
#include "cp_common/snapshot/cp_wire.h"
#include "cp_common/view/cp_outcomes.h"

/* The arena a task message is unpacked into: at most this (as
 * cp_snapshot.c bounds a snapshot's). */
#define UNPACK_BASE ((size_t)64 << 10)
#define UNPACK_PER_BYTE ((size_t)256)


/* cp_wire_printable's rule (1..cap-1 bytes, 0x21..0x7e), checked while
 * copying: one pass over s instead of three (strlen, the check, strcpy;
 * eight strings a task). */
static int copy(char *dst, size_t cap, const char *s, int required) {
  dst[0] = 0;
  if (!s || !s[0])
    return required ? -1 : 0;
  size_t i = 0;
  for (; s[i]; i++) {
    unsigned char c = (unsigned char)s[i];
    if (i >= cap - 1 || c <= 0x20 || c >= 0x7f) {
      dst[0] = 0;
      return -1;
    }
    dst[i] = (char)c;
  }
  dst[i] = 0;
  return 0;
}

void chk_task_wipe(chk_task *t) {
  if (t->user)
    OPENSSL_cleanse(t->user, t->user_len);
  if (t->pass)
    OPENSSL_cleanse(t->pass, t->pass_len);
  free(t->user);
  free(t->pass);
  t->user = t->pass = NULL;
  t->user_len = t->pass_len = 0;
}

static char *dup_secret(const char *s, uint32_t *len) {
  size_t n = strlen(s);
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, s, n + 1);
    *len = (uint32_t)n;
  }
  return d;
}

/* The fields, not the 3.4 KB: copy() leaves an absent optional string
 * alone, so each string starts empty. */
static void task_clear(chk_task *t) {
  t->task_id[0] = t->proxy_id[0] = t->target_group[0] = 0;
  t->tier = t->protocol = 0;
  t->host[0] = t->target[0] = t->echo_url[0] = t->nonce[0] = 0;
  t->port = 0;
  t->user = t->pass = NULL;
  t->user_len = t->pass_len = 0;
  t->deadline_ms = 0;
}

static int read_one(const Controlplane__V1__CheckTask *m, chk_task *t,
                    const char **why) {
  task_clear(t);
  int rc = PH_EINVAL;
  *why = NULL;
  if (copy(t->task_id, sizeof(t->task_id), m->task_id, 1) ||
      copy(t->proxy_id, sizeof(t->proxy_id), m->proxy_id, 1)) {
    t->task_id[0] = t->proxy_id[0] = 0;
    *why = "bad task or proxy id";
    goto out;
  }
  t->tier = (int)m->tier;
  t->protocol = (int)m->protocol;
  if (t->tier < CHK_TIER_BASIC || t->tier > CHK_TIER_TARGET) {
    *why = "unknown tier";
    goto out;
  }
  if (t->protocol < PH_POOL_UPSTREAM_HTTP_CONNECT ||
      t->protocol > PH_POOL_UPSTREAM_HTTP) {
    *why = "unknown protocol";
    goto out;
  }
  if (copy(t->host, sizeof(t->host), m->host, 1) || !m->port ||
      m->port > 65535) {
    *why = "bad proxy address";
    goto out;
  }
  t->port = (uint16_t)m->port;
  if (copy(t->target_group, sizeof(t->target_group), m->target_group, 0) ||
      copy(t->target, sizeof(t->target), m->target, 0) ||
      copy(t->echo_url, sizeof(t->echo_url), m->echo_url, 0) ||
      copy(t->nonce, sizeof(t->nonce), m->nonce, 0)) {
    *why = "bad target, echo url or nonce";
    goto out;
  }
  if (!m->deadline || !cp_ts_to_ms(m->deadline, &t->deadline_ms)) {
    *why = "no deadline";
    goto out;
  }
  if (m->credential && m->credential->username &&
      m->credential->username[0]) {
    if (strlen(m->credential->username) > 255 ||
        (m->credential->password && strlen(m->credential->password) > 255)) {
      *why = "credential too long";
      goto out;
    }
    t->user = dup_secret(m->credential->username, &t->user_len);
    t->pass = dup_secret(m->credential->password ? m->credential->password
                                                 : "",
                         &t->pass_len);
    if (!t->user || !t->pass) {
      chk_task_wipe(t);
      rc = PH_ENOMEM;
      goto out;
    }
  }
  rc = PH_OK;
out:
  return rc;
}

int chk_read_tasks_into(const uint8_t *msg, size_t len, uint32_t max,
                        chk_task_dst_fn dst, chk_task_fn fn, void *arg) {
  chk_task own;
  const char *why = NULL;
  /* Unpacked into one arena (cp_snapshot's bound): one malloc per chunk
   * instead of one per string of each task; wiped at its free (the
   * credentials). */
  cp_arena *a = len <= (SIZE_MAX - UNPACK_BASE) / UNPACK_PER_BYTE
                    ? cp_arena_new(UNPACK_BASE + len * UNPACK_PER_BYTE)
                    : NULL;
  ProtobufCAllocator al;
  if (a)
    cp_arena_allocator(a, &al);
  Controlplane__V1__CheckTask *m =
      a ? controlplane__v1__check_task__unpack(&al, len, msg) : NULL;
  if (!m) {
    cp_arena_free(a);
    memset(&own, 0, sizeof(own));
    fn(arg, a ? PH_EINVAL : PH_ENOMEM, &own,
       a ? "not a CheckTask" : NULL);
    return 1;
  }
  size_t n = 1 + m->n_more;
  for (size_t i = 0; i < n; i++) {
    const Controlplane__V1__CheckTask *one = i ? m->more[i - 1] : m;
    chk_task *t = dst ? dst(arg) : NULL;
    if (!t)
      t = &own;
    int rc = read_one(one, t, &why);
    if (rc == PH_OK && (i >= (max ? max : 1) || (i && one->n_more))) {
      rc = PH_EINVAL; /* more than it asked for, or nested further */
      why = "more tasks in a message than max_tasks_per_message";
      chk_task_wipe(t);
    }
    fn(arg, rc, t, why);
  }
  cp_arena_free(a); /* wipes the message's credentials with it */
  return (int)n;
}

int chk_read_tasks(const uint8_t *msg, size_t len, uint32_t max,
                   chk_task_fn fn, void *arg) {
  return chk_read_tasks_into(msg, len, max, NULL, fn, arg);
}

struct first {
  chk_task *t;
  const char **why;
  int rc, seen;
};

static void first_only(void *arg, int rc, chk_task *t, const char *why) {
  struct first *f = arg;
  if (f->seen++) {
    chk_task_wipe(t);
    return;
  }
  *f->t = *t;
  *f->why = why;
  f->rc = rc;
}

int chk_read_task(const uint8_t *msg, size_t len, chk_task *t,
                  const char **why) {
  struct first f = {t, why, PH_EINVAL, 0};
  (void)chk_read_tasks(msg, len, 1, first_only, &f);
  return f.rc;
}

int chk_pack_register(const char *cluster, const char *checker,
                      const char *instance, const char *zone,
                      uint32_t max_concurrency, const int *tiers,
                      size_t n_tiers, cp_buf *out) {
  Controlplane__V1__RegisterCheckerRequest r;
  controlplane__v1__register_checker_request__init(&r);
  Controlplane__V1__CheckTier t[3];
  if (n_tiers > 3)
    n_tiers = 3;
  for (size_t i = 0; i < n_tiers; i++)
    t[i] = (Controlplane__V1__CheckTier)tiers[i];
  r.cluster_id = (char *)cluster;
  r.checker_id = (char *)checker;
  r.instance_id = (char *)instance;
  r.zone = (char *)zone;
  r.max_concurrency = max_concurrency;
  r.n_tiers = n_tiers;
  r.tiers = t;
  r.supported_protocol_version =
      CONTROLPLANE__V1__PROTOCOL_VERSION__PROTOCOL_VERSION_V1;
  return cp_buf_pack(&r.base, out);
}

int chk_pack_watch(const char *checker, const char *session,
                   uint32_t max_tasks, cp_buf *out) {
  Controlplane__V1__WatchCheckTasksRequest r;
  controlplane__v1__watch_check_tasks_request__init(&r);
  r.checker_id = (char *)checker;
  r.session_id = (char *)session;
  r.max_tasks_per_message = max_tasks;
  return cp_buf_pack(&r.base, out);
}

int chk_pack_observations(const char *checker, const char *session,
                          uint64_t seq, const chk_obs *obs, size_t n,
                          cp_buf *out, uint8_t digest[32]) {
  Controlplane__V1__ReportObservationsRequest r;
  controlplane__v1__report_observations_request__init(&r);
  Controlplane__V1__HealthObservation *o = calloc(n ? n : 1, sizeof(*o));
  Controlplane__V1__HealthObservation **po = calloc(n ? n : 1, sizeof(*po));
  Google__Protobuf__Duration *lat = calloc(n ? n : 1, sizeof(*lat));
  Google__Protobuf__Timestamp *at = calloc(n ? n : 1, sizeof(*at));
  int rc = PH_ENOMEM;
  if (!o || !po || !lat || !at)
    goto out;
  for (size_t i = 0; i < n; i++) {
    const chk_obs *s = &obs[i];
    controlplane__v1__health_observation__init(&o[i]);
    google__protobuf__duration__init(&lat[i]);
    google__protobuf__timestamp__init(&at[i]);
    o[i].task_id = (char *)s->task_id;
    o[i].proxy_id = (char *)s->proxy_id;
    o[i].tier = (Controlplane__V1__CheckTier)s->tier;
    o[i].status = (Controlplane__V1__HealthStatus)s->status;
    cp_ms_to_dur(s->latency_ms, &lat[i]);
    o[i].latency = &lat[i];
    cp_ms_to_ts(s->observed_at_ms, &at[i]);
    o[i].observed_at = &at[i];
    o[i].target_group = (char *)s->target_group;
    o[i].egress_ip = (char *)s->egress_ip;
    o[i].anonymity = (Controlplane__V1__Anonymity)s->anonymity;
    o[i].anonymous = s->anonymity == CHK_ANON_ANONYMOUS ||
                     s->anonymity == CHK_ANON_ELITE;
    o[i].reason = (char *)(s->reason > 0 && s->reason < CHK_R_COUNT
                               ? chk_reason_names[s->reason]
                               : "");
    po[i] = &o[i];
  }
  /* Packed once: the ids (fields 1 and 2) then the rest, packed with
   * the ids empty (proto3 leaves them out), which is the bytes
   * cp_observation_digest hashes: the same bytes as a pack of the whole
   * message, and one SHA-256 over a buffer instead of a second pack
   * streamed into it piece by piece. */
  r.sequence = seq;
  r.n_observations = n;
  r.observations = po;
  Controlplane__V1__ReportObservationsRequest ids;
  controlplane__v1__report_observations_request__init(&ids);
  ids.checker_id = (char *)checker;
  ids.session_id = (char *)session;
  size_t head = protobuf_c_message_get_packed_size(&ids.base);
  size_t body = protobuf_c_message_get_packed_size(&r.base);
  out->len = 0;
  out->data = malloc(head + body ? head + body : 1);
  if (!out->data)
    goto out;
  if (protobuf_c_message_pack(&ids.base, out->data) != head ||
      protobuf_c_message_pack(&r.base, out->data + head) != body) {
    cp_buf_free(out);
    rc = PH_EINVAL;
    goto out;
  }
  out->len = head + body;
  unsigned int dl = 0;
  if (EVP_Digest(out->data + head, body, digest, &dl, EVP_sha256(), NULL) !=
          1 ||
      dl != 32) {
    cp_buf_free(out);
    goto out;
  }
  rc = PH_OK;
out:
  free(o);
  free(po);
  free(lat);
  free(at);
  return rc;
}

int chk_read_registered(const uint8_t *msg, size_t len, char *session,
                        size_t cap, int64_t *ttl_ms, const char **why) {
  Controlplane__V1__RegisterCheckerResponse *r =
      controlplane__v1__register_checker_response__unpack(NULL, len, msg);
  *ttl_ms = 0;
  if (!r) {
    *why = "not a RegisterCheckerResponse";
    return PH_EINVAL;
  }
  int rc = PH_EINVAL;
  if (r->protocol_version !=
      CONTROLPLANE__V1__PROTOCOL_VERSION__PROTOCOL_VERSION_V1)
    *why = "another protocol version";
  else if (copy(session, cap, r->session_id, 1))
    *why = "bad session id";
  else {
    if (r->session_ttl && !cp_dur_to_ms(r->session_ttl, ttl_ms))
      *ttl_ms = 0;
    rc = PH_OK;
  }
  controlplane__v1__register_checker_response__free_unpacked(r, NULL);
  return rc;
}

int chk_read_obs_ack(const uint8_t *msg, size_t len, uint64_t *acked) {
  return cp_wire_read_ack(
      &controlplane__v1__report_observations_response__descriptor, msg, len,
      acked);
}
