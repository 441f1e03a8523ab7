/* SPDX-License-Identifier: BSD-2-Clause */
/* HTTP/1.1 message body framing for the http_proxy module, strict
 * (RFC 9112 sections 6 and 7), without I/O.
 *
 * The proxy never forwards the framing bytes it received. A decoder takes
 * a body's framing off (Content-Length, chunked, or until close) and
 * yields its payload; an encoder frames that payload again for the peer
 * it goes to. So a client and an origin can never disagree with the proxy
 * about where a message ends, and an HTTP/1.0 peer never receives chunked
 * framing.
 *
 * Chunked bodies are read under the strict grammar of RFC 9112 section
 * 7.1 and nothing else:
 *   chunked-body = *chunk last-chunk trailer-section CRLF
 *   chunk        = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
 *   chunk-size   = 1*HEXDIG   (at most 16 digits, leading zeros
 *                  included, below 2^63)
 *   chunk-ext    = *( BWS ";" BWS token [ BWS "=" BWS ( token /
 *                  quoted-string ) ] )
 *   trailer      = *( field-name ":" OWS field-value OWS CRLF )
 * Every line ends in CRLF: a bare CR or LF anywhere in a size line, an
 * extension or a trailer is an error, and so is chunk data not followed
 * by CRLF. A size line (with its extensions) is at most max_line bytes
 * and the trailer section at most max_trailer bytes. Extensions and
 * trailer fields are checked, then dropped: they are not forwarded.
 */
#ifndef PH_HTTP_BODY_H
#define PH_HTTP_BODY_H

#include <stddef.h>
#include <stdint.h>

enum hp_body_kind {
  HB_NONE = 0, /* no body */
  HB_LENGTH,   /* Content-Length bytes */
  HB_CHUNKED,  /* chunked transfer coding */
  HB_CLOSE     /* until the connection closes (responses only) */
};

enum hp_body_result { HB_ERROR = -1, HB_MORE = 0, HB_DONE = 1 };

typedef struct hp_body_limits {
  size_t max_line;    /* a chunk-size line, extensions and CRLF included */
  size_t max_trailer; /* the trailer section with its final CRLF */
} hp_body_limits;

/* ---- decoding ------------------------------------------------------------ */

typedef struct hp_body_decoder {
  int kind;       /* enum hp_body_kind */
  int state;      /* position in the chunked grammar (http_body.c) */
  uint64_t left;  /* HB_LENGTH: payload bytes still to come; HB_CHUNKED:
                     bytes of the current chunk's data still to come */
  size_t line;    /* bytes of the current size line so far */
  size_t trailer; /* bytes of the trailer section so far */
  uint64_t payload; /* payload bytes yielded so far */
  hp_body_limits lim;
  unsigned char digits; /* hex digits of the current chunk size */
  unsigned done : 1;
  unsigned failed : 1;
} hp_body_decoder;

/* kind HB_LENGTH takes length; the others ignore it. HB_NONE is done at
 * once. lim is copied; NULL counts as all zero (only HB_CHUNKED uses it:
 * then, as with max_line < 3 or max_trailer < 2, no chunked body passes).
 * An unknown kind makes every call fail. */
void hp_body_decoder_init(hp_body_decoder *d, int kind, uint64_t length,
                          const hp_body_limits *lim);

/* Decodes in[0..len), the bytes that follow those given before. The
 * payload they hold is written to out, contiguous: *produced bytes. out
 * may be in itself (decoding in place): the output never runs ahead of
 * the input, so out[i] is written only after in[i] was read.
 *   HB_MORE: all len bytes were consumed (*used == len); more to come.
 *   HB_DONE: the body ended within the first *used bytes; the bytes after
 *            them belong to the next message. Also returned, with nothing
 *            used, by every later call.
 *   HB_ERROR: malformed framing or a limit passed; *used is the offset
 *            of the offending byte (the one that broke the grammar or
 *            passed a limit), *produced the payload before it (nothing
 *            after an error may be sent). Also returned, with nothing
 *            used, by every later call.
 * len == 0 is allowed and changes nothing. */
int hp_body_decode(hp_body_decoder *d, const char *in, size_t len, char *out,
                   size_t *used, size_t *produced);

/* The peer closed its side: HB_DONE when that ends the body (HB_CLOSE, or
 * a body already done), HB_ERROR when it was cut short. */
int hp_body_decode_eof(hp_body_decoder *d);

/* ---- encoding ------------------------------------------------------------ */

/* What to write next: the framing bytes pre[0..pre_len), then the first
 * payload bytes of the caller's ready payload, then post[0..post_len).
 * The pointers stay valid until the next hp_body_encode_* call. */
typedef struct hp_body_plan {
  const char *pre;
  size_t pre_len;
  size_t payload;
  const char *post;
  size_t post_len;
} hp_body_plan;

typedef struct hp_body_encoder {
  int kind;            /* HB_LENGTH, HB_CHUNKED or HB_CLOSE (HB_NONE: no
                          body, finished at once) */
  uint64_t chunk_left; /* payload bytes of the open chunk still to send */
  char frame[32];      /* framing bytes not sent yet */
  unsigned char frame_off, frame_len;
  unsigned in_chunk : 1;  /* a chunk's data was started and its CRLF is
                             still to be sent */
  unsigned finished : 1;  /* the last byte of the body was sent */
} hp_body_encoder;

/* kind: how the body is framed towards the peer. HB_LENGTH and HB_CLOSE
 * send the payload as it is (the caller sent the Content-Length or will
 * close); HB_CHUNKED frames it in chunks, one per hp_body_encode_plan that
 * finds new payload, and ends it with the last chunk and an empty
 * trailer section. */
void hp_body_encoder_init(hp_body_encoder *e, int kind);

/* Plans the next write: ready payload bytes are waiting at the front of
 * the caller's buffer, and end says whether they are the last of the
 * body (the decoder is done). An empty plan (all lengths 0) means there
 * is nothing to write now: no payload ready, or everything sent.
 * HB_CHUNKED: a chunk opened by a plan keeps its size (planned again with
 * more ready, it still takes only its own bytes); the CRLF that closes
 * its data goes in the plan that completes the data, or, when that part
 * was not written, before the next chunk's size or the last chunk (with
 * nothing ready and end not set, the plan is empty). */
void hp_body_encode_plan(hp_body_encoder *e, size_t ready, int end,
                         hp_body_plan *p);

/* n bytes of the last plan (p, unchanged) were written (in its order:
 * pre, payload, post); returns how many of them were payload, which the
 * caller drops from the front of its buffer. The rest of a plan is
 * planned again by the next hp_body_encode_plan. */
size_t hp_body_encode_sent(hp_body_encoder *e, const hp_body_plan *p, size_t n);

/* 1 when the whole body, framing included, was written: for HB_CHUNKED
 * once hp_body_encode_sent accounts the final CRLF; for HB_LENGTH and
 * HB_CLOSE once it accounts the last payload of a plan made with end
 * set, or a plan with end set finds nothing ready. */
int hp_body_encode_finished(const hp_body_encoder *e);

#endif
