/* SPDX-License-Identifier: BSD-2-Clause */
/* A control-plane client's mTLS files re-read into a new channel
 * (cp_client_tls.h). */
#include "cp_client_tls.h"

static void reload(void *arg, const char *trigger) {
  cp_client_tls *t = arg;
  char why[256] = "";
  if (!t->cq || !t->ch || !*t->ch || t->kept.cfg.tls.mode != CP_TLS_MTLS)
    return;
  cp_grpc_channel *n = cp_grpc_channel_new(t->cq, &t->kept.cfg, why,
                                           sizeof(why));
  if (n) {
    cp_grpc_channel_retire(*t->ch);
    *t->ch = n;
  }
  ph_tls_reload_done(&t->r, n ? 0 : -1, trigger, why);
}

/* The poll, at tls.reload_check_interval as it is now (the files' state
 * now is its baseline). */
static int watch(cp_client_tls *t) {
  int mtls = t->kept.cfg.tls.mode == CP_TLS_MTLS;
  const char *files[PH_TLS_WATCH_FILES] = {mtls ? t->kept.tls.cert : NULL,
                                           mtls ? t->kept.tls.key : NULL,
                                           mtls ? t->kept.tls.ca : NULL};
  return ph_tls_watch_key(&t->r, files, reload, t);
}

static void on_host_reload(const ph_topic *topic, const void *payload,
                           void *arg) {
  cp_client_tls *t = arg;
  (void)topic;
  (void)payload;
  if (!t->cq)
    return;
  reload(t, "sighup");
  if (watch(t) != PH_OK)
    PH_LOG(t->api, t->ctx, PH_LOG_WARN,
           "tls.reload_check_interval not applied", PH_STR("reason", "no memory"));
}

int cp_client_tls_init(cp_client_tls *t, ph_ctx *ctx, const ph_api *api,
                       const char *module) {
  t->api = api;
  t->ctx = ctx;
  int rc = ph_tls_reload_init(&t->r, api, ctx, module,
                              "control-plane client TLS certificate");
  if (rc != PH_OK)
    return rc;
  ph_topic *top = api->topic(ctx, "host.reload", "ph.reload/1");
  if (!top || api->subscribe(ctx, top, on_host_reload, t) <= 0)
    return PH_EINVAL;
  return PH_OK;
}

int cp_client_tls_start(cp_client_tls *t, cp_grpc_cq *cq, cp_grpc_channel **ch,
                  const cp_grpc_client_cfg *cfg) {
  cp_grpc_client_keep(&t->kept, cfg);
  t->cq = cq;
  t->ch = ch;
  return watch(t);
}

void cp_client_tls_stop(cp_client_tls *t) {
  t->cq = NULL;
  t->ch = NULL;
  ph_tls_reload_free(&t->r);
}

int cp_client_tls_open(cp_client_tls *t, cp_grpc_cq **cq, cp_grpc_channel **ch,
                       const cp_grpc_client_cfg *cfg) {
  const char *err = NULL;
  char why[256];
  *cq = cp_grpc_cq_new(t->ctx, t->api, "cq", &err);
  if (!*cq) {
    PH_LOG(t->api, t->ctx, PH_LOG_ERROR, "grpc not started",
           PH_STR("reason", err ? err : ""));
    return PH_EINVAL;
  }
  *ch = cp_grpc_channel_new(*cq, cfg, why, sizeof(why));
  if (!*ch) {
    PH_LOG(t->api, t->ctx, PH_LOG_ERROR, "control-plane channel not made",
           PH_STR("reason", why));
    return PH_EINVAL;
  }
  if (cp_client_tls_start(t, *cq, ch, cfg) != PH_OK)
    return PH_ENOMEM;
  return PH_OK;
}

void cp_client_tls_close(cp_client_tls *t, cp_grpc_cq **cq,
                         cp_grpc_channel **ch) {
  cp_client_tls_stop(t);
  cp_grpc_channel_free(*ch);
  *ch = NULL;
  cp_grpc_cq_free(*cq);
  *cq = NULL;
}
