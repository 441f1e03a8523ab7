/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proxyhost SDK: the "authorizer" service: is this username/password pair
 * a known principal? Frontends use it for SOCKS5 username/password
 * (RFC 1929) and HTTP Proxy-Authorization: Basic.
 *
 * Service name "authorizer", major 1. Loop thread only. Answers are
 * asynchronous because checking a password hash is deliberately slow and
 * must not block the loop. Anything but PH_AUTH_ALLOW means "deny"
 * (fail closed); PH_AUTH_UNAVAILABLE says the store could not answer.
 */
#ifndef PROXYHOST_AUTHORIZER_H
#define PROXYHOST_AUTHORIZER_H

#include <stddef.h>
#include <stdint.h>

#define PH_AUTHORIZER_SERVICE "authorizer"
#define PH_AUTHORIZER_MAJOR 1
#define PH_AUTHORIZER_MINOR 0

typedef enum ph_auth_verdict {
  PH_AUTH_ALLOW = 0,
  PH_AUTH_DENY = 1,
  PH_AUTH_UNAVAILABLE = 2
} ph_auth_verdict;

/* Called exactly once per accepted check, on the loop thread, never from
 * inside check_password itself and never after cancel returned. */
typedef void (*ph_auth_cb)(void *arg, int verdict);

typedef struct ph_authorizer_v1 {
  /* Starts a check. user and password are copied (at most 255 bytes each,
   * as in RFC 1929) and wiped after use. Returns an id > 0, or a negative
   * ph_status (PH_EINVAL, PH_ENOMEM) and then cb is never called. */
  int64_t (*check_password)(void *self, const char *user, size_t user_len,
                            const char *password, size_t password_len,
                            ph_auth_cb cb, void *arg);
  /* Abandons a check; PH_OK or PH_ENOENT. */
  int (*cancel)(void *self, int64_t id);
} ph_authorizer_v1;

#endif
