/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proxyhost SDK: the module descriptor. Include this header to write a
 * module; it includes the rest of the SDK.
 *
 * A module is a shared object exporting exactly one symbol,
 * `proxyhost_module`, a const ph_module defined with PROXYHOST_MODULE:
 *
 *   static const ph_conf_key keys[] = {
 *     PH_CONF_KEY("greeting", PH_CONF_STRING, "hello", 1, 64, 0, NULL,
 *                 "what to say", NULL),
 *     PH_CONF_END
 *   };
 *   PROXYHOST_MODULE = {
 *     PH_MODULE_HEADER("hello", "1.0.0"),
 *     .description = "says hello",
 *     .config = keys,
 *     .init = hello_init,
 *     .destroy = hello_destroy,
 *   };
 *
 * Link with: -module -avoid-version -export-symbols-regex '^proxyhost_module$'
 *
 * Lifecycle, all on the loop thread, driven by the host:
 *   check   (ABI 1.1) pure validation of the values init and reload
 *           would interpret, after the host validated every key's type
 *           and bounds: from --check-config, before any init at start-up,
 *           and on SIGHUP against the new configuration before it
 *           replaces the old one. No state yet. Optional.
 *   init    every module, in dependency order (providers of a service
 *           before its users, configuration order otherwise): read config,
 *           register services, topics, subscriptions and metrics.
 *           Mandatory.
 *   start   in dependency order (providers before users of the services
 *           they declare): look up services, open listeners, arm timers.
 *   reload  on SIGHUP, after the whole new configuration validated (an
 *           invalid one is refused and the old values stay): re-read
 *           config values. A failing reload is logged and counted; the
 *           new values stay in force for every module. Then the host
 *           publishes topic "host.reload" (type "ph.reload/1", no
 *           payload). Optional.
 *   stop    on SIGTERM/SIGINT, in reverse start order: stop accepting and
 *           drain. Return 0 when done, PH_STOP_PENDING to finish later with
 *           api->stop_done(); the host waits at most [proxyhost]
 *           drain_timeout for all of them. Optional.
 *   destroy in reverse dependency order, also after a failed init or
 *           start (stop is called only for modules whose start
 *           succeeded): free everything. Optional.
 * init/start/reload return PH_OK or a negative ph_status; a failure stops
 * the host with a message naming the module.
 *
 * A value that only the module can judge (an address, a rule, an entry
 * format) belongs in check, so that a mistake is a configuration error
 * (exit 2, "file:line: section.key: reason") rather than an init failure
 * (exit 4), and a SIGHUP carrying it is refused as a whole. Let check and
 * init call the same parsing code.
 */
#ifndef PROXYHOST_MODULE_H
#define PROXYHOST_MODULE_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/abi.h>
#include <proxyhost/config.h>
#include <proxyhost/host.h>
#include <proxyhost/log.h>
#include <proxyhost/metrics.h>

typedef struct ph_module {
  /* Version fields first: they protect the rest of the struct. */
  uint32_t magic; /* PH_MODULE_MAGIC */
  uint16_t abi_major;
  uint16_t abi_minor;
  const char *name;    /* [a-z0-9_]+, unique per process; its section */
  const char *version; /* the module's own version string */

  const char *description;
  /* NULL-terminated service names this module registers / needs. */
  const char *const *provides;
  const char *const *requires;
  /* Configuration keys of section [name], ended by PH_CONF_END. The
   * host reads the table with the ph_conf_key layout of abi_minor (a 1.1
   * module's elements have no reserved[]: config.h). */
  const ph_conf_key *config;

  /* *state receives the module's private pointer, passed to the rest. */
  int (*init)(ph_ctx *ctx, const ph_api *api, void **state);
  int (*start)(void *state);
  int (*reload)(void *state);
  int (*stop)(void *state);
  void (*destroy)(void *state);

  /* Optional, ABI 1.1 (it was reserved[0] in 1.0; a 1.0 module leaves it
   * NULL, which the host reads as "no check"). Validates the module's
   * configuration without acting on it. The host calls it on the loop
   * thread, once per module in configuration order, only after every key
   * passed the typed validation; there is no state (init may never run).
   *
   * It may read its section with api->conf_str, conf_int, conf_list_len
   * and conf_list_at (they show the configuration being checked, which on
   * SIGHUP is the new one, not yet in force), and call module_name,
   * log_enabled, log and log_rl. It must not create anything that
   * outlives the call: no sockets, files, threads, timers, fd watchers,
   * jobs, posts, services, topics, subscriptions or metrics (the host
   * refuses those calls during check: NULL / PH_ESTATE). Temporary memory
   * freed before it returns is fine.
   *
   * Returns PH_OK, or a negative ph_status (PH_EINVAL for a bad value)
   * after setting *key to the offending key's name (a string that
   * outlives the call, e.g. a literal; leave it NULL when no single key
   * is at fault) and writing a one-line, NUL-terminated reason into why
   * (whylen bytes, at least 256). The host prints
   * "file:line: section.key: reason" with the key's source. Never put a
   * PH_CONF_SENSITIVE value in the reason. Report the first bad value. */
  int (*check)(ph_ctx *ctx, const ph_api *api, const char **key, char *why,
               size_t whylen);

  void *reserved[7]; /* must be zero (designated initialisers do that) */
} ph_module;

#define PH_MODULE_HEADER(name_, version_)                                  \
  .magic = PH_MODULE_MAGIC, .abi_major = PH_ABI_MAJOR,                     \
  .abi_minor = PH_ABI_MINOR, .name = (name_), .version = (version_)

#define PROXYHOST_MODULE PH_EXPORT const ph_module proxyhost_module

#endif
