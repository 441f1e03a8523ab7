/* SPDX-License-Identifier: BSD-2-Clause */
/* libFuzzer target for the TunnelMesh payload decoders on raw bytes
 * (modules/tunnel_common/proto/tm_proto.c). Input byte 0 picks the decoder:
 * 0 OPEN_RESULT, 1 agent metadata, 2 OPEN_STREAM, 3 the server's
 * subprotocol selection (byte 1 is then the server's capabilities; the
 * rest is the Sec-WebSocket-Protocol offer), 4 the client's reading of a
 * selected name. It checks that what decodes is within its bounds and
 * encodes back to an equal value, and that a selection is one of the
 * three names, appears in the offer as a whole item, and needs no
 * capability the server lacks. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxyhost/connector.h"
#include "tunnel_common/proto/tm_proto.h"

static void check(int cond) {
  if (!cond)
    abort();
}

static int is_sep(char c) { return c == ',' || c == ' ' || c == '\t'; }

/* Whether name is a whole item of the offer. */
static int item_of(const char *offer, size_t len, const char *name) {
  size_t nl = strlen(name);
  for (size_t i = 0; i + nl <= len; i++)
    if ((i == 0 || is_sep(offer[i - 1])) && memcmp(offer + i, name, nl) == 0 &&
        (i + nl == len || is_sep(offer[i + nl])))
      return 1;
  return 0;
}

static void select_(const uint8_t *p, size_t len) {
  if (len < 1)
    return;
  unsigned caps = p[0];
  const char *offer = (const char *)p + 1;
  size_t olen = len - 1;
  const char *got = tm_subproto_select(offer, olen, caps);
  if (got == NULL)
    return;
  int c = tm_subproto_caps(got);
  check(c >= 0 && ((unsigned)c & ~caps) == 0);
  check(strcmp(got, TM_SUBPROTO_TRACE) == 0 ||
        strcmp(got, TM_SUBPROTO_FULL) == 0 ||
        strcmp(got, TM_SUBPROTO_OPEN) == 0 ||
        strcmp(got, TM_SUBPROTO_BASE) == 0);
  check(item_of(offer, olen, got));
  /* The client's offer for what was selected contains it. */
  char o[160];
  int n = tm_subproto_offer((unsigned)c, o, sizeof o);
  check(n > 0 && item_of(o, (size_t)n, got));
}

static void name_(const uint8_t *p, size_t len) {
  char s[128];
  size_t n = len < sizeof s - 1 ? len : sizeof s - 1;
  memcpy(s, p, n);
  s[n] = '\0';
  int c = tm_subproto_caps(s);
  check(c == -1 || c == 0 || c == TM_CAP_OPEN_RESULT ||
        c == (TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL) ||
        c == (TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL | TM_CAP_TRACE));
  check(tm_cap_from_name(s, strlen(s)) == 0 ||
        strcmp(tm_cap_name(tm_cap_from_name(s, strlen(s))), s) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  const uint8_t *p = data + 1;
  size_t len = size - 1;
  switch (data[0] % 5) {
  case 0: {
    tm_open_result r, r2;
    if (tm_open_result_decode(p, len, &r) != TM_OK)
      break;
    check(len <= TM_OPEN_RESULT_MAX);
    check(r.stage > PH_STAGE_NONE && r.stage < PH_STAGE_COUNT_ &&
          r.code >= 0 && r.code < PH_OPEN_CODE_COUNT_ &&
          r.accepted == (r.code == PH_OPEN_OK) &&
          (r.code_known || r.code == PH_OPEN_INTERNAL_ERROR) &&
          r.retry_after_ms <= 3600000u && r.window <= TM_WINDOW_MAX &&
          (r.accepted || r.window == 0));
    uint8_t out[TM_OPEN_RESULT_MAX];
    int n = tm_open_result_encode(&r, out, sizeof out);
    check(n > 0 && tm_open_result_decode(out, (size_t)n, &r2) == TM_OK);
    check(r2.accepted == r.accepted && r2.stage == r.stage &&
          r2.code == r.code && r2.retryable == r.retryable &&
          r2.retry_after_ms == r.retry_after_ms && r2.window == r.window);
    break;
  }
  case 1: {
    tm_metadata m, m2;
    if (tm_metadata_decode(p, len, &m) != TM_OK)
      break;
    check(len <= TM_METADATA_MAX && (m.caps & ~TM_CAP_ALL) == 0);
    uint8_t out[TM_METADATA_MAX];
    for (int ack = 0; ack < 2; ack++) {
      int n = tm_metadata_encode(&m, ack, out, sizeof out);
      check(n > 0 && tm_metadata_decode(out, (size_t)n, &m2) == TM_OK);
      check(m2.caps == m.caps);
      check(ack ? m2.agent_id[0] == '\0'
                : strcmp(m2.agent_id, m.agent_id) == 0 &&
                      strcmp(m2.version, m.version) == 0);
    }
    break;
  }
  case 2: {
    tm_open_stream o;
    if (tm_open_stream_decode(p, len, &o) != TM_OK)
      break;
    check(o.protocol == 1 && o.port > 0 && o.window <= TM_WINDOW_MAX &&
          strlen(o.host) >= 1 && strlen(o.host) <= TM_HOST_MAX &&
          strlen(o.agent) <= TM_AGENT_MAX);
    uint8_t out[TM_OPEN_STREAM_MAX];
    int n = tm_open_stream_encode(&o, out, sizeof out);
    /* A bad trace decodes as none (the receiver replaces it): the rest
     * round trips. */
    check(o.trace_bad ? n > 0 && (size_t)n < len && memcmp(out, p, (size_t)n) == 0
                      : n == (int)len && memcmp(out, p, len) == 0);
    break;
  }
  case 3:
    select_(p, len);
    break;
  default:
    name_(p, len);
    break;
  }
  return 0;
}
