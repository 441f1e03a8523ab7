/* SPDX-License-Identifier: BSD-2-Clause */
/* The transport keys' cross-key checks and the configurations they fill
 * (cp_grpc_conf.h). */
#include "cp_grpc_conf.h"

#include "lib/conf_values.h"
#include "cp_addr_list.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *str(ph_ctx *ctx, const ph_api *a, const char *k) {
  const char *v = a->conf_str(ctx, k);
  return v ? v : "";
}

/* A PEM file that must exist and be readable; the key file also private
 * (no group or other bits), as the credential files (cp_common.md). */
static int file_ok(const char *path, int private_key, char *why,
                   size_t whylen) {
  struct stat st;
  if (stat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
    snprintf(why, whylen, "is not a regular file");
    return 0;
  }
  if (access(path, R_OK) < 0) {
    snprintf(why, whylen, "is not readable");
    return 0;
  }
  if (st.st_size > CP_GRPC_PEM_MAX) {
    snprintf(why, whylen, "is larger than %d bytes", CP_GRPC_PEM_MAX);
    return 0;
  }
  if (private_key && (st.st_mode & 077)) {
    snprintf(why, whylen,
             "must not be readable by group or others (mode 0600 or 0400)");
    return 0;
  }
  return 1;
}

static int check(ph_ctx *ctx, const ph_api *a, const char *addr_key,
                 int client, const char **key, char *why, size_t whylen) {
  const char *addr = str(ctx, a, addr_key);
  if (client) { /* one address or a list (cp_addr_list.h) */
    const char *lwhy = NULL;
    if (cp_addr_list_check(addr, &lwhy) < 0)
      return ph_conf_fail(key, addr_key, why, whylen, "%s", lwhy);
    if (strcmp(str(ctx, a, "tls.mode"), "disabled") == 0 &&
        !cp_addr_list_loopback(addr))
      return ph_conf_fail(key, "tls.mode", why, whylen,
                          "disabled (plaintext) needs loopback IP addresses "
                          "in %s (127.0.0.0/8 or [::1], not a name)",
                          addr_key);
    if (strcmp(str(ctx, a, "tls.mode"), "disabled") == 0)
      return PH_OK;
    if (strchr(addr, ',') && !*str(ctx, a, "tls.server_name"))
      return ph_conf_fail(key, "tls.server_name", why, whylen,
                          "is required with mtls and a list in %s (the "
                          "name the controllers' certificates carry)",
                          addr_key);
    goto files;
  }
  /* The format first: "host:port" (a gRPC URI scheme is not accepted, so
   * that the loopback rule below sees the real host). */
  const char *colon = strrchr(addr, ':');
  if (!*addr || !colon || colon == addr || !colon[1] ||
      strspn(colon + 1, "0123456789") != strlen(colon + 1) ||
      strstr(addr, "://"))
    return ph_conf_fail(key, addr_key, why, whylen,
                        "must be host:port (IPv6 in brackets)");
  if (strcmp(str(ctx, a, "tls.mode"), "disabled") == 0) {
    if (!cp_addr_is_loopback(addr))
      return ph_conf_fail(key, "tls.mode", why, whylen,
                          "disabled (plaintext) needs a loopback IP address "
                          "in %s (127.0.0.0/8 or [::1], not a name)",
                          addr_key);
    return PH_OK;
  }
files:;
  static const char *const files[] = {"tls.cert_file", "tls.key_file",
                                      "tls.ca_file"};
  for (size_t i = 0; i < 3; i++) {
    const char *p = str(ctx, a, files[i]);
    if (!*p)
      return ph_conf_fail(key, files[i], why, whylen,
                          "is required with tls.mode = mtls");
    if (!file_ok(p, i == 1, why, whylen)) {
      *key = files[i];
      return PH_EINVAL;
    }
  }
  return PH_OK;
}

int cp_grpc_conf_check_server(ph_ctx *ctx, const ph_api *a,
                              const char *addr_key, const char **key,
                              char *why, size_t whylen) {
  return check(ctx, a, addr_key, 0, key, why, whylen);
}

int cp_grpc_conf_check_client(ph_ctx *ctx, const ph_api *a,
                              const char *addr_key, const char **key,
                              char *why, size_t whylen) {
  return check(ctx, a, addr_key, 1, key, why, whylen);
}

static void tls(ph_ctx *ctx, const ph_api *a, cp_grpc_tls *t) {
  t->mode = strcmp(str(ctx, a, "tls.mode"), "disabled") == 0
                ? CP_TLS_DISABLED
                : CP_TLS_MTLS;
  t->cert_file = str(ctx, a, "tls.cert_file");
  t->key_file = str(ctx, a, "tls.key_file");
  t->ca_file = str(ctx, a, "tls.ca_file");
  t->server_name = NULL;
}

void cp_grpc_conf_server(ph_ctx *ctx, const ph_api *a, const char *addr_key,
                         cp_grpc_server_cfg *c) {
  memset(c, 0, sizeof(*c));
  c->listen = str(ctx, a, addr_key);
  tls(ctx, a, &c->tls);
  c->max_recv_bytes = a->conf_int(ctx, "grpc.max_receive_message_size");
  c->max_send_bytes = a->conf_int(ctx, "grpc.max_send_message_size");
  c->max_streams = a->conf_int(ctx, "grpc.max_concurrent_streams");
  c->max_calls = a->conf_int(ctx, "grpc.max_calls");
  c->keepalive_time_ms = a->conf_int(ctx, "grpc.keepalive_time");
  c->keepalive_timeout_ms = a->conf_int(ctx, "grpc.keepalive_timeout");
  c->min_ping_interval_ms = a->conf_int(ctx, "grpc.min_ping_interval");
  c->max_connection_age_ms = a->conf_int(ctx, "grpc.max_connection_age");
  c->max_connection_age_grace_ms =
      a->conf_int(ctx, "grpc.max_connection_age_grace");
  c->handshake_timeout_ms = a->conf_int(ctx, "grpc.handshake_timeout");
  c->max_unauthenticated =
      a->conf_int(ctx, "grpc.max_unauthenticated_connections");
}

void cp_grpc_conf_client(ph_ctx *ctx, const ph_api *a, const char *addr_key,
                         cp_grpc_client_cfg *c) {
  memset(c, 0, sizeof(*c));
  c->address = str(ctx, a, addr_key);
  tls(ctx, a, &c->tls);
  c->tls.server_name = str(ctx, a, "tls.server_name");
  c->max_recv_bytes = a->conf_int(ctx, "grpc.max_receive_message_size");
  c->max_send_bytes = a->conf_int(ctx, "grpc.max_send_message_size");
  c->keepalive_time_ms = a->conf_int(ctx, "grpc.keepalive_time");
  c->keepalive_timeout_ms = a->conf_int(ctx, "grpc.keepalive_timeout");
}

void cp_grpc_tls_paths_keep(cp_grpc_tls_paths *p, const cp_grpc_tls *t) {
  p->mode = t->mode;
  snprintf(p->cert, sizeof(p->cert), "%s", t->cert_file ? t->cert_file : "");
  snprintf(p->key, sizeof(p->key), "%s", t->key_file ? t->key_file : "");
  snprintf(p->ca, sizeof(p->ca), "%s", t->ca_file ? t->ca_file : "");
}

void cp_grpc_tls_paths_get(const cp_grpc_tls_paths *p, cp_grpc_tls *t) {
  memset(t, 0, sizeof(*t));
  t->mode = p->mode;
  t->cert_file = p->cert;
  t->key_file = p->key;
  t->ca_file = p->ca;
}

void cp_grpc_client_keep(cp_grpc_client_kept *k, const cp_grpc_client_cfg *c) {
  k->cfg = *c;
  cp_grpc_tls_paths_keep(&k->tls, &c->tls);
  cp_grpc_tls_paths_get(&k->tls, &k->cfg.tls);
  snprintf(k->address, sizeof(k->address), "%s", c->address ? c->address : "");
  snprintf(k->server_name, sizeof(k->server_name), "%s",
           c->tls.server_name ? c->tls.server_name : "");
  k->cfg.address = k->address;
  k->cfg.tls.server_name = k->server_name;
}

int cp_conf_identity(ph_ctx *ctx, const ph_api *a, const char *id_key,
                     cp_client_ident *out, const char **key, char *why,
                     size_t whylen) {
  const char *const keys[] = {"address", "cluster_id", id_key, "instance_id",
                              "zone"};
  char *const dst[] = {out->address, out->cluster_id, out->id,
                       out->instance_id, out->zone};
  const size_t cap[] = {sizeof(out->address), sizeof(out->cluster_id),
                        sizeof(out->id), sizeof(out->instance_id),
                        sizeof(out->zone)};
  for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
    const char *v = a->conf_str(ctx, keys[i]);
    if (!v || !v[0])
      return ph_conf_fail(key, keys[i], why, whylen,
                          "required (its flag or environment name)");
    if (ph_conf_copy(dst[i], cap[i], v))
      return ph_conf_fail(key, keys[i], why, whylen, "too long");
  }
  return PH_OK;
}
