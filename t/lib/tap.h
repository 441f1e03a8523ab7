/* SPDX-License-Identifier: BSD-2-Clause */
/* Minimal TAP producer for proxyhost's C tests (automake's tap-driver.sh).
 *
 *   plan_lazy();                     // "1..N" printed by done_testing()
 *   ok(cond, "what it checks");
 *   is_int(got, want, "name");  is_str(got, want, "name");
 *   diag("fmt", ...);              // a "# ..." comment line
 *   return done_testing();
 */
#ifndef PH_TAP_H
#define PH_TAP_H

#include <stdio.h>
#include <string.h>

static int tap_n_, tap_failed_;

static inline void plan_lazy(void) { setvbuf(stdout, NULL, _IOLBF, 0); }

static inline int tap_ok_(int cond, const char *name, const char *file,
                          int line) {
  tap_n_++;
  printf("%sok %d - %s\n", cond ? "" : "not ", tap_n_, name);
  if (!cond) {
    tap_failed_++;
    printf("#   failed at %s:%d\n", file, line);
  }
  fflush(stdout);
  return cond;
}

#define ok(cond, name) tap_ok_(!!(cond), (name), __FILE__, __LINE__)
#define is_int(got, want, name)                                           \
  do {                                                                    \
    long long g_ = (long long)(got), w_ = (long long)(want);              \
    if (!ok(g_ == w_, name))                                              \
      printf("#   got %lld, want %lld\n", g_, w_);                        \
  } while (0)
#define is_str(got, want, name)                                           \
  do {                                                                    \
    const char *g_ = (got), *w_ = (want);                                 \
    if (!ok(g_ && w_ && strcmp(g_, w_) == 0, name))                       \
      printf("#   got '%s', want '%s'\n", g_ ? g_ : "(null)",             \
             w_ ? w_ : "(null)");                                         \
  } while (0)
#define like(hay, needle, name)                                           \
  do {                                                                    \
    const char *h_ = (hay), *n_ = (needle);                               \
    if (!ok(h_ && n_ && strstr(h_, n_) != NULL, name))                    \
      printf("#   '%s' does not contain '%s'\n", h_ ? h_ : "(null)", n_); \
  } while (0)
#define unlike(hay, needle, name)                                         \
  do {                                                                    \
    const char *h_ = (hay), *n_ = (needle);                               \
    if (!ok(h_ && n_ && strstr(h_, n_) == NULL, name))                    \
      printf("#   '%s' contains '%s'\n", h_ ? h_ : "(null)", n_);         \
  } while (0)

/* check (like or unlike) for each string listed: one check each, named
 * "name: 'it'". */
#define tap_each_(check, hay, name, ...)                                       \
  do {                                                                         \
    const char *const l_[] = {__VA_ARGS__, NULL};                              \
    for (size_t i_ = 0; l_[i_]; i_++) {                                        \
      char nm_[256];                                                           \
      snprintf(nm_, sizeof(nm_), "%s: '%s'", (name), l_[i_]);                  \
      check(hay, l_[i_], nm_);                                                 \
    }                                                                          \
  } while (0)
/* What one text must hold (the fields of a line, the rows of a page). */
#define like_each(hay, name, ...) tap_each_(like, hay, name, __VA_ARGS__)
/* What must not leak into it (secrets, principals, targets). */
#define unlike_each(hay, name, ...) tap_each_(unlike, hay, name, __VA_ARGS__)

/* A diagnostic: one "# ..." comment line, printf's format and arguments. */
#define diag(...)                                                              \
  do {                                                                         \
    printf("# ");                                                              \
    printf(__VA_ARGS__);                                                       \
    printf("\n");                                                              \
  } while (0)

/* A check that cannot run here, counted as skipped ("# SKIP why"). */
static inline void tap_skip(const char *name, const char *why) {
  tap_n_++;
  printf("ok %d - %s # SKIP %s\n", tap_n_, name, why);
  fflush(stdout);
}

static inline int done_testing(void) {
  printf("1..%d\n", tap_n_);
  return tap_failed_ ? 1 : 0;
}

#endif
