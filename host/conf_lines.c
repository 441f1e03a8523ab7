/* SPDX-License-Identifier: BSD-2-Clause */
/* The line reader in front of inih (conf_int.h, "loading").
 *
 * inih does the INI splitting; this reader hands it one line at a time.
 * It counts lines (Debian's inih passes no line numbers), rejects lines
 * inih would silently truncate (longer than CONF_MAX_LINE, or than the
 * buffer of a libinih without runtime options), naming the key, and
 * tracks the state inih keeps to itself
 * (current section, continuation lines), so that the handler in
 * conf_read.c knows what inih will do with each line. */
#include "conf_int.h"

#include <ctype.h>
#include <string.h>

#include <ini.h>

/* Debian's libinih (r55, built with INI_RUNTIME_OPTIONS) reads its
 * options from process-wide variables, not from the macros its header
 * shows: anything in the process (a module linking inih itself) may change
 * them. This reader mirrors one set, inih's defaults but for the line
 * length: pin it before every parse. With ini_use_stack, inih's line
 * buffer is a stack array of ini_max_line bytes (8 KiB here, on the loop
 * thread's stack, once per nested include), so lines of CONF_MAX_LINE
 * bytes reach this reader whole (issue 24 item 2: the macro default, 200,
 * refused a module_path under a deep build directory). It matters: with
 * ini_allow_realloc on (and the stack buffer off), inih asks the reader
 * for the rest of any line that filled its buffer without a '\n', which
 * this reader never returns, so it would glue the next line onto a full
 * one; a smaller ini_max_line would reject lines the documentation
 * allows; ini_stop_on_first_error would drop every error after the first.
 * Only the loop thread parses. */
void conf_inih_pin(void) {
#if defined(HAVE_DECL_INI_MAX_LINE) && HAVE_DECL_INI_MAX_LINE
  static char start_prefixes[] = INI_START_COMMENT_PREFIXES;
  static char inline_prefixes[] = INI_INLINE_COMMENT_PREFIXES;
  ini_allow_multiline = INI_ALLOW_MULTILINE;
  ini_allow_bom = INI_ALLOW_BOM;
  ini_start_comment_prefixes = start_prefixes;
  ini_allow_inline_comments = INI_ALLOW_INLINE_COMMENTS;
  ini_inline_comment_prefixes = inline_prefixes;
  ini_use_stack = true;
  ini_max_line = CONF_MAX_LINE + 1; /* the NUL */
  ini_allow_realloc = false;
  ini_stop_on_first_error = false;
  ini_allow_no_value = false;
#endif
}

/* inih's own rule for where a ';' starts an inline comment (after
 * whitespace), and where the first of chars is. */
const char *conf_find_chars_or_comment(const char *s, const char *chars) {
  int was_space = 0;
  while (*s && (!chars || !strchr(chars, *s)) &&
         !(INI_ALLOW_INLINE_COMMENTS && was_space &&
           strchr(INI_INLINE_COMMENT_PREFIXES, *s))) {
    was_space = isspace((unsigned char)*s);
    s++;
  }
  return s;
}

static void enter_section(loader *ld, const char *name, size_t n) {
  ph_conf *c = ld->lc->c;
  ld->sect = SECT_BAD;
  if (!conf_valid_section_name(name, n)) {
    conf_ld_err(ld, "invalid section name (use [a-z0-9_]+ or "
                    "NAME.INSTANCE)");
    return;
  }
  int i = conf_get_section(c, name, n);
  if (i < 0) {
    conf_ld_err(ld, "too many sections (max %d)", CONF_MAX_SECTIONS);
    return;
  }
  if (!c->sects[i].hdr_file) {
    c->sects[i].hdr_file = ld->name;
    c->sects[i].hdr_line = ld->line;
  }
  ld->sect = i;
}

/* Follows inih's reading of one line so that the handler knows what inih
 * will do with it: whether it continues the previous value, and which
 * section it is in (inih truncates long section names). Also reports the
 * syntax errors inih would only count. */
static void classify(loader *ld, const char *line) {
  const char *p = line;
  if (ld->line == 1 && (unsigned char)p[0] == 0xEF &&
      (unsigned char)p[1] == 0xBB && (unsigned char)p[2] == 0xBF)
    p += 3; /* inih skips a UTF-8 BOM */
  while (isspace((unsigned char)*p))
    p++;
  if (!*p || strchr(INI_START_COMMENT_PREFIXES, *p))
    return;
  if (INI_ALLOW_MULTILINE && ld->prev && p > line) {
    ld->cont = 1;
    return;
  }
  if (*p == '[') {
    const char *end = conf_find_chars_or_comment(p + 1, "]");
    if (*end != ']') {
      conf_ld_err(ld, "syntax error: no ']' after the section name");
      ld->syntax++;
      return;
    }
    ld->prev = 0;
    ld->last = LAST_NONE;
    enter_section(ld, p + 1, (size_t)(end - p - 1));
    return;
  }
  const char *end = conf_find_chars_or_comment(p, "=:");
  if (*end != '=' && *end != ':') {
    conf_ld_err(ld, "syntax error: expected key = value");
    ld->syntax++;
    return;
  }
  while (end > p && isspace((unsigned char)end[-1]))
    end--;
  ld->prev = end > p;
}

static int src_getc(loader *ld) {
  if (ld->fp)
    return getc(ld->fp);
  if (!*ld->s)
    return EOF;
  return (unsigned char)*ld->s++;
}

/* Reports a line longer than max (line: its first max bytes), naming
 * the key it sets or continues when there is one, so that the reader
 * knows which value to shorten or move. */
static void too_long(loader *ld, const char *line, size_t max) {
  const ph_conf *c = ld->lc->c;
  const char *p = line;
  if (ld->line == 1 && (unsigned char)p[0] == 0xEF &&
      (unsigned char)p[1] == 0xBB && (unsigned char)p[2] == 0xBF)
    p += 3;
  while (isspace((unsigned char)*p))
    p++;
  if (INI_ALLOW_MULTILINE && ld->prev && p > line) {
    const conf_entry *e = ld->last >= 0 ? &c->ents[ld->last] : NULL;
    if (e)
      conf_ld_err(ld, "%s.%s: continuation line too long (max %zu bytes)",
                  c->sects[e->sect].name, e->key, max);
    else
      conf_ld_err(ld, "continuation line too long (max %zu bytes)", max);
    return;
  }
  const char *end = conf_find_chars_or_comment(p, "=:");
  size_t n = (size_t)(end - p);
  while (n > 0 && isspace((unsigned char)p[n - 1]))
    n--;
  if (ld->sect >= 0 && (*end == '=' || *end == ':') && n > 0 && *p != '[' &&
      !strchr(INI_START_COMMENT_PREFIXES, *p)) {
    conf_ld_err(ld, "%s.%.*s: line too long (max %zu bytes)",
                c->sects[ld->sect].name, (int)(n > ECHO_MAX ? ECHO_MAX : n), p,
                max);
    ld->last = LAST_NONE; /* its continuation lines extend nothing */
    return;
  }
  conf_ld_err(ld, "line too long (max %zu bytes)", max);
}

/* Stores b when it fits and counts it either way, so that an over-long
 * line is measured to its end. */
static void put_byte(char *out, size_t max, size_t *len, int *nul, int b) {
  if (*len < max)
    out[*len] = (char)b;
  (*len)++;
  *nul |= b == '\0';
}

/* inih's fgets-like reader. Reads a whole line whatever its length, hands
 * inih at most CONF_MAX_LINE bytes without the terminator, and replaces a
 * line that is too long (which inih would cut, then read the rest as a
 * new line) with an empty one after reporting it. */
char *conf_read_line(char *out, int num, void *stream) {
  loader *ld = stream;
  size_t max = CONF_MAX_LINE;
  if (num < 2)
    return NULL;
  if ((size_t)num - 1 < max)
    max = (size_t)num - 1;
  size_t len = 0;
  int ch, got = 0, cr = 0, nul = 0;
  for (;;) {
    ch = src_getc(ld);
    if (ch == EOF || ch == '\n')
      break;
    got = 1;
    /* A '\r' is part of the line only when more text follows it. */
    if (cr)
      put_byte(out, max, &len, &nul, '\r');
    cr = ch == '\r';
    if (!cr)
      put_byte(out, max, &len, &nul, ch);
  }
  if (ch == EOF && !got)
    return NULL;
  ld->line++;
  ld->cont = 0;
  if (len > max) {
    out[max] = '\0';
    too_long(ld, out, max);
    out[0] = '\0';
  } else if (nul) {
    conf_ld_err(ld, "line contains a NUL byte");
    out[0] = '\0';
  } else {
    out[len] = '\0';
    classify(ld, out);
  }
  return out;
}
