/* SPDX-License-Identifier: BSD-2-Clause */
/* The check (ABI 1.1) shared by the SOCKS5 and HTTP frontends: both have
 * a "listen" key and an "auth" key (none | password). */
#ifndef PH_FRONTEND_CHECK_H
#define PH_FRONTEND_CHECK_H

#include <proxyhost/module.h>

/* A ph_module.check: the listen address parses (listener_check_listen);
 * a "connector" key that names a provider names a loaded instance that
 * provides "connector"; auth = password has a module that provides the
 * "authorizer" service loaded, the one the "authorizer" key names if it
 * names one; a "validation" key that names a provider names a loaded
 * instance that provides "validation"; and "authorizer" is empty unless
 * auth = password. PH_OK, or
 * PH_EINVAL with *key and a reason in why. */
int frontend_check(ph_ctx *ctx, const ph_api *api, const char **key,
                   char *why, size_t whylen);

#endif
