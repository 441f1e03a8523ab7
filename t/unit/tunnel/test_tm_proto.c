/* SPDX-License-Identifier: BSD-2-Clause */
/* modules/tunnel_common/proto/tm_proto.c: the TunnelMesh wire codec. Frames
 * (every type round trip, every malformed header, unknown types),
 * OPEN_STREAM bounds, OPEN_RESULT JSON (the seed's examples byte for byte,
 * TM-PROTO-23..29: the size bound, every stable stage and code, unknown
 * codes, no free text, unknown fields, duplicates, wrong types, the
 * window), capabilities, the WebSocket subprotocols (every server × client
 * combination, TM-PROTO-14..16, TM-TEST-2) and agent metadata (old and new
 * agents, TM-PROTO-18/19, TM-TEST-3). */
#include <stdlib.h>
#include <string.h>

#include "proxyhost/connector.h"
#include "tap.h"
#include "tunnel_common/proto/tm_proto.h"

static uint8_t msg[TM_MAX_FRAME + 16];

static int frame(uint8_t type, uint8_t flags, uint32_t sid,
                 const void *payload, uint32_t len) {
  tm_frame_header(msg, type, flags, sid, len);
  if (len)
    memcpy(msg + TM_HEADER_LEN, payload, len);
  return TM_HEADER_LEN + (int)len;
}

/* ---- frames ------------------------------------------------------------ */

static void test_frame_roundtrip(void) {
  static const struct {
    uint8_t type;
    uint8_t flags;
    uint32_t sid;
    const char *name;
    int conn;
  } t[] = {
      {TM_OPEN_STREAM, 0, 1, "OPEN_STREAM", 0},
      {TM_OPEN_RESULT, 0, 3, "OPEN_RESULT", 0},
      {TM_DATA, 0, 0xffffffffu, "DATA", 0},
      {TM_DATA, TM_FLAG_FIN, 7, "DATA", 0},
      {TM_WINDOW_UPDATE, 0, 9, "WINDOW_UPDATE", 0},
      {TM_RESET, 0, 11, "RESET", 0},
      {TM_PING, 0, 0, "PING", 1},
      {TM_PONG, 0, 0, "PONG", 1},
      {TM_GOAWAY, 0, 0, "GOAWAY", 1},
      {TM_AGENT_METADATA, 0, 0, "AGENT_METADATA", 1},
      {TM_AGENT_METADATA_ACK, 0, 0, "AGENT_METADATA_ACK", 1},
  };
  const uint8_t pl[] = {0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    char name[96];
    int n = frame(t[i].type, t[i].flags, t[i].sid, pl, (uint32_t)(i % 9));
    tm_frame f;
    memset(&f, 0xaa, sizeof f);
    int rc = tm_frame_decode(msg, (size_t)n, &f);
    snprintf(name, sizeof name, "TM-TEST-1 frame %s%s round trip", t[i].name,
             t[i].flags ? "+FIN" : "");
    ok(rc == TM_OK && f.type == t[i].type && f.flags == t[i].flags &&
           f.stream_id == t[i].sid && f.length == i % 9 &&
           f.payload == msg + TM_HEADER_LEN &&
           memcmp(f.payload, pl, i % 9) == 0,
       name);
    snprintf(name, sizeof name, "%s is known, named, %s frame", t[i].name,
             t[i].conn ? "a connection" : "a stream");
    ok(tm_frame_known(t[i].type) &&
           tm_frame_is_connection(t[i].type) == t[i].conn &&
           strcmp(tm_frame_name(t[i].type), t[i].name) == 0,
       name);
  }
  /* The header byte by byte (docs/protocol/tunnel.md). */
  tm_frame_header(msg, TM_DATA, TM_FLAG_FIN, 0x01020304u, 0x00010000u);
  const uint8_t want[] = {0x03, 0x01, 0x01, 0x02, 0x03,
                          0x04, 0x00, 0x01, 0x00, 0x00};
  ok(memcmp(msg, want, sizeof want) == 0,
     "header: type, flags, stream id and length big-endian");
  /* The largest payload decodes. */
  memset(msg + TM_HEADER_LEN, 'x', TM_MAX_PAYLOAD);
  tm_frame_header(msg, TM_DATA, 0, 1, TM_MAX_PAYLOAD);
  tm_frame f;
  ok(tm_frame_decode(msg, TM_MAX_FRAME, &f) == TM_OK &&
         f.length == TM_MAX_PAYLOAD,
     "a payload of exactly TM_MAX_PAYLOAD (65536) decodes");
  /* u32 payloads. */
  uint8_t u[4];
  uint32_t v = 0;
  tm_u32_encode(u, 0x80000001u);
  ok(u[0] == 0x80 && u[3] == 0x01 && tm_u32_decode(u, 4, &v) == TM_OK &&
         v == 0x80000001u,
     "u32 payload round trip (WINDOW_UPDATE, GOAWAY)");
  is_int(tm_u32_decode(u, 3, &v), TM_EPROTO, "u32 payload of 3 bytes refused");
  is_int(tm_u32_decode(u, 5, &v), TM_EPROTO, "u32 payload of 5 bytes refused");
  is_int(tm_u32_decode(u, 0, &v), TM_EPROTO, "empty u32 payload refused");
}

static void test_frame_malformed(void) {
  tm_frame f;
  int bad = 0;
  frame(TM_PING, 0, 0, "12345678", 8);
  for (size_t n = 0; n < TM_HEADER_LEN; n++)
    bad += tm_frame_decode(msg, n, &f) == TM_EPROTO;
  is_int(bad, TM_HEADER_LEN, "every message shorter than the header refused");
  ok(tm_frame_decode(NULL, 18, &f) == TM_EPROTO, "NULL message refused");

  frame(TM_DATA, 0, 1, "abcd", 4);
  is_int(tm_frame_decode(msg, TM_HEADER_LEN + 3, &f), TM_EPROTO,
         "length above the message refused (truncated payload)");
  is_int(tm_frame_decode(msg, TM_HEADER_LEN + 5, &f), TM_EPROTO,
         "length below the message refused (trailing bytes)");
  tm_frame_header(msg, TM_DATA, 0, 1, 0xffffffffu);
  is_int(tm_frame_decode(msg, TM_HEADER_LEN, &f), TM_EPROTO,
         "length 0xffffffff refused");
  memset(msg + TM_HEADER_LEN, 0, TM_MAX_PAYLOAD + 1);
  tm_frame_header(msg, TM_DATA, 0, 1, TM_MAX_PAYLOAD + 1);
  is_int(tm_frame_decode(msg, TM_MAX_FRAME + 1, &f), TM_EPROTO,
         "payload above TM_MAX_PAYLOAD refused even when the length matches");

  static const uint8_t conn[] = {TM_PING, TM_PONG, TM_GOAWAY,
                                 TM_AGENT_METADATA, TM_AGENT_METADATA_ACK};
  static const uint8_t strm[] = {TM_OPEN_STREAM, TM_OPEN_RESULT, TM_DATA,
                                 TM_WINDOW_UPDATE, TM_RESET};
  for (size_t i = 0; i < 5; i++) {
    char name[96];
    int n = frame(conn[i], 0, 1, NULL, 0);
    snprintf(name, sizeof name, "connection frame %s on stream 1 refused",
             tm_frame_name(conn[i]));
    is_int(tm_frame_decode(msg, (size_t)n, &f), TM_EPROTO, name);
    n = frame(conn[i], 0, 0x80000000u, NULL, 0);
    snprintf(name, sizeof name, "connection frame %s on stream 2^31 refused",
             tm_frame_name(conn[i]));
    is_int(tm_frame_decode(msg, (size_t)n, &f), TM_EPROTO, name);
    n = frame(strm[i], 0, 0, NULL, 0);
    snprintf(name, sizeof name, "stream frame %s on stream 0 refused",
             tm_frame_name(strm[i]));
    is_int(tm_frame_decode(msg, (size_t)n, &f), TM_EPROTO, name);
  }
  /* Flags: FIN on DATA only, nothing else anywhere. */
  int refused = 0, tried = 0;
  for (unsigned fl = 1; fl < 256; fl++) {
    if (fl == TM_FLAG_FIN)
      continue;
    int n = frame(TM_DATA, (uint8_t)fl, 1, NULL, 0);
    tried++;
    refused += tm_frame_decode(msg, (size_t)n, &f) == TM_EPROTO;
  }
  is_int(refused, tried, "DATA with any flag but FIN refused (254 values)");
  refused = tried = 0;
  for (uint8_t t = TM_OPEN_STREAM; t <= TM_AGENT_METADATA_ACK; t++) {
    if (t == TM_DATA)
      continue;
    for (unsigned fl = 1; fl < 256; fl++) {
      int n = frame(t, (uint8_t)fl, tm_frame_is_connection(t) ? 0 : 1, NULL,
                    0);
      tried++;
      refused += tm_frame_decode(msg, (size_t)n, &f) == TM_EPROTO;
    }
  }
  is_int(refused, tried, "any flag (FIN included) on a type other than DATA "
                         "refused");
}

static void test_frame_unknown(void) {
  static const uint8_t unk[] = {0x00, 0x0b, 0x10, 0x7f, 0xff};
  for (size_t i = 0; i < sizeof unk; i++) {
    char name[96];
    tm_frame f;
    int n = frame(unk[i], 0x80, i % 2 ? 0 : 5, "xyz", 3);
    snprintf(name, sizeof name,
             "unknown type 0x%02x with a well-formed header decodes, "
             "reported unknown",
             unk[i]);
    ok(tm_frame_decode(msg, (size_t)n, &f) == TM_OK && f.type == unk[i] &&
           f.length == 3 && !tm_frame_known(unk[i]) &&
           !tm_frame_is_connection(unk[i]) &&
           strcmp(tm_frame_name(unk[i]), "UNKNOWN") == 0,
       name);
  }
  tm_frame f;
  tm_frame_header(msg, 0x42, 0, 0, 10);
  is_int(tm_frame_decode(msg, TM_HEADER_LEN + 9, &f), TM_EPROTO,
         "an unknown type's length is still checked");
}

/* ---- OPEN_STREAM ------------------------------------------------------- */

static tm_open_stream os_base(void) {
  tm_open_stream o;
  memset(&o, 0, sizeof o);
  o.window = 262144;
  o.protocol = 1;
  o.port = 443;
  strcpy(o.host, "example.com");
  strcpy(o.agent, "agent-1");
  return o;
}

static int os_eq(const tm_open_stream *a, const tm_open_stream *b) {
  return a->window == b->window && a->protocol == b->protocol &&
         a->port == b->port && strcmp(a->host, b->host) == 0 &&
         strcmp(a->agent, b->agent) == 0 && strcmp(a->trace, b->trace) == 0;
}

static int os_rt(const tm_open_stream *o) {
  uint8_t b[600];
  tm_open_stream d;
  memset(&d, 0x55, sizeof d);
  int n = tm_open_stream_encode(o, b, sizeof b);
  return n > 0 && tm_open_stream_decode(b, (size_t)n, &d) == TM_OK &&
         os_eq(o, &d);
}

/* Decodes a hand-built payload: window, protocol, port, host, agent. */
static int os_raw(uint32_t window, uint8_t proto, uint16_t port,
                  const char *host, size_t hl, const char *agent, size_t al,
                  size_t extra) {
  uint8_t b[600];
  size_t n = 0;
  tm_u32_encode(b, window);
  n = 4;
  b[n++] = proto;
  b[n++] = (uint8_t)(port >> 8);
  b[n++] = (uint8_t)port;
  b[n++] = (uint8_t)hl;
  memcpy(b + n, host, hl);
  n += hl;
  b[n++] = (uint8_t)al;
  memcpy(b + n, agent, al);
  n += al;
  memset(b + n, 0, extra);
  n += extra;
  tm_open_stream o;
  return tm_open_stream_decode(b, n, &o);
}

static void test_open_stream(void) {
  tm_open_stream o = os_base();
  uint8_t b[600];
  int n = tm_open_stream_encode(&o, b, sizeof b);
  const uint8_t want[] = {0x00, 0x04, 0x00, 0x00, 0x01, 0x01, 0xbb, 11,
                          'e',  'x',  'a',  'm',  'p',  'l',  'e',  '.',
                          'c',  'o',  'm',  7,    'a',  'g',  'e',  'n',
                          't',  '-',  '1'};
  ok(n == (int)sizeof want && memcmp(b, want, sizeof want) == 0,
     "TM-P2-9 OPEN_STREAM layout: window, protocol, port, host_len, host, "
     "agent_len, agent");
  ok(os_rt(&o), "OPEN_STREAM round trip");
  o.window = 0;
  o.agent[0] = '\0';
  ok(os_rt(&o), "OPEN_STREAM without window (legacy) and agent (server to "
                "agent) round trip");
  o = os_base();
  o.window = TM_WINDOW_MAX;
  o.port = 65535;
  ok(os_rt(&o), "window TM_WINDOW_MAX and port 65535 round trip");
  o.window = TM_WINDOW_MAX + 1;
  is_int(tm_open_stream_encode(&o, b, sizeof b), TM_EPROTO,
         "encode: window above TM_WINDOW_MAX refused");
  is_int(os_raw(TM_WINDOW_MAX + 1, 1, 80, "h", 1, "", 0, 0), TM_EPROTO,
         "decode: window above TM_WINDOW_MAX refused");

  o = os_base();
  memset(o.host, 'a', TM_HOST_MAX);
  o.host[TM_HOST_MAX] = '\0';
  ok(os_rt(&o), "host of 255 bytes round trips");
  strcpy(o.host, "h");
  ok(os_rt(&o), "host of 1 byte round trips");
  o.host[0] = '\0';
  is_int(tm_open_stream_encode(&o, b, sizeof b), TM_EPROTO,
         "encode: empty host refused");
  is_int(os_raw(0, 1, 80, "", 0, "", 0, 0), TM_EPROTO,
         "decode: empty host refused");
  strcpy(o.host, "[2001:db8::1]");
  ok(os_rt(&o), "an IPv6 literal host round trips");
  static const char *const bad_hosts[] = {"a b", "a\tb", "a\x7f", "a\x80",
                                          "caf\xc3\xa9", "a\nb"};
  for (size_t i = 0; i < sizeof bad_hosts / sizeof bad_hosts[0]; i++) {
    char name[96];
    o = os_base();
    strcpy(o.host, bad_hosts[i]);
    snprintf(name, sizeof name, "host with a non-visible byte refused (%zu)",
             i);
    ok(tm_open_stream_encode(&o, b, sizeof b) == TM_EPROTO &&
           os_raw(0, 1, 80, bad_hosts[i], strlen(bad_hosts[i]), "", 0, 0) ==
               TM_EPROTO,
       name);
  }
  is_int(os_raw(0, 1, 80, "a\0b", 3, "", 0, 0), TM_EPROTO,
         "host with a NUL refused");

  o = os_base();
  memset(o.agent, 'a', TM_AGENT_MAX);
  o.agent[TM_AGENT_MAX] = '\0';
  ok(os_rt(&o), "agent of 64 bytes round trips");
  memset(o.agent, 'a', sizeof o.agent); /* 65 bytes, no NUL */
  is_int(tm_open_stream_encode(&o, b, sizeof b), TM_EPROTO,
         "encode: agent of 65 bytes refused");
  char a65[65];
  memset(a65, 'a', sizeof a65);
  is_int(os_raw(0, 1, 80, "h", 1, a65, 65, 0), TM_EPROTO,
         "decode: agent of 65 bytes refused");
  static const char *const bad_agents[] = {"Agent", "-a", ".a", "a b",
                                           "a/b",   "a\x01"};
  for (size_t i = 0; i < sizeof bad_agents / sizeof bad_agents[0]; i++) {
    char name[96];
    snprintf(name, sizeof name,
             "agent outside [a-z0-9._-] or not starting alnum refused (%s)",
             bad_agents[i][1] == 1 ? "ctl" : bad_agents[i]);
    ok(os_raw(0, 1, 80, "h", 1, bad_agents[i], strlen(bad_agents[i]), 0) ==
           TM_EPROTO,
       name);
  }
  ok(os_raw(0, 1, 80, "h", 1, "0a._-z", 6, 0) == TM_OK,
     "agent of the name alphabet accepted");

  o = os_base();
  o.port = 0;
  is_int(tm_open_stream_encode(&o, b, sizeof b), TM_EPROTO,
         "encode: port 0 refused");
  is_int(os_raw(0, 1, 0, "h", 1, "", 0, 0), TM_EPROTO,
         "decode: port 0 refused");
  for (unsigned p = 0; p < 256; p++) {
    if (p == 1)
      continue;
    if (os_raw(0, (uint8_t)p, 80, "h", 1, "", 0, 0) != TM_EPROTO) {
      ok(0, "decode: protocol other than 1 (tcp) refused");
      break;
    }
    if (p == 255)
      ok(1, "decode: protocol other than 1 (tcp) refused (255 values)");
  }
  o = os_base();
  o.protocol = 2;
  is_int(tm_open_stream_encode(&o, b, sizeof b), TM_EPROTO,
         "encode: protocol 2 refused");
  is_int(os_raw(0, 1, 80, "h", 1, "", 0, 1), TM_EPROTO,
         "decode: a trailing byte refused");

  o = os_base();
  n = tm_open_stream_encode(&o, b, sizeof b);
  int bad = 0;
  tm_open_stream d;
  for (int k = 0; k < n; k++)
    bad += tm_open_stream_decode(b, (size_t)k, &d) == TM_EPROTO;
  is_int(bad, n, "every truncation of a valid OPEN_STREAM refused");
  b[7] = 200; /* host_len pointing past the end */
  is_int(tm_open_stream_decode(b, (size_t)n, &d), TM_EPROTO,
         "host_len past the payload refused");
  is_int(tm_open_stream_encode(&o, b, (size_t)n - 1), TM_ESPACE,
         "encode into a buffer one byte short: TM_ESPACE");
  is_int(tm_open_stream_encode(&o, b, (size_t)n), n,
         "encode into a buffer of exactly its size");
}

/* Issue 24 item 10: the trace field after the agent. */
static void test_open_stream_trace(void) {
  static const char *const tr = "4bf92f3577b34da6a3ce929d0e0e4736";
  tm_open_stream o = os_base(), d;
  uint8_t b[TM_OPEN_STREAM_MAX], c[TM_OPEN_STREAM_MAX + 80];
  int n0 = tm_open_stream_encode(&o, b, sizeof b);
  strcpy(o.trace, tr);
  int n = tm_open_stream_encode(&o, b, sizeof b);
  is_int(n, n0 + 1 + 32, "issue 24 item 10: a trace adds its length byte "
                         "and 32 bytes after the agent");
  ok(os_rt(&o), "... and round trips");
  ok(tm_open_stream_decode(b, (size_t)n0, &d) == TM_OK && d.trace[0] == 0 &&
         !d.trace_bad,
     "an OPEN_STREAM without the field decodes with no trace");
  static const char *const bad[] = {
      "4BF92F3577B34DA6A3CE929D0E0E4736", "00000000000000000000000000000000",
      "4bf92f3577b34da6a3ce929d0e0e473",  "4bf92f3577b34da6a3ce929d0e0e47366",
      "4bf92f3577b34da6-3ce929d0e0e4736", "4bf92f3577b34da6 3ce929d0e0e4736"};
  int replaced = 0, refused_enc = 0;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    size_t tl = strlen(bad[i]);
    memcpy(c, b, (size_t)n0);
    c[n0] = (uint8_t)tl;
    memcpy(c + n0 + 1, bad[i], tl);
    memset(&d, 0x55, sizeof d);
    replaced += tm_open_stream_decode(c, (size_t)n0 + 1 + tl, &d) == TM_OK &&
                d.trace[0] == 0 && d.trace_bad && strcmp(d.host, o.host) == 0;
    tm_open_stream e = os_base();
    snprintf(e.trace, sizeof e.trace, "%s", bad[i]);
    refused_enc += tm_open_stream_encode(&e, b, sizeof b) == TM_EPROTO ||
                   strlen(bad[i]) > TM_TRACE_LEN;
  }
  is_int(replaced, 6,
         "a well-framed trace that is not 32 lowercase hex digits (or is all "
         "zero) decodes as none, trace_bad set: the receiver replaces it");
  is_int(refused_enc, 6, "... and is never written");
  /* framing: length 0, above 64, short, long: the OPEN_STREAM is malformed */
  memcpy(c, b, (size_t)n0);
  c[n0] = 0;
  is_int(tm_open_stream_decode(c, (size_t)n0 + 1, &d), TM_EPROTO,
         "a trace length of 0 refused");
  c[n0] = 65;
  memset(c + n0 + 1, 'a', 65);
  is_int(tm_open_stream_decode(c, (size_t)n0 + 66, &d), TM_EPROTO,
         "a trace length above 64 refused");
  c[n0] = 64;
  memset(c + n0 + 1, 'a', 64);
  ok(tm_open_stream_decode(c, (size_t)n0 + 65, &d) == TM_OK && d.trace_bad,
     "a 64-byte trace field is framed: replaced, not refused");
  c[n0] = 32;
  memcpy(c + n0 + 1, tr, 32);
  is_int(tm_open_stream_decode(c, (size_t)n0 + 32, &d), TM_EPROTO,
         "a trace length past the payload refused");
  c[n0 + 33] = 'x';
  is_int(tm_open_stream_decode(c, (size_t)n0 + 34, &d), TM_EPROTO,
         "a byte after the trace refused");
  /* docs/protocol/tunnel.md's worked example, byte for byte */
  static const uint8_t worked[] = {
      0x00, 0x04, 0x00, 0x00, 0x01, 0x01, 0xbb, 0x0b, 'e', 'x', 'a', 'm',
      'p',  'l',  'e',  '.',  'c',  'o',  'm',  0x07, 'a', 'g', 'e', 'n',
      't',  '-',  '1',  0x20, '4',  'b',  'f',  '9',  '2', 'f', '3', '5',
      '7',  '7',  'b',  '3',  '4',  'd',  'a',  '6',  'a', '3', 'c', 'e',
      '9',  '2',  '9',  'd',  '0',  'e',  '0',  'e',  '4', '7', '3', '6'};
  o = os_base();
  strcpy(o.trace, tr);
  n = tm_open_stream_encode(&o, b, sizeof b);
  ok(n == (int)sizeof worked && memcmp(b, worked, sizeof worked) == 0,
     "the specification's worked OPEN_STREAM (with its trace), byte for "
     "byte");
}

/* Issue 27: the principal field after the trace (relay links). */
static void test_open_stream_principal(void) {
  static const char *const tr = "4bf92f3577b34da6a3ce929d0e0e4736";
  static const char *const tok = "tok_0123456789abcdef";
  tm_open_stream o = os_base(), d;
  uint8_t b[TM_OPEN_STREAM_MAX], c[TM_OPEN_STREAM_MAX + 80];
  strcpy(o.trace, tr);
  int n0 = tm_open_stream_encode(&o, b, sizeof b);
  strcpy(o.principal, tok);
  int n = tm_open_stream_encode(&o, b, sizeof b);
  is_int(n, n0 + 1 + 20,
         "issue 27: a principal adds its length byte and the token id after "
         "the trace");
  ok(tm_open_stream_decode(b, (size_t)n, &d) == TM_OK &&
         strcmp(d.principal, tok) == 0 && strcmp(d.trace, tr) == 0 &&
         strcmp(d.host, o.host) == 0,
     "... and round trips with the trace");
  ok(tm_open_stream_decode(b, (size_t)n0, &d) == TM_OK && d.principal[0] == 0,
     "an OPEN_STREAM with a trace and no principal: none");
  tm_open_stream e = os_base();
  strcpy(e.principal, tok);
  is_int(tm_open_stream_encode(&e, b, sizeof b), TM_EPROTO,
         "a principal without a trace is never written");
  static const char *const bad[] = {"tok 1", "tok\"1", "t\xc3\xa9", "a/b"};
  int refused = 0, refused_enc = 0;
  n0 = tm_open_stream_encode(&o, b, sizeof b) - 21; /* up to the trace */
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    size_t pl = strlen(bad[i]);
    memcpy(c, b, (size_t)n0);
    c[n0] = (uint8_t)pl;
    memcpy(c + n0 + 1, bad[i], pl);
    refused += tm_open_stream_decode(c, (size_t)n0 + 1 + pl, &d) == TM_EPROTO;
    e = o;
    snprintf(e.principal, sizeof e.principal, "%s", bad[i]);
    refused_enc += tm_open_stream_encode(&e, b + 0, 0) == TM_EPROTO;
  }
  is_int(refused, 4, "a principal outside [A-Za-z0-9._-]: malformed");
  is_int(refused_enc, 4, "... and never written");
  n0 = tm_open_stream_encode(&o, b, sizeof b) - 21;
  memcpy(c, b, (size_t)n0);
  c[n0] = 0;
  is_int(tm_open_stream_decode(c, (size_t)n0 + 1, &d), TM_EPROTO,
         "a principal length of 0 refused");
  c[n0] = 65;
  memset(c + n0 + 1, 'a', 65);
  is_int(tm_open_stream_decode(c, (size_t)n0 + 66, &d), TM_EPROTO,
         "a principal length above 64 refused");
  c[n0] = 64;
  ok(tm_open_stream_decode(c, (size_t)n0 + 65, &d) == TM_OK &&
         strlen(d.principal) == 64,
     "a 64-byte principal decodes");
  c[n0] = 20;
  memcpy(c + n0 + 1, tok, 20);
  is_int(tm_open_stream_decode(c, (size_t)n0 + 20, &d), TM_EPROTO,
         "a principal length past the payload refused");
  c[n0 + 21] = 'x';
  is_int(tm_open_stream_decode(c, (size_t)n0 + 22, &d), TM_EPROTO,
         "a byte after the principal refused");
  ok(tm_principal_valid(tok, 20) && !tm_principal_valid(tok, 0) &&
         !tm_principal_valid(NULL, 1),
     "tm_principal_valid");
}

/* ---- OPEN_RESULT ------------------------------------------------------- */

static int or_dec(const char *s, tm_open_result *r) {
  return tm_open_result_decode((const uint8_t *)s, strlen(s), r);
}

static const char *const stage_names[] = {
    "authorization", "selection", "relay",  "queue",
    "dns",           "connect",   "policy", "protocol"};
static const char *const code_names[] = {PH_OPEN_CODE_NAMES};

static void test_open_result_seed(void) {
  const char *ok_s = "{\"accepted\":true,\"stage\":\"connect\",\"code\":"
                     "\"ok\",\"retryable\":false,\"retry_after_ms\":0}";
  const char *fail_s =
      "{\"accepted\":false,\"stage\":\"dns\",\"code\":\"host_unreachable\","
      "\"retryable\":true,\"retry_after_ms\":1000}";
  uint8_t b[TM_OPEN_RESULT_MAX];
  tm_open_result r = {1, PH_STAGE_CONNECT, PH_OPEN_OK, 0, 0, 0, 0, 0};
  int n = tm_open_result_encode(&r, b, sizeof b);
  ok(n == (int)strlen(ok_s) && memcmp(b, ok_s, (size_t)n) == 0,
     "TM-PROTO-24 the success example, byte for byte");
  r.stage = PH_STAGE_NONE;
  n = tm_open_result_encode(&r, b, sizeof b);
  ok(n == (int)strlen(ok_s) && memcmp(b, ok_s, (size_t)n) == 0,
     "TM-PROTO-24 a success with stage none is written as connect");
  tm_open_result f = {0, PH_STAGE_DNS, PH_OPEN_HOST_UNREACHABLE, 0, 1, 1000,
                      0, 0};
  n = tm_open_result_encode(&f, b, sizeof b);
  ok(n == (int)strlen(fail_s) && memcmp(b, fail_s, (size_t)n) == 0,
     "TM-PROTO-24 the failure example, byte for byte");
  tm_open_result d;
  ok(or_dec(ok_s, &d) == TM_OK && d.accepted == 1 &&
         d.stage == PH_STAGE_CONNECT && d.code == PH_OPEN_OK &&
         d.code_known == 1 && d.retryable == 0 && d.retry_after_ms == 0 &&
         d.window == 0,
     "TM-PROTO-23 the success example decodes");
  ok(or_dec(fail_s, &d) == TM_OK && d.accepted == 0 &&
         d.stage == PH_STAGE_DNS && d.code == PH_OPEN_HOST_UNREACHABLE &&
         d.code_known == 1 && d.retryable == 1 && d.retry_after_ms == 1000,
     "TM-PROTO-23 the failure example decodes");
  is_int(tm_open_result_encode(&f, b, (size_t)n - 1), TM_ESPACE,
         "encode into a buffer one byte short: TM_ESPACE");
}

/* Issue 24 item 3: an acceptance towards a legacy hop says so. */
static void test_open_result_legacy(void) {
  const char *want = "{\"accepted\":true,\"stage\":\"relay\",\"code\":"
                     "\"ok\",\"retryable\":false,\"retry_after_ms\":0,"
                     "\"window\":262144,\"open_mode\":\"legacy\"}";
  tm_open_result r = {.accepted = 1, .stage = PH_STAGE_RELAY,
                      .code = PH_OPEN_OK, .window = 262144, .legacy = 1};
  uint8_t b[TM_OPEN_RESULT_MAX];
  int n = tm_open_result_encode(&r, b, sizeof b);
  ok(n == (int)strlen(want) && memcmp(b, want, (size_t)n) == 0,
     "issue 24 item 3: a legacy acceptance is written with "
     "\"open_mode\":\"legacy\" last");
  tm_open_result d;
  ok(or_dec(want, &d) == TM_OK && d.accepted && d.legacy &&
         d.stage == PH_STAGE_RELAY,
     "... and read back as legacy");
  ok(or_dec("{\"accepted\":true,\"stage\":\"connect\",\"code\":\"ok\","
            "\"retryable\":false,\"retry_after_ms\":0,"
            "\"open_mode\":\"strict\"}", &d) == TM_OK && !d.legacy,
     "\"open_mode\":\"strict\" is strict");
  ok(or_dec("{\"accepted\":true,\"stage\":\"connect\",\"code\":\"ok\","
            "\"retryable\":false,\"retry_after_ms\":0,"
            "\"open_mode\":\"optimistic\"}", &d) == TM_OK && d.legacy,
     "an unknown open_mode is never a confirmed connect: legacy");
  is_int(or_dec("{\"accepted\":true,\"stage\":\"connect\",\"code\":\"ok\","
                "\"retryable\":false,\"retry_after_ms\":0,"
                "\"open_mode\":1}", &d),
         TM_EPROTO, "a mistyped open_mode is refused");
  r.accepted = 0;
  r.code = PH_OPEN_TIMEOUT;
  r.window = 0;
  is_int(tm_open_result_encode(&r, b, sizeof b), TM_EPROTO,
         "a refusal never carries open_mode");
}

/* {"accepted":false,...,"pad":"xxx"} of exactly total bytes. */
static size_t padded(char *out, size_t total) {
  const char *head = "{\"accepted\":false,\"stage\":\"queue\",\"code\":"
                     "\"queue_full\",\"retryable\":true,\"retry_after_ms\":"
                     "50,\"pad\":\"";
  size_t h = strlen(head);
  size_t pad = total - h - 2;
  memcpy(out, head, h);
  memset(out + h, 'x', pad);
  memcpy(out + h + pad, "\"}", 2);
  return total;
}

static void test_open_result_bounds(void) {
  static char big[TM_OPEN_RESULT_MAX + 2];
  tm_open_result d;
  size_t n = padded(big, TM_OPEN_RESULT_MAX);
  ok(tm_open_result_decode((uint8_t *)big, n, &d) == TM_OK &&
         d.code == PH_OPEN_QUEUE_FULL,
     "TM-PROTO-25 TM-TEST-1 a result of 1024 bytes accepted");
  n = padded(big, TM_OPEN_RESULT_MAX + 1);
  is_int(tm_open_result_decode((uint8_t *)big, n, &d), TM_EPROTO,
         "TM-PROTO-25 TM-TEST-1 a result of 1025 bytes refused");

  /* Every stable stage, every stable code (TM-PROTO-27/28). */
  int good = 0;
  for (int s = PH_STAGE_AUTHORIZATION; s < PH_STAGE_COUNT_; s++) {
    for (int c = PH_OPEN_FORBIDDEN; c < PH_OPEN_CODE_COUNT_; c++) {
      tm_open_result r = {0, s, c, 0, c % 2, (uint32_t)c * 100, 0, 0};
      uint8_t b[TM_OPEN_RESULT_MAX];
      int len = tm_open_result_encode(&r, b, sizeof b);
      char text[TM_OPEN_RESULT_MAX + 1];
      memcpy(text, b, len > 0 ? (size_t)len : 0);
      text[len > 0 ? len : 0] = '\0';
      good += len > 0 &&
              tm_open_result_decode(b, (size_t)len, &d) == TM_OK &&
              d.stage == s && d.code == c && d.code_known &&
              !d.accepted && d.retryable == c % 2 &&
              d.retry_after_ms == (uint32_t)c * 100 &&
              strstr(text, stage_names[s - 1]) &&
              strstr(text, code_names[c]) &&
              /* TM-PROTO-26: only the five fields, never free text. */
              !strstr(text, "message") && !strstr(text, "window");
    }
  }
  is_int(good, 8 * 9,
         "TM-PROTO-26/27/28 TM-TEST-1 every stable stage x failure code "
         "round trips with only the five fields");
  for (int s = PH_STAGE_AUTHORIZATION; s < PH_STAGE_COUNT_; s++) {
    char j[256], name[96];
    snprintf(j, sizeof j,
             "{\"accepted\":false,\"stage\":\"%s\",\"code\":\"timeout\","
             "\"retryable\":false,\"retry_after_ms\":0}",
             stage_names[s - 1]);
    snprintf(name, sizeof name, "TM-PROTO-27 stage %s decodes",
             stage_names[s - 1]);
    ok(or_dec(j, &d) == TM_OK && d.stage == s, name);
  }
  for (int c = 1; c < PH_OPEN_CODE_COUNT_; c++) {
    char j[256], name[96];
    snprintf(j, sizeof j,
             "{\"accepted\":false,\"stage\":\"relay\",\"code\":\"%s\","
             "\"retryable\":false,\"retry_after_ms\":0}",
             code_names[c]);
    snprintf(name, sizeof name, "TM-PROTO-28 code %s decodes, known",
             code_names[c]);
    ok(or_dec(j, &d) == TM_OK && d.code == c && d.code_known, name);
  }
  static const char *const bad_stages[] = {
      "none", "Connect", "connect ", "", "dial", "authorisation", "dns\\u0000"};
  for (size_t i = 0; i < sizeof bad_stages / sizeof bad_stages[0]; i++) {
    char j[256], name[96];
    snprintf(j, sizeof j,
             "{\"accepted\":false,\"stage\":\"%s\",\"code\":\"timeout\","
             "\"retryable\":false,\"retry_after_ms\":0}",
             bad_stages[i]);
    snprintf(name, sizeof name,
             "TM-PROTO-27 stage \"%s\" outside the stable set refused",
             bad_stages[i]);
    is_int(or_dec(j, &d), TM_EPROTO, name);
  }
  static const char *const unk_codes[] = {"teapot", "OK", "ok ", "",
                                          "internal error"};
  for (size_t i = 0; i < sizeof unk_codes / sizeof unk_codes[0]; i++) {
    char j[256], name[96];
    snprintf(j, sizeof j,
             "{\"accepted\":false,\"stage\":\"connect\",\"code\":\"%s\","
             "\"retryable\":true,\"retry_after_ms\":5}",
             unk_codes[i]);
    snprintf(name, sizeof name,
             "TM-PROTO-29 unknown code \"%s\" -> internal_error, "
             "code_known=0",
             unk_codes[i]);
    ok(or_dec(j, &d) == TM_OK && d.code == PH_OPEN_INTERNAL_ERROR &&
           d.code_known == 0 && d.accepted == 0,
       name);
  }
  is_int(or_dec("{\"accepted\":true,\"stage\":\"connect\",\"code\":\"yes\","
                "\"retryable\":false,\"retry_after_ms\":0}",
                &d),
         TM_EPROTO, "TM-PROTO-29 accepted=true with an unknown code refused");
}

static void test_open_result_strict(void) {
  tm_open_result d;
  /* Unknown fields are ignored, whatever their shape. */
  ok(or_dec("{\"v\":2,\"accepted\":false,\"stage\":\"policy\",\"code\":"
            "\"forbidden\",\"retryable\":false,\"retry_after_ms\":0,"
            "\"message\":\"secret detail\",\"extra\":{\"a\":[1,2,{}]},"
            "\"n\":null}",
            &d) == TM_OK &&
         d.code == PH_OPEN_FORBIDDEN && d.stage == PH_STAGE_POLICY,
     "unknown fields ignored (a peer's message too, never surfaced)");
  ok(or_dec(" { \"retry_after_ms\" : 0 , \"retryable\" : false , \"code\" : "
            "\"ok\" , \"stage\" : \"connect\" , \"accepted\" : true } ",
            &d) == TM_OK &&
         d.accepted,
     "fields in any order with whitespace");
  static const struct {
    const char *j, *what;
  } bad[] = {
      {"{\"accepted\":false,\"accepted\":false,\"stage\":\"dns\",\"code\":"
       "\"timeout\",\"retryable\":false,\"retry_after_ms\":0}",
       "duplicate key refused"},
      {"{\"accepted\":true,\"stage\":\"connect\",\"code\":\"ok\",\"code\":"
       "\"ok\",\"retryable\":false,\"retry_after_ms\":0}",
       "duplicate code refused"},
      {"{\"stage\":\"dns\",\"code\":\"timeout\",\"retryable\":false,"
       "\"retry_after_ms\":0}",
       "missing accepted refused"},
      {"{\"accepted\":false,\"code\":\"timeout\",\"retryable\":false,"
       "\"retry_after_ms\":0}",
       "missing stage refused"},
      {"{\"accepted\":false,\"stage\":\"dns\",\"retryable\":false,"
       "\"retry_after_ms\":0}",
       "missing code refused"},
      {"{\"accepted\":false,\"stage\":\"dns\",\"code\":\"timeout\","
       "\"retry_after_ms\":0}",
       "missing retryable refused"},
      {"{\"accepted\":false,\"stage\":\"dns\",\"code\":\"timeout\","
       "\"retryable\":false}",
       "missing retry_after_ms refused"},
      {"{\"accepted\":\"false\",\"stage\":\"dns\",\"code\":\"timeout\","
       "\"retryable\":false,\"retry_after_ms\":0}",
       "accepted as a string refused"},
      {"{\"accepted\":0,\"stage\":\"dns\",\"code\":\"timeout\","
       "\"retryable\":false,\"retry_after_ms\":0}",
       "accepted as a number refused"},
      {"{\"accepted\":false,\"stage\":5,\"code\":\"timeout\","
       "\"retryable\":false,\"retry_after_ms\":0}",
       "stage as a number refused"},
      {"{\"accepted\":false,\"stage\":\"dns\",\"code\":null,"
       "\"retryable\":false,\"retry_after_ms\":0}",
       "code null refused"},
      {"{\"accepted\":false,\"stage\":\"dns\",\"code\":[\"timeout\"],"
       "\"retryable\":false,\"retry_after_ms\":0}",
       "code as an array refused"},
      {"{\"accepted\":false,\"stage\":\"dns\",\"code\":\"timeout\","
       "\"retryable\":1,\"retry_after_ms\":0}",
       "retryable as a number refused"},
      {"{\"accepted\":false,\"stage\":\"dns\",\"code\":\"timeout\","
       "\"retryable\":false,\"retry_after_ms\":\"0\"}",
       "retry_after_ms as a string refused"},
      {"{\"accepted\":false,\"stage\":\"dns\",\"code\":\"timeout\","
       "\"retryable\":false,\"retry_after_ms\":-1}",
       "negative retry_after_ms refused"},
      {"{\"accepted\":false,\"stage\":\"dns\",\"code\":\"timeout\","
       "\"retryable\":false,\"retry_after_ms\":1.5}",
       "fractional retry_after_ms refused"},
      {"{\"accepted\":false,\"stage\":\"dns\",\"code\":\"timeout\","
       "\"retryable\":false,\"retry_after_ms\":3600001}",
       "retry_after_ms above 3600000 refused"},
      {"{\"accepted\":false,\"stage\":\"dns\",\"code\":\"timeout\","
       "\"retryable\":false,\"retry_after_ms\":99999999999999999999999}",
       "retry_after_ms beyond int64 refused"},
      {"{\"accepted\":true,\"stage\":\"connect\",\"code\":\"timeout\","
       "\"retryable\":false,\"retry_after_ms\":0}",
       "accepted=true with a non-ok code refused"},
      {"{\"accepted\":false,\"stage\":\"connect\",\"code\":\"ok\","
       "\"retryable\":false,\"retry_after_ms\":0}",
       "accepted=false with code ok refused"},
      {"[{\"accepted\":true}]", "an array at the top refused"},
      {"\"ok\"", "a string at the top refused"},
      {"", "empty payload refused"},
      {"{\"accepted\":true,\"stage\":\"connect\",\"code\":\"ok\","
       "\"retryable\":false,\"retry_after_ms\":0}x",
       "trailing bytes refused"},
      {"{\"accepted\":true,\"stage\":\"connect\",\"code\":\"ok\","
       "\"retryable\":false,\"retry_after_ms\":0,}",
       "trailing comma refused"},
      {"{\"accepted\":false,\"stage\":\"dns\",\"code\":\"timeout\","
       "\"retryable\":false,\"retry_after_ms\":0,\"x\":[[[[[[[[[1]]]]]]]]]}",
       "an unknown field nested deeper than 8 refused (bounded parse)"},
      {"{\"accepted\":true,\"stage\":\"connect\",\"code\":\"ok\","
       "\"retryable\":false,\"retry_after_ms\":0,\"window\":0}",
       "window 0 refused (no zero window)"},
      {"{\"accepted\":true,\"stage\":\"connect\",\"code\":\"ok\","
       "\"retryable\":false,\"retry_after_ms\":0,\"window\":16777217}",
       "window above TM_WINDOW_MAX refused"},
      {"{\"accepted\":true,\"stage\":\"connect\",\"code\":\"ok\","
       "\"retryable\":false,\"retry_after_ms\":0,\"window\":\"65536\"}",
       "window as a string refused"},
      {"{\"accepted\":false,\"stage\":\"dns\",\"code\":\"timeout\","
       "\"retryable\":false,\"retry_after_ms\":0,\"window\":65536}",
       "window on a refusal refused"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    is_int(or_dec(bad[i].j, &d), TM_EPROTO, bad[i].what);

  /* Too many values for the bounded token array: refused, not truncated. */
  static char many[TM_OPEN_RESULT_MAX + 1];
  size_t n = (size_t)snprintf(many, sizeof many, "%s",
                              "{\"accepted\":true,\"stage\":\"connect\","
                              "\"code\":\"ok\",\"retryable\":false,"
                              "\"retry_after_ms\":0,\"x\":[");
  while (n + 4 < TM_OPEN_RESULT_MAX) {
    many[n++] = '0';
    many[n++] = ',';
  }
  many[n++] = '0';
  many[n++] = ']';
  many[n++] = '}';
  is_int(tm_open_result_decode((uint8_t *)many, n, &d), TM_EPROTO,
         "a result of more values than the bound (256) refused");

  /* The optional window. */
  uint8_t b[TM_OPEN_RESULT_MAX];
  tm_open_result r = {1, PH_STAGE_CONNECT, PH_OPEN_OK, 0, 0, 0, 262144, 0};
  int len = tm_open_result_encode(&r, b, sizeof b);
  const char *want = "{\"accepted\":true,\"stage\":\"connect\",\"code\":"
                     "\"ok\",\"retryable\":false,\"retry_after_ms\":0,"
                     "\"window\":262144}";
  ok(len == (int)strlen(want) && memcmp(b, want, (size_t)len) == 0 &&
         tm_open_result_decode(b, (size_t)len, &d) == TM_OK &&
         d.window == 262144,
     "an accepted flow-controlled result carries window, round trip");
  r.window = TM_WINDOW_MAX;
  len = tm_open_result_encode(&r, b, sizeof b);
  ok(len > 0 && tm_open_result_decode(b, (size_t)len, &d) == TM_OK &&
         d.window == TM_WINDOW_MAX,
     "window TM_WINDOW_MAX round trips");
  r.window = TM_WINDOW_MAX + 1;
  is_int(tm_open_result_encode(&r, b, sizeof b), TM_EPROTO,
         "encode: window above TM_WINDOW_MAX refused");
  tm_open_result rf = {0, PH_STAGE_DNS, PH_OPEN_TIMEOUT, 0, 0, 0, 4096, 0};
  is_int(tm_open_result_encode(&rf, b, sizeof b), TM_EPROTO,
         "encode: a window on a refusal refused");
  /* The encoder refuses what the decoder would. */
  tm_open_result e1 = {1, PH_STAGE_CONNECT, PH_OPEN_TIMEOUT, 0, 0, 0, 0, 0};
  is_int(tm_open_result_encode(&e1, b, sizeof b), TM_EPROTO,
         "encode: accepted with a non-ok code refused");
  tm_open_result e2 = {0, PH_STAGE_CONNECT, PH_OPEN_OK, 0, 0, 0, 0, 0};
  is_int(tm_open_result_encode(&e2, b, sizeof b), TM_EPROTO,
         "encode: refused with code ok refused");
  tm_open_result e3 = {0, PH_STAGE_NONE, PH_OPEN_TIMEOUT, 0, 0, 0, 0, 0};
  is_int(tm_open_result_encode(&e3, b, sizeof b), TM_EPROTO,
         "encode: a refusal with stage none refused");
  tm_open_result e4 = {0, PH_STAGE_COUNT_, PH_OPEN_TIMEOUT, 0, 0, 0, 0, 0};
  is_int(tm_open_result_encode(&e4, b, sizeof b), TM_EPROTO,
         "encode: an out-of-range stage refused");
  tm_open_result e5 = {0, PH_STAGE_DNS, PH_OPEN_CODE_COUNT_, 0, 0, 0, 0, 0};
  is_int(tm_open_result_encode(&e5, b, sizeof b), TM_EPROTO,
         "encode: an out-of-range code refused");
  tm_open_result e6 = {0, PH_STAGE_DNS, PH_OPEN_TIMEOUT, 0, 1, 3600001, 0, 0};
  is_int(tm_open_result_encode(&e6, b, sizeof b), TM_EPROTO,
         "encode: retry_after_ms above 3600000 refused");
  tm_open_result e7 = {0, PH_STAGE_DNS, PH_OPEN_TIMEOUT, 0, 7, 3600000, 0, 0};
  len = tm_open_result_encode(&e7, b, sizeof b);
  ok(len > 0 && tm_open_result_decode(b, (size_t)len, &d) == TM_OK &&
         d.retryable == 1 && d.retry_after_ms == 3600000,
     "retry_after_ms 3600000 and a non-0/1 retryable written as true");
}

/* ---- capabilities and subprotocols ----------------------------------- */

static void test_caps(void) {
  is_str(tm_cap_name(TM_CAP_OPEN_RESULT), "stream_open_result.v1",
         "TM-PROTO-11 capability name: open result");
  is_str(tm_cap_name(TM_CAP_FLOW_CONTROL), "stream_flow_control.v1",
         "TM-PROTO-11 capability name: flow control");
  is_str(tm_cap_name(TM_CAP_FAIR_WRITER), "stream_fair_writer.v1",
         "TM-PROTO-11 capability name: fair writer");
  ok(tm_cap_name(0) == NULL && tm_cap_name(3) == NULL &&
         tm_cap_name(1u << 7) == NULL,
     "no name for 0, several bits or an unknown bit");
  for (unsigned bit = 1; bit <= TM_CAP_FAIR_WRITER; bit <<= 1) {
    const char *n = tm_cap_name(bit);
    ok(tm_cap_from_name(n, strlen(n)) == bit, "capability name round trip");
  }
  const char *n = "stream_open_result.v1";
  ok(tm_cap_from_name(n, strlen(n) - 1) == 0 &&
         tm_cap_from_name("stream_open_result.v2", 21) == 0 &&
         tm_cap_from_name("STREAM_OPEN_RESULT.V1", 21) == 0 &&
         tm_cap_from_name("", 0) == 0 && tm_cap_from_name(NULL, 3) == 0,
     "TM-PROTO-19 unknown capability names are 0 (ignored)");
}

/* What a client with caps offers, written out (TM-PROTO-14). */
static const char *offer_for(unsigned caps) {
  int or_ = caps & TM_CAP_OPEN_RESULT, fc = caps & TM_CAP_FLOW_CONTROL;
  if (or_ && fc && (caps & TM_CAP_TRACE))
    return "tunnelmesh.v1.open-result.flow-control.trace,"
           "tunnelmesh.v1.open-result.flow-control,tunnelmesh.v1.open-result,"
           "tunnelmesh.v1";
  if (or_ && fc)
    return "tunnelmesh.v1.open-result.flow-control,tunnelmesh.v1.open-result,"
           "tunnelmesh.v1";
  if (or_)
    return "tunnelmesh.v1.open-result,tunnelmesh.v1";
  return "tunnelmesh.v1";
}

static void test_subproto(void) {
  char out[256];
  int all = 1;
  for (unsigned c = 0; c <= TM_CAP_ALL; c++) {
    int n = tm_subproto_offer(c, out, sizeof out);
    all &= n == (int)strlen(offer_for(c)) && strcmp(out, offer_for(c)) == 0;
  }
  ok(all, "TM-PROTO-14 the offer for every local capability set, in "
          "priority order, tunnelmesh.v1 always last");
  int n = tm_subproto_offer(TM_CAP_ALL, out, sizeof out);
  is_int(tm_subproto_offer(TM_CAP_ALL, out, (size_t)n), TM_ESPACE,
         "offer into a buffer without room for the NUL: TM_ESPACE");
  is_int(tm_subproto_offer(TM_CAP_ALL, out, (size_t)n + 1), n,
         "offer into a buffer of exactly its size");
  is_int(tm_subproto_offer(0, out, 5), TM_ESPACE,
         "offer into a tiny buffer: TM_ESPACE");

  /* Every server capability set × every client offer: the server picks
   * the client's first combination it fully has (TM-PROTO-15), and the
   * name it picks means capabilities both sides have. */
  int combos = 0, right = 0;
  for (unsigned s = 0; s <= TM_CAP_ALL; s++) {
    for (unsigned c = 0; c <= TM_CAP_ALL; c++) {
      const char *offer = offer_for(c);
      const char *got = tm_subproto_select(offer, strlen(offer), s);
      unsigned both = s & c;
      int full = (both & TM_CAP_OPEN_RESULT) && (both & TM_CAP_FLOW_CONTROL);
      const char *want = full && (both & TM_CAP_TRACE) ? TM_SUBPROTO_TRACE
                         : full                        ? TM_SUBPROTO_FULL
                         : (both & TM_CAP_OPEN_RESULT) ? TM_SUBPROTO_OPEN
                                                       : TM_SUBPROTO_BASE;
      combos++;
      /* Flow control is only ever negotiated with open results, the
       * trace field only with both. */
      int want_caps = (both & TM_CAP_OPEN_RESULT)
                          ? (int)(both & (TM_CAP_OPEN_RESULT |
                                          TM_CAP_FLOW_CONTROL))
                          : 0;
      if (full)
        want_caps |= (int)(both & TM_CAP_TRACE);
      right += got && strcmp(got, want) == 0 &&
               tm_subproto_caps(got) == want_caps &&
               (tm_subproto_caps(got) & ~(int)both) == 0;
    }
  }
  is_int(right, combos,
         "TM-PROTO-15 TM-TEST-2 every server caps x client offer (256) "
         "selects the best common combination; TM-PROTO-13 open results and "
         "flow control only when both ends have them, TM-PROTO-12 the fair "
         "writer never negotiated");
  is_str(tm_subproto_select("tunnelmesh.v1, tunnelmesh.v1.open-result", 40,
                            TM_CAP_ALL),
         TM_SUBPROTO_BASE,
         "TM-PROTO-15 the client's order decides, not the server's");
  is_str(tm_subproto_select(TM_SUBPROTO_FULL ",tunnelmesh.v1",
                            strlen(TM_SUBPROTO_FULL) + 14,
                            TM_CAP_FLOW_CONTROL | TM_CAP_FAIR_WRITER),
         TM_SUBPROTO_BASE,
         "TM-FAIL-6 a server with flow control but no open results (an "
         "incomplete strict set) selects base: legacy");
  ok(tm_subproto_select(TM_SUBPROTO_FULL, strlen(TM_SUBPROTO_FULL),
                        TM_CAP_OPEN_RESULT) == NULL,
     "nothing acceptable offered (not even tunnelmesh.v1): NULL, refuse "
     "the upgrade");

  /* The answer as the client reads it (TM-PROTO-16). */
  is_int(tm_subproto_caps(NULL), 0,
         "TM-PROTO-16 TM-TEST-2 no subprotocol in the answer (old server): "
         "legacy, caps 0");
  is_int(tm_subproto_caps(""), 0, "TM-PROTO-16 an empty answer: legacy");
  is_int(tm_subproto_caps(TM_SUBPROTO_BASE), 0, "tunnelmesh.v1: caps 0");
  is_int(tm_subproto_caps(TM_SUBPROTO_OPEN), TM_CAP_OPEN_RESULT,
         "tunnelmesh.v1.open-result: open results");
  is_int(tm_subproto_caps(TM_SUBPROTO_FULL),
         TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL,
         "tunnelmesh.v1.open-result.flow-control: open results and flow "
         "control");
  is_int(tm_subproto_caps(TM_SUBPROTO_TRACE),
         TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL | TM_CAP_TRACE,
         "tunnelmesh.v1.open-result.flow-control.trace: and the trace field");
  is_str(tm_subproto_select(TM_SUBPROTO_TRACE "," TM_SUBPROTO_FULL,
                            strlen(TM_SUBPROTO_TRACE) + 1 +
                                strlen(TM_SUBPROTO_FULL),
                            TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL),
         TM_SUBPROTO_FULL,
         "a server without the trace capability (an older one) picks the "
         "next name: no trace field on that connection");
  is_str(tm_cap_name(TM_CAP_TRACE), "stream_trace.v1",
         "the trace capability's name");
  /* Issue 27: the principal field, between servers only. */
  unsigned relay = TM_CAP_ALL | TM_CAP_PRINCIPAL;
  n = tm_subproto_offer(relay, out, sizeof out);
  is_str(out,
         "tunnelmesh.v1.open-result.flow-control.trace.principal,"
         "tunnelmesh.v1.open-result.flow-control.trace,"
         "tunnelmesh.v1.open-result.flow-control,tunnelmesh.v1.open-result,"
         "tunnelmesh.v1",
         "a relay link offers the principal combination first");
  is_str(tm_subproto_select(out, (size_t)n, relay), TM_SUBPROTO_PRINCIPAL,
         "a relay listener picks it");
  is_int(tm_subproto_caps(TM_SUBPROTO_PRINCIPAL), (int)relay & ~TM_CAP_FAIR_WRITER,
         "... meaning open results, flow control, trace and principal");
  is_str(tm_subproto_select(out, (size_t)n, TM_CAP_ALL), TM_SUBPROTO_TRACE,
         "a server without it (an older node, a client listener) picks the "
         "trace combination: no principal on that link");
  n = tm_subproto_offer(TM_CAP_ALL, out, sizeof out);
  is_str(tm_subproto_select(out, (size_t)n, relay), TM_SUBPROTO_TRACE,
         "a client or agent never offers it");
  is_str(tm_cap_name(TM_CAP_PRINCIPAL), "stream_principal.v1",
         "the principal capability's name");
  static const char *const never[] = {
      "tunnelmesh.v2", "TUNNELMESH.V1", "tunnelmesh.v1 ", " tunnelmesh.v1",
      "tunnelmesh.v1.flow-control", "tunnelmesh.v1,tunnelmesh.v1", "chat"};
  for (size_t i = 0; i < sizeof never / sizeof never[0]; i++) {
    char name[96];
    snprintf(name, sizeof name,
             "a name never offered (\"%s\") is -1: refuse the connection",
             never[i]);
    is_int(tm_subproto_caps(never[i]), -1, name);
  }

  /* Hostile offers: the parser splits on commas and blanks only, skips
   * empty items and never matches part of an item. */
  static const struct {
    const char *offer;
    const char *want;
    const char *what;
  } hostile[] = {
      {"", NULL, "empty offer: NULL"},
      {",,, ,\t,", NULL, "only separators: NULL"},
      {" , ,tunnelmesh.v1 ,", TM_SUBPROTO_BASE, "empty items skipped"},
      {"tunnelmesh.v1tunnelmesh.v1", NULL, "two names run together: no match"},
      {"tunnelmesh.v1.open", NULL, "a prefix of a name: no match"},
      {"xtunnelmesh.v1", NULL, "a name with a prefix: no match"},
      {"tunnelmesh.v1.open-result.flow-control.v2,tunnelmesh.v1.open-result",
       TM_SUBPROTO_OPEN, "a longer unknown name skipped"},
      {"chat  \t tunnelmesh.v1.open-result.flow-control", TM_SUBPROTO_FULL,
       "blank-separated items"},
      {"TunnelMesh.v1", NULL, "names are case-sensitive"},
  };
  for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
    const char *got = tm_subproto_select(
        hostile[i].offer, strlen(hostile[i].offer), TM_CAP_ALL);
    ok(hostile[i].want ? got && strcmp(got, hostile[i].want) == 0
                       : got == NULL,
       hostile[i].what);
  }
  const char nul[] = "bogus\0tunnelmesh.v1";
  ok(tm_subproto_select(nul, sizeof nul - 1, TM_CAP_ALL) == NULL,
     "a NUL inside an item: no match (the item is not a name)");
  const char nul2[] = "bogus,\0,tunnelmesh.v1";
  ok(tm_subproto_select(nul2, sizeof nul2 - 1, TM_CAP_ALL) &&
         strcmp(tm_subproto_select(nul2, sizeof nul2 - 1, TM_CAP_ALL),
                TM_SUBPROTO_BASE) == 0,
     "a NUL as its own item is skipped, bounded by len not by NUL");
  ok(tm_subproto_select("tunnelmesh.v1", 12, TM_CAP_ALL) == NULL,
     "the offer is read to len only");
  ok(tm_subproto_select(NULL, 10, TM_CAP_ALL) == NULL, "NULL offer: NULL");
  static char longoffer[70000];
  memset(longoffer, 'a', 65000);
  strcpy(longoffer + 65000, ", ,tunnelmesh.v1.open-result");
  is_str(tm_subproto_select(longoffer, strlen(longoffer), TM_CAP_ALL),
         TM_SUBPROTO_OPEN, "a 65000-byte junk item then a name");
  for (size_t i = 0; i < 65000; i++)
    longoffer[i] = i % 2 ? ',' : ' ';
  is_str(tm_subproto_select(longoffer, strlen(longoffer), TM_CAP_ALL),
         TM_SUBPROTO_OPEN, "65000 bytes of separators then a name");
}

/* ---- agent metadata ---------------------------------------------------- */

static int md_dec(const char *s, tm_metadata *m) {
  return tm_metadata_decode((const uint8_t *)s, strlen(s), m);
}

static void test_metadata(void) {
  tm_metadata m, d;
  memset(&m, 0, sizeof m);
  strcpy(m.agent_id, "agent-1");
  strcpy(m.version, "1.4.0");
  m.caps = TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL;
  uint8_t b[TM_METADATA_MAX];
  int n = tm_metadata_encode(&m, 0, b, sizeof b);
  const char *want = "{\"agent_id\":\"agent-1\",\"version\":\"1.4.0\","
                     "\"capabilities\":[\"stream_open_result.v1\","
                     "\"stream_flow_control.v1\"]}";
  ok(n == (int)strlen(want) && memcmp(b, want, (size_t)n) == 0,
     "TM-PROTO-18 AGENT_METADATA: agent_id, version, capabilities");
  ok(tm_metadata_decode(b, (size_t)n, &d) == TM_OK &&
         strcmp(d.agent_id, "agent-1") == 0 &&
         strcmp(d.version, "1.4.0") == 0 && d.caps == m.caps,
     "AGENT_METADATA round trip");
  n = tm_metadata_encode(&m, 1, b, sizeof b);
  const char *ack = "{\"capabilities\":[\"stream_open_result.v1\","
                    "\"stream_flow_control.v1\"]}";
  ok(n == (int)strlen(ack) && memcmp(b, ack, (size_t)n) == 0 &&
         tm_metadata_decode(b, (size_t)n, &d) == TM_OK &&
         d.agent_id[0] == '\0' && d.caps == m.caps,
     "TM-PROTO-18 AGENT_METADATA_ACK: capabilities only, round trip");
  m.caps = 0;
  n = tm_metadata_encode(&m, 1, b, sizeof b);
  ok(n == (int)strlen("{\"capabilities\":[]}") &&
         memcmp(b, "{\"capabilities\":[]}", (size_t)n) == 0,
     "an ACK with no common capability: an empty list");
  is_int(tm_metadata_encode(&m, 1, b, 5), TM_ESPACE,
         "encode into a short buffer: TM_ESPACE");

  /* TM-P2-27: the agent's capacity on this connection, optional. */
  m.caps = TM_CAP_OPEN_RESULT;
  m.max_streams = 512;
  n = tm_metadata_encode(&m, 0, b, sizeof b);
  const char *cap = "{\"agent_id\":\"agent-1\",\"version\":\"1.4.0\","
                    "\"capabilities\":[\"stream_open_result.v1\"],"
                    "\"max_streams\":512}";
  ok(n == (int)strlen(cap) && memcmp(b, cap, (size_t)n) == 0 &&
         tm_metadata_decode(b, (size_t)n, &d) == TM_OK &&
         d.max_streams == 512,
     "TM-P2-27 AGENT_METADATA carries max_streams, round trip");
  n = tm_metadata_encode(&m, 1, b, sizeof b);
  ok(n > 0 && tm_metadata_decode(b, (size_t)n, &d) == TM_OK &&
         d.max_streams == 0,
     "... never in an ACK");
  m.max_streams = TM_METADATA_STREAMS_MAX + 1;
  is_int(tm_metadata_encode(&m, 0, b, sizeof b), TM_EPROTO,
         "encode: max_streams above its bound is refused");
  m.max_streams = 0;
  ok(md_dec("{\"agent_id\":\"a\"}", &d) == TM_OK && d.max_streams == 0,
     "an old agent's metadata: no max_streams (0)");
  is_int(md_dec("{\"max_streams\":0}", &d), TM_EPROTO,
         "max_streams 0: malformed");
  is_int(md_dec("{\"max_streams\":1048577}", &d), TM_EPROTO,
         "max_streams above 2^20: malformed");
  is_int(md_dec("{\"max_streams\":\"9\"}", &d), TM_EPROTO,
         "max_streams not a number: malformed");
  ok(md_dec("{\"max_streams\":1048576}", &d) == TM_OK &&
         d.max_streams == 1048576,
     "max_streams at its bound decodes");

  /* The server answers the intersection (TM-PROTO-18). */
  ok(md_dec("{\"agent_id\":\"a\",\"version\":\"2\",\"capabilities\":["
            "\"stream_open_result.v1\",\"stream_flow_control.v1\","
            "\"stream_fair_writer.v1\"]}",
            &d) == TM_OK,
     "a new agent's metadata decodes");
  m.caps = d.caps & TM_CAP_OPEN_RESULT; /* a server without flow control */
  n = tm_metadata_encode(&m, 1, b, sizeof b);
  ok(n > 0 && tm_metadata_decode(b, (size_t)n, &d) == TM_OK &&
         d.caps == TM_CAP_OPEN_RESULT,
     "TM-PROTO-18 the ACK carries the intersection");

  ok(md_dec("{\"agent_id\":\"old-agent\",\"version\":\"0.9\"}", &d) == TM_OK &&
         d.caps == 0 && strcmp(d.agent_id, "old-agent") == 0,
     "TM-PROTO-19 TM-TEST-3 an old agent without capabilities: 0");
  ok(md_dec("{}", &d) == TM_OK && d.caps == 0 && d.agent_id[0] == '\0' &&
         d.version[0] == '\0',
     "TM-TEST-3 an empty object (oldest agent): 0, empty strings");
  ok(md_dec("{\"agent_id\":\"a\",\"hostname\":\"x\",\"labels\":{\"k\":[1]},"
            "\"capabilities\":[\"stream_open_result.v1\",\"quantum.v9\","
            "\"\",\"stream_flow_control.v1x\"],\"future\":true}",
            &d) == TM_OK &&
         d.caps == TM_CAP_OPEN_RESULT,
     "TM-PROTO-19 TM-TEST-3 unknown fields and capability names ignored");
  ok(md_dec("{\"capabilities\":[\"stream\\u005fopen_result.v1\"]}", &d) ==
             TM_OK &&
         d.caps == TM_CAP_OPEN_RESULT,
     "a capability name with a JSON escape is the name it decodes to");
  ok(md_dec("{\"capabilities\":[\"stream_open_result.v1\","
            "\"stream_open_result.v1\"]}",
            &d) == TM_OK &&
         d.caps == TM_CAP_OPEN_RESULT,
     "a capability listed twice");
  static char longcap[TM_METADATA_MAX];
  snprintf(longcap, sizeof longcap, "{\"capabilities\":[\"%0400d\","
           "\"stream_flow_control.v1\"]}", 7);
  ok(md_dec(longcap, &d) == TM_OK && d.caps == TM_CAP_FLOW_CONTROL,
     "a very long unknown capability name ignored");
  static const struct {
    const char *j, *what;
  } bad[] = {
      {"{\"capabilities\":\"stream_open_result.v1\"}",
       "capabilities as a string refused"},
      {"{\"capabilities\":[1]}", "a capability as a number refused"},
      {"{\"capabilities\":[[\"stream_open_result.v1\"]]}",
       "a nested capability list refused"},
      {"{\"capabilities\":null}", "capabilities null refused"},
      {"{\"agent_id\":7}", "agent_id as a number refused"},
      {"{\"version\":[\"1\"]}", "version as an array refused"},
      {"{\"agent_id\":\"a\",\"agent_id\":\"b\"}", "duplicate key refused"},
      {"{\"agent_id\":\"a\\u0000b\"}", "agent_id with a NUL refused"},
      {"{\"version\":\"123456789012345678901234567890123\"}",
       "version of 33 bytes refused"},
      {"[]", "an array at the top refused"},
      {"{", "truncated refused"},
      {"", "empty refused"},
      {"{\"capabilities\":[]} ", "accepted (control: trailing blank)"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int rc = md_dec(bad[i].j, &d);
    if (i + 1 == sizeof bad / sizeof bad[0])
      is_int(rc, TM_OK, bad[i].what);
    else
      is_int(rc, TM_EPROTO, bad[i].what);
  }
  char j[200];
  snprintf(j, sizeof j, "{\"agent_id\":\"%064d\"}", 0);
  ok(md_dec(j, &d) == TM_OK && strlen(d.agent_id) == 64,
     "agent_id of 64 bytes accepted");
  snprintf(j, sizeof j, "{\"agent_id\":\"%065d\"}", 0);
  is_int(md_dec(j, &d), TM_EPROTO, "agent_id of 65 bytes refused");
  snprintf(j, sizeof j, "{\"version\":\"%032d\"}", 0);
  ok(md_dec(j, &d) == TM_OK && strlen(d.version) == 32,
     "version of 32 bytes accepted");

  static char big[TM_METADATA_MAX + 2];
  memset(big, ' ', sizeof big);
  memcpy(big, "{\"x\":\"", 6);
  memcpy(big + TM_METADATA_MAX - 2, "\"}", 2);
  memset(big + 6, 'y', TM_METADATA_MAX - 8);
  ok(tm_metadata_decode((uint8_t *)big, TM_METADATA_MAX, &d) == TM_OK,
     "metadata of exactly 4096 bytes accepted");
  memset(big + 6, 'y', TM_METADATA_MAX - 7);
  memcpy(big + TM_METADATA_MAX - 1, "\"}", 2);
  is_int(tm_metadata_decode((uint8_t *)big, TM_METADATA_MAX + 1, &d),
         TM_EPROTO, "metadata of 4097 bytes refused");

  memset(&m, 0, sizeof m);
  memset(m.agent_id, 'a', sizeof m.agent_id);
  is_int(tm_metadata_encode(&m, 0, b, sizeof b), TM_EPROTO,
         "encode: an unterminated agent_id refused");
  memset(&m, 0, sizeof m);
  strcpy(m.agent_id, "\xff\xfe");
  is_int(tm_metadata_encode(&m, 0, b, sizeof b), TM_EPROTO,
         "encode: invalid UTF-8 refused");
  memset(&m, 0, sizeof m);
  strcpy(m.agent_id, "q\"uote\\");
  n = tm_metadata_encode(&m, 0, b, sizeof b);
  ok(n > 0 && tm_metadata_decode(b, (size_t)n, &d) == TM_OK &&
         strcmp(d.agent_id, "q\"uote\\") == 0,
     "an agent_id needing escapes round trips");
}

int main(void) {
  plan_lazy();
  test_frame_roundtrip();
  test_frame_malformed();
  test_frame_unknown();
  test_open_stream();
  test_open_stream_trace();
  test_open_stream_principal();
  test_open_result_seed();
  test_open_result_legacy();
  test_open_result_bounds();
  test_open_result_strict();
  test_caps();
  test_subproto();
  test_metadata();
  return done_testing();
}
