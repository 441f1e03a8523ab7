/* SPDX-License-Identifier: BSD-2-Clause */
/* See ctl_status_print.h. */
#include "ctl_status_print.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "ctl_print.h"
#include "lib/bw.h"
#include "lib/json.h"

#define CELL_MAX 512  /* a value's bytes (the host cuts at 256) */
#define CELL_CHARS 40 /* a cell's characters at most in a table */
#define COLS_MAX 16   /* PH_STATUS_COLUMNS_MAX */
#define LINE_CAP 4096 /* > CTL_STATUS_WIDTH_MAX * 4 + CELL_MAX */

typedef struct sp {
  FILE *out;
  const json_doc *d;
  unsigned width, rows_max;
} sp;

/* Characters (code points) of UTF-8 s: json_str gives valid UTF-8. */
static size_t chars(const char *s) {
  size_t n = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++)
    n += (*p & 0xc0) != 0x80;
  return n;
}

/* s cut to n characters, its tail "..." when cut. In place. */
static void cut(char *s, size_t n) {
  if (chars(s) <= n)
    return;
  size_t keep = n > 3 ? n - 3 : 0, seen = 0;
  unsigned char *p = (unsigned char *)s;
  for (; *p; p++)
    if ((*p & 0xc0) != 0x80 && seen++ == keep)
      break;
  memcpy(p, "...", n - keep < 3 ? n - keep : 3);
  p[n - keep < 3 ? n - keep : 3] = '\0';
}

/* Control characters (C0, DEL, C1) as '?': a value cannot move the
 * cursor or retitle the terminal. In place. */
static void tame(char *s) {
  unsigned char *p = (unsigned char *)s, *o = p;
  while (*p) {
    if (*p < 0x20 || *p == 0x7f) {
      *o++ = '?';
      p++;
    } else if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
      *o++ = '?';
      p += 2;
    } else {
      *o++ = *p++;
    }
  }
  *o = '\0';
}

static void put_line(sp *p, const char *s) {
  char line[LINE_CAP];
  snprintf(line, sizeof(line), "%s", s);
  cut(line, p->width);
  fprintf(p->out, "%s\n", line);
}

/* Value token v as text, "-" for none, null or "". */
static void val(sp *p, long v, char *out, size_t cap) {
  ctl_value_text(p->d, v, "", out, cap);
  if (!out[0])
    snprintf(out, cap, "-");
  tame(out);
}

static void member(sp *p, size_t obj, const char *key, char *out,
                   size_t cap) {
  val(p, json_type_of(p->d, obj) == JSON_OBJECT ? json_get(p->d, obj, key)
                                                : -1,
      out, cap);
}

/* ---- items wrapped on at most max_lines lines ------------------------- */

typedef struct wrap {
  sp *p;
  char line[LINE_CAP];
  ph_bw w;
  const char *sep;
  size_t indent;
  unsigned lines, max_lines;
  int full;
} wrap;

/* Items after first, sep between two on a line, on at most max_lines
 * lines (then "..."); a continuation line is indented two spaces. */
static void wrap_init(wrap *x, sp *p, const char *first, const char *sep,
                      unsigned max_lines) {
  x->p = p;
  x->sep = sep;
  ph_bw_init(&x->w, x->line, sizeof(x->line), PH_BW_TEXT);
  ph_bw_puts(&x->w, first);
  x->indent = chars(first);
  x->lines = 0;
  x->max_lines = max_lines;
  x->full = 0;
}

static void wrap_flush(wrap *x) {
  put_line(x->p, x->line);
  x->lines++;
  ph_bw_init(&x->w, x->line, sizeof(x->line), PH_BW_TEXT);
  ph_bw_puts(&x->w, "  ");
  x->indent = 2;
}

static void wrap_add(wrap *x, const char *item) {
  if (x->full)
    return;
  size_t now = chars(x->line), sep = now > x->indent ? strlen(x->sep) : 0;
  if (sep && now + sep + chars(item) > x->p->width) {
    if (x->lines + 1 >= x->max_lines) {
      ph_bw_puts(&x->w, " ...");
      if (ph_bw_over(&x->w))
        cut(x->line, x->p->width);
      wrap_flush(x);
      x->full = 1;
      return;
    }
    wrap_flush(x);
    sep = 0;
  }
  ph_bw_printf(&x->w, "%s%s", sep ? x->sep : "", item);
}

static void wrap_end(wrap *x) {
  if (!x->full && chars(x->line) > x->indent)
    wrap_flush(x);
}

/* ---- tables ---------------------------------------------------------- */

static size_t next_of(const json_doc *d, size_t k) { return d->toks[k].next; }

/* A cell narrows to no less than its header or this, whichever is wider:
 * names, hashes and nodes stay whole; a long list gives way. */
#define CELL_KEEP 12

/* Narrows the first n columns, one character at a time and never below
 * their mins, until a row's line (four spaces of indent, two between
 * columns) fits screen: 1 when it does. The column whose cells were the
 * widest gives way first, down to its least, before the next one. */
static int narrow(size_t *width, const size_t *mins, size_t n, size_t screen) {
  size_t line = 4 + (n ? 2 * (n - 1) : 0), natural[COLS_MAX];
  for (size_t c = 0; c < n; c++) {
    line += width[c];
    natural[c] = width[c];
  }
  while (line > screen) {
    size_t w = n;
    for (size_t c = 0; c < n; c++)
      if (width[c] > mins[c] && (w == n || natural[c] > natural[w]))
        w = c;
    if (w == n)
      return 0; /* every column at its least */
    width[w]--;
    line--;
  }
  return 1;
}

/* The most leading columns that fit screen once their widest cells gave
 * way (a tunnel server's capabilities list rather than the columns after
 * it), at least one, with width narrowed for them; the others are left
 * out of the lines, and said. What does not fit even then (one column) is
 * cut at the line's end (put_line). */
static size_t fit(size_t *width, const size_t *mins, size_t ncol,
                  size_t screen) {
  size_t want[COLS_MAX];
  for (size_t n = ncol; n > 1; n--) {
    memcpy(want, width, n * sizeof(*width));
    if (narrow(want, mins, n, screen)) {
      memcpy(width, want, n * sizeof(*width));
      return n;
    }
  }
  narrow(width, mins, ncol ? 1 : 0, screen);
  return ncol ? 1 : 0;
}

/* Cell c of row token r ("" when the row is short), tamed and cut. */
static void cell(sp *p, size_t r, size_t c, char *out, size_t cap) {
  out[0] = '\0';
  if (json_type_of(p->d, r) != JSON_ARRAY || c >= p->d->toks[r].size)
    return;
  size_t k = r + 1;
  for (size_t i = 0; i < c; i++)
    k = next_of(p->d, k);
  val(p, (long)k, out, cap);
  cut(out, CELL_CHARS);
}

static void row_line(sp *p, const size_t *width, size_t ncol, size_t r,
                     int header, size_t columns) {
  char line[LINE_CAP];
  ph_bw w;
  ph_bw_init(&w, line, sizeof(line), PH_BW_TEXT);
  ph_bw_puts(&w, "    ");
  size_t k = columns + 1;
  for (size_t c = 0; c < ncol; c++) {
    char v[CELL_MAX];
    if (header) {
      val(p, (long)k, v, sizeof(v));
      cut(v, CELL_CHARS);
      for (char *q = v; *q; q++)
        if (*q >= 'a' && *q <= 'z')
          *q = (char)(*q - 32);
      k = next_of(p->d, k);
    } else {
      cell(p, r, c, v, sizeof(v));
      cut(v, width[c]);
    }
    ph_bw_puts(&w, v);
    if (c + 1 < ncol)
      for (size_t pad = chars(v); pad < width[c] + 2; pad++)
        ph_bw_putc(&w, ' ');
  }
  put_line(p, line);
}

static void table(sp *p, const char *where, size_t t) {
  const json_doc *d = p->d;
  char name[CELL_MAX];
  member(p, t, "name", name, sizeof(name));
  long cols = json_get(d, t, "columns"), rows = json_get(d, t, "rows");
  long off = json_get(d, t, "offset"), mv = json_get(d, t, "more");
  int64_t offset = 0;
  int more = 0;
  if (off < 0 || json_int(d, (size_t)off, &offset) < 0 || offset < 0)
    offset = 0;
  if (mv >= 0 && json_bool(d, (size_t)mv, &more) < 0)
    more = 0;
  uint32_t nrow = rows >= 0 && json_type_of(d, (size_t)rows) == JSON_ARRAY
                      ? d->toks[rows].size
                      : 0;
  char line[LINE_CAP];
  if (nrow == 0 && !more) {
    snprintf(line, sizeof(line), "  %s: no rows", name);
    put_line(p, line);
    return;
  }
  snprintf(line, sizeof(line), "  %s: %" PRId64 "%s row%s", name,
           offset + nrow, more ? "+" : "", offset + nrow == 1 && !more ? "" : "s");
  put_line(p, line);
  if (cols < 0 || json_type_of(d, (size_t)cols) != JSON_ARRAY)
    return;
  size_t ncol = d->toks[cols].size < COLS_MAX ? d->toks[cols].size : COLS_MAX;
  uint32_t shown = nrow < p->rows_max ? nrow : p->rows_max;
  size_t width[COLS_MAX] = {0}, mins[COLS_MAX] = {0};
  size_t k = (size_t)cols + 1;
  for (size_t c = 0; c < ncol; c++, k = next_of(d, k)) {
    char v[CELL_MAX];
    val(p, (long)k, v, sizeof(v));
    cut(v, CELL_CHARS);
    width[c] = mins[c] = chars(v);
  }
  size_t r = (size_t)rows + 1;
  for (uint32_t i = 0; i < shown; i++, r = next_of(d, r))
    for (size_t c = 0; c < ncol; c++) {
      char v[CELL_MAX];
      cell(p, r, c, v, sizeof(v));
      if (chars(v) > width[c])
        width[c] = chars(v);
    }
  for (size_t c = 0; c < ncol; c++) {
    size_t keep = width[c] < CELL_KEEP ? width[c] : CELL_KEEP;
    if (keep > mins[c])
      mins[c] = keep;
  }
  size_t fits = fit(width, mins, ncol, p->width);
  row_line(p, width, fits, 0, 1, (size_t)cols);
  r = (size_t)rows + 1;
  for (uint32_t i = 0; i < shown; i++, r = next_of(d, r))
    row_line(p, width, fits, r, 0, (size_t)cols);
  if (fits < ncol) {
    snprintf(line, sizeof(line), "    (+%zu column%s: proxyhostctl status "
             "%s/%s --json)", ncol - fits, ncol - fits == 1 ? "" : "s",
             where, name);
    put_line(p, line);
  }
  if (shown < nrow)
    snprintf(line, sizeof(line), "    ... %" PRIu32 " more: proxyhostctl "
             "status %s/%s", nrow - shown, where, name);
  else if (more)
    snprintf(line, sizeof(line), "    ... more: proxyhostctl status %s/%s "
             "--offset %" PRId64, where, name, offset + nrow);
  else
    return;
  put_line(p, line);
}

/* ---- panels ---------------------------------------------------------- */

static void fields(sp *p, size_t f, const char *const *skip) {
  const json_doc *d = p->d;
  if (json_type_of(d, f) != JSON_OBJECT || d->toks[f].size == 0)
    return;
  wrap x;
  wrap_init(&x, p, "  ", "  ", 2);
  size_t k = f + 1;
  for (uint32_t m = 0; m < d->toks[f].size; m++, k = next_of(d, k + 1)) {
    char name[CELL_MAX], v[CELL_MAX], item[2 * CELL_MAX + 2];
    val(p, (long)k, name, sizeof(name));
    int skipped = 0;
    for (size_t s = 0; skip && skip[s]; s++)
      skipped |= strcmp(skip[s], name) == 0;
    if (skipped)
      continue;
    val(p, (long)(k + 1), v, sizeof(v));
    snprintf(item, sizeof(item), "%s %s", name, v);
    wrap_add(&x, item);
  }
  wrap_end(&x);
}

static void tables(sp *p, const char *where, size_t panel, const char *skip) {
  const json_doc *d = p->d;
  long ts = json_get(d, panel, "tables");
  if (ts < 0 || json_type_of(d, (size_t)ts) != JSON_ARRAY)
    return;
  size_t t = (size_t)ts + 1;
  for (uint32_t i = 0; i < d->toks[ts].size; i++, t = next_of(d, t)) {
    if (json_type_of(d, t) != JSON_OBJECT)
      continue;
    long n = json_get(d, t, "name");
    if (skip && n >= 0 && json_str_eq(d, (size_t)n, skip))
      continue;
    table(p, where, t);
  }
}

static void age(int64_t s, char *out, size_t cap) {
  if (s < 60)
    snprintf(out, cap, "%" PRId64 "s", s);
  else if (s < 3600)
    snprintf(out, cap, "%" PRId64 "m%02" PRId64 "s", s / 60, s % 60);
  else if (s < 86400)
    snprintf(out, cap, "%" PRId64 "h%02" PRId64 "m", s / 3600, s / 60 % 60);
  else
    snprintf(out, cap, "%" PRId64 "d%02" PRId64 "h", s / 86400, s / 3600 % 24);
}

static void plain(int64_t n, char *out, size_t cap) {
  snprintf(out, cap, "%" PRId64, n);
}

static void bytes(int64_t b, char *out, size_t cap) {
  static const char *const unit[] = {"KiB", "MiB", "GiB", "TiB"};
  if (b < 1024) {
    snprintf(out, cap, "%" PRId64 " B", b);
    return;
  }
  double x = (double)b / 1024;
  size_t u = 0;
  for (; x >= 1024 && u + 1 < 4; u++)
    x /= 1024;
  snprintf(out, cap, "%.1f %s", x, unit[u]);
}

/* The number in field name of fields f, formatted by fmt; "-" else. */
static void num_field(sp *p, size_t f, const char *name,
                      void (*fmt)(int64_t, char *, size_t), char *out,
                      size_t cap) {
  long v = json_type_of(p->d, f) == JSON_OBJECT ? json_get(p->d, f, name) : -1;
  int64_t x;
  if (v >= 0 && json_int(p->d, (size_t)v, &x) == 0 && x >= 0)
    fmt(x, out, cap);
  else
    val(p, v, out, cap);
}

/* "modules (N): instance version, instance=module version, ..." */
static void modules(sp *p, size_t panel) {
  const json_doc *d = p->d;
  long ts = json_get(d, panel, "tables");
  size_t t = (size_t)ts + 1;
  for (uint32_t i = 0;
       ts >= 0 && json_type_of(d, (size_t)ts) == JSON_ARRAY &&
       i < d->toks[ts].size;
       i++, t = next_of(d, t)) {
    long n = json_get(d, t, "name"), rows = json_get(d, t, "rows");
    if (n < 0 || !json_str_eq(d, (size_t)n, "modules") || rows < 0 ||
        json_type_of(d, (size_t)rows) != JSON_ARRAY)
      continue;
    long mv = json_get(d, t, "more");
    int more = 0;
    if (mv < 0 || json_bool(d, (size_t)mv, &more) < 0)
      more = 0;
    char head[64];
    snprintf(head, sizeof(head), "modules (%" PRIu32 "%s): ",
             d->toks[rows].size, more ? "+" : "");
    wrap x;
    wrap_init(&x, p, head, " ", 3);
    size_t r = (size_t)rows + 1;
    for (uint32_t k = 0; k < d->toks[rows].size; k++, r = next_of(d, r)) {
      char inst[CELL_MAX], mod[CELL_MAX], ver[CELL_MAX],
          item[3 * CELL_MAX + 4];
      cell(p, r, 0, inst, sizeof(inst));
      cell(p, r, 1, mod, sizeof(mod));
      cell(p, r, 2, ver, sizeof(ver));
      if (strcmp(inst, mod) == 0 || !mod[0])
        snprintf(item, sizeof(item), "%s %s%s", inst, ver,
                 k + 1 < d->toks[rows].size ? "," : "");
      else
        snprintf(item, sizeof(item), "%s=%s %s%s", inst, mod, ver,
                 k + 1 < d->toks[rows].size ? "," : "");
      wrap_add(&x, item);
    }
    wrap_end(&x);
    return;
  }
}

/* The host's own panel: who runs, since when, ready or why not, the last
 * reload, its descriptors and memory, and its modules. */
static void process(sp *p, size_t panel) {
  char line[LINE_CAP], ver[CELL_MAX], abi[CELL_MAX], up[64], ready[CELL_MAX],
      why[CELL_MAX], a[CELL_MAX], b[CELL_MAX];
  long fl = json_get(p->d, panel, "fields");
  /* No fields: no token there, and every member() below says "-". */
  size_t f = fl < 0 ? SIZE_MAX : (size_t)fl;
  member(p, f, "version", ver, sizeof(ver));
  member(p, f, "abi", abi, sizeof(abi));
  num_field(p, f, "uptime_s", age, up, sizeof(up));
  member(p, f, "ready", ready, sizeof(ready));
  snprintf(line, sizeof(line), "proxyhost %s (ABI %s), up %s, ready: %s",
           ver, abi, up, ready);
  put_line(p, line);
  member(p, f, "ready_reasons", why, sizeof(why));
  if (strcmp(ready, "yes") != 0 && strcmp(why, "-") != 0) {
    snprintf(line, sizeof(line), "  not ready: %s", why);
    put_line(p, line);
  }
  member(p, f, "config", a, sizeof(a));
  snprintf(line, sizeof(line), "config: %s", a);
  put_line(p, line);
  member(p, f, "last_reload", a, sizeof(a));
  member(p, f, "last_reload_result", b, sizeof(b));
  if (strcmp(a, "-") == 0)
    snprintf(line, sizeof(line), "last reload: none");
  else
    snprintf(line, sizeof(line), "last reload: %s %s", a, b);
  put_line(p, line);
  num_field(p, f, "open_fds", plain, a, sizeof(a));
  num_field(p, f, "rss_bytes", bytes, b, sizeof(b));
  snprintf(line, sizeof(line), "open fds: %s, rss: %s", a, b);
  put_line(p, line);
  static const char *const known[] = {
      "version",     "abi",         "config",        "uptime_s",
      "ready",       "ready_reasons", "last_reload", "last_reload_result",
      "open_fds",    "rss_bytes",   NULL};
  if (fl >= 0)
    fields(p, (size_t)fl, known);
  modules(p, panel);
  tables(p, "proxyhost/process", panel, "modules");
}

static void panel_of(sp *p, const char *inst, size_t panel) {
  char name[CELL_MAX], title[CELL_MAX], where[2 * CELL_MAX + 2],
      line[LINE_CAP];
  member(p, panel, "name", name, sizeof(name));
  member(p, panel, "title", title, sizeof(title));
  snprintf(where, sizeof(where), "%s/%s", inst, name);
  snprintf(line, sizeof(line), "%s: %s", where, title);
  put_line(p, line);
  long f = json_get(p->d, panel, "fields");
  if (f >= 0)
    fields(p, (size_t)f, NULL);
  tables(p, where, panel, NULL);
}

static int is_process(sp *p, const char *inst, size_t panel) {
  long n = json_get(p->d, panel, "name");
  return strcmp(inst, "proxyhost") == 0 && n >= 0 &&
         json_str_eq(p->d, (size_t)n, "process");
}

int ctl_print_status(FILE *out, const char *body, size_t len,
                     const ctl_status_view *v) {
  ctl_doc x;
  if (ctl_json_parse(&x, body, len) < 0)
    return -1;
  long insts = json_type_of(&x.d, 0) == JSON_OBJECT
                   ? json_get(&x.d, 0, "instances")
                   : -1;
  if (insts < 0 || json_type_of(&x.d, (size_t)insts) != JSON_ARRAY) {
    free(x.toks);
    return -1;
  }
  sp p = {out, &x.d, v->width, v->rows_max ? v->rows_max : 1};
  if (p.width < CTL_STATUS_WIDTH_MIN)
    p.width = CTL_STATUS_WIDTH_MIN;
  if (p.width > CTL_STATUS_WIDTH_MAX)
    p.width = CTL_STATUS_WIDTH_MAX;
  int printed = 0;
  /* Pass 0: the host's process panel; pass 1: every other panel. */
  for (int pass = 0; pass < 2; pass++) {
    size_t i = (size_t)insts + 1;
    for (uint32_t n = 0; n < x.d.toks[insts].size; n++, i = next_of(&x.d, i)) {
      if (json_type_of(&x.d, i) != JSON_OBJECT)
        continue;
      char inst[CELL_MAX];
      member(&p, i, "instance", inst, sizeof(inst));
      long ps = json_get(&x.d, i, "panels");
      if (ps < 0 || json_type_of(&x.d, (size_t)ps) != JSON_ARRAY)
        continue;
      size_t k = (size_t)ps + 1;
      for (uint32_t m = 0; m < x.d.toks[ps].size; m++, k = next_of(&x.d, k)) {
        if (json_type_of(&x.d, k) != JSON_OBJECT ||
            is_process(&p, inst, k) != (pass == 0))
          continue;
        if (printed++)
          fputc('\n', out);
        if (pass == 0)
          process(&p, k);
        else
          panel_of(&p, inst, k);
      }
    }
  }
  if (!printed)
    put_line(&p, "no panels");
  free(x.toks);
  return 0;
}

unsigned ctl_status_width(FILE *out) {
  struct winsize ws;
  int fd = fileno(out);
  if (fd >= 0 && isatty(fd) && ioctl(fd, TIOCGWINSZ, &ws) == 0 &&
      ws.ws_col > 0)
    return ws.ws_col;
  return 100;
}
