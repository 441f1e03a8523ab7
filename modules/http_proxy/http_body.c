/* SPDX-License-Identifier: BSD-2-Clause */
/* HTTP/1.1 body framing without I/O (http_body.h).
 *
 * The chunked decoder is a byte-level state machine: every byte of a size
 * line, an extension or a trailer moves it from one state to the next, so
 * nothing is buffered and the verdict cannot depend on where a read ended.
 * Only chunk data is taken in runs (copied with memmove, or not at all
 * when it is already where it belongs).
 *
 * The chunked encoder keeps the framing it still owes in e->frame; a plan
 * points into it (and at constant strings), and hp_body_encode_sent moves the
 * state on by the bytes that were really written.
 */
#include "http_body.h"

#include <string.h>

#include "lib/hex.h"

/* ---- decoding: the chunked grammar's states --------------------------- */

enum {
  C_SIZE = 0,     /* chunk-size digits (the first one is required) */
  C_SIZE_BWS,     /* BWS after the size or a value: only ";" may follow */
  C_EXT_NAME0,    /* after ";": BWS, then an extension name's first tchar */
  C_EXT_NAME,     /* in an extension name */
  C_EXT_NAME_BWS, /* BWS after a name: "=" or ";" may follow */
  C_EXT_VAL0,     /* after "=": BWS, then a token or a quoted-string */
  C_EXT_TOKEN,    /* in a token value */
  C_EXT_QUOTED,   /* in a quoted-string value */
  C_EXT_PAIR,     /* after "\" in a quoted-string */
  C_EXT_QEND,     /* after a quoted-string's closing DQUOTE */
  C_SIZE_LF,      /* the size line's CR was seen: LF must follow */
  C_DATA,         /* chunk data, d->left bytes still to come */
  C_DATA_CR,      /* the CR after chunk data */
  C_DATA_LF,      /* the LF after chunk data */
  C_TR_START,     /* start of a trailer field line, or the final CRLF */
  C_TR_NAME,      /* in a trailer field name */
  C_TR_VALUE,     /* OWS field-value OWS of a trailer field */
  C_TR_LF,        /* a trailer field line's CR was seen */
  C_END_LF,       /* the final CR was seen */
  C_DONE,         /* returned by the byte steps: the body is complete */
  C_BAD = -1      /* returned by the byte steps: malformed */
};

/* chunk-size is at most this many hex digits, leading zeros included. */
#define HB_MAX_DIGITS 16u

static int is_tchar(unsigned char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
      (c >= 'A' && c <= 'Z'))
    return 1;
  return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static int is_ws(unsigned char c) { return c == ' ' || c == '\t'; }

/* obs-text is 0x80-0xFF; VCHAR is 0x21-0x7E. */
static int is_vchar_obs(unsigned char c) {
  return (c >= 0x21 && c <= 0x7e) || c >= 0x80;
}

static int is_qdtext(unsigned char c) {
  return is_ws(c) || (is_vchar_obs(c) && c != '"' && c != '\\');
}

/* One more digit of the chunk size in d->left: at most 16 digits, and the
 * value stays below 2^63 (left < 2^59 before the shift). */
static int size_digit(hp_body_decoder *d, int v) {
  if (d->digits >= HB_MAX_DIGITS || (d->left >> 59) != 0)
    return C_BAD;
  d->digits++;
  d->left = (d->left << 4) | (uint64_t)v;
  return C_SIZE;
}

/* What may follow the size or an extension value: BWS ";" or CRLF. */
static int after_value(unsigned char c) {
  if (c == ';')
    return C_EXT_NAME0;
  if (is_ws(c))
    return C_SIZE_BWS;
  if (c == '\r')
    return C_SIZE_LF;
  return C_BAD;
}

/* A byte of a size line: chunk-size [ chunk-ext ] CRLF. */
static int size_line_byte(hp_body_decoder *d, unsigned char c) {
  switch (d->state) {
  case C_SIZE: {
    int v = ph_hex_value((unsigned char)c);
    if (v >= 0)
      return size_digit(d, v);
    return d->digits ? after_value(c) : C_BAD;
  }
  case C_SIZE_BWS:
    /* BWS is allowed only before ";": "5 \r\n" is an error. */
    return is_ws(c) ? C_SIZE_BWS : c == ';' ? C_EXT_NAME0 : C_BAD;
  case C_EXT_NAME0:
    return is_ws(c) ? C_EXT_NAME0 : is_tchar(c) ? C_EXT_NAME : C_BAD;
  case C_EXT_NAME:
    if (is_tchar(c))
      return C_EXT_NAME;
    if (c == '=')
      return C_EXT_VAL0;
    if (is_ws(c))
      return C_EXT_NAME_BWS;
    return after_value(c);
  case C_EXT_NAME_BWS:
    if (is_ws(c))
      return C_EXT_NAME_BWS;
    return c == '=' ? C_EXT_VAL0 : c == ';' ? C_EXT_NAME0 : C_BAD;
  case C_EXT_VAL0:
    if (is_ws(c))
      return C_EXT_VAL0;
    return c == '"' ? C_EXT_QUOTED : is_tchar(c) ? C_EXT_TOKEN : C_BAD;
  case C_EXT_TOKEN:
    return is_tchar(c) ? C_EXT_TOKEN : after_value(c);
  case C_EXT_QUOTED:
    if (c == '"')
      return C_EXT_QEND;
    if (c == '\\')
      return C_EXT_PAIR;
    return is_qdtext(c) ? C_EXT_QUOTED : C_BAD;
  case C_EXT_PAIR:
    return is_ws(c) || is_vchar_obs(c) ? C_EXT_QUOTED : C_BAD;
  case C_EXT_QEND:
    return after_value(c);
  case C_SIZE_LF:
    if (c != '\n')
      return C_BAD;
    /* A size of 0 (any number of zeros) is the last chunk. */
    return d->left ? C_DATA : C_TR_START;
  }
  return C_BAD;
}

/* A byte of the trailer section: *( field-line CRLF ) CRLF, with
 * field-line = token ":" OWS field-value OWS. */
static int trailer_byte(hp_body_decoder *d, unsigned char c) {
  switch (d->state) {
  case C_TR_START:
    /* A line starting with SP or HTAB (obs-fold) is refused here. */
    return c == '\r' ? C_END_LF : is_tchar(c) ? C_TR_NAME : C_BAD;
  case C_TR_NAME:
    return is_tchar(c) ? C_TR_NAME : c == ':' ? C_TR_VALUE : C_BAD;
  case C_TR_VALUE:
    /* OWS, field-value and OWS are all made of these bytes. */
    if (is_ws(c) || is_vchar_obs(c))
      return C_TR_VALUE;
    return c == '\r' ? C_TR_LF : C_BAD;
  case C_TR_LF:
    return c == '\n' ? C_TR_START : C_BAD;
  case C_END_LF:
    return c == '\n' ? C_DONE : C_BAD;
  }
  return C_BAD;
}

/* Any byte outside chunk data, with the line and trailer limits. */
static int chunked_byte(hp_body_decoder *d, unsigned char c) {
  switch (d->state) {
  case C_DATA_CR:
    return c == '\r' ? C_DATA_LF : C_BAD;
  case C_DATA_LF:
    if (c != '\n')
      return C_BAD;
    d->line = 0;
    d->digits = 0;
    return C_SIZE;
  case C_TR_START:
  case C_TR_NAME:
  case C_TR_VALUE:
  case C_TR_LF:
  case C_END_LF:
    if (++d->trailer > d->lim.max_trailer)
      return C_BAD;
    return trailer_byte(d, c);
  }
  if (++d->line > d->lim.max_line)
    return C_BAD;
  return size_line_byte(d, c);
}

/* ---- decoding: calls ----------------------------------------------------- */

typedef struct cursor {
  const char *in;
  size_t len, pos; /* in[0..len), pos bytes consumed */
  char *out;
  size_t produced;
} cursor;

/* Moves up to max payload bytes from the input to the output. In place,
 * a body whose payload was never preceded by framing in this call (a
 * Content-Length body, or a chunk's data continued from the last call) is
 * already where it belongs: no copy. */
static size_t take(cursor *k, uint64_t max) {
  size_t n = k->len - k->pos;
  if (max < n)
    n = (size_t)max;
  if (n && k->out + k->produced != k->in + k->pos)
    memmove(k->out + k->produced, k->in + k->pos, n);
  k->pos += n;
  k->produced += n;
  return n;
}

static int finish(hp_body_decoder *d, const cursor *k, int r, size_t *used,
                  size_t *produced) {
  *used = k->pos;
  *produced = k->produced;
  d->payload += k->produced;
  if (r == HB_DONE)
    d->done = 1;
  else if (r == HB_ERROR)
    d->failed = 1;
  return r;
}

static int decode_chunked(hp_body_decoder *d, cursor *k) {
  while (k->pos < k->len) {
    if (d->state == C_DATA) {
      d->left -= take(k, d->left);
      if (d->left == 0)
        d->state = C_DATA_CR;
      continue;
    }
    int next = chunked_byte(d, (unsigned char)k->in[k->pos]);
    if (next == C_BAD)
      return HB_ERROR; /* k->pos is the offending byte */
    k->pos++;
    if (next == C_DONE)
      return HB_DONE;
    d->state = next;
  }
  return HB_MORE;
}

void hp_body_decoder_init(hp_body_decoder *d, int kind, uint64_t length,
                          const hp_body_limits *lim) {
  memset(d, 0, sizeof(*d));
  d->kind = kind;
  d->state = C_SIZE;
  /* Without limits no chunked body can pass: failing closed. */
  if (lim)
    d->lim = *lim;
  switch (kind) {
  case HB_NONE:
    d->done = 1;
    break;
  case HB_LENGTH:
    d->left = length;
    d->done = length == 0;
    break;
  case HB_CHUNKED:
  case HB_CLOSE:
    break;
  default:
    d->failed = 1; /* an unknown kind never yields anything */
  }
}

int hp_body_decode(hp_body_decoder *d, const char *in, size_t len, char *out,
                   size_t *used, size_t *produced) {
  cursor k = {in, len, 0, out, 0};
  int r = HB_MORE;
  if (d->failed)
    r = HB_ERROR;
  else if (d->done)
    r = HB_DONE;
  else if (len == 0)
    r = HB_MORE;
  else if (d->kind == HB_CHUNKED)
    r = decode_chunked(d, &k);
  else if (d->kind == HB_LENGTH) {
    d->left -= take(&k, d->left);
    r = d->left == 0 ? HB_DONE : HB_MORE;
  } else {
    take(&k, UINT64_MAX); /* HB_CLOSE */
  }
  return finish(d, &k, r, used, produced);
}

int hp_body_decode_eof(hp_body_decoder *d) {
  if (d->failed)
    return HB_ERROR;
  if (d->done)
    return HB_DONE;
  if (d->kind == HB_CLOSE) {
    d->done = 1;
    return HB_DONE;
  }
  d->failed = 1; /* cut short */
  return HB_ERROR;
}

/* ---- encoding ------------------------------------------------------------ */

static const char crlf[] = "\r\n";
static const char crlf_last[] = "\r\n0\r\n\r\n";
static const char last[] = "0\r\n\r\n";
#define LAST_LEN (sizeof(last) - 1)

/* HB_LENGTH and HB_CLOSE: a plan that carries the body's last payload
 * says so by this post pointer (post_len stays 0), so that
 * hp_body_encode_sent knows when the last byte went. */
static const char end_mark[1] = "";

/* Once the last chunk is in e->frame it stays there whole (only
 * frame_off moves), so the frame tells that the body's end is queued. */
static int last_queued(const hp_body_encoder *e) {
  return e->frame_len >= LAST_LEN &&
         memcmp(e->frame + e->frame_len - LAST_LEN, last, LAST_LEN) == 0;
}

/* Moves the unsent framing to the front of e->frame, then appends s. */
static void frame_append(hp_body_encoder *e, const char *s, size_t n) {
  size_t have = (size_t)(e->frame_len - e->frame_off);
  memmove(e->frame, e->frame + e->frame_off, have);
  memcpy(e->frame + have, s, n);
  e->frame_off = 0;
  e->frame_len = (unsigned char)(have + n);
}

/* Opens a chunk of size bytes: its size line, after the CRLF that closes
 * the previous chunk when that is still owed. At most 2 + 16 + 2 bytes,
 * after at most 1 pending byte (the rest of a CRLF half written; a chunk
 * opens only when no chunk data is left, so no size line is pending):
 * e->frame has room. */
static void open_chunk(hp_body_encoder *e, size_t size) {
  char line[2 + 16 + 2];
  size_t n = 0;
  if (e->in_chunk) {
    line[n++] = '\r';
    line[n++] = '\n';
  }
  char hex[16];
  size_t h = 0;
  uint64_t v = size;
  do {
    hex[h++] = "0123456789abcdef"[v & 0xf];
    v >>= 4;
  } while (v);
  while (h)
    line[n++] = hex[--h];
  line[n++] = '\r';
  line[n++] = '\n';
  frame_append(e, line, n);
  e->in_chunk = 1;
  e->chunk_left = size;
}

/* The last chunk and the empty trailer section, after the owed CRLF. */
static void queue_last(hp_body_encoder *e) {
  if (e->in_chunk)
    frame_append(e, crlf_last, sizeof(crlf_last) - 1);
  else
    frame_append(e, last, LAST_LEN);
  e->in_chunk = 0;
}

void hp_body_encoder_init(hp_body_encoder *e, int kind) {
  memset(e, 0, sizeof(*e));
  e->kind = kind;
  /* HB_NONE (or a kind this does not know) has no body to send. */
  if (kind != HB_LENGTH && kind != HB_CHUNKED && kind != HB_CLOSE)
    e->finished = 1;
}

static void plan_identity(hp_body_encoder *e, size_t ready, int end,
                          hp_body_plan *p) {
  if (end && ready == 0) {
    e->finished = 1;
    return;
  }
  p->payload = ready;
  if (end)
    p->post = end_mark;
}

static void plan_chunked(hp_body_encoder *e, size_t ready, int end,
                         hp_body_plan *p) {
  if (!last_queued(e)) {
    if (e->chunk_left == 0 && ready > 0)
      open_chunk(e, ready);
    else if (e->chunk_left == 0 && end)
      queue_last(e);
  }
  p->pre = e->frame + e->frame_off;
  p->pre_len = (size_t)(e->frame_len - e->frame_off);
  if (last_queued(e)) {
    if (p->pre_len == 0) /* all of it was sent */
      e->finished = 1;
    return;
  }
  p->payload = ready < e->chunk_left ? ready : (size_t)e->chunk_left;
  if (p->payload == 0 || p->payload < e->chunk_left)
    return;
  /* This plan completes the chunk's data. */
  if (end && p->payload == ready) {
    p->post = crlf_last;
    p->post_len = sizeof(crlf_last) - 1;
  } else {
    p->post = crlf;
    p->post_len = sizeof(crlf) - 1;
  }
}

void hp_body_encode_plan(hp_body_encoder *e, size_t ready, int end,
                         hp_body_plan *p) {
  memset(p, 0, sizeof(*p));
  p->pre = p->post = e->frame; /* valid, never read at length 0 */
  if (e->finished)
    return;
  if (e->kind == HB_CHUNKED)
    plan_chunked(e, ready, end, p);
  else
    plan_identity(e, ready, end, p);
}

/* n bytes of the plan's post were written: once one was, the chunk's
 * CRLF is no longer owed, and what was not written is framing still to
 * send. */
static void sent_post(hp_body_encoder *e, const hp_body_plan *p, size_t n) {
  if (n == 0)
    return; /* none of it: still owed, planned again from the state */
  e->in_chunk = 0;
  if (n >= p->post_len) {
    if (p->post == crlf_last)
      e->finished = 1;
    return;
  }
  /* The frame is empty here (the pre was all written); the post goes in
   * whole so that a queued last chunk stays recognisable. */
  memcpy(e->frame, p->post, p->post_len);
  e->frame_off = (unsigned char)n;
  e->frame_len = (unsigned char)p->post_len;
}

size_t hp_body_encode_sent(hp_body_encoder *e, const hp_body_plan *p,
                           size_t n) {
  if (e->finished)
    return 0;
  size_t k = n < p->pre_len ? n : p->pre_len;
  e->frame_off = (unsigned char)(e->frame_off + k);
  n -= k;
  if (k < p->pre_len)
    return 0;
  if (e->frame_off == e->frame_len) {
    if (e->frame_len && last_queued(e)) {
      e->finished = 1;
      return 0;
    }
    e->frame_off = e->frame_len = 0;
  }
  size_t pay = n < p->payload ? n : p->payload;
  n -= pay;
  if (e->kind == HB_CHUNKED)
    e->chunk_left -= pay;
  if (pay < p->payload)
    return pay;
  if (p->post == end_mark)
    e->finished = 1;
  else if (p->post_len)
    sent_post(e, p, n);
  return pay;
}

int hp_body_encode_finished(const hp_body_encoder *e) { return e->finished; }
