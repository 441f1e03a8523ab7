/* SPDX-License-Identifier: BSD-2-Clause */
/* A configuration section's name, one rule for the host's configuration
 * (host/conf_types.c) and proxyhostctl status's INSTANCE
 * (tools/ctl_status.c): NAME, or NAME.INSTANCE when dot is allowed (a
 * module instance, ABI 1.2), each part [a-z0-9_]+; the dot neither first
 * nor last. 1 when s (n bytes, not NUL-terminated) is one, else 0. */
#ifndef PH_LIB_SECTION_NAME_H
#define PH_LIB_SECTION_NAME_H

#include <stddef.h>

static inline int ph_section_name_ok(const char *s, size_t n, int dot) {
  if (n == 0)
    return 0;
  size_t dots = 0;
  for (size_t i = 0; i < n; i++) {
    if (dot && s[i] == '.') {
      if (++dots > 1 || i == 0 || i + 1 == n)
        return 0;
      continue;
    }
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
          s[i] == '_'))
      return 0;
  }
  return 1;
}

#endif
