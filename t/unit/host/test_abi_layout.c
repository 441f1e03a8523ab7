/* SPDX-License-Identifier: BSD-2-Clause */
/* The SDK's layouts, as released (sdk/proxyhost/abi.h): every member's
 * offset and size and every struct's size in the installed headers, and
 * each header's version, against t/unit/host/abi_layout.inc, which
 * sdk/abi-layout.py wrote from a debug build. A layout that changed
 * without being recorded there fails here; the generator refuses to
 * record one under an unchanged version. And abi.h's changelog names the
 * current ABI with its release day, and each service at its current
 * version. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <proxyhost/abi.h>
#include <proxyhost/access.h>
#include <proxyhost/authorizer.h>
#include <proxyhost/authz_store.h>
#include <proxyhost/config.h>
#include <proxyhost/connector.h>
#include <proxyhost/host.h>
#include <proxyhost/listener_event.h>
#include <proxyhost/log.h>
#include <proxyhost/metrics.h>
#include <proxyhost/module.h>
#include <proxyhost/open_ext.h>
#include <proxyhost/open_http_forward.h>
#include <proxyhost/open_lease.h>
#include <proxyhost/open_upstream.h>
#include <proxyhost/outcome_sink.h>
#include <proxyhost/pool_store.h>
#include <proxyhost/pool_view.h>
#include <proxyhost/stream.h>
#include <proxyhost/strategy.h>
#include <proxyhost/validation.h>

#include "tap.h"

#define MEMBER_SIZE(s, m) sizeof(((struct s *)0)->m)

static int n_members, n_structs, bad;

static void layout(const char *h, const char *s, const char *m, size_t off,
                   size_t size, size_t want_off, size_t want_size) {
  n_members++;
  if (off == want_off && size == want_size)
    return;
  bad++;
  printf("# %s.h: struct %s member %s at %zu size %zu, recorded %zu size "
         "%zu\n",
         h, s, m, off, size, want_off, want_size);
}

static void size_of(const char *h, const char *s, size_t size,
                    size_t want) {
  n_structs++;
  if (size == want)
    return;
  bad++;
  printf("# %s.h: sizeof(struct %s) %zu, recorded %zu\n", h, s, size, want);
}

/* The service name a contract header declares, for the changelog. */
static const char *service_of(const char *h) {
  static const struct {
    const char *h, *service;
  } names[] = {{"connector", PH_CONNECTOR_SERVICE},
               {"authorizer", PH_AUTHORIZER_SERVICE},
               {"access", PH_ACCESS_SERVICE},
               {"validation", PH_VALIDATION_SERVICE},
               {"authz_store", PH_AZ_STORE_SERVICE},
               {"pool_view", PH_POOL_VIEW_SERVICE},
               {"pool_store", PH_POOL_STORE_SERVICE},
               {"outcome_sink", PH_OUTCOME_SINK_SERVICE},
               {"strategy", PH_STRATEGY_SERVICE}};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
    if (strcmp(names[i].h, h) == 0)
      return names[i].service;
  return NULL; /* the host's own headers: the ABI's version */
}

/* Header h is at the version recorded (maj.min), and a service's version
 * is named in the changelog ("connector 1.4"). */
static void version_of(const char *h, int maj_h, int min_h, int maj, int min,
                       const char *log) {
  char what[160];
  snprintf(what, sizeof(what), "%s.h is at version %d.%d as recorded", h,
           maj, min);
  ok(maj_h == maj && min_h == min, what);
  if (maj_h != maj || min_h != min)
    printf("#   the header says %d.%d\n", maj_h, min_h);
  const char *service = service_of(h);
  if (!service)
    return;
  char entry[96];
  snprintf(entry, sizeof(entry), "%s %d.%d", service, maj_h, min_h);
  snprintf(what, sizeof(what), "abi.h's changelog names %s", entry);
  like(log, entry, what);
}

/* The changelog block of abi.h: *out_len bytes at the returned pointer
 * (static), or NULL. */
static const char *changelog(void) {
  static char buf[16384];
  const char *top = getenv("top_srcdir");
  char path[4096];
  snprintf(path, sizeof(path), "%s/sdk/proxyhost/abi.h", top ? top : ".");
  FILE *f = fopen(path, "r");
  if (!f)
    return NULL;
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  char *c = strstr(buf, " * Changelog");
  char *end = c ? strstr(c, "*/") : NULL;
  if (end)
    *end = '\0';
  return c;
}

int main(void) {
  plan_lazy();
  if (sizeof(void *) != 8 || sizeof(long) != 8) {
    tap_skip("the recorded layouts", "they are LP64's");
    return done_testing();
  }
  const char *log = changelog();
  ok(log != NULL, "abi.h has a changelog (top_srcdir set)");
  if (!log)
    log = "";
  /* The first entry of the changelog is the current ABI, dated. */
  const char *first = strstr(log, "\n * 1.");
  char want[64];
  snprintf(want, sizeof(want), "\n * %s (20", PH_ABI_STRING);
  ok(first && strncmp(first, want, strlen(want)) == 0,
     "the changelog's newest entry is the current ABI with its release day");
  if (first && strncmp(first, want, strlen(want)) != 0)
    printf("#   first entry:%.20s\n", first + 1);

#define PH_VERSION(h, maj_m, min_m, maj, min)                                  \
  version_of(#h, (maj_m), (min_m), (maj), (min), log);
#define PH_LAYOUT(h, s, m, off, size)                                          \
  layout(#h, #s, #m, offsetof(struct s, m), MEMBER_SIZE(s, m), (off), (size));
#define PH_SIZE(h, s, size) size_of(#h, #s, sizeof(struct s), (size));
#include "abi_layout.inc"
#undef PH_VERSION
#undef PH_LAYOUT
#undef PH_SIZE

  is_int(bad, 0, "every recorded member and struct has its recorded layout");
  ok(n_structs >= 50 && n_members >= 400,
     "the record covers every header (structs and members counted)");
  printf("# %d structs, %d members\n", n_structs, n_members);
  return done_testing();
}
