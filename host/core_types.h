/* SPDX-License-Identifier: BSD-2-Clause */
/* The host core's types (core.h declares its functions): the process-wide
 * state (ph_core) and one module instance (ph_ctx). Apart from core.h so
 * that the parts the core uses (threads.c) read these without including
 * the core's interface: no include cycle (t/integration/layers.sh). */
#ifndef PH_CORE_TYPES_H
#define PH_CORE_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include <ev.h>
#include <pthread.h>
#include <time.h>

#include <proxyhost/module.h>

#include "admin.h"
#include "buf.h"
#include "bus.h"
#include "conf.h"
#include "mailbox.h"
#include "metrics.h"
#include "routes.h"
#include "services.h"
#include "status.h"
#include "ui.h"

/* Documented in proxyhost(8) and docs/operations.md. */
enum ph_exit {
  PH_EXIT_OK = 0,      /* clean run, or a query (--version, ...) answered */
  PH_EXIT_RUNTIME = 1, /* a failure after start-up */
  PH_EXIT_CONFIG = 2,  /* bad command line or configuration */
  PH_EXIT_LOAD = 3,    /* a module could not be loaded or was refused */
  PH_EXIT_START = 4,   /* a module's init or start failed, a provider was
                          missing, or the admin listener could not bind */
  PH_EXIT_DRAIN = 5    /* a module thread did not return in time after it
                          was told to stop (threads.c); a drain cut short
                          by the deadline exits 0 with a warning */
};

enum ph_phase {
  PH_PHASE_LOAD = 0,
  PH_PHASE_INIT,
  PH_PHASE_START,
  PH_PHASE_RUN,
  PH_PHASE_STOP,
  PH_PHASE_DESTROY
};

#define PH_MAX_MODULES 64
/* Module names are [a-z0-9_], 1..64 bytes; an instance adds ".NAME" with
 * NAME [a-z0-9_], 1..32 bytes (ABI 1.2). */
#define PH_MODULE_NAME_MAX 64
#define PH_INSTANCE_NAME_MAX 32
#define PH_MAX_CLI_SETS 256

typedef struct ph_core ph_core;

/* One instance of a module: its name, section, state and lifecycle. The
 * instances of one module share its descriptor (and file). */
struct ph_ctx {
  ph_core *core;
  const ph_module *mod;
  /* The instance's full name, "socks5" (the default instance) or
   * "socks5.public": its section, its module= in logs, its module label
   * in the host's metrics and its provider name for services. */
  char *name;
  const char *instance; /* the part after '.' in name, or NULL */
  char *path; /* file it came from, or "(builtin)" */
  /* dlopen handle, on the module's first instance only; NULL for the
   * others and for modules linked in (mock) */
  void *dl;
  /* The module's key table in today's layout (loader_keys): its own
   * config, a copy of a 1.0/1.1 table (keys_owned), or an empty one. */
  const ph_conf_key *keys;
  ph_conf_key *keys_owned;
  void *state;
  int inited, started, stopped;
  int ready;         /* what the module reported */
  int stop_pending;  /* returned PH_STOP_PENDING, no stop_done yet */
  ph_thread *threads; /* its running module threads (threads.c) */
  size_t n_threads;
  ph_series *m_thread_full, *m_threads; /* {module="<name>"} */
};

struct ph_core {
  struct ev_loop *loop;
  int own_loop; /* a loop of its own (the mock host), not libev's default */
  /* The thread that created the core, which runs every callback: the
   * loop-thread-only functions compare against it (api.c). */
  pthread_t loop_thread;
  ph_conf *conf; /* in force; the core holds one reference */
  ph_registry *metrics;
  ph_mailbox *mailbox;
  struct ph_pool *pool; /* pool.h */
  ph_bus *bus;
  ph_services *services;
  ph_admin *admin;
  ph_routes *routes; /* modules' admin routes (ABI 1.3) */
  ph_panels *status; /* status panels (ABI 1.7), status.h */
  ph_ui *ui;         /* /ui/ and /v1/status; with the admin listener */
  admin_ready_fn panel_ready; /* core_ready, for the process panel */
  time_t started_wall;       /* for uptime_s */
  time_t last_reload;        /* 0: none yet */
  const char *last_reload_result; /* "ok", "refused", "failed"; NULL */
  struct ph_defers *defers; /* api->defer_* (ABI 1.6), defer.c */
  ph_topic *reload_topic;

  ph_ctx *mods[PH_MAX_MODULES];
  size_t n_mods;
  size_t order[PH_MAX_MODULES]; /* dependency order, indexes into mods */
  int ordered;                  /* order[] is valid */
  ph_ctx *initing;              /* the module whose init is running */
  ph_ctx *starting;             /* the module whose start is running */

  int phase;
  size_t stop_pending;
  int drain_expired;
  /* api->drain_cut: the first module whose own drain cut streams short
   * (its name, host-owned) and how many it closed, all modules summed. */
  const char *drain_cut_by;
  uint64_t drain_cut_left;
  int exit_code;
  ev_signal sig_term, sig_int, sig_hup, sig_usr1;
  ev_timer drain_timer;

  /* For reload: the same sources again. */
  char *config_path;
  char *config_text; /* mock host: configuration given as text */
  const char *cli_sets[PH_MAX_CLI_SETS];
  size_t n_cli_sets;
  /* Command-line flags (-name value, ABI 1.4), from argv like cli_sets:
   * applied again at every reload. */
  const char *cli_flag_names[PH_MAX_CLI_SETS];
  const char *cli_flag_values[PH_MAX_CLI_SETS];
  size_t n_cli_flags;
  char *const *env;

  uint64_t reloads_ok, reloads_failed;
  ph_series *m_mailbox_full, *m_bus_dropped, *m_bus_delivered;
  ph_series *m_reloads_ok, *m_reloads_failed, *m_modules, *m_up;
};

#endif
