/* SPDX-License-Identifier: BSD-2-Clause */
/* Checks of configuration values that several modules read the same way
 * (the control plane's controller, authority and gateway): identifiers
 * made into Redis keys, SPIFFE paths and file names, bounded copies into
 * fixed buffers, the one refusal shape of a module's check (the key at
 * fault and why, PH_EINVAL), and the order between pairs of integer keys
 * (a minimum and its maximum), and the log line of an init refusing its
 * configuration. Pure but for ph_conf_orders (api->conf_int: check and
 * init) and ph_conf_refused (api->log); any thread. */
#ifndef PH_CONF_VALUES_H
#define PH_CONF_VALUES_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/module.h>

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

/* A rule between two integer keys (durations, counts) of one module: the
 * value of lo must not exceed that of hi; when it does, key is at fault
 * and why says so ("must be at least backoff.min"). */
typedef struct ph_conf_order {
  const char *lo, *hi, *key, *why;
} ph_conf_order;

/* Checks rules[0..n) in order with api->conf_int: PH_OK, or the first
 * broken rule refused as by ph_conf_fail (PH_EINVAL). */
int ph_conf_orders(ph_ctx *ctx, const ph_api *api, const ph_conf_order *rules,
                   size_t n, const char **key, char *why, size_t whylen);

/* A bound the module's code holds again on a key whose table comes from
 * its .ini.sample (tools/gen_conf_keys.awk): a buffer, a 32-bit count, a
 * message limit. lo..hi bounds an integer key (api->conf_int), or with
 * len set the byte length of a string key (api->conf_str, NULL as ""),
 * so that a sample declaring more fails the start, closed. */
typedef struct ph_conf_limit {
  const char *key;
  int64_t lo, hi;
  int len;
} ph_conf_limit;

/* Checks limits[0..n) in order: PH_OK, or the first value outside its
 * bounds refused as by ph_conf_fail (PH_EINVAL; why names the bounds,
 * never the value of a string). Check and init. */
int ph_conf_limits(ph_ctx *ctx, const ph_api *api,
                   const ph_conf_limit *limits, size_t n, const char **key,
                   char *why, size_t whylen);

/* A module's init refusing what its reader refused: logs msg at ERROR
 * with the key at fault ("key") and why ("reason"), and returns
 * PH_EINVAL, for `return ph_conf_refused(...)`. Init, loop thread. */
static inline int ph_conf_refused(const ph_api *api, ph_ctx *ctx,
                                  const char *msg, const char *key,
                                  const char *why) {
  PH_LOG(api, ctx, PH_LOG_ERROR, msg, PH_STR("key", key),
         PH_STR("reason", why));
  return PH_EINVAL;
}

#endif
