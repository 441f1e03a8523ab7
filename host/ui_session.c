/* SPDX-License-Identifier: BSD-2-Clause */
/* See ui_session.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* explicit_bzero */
#endif
#include "ui_session.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

static void slot_free(ui_session *s) { explicit_bzero(s, sizeof(*s)); }

void sessions_reset(ui_sessions *t, int max) {
  explicit_bzero(t, sizeof(*t));
  t->max = max < 1 ? 1 : max > UI_SESSIONS_MAX ? UI_SESSIONS_MAX : max;
}

static int live(const ui_sessions *t) {
  int n = 0;
  for (int i = 0; i < UI_SESSIONS_MAX; i++)
    n += t->s[i].expires > 0;
  return n;
}

static ui_session *oldest(ui_sessions *t) {
  ui_session *o = NULL;
  for (int i = 0; i < UI_SESSIONS_MAX; i++)
    if (t->s[i].expires > 0 && (!o || t->s[i].seq < o->seq))
      o = &t->s[i];
  return o;
}

void sessions_limit(ui_sessions *t, int max) {
  t->max = max < 1 ? 1 : max > UI_SESSIONS_MAX ? UI_SESSIONS_MAX : max;
  while (live(t) > t->max)
    slot_free(oldest(t));
}

static void expire(ui_sessions *t, double now) {
  for (int i = 0; i < UI_SESSIONS_MAX; i++)
    if (t->s[i].expires > 0 && t->s[i].expires <= now)
      slot_free(&t->s[i]);
}

static int random_bytes(unsigned char *b, size_t n) {
  size_t got = 0;
  for (int tries = 0; got < n && tries < 8; tries++) {
    ssize_t r = getrandom(b + got, n - got, 0);
    if (r < 0 && errno != EINTR)
      return -1;
    if (r > 0)
      got += (size_t)r;
  }
  return got == n ? 0 : -1;
}

int sessions_open(ui_sessions *t, double now, double ttl,
                  char id[UI_SESSION_HEX + 1], int *evicted) {
  static const char hex[] = "0123456789abcdef";
  unsigned char r[UI_SESSION_HEX / 2];
  *evicted = 0;
  if (random_bytes(r, sizeof(r)) < 0)
    return -1;
  expire(t, now);
  if (live(t) >= t->max) {
    slot_free(oldest(t));
    *evicted = 1;
  }
  ui_session *s = NULL;
  for (int i = 0; i < UI_SESSIONS_MAX && !s; i++)
    if (t->s[i].expires <= 0)
      s = &t->s[i];
  for (size_t i = 0; i < sizeof(r); i++) {
    s->id[2 * i] = hex[r[i] >> 4];
    s->id[2 * i + 1] = hex[r[i] & 15];
  }
  s->id[UI_SESSION_HEX] = '\0';
  explicit_bzero(r, sizeof(r));
  s->expires = now + ttl;
  s->seq = ++t->seq;
  memcpy(id, s->id, UI_SESSION_HEX + 1);
  return 0;
}

/* Constant time in the ids' content: every slot is compared whole. */
static ui_session *lookup(ui_sessions *t, const char *id) {
  ui_session *hit = NULL;
  for (int i = 0; i < UI_SESSIONS_MAX; i++) {
    unsigned diff = 0;
    for (int k = 0; k < UI_SESSION_HEX; k++)
      diff |= (unsigned)(t->s[i].id[k] ^ id[k]);
    if (diff == 0 && t->s[i].expires > 0)
      hit = &t->s[i];
  }
  return hit;
}

int sessions_valid(ui_sessions *t, const char *id, double now) {
  expire(t, now);
  return lookup(t, id) != NULL;
}

void sessions_close(ui_sessions *t, const char *id) {
  ui_session *s = lookup(t, id);
  if (s)
    slot_free(s);
}

int sessions_count(const ui_sessions *t, double now) {
  int n = 0;
  for (int i = 0; i < UI_SESSIONS_MAX; i++)
    n += t->s[i].expires > now;
  return n;
}
