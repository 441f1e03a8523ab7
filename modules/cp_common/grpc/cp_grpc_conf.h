/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The transport keys of the control plane, for the controller (server) and
 * the gateway and checker (clients): the TLS keys and the gRPC limits
 * (CP-8-3), declared once in the key groups beside this file
 * (cp_grpc_tls.keys, cp_grpc_common.keys, cp_grpc_server.keys,
 * cp_grpc_client.keys; lib/tls_reload.keys), which each module's sample
 * writes out and the build holds it to (tools/gen_conf_keys.awk -v
 * groups). Here: the cross-key check (plaintext only on loopback: CP-1-12,
 * CP-9-9; mtls needs its three files) and the cp_grpc_*_cfg they fill. A
 * module calls cp_grpc_conf_check_* from its check and cp_grpc_conf_* from
 * init or start. Every key is restart-only: a listener's or channel's
 * limits are fixed when it is made; the TLS files' contents are re-read on
 * SIGHUP (and on a change, with tls.reload_check_interval: issue 23 item
 * 14) from the paths read at start (cp_grpc_tls_paths).
 * docs/operations/control-plane-transport.md lists them for operators.
 */
#ifndef CP_GRPC_CONF_H
#define CP_GRPC_CONF_H

#include <stddef.h>

#include <proxyhost/module.h>
#include <proxyhost/pool_store.h>

#include "cp_addr_list.h"
#include "cp_grpc.h"
#include "lib/tls_reload.h"

#define CP_GRPC_MIB (1024 * 1024)

/* Check callbacks: the rules per-key bounds cannot say. addr_key is the
 * module's address key ("listen", "address"); its value must be
 * host:port, and loopback when tls.mode is disabled; mtls needs
 * tls.cert_file, tls.key_file and tls.ca_file, each a readable file
 * (the key not readable by group or others). PH_OK, or PH_EINVAL with
 * *key (a stable key name) and why set (never a file's content). */
int cp_grpc_conf_check_server(ph_ctx *ctx, const ph_api *a,
                              const char *addr_key, const char **key,
                              char *why, size_t whylen);
int cp_grpc_conf_check_client(ph_ctx *ctx, const ph_api *a,
                              const char *addr_key, const char **key,
                              char *why, size_t whylen);

/* Fill a cfg from the keys (strings are the host's: valid until the next
 * reload; cp_grpc_server_new and cp_grpc_channel_new copy what they
 * keep). */
void cp_grpc_conf_server(ph_ctx *ctx, const ph_api *a, const char *addr_key,
                         cp_grpc_server_cfg *cfg);
void cp_grpc_conf_client(ph_ctx *ctx, const ph_api *a, const char *addr_key,
                         cp_grpc_client_cfg *cfg);

/* The TLS keys' values as read at start: they are restart-only (the
 * host's conf_str shows a reload's new value), so a reload re-reads the
 * files at these paths. */
#define CP_GRPC_PATH_LEN 4097
typedef struct cp_grpc_tls_paths {
  cp_tls_mode mode;
  char cert[CP_GRPC_PATH_LEN], key[CP_GRPC_PATH_LEN], ca[CP_GRPC_PATH_LEN];
} cp_grpc_tls_paths;
void cp_grpc_tls_paths_keep(cp_grpc_tls_paths *p, const cp_grpc_tls *t);
/* t's paths point into p (server_name NULL). */
void cp_grpc_tls_paths_get(const cp_grpc_tls_paths *p, cp_grpc_tls *t);

/* A client configuration as read at start, its strings copied: a channel
 * made again at a reload (renewed files) has the same address, name and
 * limits. cfg's strings point into the struct (do not copy it by value
 * and use the copy's cfg). */
typedef struct cp_grpc_client_kept {
  cp_grpc_client_cfg cfg;
  cp_grpc_tls_paths tls;
  char address[CP_GRPC_PATH_LEN];
  char server_name[256];
} cp_grpc_client_kept;
void cp_grpc_client_keep(cp_grpc_client_kept *k, const cp_grpc_client_cfg *c);

/* A control-plane client's identity (the gateway's and the checker's), as
 * read at start: copies, for the session sends them in every call and
 * they outlive reloads. id is the worker's or the checker's id. */
typedef struct cp_client_ident {
  char address[CP_ADDR_LIST_CHARS + 1];
  char cluster_id[PH_POOL_ID_MAX + 1], id[PH_POOL_ID_MAX + 1],
      instance_id[PH_POOL_ID_MAX + 1], zone[PH_POOL_ID_MAX + 1];
} cp_client_ident;

/* Reads the identity keys address, cluster_id, id_key ("worker_id",
 * "checker_id"), instance_id and zone, in that order, each required, into
 * out. PH_OK, or PH_EINVAL with *key and why ("required (its flag or
 * environment name)", "too long"). Init and check; with the held bounds:
 * cp_grpc_client_read (cp_grpc_held.h). */
int cp_conf_identity(ph_ctx *ctx, const ph_api *a, const char *id_key,
                     cp_client_ident *out, const char **key, char *why,
                     size_t whylen);

#endif
