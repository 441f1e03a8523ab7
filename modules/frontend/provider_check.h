/* SPDX-License-Identifier: BSD-2-Clause */
/* A check (ABI 1.1) for a key that names the provider of a service: the
 * frontends' connector, authorizer and validation keys, auth_cache's
 * store key. */
#ifndef PH_PROVIDER_CHECK_H
#define PH_PROVIDER_CHECK_H

#include <stddef.h>

#include <proxyhost/module.h>

/* The provider key k names, if it names one, is a loaded instance whose
 * module declares service (an empty value passes: "the only provider").
 * PH_OK, or PH_EINVAL with *key = k and a reason in why. */
int check_named_provider(ph_ctx *ctx, const ph_api *api, const char *k,
                         const char *service, const char **key, char *why,
                         size_t whylen);

#endif
