/* SPDX-License-Identifier: BSD-2-Clause */
/* Module flags on the command line (argv_flags.c). */
#ifndef PH_ARGV_FLAGS_H
#define PH_ARGV_FLAGS_H

#include <stddef.h>

#define ARGV_FLAGS_MAX 256

typedef struct argv_flags {
  const char *names[ARGV_FLAGS_MAX];  /* without dashes; point into argv */
  const char *values[ARGV_FLAGS_MAX];
  size_t n;
} argv_flags;

/* Moves every module flag out of argv (in place: argv[1..] keeps the
 * host's options and arguments in order, NULL-terminated) into out.
 * Returns the new argc, or -1 with a message in err. */
int argv_take_flags(int argc, char **argv, argv_flags *out, char *err,
                    size_t errlen);

#endif
