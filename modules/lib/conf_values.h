/* SPDX-License-Identifier: BSD-2-Clause */
/* Checks of configuration values that several modules read the same way
 * (the control plane's controller, authority and gateway): identifiers
 * made into Redis keys, SPIFFE paths and file names, bounded copies into
 * fixed buffers, and the one refusal shape of a module's check (the key
 * at fault and why, PH_EINVAL). Pure; any thread. */
#ifndef PH_CONF_VALUES_H
#define PH_CONF_VALUES_H

#include <stddef.h>

/* 1 when s is min..max bytes of [A-Za-z0-9._-] (NULL: 0 bytes), else 0.
 * What passes cannot escape a key prefix or a directory. */
int ph_conf_id_ok(const char *s, size_t min, size_t max);

/* Copies src (NULL: "") into dst of cap bytes. 0, or -1 when it does not
 * fit (dst then unchanged). */
int ph_conf_copy(char *dst, size_t cap, const char *src);

/* A refusal: *key = k, why = the formatted reason (truncated to whylen).
 * Always PH_EINVAL, for `return ph_conf_fail(...)`. */
int ph_conf_fail(const char **key, const char *k, char *why, size_t whylen,
                 const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#endif
