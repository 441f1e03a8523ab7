/* SPDX-License-Identifier: BSD-2-Clause */
/* See admin_module.h. */
#include "admin_module.h"

#include <openssl/crypto.h>

#include "admin_http.h"

int admin_token_conf_check(ph_ctx *ctx, const ph_api *a, const char **key,
                           char *why, size_t whylen) {
  admin_token t;
  if (admin_token_load(a->conf_str(ctx, "token_file"), &t, why, whylen) < 0) {
    *key = "token_file";
    return PH_EINVAL;
  }
  OPENSSL_cleanse(&t, sizeof(t));
  return PH_OK;
}

int admin_token_conf_load(ph_ctx *ctx, const ph_api *a, admin_token *t,
                          const char *msg) {
  char why[512];
  admin_token n;
  if (admin_token_load(a->conf_str(ctx, "token_file"), &n, why, sizeof(why)) <
      0) {
    PH_LOG(a, ctx, PH_LOG_ERROR, msg, PH_STR("reason", why));
    return PH_EINVAL;
  }
  *t = n;
  OPENSSL_cleanse(&n, sizeof(n));
  return PH_OK;
}

void admin_reply_json(ph_ctx *ctx, const ph_api *a, int64_t id, int status,
                      const char *body, size_t len) {
  a->route_reply(ctx, id, status, API_JSON_TYPE, body, len);
}

void admin_reply_error(ph_ctx *ctx, const ph_api *a, int64_t id, int status,
                       const char *code, const char *message) {
  char buf[512];
  size_t n = api_write_error(buf, sizeof(buf), code, message);
  admin_reply_json(ctx, a, id, status, buf, n);
}
