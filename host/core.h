/* SPDX-License-Identifier: BSD-2-Clause */
/* The host core: process-wide state and the module lifecycle, shared by
 * the proxyhost executable (main.c) and the mock host (mock.c). */
#ifndef PH_CORE_H
#define PH_CORE_H

#include "core_types.h"
#include "pool.h"

/* The API table handed to every module. */
extern const ph_api ph_host_api;

/* While a module's check callback runs, on the thread running it (the
 * loop thread): the configuration being checked, which the conf_*
 * functions then read (on SIGHUP it is not in force yet), and the API
 * refuses whatever would create state. NULL otherwise. Thread-local, so
 * that helper threads keep reading their jobs' configurations and
 * posting while a SIGHUP is checked.
 *
 * The one rule for the conf_* getters (host.h): the configuration being
 * checked in a check; on a helper thread inside a job's work, the
 * generation the job holds since it was submitted (pool_job_conf); on
 * the loop thread, conf below. Any other thread is a misuse (debug.h).
 * The getters take no lock: a finalized ph_conf never changes, and a
 * replaced one is freed only when its last job's done ran (conf.h). */
extern _Thread_local ph_conf *core_checking;

/* The [proxyhost], [log] and [admin] key tables. */
extern const ph_conf_key ph_host_keys[];
extern const ph_conf_key ph_log_keys[];
extern const ph_conf_key ph_admin_keys[];

ph_core *core_new(void);
/* Reads configuration from a file or from text, applies --set entries.
 * Errors go to err (one per line). 0 or -1. */
int core_read_config(ph_core *c, const char *path, const char *text,
                     const char *const *sets, size_t n_sets,
                     char *const *env, ph_buf *err);
/* Adds command-line flags (name without its dashes, value) to the
 * configuration read by core_read_config, and keeps them for reloads.
 * The strings must outlive the core (argv). -1 with err on a malformed
 * name or too many. */
int core_add_flags(ph_core *c, const char *const *names,
                   const char *const *values, size_t n, ph_buf *err);
/* The module search path: [proxyhost] module_path, else the build tree's
 * modules when this is the build-tree binary, else the installed dir. */
size_t core_module_dirs(ph_core *c, const char **dirs, size_t max);
/* Loads [proxyhost] modules (names or paths). 0 or -1 with err. */
int core_load_modules(ph_core *c, ph_buf *err);
/* Adds a module that is linked into the caller (mock host, tests): its
 * default instance, or (instance not NULL) the instance NAME.instance. */
int core_add_module(ph_core *c, const ph_module *m, ph_buf *err);
int core_add_instance(ph_core *c, const ph_module *m, const char *instance,
                      ph_buf *err);
/* Declares every section and validates the configuration. 0 or -1. */
int core_validate(ph_core *c, ph_buf *err);
/* Checks the values only a parser can judge, on conf, which passed
 * core_validate or conf_finalize: the host's [admin] listen, then every
 * module's check callback (ABI 1.1). Reports every failure as
 * "file:line: section.key: reason". 0 or -1. */
int core_check_modules(ph_core *c, ph_conf *conf, ph_buf *err);
/* Every service a loaded module requires is provided by a loaded module;
 * else one error per need, naming the modules in the module path that
 * provide it (providers.c). 0 or -1. */
int core_check_requires(ph_core *c, ph_buf *err);
/* Creates the loop and the host services (metrics, mailbox, pool, bus,
 * services, log settings). 0 or -1. */
int core_setup(ph_core *c, ph_buf *err);
/* init of every module in order, provider checks and start order. */
int core_init_modules(ph_core *c, ph_buf *err);
int core_start_modules(ph_core *c, ph_buf *err);
/* Starts the admin listener when [admin] listen is not empty. */
int core_start_admin(ph_core *c, ph_buf *err);
/* Installs SIGTERM/SIGINT (stop), SIGHUP (reload) and SIGUSR1 (reopen
 * the log file only) watchers on the loop. */
void core_watch_signals(ph_core *c);
/* Begins a graceful stop (what SIGTERM does). */
void core_begin_stop(ph_core *c);
/* Re-reads the configuration, validates it and runs the modules' checks
 * on it, then calls every module's reload (SIGHUP). 0 or -1 (a refused
 * configuration keeps the old one; errors logged). */
int core_reload(ph_core *c);
/* Loop thread: the module's stop has ended (it returned, stop_done, or
 * it is cut off): marks it stopped and joins its module threads. */
void core_module_stopped(ph_ctx *ctx);
/* Stops (if needed), destroys every module, frees everything. */
void core_free(ph_core *c);

/* Readiness for /readyz (admin_ready_fn). */
int core_ready(void *core, ph_buf *why);
/* The same, without the reasons (for notify_when_ready). */
int core_ready_now(void *core);

/* Loader pieces (loader.c). */
int loader_check(const ph_module *m, const char *file, ph_buf *err);
/* Whether s is an instance name: [a-z0-9_], 1..PH_INSTANCE_NAME_MAX. */
int loader_valid_instance(const char *s);
/* Splits a [proxyhost] modules entry. A name entry "NAME" or
 * "NAME.INSTANCE": module gets NAME (at most modlen - 1 bytes), *instance
 * points into entry after the '.' (NULL for the default instance). A path
 * entry (it has a '/'): the default instance of the module in that file;
 * module is left empty, and a path ending in ".so.SOMETHING" is refused
 * (an instance is named, never given with a path). 0, or -1 with the
 * reason in err. */
int loader_entry(const char *entry, char *module, size_t modlen,
                 const char **instance, ph_buf *err);
int loader_open(const char *spec, const char *const *dirs, size_t n_dirs,
                ph_ctx *out, ph_buf *err);
int loader_order(ph_ctx *const *mods, size_t n, size_t *order, ph_buf *err);
/* Sets ctx->keys from ctx->mod->config, read with the element layout of
 * the module's abi_minor: a 1.0/1.1 table is converted into a copy the
 * ctx owns (keys_owned, freed with it); a 1.2 one is used in place and
 * refused when it sets a reserved field. file names the module in
 * errors. 0 or -1. */
int loader_keys(ph_ctx *ctx, const char *file, ph_buf *err);

#endif
