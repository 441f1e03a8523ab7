/* SPDX-License-Identifier: BSD-2-Clause */
/* The command line's module flags (ABI 1.4): `-name value`,
 * `--name value`, `-name=value` and `--name=value`, where name is not one
 * of the host's own options, name a module key through its .flag. They
 * are taken out of argv before getopt reads the host's options (so that
 * `-control-plane` is never read as `-c ontrol-plane`), and resolved
 * against the loaded modules' keys when the configuration is finalized. */
#include <stdio.h>
#include <string.h>

#include "argv_flags.h"

/* The host's options: long names, and the ones that take a value. */
static const struct {
  const char *name;
  int takes_value;
} host_opts[] = {{"config", 1},       {"set", 1},          {"check-config", 0},
                 {"print-config", 0}, {"list-modules", 0}, {"version", 0},
                 {"help", 0},         {"c", 1},            {"s", 1},
                 {"h", 0}};

static int host_opt(const char *name, size_t n, int *takes_value) {
  for (size_t i = 0; i < sizeof(host_opts) / sizeof(host_opts[0]); i++)
    if (strlen(host_opts[i].name) == n &&
        strncmp(host_opts[i].name, name, n) == 0) {
      *takes_value = host_opts[i].takes_value;
      return 1;
    }
  return 0;
}

int argv_take_flags(int argc, char **argv, argv_flags *out, char *err,
                    size_t errlen) {
  int w = 1;
  out->n = 0;
  for (int i = 1; i < argc; i++) {
    char *a = argv[i];
    if (strcmp(a, "--") == 0 || a[0] != '-' || a[1] == '\0') {
      /* "--" ends the options: keep it and everything after. */
      if (strcmp(a, "--") == 0) {
        while (i < argc)
          argv[w++] = argv[i++];
        break;
      }
      argv[w++] = a;
      continue;
    }
    char *name = a + (a[1] == '-' ? 2 : 1);
    size_t n = strcspn(name, "=");
    int takes_value = 0;
    if (host_opt(name, n, &takes_value)) {
      argv[w++] = a;
      /* Its value is the next word unless written as --opt=value. */
      if (takes_value && name[n] != '=' && i + 1 < argc)
        argv[w++] = argv[++i];
      continue;
    }
    if (n == 1 && a[1] != '-') { /* an unknown short option: getopt says */
      argv[w++] = a;
      continue;
    }
    if (out->n == ARGV_FLAGS_MAX) {
      snprintf(err, errlen, "at most %d module flags", ARGV_FLAGS_MAX);
      return -1;
    }
    const char *value;
    if (name[n] == '=') {
      name[n] = '\0';
      value = name + n + 1;
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      snprintf(err, errlen, "-%.64s needs a value", name);
      return -1;
    }
    out->names[out->n] = name;
    out->values[out->n++] = value;
  }
  argv[w] = NULL;
  return w;
}
