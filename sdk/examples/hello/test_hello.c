/* SPDX-License-Identifier: BSD-2-Clause */
/* A unit test of the hello module through the installed mock host
 * (<proxyhost/mock.h>, libproxyhost-mock): hello.c is linked into this
 * program and driven through the real host API, with no daemon, no
 * sockets and no signals. Prints TAP; exits 1 when a check fails.
 *
 *   make check     # builds with pkg-config proxyhost-mock and runs it
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <proxyhost/mock.h>
#include <proxyhost/module.h>

/* hello.c's descriptor (PROXYHOST_MODULE), linked in. */
extern const ph_module proxyhost_module;

static int n_checks, n_failed;

static int check(int cond, const char *name) {
  n_checks++;
  if (!cond)
    n_failed++;
  printf("%sok %d - %s\n", cond ? "" : "not ", n_checks, name);
  return cond;
}

/* The value of an unlabelled series, or -1 when the metrics text has
 * none (ph_mock_metric, libproxyhost-mock 3:0:3). */
static long long metric(ph_mock *m, const char *name) {
  double v;
  return ph_mock_metric(m, name, "", &v) == PH_OK ? (long long)v : -1;
}

int main(void) {
  char err[1024];
  ph_mock *m = ph_mock_new("[hello]\ngreeting = hello from a unit test\n",
                           err, sizeof(err));
  if (!check(m != NULL, "the mock host reads the configuration") ||
      !check(ph_mock_add(m, &proxyhost_module, err, sizeof(err)) == PH_OK,
             "hello is added") ||
      !check(ph_mock_init(m, err, sizeof(err)) == PH_OK, "hello initialises") ||
      !check(ph_mock_start(m, err, sizeof(err)) == PH_OK, "hello starts")) {
    printf("# %s", err);
    ph_mock_free(m);
    printf("1..%d\n", n_checks);
    return 1;
  }
  check(metric(m, "proxyhost_hello_greetings_total") == 1, "it greeted once on start");
  check(ph_mock_ready(m), "it is ready");

  /* hello greets again on every host.reload message. */
  check(ph_mock_reload(m, "[hello]\ngreeting = hello again\n", err,
                       sizeof(err)) == PH_OK,
        "a new greeting reloads");
  check(metric(m, "proxyhost_hello_greetings_total") == 2, "it greeted after the reload");

  /* The host enforces the key's declared bounds (1 to 64 bytes). */
  char too_long[128];
  memset(too_long, 'x', 100);
  too_long[100] = '\0';
  char text[256];
  snprintf(text, sizeof(text), "[hello]\ngreeting = %s\n", too_long);
  check(ph_mock_reload(m, text, err, sizeof(err)) == PH_EINVAL,
        "a 100-byte greeting is refused");
  check(strstr(err, "hello.greeting") != NULL, "the refusal names the key");
  check(metric(m, "proxyhost_hello_greetings_total") == 2,
        "no greeting for a refused configuration");

  check(ph_mock_stop(m) == PH_OK, "it stops");
  ph_mock_free(m);
  printf("1..%d\n", n_checks);
  return n_failed ? 1 : 0;
}
