/* SPDX-License-Identifier: BSD-2-Clause */
/* proxyhost: command line, start-up sequence and exit codes. */
#include <dirent.h>
#include <dlfcn.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "argv_flags.h"
#include "core.h"
#include "log.h"
#include "notify.h"
#include "privdrop.h"

extern char **environ;

#ifndef PH_SYSCONFDIR
#define PH_SYSCONFDIR "/usr/local/etc"
#endif
#define DEFAULT_CONFIG PH_SYSCONFDIR "/proxyhost/proxyhost.ini"

enum { OPT_SET = 256, OPT_CHECK, OPT_PRINT, OPT_LIST, OPT_VERSION };

static void usage(FILE *out) {
  fprintf(out,
          "usage: proxyhost [-c FILE] [--set SECTION.KEY=VALUE]... "
          "[-FLAG VALUE]...\n"
          "                 [--check-config | --print-config | "
          "--list-modules | --version | --help]\n"
          "\n"
          "  -c, --config FILE   configuration (default %s)\n"
          "  -s, --set S.K=V     override one key (beats environment and "
          "files)\n"
          "      --check-config  validate the configuration (with the "
          "modules' checks) and exit\n"
          "      --print-config  print the effective configuration, secrets "
          "redacted\n"
          "      --list-modules  list the modules found in the module path\n"
          "      --version       print the version and SDK ABI\n"
          "  -FLAG VALUE         a module key's own flag, as --set would "
          "(-worker-id w1;\n"
          "                      also --FLAG VALUE, -FLAG=VALUE; see "
          "proxyhost-modules(5))\n"
          "\n"
          "Signals: TERM/INT stop (drain), HUP reload, USR1 reopen the "
          "log file.\n"
          "Exit codes: 0 ok (also a stop whose drain was cut short), 1 "
          "runtime failure,\n"
          "2 configuration, 3 module load, 4 module init/start, 5 a module "
          "thread\nnot returning. See proxyhost(8).\n",
          DEFAULT_CONFIG);
}

/* Whether the daemon's stderr is JSON: [log] format = json in the
 * configuration as written (also when it did not validate), for a run,
 * not for --check-config/--print-config/--list-modules, which answer a
 * person. */
static int errors_as_json(const ph_core *c) {
  const char *f = c && c->conf ? conf_raw(c->conf, "log", "format", environ)
                               : NULL;
  return f && log_format_parse(f) == PH_LOG_FMT_JSON;
}

/* Prints each line of err as "proxyhost: line", or, json, as one JSON
 * log record each (msg what, the line in "error"). */
static void print_errors(const ph_buf *err, int json, const char *what) {
  if (!err->data)
    return;
  if (json)
    log_configure(PH_LOG_ERROR, PH_LOG_FMT_JSON);
  const char *p = err->data;
  while (*p) {
    const char *nl = strchr(p, '\n');
    int n = nl ? (int)(nl - p) : (int)strlen(p);
    if (json) {
      char line[4096];
      snprintf(line, sizeof(line), "%.*s", n, p);
      ph_log_field f[] = {PH_STR("error", line)};
      log_write(NULL, PH_LOG_ERROR, what, f, 1);
    } else {
      fprintf(stderr, "proxyhost: %.*s\n", n, p);
    }
    p += n + (nl ? 1 : 0);
  }
  if (err->overflow) {
    if (json)
      log_write(NULL, PH_LOG_ERROR, "more errors not shown", NULL, 0);
    else
      fprintf(stderr, "proxyhost: (more errors not shown)\n");
  }
}

static void list_one(const char *path) {
  void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    printf("%-20s -       -    %s (cannot load: %s)\n", "?", path, dlerror());
    return;
  }
  const ph_module *m = dlsym(dl, PH_MODULE_SYMBOL);
  ph_buf err;
  buf_init(&err, 1024);
  if (m && loader_check(m, path, &err) == 0)
    printf("%-20s %-7s %u.%u  %s (%s)\n", m->name,
           m->version ? m->version : "-", (unsigned)m->abi_major,
           (unsigned)m->abi_minor, m->description ? m->description : "",
           path);
  else if (m)
    printf("%-20s -       -    refused: %s", "?", err.data ? err.data : "\n");
  else
    printf("%-20s -       -    refused: %s: no %s symbol\n", "?", path,
           PH_MODULE_SYMBOL);
  buf_free(&err);
  dlclose(dl);
}

static int ends_with_so(const char *s) {
  size_t n = strlen(s);
  return n > 3 && strcmp(s + n - 3, ".so") == 0;
}

/* Lists DIR/x.so and, in a build tree, DIR/x/.libs/x.so. */
static void list_dir(const char *dir) {
  struct dirent **ents;
  int n = scandir(dir, &ents, NULL, alphasort);
  if (n < 0)
    return;
  char path[4096];
  for (int i = 0; i < n; i++) {
    const char *e = ents[i]->d_name;
    struct stat st;
    if (e[0] != '.') {
      snprintf(path, sizeof(path), "%s/%s", dir, e);
      if (ends_with_so(e) && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
        list_one(path);
      } else if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(path, sizeof(path), "%s/%s/.libs/%s.so", dir, e, e);
        if (stat(path, &st) == 0)
          list_one(path);
      }
    }
    free(ents[i]);
  }
  free(ents);
}

int main(int argc, char **argv) {
  static const struct option opts[] = {
      {"config", required_argument, NULL, 'c'},
      {"set", required_argument, NULL, 's'},
      {"check-config", no_argument, NULL, OPT_CHECK},
      {"print-config", no_argument, NULL, OPT_PRINT},
      {"list-modules", no_argument, NULL, OPT_LIST},
      {"version", no_argument, NULL, OPT_VERSION},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  static argv_flags flags;
  char flag_err[128];
  argc = argv_take_flags(argc, argv, &flags, flag_err, sizeof(flag_err));
  if (argc < 0) {
    fprintf(stderr, "proxyhost: %s\n", flag_err);
    usage(stderr);
    return PH_EXIT_CONFIG;
  }
  const char *config = NULL;
  const char *sets[PH_MAX_CLI_SETS];
  size_t n_sets = 0;
  int action = 0, opt;
  while ((opt = getopt_long(argc, argv, "c:s:h", opts, NULL)) != -1) {
    switch (opt) {
    case 'c':
      config = optarg;
      break;
    case 's':
      if (n_sets == PH_MAX_CLI_SETS) {
        fprintf(stderr, "proxyhost: at most %d --set options\n",
                PH_MAX_CLI_SETS);
        return PH_EXIT_CONFIG;
      }
      sets[n_sets++] = optarg;
      break;
    case OPT_CHECK:
    case OPT_PRINT:
    case OPT_LIST:
    case OPT_VERSION:
      action = opt;
      break;
    case 'h':
      usage(stdout);
      return PH_EXIT_OK;
    default:
      usage(stderr);
      return PH_EXIT_CONFIG;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "proxyhost: unexpected argument \"%s\"\n", argv[optind]);
    usage(stderr);
    return PH_EXIT_CONFIG;
  }
  if (action == OPT_VERSION) {
    printf("proxyhost %s (module SDK ABI %s)\n", PACKAGE_VERSION,
           PH_ABI_STRING);
    return PH_EXIT_OK;
  }
  if (!config && !(action == OPT_LIST && access(DEFAULT_CONFIG, R_OK) != 0))
    config = DEFAULT_CONFIG;

  ph_buf err;
  buf_init(&err, 1 << 20);
  ph_core *c = core_new();
  int code = PH_EXIT_OK;
  if (!c)
    return PH_EXIT_RUNTIME;
  if (core_read_config(c, config, NULL, sets, n_sets, environ, &err) < 0 ||
      core_add_flags(c, flags.names, flags.values, flags.n, &err) < 0) {
    code = PH_EXIT_CONFIG;
    goto out;
  }
  if (action == OPT_LIST) {
    const char *dirs[16];
    size_t n = core_module_dirs(c, dirs, 16);
    for (size_t i = 0; i < n; i++)
      list_dir(dirs[i]);
    goto out;
  }
  if (core_load_modules(c, &err) < 0) {
    code = PH_EXIT_LOAD;
    goto out;
  }
  if (core_validate(c, &err) < 0) {
    code = PH_EXIT_CONFIG;
    goto out;
  }
  if (action == OPT_PRINT) {
    conf_print(c->conf, stdout);
    goto out;
  }
  /* Values only the modules can judge, and services no loaded module
   * provides: configuration errors too, found before anything is
   * created. */
  if (core_check_requires(c, &err) < 0 ||
      core_check_modules(c, c->conf, &err) < 0) {
    code = PH_EXIT_CONFIG;
    goto out;
  }
  /* [proxyhost] user/group: an unknown one is a configuration error, so
   * a root daemon never runs on as root by mistake. */
  ph_privdrop drop;
  if (privdrop_resolve(conf_str(c->conf, "proxyhost", "user"),
                       conf_str(c->conf, "proxyhost", "group"), &drop,
                       &err) < 0) {
    code = PH_EXIT_CONFIG;
    goto out;
  }
  if (action == OPT_CHECK) {
    /* Also what start-up would refuse before any module runs. */
    if (loader_order(c->mods, c->n_mods, c->order, &err) < 0) {
      code = PH_EXIT_START;
      goto out;
    }
    printf("configuration ok: %zu module(s)\n", c->n_mods);
    goto out;
  }
  if (core_setup(c, &err) < 0) {
    code = PH_EXIT_RUNTIME;
    goto out;
  }
  core_watch_signals(c);
  notify_open();
  if (core_start_admin(c, &err) < 0 || core_init_modules(c, &err) < 0 ||
      core_start_modules(c, &err) < 0) {
    code = PH_EXIT_START;
    goto out;
  }
  /* Root until here, so every listener is bound and every file opened;
   * from here on the configured user, for good (privdrop.h). */
  if (privdrop_apply(&drop, &err) < 0) {
    code = PH_EXIT_RUNTIME;
    goto out;
  }
  notify_when_ready(c->loop, core_ready_now, c);
  {
    ph_log_field f[] = {PH_STR("version", PACKAGE_VERSION),
                        PH_UINT("modules", c->n_mods),
                        PH_INT("pid", getpid())};
    log_write(NULL, PH_LOG_INFO, "proxyhost started", f, 3);
  }
  ev_run(c->loop, 0);
  /* A drain cut short (the deadline, or a second stop signal) is still a
   * stop the operator asked for: exit 0, so a service manager need not
   * special-case it; the warning and drain_cut_short say what happened.
   * (A module thread that does not return exits 5 from threads.c.) */
  code = c->exit_code;
  {
    /* Cut short by the host's drain_timeout (or a second signal), or by
     * a module's own drain deadline (api->drain_cut). */
    int cut = c->drain_expired || c->drain_cut_by;
    ph_log_field f[] = {PH_INT("exit_code", code),
                        PH_STR("drain_cut_short", cut ? "true" : "false")};
    if (c->drain_expired) {
      log_write(NULL, PH_LOG_WARN,
                "drain cut short: clients were still connected", NULL, 0);
    } else if (c->drain_cut_by) {
      ph_log_field w[] = {PH_STR("by", c->drain_cut_by),
                          PH_UINT("closed", c->drain_cut_left)};
      log_write(NULL, PH_LOG_WARN,
                "drain cut short: a module's own drain deadline closed "
                "what was still open",
                w, 2);
    }
    log_write(NULL, PH_LOG_INFO, "proxyhost stopped", f, 2);
  }
out:
  notify_close();
  print_errors(&err, action == 0 && errors_as_json(c),
               code == PH_EXIT_CONFIG ? "configuration error"
                                      : "start-up failed");
  buf_free(&err);
  core_free(c);
  return code;
}
