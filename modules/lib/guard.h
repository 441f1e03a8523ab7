/* SPDX-License-Identifier: BSD-2-Clause */
/* One rule against use-after-free, for every object that an event can end
 * (a client connection of a frontend, a relay).
 *
 * An object is entered from outside only by its loop callbacks (io,
 * timer) and by the callbacks other modules' services make to it (an
 * open's or an authorization's result, a relay's done). Each of those
 * entries runs between guard_enter and guard_leave. Ending the object
 * inside (its close) releases what it holds at once (sockets, watchers,
 * timer, opens and checks in flight) and marks it dead with guard_end;
 * its memory is freed only where the outermost entry leaves, at the end
 * of the event. So no callee can free an object under its caller: code
 * that runs after the end, in the same event, finds a dead, inert object
 * (it checks guard_dead, and the released resources are NULL or -1), never
 * freed memory. Outside any entry (depth 0: a stop or destroy walking the
 * list), the end frees at once.
 *
 * Loop thread only, like the objects it guards.
 *
 * gcc's -Wuse-after-free cannot see that guard_end frees only at depth 0:
 * when the free and a later guard_leave are inlined into one function it
 * may warn; keep the function that frees out of line (socks5.c). */
#ifndef PH_GUARD_H
#define PH_GUARD_H

typedef struct guard {
  unsigned depth;     /* entries running now */
  unsigned char dead; /* ended: released, waiting to be freed */
} guard;

static inline void guard_enter(guard *g) { g->depth++; }

/* Leaves an entry; 1 when the object ended and this was the outermost
 * entry: the caller frees its memory now. */
static inline int guard_leave(guard *g) {
  return --g->depth == 0 && g->dead;
}

/* Marks the object ended (after releasing what it holds); 1 when no entry
 * is running, so the caller frees its memory now, else 0 (the outermost
 * guard_leave will say so). */
static inline int guard_end(guard *g) {
  g->dead = 1;
  return g->depth == 0;
}

static inline int guard_dead(const guard *g) { return g->dead; }

/* 1 while an entry runs: for an owner that only counts re-entry (work
 * started from inside a call waits until the outermost one returns). */
static inline int guard_inside(const guard *g) { return g->depth != 0; }

#endif
