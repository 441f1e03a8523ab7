/* SPDX-License-Identifier: BSD-2-Clause */
/* See ui_throttle.h. */
#include "ui_throttle.h"

#include <string.h>

void throttle_reset(ui_throttle *t, int max) {
  memset(t, 0, sizeof(*t));
  t->max = max < 1 ? 1 : max > UI_THROTTLE_MAX ? UI_THROTTLE_MAX : max;
}

int throttle_wait(const ui_throttle *t, double now) {
  if (t->n < t->max)
    return 0;
  double left = t->t[t->next] + UI_THROTTLE_WINDOW - now;
  if (left <= 0)
    return 0;
  if (left > UI_THROTTLE_WINDOW)
    left = UI_THROTTLE_WINDOW; /* a clock that went back: at most a window */
  int s = (int)left; /* rounded up: never "now" while still shut */
  return s < left ? s + 1 : s;
}

void throttle_fail(ui_throttle *t, double now) {
  t->t[t->next] = now;
  t->next = (t->next + 1) % t->max;
  if (t->n < t->max)
    t->n++;
}
