/* SPDX-License-Identifier: BSD-2-Clause */
/* The check (ABI 1.1) shared by the SOCKS5 and HTTP frontends: both have
 * a "listen" key and an "auth" key (none | password). */
#ifndef PH_FRONTEND_CHECK_H
#define PH_FRONTEND_CHECK_H

#include <proxyhost/module.h>

/* The bounds of the shared keys that the C code needs whatever a
 * module's sample declares (the key tables are generated from the
 * .ini.sample files): backlog and max_clients become ints (listen(2),
 * the listener's count), buffer_size sizes each stream's buffers. The
 * samples say the same numbers; frontend_check holds them again
 * (ph_conf_limits, lib/conf_values.h). */
#define FRONTEND_BACKLOG_MAX 65535
#define FRONTEND_MAX_CLIENTS_MAX 1000000
#define FRONTEND_BUFFER_MIN 4096
#define FRONTEND_BUFFER_MAX 1048576

/* A ph_module.check: backlog, max_clients and buffer_size are within the
 * bounds above; the listen address parses (listener_check_listen);
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
