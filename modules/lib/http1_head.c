/* SPDX-License-Identifier: BSD-2-Clause */
/* The strict HTTP/1 head scanner (http1_head.h): a byte state machine,
 * with tight loops over the runs of ordinary bytes (names, targets,
 * reasons, values). Limits are enforced by never giving the machine more
 * bytes than the current section may still hold. */
#include "http1_head.h"

#include <string.h>

/* Byte classes: 1 tchar (RFC 9110 5.6.2), 2 VCHAR, 4 VCHAR or obs-text. */
#define C_TCHAR 1u
#define C_VCHAR 2u
#define C_FIELD 4u
static const uint8_t cls[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 7, 6, 7, 7, 7, 7, 7, 6, 6, 7, 7, 6, 7, 7, 6,
    7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 6, 6, 6, 6, 6, 6,
    6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 6, 6, 6, 7, 7,
    7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 6, 7, 6, 7, 0,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
};

enum state {
  S_METHOD = 0, /* requests start here */
  S_SKIP_CR,    /* the LF of a skipped empty line */
  S_TARGET,
  S_VERSION, /* "HTTP/" DIGIT "." DIGIT, pos counts */
  S_V_END,   /* requests: the line's end after the version */
  S_R_SP,    /* responses: the SP after the version */
  S_CODE,
  S_AFTER_CODE,
  S_REASON,
  S_START_CR, /* the LF after the start line's CR */
  S_LINE,     /* fields start here: a field line or the empty line */
  S_NAME,
  S_VALUE,
  S_LINE_CR,
  S_END_CR,
  S_DONE,
  S_ERR
};

/* Field names the scanner itself reads. */
enum { K_CL = 1, K_TE = 2 };
static const char cl_name[] = "content-length";
static const char te_name[] = "transfer-encoding";

/* What step() stopped at. */
enum { EV_NONE = 0, EV_START, EV_DONE, EV_ERR };

enum { CL_BEFORE = 0, CL_DIGITS, CL_AFTER };

static int is_ows(uint8_t c) { return c == ' ' || c == '\t'; }
static int is_digit(uint8_t c) { return c >= '0' && c <= '9'; }
static uint8_t lower(uint8_t c) {
  return (c >= 'A' && c <= 'Z') ? (uint8_t)(c + 32) : c;
}

void h1_init(h1_head *h, int kind, unsigned opts, const h1_limits *lim,
             h1_field *fields) {
  memset(h, 0, sizeof(*h));
  h->kind = kind == H1_RESPONSE ? H1_RESPONSE : H1_REQUEST;
  h->opts = (uint8_t)opts;
  if (lim)
    h->lim = *lim;
  h->fields = h->lim.max_fields ? fields : NULL;
  h->content_length = -1;
  h->st = h->kind == H1_RESPONSE ? S_VERSION : S_METHOD;
}

/* ---- the machine -------------------------------------------------------- */

static int fail(h1_head *h, int error) {
  h->error = error;
  h->st = S_ERR;
  return EV_ERR;
}

/* The line's end was a bare LF: allowed with H1_LF. */
static int bare_lf_ok(const h1_head *h) { return (h->opts & H1_LF) != 0; }

static void name_byte(h1_head *h, uint8_t c) {
  uint32_t i = h->f_name_len++;
  if (!h->known)
    return;
  c = lower(c);
  if ((h->known & K_CL) && (i >= sizeof(cl_name) - 1 || cl_name[i] != c))
    h->known &= (uint8_t)~K_CL;
  if ((h->known & K_TE) && (i >= sizeof(te_name) - 1 || te_name[i] != c))
    h->known &= (uint8_t)~K_TE;
}

/* The name ended at its colon: which known field it is. */
static uint8_t name_known(const h1_head *h) {
  if ((h->known & K_CL) && h->f_name_len == sizeof(cl_name) - 1)
    return K_CL;
  if ((h->known & K_TE) && h->f_name_len == sizeof(te_name) - 1)
    return K_TE;
  return 0;
}

/* One Content-Length number ended (at a comma or the line's end): it
 * must be there and equal every other one. 0 or -1. */
static int cl_element_end(h1_head *h) {
  if (!h->cl_digits ||
      (h->content_length >= 0 && (uint64_t)h->content_length != h->cl))
    return -1;
  h->content_length = (int64_t)h->cl;
  h->cl = 0;
  h->cl_digits = 0;
  h->cl_state = CL_BEFORE;
  return 0;
}

static int cl_byte(h1_head *h, uint8_t c) {
  if (is_digit(c) && h->cl_state != CL_AFTER) {
    if (++h->cl_digits > H1_CONTENT_LENGTH_DIGITS)
      return -1;
    h->cl_state = CL_DIGITS;
    h->cl = h->cl * 10 + (uint64_t)(c - '0');
    return 0;
  }
  if (is_ows(c)) {
    if (h->cl_state == CL_DIGITS)
      h->cl_state = CL_AFTER;
    return 0;
  }
  if (c == ',' && (h->opts & H1_CL_LIST))
    return cl_element_end(h) < 0 ? -1 : 0;
  return -1;
}

/* A field line ended (its EOL consumed): checks and records it. */
static int line_end(h1_head *h) {
  if (h->known == K_CL) {
    if (cl_element_end(h) < 0)
      return fail(h, H1_E_CONTENT_LENGTH);
    h->cl_fields++;
  } else if (h->known == K_TE) {
    h->te_fields++;
  }
  if (h->fields) {
    h1_field *f = &h->fields[h->n_fields];
    f->name.off = h->f_name;
    f->name.len = h->f_name_len;
    if (h->pos) {
      f->value.off = h->f_val;
      f->value.len = h->f_val_end - h->f_val;
    } else {
      f->value.off = h->f_name + h->f_name_len + 1;
      f->value.len = 0;
    }
  }
  h->n_fields++;
  h->st = S_LINE;
  return EV_NONE;
}

static int start_done(h1_head *h, uint32_t end) {
  h->start_len = end;
  h->st = S_LINE;
  return EV_START;
}

/* Runs the machine over p[0..n) (the bytes from offset h->seen on); stops
 * after n bytes or at an event. The bytes used are added to h->seen. */
static int step(h1_head *h, const uint8_t *p, size_t n) {
  static const char version[] = "HTTP/";
  size_t k = 0;
  int ev = EV_NONE;
  uint32_t base = h->seen;
  while (k < n && ev == EV_NONE) {
    uint8_t c = p[k];
    uint32_t off = base + (uint32_t)k;
    k++;
    switch (h->st) {
    case S_METHOD:
      if (cls[c] & C_TCHAR) {
        if (!h->method.len)
          h->method.off = off;
        h->method.len++;
      } else if (c == ' ' && h->method.len) {
        h->st = S_TARGET;
      } else if (!h->method.len && (h->opts & H1_SKIP_EMPTY) &&
                 (c == '\r' || c == '\n')) {
        if (c == '\r')
          h->st = S_SKIP_CR;
        else if (!bare_lf_ok(h))
          ev = fail(h, H1_E_BARE_LF);
      } else {
        ev = fail(h, H1_E_START_LINE);
      }
      break;
    case S_SKIP_CR:
      if (c == '\n')
        h->st = S_METHOD;
      else
        ev = fail(h, H1_E_BARE_CR);
      break;
    case S_TARGET:
      if (cls[c] & C_VCHAR) {
        size_t s = k - 1;
        while (k < n && (cls[p[k]] & C_VCHAR))
          k++;
        if (!h->target.len)
          h->target.off = off;
        h->target.len += (uint32_t)(k - s);
      } else if (c == ' ' && h->target.len) {
        h->st = S_VERSION;
        h->pos = 0;
      } else {
        ev = fail(h, H1_E_START_LINE);
      }
      break;
    case S_VERSION:
      if (h->pos < 5 ? c != (uint8_t)version[h->pos]
          : h->pos == 6 ? c != '.'
                        : !is_digit(c)) {
        ev = fail(h, H1_E_VERSION);
        break;
      }
      if (h->pos == 5)
        h->major = (uint8_t)(c - '0');
      else if (h->pos == 7)
        h->minor = (uint8_t)(c - '0');
      if (++h->pos == 8)
        h->st = h->kind == H1_RESPONSE ? S_R_SP : S_V_END;
      break;
    case S_V_END:
      if (c == '\r')
        h->st = S_START_CR;
      else if (c == '\n' && bare_lf_ok(h))
        ev = start_done(h, off + 1);
      else
        ev = fail(h, c == '\n' ? H1_E_BARE_LF : H1_E_VERSION);
      break;
    case S_R_SP:
      if (c == ' ') {
        h->st = S_CODE;
        h->pos = 0;
      } else {
        ev = fail(h, H1_E_VERSION);
      }
      break;
    case S_CODE:
      if (!is_digit(c) || (h->pos == 0 && (c < '1' || c > '5'))) {
        ev = fail(h, H1_E_STATUS);
        break;
      }
      h->status = (uint16_t)(h->status * 10 + (c - '0'));
      if (++h->pos == 3)
        h->st = S_AFTER_CODE;
      break;
    case S_AFTER_CODE:
      if (c == ' ') {
        h->reason.off = off + 1;
        h->st = S_REASON;
      } else if ((c == '\r' || c == '\n') && (h->opts & H1_CODE_ONLY)) {
        h->reason.off = off;
        if (c == '\r')
          h->st = S_START_CR;
        else if (bare_lf_ok(h))
          ev = start_done(h, off + 1);
        else
          ev = fail(h, H1_E_BARE_LF);
      } else {
        ev = fail(h, is_digit(c) ? H1_E_STATUS : H1_E_START_LINE);
      }
      break;
    case S_REASON:
      if ((cls[c] & C_FIELD) || is_ows(c)) {
        size_t s = k - 1;
        while (k < n && ((cls[p[k]] & C_FIELD) || is_ows(p[k])))
          k++;
        h->reason.len += (uint32_t)(k - s);
      } else if (c == '\r') {
        h->st = S_START_CR;
      } else if (c == '\n') {
        ev = bare_lf_ok(h) ? start_done(h, off + 1) : fail(h, H1_E_BARE_LF);
      } else {
        ev = fail(h, H1_E_VALUE);
      }
      break;
    case S_START_CR:
      ev = c == '\n' ? start_done(h, off + 1) : fail(h, H1_E_BARE_CR);
      break;
    case S_LINE:
      if (cls[c] & C_TCHAR) {
        if (h->lim.max_fields && h->n_fields >= h->lim.max_fields) {
          ev = fail(h, H1_E_TOO_MANY_FIELDS);
          break;
        }
        h->st = S_NAME;
        h->f_name = off;
        h->f_name_len = 0;
        h->known = K_CL | K_TE;
        h->pos = 0;
        h->cl = 0;
        h->cl_digits = 0;
        h->cl_state = CL_BEFORE;
        name_byte(h, c);
      } else if (c == '\r') {
        h->st = S_END_CR;
      } else if (c == '\n') {
        if (bare_lf_ok(h)) {
          h->head_len = off + 1;
          h->st = S_DONE;
          ev = EV_DONE;
        } else {
          ev = fail(h, H1_E_BARE_LF);
        }
      } else {
        ev = fail(h, is_ows(c) ? H1_E_OBS_FOLD : H1_E_NAME);
      }
      break;
    case S_NAME:
      if (cls[c] & C_TCHAR) {
        if (!h->known) {
          size_t s = k - 1;
          while (k < n && (cls[p[k]] & C_TCHAR))
            k++;
          h->f_name_len += (uint32_t)(k - s);
        } else {
          name_byte(h, c);
        }
      } else if (c == ':') {
        h->known = name_known(h);
        h->st = S_VALUE;
      } else {
        ev = fail(h, is_ows(c) ? H1_E_SPACE_NAME : H1_E_NAME);
      }
      break;
    case S_VALUE:
      if (cls[c] & C_FIELD) {
        if (h->known == K_CL) {
          if (cl_byte(h, c) < 0) {
            ev = fail(h, H1_E_CONTENT_LENGTH);
            break;
          }
        } else {
          while (k < n && (cls[p[k]] & C_FIELD))
            k++;
        }
        if (!h->pos) {
          h->pos = 1;
          h->f_val = off;
        }
        h->f_val_end = base + (uint32_t)k;
      } else if (is_ows(c)) {
        if (h->known == K_CL)
          (void)cl_byte(h, c);
      } else if (c == '\r') {
        h->st = S_LINE_CR;
      } else if (c == '\n') {
        ev = bare_lf_ok(h) ? line_end(h) : fail(h, H1_E_BARE_LF);
      } else {
        ev = fail(h, H1_E_VALUE);
      }
      break;
    case S_LINE_CR:
      ev = c == '\n' ? line_end(h) : fail(h, H1_E_BARE_CR);
      break;
    case S_END_CR:
      if (c == '\n') {
        h->head_len = off + 1;
        h->st = S_DONE;
        ev = EV_DONE;
      } else {
        ev = fail(h, H1_E_BARE_CR);
      }
      break;
    default:
      ev = fail(h, h->error ? h->error : H1_E_START_LINE);
      break;
    }
  }
  h->seen = base + (uint32_t)k;
  return ev;
}

int h1_feed(h1_head *h, const char *p, size_t n, size_t *used) {
  size_t i = 0;
  *used = 0;
  if (h->st == S_DONE)
    return H1_DONE;
  if (h->st == S_ERR)
    return H1_ERROR;
  while (i < n) {
    int in_start = h->st < S_LINE;
    uint64_t room = n - i, r;
    int which = 0; /* the limit the room ends at */
    if (in_start && h->lim.max_start &&
        (r = (uint64_t)h->lim.max_start - h->seen) <= room) {
      room = r;
      which = H1_E_START_TOO_LONG;
    }
    if (!in_start && h->lim.max_fields_bytes &&
        (r = (uint64_t)h->start_len + h->lim.max_fields_bytes - h->seen) <=
            room) {
      room = r;
      which = H1_E_FIELDS_TOO_LONG;
    }
    if (h->lim.max_head && (r = (uint64_t)h->lim.max_head - h->seen) <= room &&
        (r < room || !which)) {
      room = r;
      which = H1_E_HEAD_TOO_LONG;
    }
    uint32_t before = h->seen;
    int ev = room ? step(h, (const uint8_t *)p + i, (size_t)room) : EV_NONE;
    i += h->seen - before;
    if (ev == EV_ERR) {
      *used = i;
      return H1_ERROR;
    }
    if (ev == EV_DONE) {
      *used = i;
      return H1_DONE;
    }
    if (ev == EV_START) {
      if (h->opts & H1_PAUSE_START) {
        *used = i;
        return H1_START;
      }
      continue;
    }
    if (which) { /* the section's room is used up without its end */
      fail(h, which);
      *used = i;
      return H1_ERROR;
    }
  }
  *used = i;
  return H1_MORE;
}

const char *h1_error_name(int error) {
  switch (error) {
  case H1_E_NONE: return "none";
  case H1_E_START_LINE: return "malformed start line";
  case H1_E_VERSION: return "malformed HTTP version";
  case H1_E_STATUS: return "malformed status code";
  case H1_E_NAME: return "malformed field name";
  case H1_E_SPACE_NAME: return "white space before a colon";
  case H1_E_OBS_FOLD: return "obsolete line folding";
  case H1_E_VALUE: return "control byte in a field";
  case H1_E_BARE_CR: return "bare CR";
  case H1_E_BARE_LF: return "bare LF";
  case H1_E_CONTENT_LENGTH: return "invalid or conflicting Content-Length";
  case H1_E_START_TOO_LONG: return "start line too long";
  case H1_E_FIELDS_TOO_LONG: return "header fields too long";
  case H1_E_HEAD_TOO_LONG: return "head too long";
  case H1_E_TOO_MANY_FIELDS: return "too many header fields";
  }
  return "unknown";
}

/* ---- lookups ------------------------------------------------------------ */

static int span_is(const char *head, h1_span s, const char *name) {
  size_t n = strlen(name);
  if (s.len != n)
    return 0;
  const char *a = head + s.off;
  for (size_t i = 0; i < n; i++)
    if (lower((uint8_t)a[i]) != lower((uint8_t)name[i]))
      return 0;
  return 1;
}

int h1_name_is(const h1_head *h, const char *head, size_t i,
               const char *name) {
  return h->fields && i < h->n_fields && span_is(head, h->fields[i].name, name);
}

long h1_find(const h1_head *h, const char *head, const char *name,
             size_t from) {
  if (!h->fields)
    return -1;
  for (size_t i = from; i < h->n_fields; i++)
    if (span_is(head, h->fields[i].name, name))
      return (long)i;
  return -1;
}

int h1_list_has(const char *v, size_t n, const char *token) {
  size_t tl = strlen(token), i = 0;
  while (i < n) {
    while (i < n && (is_ows((uint8_t)v[i]) || v[i] == ','))
      i++;
    size_t s = i;
    while (i < n && v[i] != ',')
      i++;
    size_t e = i;
    while (e > s && is_ows((uint8_t)v[e - 1]))
      e--;
    if (e - s == tl) {
      size_t j = 0;
      while (j < tl && lower((uint8_t)v[s + j]) == lower((uint8_t)token[j]))
        j++;
      if (j == tl)
        return 1;
    }
  }
  return 0;
}
