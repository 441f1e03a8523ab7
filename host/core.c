/* SPDX-License-Identifier: BSD-2-Clause */
/* The module lifecycle and the host's own wiring: configuration, loading,
 * init/start in dependency order, signals, reload, drain and teardown. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <proxyhost/listener_event.h>

#include "core.h"
#include "core_panel.h"
#include "defer.h"
#include "lib/admin_token.h"
#include "log.h"
#include "notify.h"
#include "threads.h"

#ifndef PH_MODULEDIR
#define PH_MODULEDIR "/usr/local/lib/proxyhost/modules"
#endif

const ph_conf_key ph_host_keys[] = {
    PH_CONF_KEY("modules", PH_CONF_LIST, "", 0, PH_MAX_MODULES, PH_CONF_RESTART,
                NULL, "modules to load, in order (names or paths to .so files)",
                NULL),
    PH_CONF_KEY(
        "module_path", PH_CONF_LIST, "", 0, 16, PH_CONF_RESTART, NULL,
        "directories searched for modules (default: the installed module dir)",
        NULL),
    PH_CONF_KEY("drain_timeout", PH_CONF_DURATION, "10s", 0, 3600000, 0, NULL,
                "how long a graceful stop waits for modules to drain", NULL),
    PH_CONF_KEY(
        "mailbox_size", PH_CONF_INT, "4096", 1, 1048576, PH_CONF_RESTART, NULL,
        "calls and bus messages queued from other threads to the loop", NULL),
    PH_CONF_KEY("threads", PH_CONF_INT, "4", 1, 64, PH_CONF_RESTART, NULL,
                "helper threads", NULL),
    PH_CONF_KEY("job_queue", PH_CONF_INT, "1024", 1, 1048576, PH_CONF_RESTART,
                NULL, "jobs waiting for a helper thread", NULL),
    PH_CONF_KEY("user", PH_CONF_STRING, "", 0, 63, PH_CONF_RESTART, NULL,
                "started as root: the user to become once every module has "
                "started (empty: stay)",
                NULL),
    PH_CONF_KEY("group", PH_CONF_STRING, "", 0, 63, PH_CONF_RESTART, NULL,
                "with user: the group to become (empty: the user's own)",
                NULL),
    PH_CONF_END};

const ph_conf_key ph_log_keys[] = {
    PH_CONF_KEY("level", PH_CONF_ENUM, "info", 0, 0, 0, NULL,
                "least severe level logged", "error|warn|info|debug"),
    PH_CONF_KEY("format", PH_CONF_ENUM, "text", 0, 0, 0, NULL,
                "text (key=value) or json, one record per line", "text|json"),
    PH_CONF_KEY("file", PH_CONF_STRING, "", 0, 1024, 0, NULL,
                "log file (empty or - for stderr); reopened on SIGHUP and SIGUSR1", NULL),
    PH_CONF_END};

const ph_conf_key ph_admin_keys[] = {
    PH_CONF_KEY(
        "listen", PH_CONF_STRING, "127.0.0.1:9470", 0, 128, PH_CONF_RESTART,
        NULL,
        "admin HTTP address for /metrics /healthz /readyz; empty disables it",
        NULL),
    PH_CONF_KEY("max_connections", PH_CONF_INT, "16", 1, 1024, PH_CONF_RESTART,
                NULL, "concurrent admin clients", NULL),
    PH_CONF_KEY("timeout", PH_CONF_DURATION, "5s", 100, 60000, PH_CONF_RESTART,
                NULL, "deadline for one admin request", NULL),
    PH_CONF_KEY("header_timeout", PH_CONF_DURATION, "2s", 100, 60000,
                PH_CONF_RESTART, NULL,
                "a connection that has not sent its whole request (head and "
                "body) by then is closed (at most timeout)",
                NULL),
    PH_CONF_KEY("max_body", PH_CONF_SIZE, "64KiB", 1024, 1048576,
                PH_CONF_RESTART, NULL,
                "largest request body for a module's route under /v1/ "
                "and for the status page's login form",
                NULL),
    PH_CONF_KEY("token_file", PH_CONF_STRING, "", 0, 1024, 0, NULL,
                "the admin token for the status page (/ui/) and GET "
                "/v1/status: a file only its owner may read, 32..256 "
                "printable characters (proxyhostctl admin-token new); "
                "empty: both answer 404; read again on SIGHUP",
                NULL),
    PH_CONF_KEY("session_ttl", PH_CONF_DURATION, "30m", 60000, 86400000, 0,
                NULL, "a status page login lasts this long", NULL),
    PH_CONF_KEY("max_sessions", PH_CONF_INT, "16", 1, 256, 0, NULL,
                "status page sessions at once; a login beyond drops the "
                "oldest",
                NULL),
    PH_CONF_KEY("status_rows", PH_CONF_INT, "50", 1, 500, 0, NULL,
                "rows per page of a status table (the largest limit of "
                "/v1/status)",
                NULL),
    PH_CONF_KEY("login_failures", PH_CONF_INT, "10", 1, 1000, 0, NULL,
                "failed status page logins a minute; beyond, the login "
                "form answers 429 until the minute has passed",
                NULL),
    PH_CONF_END};

static const char *const reserved_sections[] = {"proxyhost", "log", "admin",
                                                NULL};

ph_core *core_new(void) {
  ph_core *c = calloc(1, sizeof(*c));
  if (!c)
    return NULL;
  c->exit_code = PH_EXIT_OK;
  c->routes = routes_new();
  c->status = status_new();
  if (!c->routes || !c->status || core_panel_register(c, core_ready) != PH_OK) {
    routes_free(c->routes);
    status_free(c->status);
    free(c);
    return NULL;
  }
  c->started_wall = time(NULL);
  /* The thread that drives the core; core_setup confirms it. Set here so
   * that check and --check-config, before any loop, know it too. */
  c->loop_thread = pthread_self();
  return c;
}

static int load_sources(ph_conf *conf, const char *path, const char *text,
                        const char *const *sets, size_t n_sets,
                        ph_buf *err) {
  int rc = 0;
  if (text)
    rc = conf_load_string(conf, "(config)", text, err);
  else if (path)
    rc = conf_load_file(conf, path, err);
  for (size_t i = 0; i < n_sets; i++)
    if (conf_set_cli(conf, sets[i], err) < 0)
      rc = -1;
  return rc;
}

int core_read_config(ph_core *c, const char *path, const char *text,
                     const char *const *sets, size_t n_sets,
                     char *const *env, ph_buf *err) {
  if (n_sets > PH_MAX_CLI_SETS) {
    buf_printf(err, "--set: at most %d assignments\n", PH_MAX_CLI_SETS);
    return -1;
  }
  c->conf = conf_new();
  if (!c->conf)
    return -1;
  free(c->config_path);
  free(c->config_text);
  c->config_path = path ? strdup(path) : NULL;
  c->config_text = text ? strdup(text) : NULL;
  for (size_t i = 0; i < n_sets; i++)
    c->cli_sets[i] = sets[i];
  c->n_cli_sets = n_sets;
  c->env = env;
  return load_sources(c->conf, path, text, sets, n_sets, err);
}

int core_add_flags(ph_core *c, const char *const *names,
                   const char *const *values, size_t n, ph_buf *err) {
  if (c->n_cli_flags + n > PH_MAX_CLI_SETS) {
    buf_printf(err, "command line: at most %d flags\n", PH_MAX_CLI_SETS);
    return -1;
  }
  int rc = 0;
  for (size_t i = 0; i < n; i++) {
    if (conf_set_flag(c->conf, names[i], values[i], err) < 0) {
      rc = -1;
      continue;
    }
    c->cli_flag_names[c->n_cli_flags] = names[i];
    c->cli_flag_values[c->n_cli_flags++] = values[i];
  }
  return rc;
}

/* Splits a raw comma list into trimmed items, in place. */
static size_t split_list(char *s, const char **items, size_t max) {
  size_t n = 0;
  for (char *tok = strtok(s, ","); tok && n < max; tok = strtok(NULL, ",")) {
    while (*tok == ' ' || *tok == '\t')
      tok++;
    char *end = tok + strlen(tok);
    while (end > tok && (end[-1] == ' ' || end[-1] == '\t'))
      *--end = '\0';
    if (*tok)
      items[n++] = tok;
  }
  return n;
}

/* Whether this process is the binary of a build tree (not an installed
 * copy): BUILD/host/proxyhost next to BUILD/config.status. Then it finds
 * the modules built next to it, in BUILD/modules (into dir). Found at run
 * time, so no build path is compiled into the installed binaries. */
static int build_tree_moduledir(char *dir, size_t len) {
  char self[PATH_MAX], probe[PATH_MAX + 32];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0)
    return 0;
  self[n] = '\0';
  char *slash = strrchr(self, '/');
  if (!slash || strcmp(slash, "/proxyhost") != 0)
    return 0;
  *slash = '\0';
  slash = strrchr(self, '/');
  if (!slash || strcmp(slash, "/host") != 0)
    return 0;
  *slash = '\0';
  struct stat st;
  snprintf(probe, sizeof(probe), "%s/config.status", self);
  if (stat(probe, &st) != 0 || !S_ISREG(st.st_mode))
    return 0;
  snprintf(probe, sizeof(probe), "%s/modules", self);
  if (stat(probe, &st) != 0 || !S_ISDIR(st.st_mode))
    return 0;
  return snprintf(dir, len, "%s", probe) < (int)len;
}

size_t core_module_dirs(ph_core *c, const char **dirs, size_t max) {
  static char buf[4096];
  const char *raw = conf_raw(c->conf, "proxyhost", "module_path", c->env);
  if (raw && *raw) {
    snprintf(buf, sizeof(buf), "%s", raw);
    size_t n = split_list(buf, dirs, max);
    if (n)
      return n;
  }
  static char built[PATH_MAX];
  if (max > 0 && build_tree_moduledir(built, sizeof(built))) {
    dirs[0] = built;
    return 1;
  }
  if (max == 0)
    return 0;
  dirs[0] = PH_MODULEDIR;
  return 1;
}

/* The loaded instance of module `module` that others share (its first),
 * or NULL. */
static ph_ctx *module_loaded(ph_core *c, const char *module) {
  for (size_t i = 0; i < c->n_mods; i++)
    if (strcmp(c->mods[i]->mod->name, module) == 0)
      return c->mods[i];
  return NULL;
}

/* Gives ctx its full name: the module's, or "module.instance". */
static int name_ctx(ph_ctx *ctx, const char *instance, ph_buf *err) {
  size_t n = strlen(ctx->mod->name) + 1 + (instance ? strlen(instance) : 0);
  ctx->name = malloc(n + 1);
  if (!ctx->name) {
    buf_puts(err, "out of memory\n");
    return -1;
  }
  snprintf(ctx->name, n + 1, "%s%s%s", ctx->mod->name, instance ? "." : "",
           instance ? instance : "");
  ctx->instance = instance ? ctx->name + strlen(ctx->mod->name) + 1 : NULL;
  return 0;
}

static int add_ctx(ph_core *c, ph_ctx *ctx, const char *instance,
                   ph_buf *err) {
  for (const char *const *r = reserved_sections; *r; r++)
    if (strcmp(ctx->mod->name, *r) == 0) {
      buf_printf(err, "%s: module name \"%s\" is reserved for the host\n",
                 ctx->path, ctx->mod->name);
      return -1;
    }
  ph_ctx *first = module_loaded(c, ctx->mod->name);
  if (first && first->mod != ctx->mod) {
    /* Every instance of a module runs the one descriptor. */
    buf_printf(err,
               "%s: duplicate module name \"%s\" (already loaded from %s; "
               "every instance of a module comes from one file)\n",
               ctx->path, ctx->mod->name, first->path);
    return -1;
  }
  if (name_ctx(ctx, instance, err) < 0)
    return -1;
  for (size_t i = 0; i < c->n_mods; i++)
    if (strcmp(c->mods[i]->name, ctx->name) == 0) {
      buf_printf(err,
                 "%s: duplicate module name \"%s\" (already loaded from "
                 "%s)\n",
                 ctx->path, ctx->name, c->mods[i]->path);
      return -1;
    }
  if (c->n_mods >= PH_MAX_MODULES) {
    buf_printf(err, "at most %d modules\n", PH_MAX_MODULES);
    return -1;
  }
  if (loader_keys(ctx, ctx->path, err) < 0)
    return -1;
  ctx->core = c;
  ctx->ready = 1;
  c->mods[c->n_mods++] = ctx;
  return 0;
}

static void ctx_free(ph_ctx *ctx) {
  if (!ctx)
    return;
  if (ctx->dl)
    dlclose(ctx->dl);
  free(ctx->keys_owned);
  free(ctx->name);
  free(ctx->path);
  free(ctx);
}

/* One [proxyhost] modules entry: a path (the default instance of the
 * module in that file), or NAME or NAME.INSTANCE, searched in the module
 * path; the file is opened once for all the instances of NAME. */
static int load_entry(ph_core *c, const char *entry, const char *const *dirs,
                      size_t n_dirs, ph_buf *err) {
  char module[PH_MODULE_NAME_MAX + 1];
  const char *instance = NULL;
  int is_path = strchr(entry, '/') != NULL;
  ph_ctx *ctx = calloc(1, sizeof(*ctx));
  if (!ctx)
    return -1;
  int rc = loader_entry(entry, module, sizeof(module), &instance, err);
  ph_ctx *first = rc == 0 && !is_path ? module_loaded(c, module) : NULL;
  if (rc < 0) {
    /* reported */
  } else if (first) {
    ctx->mod = first->mod;
    ctx->path = strdup(first->path);
    rc = ctx->path ? 0 : -1;
  } else {
    rc = loader_open(is_path ? entry : module, dirs, n_dirs, ctx, err);
    /* The same file named twice (a path, then a name): one handle. */
    ph_ctx *same = rc == 0 ? module_loaded(c, ctx->mod->name) : NULL;
    if (same && same->mod == ctx->mod) {
      dlclose(ctx->dl);
      ctx->dl = NULL;
    }
  }
  if (rc == 0)
    rc = add_ctx(c, ctx, instance, err);
  if (rc < 0)
    ctx_free(ctx);
  return rc;
}

int core_load_modules(ph_core *c, ph_buf *err) {
  const char *raw = conf_raw(c->conf, "proxyhost", "modules", c->env);
  if (!raw)
    return 0;
  char *copy = strdup(raw);
  if (!copy)
    return -1;
  const char *names[PH_MAX_MODULES + 1];
  size_t n = split_list(copy, names, PH_MAX_MODULES + 1);
  const char *dirs[16];
  size_t n_dirs = core_module_dirs(c, dirs, 16);
  int rc = 0;
  if (n > PH_MAX_MODULES) {
    buf_printf(err, "proxyhost.modules: at most %d modules\n", PH_MAX_MODULES);
    rc = -1;
    n = 0;
  }
  for (size_t i = 0; i < n; i++)
    if (load_entry(c, names[i], dirs, n_dirs, err) < 0)
      rc = -1;
  free(copy);
  return rc;
}

int core_add_instance(ph_core *c, const ph_module *m, const char *instance,
                      ph_buf *err) {
  if (loader_check(m, "(builtin)", err) < 0)
    return -1;
  if (instance && !loader_valid_instance(instance)) {
    buf_printf(err,
               "(builtin): module %s: invalid instance name \"%.40s\" (use "
               "[a-z0-9_], 1-%d bytes)\n",
               m->name, instance, PH_INSTANCE_NAME_MAX);
    return -1;
  }
  ph_ctx *ctx = calloc(1, sizeof(*ctx));
  if (!ctx)
    return -1;
  ctx->mod = m;
  ctx->path = strdup("(builtin)");
  if (!ctx->path || add_ctx(c, ctx, instance, err) < 0) {
    ctx_free(ctx);
    return -1;
  }
  return 0;
}

int core_add_module(ph_core *c, const ph_module *m, ph_buf *err) {
  return core_add_instance(c, m, NULL, err);
}

static int declare_all(ph_core *c, ph_conf *conf) {
  if (conf_declare(conf, "proxyhost", ph_host_keys) < 0 ||
      conf_declare(conf, "log", ph_log_keys) < 0 ||
      conf_declare(conf, "admin", ph_admin_keys) < 0)
    return -1;
  for (size_t i = 0; i < c->n_mods; i++) {
    if (conf_declare(conf, c->mods[i]->name, c->mods[i]->keys) < 0)
      return -1;
  }
  return 0;
}

int core_validate(ph_core *c, ph_buf *err) {
  if (declare_all(c, c->conf) < 0) {
    buf_puts(err, "internal error: could not declare configuration\n");
    return -1;
  }
  return conf_finalize(c->conf, c->env, err);
}

#define CHECK_WHY_MAX 512

_Thread_local ph_conf *core_checking;

int core_check_modules(ph_core *c, ph_conf *conf, ph_buf *err) {
  int rc = 0;
  /* The host's own value that only a parser can judge. */
  const char *admin_listen = conf_str(conf, "admin", "listen");
  char awhy[CHECK_WHY_MAX];
  if (admin_listen && *admin_listen &&
      admin_check_listen(admin_listen, awhy, sizeof(awhy)) < 0) {
    conf_where(conf, "admin", "listen", err);
    buf_printf(err, "admin.listen: %s\n", awhy);
    rc = -1;
  }
  const char *token_file = conf_str(conf, "admin", "token_file");
  if (token_file && *token_file) {
    admin_token t;
    if (admin_token_load(token_file, &t, awhy, sizeof(awhy)) < 0) {
      conf_where(conf, "admin", "token_file", err);
      buf_printf(err, "admin.token_file: %s\n", awhy);
      rc = -1;
    }
    admin_token_wipe(&t);
  }
  for (size_t i = 0; i < c->n_mods; i++) {
    ph_ctx *ctx = c->mods[i];
    if (!ctx->mod->check)
      continue; /* built for ABI 1.0, or nothing to check */
    const char *key = NULL;
    char why[CHECK_WHY_MAX] = "";
    core_checking = conf;
    int r = ctx->mod->check(ctx, &ph_host_api, &key, why, sizeof(why));
    core_checking = NULL;
    if (r == PH_OK)
      continue;
    /* One line per error, whatever the module wrote. */
    why[sizeof(why) - 1] = '\0';
    for (char *p = why; *p; p++)
      if ((unsigned char)*p < 0x20)
        *p = ' ';
    if (key && !*key)
      key = NULL;
    conf_where(conf, ctx->name, key, err);
    buf_printf(err, "%s%s%s: ", ctx->name, key ? "." : "",
               key ? key : "");
    if (why[0])
      buf_printf(err, "%s\n", why);
    else
      buf_printf(err, "invalid value (check status %d)\n", r);
    rc = -1;
  }
  return rc;
}

/* Opens [log] file (again: SIGHUP is how rotation asks). When it cannot
 * be opened the log stays where it was, and err (NULL: the log) gets
 * "file:line: log.file: cannot open PATH: reason". 0 or -1. */
static int open_log_file(ph_conf *conf, ph_buf *err) {
  const char *path = conf_str(conf, "log", "file");
  if (log_open(path) == 0)
    return 0;
  int e = errno;
  if (err) {
    conf_where(conf, "log", "file", err);
    buf_printf(err, "log.file: cannot open %s: %s\n", path, strerror(e));
  } else {
    ph_log_field f[] = {PH_STR("path", path), PH_STR("reason", strerror(e))};
    log_write(NULL, PH_LOG_ERROR,
              "cannot open the log file; still logging to the previous one",
              f, 2);
  }
  return -1;
}

static int apply_log_settings(ph_conf *conf, ph_buf *err) {
  log_configure(log_level_parse(conf_str(conf, "log", "level")),
                log_format_parse(conf_str(conf, "log", "format")));
  return open_log_file(conf, err);
}

static ph_metric *host_metric(ph_core *c, const ph_metric_def *d) {
  ph_buf err;
  buf_init(&err, 1024);
  ph_metric *m = metrics_register(c->metrics, d, &err);
  if (!m) {
    ph_log_field f[] = {PH_STR("reason", err.data ? err.data : "")};
    log_write(NULL, PH_LOG_ERROR, "host metric refused", f, 1);
  }
  buf_free(&err);
  return m;
}

static ph_series *host_counter(ph_core *c, const char *name,
                               const char *help) {
  ph_metric_def d = {name, help, PH_METRIC_COUNTER, NULL, 0, NULL, 0};
  ph_metric *m = host_metric(c, &d);
  return m ? metrics_series(m, NULL) : NULL;
}

/* Series per module: the label's values are the modules loaded. */
static void register_module_metrics(ph_core *c) {
  if (c->n_mods == 0)
    return;
  const char *names[PH_MAX_MODULES + 1];
  for (size_t i = 0; i < c->n_mods; i++)
    names[i] = c->mods[i]->name;
  names[c->n_mods] = NULL;
  ph_label_def module_label[] = {{"module", names}};
  ph_metric_def fd = {
      "proxyhost_thread_queue_full_total",
      "Posts to a module thread's own delivery queue refused: queue full",
      PH_METRIC_COUNTER, module_label, 1, NULL, 0};
  ph_metric_def td = {"proxyhost_module_threads", "Module threads running",
                      PH_METRIC_GAUGE, module_label, 1, NULL, 0};
  ph_metric *fm = host_metric(c, &fd), *tm = host_metric(c, &td);
  for (size_t i = 0; i < c->n_mods; i++) {
    const char *v[] = {c->mods[i]->name};
    c->mods[i]->m_thread_full = fm ? metrics_series(fm, v) : NULL;
    c->mods[i]->m_threads = tm ? metrics_series(tm, v) : NULL;
  }
}

static void register_host_metrics(ph_core *c) {
  c->m_mailbox_full = host_counter(
      c, "proxyhost_mailbox_full_total",
      "Posts to the loop refused because the mailbox was full");
  c->m_bus_dropped = host_counter(
      c, "proxyhost_bus_dropped_total",
      "Bus messages posted from other threads refused: mailbox full");
  c->m_bus_delivered = host_counter(c, "proxyhost_bus_deliveries_total",
                                    "Bus handler invocations");
  static const char *const results[] = {"ok", "failed", NULL};
  static const ph_label_def result_label[] = {{"result", results}};
  ph_metric_def rd = {"proxyhost_reloads_total",
                      "Configuration reloads (SIGHUP) by result",
                      PH_METRIC_COUNTER, result_label, 1, NULL, 0};
  ph_metric *rm = host_metric(c, &rd);
  const char *ok[] = {"ok"}, *failed[] = {"failed"};
  c->m_reloads_ok = rm ? metrics_series(rm, ok) : NULL;
  c->m_reloads_failed = rm ? metrics_series(rm, failed) : NULL;
  ph_metric_def md = {"proxyhost_modules", "Modules loaded",
                      PH_METRIC_GAUGE, NULL, 0, NULL, 0};
  ph_metric *mm = host_metric(c, &md);
  c->m_modules = mm ? metrics_series(mm, NULL) : NULL;
  if (c->m_modules)
    metrics_gauge_set(c->m_modules, (double)c->n_mods);
  static const char *const versions[] = {PACKAGE_VERSION, NULL};
  static const char *const abis[] = {PH_ABI_STRING, NULL};
  static const ph_label_def info_labels[] = {{"version", versions},
                                             {"abi", abis}};
  ph_metric_def id = {"proxyhost_build_info", "Version and SDK ABI, value 1",
                      PH_METRIC_GAUGE, info_labels, 2, NULL, 0};
  ph_metric *im = host_metric(c, &id);
  const char *iv[] = {PACKAGE_VERSION, PH_ABI_STRING};
  if (im)
    metrics_gauge_set(metrics_series(im, iv), 1);
  register_module_metrics(c);
}

int core_setup(ph_core *c, ph_buf *err) {
  /* A log file that cannot be opened at start-up stops it: the operator
   * asked for that file (exit 1, before anything is created). */
  if (apply_log_settings(c->conf, err) < 0)
    return -1;
  /* proxyhost takes the default loop (it alone may watch signals); a mock
   * host takes one of its own, so that several run in one process. */
  c->loop = c->own_loop ? ev_loop_new(EVFLAG_AUTO) : ev_default_loop(EVFLAG_AUTO);
  if (!c->loop) {
    buf_puts(err, "cannot create the event loop\n");
    return -1;
  }
  c->loop_thread = pthread_self();
  c->metrics = metrics_new();
  if (!c->metrics)
    return -1;
  register_host_metrics(c);
  c->mailbox = mailbox_new(
      c->loop, (size_t)conf_int(c->conf, "proxyhost", "mailbox_size"),
      c->m_mailbox_full);
  c->pool = pool_new(c->loop,
                     (unsigned)conf_int(c->conf, "proxyhost", "threads"),
                     (size_t)conf_int(c->conf, "proxyhost", "job_queue"));
  c->services = services_new();
  c->defers = defers_new(c->loop);
  c->bus = c->mailbox ? bus_new(c->mailbox, c->m_bus_dropped,
                                c->m_bus_delivered)
                      : NULL;
  if (!c->mailbox || !c->pool || !c->services || !c->defers || !c->bus) {
    buf_puts(err, "cannot start host services (out of memory or threads)\n");
    return -1;
  }
  c->reload_topic = bus_topic(c->bus, "host.reload", "ph.reload/1");
  return 0;
}

/* Each module's declared provides must be registered during its init. */
static int check_provides(ph_core *c, ph_buf *err) {
  int rc = 0;
  for (size_t i = 0; i < c->n_mods; i++)
    for (const char *const *p = c->mods[i]->mod->provides; p && *p; p++)
      if (services_owner(c->services, *p, c->mods[i]->name) != c->mods[i]) {
        buf_printf(err,
                   "module %s declares it provides \"%s\" but did not "
                   "register it in init\n",
                   c->mods[i]->name, *p);
        rc = -1;
      }
  return rc;
}

int core_init_modules(ph_core *c, ph_buf *err) {
  if (loader_order(c->mods, c->n_mods, c->order, err) < 0)
    return -1;
  c->phase = PH_PHASE_INIT;
  c->ordered = 1;
  for (size_t k = 0; k < c->n_mods; k++) {
    ph_ctx *ctx = c->mods[c->order[k]];
    c->initing = ctx;
    int rc = ctx->mod->init(ctx, &ph_host_api, &ctx->state);
    c->initing = NULL;
    threads_release(ctx); /* the threads it started may run now */
    ctx->inited = 1; /* destroy runs even after a failed init */
    if (rc != PH_OK) {
      buf_printf(err, "module %s: init failed (status %d)\n", ctx->name,
                 rc);
      return -1;
    }
  }
  return check_provides(c, err);
}

/* Tells connectors about the admin listener (topic net.listener), so
 * their default policy refuses to dial it like the frontends' listeners. */
static void announce_admin(ph_core *c) {
  ph_topic *t = bus_find(c->bus, PH_LISTENER_TOPIC);
  struct sockaddr_storage ss;
  socklen_t len;
  if (!t || strcmp(bus_topic_type(t), PH_LISTENER_TYPE) != 0 || !c->admin ||
      admin_addr(c->admin, &ss, &len) < 0 ||
      len > sizeof(((ph_listener_event *)0)->addr))
    return;
  ph_listener_event *ev = calloc(1, sizeof(*ev));
  if (!ev)
    return;
  ev->size = sizeof(*ev);
  ev->bound = 1;
  ev->addrlen = (uint32_t)len;
  memcpy(ev->addr, &ss, len);
  bus_publish(c->bus, t, ev, free);
}

int core_start_modules(ph_core *c, ph_buf *err) {
  c->phase = PH_PHASE_START;
  announce_admin(c);
  for (size_t k = 0; k < c->n_mods; k++) {
    ph_ctx *ctx = c->mods[c->order[k]];
    c->starting = ctx;
    int rc = ctx->mod->start ? ctx->mod->start(ctx->state) : PH_OK;
    c->starting = NULL;
    threads_release(ctx);
    if (rc != PH_OK) {
      buf_printf(err, "module %s: start failed (status %d)\n",
                 ctx->name, rc);
      return -1;
    }
    ctx->started = 1;
    ph_log_field f[] = {PH_STR("name", ctx->name),
                        PH_STR("version", ctx->mod->version
                                              ? ctx->mod->version
                                              : "")};
    log_write(NULL, PH_LOG_DEBUG, "module started", f, 2);
  }
  c->phase = PH_PHASE_RUN;
  return 0;
}

int core_ready(void *arg, ph_buf *why) {
  ph_core *c = arg;
  if (c->phase < PH_PHASE_RUN) {
    buf_puts(why, "starting\n");
    return 0;
  }
  if (c->phase > PH_PHASE_RUN) {
    buf_puts(why, "stopping\n");
    return 0;
  }
  /* A host that loads no module serves nothing: up (/healthz), not
   * ready. */
  if (c->n_mods == 0) {
    buf_puts(why, "no modules loaded: add them to [proxyhost] modules\n");
    return 0;
  }
  int ready = 1;
  for (size_t i = 0; i < c->n_mods; i++)
    if (!c->mods[i]->ready) {
      buf_printf(why, "module %s is not ready\n", c->mods[i]->name);
      ready = 0;
    }
  return ready;
}

/* [admin] token_file and the status page's settings, at start and at
 * every reload. */
static int configure_ui(ph_core *c, char *why, size_t whylen) {
  ui_settings st = {
      .token_file = conf_str(c->conf, "admin", "token_file"),
      .session_ttl_ms = conf_int(c->conf, "admin", "session_ttl"),
      .max_sessions = (int)conf_int(c->conf, "admin", "max_sessions"),
      .status_rows = (int)conf_int(c->conf, "admin", "status_rows"),
      .login_failures = (int)conf_int(c->conf, "admin", "login_failures"),
  };
  return c->ui ? ui_configure(c->ui, &st, why, whylen) : 0;
}

int core_start_admin(ph_core *c, ph_buf *err) {
  const char *listen = conf_str(c->conf, "admin", "listen");
  if (!listen || !*listen)
    return 0;
  c->ui = ui_new(c->status, c->metrics, NULL, NULL);
  char why[CHECK_WHY_MAX];
  if (!c->ui) {
    buf_puts(err, "admin: out of memory\n");
    return -1;
  }
  if (configure_ui(c, why, sizeof(why)) < 0) {
    buf_printf(err, "admin.token_file: %s\n", why);
    return -1;
  }
  ph_admin_opts o = {
      .listen = listen,
      .max_connections = (int)conf_int(c->conf, "admin", "max_connections"),
      .timeout_ms = (int)conf_int(c->conf, "admin", "timeout"),
      .header_timeout_ms =
          (int)conf_int(c->conf, "admin", "header_timeout"),
      .max_body = (size_t)conf_int(c->conf, "admin", "max_body"),
      .routes = c->routes,
      .ui = c->ui,
      .registry = c->metrics,
      .ready = core_ready,
      .ready_arg = c,
  };
  c->admin = admin_start(c->loop, &o, err);
  if (!c->admin)
    return -1;
  ui_set_port(c->ui, admin_port(c->admin));
  ph_log_field f[] = {PH_STR("listen", listen),
                      PH_INT("port", admin_port(c->admin))};
  log_write(NULL, PH_LOG_INFO, "admin listener started", f, 2);
  return 0;
}

static void drain_expired_cb(struct ev_loop *loop, ev_timer *w, int revents) {
  (void)revents;
  ph_core *c = w->data;
  c->drain_expired = 1;
  for (size_t i = 0; i < c->n_mods; i++)
    if (c->mods[i]->stop_pending) {
      ph_log_field f[] = {PH_STR("cut_off", c->mods[i]->name)};
      log_write(NULL, PH_LOG_WARN, "drain deadline passed; module cut off",
                f, 1);
    }
  ev_break(loop, EVBREAK_ALL);
}

void core_begin_stop(ph_core *c) {
  if (c->phase == PH_PHASE_STOP) {
    log_write(NULL, PH_LOG_WARN, "second stop signal: not waiting for drain",
              NULL, 0);
    c->drain_expired = 1;
    ev_break(c->loop, EVBREAK_ALL);
    return;
  }
  if (c->phase != PH_PHASE_RUN) {
    ev_break(c->loop, EVBREAK_ALL);
    return;
  }
  c->phase = PH_PHASE_STOP;
  notify_stopping();
  log_write(NULL, PH_LOG_INFO, "stopping: draining modules", NULL, 0);
  for (size_t k = c->n_mods; k-- > 0;) {
    ph_ctx *ctx = c->mods[c->order[k]];
    if (!ctx->started || ctx->stopped || !ctx->mod->stop) {
      core_module_stopped(ctx);
      continue;
    }
    /* Counted before the call: a module may call stop_done from stop. */
    ctx->stop_pending = 1;
    c->stop_pending++;
    int rc = ctx->mod->stop(ctx->state);
    if (rc != PH_STOP_PENDING && ctx->stop_pending) {
      ctx->stop_pending = 0;
      c->stop_pending--;
      core_module_stopped(ctx);
    }
  }
  if (c->stop_pending == 0) {
    ev_break(c->loop, EVBREAK_ALL);
    return;
  }
  double deadline =
      (double)conf_int(c->conf, "proxyhost", "drain_timeout") / 1000.0;
  ev_timer_init(&c->drain_timer, drain_expired_cb, deadline, 0.);
  c->drain_timer.data = c;
  ev_timer_start(c->loop, &c->drain_timer);
}

/* Keys flagged PH_CONF_RESTART are read once at start: a reload that
 * changes one says so, for the host's sections and every module's. */
static void warn_restart_section(const ph_conf *a, const ph_conf *b,
                                 const char *sec, const ph_conf_key *keys) {
  for (const ph_conf_key *k = keys; k && k->name; k++) {
    if (!(k->flags & PH_CONF_RESTART))
      continue;
    const char *x = conf_str(a, sec, k->name), *y = conf_str(b, sec, k->name);
    if (strcmp(x ? x : "", y ? y : "") != 0) {
      ph_log_field f[] = {PH_STR("section", sec), PH_STR("key", k->name)};
      log_write(NULL, PH_LOG_WARN,
                "this key changes only after a restart; old value kept", f,
                2);
    }
  }
}

static void warn_restart_keys(ph_core *c, const ph_conf *a,
                              const ph_conf *b) {
  warn_restart_section(a, b, "proxyhost", ph_host_keys);
  warn_restart_section(a, b, "log", ph_log_keys);
  warn_restart_section(a, b, "admin", ph_admin_keys);
  for (size_t i = 0; i < c->n_mods; i++)
    warn_restart_section(a, b, c->mods[i]->name, c->mods[i]->keys);
}

int core_reload(ph_core *c) {
  ph_buf err;
  buf_init(&err, 65536);
  ph_conf *next = conf_new();
  int rc = next ? 0 : -1;
  if (rc == 0)
    rc = load_sources(next, c->config_path, c->config_text, c->cli_sets,
                      c->n_cli_sets, &err);
  for (size_t i = 0; rc == 0 && i < c->n_cli_flags; i++)
    rc = conf_set_flag(next, c->cli_flag_names[i], c->cli_flag_values[i],
                       &err);
  if (rc == 0)
    rc = declare_all(c, next);
  if (rc == 0)
    rc = conf_finalize(next, c->env, &err);
  /* Values only the modules can judge, before anything is replaced. */
  if (rc == 0)
    rc = core_check_modules(c, next, &err);
  if (rc < 0) {
    ph_log_field f[] = {PH_STR("errors", err.data ? err.data : "")};
    log_write(NULL, PH_LOG_ERROR,
              "reload refused: configuration invalid; keeping the old one",
              f, 1);
    conf_free(next);
    buf_free(&err);
    /* Still reopen the log file: SIGHUP is also how log rotation asks. */
    open_log_file(c->conf, NULL);
    if (c->m_reloads_failed)
      metrics_inc(c->m_reloads_failed, 1);
    c->last_reload = time(NULL);
    c->last_reload_result = "refused";
    return -1;
  }
  buf_free(&err);
  warn_restart_keys(c, c->conf, next);
  ph_conf *old = c->conf;
  c->conf = next;
  apply_log_settings(next, NULL);
  int failed = 0;
  for (size_t k = 0; k < c->n_mods; k++) {
    ph_ctx *ctx = c->mods[c->order[k]];
    if (!ctx->started || !ctx->mod->reload)
      continue;
    int r = ctx->mod->reload(ctx->state);
    if (r != PH_OK) {
      ph_log_field f[] = {PH_STR("name", ctx->name), PH_INT("rc", r)};
      log_write(NULL, PH_LOG_ERROR, "module reload failed", f, 2);
      failed = 1;
    }
  }
  conf_free(old);
  char why[CHECK_WHY_MAX];
  if (configure_ui(c, why, sizeof(why)) < 0) {
    ph_log_field f[] = {PH_STR("reason", why)};
    log_write(NULL, PH_LOG_ERROR,
              "admin token not read: status page off until it is", f, 1);
    failed = 1;
  }
  bus_publish(c->bus, c->reload_topic, NULL, NULL);
  c->last_reload = time(NULL);
  c->last_reload_result = failed ? "failed" : "ok";
  if (failed) {
    if (c->m_reloads_failed)
      metrics_inc(c->m_reloads_failed, 1);
    return -1;
  }
  if (c->m_reloads_ok)
    metrics_inc(c->m_reloads_ok, 1);
  log_write(NULL, PH_LOG_INFO, "configuration reloaded", NULL, 0);
  return 0;
}

static void signal_cb(struct ev_loop *loop, ev_signal *w, int revents) {
  (void)loop;
  (void)revents;
  ph_core *c = w->data;
  if (w->signum == SIGHUP) {
    if (c->phase == PH_PHASE_RUN) {
      notify_reloading();
      core_reload(c);
      notify_when_ready(c->loop, core_ready_now, c);
    }
    return;
  }
  if (w->signum == SIGUSR1) {
    /* Log rotation alone (logrotate's postrotate): the file only, none of
     * a reload's work. */
    const char *file = conf_str(c->conf, "log", "file");
    if (log_open(file) < 0) {
      ph_log_field f[] = {PH_STR("file", file), PH_STR("error", strerror(errno))};
      log_write(NULL, PH_LOG_ERROR, "cannot reopen the log file", f, 2);
    } else {
      log_write(NULL, PH_LOG_INFO, "log file reopened", NULL, 0);
    }
    return;
  }
  core_begin_stop(c);
}

int core_ready_now(void *core) {
  ph_buf why;
  buf_init(&why, 1024);
  int r = core_ready(core, &why);
  buf_free(&why);
  return r;
}

void core_watch_signals(ph_core *c) {
  signal(SIGPIPE, SIG_IGN);
  ev_signal_init(&c->sig_term, signal_cb, SIGTERM);
  ev_signal_init(&c->sig_int, signal_cb, SIGINT);
  ev_signal_init(&c->sig_hup, signal_cb, SIGHUP);
  ev_signal_init(&c->sig_usr1, signal_cb, SIGUSR1);
  c->sig_term.data = c->sig_int.data = c->sig_hup.data = c;
  c->sig_usr1.data = c;
  ev_signal_start(c->loop, &c->sig_term);
  ev_signal_start(c->loop, &c->sig_int);
  ev_signal_start(c->loop, &c->sig_hup);
  ev_signal_start(c->loop, &c->sig_usr1);
}

void core_module_stopped(ph_ctx *ctx) {
  ctx->stopped = 1;
  threads_join_all(ctx);
}

/* Also for the modules the drain deadline cut off, and those whose init
 * ran but whose start did not: their threads are joined here too. */
static void stop_remaining(ph_core *c) {
  if (!c->ordered)
    return;
  for (size_t k = c->n_mods; k-- > 0;) {
    ph_ctx *ctx = c->mods[c->order[k]];
    if (ctx->started && !ctx->stopped && !ctx->stop_pending &&
        ctx->mod->stop)
      ctx->mod->stop(ctx->state);
    core_module_stopped(ctx);
  }
}

void core_free(ph_core *c) {
  if (!c)
    return;
  if (c->loop) {
    if (c->phase >= PH_PHASE_START)
      stop_remaining(c);
    ev_timer_stop(c->loop, &c->drain_timer);
    if (ev_is_active(&c->sig_term)) {
      ev_signal_stop(c->loop, &c->sig_term);
      ev_signal_stop(c->loop, &c->sig_int);
      ev_signal_stop(c->loop, &c->sig_hup);
      ev_signal_stop(c->loop, &c->sig_usr1);
    }
  }
  /* No thread outlives its module, and none may still post while the
   * pool and the mailbox go away. */
  for (size_t k = c->n_mods; k-- > 0;)
    threads_join_all(c->mods[c->ordered ? c->order[k] : k]);
  if (c->admin)
    admin_stop(c->admin);
  c->admin = NULL;
  ui_free(c->ui);
  c->ui = NULL;
  /* Requests no listener will answer (the mock host's): their modules
   * hear of it while they exist. */
  routes_cancel_all(c->routes);
  /* Jobs' done callbacks and queued posts run module code: finish them
   * while the modules still exist. */
  if (c->pool)
    pool_free(c->pool);
  c->pool = NULL;
  if (c->mailbox)
    mailbox_free(c->mailbox);
  c->mailbox = NULL;
  c->phase = PH_PHASE_DESTROY;
  /* Users before the providers of their services. */
  for (size_t k = c->n_mods; k-- > 0;) {
    ph_ctx *ctx = c->mods[c->ordered ? c->order[k] : k];
    if (c->bus)
      bus_unsubscribe_all(c->bus, ctx);
    if (ctx->inited && ctx->mod->destroy)
      ctx->mod->destroy(ctx->state);
    status_drop(c->status, ctx); /* its fill is gone */
  }
  if (c->bus)
    bus_free(c->bus);
  if (c->services)
    services_free(c->services);
  /* Before the key tables it was declared with go (conf.h); no job holds
   * it any more: the pool is gone. */
  if (c->conf)
    conf_free(c->conf);
  c->conf = NULL;
  for (size_t i = c->n_mods; i-- > 0;)
    ctx_free(c->mods[i]);
  if (c->metrics)
    metrics_free(c->metrics);
  /* After the modules' destroy, which freed their handles. */
  defers_free(c->defers);
  if (c->loop)
    ev_loop_destroy(c->loop);
  free(c->config_path);
  free(c->config_text);
  routes_free(c->routes);
  status_free(c->status);
  free(c);
}
