/* SPDX-License-Identifier: BSD-2-Clause */
/* The scheduler's pure parts (cs_sched_plan.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cs_sched_plan.h"

int64_t cs_sched_jitter(int64_t interval_ms, uint32_t spread_pct,
                        uint32_t rnd) {
  if (spread_pct > 50)
    spread_pct = 50;
  int64_t span = interval_ms * (int64_t)spread_pct / 100;
  int64_t v = interval_ms;
  if (span > 0)
    v += (int64_t)(rnd % (uint64_t)(2 * span + 1)) - span;
  return v < 1 ? 1 : v;
}

int64_t cs_sched_next_due(int64_t due_ms, int64_t now_ms, int64_t interval_ms,
                          uint32_t spread_pct, uint32_t rnd) {
  int64_t v = due_ms + cs_sched_jitter(interval_ms, spread_pct, rnd);
  return v < now_ms ? now_ms : v;
}

static int due_cmp(const void *pa, const void *pb) {
  const cs_sched_due *a = pa, *b = pb;
  if (a->due_ms != b->due_ms)
    return a->due_ms < b->due_ms ? -1 : 1;
  return a->idx < b->idx ? -1 : a->idx > b->idx;
}

void cs_sched_order(cs_sched_due *v, size_t n) {
  if (n > 1)
    qsort(v, n, sizeof(*v), due_cmp);
}

/* a's load below b's: outstanding/max compared as cross products. */
static int lighter(const cs_sched_load *a, const cs_sched_load *b) {
  uint64_t x = (uint64_t)a->outstanding * b->max,
           y = (uint64_t)b->outstanding * a->max;
  if (x != y)
    return x < y;
  return a->outstanding < b->outstanding;
}

int cs_sched_pick(const cs_sched_load *l, size_t n, uint32_t tier_bit,
                  uint64_t avoid) {
  int best = -1, avoided = -1;
  for (size_t i = 0; i < n; i++) {
    if (!l[i].usable || !(l[i].tiers & tier_bit) ||
        l[i].outstanding >= l[i].max)
      continue;
    if (avoid && l[i].serial == avoid) {
      avoided = (int)i;
      continue;
    }
    if (best < 0 || lighter(&l[i], &l[best]))
      best = (int)i;
  }
  return best >= 0 ? best : avoided;
}

static int port_ok(const char *s) {
  if (!*s || strlen(s) > 5)
    return 0;
  long v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9')
      return 0;
    v = v * 10 + (*s - '0');
  }
  return v >= 1 && v <= 65535;
}

static int group_ok(const char *g, size_t len) {
  if (len < 1 || len > PH_POOL_GROUP_MAX)
    return 0;
  for (size_t i = 0; i < len; i++)
    if (!((g[i] >= 'a' && g[i] <= 'z') || (g[i] >= 'A' && g[i] <= 'Z') ||
          (g[i] >= '0' && g[i] <= '9') || g[i] == '.' || g[i] == '_' ||
          g[i] == '-'))
      return 0;
  return 1;
}

/* "host:port" (host a name, IPv4 or [IPv6]) into p. */
static int target_ok(cs_probe *p, const char *t, size_t len) {
  if (len < 3 || len > CS_PROBE_TARGET_MAX)
    return 0;
  memcpy(p->target, t, len);
  p->target[len] = 0;
  char *colon = strrchr(p->target, ':');
  if (!colon || colon == p->target || !port_ok(colon + 1))
    return 0;
  p->host_len = (size_t)(colon - p->target);
  for (size_t i = 0; i < p->host_len; i++) {
    char c = p->target[i];
    if (c <= 0x20 || c >= 0x7f || c == '/' || c == '@' || c == '%' ||
        c == '?' || c == '#')
      return 0;
    if (c == ':' && p->target[0] != '[')
      return 0; /* an IPv6 host needs brackets */
  }
  return p->host_len <= PH_POOL_HOST_MAX;
}

int cs_probe_parse(const char *spec, cs_probe *out, size_t *n,
                   const char **why) {
  *n = 0;
  const char *s = spec ? spec : "";
  while (*s) {
    const char *end = strchr(s, ',');
    size_t len = end ? (size_t)(end - s) : strlen(s);
    const char *eq = memchr(s, '=', len);
    if (*n >= CS_PROBES_MAX) {
      *why = "more than 32 probes";
      return -1;
    }
    cs_probe *p = &out[*n];
    memset(p, 0, sizeof(*p));
    if (!eq || !group_ok(s, (size_t)(eq - s))) {
      *why = "each entry is group=host:port, group of [A-Za-z0-9._-]";
      return -1;
    }
    memcpy(p->group, s, (size_t)(eq - s));
    if (!target_ok(p, eq + 1, len - (size_t)(eq - s) - 1)) {
      *why = "a probe's target is not host:port (port 1-65535)";
      return -1;
    }
    if (cs_probe_of(out, *n, p->group)) {
      *why = "a group has two probes";
      return -1;
    }
    (*n)++;
    s += len;
    if (*s == ',' && !*++s) {
      *why = "a trailing comma";
      return -1;
    }
  }
  return 0;
}

cs_probe *cs_probe_of(cs_probe *p, size_t n, const char *group) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(p[i].group, group) == 0)
      return &p[i];
  return NULL;
}

static int same_host(const cs_probe *a, const cs_probe *b) {
  return a->host_len == b->host_len &&
         memcmp(a->target, b->target, a->host_len) == 0;
}

int cs_probe_take(cs_probe *p, size_t n, cs_probe *probe, int64_t now_ms,
                  int64_t spacing_ms) {
  if (now_ms < probe->next_ms)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (same_host(&p[i], probe))
      p[i].next_ms = now_ms + spacing_ms;
  return 1;
}

/* FNV-1a over s (and its NUL) from h, the splitmix64 finaliser after the
 * key: a stable 64-bit weight, the same on every host. */
static uint64_t fnv(uint64_t h, const char *s) {
  for (;; s++) {
    h ^= (unsigned char)*s;
    h *= 0x100000001b3ULL;
    if (!*s)
      return h;
  }
}

static uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

int cs_hrw_pick(const char *const *members, size_t n, const char *key) {
  int best = -1;
  uint64_t top = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t w = mix(fnv(fnv(0xcbf29ce484222325ULL, members[i]), key));
    if (best < 0 || w > top) {
      best = (int)i;
      top = w;
    }
  }
  return best;
}

int cs_task_key(const char *task_id, int64_t *key) {
  uint64_t v = 0;
  size_t i = 0;
  for (; i < CS_TASK_ID_HEX && task_id[i]; i++) {
    char ch = task_id[i];
    int d = ch >= '0' && ch <= '9'   ? ch - '0'
            : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                                     : -1;
    if (d < 0)
      return 0;
    v = v << 4 | (uint64_t)d;
  }
  if (i != CS_TASK_ID_HEX || task_id[i])
    return 0;
  *key = (int64_t)v;
  return 1;
}
