/* SPDX-License-Identifier: BSD-2-Clause */
/* A test-only LD_PRELOAD library (never installed): clock_gettime()'s
 * wall clocks (CLOCK_REALTIME, CLOCK_REALTIME_COARSE) read
 * PH_TEST_CLOCK_SHIFT_MS milliseconds away from the machine's, so that
 * one process (a controller) has a clock that differs from another's (its
 * Redis) on one machine: libfaketime is not packaged here. With
 * PH_TEST_CLOCK_SHIFT_ONLY set, only calls made from a shared object whose
 * file name contains it are shifted (a module's own clock: the rest of the
 * process, whose timed waits take absolute CLOCK_REALTIME deadlines the
 * kernel reads unshifted, keeps the machine's). Monotonic clocks, time()
 * and gettimeofday() are left alone. The caller is looked for among the
 * nearest frames, not only the first: in a sanitizer build ASan's own
 * clock_gettime interceptor stands between the module and this one.
 * t/integration/cp_redis_time.sh (CP-2-12). */
#include <dlfcn.h>
#include <execinfo.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int (*clock_fn)(clockid_t, struct timespec *);

/* Whether one of the few frames above this call is in a shared object
 * whose file name contains only. backtrace() unwinds with the call
 * frame information, which the sanitizer's runtime has too. */
static int called_from(const char *only) {
  void *frames[5];
  int n = backtrace(frames, 5);
  for (int i = 1; i < n; i++) {
    Dl_info caller;
    if (dladdr(frames[i], &caller) && caller.dli_fname &&
        strstr(caller.dli_fname, only))
      return 1;
  }
  return 0;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
  /* Benign races: every thread computes the same values. */
  static clock_fn real;
  static long long shift, shift_set;
  static const char *only;
  if (!real)
    real = (clock_fn)(void (*)(void))dlsym(RTLD_NEXT, "clock_gettime");
  if (!shift_set) {
    const char *s = getenv("PH_TEST_CLOCK_SHIFT_MS");
    shift = s ? atoll(s) : 0;
    only = getenv("PH_TEST_CLOCK_SHIFT_ONLY");
    shift_set = 1;
  }
  int r = real ? real(id, ts) : -1;
  if (r != 0 || (id != CLOCK_REALTIME && id != CLOCK_REALTIME_COARSE))
    return r;
  if (only && *only && !called_from(only))
    return r;
  long long ns = (long long)ts->tv_nsec + (shift % 1000) * 1000000LL;
  ts->tv_sec += (time_t)(shift / 1000);
  while (ns < 0) {
    ns += 1000000000LL;
    ts->tv_sec--;
  }
  while (ns >= 1000000000LL) {
    ns -= 1000000000LL;
    ts->tv_sec++;
  }
  ts->tv_nsec = (long)ns;
  return r;
}
