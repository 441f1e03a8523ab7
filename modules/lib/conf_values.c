/* SPDX-License-Identifier: BSD-2-Clause */
/* Configuration value checks shared by modules (conf_values.h). */
#include "conf_values.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <proxyhost/abi.h>

int ph_conf_id_ok(const char *s, size_t min, size_t max) {
  size_t n = s ? strlen(s) : 0;
  if (n < min || n > max)
    return 0;
  for (size_t i = 0; i < n; i++) {
    char ch = s[i];
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
          (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-'))
      return 0;
  }
  return 1;
}

int ph_conf_copy(char *dst, size_t cap, const char *src) {
  size_t n = src ? strlen(src) : 0;
  if (n >= cap)
    return -1;
  memcpy(dst, src ? src : "", n);
  dst[n] = 0;
  return 0;
}

int ph_conf_orders(ph_ctx *ctx, const ph_api *api, const ph_conf_order *rules,
                   size_t n, const char **key, char *why, size_t whylen) {
  for (size_t i = 0; i < n; i++)
    if (api->conf_int(ctx, rules[i].lo) > api->conf_int(ctx, rules[i].hi))
      return ph_conf_fail(key, rules[i].key, why, whylen, "%s", rules[i].why);
  return PH_OK;
}

int ph_conf_limits(ph_ctx *ctx, const ph_api *api,
                   const ph_conf_limit *limits, size_t n, const char **key,
                   char *why, size_t whylen) {
  for (size_t i = 0; i < n; i++) {
    const ph_conf_limit *l = &limits[i];
    int64_t v;
    if (l->len) {
      const char *s = api->conf_str(ctx, l->key);
      v = (int64_t)(s ? strlen(s) : 0);
    } else {
      v = api->conf_int(ctx, l->key);
    }
    if (v < l->lo || v > l->hi)
      return ph_conf_fail(key, l->key, why, whylen,
                          "outside %lld..%lld%s, the bounds this module's "
                          "code holds (its sample declares more)",
                          (long long)l->lo, (long long)l->hi,
                          l->len ? " bytes" : "");
  }
  return PH_OK;
}

int ph_conf_fail(const char **key, const char *k, char *why, size_t whylen,
                 const char *fmt, ...) {
  *key = k;
  if (why && whylen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
  }
  return PH_EINVAL;
}
