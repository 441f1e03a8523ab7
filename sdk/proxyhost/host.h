/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proxyhost SDK: the host API table.
 *
 * The host passes a `const ph_api *` to every module's init. It is the only
 * way a module talks to the host; the executable exports no symbols. The
 * table stays valid until the module's destroy returns.
 *
 * Threads: proxyhost runs one libev loop per process, the "loop thread".
 * Every function below is loop-thread-only unless its comment says "any
 * thread"; a loop-thread-only function called from another thread is
 * refused with its documented error (NULL, PH_ESTATE, or nothing), and
 * aborts the process in debug builds and under the mock host. The conf_*
 * getters have a rule of their own (see there): the loop thread, a check,
 * and a job's work on a helper thread. A module never creates threads
 * itself: blocking or heavy work goes to api->submit, and a library that
 * needs a thread of its own (a completion queue, a database client) asks
 * the host for a named, host-owned one with api->thread_start (ABI 1.2).
 * Results come back on the loop (api->thread_post, api->post).
 *
 * Phases: a function marked "init only" may be called only from the
 * module's init callback (registration happens there, as in Redis's
 * OnLoad); it returns PH_ESTATE elsewhere.
 *
 * Ownership: strings passed in are copied by the host unless stated
 * otherwise; pointers returned by the host are owned by the host.
 */
#ifndef PROXYHOST_HOST_H
#define PROXYHOST_HOST_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <proxyhost/abi.h>
#include <proxyhost/log.h>
#include <proxyhost/metrics.h>

struct ev_loop;                   /* libev; include <ev.h> to use it */
typedef struct ph_ctx ph_ctx;     /* one per loaded module, host-owned */
typedef struct ph_io ph_io;       /* fd watcher */
typedef struct ph_timer ph_timer; /* timer */
typedef struct ph_topic ph_topic; /* bus topic */
typedef struct ph_thread ph_thread; /* module thread (ABI 1.2), host-owned */
typedef struct ph_defer ph_defer;   /* call for the next loop turn (1.6) */
typedef struct ph_panel ph_panel;   /* one status panel being filled (1.7) */

/* Admin routes (ABI 1.3): a prefix is "/v1/" followed by 1..
 * PH_ROUTE_PREFIX_MAX - 4 bytes of [a-z0-9_-/], not ending in '/'; a
 * route takes at most max_in_flight (1..PH_ROUTE_MAX_IN_FLIGHT) requests
 * at once. */
#define PH_ROUTE_PREFIX_MAX 64
#define PH_ROUTE_MAX_IN_FLIGHT 256

/* One request to a module's route (ABI 1.3). Host-owned; every pointer
 * stays valid until the module replied to the request or its cancel
 * callback returned, whichever comes first. Strings are NUL-terminated
 * and exactly as the client sent them (no percent-decoding). */
typedef struct ph_http_request {
  uint32_t size;             /* sizeof(ph_http_request) in the host */
  const char *method;        /* "GET", "POST", "PATCH" or "DELETE" */
  const char *path;          /* "/v1/users/alice": no query */
  const char *query;         /* the part after '?', "" when none */
  const char *authorization; /* the Authorization header's value, or NULL */
  const char *content_type;  /* the Content-Type header's value, or NULL */
  const char *body;          /* body_len bytes, NUL after them; "" */
  size_t body_len;           /* at most [admin] max_body */
  void *reserved[4];
} ph_http_request;

/* A route's handler (ABI 1.3): loop thread. req identifies the request
 * for route_reply (an id > 0, never reused in the process). It may reply
 * inside the call or later. */
typedef void (*ph_route_fn)(void *arg, int64_t req, const ph_http_request *r);
/* The client went away or the request's deadline ([admin] timeout)
 * passed before the reply: loop thread, once, never after a reply; the
 * request is gone when it returns and route_reply refuses it. */
typedef void (*ph_route_cancel_fn)(void *arg, int64_t req);

/* Status panels (ABI 1.7): what a module shows on the admin listener's
 * status page (/ui/) and in GET /v1/status. A module registers panels at
 * init; the host calls a panel's fill for each page or request that shows
 * it, on the loop thread, and renders what fill wrote as JSON and as
 * HTML-escaped HTML itself: a module never writes markup or JSON.
 *
 * A panel holds fields (name = value) and tables (named columns, rows of
 * cells). Names ("agents", "connected_since") are 1..PH_STATUS_NAME_MAX
 * bytes of [a-z0-9_]; a title, a value or a cell is any text, cut to
 * PH_STATUS_VALUE_MAX bytes (on a UTF-8 boundary) and escaped by the host.
 * Bounds: PH_STATUS_PANELS_MAX panels per module instance,
 * PH_STATUS_FIELDS_MAX fields and PH_STATUS_TABLES_MAX tables per panel,
 * PH_STATUS_COLUMNS_MAX columns per table; rows are paged by the host
 * ([admin] status_rows per page, the reader picks the offset). */
#define PH_STATUS_NAME_MAX 48
#define PH_STATUS_VALUE_MAX 256
#define PH_STATUS_PANELS_MAX 8
#define PH_STATUS_FIELDS_MAX 64
#define PH_STATUS_TABLES_MAX 8
#define PH_STATUS_COLUMNS_MAX 16

/* A panel's fill (ABI 1.7): loop thread, inside the host's call, never
 * during init or after destroy began. p is valid only during the call;
 * fill writes through ph_api.status_* and returns. It must not block or
 * call back into the host's admin listener. */
typedef void (*ph_panel_fn)(void *arg, ph_panel *p);

/* A column's kind (ABI 1.7), for status_table's num_mask: a cell of a
 * numeric column is a decimal integer ("-12", "3") or "" (no value); JSON
 * gets a number (or null), HTML right-aligns it. Other cells are text. */
#define PH_STATUS_COL_NUM(i) (UINT32_C(1) << (i))

enum ph_io_events { PH_READ = 1, PH_WRITE = 2 };

/* Module threads (ABI 1.2): at most PH_THREAD_MAX running per module, a
 * name of 1..PH_THREAD_NAME_MAX bytes of [a-z0-9_-], and a delivery queue
 * of 1..PH_THREAD_QUEUE_MAX calls. */
#define PH_THREAD_MAX 8
#define PH_THREAD_NAME_MAX 32
#define PH_THREAD_QUEUE_MAX 65536

typedef void (*ph_free_fn)(void *p);
typedef void (*ph_io_fn)(ph_io *io, int fd, int revents, void *arg);
typedef void (*ph_timer_fn)(ph_timer *t, void *arg);
/* A deferred call (ABI 1.6): loop thread, once per defer_post. */
typedef void (*ph_defer_fn)(ph_defer *d, void *arg);
typedef void (*ph_call_fn)(void *arg);
/* Runs on a helper thread: may block; must not call the host API except
 * functions marked "any thread" and the conf_* getters, which read the
 * configuration that was in force when the job was submitted. */
typedef void (*ph_work_fn)(void *arg);
/* Runs on the loop thread once per submitted job; status is PH_OK after
 * work ran, PH_ECANCELED when the job was cancelled before it started. */
typedef void (*ph_done_fn)(void *arg, int status);
/* Body of a module thread (ABI 1.2): runs on that thread, may block; may
 * call only the host functions marked "any thread". */
typedef void (*ph_thread_fn)(void *arg);
/* Bus handler: runs on the loop thread, must not block. The payload is
 * owned by the bus and valid only during the call; copy what you keep. */
typedef void (*ph_bus_fn)(const ph_topic *topic, const void *payload,
                          void *arg);

typedef struct ph_api {
  uint32_t size; /* sizeof(ph_api) in the host; grows with minors */
  uint16_t abi_major;
  uint16_t abi_minor;

  /* ---- identity and lifecycle --------------------------------------- */

  /* The module instance's full name: the module's name for its default
   * instance ("socks5"), "NAME.INSTANCE" for a named one
   * ("socks5.public", ABI 1.2). It is the instance's section, its
   * module= in logs and its provider name for services. Host-owned,
   * valid until destroy returned. Any thread. */
  const char *(*module_name)(ph_ctx *ctx);
  /* Loop thread. Readiness for /readyz. A module is ready after start
   * unless it called set_ready(ctx, 0) earlier; /readyz is 200 only when
   * all are ready. */
  void (*set_ready)(ph_ctx *ctx, int ready);
  /* Loop thread. Ends a stop that returned PH_STOP_PENDING; the host then
   * joins the module's threads (thread_join) before this returns. */
  void (*stop_done)(ph_ctx *ctx);
  /* Loop thread. Non-zero once the host is draining (after SIGTERM/SIGINT);
   * PH_ESTATE (non-zero too) from another thread. */
  int (*stopping)(ph_ctx *ctx);

  /* ---- logging (any thread; see log.h for the macros) ---------------- */

  int (*log_enabled)(ph_ctx *ctx, int level);
  void (*log)(ph_ctx *ctx, int level, const char *msg,
              const ph_log_field *fields, size_t n_fields);
  void (*log_rl)(ph_ctx *ctx, ph_ratelimit *rl, int level, const char *msg,
                 const ph_log_field *fields, size_t n_fields);

  /* ---- configuration (validated before init) ------------------------- */
  /* The one rule for reading configuration (ABI 1.2). The getters may be
   * called:
   *  - on the loop thread: they read the configuration in force. A
   *    reload replaces it between two callbacks (re-read values in the
   *    reload callback or on host.reload); what they return is valid
   *    until the next reload;
   *  - inside check: the configuration being checked;
   *  - on a helper thread, inside the work of a job submitted with
   *    api->submit: the configuration that was in force when the job was
   *    submitted, whatever reloads happen meanwhile. What work reads stays
   *    valid until the job's done callback has returned (done runs on the
   *    loop thread, where the getters read the configuration in force).
   * Any other thread (one a library started, any long-running thread) is
   * a misuse, and so is a key the module did not declare (or NULL): with
   * debug checks (configure --enable-debug, the mock host) the host logs
   * it and aborts; release builds log it (rate-limited) and return NULL
   * or 0. The reads take no lock and never allocate.
   *
   * Effective value of a key the module declared. Strings and lists are
   * returned as written (lists comma-separated), owned by the host, valid
   * as said above. */
  const char *(*conf_str)(ph_ctx *ctx, const char *key);
  /* INT, DURATION (milliseconds), SIZE (bytes) and BOOL (0/1) keys. */
  int64_t (*conf_int)(ph_ctx *ctx, const char *key);
  /* LIST keys: number of items and item i (trimmed), host-owned. */
  size_t (*conf_list_len)(ph_ctx *ctx, const char *key);
  const char *(*conf_list_at)(ph_ctx *ctx, const char *key, size_t i);

  /* ---- event loop (loop thread) -------------------------------------- */

  /* The process's libev loop, for libraries that take a foreign loop. */
  struct ev_loop *(*loop)(ph_ctx *ctx);
  /* Monotonic time in milliseconds (CLOCK_MONOTONIC). Any thread. */
  int64_t (*now_ms)(ph_ctx *ctx);
  /* fd watcher, created stopped unless events != 0. io_set(io, 0) stops
   * it. io_free stops and frees; it may be called from inside its own
   * callback. The host never closes fd. */
  ph_io *(*io_new)(ph_ctx *ctx, int fd, int events, ph_io_fn fn, void *arg);
  void (*io_set)(ph_io *io, int events);
  void (*io_free)(ph_io *io);
  /* Timer, created stopped. timer_set(t, after, repeat) (re)arms it; both
   * zero stops it. timer_free may be called from its own callback. */
  ph_timer *(*timer_new)(ph_ctx *ctx, ph_timer_fn fn, void *arg);
  void (*timer_set)(ph_timer *t, uint64_t after_ms, uint64_t repeat_ms);
  void (*timer_free)(ph_timer *t);

  /* ---- cross-thread work --------------------------------------------- */

  /* Any thread. Queues fn(arg) to run on the loop thread through the
   * bounded mailbox ([proxyhost] mailbox_size). PH_OK: the host owns arg
   * and calls fn(arg), then free_arg(arg) if not NULL (also when the host
   * shuts down before fn ran: then only free_arg). PH_EFULL: nothing was
   * taken (the caller still owns arg), and proxyhost_mailbox_full_total
   * was incremented. Never blocks. */
  int (*post)(ph_ctx *ctx, ph_call_fn fn, void *arg, ph_free_fn free_arg);
  /* Loop thread. Runs work(arg) on a host helper thread, then done(arg,
   * status) on the loop. Returns a job id > 0, or PH_EFULL when the
   * bounded job queue ([proxyhost] job_queue) is full (done is not
   * called). Each accepted job gets exactly one done call. The job keeps
   * the configuration in force now until its done returned: work reads
   * it with the conf_* getters (ABI 1.2). */
  int64_t (*submit)(ph_ctx *ctx, ph_work_fn work, ph_done_fn done,
                    void *arg);
  /* Loop thread. PH_OK: the job had not started; done(arg, PH_ECANCELED)
   * has been called before this returns. PH_EBUSY: it is running or
   * finished, and done will be (or was) called normally. PH_ENOENT: no
   * such job, or (since 1.2) a job submitted with another module's ctx,
   * which is a misuse: the job is not touched. */
  int (*job_cancel)(ph_ctx *ctx, int64_t job);

  /* ---- services ------------------------------------------------------ */

  /* Init only. Registers a named vtable, version major.minor, with the
   * provider's state pointer. Both pointers must stay valid until the
   * provider's destroy. The provider is the caller's instance (its
   * module_name); other instances and modules may register the same name
   * (ABI 1.2). PH_EEXIST if this instance registered the name already. */
  int (*service_register)(ph_ctx *ctx, const char *name, uint16_t major,
                          uint16_t minor, const void *vtable, void *self);
  /* Start (or later, loop thread). Looks up a service whose major equals
   * `major` and whose minor is >= min_minor; stores the provider's state
   * in *self. Records the caller as a user. NULL if none, and (ABI 1.2)
   * when several providers registered name: then the host logs one error
   * naming them (see service_get_named). Call it once and keep the
   * pointers: calls through the vtable need no host involvement. */
  const void *(*service_get)(ph_ctx *ctx, const char *name, uint16_t major,
                             uint16_t min_minor, void **self);
  /* Drops the caller's use of a service obtained with service_get or
   * service_get_named: of every provider of name it got. */
  void (*service_release)(ph_ctx *ctx, const char *name);
  /* Provider only (PH_EINVAL otherwise): removes the caller instance's
   * own registration of name; other providers of name stay. PH_EBUSY
   * while any other module still uses it; PH_ENOENT when nobody
   * registered name. */
  int (*service_unregister)(ph_ctx *ctx, const char *name);

  /* ---- message bus --------------------------------------------------- */

  /* Init only. Declares (or finds) a topic. `type` names the payload type
   * and its version (e.g. "ph.reload/1"); declaring an existing topic with
   * another type is PH_EINVAL, reported as NULL. */
  ph_topic *(*topic)(ph_ctx *ctx, const char *name, const char *type);
  /* Init only. Handlers run in subscription order. Returns an id > 0. */
  int (*subscribe)(ph_ctx *ctx, ph_topic *topic, ph_bus_fn fn, void *arg);
  /* Loop thread. Handlers are not called again after this returns.
   * PH_OK, or PH_ENOENT: no such subscription, or (since 1.2) one made
   * with another module's ctx, which is a misuse: it stays. */
  int (*unsubscribe)(ph_ctx *ctx, int id);
  /* Loop thread. Delivers synchronously to every subscriber in order,
   * then calls free_payload(payload) if not NULL. The bus owns payload
   * from the call on, whatever the result. */
  int (*publish)(ph_ctx *ctx, ph_topic *topic, void *payload,
                 ph_free_fn free_payload);
  /* Any thread. Like publish, through the mailbox. PH_EFULL: nothing was
   * taken, the caller still owns payload, and the drop was counted. */
  int (*post_publish)(ph_ctx *ctx, ph_topic *topic, void *payload,
                      ph_free_fn free_payload);
  /* The topic's name and type. Any thread. */
  const char *(*topic_name)(const ph_topic *topic);

  /* ---- metrics (registration: init only; updates: any thread) -------- */

  /* Registers a metric; NULL (and an error in the log) when the
   * definition is invalid. Registering a name again with exactly the same
   * definition (type, labels and values in order, buckets) returns the
   * same metric, so modules can share one; another definition is refused. */
  ph_metric *(*metric)(ph_ctx *ctx, const ph_metric_def *def);
  /* The series for one value per declared label (n_labels strings); NULL
   * when a value was not declared. Resolve once, then update freely. Any
   * thread (a lookup in what registration fixed). */
  ph_series *(*series)(ph_metric *m, const char *const *label_values);
  void (*inc)(ph_series *s, uint64_t n);     /* counters */
  void (*gauge_set)(ph_series *s, double v); /* gauges */
  void (*gauge_add)(ph_series *s, double v); /* gauges */
  void (*observe)(ph_series *s, double v);   /* histograms */

  /* NULL. The 1.0 layout ends here and never changes; later minors
   * append their functions after it, and api->size tells whether the host
   * has one (sdk/ABI.md). */
  void *reserved[16];

  /* ---- added in ABI 1.1 (after reserved: api->size grew) ------------- */

  /* Counters only; any thread. Sets the total of a counter that is kept
   * outside the module (by the kernel, by a library), such as CPU seconds,
   * where inc would have to reconstruct increments. v may be fractional;
   * /metrics shows it like a gauge's value (12.34). The total must not go
   * down: a value below the current one is ignored (the counter keeps its
   * value), and so are NaN, negative and infinite values. Feed a series
   * with either inc or counter_set: once set, the set total is shown and
   * inc on that series has no visible effect. NULL or a series of another
   * type: nothing happens. Atomic, lock-free, never allocates. */
  void (*counter_set)(ph_series *s, double v);

  /* Any thread; allowed in check. Parses a listen address the way the
   * host parses its own [admin] listen: "IPv4:PORT" or "[IPv6]:PORT",
   * numeric only (no DNS), port 0-65535. Fills *ss and *len and returns
   * PH_OK, or returns PH_EINVAL with a one-line reason that quotes the
   * address (never anything else) in why, truncated to whylen. Use it
   * for every listen key, in check and where the socket is bound, so
   * that users see one format and one message everywhere. */
  int (*parse_listen_addr)(const char *s, struct sockaddr_storage *ss,
                           socklen_t *len, char *why, size_t whylen);

  /* Loop thread, any phase; allowed in check. 1 when a module loaded in
   * this process lists name in its descriptor's provides, else 0. It
   * answers from the descriptors, before any provider's init ran: a check
   * uses it for a service the configuration makes necessary (socks5's
   * auth = password needs "authorizer"), so that a missing provider is a
   * configuration error rather than a failure at start. 0 from another
   * thread. */
  int (*service_provided)(ph_ctx *ctx, const char *name);

  /* ---- added in ABI 1.2 (after the 1.1 functions: api->size grew) ---- */

  /* threads */

  /* Init or start only (inside this module's own init or start callback),
   * loop thread. Starts a host-owned thread for a library that needs one
   * of its own (a completion queue, a database client). The OS thread is
   * named "ph-<module>-<name>" (<module>: the instance's full name,
   * module_name) truncated to 15 bytes (top, /proc), and
   * the host logs "module thread started" and "module thread joined" at
   * info with the module and thread names. The thread blocks every
   * asynchronous signal.
   *   name: [a-z0-9_-], 1..PH_THREAD_NAME_MAX bytes, unique among this
   *     module's running threads; copied.
   *   run(arg): the thread's body. It starts once the init or start
   *     callback that called thread_start has returned, so the handle the
   *     module stored in its state is visible to run without a lock. It
   *     may block, may call only "any thread" functions, and must return
   *     soon after stop(arg).
   *   stop(arg): called once on the loop thread when the thread must end
   *     (the module's stop ended, or thread_join): wake run and make it
   *     return (close a queue, write to a pipe). run may have returned
   *     already, or never have started (joined before it was released).
   *     run must not wait for the loop after stop.
   *   queue: 1..PH_THREAD_QUEUE_MAX, the capacity of the thread's own
   *     delivery queue (thread_post).
   * arg stays the module's. Returns the thread, host-owned until
   * thread_join or the module's stop ends, or NULL (logged as "module
   * thread refused" with the reason) on a NULL run or stop, a bad name or
   * queue, a duplicate name, PH_THREAD_MAX threads already running, the
   * wrong phase or thread, or no resources.
   *
   * The host joins every thread still running when the module's stop
   * ends (stop returned PH_OK, stop_done, or the drain deadline cut the
   * module off), and at shutdown, always before the module's destroy: no
   * thread outlives its module. Joining waits [proxyhost] drain_timeout
   * (at least 1 s) for run to return after stop(arg); a thread still
   * running then may be using the module's state, so the host logs
   * "module thread did not return by the drain deadline" at error and
   * exits with status 5 at once, without destroying any module. */
  ph_thread *(*thread_start)(ph_ctx *ctx, const char *name, ph_thread_fn run,
                             ph_call_fn stop, void *arg, size_t queue);
  /* Any thread (the module thread itself, a job, the loop), while t is
   * valid. Queues fn(arg) to run on the loop thread through t's own
   * bounded queue, in posting order: another module, or the shared
   * mailbox of api->post, cannot fill it, and it cannot fill theirs.
   * PH_OK: the host owns arg and calls fn(arg), then free_arg(arg) if not
   * NULL (only free_arg when t is joined before fn ran). PH_EFULL: nothing
   * was taken, the caller still owns arg, and
   * proxyhost_thread_queue_full_total{module} was incremented. PH_EINVAL:
   * t or fn NULL. Never blocks. */
  int (*thread_post)(ph_thread *t, ph_call_fn fn, void *arg,
                     ph_free_fn free_arg);
  /* Loop thread; any phase after thread_start, also from the module's
   * stop. Ends t now: calls stop(arg), waits for run to return (as above,
   * at most the drain deadline), joins the OS thread, then discards what
   * is still queued: those calls do not run, only their free_arg (as for
   * api->post at shutdown); run all you need before by waiting for a last
   * post of your own. Frees t: the handle is invalid when this returns,
   * for every thread. NULL is ignored, and so is a t the host is already
   * joining (a stop callback calling it). */
  void (*thread_join)(ph_thread *t);

  /* ---- ABI 1.2: several providers of one service --------------------- */
  /* A service name may have several providers since ABI 1.2: instances
   * of one module ([direct] and [direct.lab]) or different modules
   * (direct, pool). Each provider is its instance's full name, what
   * module_name returns (service_register is unchanged: the provider is
   * the caller's instance). service_get returns the only provider of a
   * name; with several it fails closed (NULL, and the host logs one error
   * naming them), so a user that can meet several lets the operator name
   * one in its configuration and calls service_get_named. */

  /* Start (or later), loop thread, like service_get. The provider of name
   * whose instance is called `provider` ("direct.lab"), version major and
   * minor >= min_minor; stores its state in *self and records the caller
   * as its user. provider NULL or "": the only provider, as service_get
   * (NULL, and one error line naming the providers, when there are
   * several). NULL when that provider did not register name or the
   * version does not fit. Call it once and keep the pointers.
   * service_release(ctx, name) drops the caller's use of every provider
   * of name it got. */
  const void *(*service_get_named)(ph_ctx *ctx, const char *name,
                                   const char *provider, uint16_t major,
                                   uint16_t min_minor, void **self);
  /* Loop thread, any phase; allowed in check. 1 when an instance called
   * `provider` is loaded in this process and its module lists name in
   * its descriptor's provides, else 0 (also for NULL arguments and from
   * another thread). It answers from the descriptors, before any init
   * ran, like service_provided: a check uses it for a provider the
   * configuration names, so that a missing one is a configuration error
   * with file:line rather than a failure at start. */
  int (*service_provider_loaded)(ph_ctx *ctx, const char *name,
                                 const char *provider);

  /* ---- ABI 1.2: only the series a module produces -------------------- */

  /* Init only, loop thread, like metric. Registers def like metric, but
   * only the label combinations listed exist: /metrics shows those and
   * series() returns NULL for any other. combos holds n_combos tuples of
   * def->n_labels values each, flattened in label order
   * ({"client", "success", "ok",  "client", "failure", "refused"} for two
   * tuples of three labels); a NULL value stands for every value of its
   * label. Each value must be one the label declares. combos is read
   * during the call only (the caller keeps it). Registering the metric
   * again, from this or another module, with the same definition adds its
   * combinations to those already declared (metric() adds them all), so
   * modules that share a metric each declare what they produce. NULL (and
   * an error in the log) when the definition is invalid, the metric has no
   * labels, combos is NULL, n_combos is 0 or above PH_METRIC_MAX_SERIES,
   * or a value is not declared; nothing is registered then. */
  ph_metric *(*metric_only)(ph_ctx *ctx, const ph_metric_def *def,
                            const char *const *combos, size_t n_combos);

  /* ---- ABI 1.2: where a value came from ------------------------------ */
  /* Wherever the conf_* getters may be called, and by the same rule (in
   * check: the configuration being checked). 1 when a source set the
   * module's declared key (a configuration file, the environment,
   * --set), 0 when the value is the key's default (and for an undeclared
   * key, which is a misuse as for the getters). A check uses it for a
   * choice that must be written on purpose: a frontend on a non-loopback
   * address with auth = none needs allow_clients written out. */
  int (*conf_is_set)(ph_ctx *ctx, const char *key);

  /* ---- added in ABI 1.3: routes on the admin listener ---------------- */
  /* The host speaks HTTP on the admin listener; what a route's bodies
   * mean (JSON, authorization) is the module's business. The existing
   * /metrics, /healthz and /readyz stay GET and HEAD only; routes take
   * GET, POST, PATCH and DELETE, Content-Length bodies of at most
   * [admin] max_body (chunked: 411), one request per connection, within
   * [admin] timeout and max_connections. */

  /* Init only, loop thread. Serves every request whose path is prefix or
   * starts with prefix + "/" ("/v1/users" serves "/v1/users" and
   * "/v1/users/alice", not "/v1/usersx") with handle(arg, id, request).
   * prefix: see PH_ROUTE_PREFIX_MAX; copied. cancel: required (see
   * ph_route_cancel_fn). arg stays the module's. max_in_flight:
   * 1..PH_ROUTE_MAX_IN_FLIGHT requests handed to handle and not yet
   * answered; one more is answered 503 by the host without a call.
   * PH_OK; PH_EINVAL (bad prefix, NULL handle or cancel, max_in_flight
   * out of bounds); PH_EEXIST when a route of this or another module
   * overlaps it (equal, or one inside the other), logged with both
   * modules' names; PH_ESTATE outside init. */
  int (*route_register)(ph_ctx *ctx, const char *prefix, ph_route_fn handle,
                        ph_route_cancel_fn cancel, void *arg,
                        uint32_t max_in_flight);
  /* Loop thread, any phase. Answers request req of one of this module's
   * routes with status (200..599), content_type (NULL: no Content-Type)
   * and body_len bytes of body (copied; NULL when body_len is 0). After
   * it returns the request's ph_http_request is gone. PH_OK; PH_ENOENT
   * when req is not pending for this module (already answered,
   * cancelled, another module's); PH_EINVAL (bad status, a content_type
   * with CR or LF, NULL body with body_len > 0); PH_ENOMEM. */
  int (*route_reply)(ph_ctx *ctx, int64_t req, int status,
                     const char *content_type, const char *body,
                     size_t body_len);

  /* ---- added in ABI 1.4: another module's numbers -------------------- */
  /* For rules that span two modules (the controller's session_ttl and its
   * Redis authority's): the effective value of key, an INT, DURATION
   * (milliseconds), SIZE or BOOL key declared by the loaded module
   * instance whose section is `section` ("redis_ownership",
   * "redis_ownership.eu"), into *out. Where and when conf_int may be
   * called (check included: the configuration being checked). Numbers
   * only: strings are conf_peer_str's, which keeps secrets out. PH_OK;
   * PH_ENOENT when no loaded instance has that section or it declares no
   * such key, or the key is not one of those types (*out untouched);
   * PH_EINVAL for NULL arguments. */
  int (*conf_peer_int)(ph_ctx *ctx, const char *section, const char *key,
                       int64_t *out);

  /* ---- added in ABI 1.4: another module's identifiers ---------------- */
  /* As conf_peer_int, for a STRING or ENUM key (the controller's
   * cluster_id and its authority's): the effective value into *out,
   * owned by the host and valid as conf_str's. Only a key no one may
   * take for a secret: never one its module flagged PH_CONF_SENSITIVE,
   * nor one whose name has a secret word (log.h's list), so no module
   * reads another's passwords or DSNs. Where and when conf_str may be
   * called (check included). PH_OK; PH_ENOENT when no loaded instance has
   * that section or it declares no such key, or the key is not a STRING
   * or ENUM (a LIST is not); PH_EINVAL for NULL arguments and for a
   * sensitive or secret-named key (*out untouched on any error). */
  int (*conf_peer_str)(ph_ctx *ctx, const char *section, const char *key,
                       const char **out);

  /* ---- added in ABI 1.5: a drain the module cut short ----------------- */
  /* Loop thread, while the host stops (after the module's stop was
   * called): the module's own drain deadline (tunnel_server's
   * drain_timeout, say) closed `left` streams or connections that had not
   * finished. The host then reports the stop as cut short, as it does
   * when its own [proxyhost] drain_timeout expires: the warning "drain
   * cut short" names the module, and "proxyhost stopped" carries
   * drain_cut_short=true. Not a failure: the exit status stays 0. PH_OK;
   * PH_ESTATE outside a stop or off the loop thread (nothing recorded).
   * A module that may run on a 1.4 host checks
   * api->size > offsetof(ph_api, drain_cut). */
  int (*drain_cut)(ph_ctx *ctx, uint64_t left);

  /* ---- added in ABI 1.6: a call on the loop's next turn --------------- */
  /* "Answer later, but not a tick later": fn(d, arg) runs from the loop
   * after the callback that posted it has returned, never inside it, and
   * without waiting for a timer: at the end of the current loop iteration
   * (after its other callbacks), or, posted outside a callback or by a
   * deferred call, on the next iteration, which then does not block. The
   * calls run in the order they were posted (all of the host's modules in
   * one queue); a turn runs only what was posted before it began, so a
   * call that posts again runs after the loop has polled its I/O once
   * more and cannot starve it. Loop thread only, every one of them.
   *
   * defer_new: a handle, created idle; the caller owns it until
   * defer_free. NULL when fn is NULL, inside a check, off the loop
   * thread or out of memory. Make one per object that needs it (a
   * request, a stream) when the object is made: posting then never
   * allocates or fails. */
  ph_defer *(*defer_new)(ph_ctx *ctx, ph_defer_fn fn, void *arg);
  /* Queues one call of fn. Idempotent while pending: posting a handle
   * already queued changes nothing (it keeps its place, fn runs once).
   * After fn started the handle is idle again and may be posted anew
   * (from inside fn too). PH_OK; PH_EINVAL for NULL; PH_ESTATE off the
   * loop thread (nothing queued). */
  int (*defer_post)(ph_defer *d);
  /* Takes back a pending call: fn does not run. PH_OK when it was
   * pending, PH_ENOENT when it was not (idle, or fn already started);
   * PH_EINVAL for NULL; PH_ESTATE off the loop thread. */
  int (*defer_cancel)(ph_defer *d);
  /* Cancels a pending call and frees the handle. NULL is ignored; may be
   * called from inside the handle's own fn. A module frees its handles
   * before its destroy returns. A module that may run on a 1.5 host
   * checks api->size > offsetof(ph_api, defer_free). */
  void (*defer_free)(ph_defer *d);

  /* ---- added in ABI 1.7: status panels ------------------------------- */
  /* See "Status panels" above. A module that may run on a 1.6 host checks
   * api->size > offsetof(ph_api, status_row) before using any of them. */

  /* Init only, loop thread. Adds the panel `name` (see PH_STATUS_NAME_MAX;
   * "agents", "sessions") titled `title` (1..PH_STATUS_VALUE_MAX bytes,
   * copied) to this module instance; it is shown under the instance's
   * section name ("tunnel_server", "tunnel_server.eu"), panels in the
   * order registered. fill(arg, p) fills it. PH_OK; PH_EINVAL (bad name
   * or title, NULL fill); PH_EEXIST (this instance already has `name`);
   * PH_ELIMIT (PH_STATUS_PANELS_MAX reached); PH_ESTATE outside init. */
  int (*status_register)(ph_ctx *ctx, const char *name, const char *title,
                         ph_panel_fn fill, void *arg);
  /* Inside fill: a text field, name = value (copied; NULL value: shown as
   * empty, JSON null). Fields keep their order; a name given twice keeps
   * the first. PH_OK; PH_EINVAL (bad name, NULL p); PH_ELIMIT
   * (PH_STATUS_FIELDS_MAX reached: the field is dropped). */
  int (*status_field)(ph_panel *p, const char *name, const char *value);
  /* Inside fill: a numeric field (JSON number). As status_field. */
  int (*status_field_int)(ph_panel *p, const char *name, int64_t value);
  /* Inside fill: starts the table `name` with n_columns (1..
   * PH_STATUS_COLUMNS_MAX) column names (each as a field's name; copied);
   * bit i of num_mask (PH_STATUS_COL_NUM(i)) makes column i numeric. The
   * rows that follow (status_row) belong to it until the next
   * status_table or the end of fill. A table lists what exists now: its
   * first column names the row (an agent's name, a proxy's id), which a
   * reader may select by (/v1/status/INSTANCE/PANEL/TABLE?key=...).
   * PH_OK; PH_EINVAL (bad or repeated name, bad columns); PH_ELIMIT
   * (PH_STATUS_TABLES_MAX reached: the table and its rows are dropped). */
  int (*status_table)(ph_panel *p, const char *name,
                      const char *const *columns, uint32_t n_columns,
                      uint32_t num_mask);
  /* Inside fill, after status_table: one row of the current table, exactly
   * n_columns cells (NULL cell: empty; copied). The host pages: a row
   * before the reader's offset, or not matching its key, is counted and
   * dropped; once the page is full the host returns PH_ELIMIT, and the
   * module should stop offering rows for this table (the page then says
   * there are more). So a module walks its list in a stable order and at
   * most offset + page + 1 rows are looked at. PH_OK (kept or skipped);
   * PH_ELIMIT (page full: dropped); PH_EINVAL (no current table, wrong
   * n_cells, a numeric cell that is not an integer: the row is dropped). */
  int (*status_row)(ph_panel *p, const char *const *cells,
                    uint32_t n_cells);
} ph_api;

#endif
