/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The TunnelMesh wire codec (tm_proto.h; docs/protocol/tunnel.md). Pure:
 * caller buffers only, no I/O, no logging, no allocation (TM-PROTO-42).
 * The JSON payloads go through modules/lib/json.c's strict, bounded
 * reader and writer; the token arrays live on the stack and are bounded
 * below.
 */
#include "tm_proto.h"

#include <string.h>

#include "lib/bw.h"
#include "lib/json.h"
#include "proxyhost/connector.h"

/* A payload JSON holds at most this many values (keys count) and nests
 * at most this deep: OPEN_RESULT needs 15 and depth 1, metadata a few
 * more; the rest is room for fields a newer peer adds (ignored). */
#define TM_JSON_TOKS 256
#define TM_JSON_DEPTH 8
#define TM_RETRY_AFTER_MAX 3600000u

/* ---- frames ------------------------------------------------------------ */

static uint32_t get_u32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         (uint32_t)p[3];
}

static void put_u32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}

int tm_frame_known(uint8_t type) {
  return type >= TM_OPEN_STREAM && type <= TM_AGENT_METADATA_ACK;
}

int tm_frame_is_connection(uint8_t type) {
  switch (type) {
  case TM_PING:
  case TM_PONG:
  case TM_GOAWAY:
  case TM_AGENT_METADATA:
  case TM_AGENT_METADATA_ACK:
    return 1;
  default:
    return 0;
  }
}

const char *tm_frame_name(uint8_t type) {
  static const char *const n[] = {
      "UNKNOWN",     "OPEN_STREAM", "OPEN_RESULT",    "DATA",
      "WINDOW_UPDATE", "RESET",     "PING",           "PONG",
      "GOAWAY",      "AGENT_METADATA", "AGENT_METADATA_ACK"};
  return tm_frame_known(type) ? n[type] : n[0];
}

int tm_frame_decode(const uint8_t *msg, size_t len, tm_frame *f) {
  if (msg == NULL || f == NULL || len < TM_HEADER_LEN)
    return TM_EPROTO;
  uint32_t length = get_u32(msg + 6);
  if (length > TM_MAX_PAYLOAD || (size_t)length != len - TM_HEADER_LEN)
    return TM_EPROTO;
  uint8_t type = msg[0], flags = msg[1];
  uint32_t sid = get_u32(msg + 2);
  /* An unknown type is checked for its length only: a newer peer may give
   * it any stream id and flags, and the caller ignores it. */
  if (tm_frame_known(type)) {
    if (tm_frame_is_connection(type) ? sid != 0 : sid == 0)
      return TM_EPROTO;
    if (flags & ~(type == TM_DATA ? TM_FLAG_FIN : 0u))
      return TM_EPROTO;
  }
  f->type = type;
  f->flags = flags;
  f->stream_id = sid;
  f->length = length;
  f->payload = msg + TM_HEADER_LEN;
  return TM_OK;
}

void tm_frame_header(uint8_t out[TM_HEADER_LEN], uint8_t type, uint8_t flags,
                     uint32_t stream_id, uint32_t length) {
  out[0] = type;
  out[1] = flags;
  put_u32(out + 2, stream_id);
  put_u32(out + 6, length);
}

int tm_u32_decode(const uint8_t *p, size_t len, uint32_t *v) {
  if (p == NULL || v == NULL || len != 4)
    return TM_EPROTO;
  *v = get_u32(p);
  return TM_OK;
}

void tm_u32_encode(uint8_t out[4], uint32_t v) { put_u32(out, v); }

/* ---- OPEN_STREAM ----------------------------------------------------------
 * A host is 1..255 visible ASCII bytes (0x21..0x7e: a name or a literal
 * address; no space, no control byte, no NUL). An agent is 0..64 bytes of
 * an agent name ([a-z0-9._-], starting with a letter or digit, as the
 * authorization store spells them). */

static int host_ok(const uint8_t *h, size_t n) {
  if (n < 1 || n > TM_HOST_MAX)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (h[i] < 0x21 || h[i] > 0x7e)
      return 0;
  return 1;
}

static int agent_ok(const uint8_t *a, size_t n) {
  if (n > TM_AGENT_MAX)
    return 0;
  for (size_t i = 0; i < n; i++) {
    uint8_t c = a[i];
    int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-')))
      return 0;
  }
  return 1;
}

#define OPEN_FIXED 9 /* window 4, protocol 1, port 2, host_len 1, agent_len 1 */

int tm_trace_valid(const char *s, size_t n) {
  int nonzero = 0;
  if (s == NULL || n != TM_TRACE_LEN)
    return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return 0;
    nonzero |= c != '0';
  }
  return nonzero;
}

int tm_principal_valid(const char *s, size_t n) {
  if (s == NULL || n < 1 || n > TM_PRINCIPAL_MAX)
    return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
      return 0;
  }
  return 1;
}

int tm_open_stream_encode(const tm_open_stream *o, uint8_t *out, size_t cap) {
  if (o == NULL)
    return TM_EPROTO;
  size_t hl = strnlen(o->host, sizeof o->host);
  size_t al = strnlen(o->agent, sizeof o->agent);
  if (o->window > TM_WINDOW_MAX || o->protocol != PH_PROTO_TCP ||
      o->port == 0 || hl > TM_HOST_MAX || al > TM_AGENT_MAX ||
      !host_ok((const uint8_t *)o->host, hl) ||
      !agent_ok((const uint8_t *)o->agent, al))
    return TM_EPROTO;
  size_t tl = strnlen(o->trace, sizeof o->trace);
  if (tl && !tm_trace_valid(o->trace, tl))
    return TM_EPROTO;
  size_t pl = strnlen(o->principal, sizeof o->principal);
  if (pl && (!tl || !tm_principal_valid(o->principal, pl)))
    return TM_EPROTO;
  size_t n = OPEN_FIXED + hl + al + (tl ? 1 + tl : 0) + (pl ? 1 + pl : 0);
  if (out == NULL || cap < n)
    return TM_ESPACE;
  put_u32(out, o->window);
  out[4] = o->protocol;
  out[5] = (uint8_t)(o->port >> 8);
  out[6] = (uint8_t)o->port;
  out[7] = (uint8_t)hl;
  memcpy(out + 8, o->host, hl);
  out[8 + hl] = (uint8_t)al;
  memcpy(out + 9 + hl, o->agent, al);
  if (tl) {
    out[9 + hl + al] = (uint8_t)tl;
    memcpy(out + 10 + hl + al, o->trace, tl);
  }
  if (pl) {
    out[10 + hl + al + tl] = (uint8_t)pl;
    memcpy(out + 11 + hl + al + tl, o->principal, pl);
  }
  return (int)n;
}

int tm_open_stream_decode(const uint8_t *p, size_t len, tm_open_stream *o) {
  if (p == NULL || o == NULL || len < OPEN_FIXED + 1)
    return TM_EPROTO;
  uint32_t window = get_u32(p);
  uint8_t proto = p[4];
  uint16_t port = (uint16_t)(p[5] << 8 | p[6]);
  size_t hl = p[7];
  if (window > TM_WINDOW_MAX || proto != PH_PROTO_TCP || port == 0 ||
      len < OPEN_FIXED + hl)
    return TM_EPROTO;
  size_t al = p[8 + hl];
  if (len < OPEN_FIXED + hl + al || !host_ok(p + 8, hl) ||
      !agent_ok(p + 9 + hl, al))
    return TM_EPROTO;
  /* The payload is exactly its fields: after the agent, nothing or one
   * trace field (length 1..TM_TRACE_WIRE_MAX), then nothing or one
   * principal field (1..TM_PRINCIPAL_MAX, ending the payload); any other
   * trailing byte is malformed. */
  size_t rest = len - (OPEN_FIXED + hl + al), tl = 0, pl = 0;
  if (rest) {
    tl = p[9 + hl + al];
    if (tl < 1 || tl > TM_TRACE_WIRE_MAX || rest < 1 + tl)
      return TM_EPROTO;
    if (rest > 1 + tl) {
      pl = p[10 + hl + al + tl];
      if (pl < 1 || pl > TM_PRINCIPAL_MAX || rest != 2 + tl + pl ||
          !tm_principal_valid((const char *)p + 11 + hl + al + tl, pl))
        return TM_EPROTO;
    }
  }
  const char *trace = tl ? (const char *)p + 10 + hl + al : NULL;
  int trace_ok = tl && tm_trace_valid(trace, tl);
  o->window = window;
  o->protocol = proto;
  o->port = port;
  memcpy(o->host, p + 8, hl);
  o->host[hl] = '\0';
  memcpy(o->agent, p + 9 + hl, al);
  o->agent[al] = '\0';
  o->trace[0] = '\0';
  if (trace_ok) {
    memcpy(o->trace, trace, tl);
    o->trace[tl] = '\0';
  }
  o->trace_bad = tl && !trace_ok;
  o->principal[0] = '\0';
  if (pl) {
    memcpy(o->principal, p + 11 + hl + al + tl, pl);
    o->principal[pl] = '\0';
  }
  return TM_OK;
}

/* ---- OPEN_RESULT ----------------------------------------------------- */

/* The stage from its stable wire name (TM-PROTO-27), or -1. "none" is no
 * wire stage. */
static int stage_from(const json_doc *d, size_t i) {
  for (int s = PH_STAGE_NONE + 1; s < PH_STAGE_COUNT_; s++)
    if (json_str_eq(d, i, ph_open_stage_name(s)))
      return s;
  return -1;
}

static int code_from(const json_doc *d, size_t i) {
  static const char *const names[] = {PH_OPEN_CODE_NAMES};
  for (int c = 0; c < PH_OPEN_CODE_COUNT_; c++)
    if (json_str_eq(d, i, names[c]))
      return c;
  return -1;
}

int tm_open_result_encode(const tm_open_result *r, uint8_t *out, size_t cap) {
  if (r == NULL)
    return TM_EPROTO;
  int stage = r->stage;
  /* A success may come with ph_open_result's PH_STAGE_NONE: the wire
   * calls it "connect" (TM-PROTO-24). */
  if (r->accepted && stage == PH_STAGE_NONE)
    stage = PH_STAGE_CONNECT;
  if (stage <= PH_STAGE_NONE || stage >= PH_STAGE_COUNT_ || r->code < 0 ||
      r->code >= PH_OPEN_CODE_COUNT_ ||
      (r->accepted != 0) != (r->code == PH_OPEN_OK) ||
      r->retry_after_ms > TM_RETRY_AFTER_MAX || r->window > TM_WINDOW_MAX ||
      (!r->accepted && (r->window != 0 || r->legacy)))
    return TM_EPROTO;
  /* The longest result is about 150 bytes, far below the bound: build it
   * in a local buffer so that a short caller buffer is TM_ESPACE, not a
   * JSON failure. */
  char buf[TM_OPEN_RESULT_MAX + 1];
  json_w w;
  json_w_init(&w, buf, sizeof buf);
  json_w_obj(&w);
  json_w_key(&w, "accepted");
  json_w_bool(&w, r->accepted != 0);
  json_w_key(&w, "stage");
  json_w_str(&w, ph_open_stage_name(stage));
  json_w_key(&w, "code");
  json_w_str(&w, ph_open_code_name(r->code));
  json_w_key(&w, "retryable");
  json_w_bool(&w, r->retryable != 0);
  json_w_key(&w, "retry_after_ms");
  json_w_uint(&w, r->retry_after_ms);
  if (r->window != 0) {
    json_w_key(&w, "window");
    json_w_uint(&w, r->window);
  }
  if (r->legacy) {
    json_w_key(&w, "open_mode");
    json_w_str(&w, "legacy");
  }
  /* No "message" or any free text, ever (TM-PROTO-26). */
  json_w_obj_end(&w);
  long n = json_w_finish(&w);
  if (n < 0 || (size_t)n > TM_OPEN_RESULT_MAX)
    return TM_EPROTO;
  if (out == NULL || cap < (size_t)n)
    return TM_ESPACE;
  memcpy(out, buf, (size_t)n);
  return (int)n;
}

/* p (len bytes, at most max) parsed into d over toks
 * (TM_JSON_TOKS): 0 when it is a JSON object. */
static int parse_object(json_doc *d, json_tok *toks, const uint8_t *p,
                        size_t len, size_t max) {
  if (p == NULL || len > max)
    return -1;
  if (json_parse(d, (const char *)p, len, toks, TM_JSON_TOKS, TM_JSON_DEPTH,
                 NULL) != JSON_OK ||
      json_type_of(d, 0) != JSON_OBJECT)
    return -1;
  return 0;
}

static int get_bool(const json_doc *d, const char *key, int *v) {
  long i = json_get(d, 0, key);
  return i < 0 ? -1 : json_bool(d, (size_t)i, v);
}

static int get_uint(const json_doc *d, long i, uint32_t max, uint32_t *v) {
  int64_t x;
  if (json_int(d, (size_t)i, &x) != 0 || x < 0 || x > (int64_t)max)
    return -1;
  *v = (uint32_t)x;
  return 0;
}

int tm_open_result_decode(const uint8_t *p, size_t len, tm_open_result *r) {
  json_tok toks[TM_JSON_TOKS];
  json_doc d;
  if (r == NULL || parse_object(&d, toks, p, len, TM_OPEN_RESULT_MAX) != 0)
    return TM_EPROTO;
  tm_open_result x = {0};
  long si = json_get(&d, 0, "stage"), ci = json_get(&d, 0, "code");
  long ri = json_get(&d, 0, "retry_after_ms"), wi = json_get(&d, 0, "window");
  long mi = json_get(&d, 0, "open_mode");
  if (get_bool(&d, "accepted", &x.accepted) != 0 ||
      get_bool(&d, "retryable", &x.retryable) != 0 || si < 0 || ci < 0 ||
      ri < 0 || json_type_of(&d, (size_t)si) != JSON_STRING ||
      json_type_of(&d, (size_t)ci) != JSON_STRING ||
      get_uint(&d, ri, TM_RETRY_AFTER_MAX, &x.retry_after_ms) != 0)
    return TM_EPROTO;
  x.stage = stage_from(&d, (size_t)si);
  if (x.stage < 0)
    return TM_EPROTO;
  x.code = code_from(&d, (size_t)ci);
  x.code_known = x.code >= 0;
  if (!x.code_known)
    x.code = PH_OPEN_INTERNAL_ERROR; /* TM-PROTO-29 */
  /* A result must say one thing: accepted exactly when the code is ok
   * (an unknown code is never a success). */
  if (x.accepted != (x.code_known && x.code == PH_OPEN_OK))
    return TM_EPROTO;
  if (wi >= 0) {
    /* Present: a real window (no zero window, TM-CFG-25), and only on an
     * acceptance. */
    if (!x.accepted || get_uint(&d, wi, TM_WINDOW_MAX, &x.window) != 0 ||
        x.window == 0)
      return TM_EPROTO;
  }
  if (mi >= 0) {
    /* A string; on an acceptance anything but "strict" is legacy (a
     * newer mode is not a confirmed connect either); ignored on a
     * refusal. */
    if (json_type_of(&d, (size_t)mi) != JSON_STRING)
      return TM_EPROTO;
    x.legacy = x.accepted && !json_str_eq(&d, (size_t)mi, "strict");
  }
  *r = x;
  return TM_OK;
}

/* ---- capabilities ------------------------------------------------------ */

static const struct {
  unsigned bit;
  const char *name;
} caps_tab[] = {
    {TM_CAP_OPEN_RESULT, "stream_open_result.v1"},
    {TM_CAP_FLOW_CONTROL, "stream_flow_control.v1"},
    {TM_CAP_FAIR_WRITER, "stream_fair_writer.v1"},
    {TM_CAP_TRACE, "stream_trace.v1"},
    {TM_CAP_PRINCIPAL, "stream_principal.v1"},
};
#define CAPS_N (sizeof caps_tab / sizeof caps_tab[0])

const char *tm_cap_name(unsigned cap_bit) {
  for (size_t i = 0; i < CAPS_N; i++)
    if (caps_tab[i].bit == cap_bit)
      return caps_tab[i].name;
  return NULL;
}

unsigned tm_cap_from_name(const char *name, size_t len) {
  if (name == NULL)
    return 0;
  for (size_t i = 0; i < CAPS_N; i++)
    if (strlen(caps_tab[i].name) == len &&
        memcmp(caps_tab[i].name, name, len) == 0)
      return caps_tab[i].bit;
  return 0;
}

/* ---- subprotocols ------------------------------------------------------ */

/* The offerable names, in the client's priority order (TM-PROTO-14), and
 * the wire capabilities each means (the fair writer is local: TM-PROTO-12,
 * never negotiated). */
#define TM_CAP_WIRE                                                         \
  (TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL | TM_CAP_TRACE | TM_CAP_PRINCIPAL)
static const struct {
  const char *name;
  unsigned caps;
} sub_tab[] = {
    {TM_SUBPROTO_PRINCIPAL, TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL |
                                TM_CAP_TRACE | TM_CAP_PRINCIPAL},
    {TM_SUBPROTO_TRACE,
     TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL | TM_CAP_TRACE},
    {TM_SUBPROTO_FULL, TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL},
    {TM_SUBPROTO_OPEN, TM_CAP_OPEN_RESULT},
    {TM_SUBPROTO_BASE, 0},
};
#define SUB_N (sizeof sub_tab / sizeof sub_tab[0])

int tm_subproto_offer(unsigned caps, char *out, size_t cap) {
  ph_bw w;
  ph_bw_init(&w, out, cap, PH_BW_TEXT);
  for (size_t i = 0; i < SUB_N; i++) {
    if ((sub_tab[i].caps & ~caps) != 0)
      continue;
    if (ph_bw_len(&w))
      ph_bw_putc(&w, ',');
    ph_bw_puts(&w, sub_tab[i].name);
  }
  return ph_bw_over(&w) ? TM_ESPACE : (int)ph_bw_len(&w);
}

static int sub_index(const char *s, size_t len) {
  for (size_t i = 0; i < SUB_N; i++)
    if (strlen(sub_tab[i].name) == len && memcmp(sub_tab[i].name, s, len) == 0)
      return (int)i;
  return -1;
}

const char *tm_subproto_select(const char *offer, size_t len, unsigned caps) {
  if (offer == NULL)
    return NULL;
  /* Items in the client's order, split on commas and blanks; empty items
   * and names we do not know are skipped. The first whose capabilities
   * the server has all of wins (TM-PROTO-15): the client lists them in
   * its priority order. */
  size_t i = 0;
  while (i < len) {
    while (i < len && (offer[i] == ',' || offer[i] == ' ' || offer[i] == '\t'))
      i++;
    size_t start = i;
    while (i < len && offer[i] != ',' && offer[i] != ' ' && offer[i] != '\t')
      i++;
    if (i == start)
      continue;
    int k = sub_index(offer + start, i - start);
    if (k >= 0 && (sub_tab[k].caps & ~(caps & TM_CAP_WIRE)) == 0)
      return sub_tab[k].name;
  }
  return NULL;
}

int tm_subproto_caps(const char *name) {
  if (name == NULL || name[0] == '\0')
    return 0; /* no subprotocol: an old server, legacy (TM-PROTO-16) */
  int k = sub_index(name, strlen(name));
  return k < 0 ? -1 : (int)sub_tab[k].caps;
}

/* ---- AGENT_METADATA / ACK ---------------------------------------------- */

int tm_metadata_encode(const tm_metadata *m, int ack, uint8_t *out,
                       size_t cap) {
  if (m == NULL)
    return TM_EPROTO;
  size_t al = strnlen(m->agent_id, sizeof m->agent_id);
  size_t vl = strnlen(m->version, sizeof m->version);
  if (al >= sizeof m->agent_id || vl >= sizeof m->version)
    return TM_EPROTO;
  char buf[TM_METADATA_MAX + 1];
  json_w w;
  json_w_init(&w, buf, sizeof buf);
  json_w_obj(&w);
  if (!ack) {
    json_w_key(&w, "agent_id");
    json_w_strn(&w, m->agent_id, al);
    json_w_key(&w, "version");
    json_w_strn(&w, m->version, vl);
  }
  json_w_key(&w, "capabilities");
  json_w_arr(&w);
  for (size_t i = 0; i < CAPS_N; i++)
    if (m->caps & caps_tab[i].bit)
      json_w_str(&w, caps_tab[i].name);
  json_w_arr_end(&w);
  if (!ack && m->max_streams) {
    if (m->max_streams > TM_METADATA_STREAMS_MAX)
      return TM_EPROTO;
    json_w_key(&w, "max_streams");
    json_w_uint(&w, m->max_streams);
  }
  json_w_obj_end(&w);
  long n = json_w_finish(&w);
  if (n < 0 || (size_t)n > TM_METADATA_MAX)
    return TM_EPROTO;
  if (out == NULL || cap < (size_t)n)
    return TM_ESPACE;
  memcpy(out, buf, (size_t)n);
  return (int)n;
}

/* An optional string field: absent leaves out empty; present it must be a
 * string that fits. */
static int opt_str(const json_doc *d, const char *key, char *out,
                   size_t cap) {
  out[0] = '\0';
  long i = json_get(d, 0, key);
  if (i < 0)
    return 0;
  return json_str(d, (size_t)i, out, cap) < 0 ? -1 : 0;
}

int tm_metadata_decode(const uint8_t *p, size_t len, tm_metadata *m) {
  json_tok toks[TM_JSON_TOKS];
  json_doc d;
  if (m == NULL || parse_object(&d, toks, p, len, TM_METADATA_MAX) != 0)
    return TM_EPROTO;
  tm_metadata x;
  memset(&x, 0, sizeof x);
  if (opt_str(&d, "agent_id", x.agent_id, sizeof x.agent_id) != 0 ||
      opt_str(&d, "version", x.version, sizeof x.version) != 0)
    return TM_EPROTO;
  long ci = json_get(&d, 0, "capabilities");
  if (ci >= 0) {
    /* Absent: an old agent, 0 (TM-PROTO-19). Present: an array of
     * strings; names we do not know are ignored. */
    if (json_type_of(&d, (size_t)ci) != JSON_ARRAY)
      return TM_EPROTO;
    size_t k = (size_t)ci + 1;
    for (uint32_t e = 0; e < d.toks[ci].size; e++) {
      if (json_type_of(&d, k) != JSON_STRING)
        return TM_EPROTO;
      /* A name longer than any we know does not fit: unknown, ignored. */
      char name[32];
      long l = json_str(&d, k, name, sizeof name);
      if (l > 0)
        x.caps |= tm_cap_from_name(name, (size_t)l);
      k = d.toks[k].next;
    }
  }
  long si = json_get(&d, 0, "max_streams");
  /* Present: a real capacity (no zero, no more than a session holds). */
  if (si >= 0 && (get_uint(&d, si, TM_METADATA_STREAMS_MAX,
                           &x.max_streams) != 0 ||
                  x.max_streams == 0))
    return TM_EPROTO;
  *m = x;
  return TM_OK;
}
