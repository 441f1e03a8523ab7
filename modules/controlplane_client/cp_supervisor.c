/* SPDX-License-Identifier: BSD-2-Clause */
/* The gateway's session supervisor (cp_supervisor.h): pure. */
#include <string.h>

#include "lib/backoff.h"
#include "cp_supervisor.h"

cp_status_class cp_status_classify(cp_call call, int code) {
  switch (code) {
  case CP_GRPC_OK:
    return CP_ST_OK;
  case CP_GRPC_INVALID_ARGUMENT:
  case CP_GRPC_PERMISSION_DENIED:
  case CP_GRPC_UNAUTHENTICATED:
  case CP_GRPC_UNIMPLEMENTED:
    return CP_ST_FATAL;
  case CP_GRPC_FAILED_PRECONDITION:
    /* At registration it can only be the protocol version (CP-7-4). */
    return call == CP_CALL_REGISTER ? CP_ST_FATAL : CP_ST_RETRY;
  default:
    return CP_ST_RETRY;
  }
}

static uint32_t clip(uint32_t v, uint32_t lo, uint32_t hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

/* Every failure of the session ends here: the calls are cancelled and a
 * new session starts after the backoff, or the supervisor stops. */
static cp_sup_action fail(cp_sup *s, cp_call call, int code, int64_t now) {
  if (s->state == CP_SUP_FATAL || s->state == CP_SUP_IDLE)
    return CP_ACT_NONE;
  s->runtime_in_flight = 0;
  s->has_base = 0;
  if (cp_status_classify(call, code) == CP_ST_FATAL) {
    s->state = CP_SUP_FATAL;
    s->fatal_call = call;
    s->fatal_code = code;
    return CP_ACT_FATAL;
  }
  uint32_t rnd = s->lim.rnd ? s->lim.rnd(s->lim.rnd_arg) : UINT32_MAX;
  s->wait_ms = ph_backoff_ms(s->attempt, s->lim.backoff_min_ms,
                             s->lim.backoff_max_ms, rnd);
  if (s->attempt < 31)
    s->attempt++;
  s->backoff_until_ms = now + s->wait_ms;
  s->state = CP_SUP_BACKOFF;
  return CP_ACT_BACKOFF;
}

cp_sup_action cp_sup_start(cp_sup *s, const cp_sup_limits *lim) {
  memset(s, 0, sizeof(*s));
  s->lim = *lim;
  if (s->lim.backoff_min_ms < 1)
    s->lim.backoff_min_ms = 1;
  if (s->lim.backoff_max_ms < s->lim.backoff_min_ms)
    s->lim.backoff_max_ms = s->lim.backoff_min_ms;
  if (s->lim.runtime_min_ms < 1)
    s->lim.runtime_min_ms = 1;
  if (s->lim.runtime_max_ms < s->lim.runtime_min_ms)
    s->lim.runtime_max_ms = s->lim.runtime_min_ms;
  s->state = CP_SUP_REGISTERING;
  return CP_ACT_REGISTER;
}

cp_sup_action cp_sup_registered(cp_sup *s, int code, uint64_t epoch,
                                uint32_t runtime_interval_ms,
                                uint32_t max_stale_ms, int64_t now_ms) {
  if (s->state != CP_SUP_REGISTERING)
    return CP_ACT_NONE;
  if (code != CP_GRPC_OK)
    return fail(s, CP_CALL_REGISTER, code, now_ms);
  s->epoch = epoch;
  s->runtime_interval_ms =
      clip(runtime_interval_ms, s->lim.runtime_min_ms, s->lim.runtime_max_ms);
  /* A zero max stale age would make every view stale at once: the
   * controller did not say, so the bound is used. */
  s->max_stale_ms = max_stale_ms == 0 ? s->lim.max_stale_max_ms
                                      : clip(max_stale_ms, 1,
                                             s->lim.max_stale_max_ms);
  s->report_sequence = 0;
  s->resend = 0;
  s->state = CP_SUP_WATCHING;
  return CP_ACT_WATCH;
}

cp_sup_action cp_sup_snapshot(cp_sup *s, int reject_reason, uint64_t version,
                              uint64_t epoch, const uint8_t checksum[32]) {
  if (s->state != CP_SUP_WATCHING && s->state != CP_SUP_RUNNING)
    return CP_ACT_NONE;
  s->ack_version = version;
  s->ack_epoch = epoch;
  memcpy(s->ack_checksum, checksum, sizeof(s->ack_checksum));
  if (reject_reason != 0) {
    s->nack_reason = reject_reason;
    s->state = CP_SUP_NACKING;
    return CP_ACT_NACK;
  }
  s->state = CP_SUP_SWAPPING;
  return CP_ACT_BUILD;
}

cp_sup_action cp_sup_build_failed(cp_sup *s, int reject_reason) {
  if (s->state != CP_SUP_SWAPPING)
    return CP_ACT_NONE;
  s->nack_reason = reject_reason ? reject_reason : 3; /* MALFORMED */
  s->state = CP_SUP_NACKING;
  return CP_ACT_NACK;
}

cp_sup_action cp_sup_swapped(cp_sup *s, int64_t now_ms,
                             int64_t valid_until_ms) {
  if (s->state != CP_SUP_SWAPPING)
    return CP_ACT_NONE;
  s->view_valid_until_ms = valid_until_ms;
  s->view_stale_at_ms = now_ms + (int64_t)s->max_stale_ms;
  s->state = CP_SUP_ACKING;
  return CP_ACT_ACK;
}

static cp_sup_action next_report(cp_sup *s, int64_t now_ms) {
  if (!s->resend) {
    s->report_sequence++;
    s->report_epoch = s->base_epoch;
  }
  s->runtime_in_flight = 1;
  s->next_runtime_ms = now_ms + (int64_t)s->runtime_interval_ms;
  return CP_ACT_RUNTIME;
}

cp_sup_action cp_sup_acked(cp_sup *s, int code, int64_t now_ms) {
  if (s->state != CP_SUP_ACKING && s->state != CP_SUP_NACKING)
    return CP_ACT_NONE;
  if (code == CP_SUP_STALE_EPOCH) {
    /* The controller sends a snapshot of the new epoch on this stream
     * (its watch sees every epoch change); the one refused stays in use
     * meanwhile. Its baseline, if any, is the controller's too. */
    s->state = CP_SUP_WATCHING;
    return CP_ACT_NONE;
  }
  if (code != CP_GRPC_OK)
    return fail(s, CP_CALL_ACK, code, now_ms);
  if (s->state == CP_SUP_NACKING) {
    /* The controller's runtime fence is closed now (CP-1-10): no
     * heartbeat can pass until a positive ACK; wait for a snapshot. */
    s->has_base = 0;
    s->state = CP_SUP_WATCHING;
    return CP_ACT_NONE;
  }
  s->has_base = 1;
  s->base_version = s->ack_version;
  s->base_epoch = s->ack_epoch;
  s->attempt = 0; /* a healthy session: the next failure starts low */
  s->state = CP_SUP_RUNNING;
  if (s->runtime_in_flight)
    return CP_ACT_NONE; /* its answer schedules the next one */
  s->resend = 0;
  return next_report(s, now_ms);
}

cp_sup_action cp_sup_timer(cp_sup *s, int64_t now_ms) {
  if (s->state == CP_SUP_BACKOFF && now_ms >= s->backoff_until_ms) {
    s->state = CP_SUP_REGISTERING;
    return CP_ACT_REGISTER;
  }
  if (s->state == CP_SUP_RUNNING && !s->runtime_in_flight &&
      now_ms >= s->next_runtime_ms)
    return next_report(s, now_ms);
  return CP_ACT_NONE;
}

cp_sup_action cp_sup_channel_ready(cp_sup *s) {
  if (s->state != CP_SUP_BACKOFF)
    return CP_ACT_NONE;
  s->state = CP_SUP_REGISTERING;
  return CP_ACT_REGISTER;
}

cp_sup_action cp_sup_runtime_done(cp_sup *s, int code, int64_t now_ms) {
  if (!s->runtime_in_flight)
    return CP_ACT_NONE;
  s->runtime_in_flight = 0;
  if (code == CP_GRPC_OK) {
    s->resend = 0;
    return CP_ACT_NONE;
  }
  if (code == CP_SUP_STALE_EPOCH) {
    /* Not applied, nothing to resend: the next report is a new one, on
     * the baseline of the snapshot the controller sends next. */
    s->resend = 0;
    if (s->state == CP_SUP_RUNNING && s->report_epoch == s->base_epoch)
      s->state = CP_SUP_WATCHING;
    return CP_ACT_NONE;
  }
  /* A transport error leaves the report's fate unknown: resend the same
   * sequence with the same content, which the controller accepts as an
   * idempotent replay if it had (CP-2-10, CP-5-16). */
  if (code == CP_GRPC_UNAVAILABLE || code == CP_GRPC_DEADLINE_EXCEEDED ||
      code == CP_GRPC_CANCELLED || code == CP_GRPC_RESOURCE_EXHAUSTED) {
    s->resend = 1;
    return CP_ACT_NONE;
  }
  return fail(s, CP_CALL_RUNTIME, code, now_ms);
}

cp_sup_action cp_sup_failed(cp_sup *s, cp_call call, int code,
                            int64_t now_ms) {
  /* The stream's normal end is not an error, but the session ends with
   * it all the same (CP-3-11, CP-3-12). */
  if (code == CP_GRPC_OK)
    code = CP_GRPC_UNAVAILABLE;
  return fail(s, call, code, now_ms);
}

int cp_sup_ready(const cp_sup *s, int64_t now_ms) {
  return s->view_valid_until_ms > 0 && now_ms < s->view_valid_until_ms &&
         now_ms < s->view_stale_at_ms;
}

int64_t cp_sup_next_timer_ms(const cp_sup *s, int64_t now_ms) {
  int64_t t = -1;
#define EARLIER(x)                                                             \
  do {                                                                         \
    if ((x) > 0 && (t < 0 || (x) < t))                                         \
      t = (x);                                                                 \
  } while (0)
  if (s->state == CP_SUP_BACKOFF)
    EARLIER(s->backoff_until_ms);
  if (s->state == CP_SUP_RUNNING && !s->runtime_in_flight)
    EARLIER(s->next_runtime_ms);
  if (cp_sup_ready(s, now_ms)) {
    EARLIER(s->view_valid_until_ms);
    EARLIER(s->view_stale_at_ms);
  }
#undef EARLIER
  return t;
}
