/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The transport keys of the control plane, declared once for the
 * controller (server) and the gateway and checker (client): the TLS keys
 * and the gRPC limits (CP-8-3), with their bounds, the cross-key check
 * (plaintext only on loopback: CP-1-12, CP-9-9; mtls needs its three
 * files) and the cp_grpc_*_cfg they fill. A module's key table lists
 *
 *   PH_CONF_KEY("listen", ...),  CP_GRPC_TLS_KEYS, CP_GRPC_SERVER_KEYS,
 *
 * (or CP_GRPC_CLIENT_KEYS with its "address" key), calls
 * cp_grpc_conf_check_* from its check and cp_grpc_conf_* from init or
 * start. Every key is restart-only: a listener's or channel's limits are
 * fixed when it is made; the TLS files' contents are re-read on SIGHUP
 * (and on a change, with tls.reload_check_interval: issue 23 item 14)
 * from the paths read at start (cp_grpc_tls_paths).
 * docs/operations/control-plane-transport.md lists them for operators.
 */
#ifndef CP_GRPC_CONF_H
#define CP_GRPC_CONF_H

#include <stddef.h>

#include <proxyhost/module.h>

#include "cp_grpc.h"
#include "lib/tls_reload.h"

#define CP_GRPC_MIB (1024 * 1024)

#define CP_GRPC_TLS_KEYS                                                      \
  PH_CONF_KEY("tls.mode", PH_CONF_ENUM, "mtls", 0, 0, PH_CONF_RESTART, NULL,  \
              "mtls: TLS with a verified peer certificate both ways; "        \
              "disabled: plaintext, loopback addresses only",                 \
              "mtls|disabled"),                                               \
  PH_CONF_KEY("tls.cert_file", PH_CONF_STRING, NULL, 0, 4096,                 \
              PH_CONF_RESTART, NULL,                                          \
              "PEM certificate (chain) of this side (mtls)", NULL),           \
  PH_CONF_KEY("tls.key_file", PH_CONF_STRING, NULL, 0, 4096,                  \
              PH_CONF_RESTART, NULL,                                          \
              "PEM private key of tls.cert_file (mtls; mode 0600 or 0400)",   \
              NULL),                                                          \
  PH_CONF_KEY("tls.ca_file", PH_CONF_STRING, NULL, 0, 4096, PH_CONF_RESTART,  \
              NULL, "PEM CA the peer's certificate must chain to (mtls)",     \
              NULL),                                                          \
  PH_TLS_RELOAD_KEY

/* Both sides: message sizes and keepalive. */
#define CP_GRPC_COMMON_KEYS                                                   \
  PH_CONF_KEY("grpc.max_receive_message_size", PH_CONF_SIZE, "16MiB", 1024,   \
              256 * CP_GRPC_MIB, PH_CONF_RESTART, NULL,                       \
              "largest message accepted; larger: RESOURCE_EXHAUSTED", NULL),  \
  PH_CONF_KEY("grpc.max_send_message_size", PH_CONF_SIZE, "16MiB", 1024,      \
              256 * CP_GRPC_MIB, PH_CONF_RESTART, NULL,                       \
              "largest message sent; larger: RESOURCE_EXHAUSTED", NULL),      \
  PH_CONF_KEY("grpc.keepalive_timeout", PH_CONF_DURATION, "10s", 1000,        \
              600000, PH_CONF_RESTART, NULL,                                  \
              "no ping answer this long: the connection is dead", NULL)

#define CP_GRPC_SERVER_KEYS                                                   \
  CP_GRPC_COMMON_KEYS,                                                        \
  PH_CONF_KEY("grpc.keepalive_time", PH_CONF_DURATION, "60s", 1000, 7200000,  \
              PH_CONF_RESTART, NULL,                                          \
              "the server pings a connection idle this long", NULL),          \
  PH_CONF_KEY("grpc.min_ping_interval", PH_CONF_DURATION, "10s", 1000,        \
              3600000, PH_CONF_RESTART, NULL,                                 \
              "client pings closer than this are strikes; two: GOAWAY "       \
              "too_many_pings (clients' keepalive_time must be >= it)",       \
              NULL),                                                          \
  PH_CONF_KEY("grpc.max_concurrent_streams", PH_CONF_INT, "100", 1, 10000,    \
              PH_CONF_RESTART, NULL,                                          \
              "streams at once per connection (HTTP/2 setting)", NULL),       \
  PH_CONF_KEY("grpc.max_calls", PH_CONF_INT, "10000", 1, 1000000,             \
              PH_CONF_RESTART, NULL,                                          \
              "calls at once in the whole server; beyond: "                   \
              "RESOURCE_EXHAUSTED",                                           \
              NULL),                                                          \
  PH_CONF_KEY("grpc.max_connection_age", PH_CONF_DURATION, "30m", 1000,       \
              86400000, PH_CONF_RESTART, NULL,                                \
              "a connection this old gets GOAWAY (bounds a stream's life, "   \
              "CP-8-3)",                                                      \
              NULL),                                                          \
  PH_CONF_KEY("grpc.max_connection_age_grace", PH_CONF_DURATION, "30s", 0,    \
              3600000, PH_CONF_RESTART, NULL,                                 \
              "after that GOAWAY, calls still open are cut", NULL),           \
  PH_CONF_KEY("grpc.handshake_timeout", PH_CONF_DURATION, "10s", 1000,        \
              120000, PH_CONF_RESTART, NULL,                                  \
              "a new connection's TLS handshake and first call within this, " \
              "else it is closed",                                            \
              NULL),                                                          \
  PH_CONF_KEY("grpc.max_unauthenticated_connections", PH_CONF_INT, "256", 1,  \
              65536, PH_CONF_RESTART, NULL,                                   \
              "connections that carried no call yet (no handshake done); "    \
              "one more is closed at once, and each is closed after "        \
              "grpc.handshake_timeout",                                       \
              NULL)

#define CP_GRPC_CLIENT_KEYS                                                   \
  CP_GRPC_COMMON_KEYS,                                                        \
  PH_CONF_KEY("grpc.keepalive_time", PH_CONF_DURATION, "60s", 10000,          \
              7200000, PH_CONF_RESTART, NULL,                                 \
              "ping the controller after this long without data (at least "   \
              "the controller's grpc.min_ping_interval)",                     \
              NULL),                                                          \
  PH_CONF_KEY("tls.server_name", PH_CONF_STRING, NULL, 0, 253,                \
              PH_CONF_RESTART, NULL,                                          \
              "name the controller's certificate must carry; empty: the "     \
              "address' host",                                                \
              NULL)

/* A control-plane client's session backoff (the gateway's and the
 * checker's): jittered, exponential from backoff.min up to backoff.max
 * (lib/backoff.h); the caller checks min <= max (ph_conf_orders). */
#define CP_CLIENT_BACKOFF_KEYS                                                \
  PH_CONF_KEY("backoff.min", PH_CONF_DURATION, "500ms", 1, 60000,             \
              PH_CONF_RESTART, NULL,                                          \
              "first delay before a new session after a failure", NULL),      \
  PH_CONF_KEY("backoff.max", PH_CONF_DURATION, "30s", 1, 600000,              \
              PH_CONF_RESTART, NULL,                                          \
              "largest delay between sessions (jittered, exponential)", NULL)

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

/* A control-plane client's identity keys (the gateway's and the
 * checker's address, cluster, worker or checker, instance and zone):
 * keys[0..n) each required and copied into dst[i] (cap[i] bytes: they
 * outlive reloads). PH_OK, or PH_EINVAL with *key and why ("required (its
 * flag or environment name)", "too long"). Init and check. */
int cp_conf_identity(ph_ctx *ctx, const ph_api *a, const char *const *keys,
                     char *const *dst, const size_t *cap, size_t n,
                     const char **key, char *why, size_t whylen);

#endif
