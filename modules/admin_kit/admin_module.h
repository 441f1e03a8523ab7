/* SPDX-License-Identifier: BSD-2-Clause */
/* The host-facing half of the admin kit: what admin_api and pool_api do
 * alike with the ph_api (modules/admin_kit/admin_http.h is the pure
 * half). The admin token of the module's "token_file" key, checked,
 * loaded at init and re-read on reload; JSON answers and {"error": ...}
 * answers to a route request. */
#ifndef PH_ADMIN_KIT_MODULE_H
#define PH_ADMIN_KIT_MODULE_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/module.h>

#include "admin_token.h"

/* The check's part: reads token_file (PH_OK), or sets *key to
 * "token_file" and why (PH_EINVAL). Nothing is kept. */
int admin_token_conf_check(ph_ctx *ctx, const ph_api *a, const char **key,
                           char *why, size_t whylen);

/* Loads token_file into *t (init, reload): PH_OK, or PH_EINVAL after
 * logging msg with the reason (never the token); *t is then unchanged. */
int admin_token_conf_load(ph_ctx *ctx, const ph_api *a, admin_token *t,
                          const char *msg);

/* Answers request id with status and a JSON body. */
void admin_reply_json(ph_ctx *ctx, const ph_api *a, int64_t id, int status,
                      const char *body, size_t len);

/* Answers request id with status and {"error": {code, message}}. */
void admin_reply_error(ph_ctx *ctx, const ph_api *a, int64_t id, int status,
                       const char *code, const char *message);

#endif
