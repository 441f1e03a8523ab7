/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proxyhost SDK: the mock host, for unit tests of a module.
 *
 * libproxyhost-mock runs the real host core inside a test program: the
 * configuration (from text), the loader, the module lifecycle, the event
 * loop, the helper threads, the bus, the services and the metrics
 * registry, as proxyhost runs them. There is no daemon around it: no
 * command line, no environment, no signal handlers, no admin listener.
 * The loop runs only inside ph_mock_run_for and ph_mock_stop, so a test
 * decides how long anything may take.
 *
 *   char err[1024];
 *   ph_mock *m = ph_mock_new("[hello]\ngreeting = hi\n", err, sizeof(err));
 *   if (!m || ph_mock_add(m, &proxyhost_module, err, sizeof(err)) < 0 ||
 *       ph_mock_init(m, err, sizeof(err)) < 0 ||
 *       ph_mock_start(m, err, sizeof(err)) < 0)
 *     fail(err);
 *   ph_mock_run_for(m, 50);
 *   strstr(ph_mock_metrics_text(m), "\nproxyhost_hello_greetings_total 1\n");
 *   ph_mock_stop(m);
 *   ph_mock_free(m);
 *
 * Build: cc test.c module.c $(pkg-config --cflags --libs proxyhost-mock).
 * The library exports only the ph_mock_* functions below; it is versioned
 * by its soname, apart from the module ABI (see ABI.md, "The mock host
 * library").
 *
 * Order: ph_mock_new, then ph_mock_add (or ph_mock_add_instance) for
 * each linked-in module (instance), then
 * ph_mock_init and ph_mock_start, then any number of ph_mock_run_for,
 * ph_mock_reload, ph_mock_publish, ph_mock_metrics_text and ph_mock_ready,
 * then ph_mock_stop (after which ph_mock_run_for, ph_mock_publish and the
 * getters still work); ph_mock_free at any point. A call out of this order
 * changes nothing and returns PH_ESTATE. After a failed ph_mock_init or
 * ph_mock_start only ph_mock_metrics_text, ph_mock_ready and ph_mock_free
 * are allowed.
 *
 * Threads: every call must come from one thread, the one that calls
 * ph_mock_init; it becomes the loop thread, on which the modules' loop
 * callbacks, bus handlers and job completions run (inside the ph_mock_*
 * calls). The modules' submitted jobs run on the host's helper threads, as
 * in proxyhost. Do not call ph_mock_* from inside a module's callback.
 *
 * Several at once: each ph_mock runs the host on a libev loop of its own
 * (never libev's default loop), so a test may drive several hosts, a
 * client, a server and an agent say, calling ph_mock_run_for on each in
 * turn (short slices). They share the process's logger: the [log]
 * section of the last one initialised applies to all.
 *
 * Errors: the calls that can fail for a reason worth reading take
 * `char *err, size_t errlen`. When errlen > 0 they always write err: an
 * empty string on success, otherwise the reasons, one per line, each
 * ending in '\n' (configuration errors as "file:line: section.key:
 * reason", with "(config)" as the file), truncated to errlen - 1 bytes and
 * NUL-terminated. 1024 bytes is a good size: a reason is one short line
 * (a long module path makes it longer). err may be NULL when
 * errlen is 0. Status codes are those of <proxyhost/abi.h>: PH_OK, or a
 * negative ph_status; besides the ones listed with each call, any call
 * returns PH_EINVAL for a NULL ph_mock (the getters "" and 0) and may
 * return PH_ENOMEM when memory runs out.
 *
 * Logging: records go where the configuration's [log] section says
 * (stderr by default), as in proxyhost. Signals: none are caught or
 * ignored; a test of a module that writes to sockets should ignore
 * SIGPIPE itself, as proxyhost does.
 */
#ifndef PROXYHOST_MOCK_H
#define PROXYHOST_MOCK_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/module.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One mock host. Opaque; owned by the caller from ph_mock_new to
 * ph_mock_free. */
typedef struct ph_mock ph_mock;

/* Reads the configuration from ini_text (NULL reads as empty text), with
 * the same sections and keys as proxyhost.ini, and loads the modules that
 * [proxyhost] modules names: a path (anything with a '/', relative to the
 * current directory) or a name searched in [proxyhost] module_path, else
 * in the installed module directory. Keys are not validated yet (that is
 * ph_mock_init's job, once every module is known). The text is copied.
 * Returns the new mock, or NULL with the reasons in err (a syntax error,
 * a module that cannot be loaded or is refused by the ABI rules, another
 * mock still alive, no memory). */
ph_mock *ph_mock_new(const char *ini_text, char *err, size_t errlen);

/* Adds a module linked into the test program, e.g. the module's
 * `proxyhost_module` descriptor compiled with the test. mod must stay
 * valid until ph_mock_free returns; it is checked as the loader checks a
 * .so (magic, ABI version, name, init, reserved fields) and its name must
 * be unique (its default instance; see ph_mock_add_instance). Between
 * ph_mock_new and ph_mock_init only.
 * Returns PH_OK; PH_EINVAL (mod NULL or refused, reason in err); PH_ESTATE
 * (after ph_mock_init). */
int ph_mock_add(ph_mock *m, const ph_module *mod, char *err, size_t errlen);

/* Like ph_mock_add, for the named instance NAME.instance of mod (mod->name
 * "socks5", instance "public": "socks5.public"), with its own section
 * ([socks5.public]), state and lifecycle, as [proxyhost] modules =
 * socks5.public loads it in proxyhost; instance NULL or "" adds the
 * default instance, as ph_mock_add. Call it once per instance to run
 * several instances of one module (two providers of one service, say).
 * instance is copied: [a-z0-9_], 1-32 bytes. A module loaded by
 * ph_mock_new's [proxyhost] modules gets its instances there
 * ("direct, direct.lab"). Between ph_mock_new and ph_mock_init only.
 * Returns PH_OK; PH_EINVAL (mod NULL or refused, a bad instance name, or
 * that instance already added; reason in err); PH_ESTATE (after
 * ph_mock_init). Since libproxyhost-mock 1:0:1. */
int ph_mock_add_instance(ph_mock *m, const ph_module *mod,
                         const char *instance, char *err, size_t errlen);

/* Validates every key of the configuration against the declarations of
 * the host and of every module, runs the modules' check callbacks, creates
 * the loop and the host services, then calls every module's init in
 * dependency order and checks that each registered the services it
 * declares. The calling thread becomes the loop thread.
 * Returns PH_OK; PH_EINVAL (a key, a check, a dependency or an init
 * refused, every reason in err; the mock is then only good for
 * ph_mock_free); PH_ESTATE (called twice). */
int ph_mock_init(ph_mock *m, char *err, size_t errlen);

/* Calls every module's start in dependency order; /readyz then follows the
 * modules' readiness. Does not run the loop.
 * Returns PH_OK; PH_EINVAL (a module's start failed, named in err; the mock
 * is then only good for ph_mock_free); PH_ESTATE (not right after a
 * successful ph_mock_init). */
int ph_mock_start(ph_mock *m, char *err, size_t errlen);

/* What SIGHUP does to proxyhost: reads new_text (copied), or the
 * configuration in force again when new_text is NULL, validates it and
 * runs the modules' checks on it; then replaces the configuration, calls
 * every started module's reload and publishes host.reload on the bus. The
 * bus handlers run before this returns. A refused configuration keeps the
 * old one in force and counts proxyhost_reloads_total{result="failed"}.
 * Returns PH_OK; PH_EINVAL (configuration refused, every reason in err, or
 * a module's reload failed: the new configuration is then in force and
 * the module is named in the log); PH_ESTATE (not between a successful
 * ph_mock_start and ph_mock_stop). */
int ph_mock_reload(ph_mock *m, const char *new_text, char *err,
                   size_t errlen);

/* Runs the loop for about ms milliseconds (0 to 3600000): timers, I/O,
 * posts from other threads and job completions run meanwhile. 0 runs one
 * round of whatever is ready. Returns PH_OK; PH_EINVAL (ms out of range);
 * PH_ESTATE (before a successful ph_mock_init, or after a failed
 * ph_mock_init or ph_mock_start). */
int ph_mock_run_for(ph_mock *m, int ms);

/* Graceful stop, what SIGTERM does: calls every module's stop in reverse
 * dependency order and runs the loop until each has drained, at most
 * [proxyhost] drain_timeout. Modules are destroyed later, by
 * ph_mock_free. A module's threads (ABI 1.2) are joined when its stop
 * ends, as in proxyhost; one that does not return by the drain deadline
 * ends the test process with status 5. Returns PH_OK (every module
 * drained); PH_ELIMIT (the drain deadline cut a module off); PH_ESTATE
 * (not after a successful ph_mock_start, or called twice). */
int ph_mock_stop(ph_mock *m);

/* The metrics in the Prometheus text format, as the admin listener serves
 * /metrics: the host's proxyhost_* series and every module's. The string
 * is owned by the mock and valid until the next ph_mock_metrics_text or
 * ph_mock_free. Empty before ph_mock_init created the registry. */
const char *ph_mock_metrics_text(ph_mock *m);

/* 1 when /readyz would answer 200 (started, not stopping, every module
 * ready), else 0. Any phase. */
int ph_mock_ready(ph_mock *m);

/* Publishes payload on the bus topic `topic` (created with type `type`
 * if no module created it; its type is fixed from then on) as the host
 * would: every subscriber's handler runs before this returns. The bus owns
 * payload from the call on, whatever the result: free_payload(payload) is
 * called (when not NULL) after the handlers, or at once on failure.
 * Returns PH_OK; PH_EINVAL (topic or type NULL or invalid, or type differs
 * from the topic's); PH_ELIMIT (publishes nested too deep); PH_ESTATE
 * (before a successful ph_mock_init, or after a failed ph_mock_init or
 * ph_mock_start). */
int ph_mock_publish(ph_mock *m, const char *topic, const char *type,
                    void *payload, ph_free_fn free_payload);

/* Sends a request to a module's route (ABI 1.3) as the admin listener
 * would and runs the loop until the module answers, at most timeout_ms
 * (0..3600000); without an answer by then the module's cancel callback
 * runs. target is the path with an optional query ("/v1/users?limit=2");
 * authorization and content_type are the header values or NULL; body is
 * body_len bytes (NULL when 0). Returns the HTTP status: the module's,
 * 404 when no route serves the path, 503 when the route has
 * max_in_flight requests pending, 504 when no answer came in time; or
 * PH_EINVAL (bad arguments), PH_ESTATE (not between a successful
 * ph_mock_start and ph_mock_stop), PH_ENOMEM. *reply_type (the answer's
 * Content-Type, "" when none) and *reply_body (*reply_len bytes and a
 * NUL) are owned by the mock and valid until the next ph_mock_request or
 * ph_mock_free; each pointer may be NULL. Added in libproxyhost-mock
 * 2:0:2. */
int ph_mock_request(ph_mock *m, const char *method, const char *target,
                    const char *authorization, const char *content_type,
                    const char *body, size_t body_len, int timeout_ms,
                    const char **reply_type, const char **reply_body,
                    size_t *reply_len);

/* Reads the status panels (ABI 1.7) as GET /v1/status would: target is
 * "/v1/status" or a narrower path with an optional query
 * ("/v1/status/tunnel_server/agents/agents?offset=50&key=alice"). Calls
 * the panels' fill on this thread (the loop's). Returns the HTTP status
 * (200, 400 for a bad query, 404 for an unknown instance, panel or
 * table), or PH_EINVAL, PH_ESTATE (not between a successful
 * ph_mock_start and ph_mock_stop), PH_ENOMEM. *json (NUL-terminated) is
 * owned by the mock and valid until the next ph_mock_status or
 * ph_mock_free; it may be NULL. Added in libproxyhost-mock 4:0:4. */
int ph_mock_status(ph_mock *m, const char *target, const char **json);

/* ---- the test kit (libproxyhost-mock 3:0:3) ----------------------------
 * What a module's test needs beside the lifecycle: the loop to wait on,
 * fake providers of the services a module looks up, a metric's value, and
 * the descriptors the mock loaded. Same thread rule as above. */

/* The mock's libev loop, owned by the mock until ph_mock_free: run it
 * with a bounded wait of your own (ev_run with a timer, as
 * ph_mock_run_for does) to stop as soon as a condition holds instead of
 * after a fixed time. NULL before a successful ph_mock_init or after a
 * failed ph_mock_init or ph_mock_start. Since libproxyhost-mock 3:0:3. */
struct ev_loop *ph_mock_loop(ph_mock *m);

/* Registers a fake provider of service `name`, version major.minor, with
 * state self, as the module instance `provider` would in its init
 * (NULL: "mock"; [a-z0-9_.], 1-97 bytes). vtable and self are the
 * caller's and must stay valid until ph_mock_free; the mock never calls
 * through them. Modules find it with service_get / service_get_named
 * from their start on, so call this between ph_mock_init and
 * ph_mock_start (or later, for a lookup made later). A module whose
 * `requires` names the service still needs a module providing it (the
 * loader orders modules before any fake exists).
 * Returns PH_OK; PH_EINVAL (m, name or vtable NULL, a bad name or
 * provider); PH_EEXIST (that provider registered name already);
 * PH_ELIMIT (the service table is full); PH_ESTATE (before a successful
 * ph_mock_init, after ph_mock_stop, or after a failed ph_mock_init or
 * ph_mock_start). Since libproxyhost-mock 3:0:3. */
int ph_mock_service_provide(ph_mock *m, const char *name,
                            const char *provider, uint16_t major,
                            uint16_t minor, const void *vtable, void *self);

/* Looks up service `name` as a module's service_get_named would: the
 * provider instance called `provider` (NULL or "": the only provider),
 * whose major equals `major` and whose minor is >= min_minor. Returns its
 * vtable, owned by the provider (valid until ph_mock_free destroys it),
 * and stores its state in *self (self may be NULL); NULL (and *self NULL)
 * when there is none, the version does not fit, several providers exist
 * and provider is NULL, or before a successful ph_mock_init. The mock is
 * recorded as a user of that provider until ph_mock_free. Call the
 * vtable from this thread only, between ph_mock_* calls, as a module's
 * loop callback would. Since libproxyhost-mock 3:0:3. */
const void *ph_mock_service(ph_mock *m, const char *name,
                            const char *provider, uint16_t major,
                            uint16_t min_minor, void **self);

/* The current value of one series of the metrics text
 * (ph_mock_metrics_text): the series `name{labels}`, where labels is the
 * label set exactly as the text shows it, in the metric's declared order
 * ("result=\"ok\",cache=\"hit\""), "" for a series without labels, or
 * NULL when name already is the whole series as the text shows it
 * ("x_total" or "x_total{result=\"ok\"}"). Histograms answer by their
 * rendered series ("x_seconds_count", "x_seconds_bucket" with le last).
 * *value is 0 unless found. Reading renders the text: the string an
 * earlier ph_mock_metrics_text returned is no longer valid.
 * Returns PH_OK; PH_ENOENT (no such series: a label combination never
 * touched is not rendered); PH_EINVAL (m, name or value NULL, name
 * empty); PH_ESTATE (before ph_mock_init created the registry). Since
 * libproxyhost-mock 3:0:3. */
int ph_mock_metric(ph_mock *m, const char *name, const char *labels,
                   double *value);

/* The descriptor of the module instance called `instance` ("direct",
 * "socks5.public"), loaded from a .so or added; NULL or "": the first one
 * loaded or added. Owned by the module (for a .so, valid until
 * ph_mock_free unloads it). NULL when there is no such instance or m is
 * NULL. Any phase. Since libproxyhost-mock 3:0:3. */
const ph_module *ph_mock_module(ph_mock *m, const char *instance);

/* Stops the modules if they are still running (without waiting for a
 * drain), joins their threads, destroys them in reverse dependency order,
 * unloads them and frees the mock. NULL is ignored. */
void ph_mock_free(ph_mock *m);

#ifdef __cplusplus
}
#endif

#endif
