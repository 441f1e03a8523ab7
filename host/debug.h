/* SPDX-License-Identifier: BSD-2-Clause */
/* Checks of API misuse: a module calling a loop-thread-only function on
 * another thread, asking for a configuration key it did not declare, and
 * the like. Each is a programming error in the module, never something a
 * user's input can cause.
 *
 * With debug checks on, debug_misuse logs the misuse (module and what)
 * and aborts, so that the test that hit it fails where it happened. They
 * are on in debug builds (configure --enable-debug; CI's sanitizer build
 * uses it) and always under the mock host, which runs the modules' unit
 * tests. Off, in release builds, the misuse is logged (rate-limited) and
 * the function returns its documented error. */
#ifndef PH_DEBUG_H
#define PH_DEBUG_H

/* Set once before any module is loaded: 1 with debug checks on. */
extern int debug_checks;

/* module may be NULL (the host). what is static text naming the function
 * and the rule, e.g. "conf_str: key \"x\" is not declared". */
void debug_misuse(const char *module, const char *what);

#endif
