/* SPDX-License-Identifier: BSD-2-Clause */
/* libFuzzer target for the TunnelMesh frame codec
 * (modules/tunnel_common/proto/tm_proto.c), fed as the session feeds it: the
 * whole input is one WebSocket message. It decodes the frame, then the
 * payload decoder its type calls for, and checks the contract: a decoded
 * frame's header encodes back to the input's first 10 bytes and its
 * payload is the rest; a connection frame is on stream 0 and a stream
 * frame is not; what a payload decoder accepts is within its bounds and,
 * encoded again, decodes to the same value (OPEN_STREAM: to the same
 * bytes). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxyhost/connector.h"
#include "tunnel_common/proto/tm_proto.h"

static void check(int cond) {
  if (!cond)
    abort();
}

static int printable(const char *s, size_t max, size_t min) {
  size_t n = strnlen(s, max + 1);
  if (n < min || n > max)
    return 0;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e)
      return 0;
  return 1;
}

static void open_stream(const tm_frame *f) {
  tm_open_stream o;
  if (tm_open_stream_decode(f->payload, f->length, &o) != TM_OK)
    return;
  check(o.protocol == 1 && o.port > 0 && o.window <= TM_WINDOW_MAX);
  check(printable(o.host, TM_HOST_MAX, 1));
  check(strnlen(o.agent, TM_AGENT_MAX + 1) <= TM_AGENT_MAX);
  check(o.trace[0] == '\0' || tm_trace_valid(o.trace, strlen(o.trace)));
  uint8_t out[TM_OPEN_STREAM_MAX];
  int n = tm_open_stream_encode(&o, out, sizeof out);
  /* A bad trace decodes as none (replaced by the receiver). */
  check(o.trace_bad ? n > 0 && (uint32_t)n < f->length &&
                          memcmp(out, f->payload, (size_t)n) == 0
                    : n == (int)f->length &&
                          memcmp(out, f->payload, f->length) == 0);
}

static void open_result(const tm_frame *f) {
  tm_open_result r;
  if (tm_open_result_decode(f->payload, f->length, &r) != TM_OK)
    return;
  check(f->length <= TM_OPEN_RESULT_MAX);
  check(r.stage > PH_STAGE_NONE && r.stage < PH_STAGE_COUNT_);
  check(r.code >= 0 && r.code < PH_OPEN_CODE_COUNT_);
  check(r.accepted == (r.code == PH_OPEN_OK) && r.code_known >= 0);
  check(r.code_known || r.code == PH_OPEN_INTERNAL_ERROR);
  check(r.retryable == 0 || r.retryable == 1);
  check(r.retry_after_ms <= 3600000u && r.window <= TM_WINDOW_MAX);
  check(r.accepted || r.window == 0);
  uint8_t out[TM_OPEN_RESULT_MAX];
  int n = tm_open_result_encode(&r, out, sizeof out);
  check(n > 0 && memmem(out, (size_t)n, "message", 7) == NULL);
  tm_open_result r2;
  check(tm_open_result_decode(out, (size_t)n, &r2) == TM_OK);
  check(r2.accepted == r.accepted && r2.stage == r.stage &&
        r2.code == r.code && r2.code_known == 1 &&
        r2.retryable == r.retryable &&
        r2.retry_after_ms == r.retry_after_ms && r2.window == r.window);
}

static void metadata(const tm_frame *f) {
  tm_metadata m;
  if (tm_metadata_decode(f->payload, f->length, &m) != TM_OK)
    return;
  check(f->length <= TM_METADATA_MAX && (m.caps & ~TM_CAP_ALL) == 0);
  check(strnlen(m.agent_id, sizeof m.agent_id) < sizeof m.agent_id);
  check(strnlen(m.version, sizeof m.version) < sizeof m.version);
  int ack = f->type == TM_AGENT_METADATA_ACK;
  uint8_t out[TM_METADATA_MAX];
  int n = tm_metadata_encode(&m, ack, out, sizeof out);
  check(n > 0);
  tm_metadata m2;
  check(tm_metadata_decode(out, (size_t)n, &m2) == TM_OK);
  check(m2.caps == m.caps);
  if (!ack)
    check(strcmp(m2.agent_id, m.agent_id) == 0 &&
          strcmp(m2.version, m.version) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tm_frame f;
  int rc = tm_frame_decode(data, size, &f);
  check(rc == TM_OK || rc == TM_EPROTO);
  if (rc != TM_OK)
    return 0;
  check(size >= TM_HEADER_LEN && f.length == size - TM_HEADER_LEN &&
        f.length <= TM_MAX_PAYLOAD && f.payload == data + TM_HEADER_LEN);
  uint8_t h[TM_HEADER_LEN];
  tm_frame_header(h, f.type, f.flags, f.stream_id, f.length);
  check(memcmp(h, data, TM_HEADER_LEN) == 0);
  check(tm_frame_name(f.type) != NULL);
  if (!tm_frame_known(f.type)) {
    check(strcmp(tm_frame_name(f.type), "UNKNOWN") == 0);
    return 0; /* the session ignores it */
  }
  check(tm_frame_is_connection(f.type) ? f.stream_id == 0
                                       : f.stream_id != 0);
  check(f.type == TM_DATA ? (f.flags & ~TM_FLAG_FIN) == 0 : f.flags == 0);
  uint32_t v;
  switch (f.type) {
  case TM_OPEN_STREAM:
    open_stream(&f);
    break;
  case TM_OPEN_RESULT:
    open_result(&f);
    break;
  case TM_WINDOW_UPDATE:
  case TM_GOAWAY:
    if (tm_u32_decode(f.payload, f.length, &v) == TM_OK) {
      uint8_t u[4];
      tm_u32_encode(u, v);
      check(f.length == 4 && memcmp(u, f.payload, 4) == 0);
    }
    break;
  case TM_AGENT_METADATA:
  case TM_AGENT_METADATA_ACK:
    metadata(&f);
    break;
  default: /* DATA, RESET, PING, PONG: opaque or fixed bytes */
    break;
  }
  return 0;
}
