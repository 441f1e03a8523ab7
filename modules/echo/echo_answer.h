/* SPDX-License-Identifier: BSD-2-Clause */
/* The echo endpoint's answer (issue 26, CP-6-4): from one HTTP/1 request
 * head and the peer address the listener saw, the whole response (status
 * line, headers, JSON body) a checker reads through a proxy:
 *
 *   {"remote_addr":"203.0.113.7","nonce":"...","method":"GET",
 *    "headers":[["Via","1.1 tinyproxy"],...]}
 *
 * The nonce is the X-Proxyhost-Nonce header's value, else the query's
 * `nonce=` parameter (as sent: no percent-decoding), else "". Headers are
 * echoed in arrival order, each name and value as received (invalid UTF-8
 * bytes are replaced by '?', so the JSON stays valid).
 *
 * Pure: no I/O, no allocation, no clock; any thread. The caller owns every
 * buffer. Bounds: the head at most ECHO_HEAD_MAX bytes with at most
 * ECHO_FIELDS_MAX field lines (longer: 431), the answer at most cap bytes
 * (ECHO_ANSWER_MAX is enough for any head that passes). Fuzzed by
 * t/fuzz/fuzz_echo_answer.c. */
#ifndef PH_ECHO_ANSWER_H
#define PH_ECHO_ANSWER_H

#include <stddef.h>

#define ECHO_HEAD_MAX 8192u
#define ECHO_FIELDS_MAX 64u
#define ECHO_NONCE_MAX 128u
#define ECHO_NONCE_HEADER "X-Proxyhost-Nonce"
/* Every byte of the head escaped as \u00XX is 6 bytes, plus the frame. */
#define ECHO_ANSWER_MAX (6u * ECHO_HEAD_MAX + 1024u)

enum echo_need { ECHO_MORE = 0, ECHO_WHOLE = 1, ECHO_BAD = -1 };

/* Whether req[0..len) holds a whole request head: ECHO_WHOLE, ECHO_MORE
 * (give more bytes), or ECHO_BAD (malformed or over the bounds: answer it
 * anyway, echo_answer() says 400 or 431). */
int echo_head_complete(const char *req, size_t len);

/* Writes the response to req[0..len) (a whole head, or what arrived of a
 * bad one) seen from peer (an address literal, NUL-terminated) into
 * out[0..cap): 200 with the JSON for a GET or HEAD (HEAD: no body), 405
 * for another method, 400 for a malformed head, 431 for one over the
 * bounds; always "Connection: close". Returns the response's length, or
 * 0 when cap is too small. *status (may be NULL) gets the status code. */
size_t echo_answer(const char *req, size_t len, const char *peer, char *out,
                   size_t cap, int *status);

#endif
