/* SPDX-License-Identifier: BSD-2-Clause */
/* The session's keys: their cross-key check and the tm_session_cfg they
 * fill (tm_conf.h). */
#include "tm_conf.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The key "prefix + name" as the role's table spells it (a stable
 * string for *key), or the unprefixed name when absent. */
static const char *key_name(const ph_conf_key *keys, const char *prefix,
                            const char *name) {
  size_t pl = strlen(prefix);
  for (const ph_conf_key *k = keys; k && k->name; k++)
    if (strncmp(k->name, prefix, pl) == 0 && strcmp(k->name + pl, name) == 0)
      return k->name;
  return name;
}

static int64_t val(ph_ctx *ctx, const ph_api *a, const char *prefix,
                   const char *name) {
  char k[96];
  snprintf(k, sizeof(k), "%s%s", prefix, name);
  return a->conf_int(ctx, k);
}

static uint32_t u32(ph_ctx *ctx, const ph_api *a, const char *prefix,
                    const char *name) {
  int64_t v = val(ctx, a, prefix, name);
  return v < 0 ? 0 : v > (int64_t)UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* The limits the session relies on (tm_session.c's cfg_valid: windows
 * within the protocol's, no frame above TM_MAX_PAYLOAD, every count a
 * u32), held here again so that a role whose table allows more (its
 * sample's bounds are the table's) fails at start, not per connection. */
static const struct {
  const char *name; /* after the prefix, or none (pfx 0) */
  int pfx;
  int64_t lo, hi;
} limits[] = {
    {"inbound_buffer_bytes", 1, 1, TM_WINDOW_MAX},
    {"outbound_buffer_bytes", 1, 1, TM_WINDOW_MAX},
    {"initial_window", 1, 1, TM_WINDOW_MAX},
    {"window_update_threshold", 1, 1, TM_WINDOW_MAX},
    {"max_frame_payload", 1, 1, TM_MAX_PAYLOAD},
    {"quantum", 1, 1, TM_WINDOW_MAX},
    {"control_queue_frames", 1, 1, UINT32_MAX},
    {"control_queue_bytes", 1, TM_HEADER_LEN + TM_METADATA_MAX, UINT32_MAX},
    {"violation_limit", 1, 1, UINT32_MAX},
    {"violation_window", 1, 1, UINT32_MAX},
    {"ping_interval", 0, 0, UINT32_MAX},
    {"ping_timeout", 0, 1, UINT32_MAX},
};

static int within_limits(ph_ctx *ctx, const ph_api *a, const char *prefix,
                         const ph_conf_key *keys, const char **key, char *why,
                         size_t whylen) {
  for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
    const char *p = limits[i].pfx ? prefix : "";
    int64_t v = val(ctx, a, p, limits[i].name);
    if (v >= limits[i].lo && v <= limits[i].hi)
      continue;
    *key = key_name(keys, p, limits[i].name);
    snprintf(why, whylen, "must be %lld to %lld (the session's limit)",
             (long long)limits[i].lo, (long long)limits[i].hi);
    return PH_EINVAL;
  }
  return PH_OK;
}

int tm_conf_check(ph_ctx *ctx, const ph_api *a, const char *prefix,
                  const ph_conf_key *keys, const char **key, char *why,
                  size_t whylen) {
  if (within_limits(ctx, a, prefix, keys, key, why, whylen) != PH_OK)
    return PH_EINVAL;
  int64_t win = val(ctx, a, prefix, "initial_window"),
          thr = val(ctx, a, prefix, "window_update_threshold"),
          mfp = val(ctx, a, prefix, "max_frame_payload"),
          inb = val(ctx, a, prefix, "inbound_buffer_bytes"),
          q = val(ctx, a, prefix, "quantum");
  const char *k = NULL;
  if (thr > win) {
    k = "window_update_threshold";
    snprintf(why, whylen, "must not exceed %sinitial_window", prefix);
  } else if (mfp > win) {
    k = "initial_window";
    snprintf(why, whylen,
             "must hold at least one frame (%smax_frame_payload)", prefix);
  } else if (inb < win) {
    k = "inbound_buffer_bytes";
    snprintf(why, whylen,
             "must hold the whole window (%sinitial_window): the peer may "
             "send that much before it waits",
             prefix);
  } else if (q < mfp) {
    k = "quantum";
    snprintf(why, whylen, "must be at least %smax_frame_payload", prefix);
  }
  if (k) {
    *key = key_name(keys, prefix, k);
    return PH_EINVAL;
  }
  int64_t pi = a->conf_int(ctx, "ping_interval");
  if (pi > 0 && a->conf_int(ctx, "ping_timeout") > 4 * pi) {
    *key = key_name(keys, "", "ping_timeout");
    snprintf(why, whylen, "must be at most 4 times ping_interval");
    return PH_EINVAL;
  }
  if (a->conf_int(ctx, "capabilities.flow_control") &&
      !a->conf_int(ctx, "capabilities.open_result")) {
    *key = key_name(keys, "", "capabilities.flow_control");
    snprintf(why, whylen,
             "needs capabilities.open_result (no subprotocol offers flow "
             "control alone)");
    return PH_EINVAL;
  }
  return PH_OK;
}

void tm_conf_session(ph_ctx *ctx, const ph_api *a, const char *prefix,
                     tm_session_cfg *s) {
  s->local_caps =
      a->conf_int(ctx, "capabilities.fair_writer") ? TM_CAP_FAIR_WRITER : 0;
  s->initial_window = u32(ctx, a, prefix, "initial_window");
  s->window_update_threshold = u32(ctx, a, prefix, "window_update_threshold");
  s->max_frame_payload = u32(ctx, a, prefix, "max_frame_payload");
  s->inbound_buffer_bytes = u32(ctx, a, prefix, "inbound_buffer_bytes");
  s->outbound_buffer_bytes = u32(ctx, a, prefix, "outbound_buffer_bytes");
  s->control_queue_frames = u32(ctx, a, prefix, "control_queue_frames");
  s->control_queue_bytes = u32(ctx, a, prefix, "control_queue_bytes");
  s->quantum = u32(ctx, a, prefix, "quantum");
  s->violation_limit = u32(ctx, a, prefix, "violation_limit");
  s->violation_window_ms = u32(ctx, a, prefix, "violation_window");
  s->ping_interval_ms = u32(ctx, a, "", "ping_interval");
  s->ping_timeout_ms = u32(ctx, a, "", "ping_timeout");
}

unsigned tm_conf_caps(ph_ctx *ctx, const ph_api *a) {
  unsigned caps = 0;
  if (a->conf_int(ctx, "capabilities.open_result"))
    caps |= TM_CAP_OPEN_RESULT;
  if (a->conf_int(ctx, "capabilities.flow_control"))
    caps |= TM_CAP_FLOW_CONTROL;
  /* The trace field is always offered; it is negotiated only with the
   * full combination (TM_SUBPROTO_TRACE), so it needs both above. */
  if ((caps & TM_CAP_OPEN_RESULT) && (caps & TM_CAP_FLOW_CONTROL))
    caps |= TM_CAP_TRACE;
  return caps;
}
