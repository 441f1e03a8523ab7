/* SPDX-License-Identifier: BSD-2-Clause */
/* The status page's sessions: a fixed table of at most UI_SESSIONS_MAX
 * (the limit in force is [admin] max_sessions), each an id of 32 bytes
 * from getrandom as 64 lowercase hex digits and an expiry. Looking an id
 * up compares it with every slot in constant time. Loop thread only. */
#ifndef PH_UI_SESSION_H
#define PH_UI_SESSION_H

#include <stdint.h>

#include "ui_parse.h"

#define UI_SESSIONS_MAX 256

typedef struct ui_session {
  char id[UI_SESSION_HEX + 1];
  double expires; /* clock seconds; 0: a free slot */
  uint64_t seq;   /* order of creation: the lowest is the oldest */
} ui_session;

typedef struct ui_sessions {
  ui_session s[UI_SESSIONS_MAX];
  int max; /* 1..UI_SESSIONS_MAX */
  uint64_t seq;
} ui_sessions;

/* Empties the table (wiping the ids) and sets its limit. */
void sessions_reset(ui_sessions *t, int max);
/* Sets the limit, dropping the oldest sessions beyond it. */
void sessions_limit(ui_sessions *t, int max);
/* A new session expiring at now + ttl; a full table drops its oldest
 * (*evicted = 1). 0 with the id in id, or -1 (no randomness). */
int sessions_open(ui_sessions *t, double now, double ttl,
                  char id[UI_SESSION_HEX + 1], int *evicted);
/* 1 when id is a live session (expired ones are dropped first). */
int sessions_valid(ui_sessions *t, const char *id, double now);
/* Ends the session id, if any. */
void sessions_close(ui_sessions *t, const char *id);
/* Live sessions. */
int sessions_count(const ui_sessions *t, double now);

#endif
