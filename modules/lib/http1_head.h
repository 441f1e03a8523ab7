/* SPDX-License-Identifier: BSD-2-Clause */
/* One strict HTTP/1 message-head scanner (issue 25 item 2) for every
 * reader of heads from peers: the host's admin listener
 * (host/admin_parse.c), the upstream kit's CONNECT answer
 * (modules/upstream/up_connect.c), the tunnel's WebSocket upgrade request
 * and 101 (modules/tunnel_common/tm_wsc.c) and the HTTP proxy frontend
 * (modules/http_proxy/http_head.c). Each caller keeps its own semantics
 * (which methods, versions and fields it wants, which status it answers)
 * on top.
 *
 * Pure: no I/O, no allocation, no logging, no host dependency (the host
 * compiles this same file into itself). Incremental: h1_feed() takes the
 * bytes as they arrive, in any pieces, remembers no byte (only offsets
 * from the head's first byte, counted across feeds), and stops exactly
 * after the head's last LF: the bytes after it are not looked at. The
 * verdict, its reason and every offset do not depend on how the bytes
 * were split.
 *
 * Grammar (RFC 9112 sections 2-5, strictly):
 *
 *   head         = start-line *( field-line EOL ) EOL
 *   request-line = token SP 1*VCHAR SP "HTTP/" DIGIT "." DIGIT EOL
 *   status-line  = "HTTP/" DIGIT "." DIGIT SP 3DIGIT SP *reason EOL
 *   field-line   = token ":" OWS *( VCHAR / obs-text / SP / HTAB ) OWS
 *   EOL          = CRLF (a bare LF too with H1_LF)
 *
 * Refused: a CR not followed by LF (anywhere), a bare LF unless H1_LF, a
 * control byte or DEL in a value or reason, a name that is not a token,
 * white space between a name and its colon, obs-fold (a line starting
 * with SP or HTAB, also right after the start line), a status code not
 * 100..599, a Content-Length that is not 1*DIGIT (at most 18 digits,
 * leading zeros included: it always fits) or a second one with another value (the same value again
 * is taken: RFC 9110 section 8.6), and any section over its limit.
 *
 * Threads: none; one h1_head is used by one thread at a time. */
#ifndef PH_HTTP1_HEAD_H
#define PH_HTTP1_HEAD_H

#include <stddef.h>
#include <stdint.h>

/* A piece of the head: off counts from the head's first byte. */
typedef struct h1_span {
  uint32_t off, len;
} h1_span;

/* A field line: the name, and the value without surrounding OWS. */
typedef struct h1_field {
  h1_span name, value;
} h1_field;

enum h1_kind { H1_REQUEST = 0, H1_RESPONSE = 1 };

/* Per-caller options (or-ed). */
enum h1_opt {
  H1_LF = 1u,          /* a bare LF ends a line too (RFC 9112 section 2.2) */
  H1_SKIP_EMPTY = 2u,  /* requests: empty lines before the request line are
                          skipped (section 2.2); they count in the start
                          line's limit */
  H1_CODE_ONLY = 4u,   /* responses: the status line may end right after
                          the code, without its SP */
  H1_PAUSE_START = 8u, /* h1_feed returns H1_START once, right after the
                          start line */
  H1_CL_LIST = 16u,    /* a Content-Length value may be a list of equal
                          numbers ("5, 5": RFC 9110 section 8.6); the
                          http_proxy frontend's rule */
};

/* Limits, each in bytes with the line ends (0: none of its own). A
 * section may be exactly its limit long; H1_E_*_TOO_LONG as soon as that
 * many bytes arrived without its end. */
typedef struct h1_limits {
  uint32_t max_start;  /* the start line (and skipped empty lines) */
  uint32_t max_fields_bytes; /* the field lines and the empty line */
  uint32_t max_head;   /* the whole head */
  uint32_t max_fields; /* field lines */
} h1_limits;

enum h1_result {
  H1_ERROR = -1, /* h->error says why; the scanner stays in error */
  H1_MORE = 0,   /* every byte given was used: give more */
  H1_START = 1,  /* H1_PAUSE_START: the start line is whole */
  H1_DONE = 2,   /* the head is whole: h->head_len bytes */
};

enum h1_error {
  H1_E_NONE = 0,
  H1_E_START_LINE,    /* malformed request or status line */
  H1_E_VERSION,       /* not "HTTP/" DIGIT "." DIGIT */
  H1_E_STATUS,        /* a status code not 3 digits in 100..599 */
  H1_E_NAME,          /* a field name that is not a token, or none */
  H1_E_SPACE_NAME,    /* white space between the name and its colon */
  H1_E_OBS_FOLD,      /* a line starting with SP or HTAB */
  H1_E_VALUE,         /* a control byte or DEL in a value or reason */
  H1_E_BARE_CR,       /* a CR not followed by LF */
  H1_E_BARE_LF,       /* a LF without CR (without H1_LF) */
  H1_E_CONTENT_LENGTH, /* not 1*DIGIT, too big, or two that differ */
  H1_E_START_TOO_LONG, /* the start line over max_start */
  H1_E_FIELDS_TOO_LONG, /* the field lines over max_fields_bytes */
  H1_E_HEAD_TOO_LONG,   /* the head over max_head */
  H1_E_TOO_MANY_FIELDS, /* more field lines than max_fields */
};

/* The most digits a Content-Length may have (the admin listener's rule,
 * the strictest: below 10^18, so below 2^62 too), and that bound. */
#define H1_CONTENT_LENGTH_DIGITS 18
#define H1_CONTENT_LENGTH_LIMIT (UINT64_C(1) << 62)

typedef struct h1_head {
  /* Set by h1_init. */
  uint8_t kind, opts;
  h1_limits lim;
  h1_field *fields; /* NULL: fields are counted, not recorded */
  /* Results, valid once the part they belong to was scanned. */
  int error;          /* enum h1_error */
  uint32_t seen;      /* bytes used so far (the error's byte included) */
  uint32_t start_len; /* the start line with its EOL (and skipped lines) */
  uint32_t head_len;  /* the whole head, once H1_DONE */
  h1_span method, target; /* requests */
  h1_span reason;         /* responses */
  uint16_t status;        /* responses */
  uint8_t major, minor;   /* HTTP/major.minor */
  uint32_t n_fields;
  int64_t content_length; /* -1: none */
  uint32_t te_fields;     /* Transfer-Encoding field lines */
  uint32_t cl_fields;     /* Content-Length field lines */
  /* Private. */
  uint8_t st, pos, known, cl_state;
  uint32_t f_name, f_name_len, f_val, f_val_end;
  uint64_t cl;
  uint8_t cl_digits;
} h1_head;

/* Prepares h for one head of kind (H1_REQUEST or H1_RESPONSE) with opts
 * (enum h1_opt). fields, when not NULL, holds lim->max_fields entries
 * and gets every field line; with max_fields 0 (no limit) nothing is
 * recorded. */
void h1_init(h1_head *h, int kind, unsigned opts, const h1_limits *lim,
             h1_field *fields);

/* Scans p[0..n), the bytes after those of earlier calls. *used: how many
 * it took (all of them with H1_MORE; through the start line's LF with
 * H1_START; through the head's last LF with H1_DONE; through the
 * offending byte with H1_ERROR). After H1_DONE or H1_ERROR it takes
 * nothing and says the same again. */
int h1_feed(h1_head *h, const char *p, size_t n, size_t *used);

/* A static name of an error ("bare CR", ...), for logs and tests. */
const char *h1_error_name(int error);

/* head: the head's bytes (offsets count from head[0]). The index of the
 * first field at or after from named name (case-insensitive), or -1.
 * Needs recorded fields. */
long h1_find(const h1_head *h, const char *head, const char *name,
             size_t from);
/* Whether field i's name is name (case-insensitive). */
int h1_name_is(const h1_head *h, const char *head, size_t i,
               const char *name);
/* Whether the comma-separated list v[0..n) has the element token
 * (case-insensitive, OWS around elements ignored). */
int h1_list_has(const char *v, size_t n, const char *token);

#endif
