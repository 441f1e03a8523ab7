/* SPDX-License-Identifier: BSD-2-Clause */
/* The mock host, in-tree face: what our own unit tests link
 * (host/libphmock.la). It drives modules through the real host API inside
 * a test program, without the daemon, signals or admin listener. The loop
 * only runs when the test asks (mock_run_for), so every test stays bounded.
 *
 * The same code, with phase checks and plain C errors, is the public API
 * of <proxyhost/mock.h> (ph_mock_*), installed as libproxyhost-mock for
 * third parties. This header adds what only the tree may use: ph_buf
 * errors and mock_core() for white-box checks. It is not installed.
 *
 *   ph_mock *m = mock_new("[proxyhost]\nmodules = /path/probe.so\n"
 *                         "[probe]\ncount = 5\n", &err);
 *   mock_init(m, &err); mock_start(m, &err);
 *   mock_run_for(m, 50);
 *   like(mock_metrics_text(m), "probe_jobs_done_total 5", "...");
 *   mock_stop(m); mock_free(m);
 *
 * One mock at a time per process (libev's default loop, the process-wide
 * logger): mock_new fails while another exists.
 */
#ifndef PH_MOCK_H
#define PH_MOCK_H

#include <proxyhost/mock.h>
#include <proxyhost/module.h>

#include "buf.h"
#include "core.h"

/* Reads the configuration text (with [proxyhost] modules = paths, if any)
 * and loads those modules. NULL with errors in err. */
ph_mock *mock_new(const char *ini_text, ph_buf *err);
/* Adds a module linked into the test program. Before mock_init. */
int mock_add(ph_mock *m, const ph_module *mod, ph_buf *err);
/* The same as the instance mod->name.instance (NULL: the default one). */
int mock_add_instance(ph_mock *m, const ph_module *mod, const char *instance,
                      ph_buf *err);
/* Validates the configuration, runs the modules' check callbacks, creates
 * the host services and runs every module's init. 0 or -1. */
int mock_init(ph_mock *m, ph_buf *err);
int mock_start(ph_mock *m, ph_buf *err);
/* Re-reads the same configuration text, or new text when not NULL. */
int mock_reload(ph_mock *m, const char *new_text);
/* Runs the loop for about ms milliseconds. */
void mock_run_for(ph_mock *m, int ms);
/* Graceful stop as on SIGTERM, waiting at most the configured drain
 * timeout. Returns 0 when every module drained, -1 when cut off. */
int mock_stop(ph_mock *m);
/* The /metrics text as the admin listener would serve it; valid until the
 * next call. */
const char *mock_metrics_text(ph_mock *m);
/* Whether /readyz would answer 200. */
int mock_ready(ph_mock *m);
/* Publishes on a topic from the loop thread as the host. */
int mock_publish(ph_mock *m, const char *topic, const char *type,
                 void *payload, ph_free_fn free_fn);
/* Sends a request to the module route serving target's path ("/v1/x?q")
 * as the admin listener would (ABI 1.3) and runs the loop until the
 * module answers, at most timeout_ms; then cancels it. Returns the
 * status: the module's, 404 (no route), 503 (the route is full), 504 (no
 * answer in time: the module's cancel ran), or a negative ph_status. */
int mock_request(ph_mock *m, const char *method, const char *target,
                 const char *authorization, const char *content_type,
                 const char *body, size_t body_len, int timeout_ms);
/* The last answer's body (NUL-terminated, *len bytes) and Content-Type
 * ("" when none); valid until the next mock_request. */
const char *mock_reply_body(ph_mock *m, size_t *len);
const char *mock_reply_type(ph_mock *m);
ph_core *mock_core(ph_mock *m);
void mock_free(ph_mock *m);

#endif
