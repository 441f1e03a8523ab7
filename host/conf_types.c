/* SPDX-License-Identifier: BSD-2-Clause */
/* Value types, bounds and validation: the parsers of INT, DURATION, SIZE,
 * BOOL, LIST and ENUM text, the bound checks and their messages, and the
 * checks of a key table itself. Pure functions of their arguments. */
#if !defined(_GNU_SOURCE) && !defined(_XOPEN_SOURCE)
#define _XOPEN_SOURCE 700 /* strdup */
#endif

#include "conf_int.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/section_name.h"

/* ---- text -------------------------------------------------------------- */

/* NAME or NAME.INSTANCE (a module instance, ABI 1.2), each part
 * [a-z0-9_]+ (lib/section_name.h, proxyhostctl status's rule too). */
int conf_valid_section_name(const char *s, size_t n) {
  return ph_section_name_ok(s, n, 1);
}

char *conf_dup_n(const char *s, size_t n) {
  char *p = malloc(n + 1);
  if (p) {
    memcpy(p, s, n);
    p[n] = '\0';
  }
  return p;
}

/* Trims whitespace on both sides into a new string. */
char *conf_dup_trim(const char *s) {
  while (isspace((unsigned char)*s))
    s++;
  size_t n = strlen(s);
  while (n > 0 && isspace((unsigned char)s[n - 1]))
    n--;
  return conf_dup_n(s, n);
}

/* ---- key tables ---------------------------------------------------------- */

static int valid_key_name(const char *s) {
  if (!*s)
    return 0;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && !strchr("_.-", *s))
      return 0;
  return 1;
}

size_t conf_check_keys(const char *section, const ph_conf_key *keys,
                       ph_buf *e) {
  size_t n = 0;
  for (; keys[n].name; n++) {
    const ph_conf_key *k = &keys[n];
    if (!valid_key_name(k->name))
      buf_printf(e, "%s.%s: invalid key name\n", section, k->name);
    for (size_t j = 0; j < n; j++)
      if (strcmp(keys[j].name, k->name) == 0)
        buf_printf(e, "%s.%s: key declared twice\n", section, k->name);
    if (k->type < PH_CONF_STRING || k->type > PH_CONF_ENUM)
      buf_printf(e, "%s.%s: unknown type %d\n", section, k->name, (int)k->type);
    if (k->type == PH_CONF_ENUM && (!k->choices || !*k->choices))
      buf_printf(e, "%s.%s: enum without choices\n", section, k->name);
    if (k->max != 0 && k->min > k->max)
      buf_printf(e, "%s.%s: min %lld is above max %lld\n", section, k->name,
                 (long long)k->min, (long long)k->max);
  }
  return n;
}

/* ---- value parsers ------------------------------------------------------ */

/* Leading decimal digits of s, at most lim. Returns -1 without digits, -2
 * past lim; *end gets the first byte after the digits either way, so that
 * callers can tell "too big" from "not a number". */
static int parse_digits(const char *s, const char **end, uint64_t lim,
                        uint64_t *out) {
  uint64_t v = 0;
  int over = 0;
  const char *p = s;
  for (; *p >= '0' && *p <= '9'; p++) {
    unsigned d = (unsigned)(*p - '0');
    if (over || v > (lim - d) / 10)
      over = 1;
    else
      v = v * 10 + d;
  }
  *end = p;
  if (p == s)
    return -1;
  *out = v;
  return over ? -2 : 0;
}

/* Decimal with an optional sign. -1 not a number, -2 out of range. */
static int parse_int(const char *s, int64_t *out) {
  int neg = *s == '-';
  if (*s == '-' || *s == '+')
    s++;
  uint64_t lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, v;
  const char *end;
  int r = parse_digits(s, &end, lim, &v);
  if (r == -1 || *end)
    return -1;
  if (r < 0)
    return r;
  if (!neg)
    *out = (int64_t)v;
  else
    *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
  return 0;
}

typedef struct unit {
  const char *name;
  int64_t mult;
} unit;

static const unit duration_units[] = {
    {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {NULL, 0}};
static const unit size_units[] = {
    {"", 1},          {"B", 1},         {"K", 1 << 10},
    {"KiB", 1 << 10}, {"M", 1 << 20},   {"MiB", 1 << 20},
    {"G", 1 << 30},   {"GiB", 1 << 30}, {NULL, 0}};

/* Digits then one of units (exact spelling). -1 malformed, -2 overflow. */
static int parse_unit(const char *s, const unit *units, int64_t *out) {
  const char *end;
  uint64_t v;
  int r = parse_digits(s, &end, (uint64_t)INT64_MAX, &v);
  if (r == -1)
    return -1;
  for (const unit *u = units; u->name; u++)
    if (strcmp(end, u->name) == 0) {
      if (r < 0 || v > (uint64_t)(INT64_MAX / u->mult))
        return -2;
      *out = (int64_t)v * u->mult;
      return 0;
    }
  return -1;
}

static int parse_duration(const char *s, int64_t *out) {
  if (strspn(s, "0") == strlen(s) && *s) {
    *out = 0; /* a bare zero needs no unit */
    return 0;
  }
  return parse_unit(s, duration_units, out);
}

int conf_parse_duration_ms(const char *s, int64_t *out) {
  int64_t v;
  if (!s || parse_duration(s, &v) < 0)
    return -1;
  *out = v;
  return 0;
}

int conf_parse_size(const char *s, int64_t *out) {
  int64_t v;
  if (!s || parse_unit(s, size_units, &v) < 0)
    return -1;
  *out = v;
  return 0;
}

int conf_parse_bool(const char *s, int64_t *out) {
  static const char *const yes[] = {"true", "yes", "on", "1", NULL};
  static const char *const no[] = {"false", "no", "off", "0", NULL};
  if (!s)
    return -1;
  for (int i = 0; yes[i]; i++) {
    if (strcasecmp(s, yes[i]) == 0) {
      *out = 1;
      return 0;
    }
    if (strcasecmp(s, no[i]) == 0) {
      *out = 0;
      return 0;
    }
  }
  return -1;
}

/* Comma-separated items, trimmed. Writes the trimmed items joined by ','
 * to joined (strlen(s) + 1 bytes) when non-NULL. Returns the item count,
 * or -1 for an empty item. Blank text is the empty list. */
long conf_list_scan(const char *s, char *joined) {
  long n = 0;
  char *w = joined;
  while (isspace((unsigned char)*s))
    s++;
  for (const char *p = s; *s;) {
    const char *end = strchr(p, ',');
    if (!end)
      end = p + strlen(p);
    const char *a = p, *b = end;
    while (a < b && isspace((unsigned char)*a))
      a++;
    while (b > a && isspace((unsigned char)b[-1]))
      b--;
    if (a == b)
      return -1;
    if (w) {
      if (n)
        *w++ = ',';
      memcpy(w, a, (size_t)(b - a));
      w += b - a;
    }
    n++;
    if (!*end)
      break;
    p = end + 1;
  }
  if (w)
    *w = '\0';
  return n;
}

static int enum_has(const char *choices, const char *s) {
  size_t n = strlen(s);
  for (const char *p = choices;;) {
    const char *bar = strchr(p, '|');
    size_t len = bar ? (size_t)(bar - p) : strlen(p);
    if (len == n && memcmp(p, s, n) == 0)
      return 1;
    if (!bar)
      return 0;
    p = bar + 1;
  }
}

/* Bound text for messages, in the key's own unit. */
static void fmt_bound(const ph_conf_key *k, int64_t v, char *out, size_t n) {
  if (k->type == PH_CONF_DURATION && v != 0) {
    for (int i = 3; i >= 0; i--)
      if (v % duration_units[i].mult == 0) {
        snprintf(out, n, "%lld%s", (long long)(v / duration_units[i].mult),
                 duration_units[i].name);
        return;
      }
  }
  if (k->type == PH_CONF_SIZE && v != 0) {
    static const unit u[] = {
        {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}};
    for (int i = 0; i < 4; i++)
      if (v % u[i].mult == 0) {
        snprintf(out, n, "%lld%s", (long long)(v / u[i].mult), u[i].name);
        return;
      }
  }
  snprintf(out, n, "%lld", (long long)v);
}

/* Bounds: max 0 is unbounded above, and min counts only when min or max is
 * non-zero, so {0, 0} means unbounded in both directions (negative INTs
 * allowed) while {1, 0} still means "at least 1". */
static int check_bounds(const ph_conf_key *k, const char *text, int64_t v,
                        char *why, size_t n) {
  const char *shown = (k->flags & PH_CONF_SENSITIVE) ? "value" : text;
  char b[64];
  if ((k->min || k->max) && v < k->min) {
    fmt_bound(k, k->min, b, sizeof(b));
    snprintf(why, n, "%.*s is below the minimum %s", ECHO_MAX, shown, b);
    return -1;
  }
  if (k->max && v > k->max) {
    fmt_bound(k, k->max, b, sizeof(b));
    snprintf(why, n, "%.*s is above the maximum %s", ECHO_MAX, shown, b);
    return -1;
  }
  return 0;
}

/* Parses text for key k into v. On error writes the reason to why (never
 * quoting a sensitive value) and returns -1. */
int conf_value_parse(const ph_conf_key *k, const char *text, conf_value *v,
                     char *why, size_t n) {
  int sens = k->flags & PH_CONF_SENSITIVE;
  int64_t num = 0;
  int r = 0;
  for (const char *p = text; *p; p++)
    if (((unsigned char)*p < 0x20 && *p != '\t') || *p == 0x7f) {
      snprintf(why, n, "value contains a control character");
      return -1;
    }
  switch (k->type) {
  case PH_CONF_STRING: {
    size_t len = strlen(text);
    if (k->min > 0 && len < (uint64_t)k->min) {
      snprintf(why, n, "value is too short (%zu bytes, min %lld)", len,
               (long long)k->min);
      return -1;
    }
    if (k->max > 0 && len > (uint64_t)k->max) {
      snprintf(why, n, "value is too long (%zu bytes, max %lld)", len,
               (long long)k->max);
      return -1;
    }
    break;
  }
  case PH_CONF_INT:
    r = parse_int(text, &num);
    if (r < 0) {
      snprintf(why, n, r == -2 ? "integer out of range" : "not an integer");
      return -1;
    }
    if (check_bounds(k, text, num, why, n) < 0)
      return -1;
    break;
  case PH_CONF_BOOL:
    if (conf_parse_bool(text, &num) < 0) {
      snprintf(why, n, "not a boolean (use true/false, yes/no, on/off, 1/0)");
      return -1;
    }
    break;
  case PH_CONF_DURATION:
    r = parse_duration(text, &num);
    if (r < 0) {
      snprintf(why, n,
               r == -2 ? "duration out of range"
                       : "not a duration (use 250ms, 5s, 2m, 1h)");
      return -1;
    }
    if (check_bounds(k, text, num, why, n) < 0)
      return -1;
    break;
  case PH_CONF_SIZE:
    r = parse_unit(text, size_units, &num);
    if (r < 0) {
      snprintf(why, n,
               r == -2 ? "size out of range"
                       : "not a size (use 512, 64KiB, 16MiB, 1GiB)");
      return -1;
    }
    if (check_bounds(k, text, num, why, n) < 0)
      return -1;
    break;
  case PH_CONF_LIST: {
    long cnt = conf_list_scan(text, NULL);
    if (cnt < 0) {
      snprintf(why, n, "empty list item");
      return -1;
    }
    if (k->min > 0 && cnt < k->min) {
      snprintf(why, n, "too few items (%ld, min %lld)", cnt, (long long)k->min);
      return -1;
    }
    if (k->max > 0 && cnt > k->max) {
      snprintf(why, n, "too many items (%ld, max %lld)", cnt,
               (long long)k->max);
      return -1;
    }
    if (!v)
      return 0;
    v->text = malloc(strlen(text) + 1);
    v->items = calloc((size_t)cnt + 1, sizeof(char *));
    if (!v->text || !v->items)
      goto oom;
    conf_list_scan(text, v->text);
    v->item_buf = strdup(v->text);
    if (!v->item_buf)
      goto oom;
    /* Items contain no ',', so the joined copy splits back into them. */
    for (char *p = v->item_buf; cnt > 0;) {
      v->items[v->n_items++] = p;
      p = strchr(p, ',');
      if (!p)
        break;
      *p++ = '\0';
    }
    return 0;
  }
  case PH_CONF_ENUM:
    if (!k->choices || !enum_has(k->choices, text)) {
      snprintf(why, n, "%.*s is not one of %s", ECHO_MAX, sens ? "value" : text,
               k->choices ? k->choices : "");
      return -1;
    }
    break;
  }
  if (!v)
    return 0;
  v->num = num;
  v->text = strdup(text);
  if (!v->text)
    goto oom;
  return 0;
oom:
  snprintf(why, n, "out of memory");
  return -1;
}

/* What a NULL default means for each type: valid INI text for "empty". */
const char *conf_null_default(ph_conf_type t) {
  switch (t) {
  case PH_CONF_INT:
  case PH_CONF_DURATION:
  case PH_CONF_SIZE:
    return "0";
  case PH_CONF_BOOL:
    return "false";
  default:
    return "";
  }
}
