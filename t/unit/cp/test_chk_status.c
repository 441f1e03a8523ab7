/* SPDX-License-Identifier: BSD-2-Clause */
/* The checker's status panel (modules/checker/chk_status.c, issue 28)
 * through the mock host's ph_mock_status: its session (the first 8 hex
 * digits), max_concurrency, checks running, done and late, and
 * the results by tier and result over the last minutes. */
#include <stdio.h>
#include <string.h>

#include <proxyhost/mock.h>

#include "checker/chk_status.h"
#include "lib/clocks.h"
#include "mock_test.h"
#include "tap.h"

static chk_status ST;
static uint32_t running = 3;
static char session[64] = "0123456789abcdef0123456789abcdef";

static int k_init(ph_ctx *ctx, const ph_api *a, void **state) {
  *state = NULL;
  ST.session = session;
  ST.running = &running;
  ST.max_concurrency = 16;
  return chk_status_register(a, ctx, &ST);
}
MOCK_TEST_MODULE(chk_mod, "checker", "1.0.0", .init = k_init);

int main(void) {
  plan_lazy();
  ph_mock *mk = mock_test_boot_or_bail("", &chk_mod);
  int64_t now = mono_ms();
  chk_status_count(&ST, 1, 1, 0, now); /* basic ok */
  chk_status_count(&ST, 1, 1, 0, now);
  chk_status_count(&ST, 2, 3, 0, now); /* egress timeout */
  chk_status_count(&ST, 3, 4, 1, now); /* target checker_error, late */
  chk_status_count(&ST, 1, 2, 0, now - 10 * 60000); /* long ago */
  chk_status_count(&ST, 9, 9, 0, now); /* out of range: only done */
  const char *j = NULL;
  is_int(ph_mock_status(mk, "/v1/status/checker/checks", &j), 200,
         "the panel checks is there");
  j = j ? j : "";
  like(j, "\"session\":\"01234567\"",
       "its session's first 8 hex digits, never the whole fence id");
  like(j, "\"max_concurrency\":16", "max_concurrency");
  like(j, "\"in_flight\":3", "the checks running");
  like(j, "\"tasks_done\":6", "every check ended counted");
  like(j, "\"late\":1", "the late one");
  like(j, "[\"basic\",\"ok\",2,300]", "two BASIC ok over 300 s");
  like(j, "[\"egress\",\"timeout\",1,300]", "one EGRESS timeout");
  like(j, "[\"target\",\"checker_error\",1,300]", "one TARGET checker_error");
  ok(!strstr(j, "\"failed\""), "the BASIC failure ten minutes ago left the window");
  ph_mock_stop(mk);
  ph_mock_free(mk);
  return done_testing();
}
