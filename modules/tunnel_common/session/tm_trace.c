/* SPDX-License-Identifier: BSD-2-Clause */
/* tm_trace.h: splitmix64 seeded once from getrandom (the clock and the
 * pid when that fails): ids need to be unlikely to repeat, not secret, so
 * a stream open costs no system call. */
#include "tm_trace.h"

#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static uint64_t state;
static int seeded;

static uint64_t next64(void) {
  if (!seeded) {
    if (getrandom(&state, sizeof state, GRND_NONBLOCK) !=
        (ssize_t)sizeof state) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      state = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
      state ^= (uint64_t)getpid() << 32;
    }
    seeded = 1;
  }
  uint64_t z = (state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

void tm_trace_new(char out[TM_TRACE_LEN + 1]) {
  static const char hex[] = "0123456789abcdef";
  do {
    for (unsigned i = 0; i < TM_TRACE_LEN; i += 16) {
      uint64_t v = next64();
      for (unsigned k = 0; k < 16; k++, v >>= 4)
        out[i + k] = hex[v & 15];
    }
    out[TM_TRACE_LEN] = '\0';
  } while (!tm_trace_valid(out, TM_TRACE_LEN)); /* all zero: once in 2^128 */
}

void tm_trace_take(const tm_open_stream *req, char out[TM_TRACE_LEN + 1],
                   int *replaced) {
  *replaced = req->trace_bad ? 1 : 0;
  if (req->trace[0] && tm_trace_valid(req->trace, strlen(req->trace)))
    memcpy(out, req->trace, TM_TRACE_LEN + 1);
  else
    tm_trace_new(out);
}
