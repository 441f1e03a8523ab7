/* SPDX-License-Identifier: BSD-2-Clause */
/* A small, strict JSON (RFC 8259) reader and writer, for the admin API's
 * bodies and the tunnel protocol's small JSON messages. Pure: no I/O, no
 * allocation.
 *
 * Reader: json_parse checks the whole text and fills a caller-supplied
 * array of tokens (one per value, and one per object key), bounded by the
 * caller: the input's size, the nesting depth and the number of tokens.
 * Strings stay in the input (escaped); json_str decodes one into a
 * caller's buffer. Refused: anything RFC 8259 does not allow (trailing
 * commas, comments, single quotes, leading zeros, "+1", NaN, bare
 * control characters, bad escapes, lone or reversed surrogates in \u
 * escapes, trailing bytes), invalid UTF-8 (overlong forms, surrogates,
 * above U+10FFFF, stray continuation bytes), and an object with the same
 * key twice (compared decoded): a document that two readers could read
 * two ways is refused.
 *
 * Writer: json_w builds a document into a fixed buffer, escaping strings
 * ("\\", "\"", control characters; anything else as UTF-8) and checking
 * that they are valid UTF-8. Overflow, invalid UTF-8 or misnesting make
 * json_w_finish fail; nothing partial is ever returned as a success. */
#ifndef PH_JSON_H
#define PH_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "bw.h"

/* Hard bounds whatever the caller asks for. */
#define JSON_MAX_INPUT (16u << 20)
#define JSON_MAX_DEPTH 64
#define JSON_W_MAX_DEPTH 32

typedef enum json_type {
  JSON_OBJECT = 1,
  JSON_ARRAY,
  JSON_STRING,
  JSON_NUMBER,
  JSON_TRUE,
  JSON_FALSE,
  JSON_NULL
} json_type;

enum json_status {
  JSON_OK = 0,
  JSON_ESYNTAX = -1, /* not JSON */
  JSON_EDEPTH = -2,  /* nested deeper than max_depth */
  JSON_ETOKENS = -3, /* more tokens than the array holds */
  JSON_ESIZE = -4,   /* input larger than JSON_MAX_INPUT */
  JSON_EUTF8 = -5,   /* invalid UTF-8 or a bad \u escape */
  JSON_EDUP = -6     /* an object has the same key twice */
};

typedef struct json_tok {
  uint8_t type;   /* json_type */
  uint32_t start; /* byte offset: a string's first byte after the quote */
  uint32_t end;   /* one past the last byte (a string's closing quote) */
  uint32_t size;  /* members of an object, elements of an array */
  uint32_t next;  /* index of the first token after this value's subtree */
} json_tok;

typedef struct json_doc {
  const char *text;
  size_t len;
  json_tok *toks;
  size_t n; /* tokens used; toks[0] is the top-level value */
} json_doc;

/* Parses len bytes of text into toks (at most max_toks), nesting at most
 * max_depth (capped at JSON_MAX_DEPTH). An object's tokens are key,
 * value, key, value... after it. JSON_OK or a json_status; *err_off (may
 * be NULL) gets the offset where the input went wrong. */
int json_parse(json_doc *doc, const char *text, size_t len, json_tok *toks,
               size_t max_toks, size_t max_depth, size_t *err_off);

/* The type of token i (0 when i is out of range). */
int json_type_of(const json_doc *doc, size_t i);
/* The value of key in object obj: its token index, or -1 (no such key,
 * obj not an object). */
long json_get(const json_doc *doc, size_t obj, const char *key);
/* Decodes string token i into out (cap bytes, NUL-terminated): its
 * length, or -1 (not a string, does not fit, or holds a NUL, which no C
 * string can carry). */
long json_str(const json_doc *doc, size_t i, char *out, size_t cap);
/* Whether string token i decodes to exactly s. */
int json_str_eq(const json_doc *doc, size_t i, const char *s);
/* An integer token (no fraction or exponent) within int64: 0 or -1. */
int json_int(const json_doc *doc, size_t i, int64_t *out);
/* true or false: 0 or -1. */
int json_bool(const json_doc *doc, size_t i, int *out);

/* ---- writer --------------------------------------------------------- */

typedef struct json_w {
  ph_bw out;  /* the caller's buffer, kept NUL-terminated */
  int failed; /* overflow, invalid UTF-8, misnesting */
  int depth;
  int need_comma[JSON_W_MAX_DEPTH + 1];
  int after_key;
} json_w;

void json_w_init(json_w *w, char *buf, size_t cap);
void json_w_obj(json_w *w);
void json_w_obj_end(json_w *w);
void json_w_arr(json_w *w);
void json_w_arr_end(json_w *w);
/* A key inside an object; the next call writes its value. */
void json_w_key(json_w *w, const char *key);
void json_w_str(json_w *w, const char *s); /* NULL writes null */
void json_w_strn(json_w *w, const char *s, size_t n);
void json_w_int(json_w *w, int64_t v);
void json_w_uint(json_w *w, uint64_t v);
void json_w_bool(json_w *w, int v);
void json_w_null(json_w *w);
/* A member of an object in one call: json_w_key, then the value. */
void json_w_kstr(json_w *w, const char *key, const char *s); /* NULL: null */
void json_w_kint(json_w *w, const char *key, int64_t v);
void json_w_kuint(json_w *w, const char *key, uint64_t v);
void json_w_kbool(json_w *w, const char *key, int v);
/* The document's length (NUL-terminated in buf), or -1 when anything
 * failed or a container is still open. */
long json_w_finish(json_w *w);

#endif
