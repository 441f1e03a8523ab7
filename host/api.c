/* SPDX-License-Identifier: BSD-2-Clause */
/* The host API table: what modules call, mapped onto the host core.
 *
 * Every loop-thread-only function starts with on_loop(): the one place
 * where the rule of host.h is enforced. A call from another thread is the
 * module's bug: debug_misuse (aborts with debug checks, else logs), and
 * the function returns its documented error (NULL, PH_ESTATE, or nothing)
 * without touching the loop's state. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "addr.h"
#include "core.h"
#include "debug.h"
#include "defer.h"
#include "log.h"
#include "routes.h"
#include "status.h"
#include "threads.h"

struct ph_io {
  ev_io w;
  ph_ctx *ctx;
  ph_io_fn fn;
  void *arg;
};

struct ph_timer {
  ev_timer w;
  ph_ctx *ctx;
  ph_timer_fn fn;
  void *arg;
};

/* "fn: loop thread only", the misuse text for fn. */
#define LOOP_ONLY(fn) fn ": loop thread only"

/* One pthread_self and a compare: cheap enough for io_set on hot paths. */
static int on_loop(const ph_ctx *ctx, const char *what) {
  if (pthread_equal(pthread_self(), ctx->core->loop_thread))
    return 1;
  debug_misuse(ctx->name, what);
  return 0;
}

static int in_init(ph_ctx *ctx) {
  return ctx->core->phase == PH_PHASE_INIT && ctx->core->initing == ctx;
}

/* Inside this module's own init or start callback. */
static int in_init_or_start(ph_ctx *ctx) {
  return in_init(ctx) || (ctx->core->phase == PH_PHASE_START &&
                          ctx->core->starting == ctx);
}

/* Inside a check callback: only reading configuration and logging are
 * allowed; whatever would create state is refused. */
static int in_check(ph_ctx *ctx) {
  (void)ctx;
  return core_checking != NULL;
}

/* ---- identity and lifecycle ------------------------------------------ */

static const char *api_module_name(ph_ctx *ctx) { return ctx->name; }

static void api_set_ready(ph_ctx *ctx, int ready) {
  if (!on_loop(ctx, LOOP_ONLY("set_ready")))
    return;
  ctx->ready = !!ready;
}

static void api_stop_done(ph_ctx *ctx) {
  if (!on_loop(ctx, LOOP_ONLY("stop_done")))
    return;
  ph_core *c = ctx->core;
  if (!ctx->stop_pending)
    return;
  ctx->stop_pending = 0;
  core_module_stopped(ctx);
  if (c->stop_pending && --c->stop_pending == 0 && c->phase == PH_PHASE_STOP)
    ev_break(c->loop, EVBREAK_ALL);
}

static int api_drain_cut(ph_ctx *ctx, uint64_t left) {
  if (!on_loop(ctx, LOOP_ONLY("drain_cut")))
    return PH_ESTATE;
  ph_core *c = ctx->core;
  if (c->phase < PH_PHASE_STOP)
    return PH_ESTATE;
  if (!c->drain_cut_by)
    c->drain_cut_by = ctx->name;
  c->drain_cut_left += left;
  return PH_OK;
}

static int api_stopping(ph_ctx *ctx) {
  if (!on_loop(ctx, LOOP_ONLY("stopping")))
    return PH_ESTATE;
  return ctx->core->phase >= PH_PHASE_STOP;
}

/* ---- logging --------------------------------------------------------- */

static int api_log_enabled(ph_ctx *ctx, int level) {
  (void)ctx;
  return log_enabled(level);
}

static void api_log(ph_ctx *ctx, int level, const char *msg,
                    const ph_log_field *f, size_t n) {
  log_write(ctx->name, level, msg, f, n);
}

static void api_log_rl(ph_ctx *ctx, ph_ratelimit *rl, int level,
                       const char *msg, const ph_log_field *f, size_t n) {
  log_write_rl(ctx->name, rl, level, msg, f, n);
}

/* ---- configuration --------------------------------------------------- */

/* The one rule (host.h, docs/sdk.md section 5): the getters read, in a
 * check, the configuration being checked; on a helper thread running a
 * job, the generation the job holds since it was submitted (pool.c); on
 * the loop thread, the one in force. On any other thread there is no
 * configuration that is safe to read: a misuse, NULL. No lock: each of
 * these is immutable while it is read. */
static const ph_conf *conf_of(ph_ctx *ctx, const char *fn) {
  if (core_checking)
    return core_checking;
  const ph_conf *job = pool_job_conf();
  if (job)
    return job;
  if (pthread_equal(pthread_self(), ctx->core->loop_thread))
    return ctx->core->conf;
  char what[128];
  snprintf(what, sizeof(what),
           "%s: called on a thread that is neither the loop thread nor a "
           "helper thread running a job",
           fn);
  debug_misuse(ctx->name, what);
  return NULL;
}

/* NULL or 0 is also a valid value; only then is it worth asking whether
 * key was declared at all. Reading an undeclared key is a bug in the
 * module (a typo, a key removed from the table). */
static void conf_check_declared(ph_ctx *ctx, const ph_conf *c, const char *fn,
                                const char *key) {
  if (!c || conf_declared(c, ctx->name, key))
    return;
  char what[160];
  if (key)
    snprintf(what, sizeof(what), "%s: key \"%.64s\" is not declared", fn, key);
  else
    snprintf(what, sizeof(what), "%s: key is NULL", fn);
  debug_misuse(ctx->name, what);
}

static const char *api_conf_str(ph_ctx *ctx, const char *key) {
  const ph_conf *c = conf_of(ctx, "conf_str");
  const char *v = conf_str(c, ctx->name, key);
  if (!v)
    conf_check_declared(ctx, c, "conf_str", key);
  return v;
}

static int64_t api_conf_int(ph_ctx *ctx, const char *key) {
  const ph_conf *c = conf_of(ctx, "conf_int");
  int64_t v = conf_int(c, ctx->name, key);
  if (v == 0)
    conf_check_declared(ctx, c, "conf_int", key);
  return v;
}

static size_t api_conf_list_len(ph_ctx *ctx, const char *key) {
  const ph_conf *c = conf_of(ctx, "conf_list_len");
  size_t n = conf_list_len(c, ctx->name, key);
  if (n == 0)
    conf_check_declared(ctx, c, "conf_list_len", key);
  return n;
}

static const char *api_conf_list_at(ph_ctx *ctx, const char *key, size_t i) {
  const ph_conf *c = conf_of(ctx, "conf_list_at");
  const char *v = conf_list_at(c, ctx->name, key, i);
  if (!v)
    conf_check_declared(ctx, c, "conf_list_at", key);
  return v;
}

static int api_conf_is_set(ph_ctx *ctx, const char *key) {
  const ph_conf *c = conf_of(ctx, "conf_is_set");
  int v = c && key ? conf_is_set(c, ctx->name, key) : 0;
  if (!v)
    conf_check_declared(ctx, c, "conf_is_set", key);
  return v;
}

/* ---- another instance's values (ABI 1.4) ------------------------------ */

/* The one lookup of conf_peer_int and conf_peer_str: section.key declared
 * by a loaded instance, of one of the types the caller reads. The value
 * comes from the configuration conf_str would read (in check, the one
 * being checked). Nothing here is a misuse, so nothing is logged. PH_OK
 * with *conf and *decl set; PH_EINVAL for NULL arguments; PH_ESTATE on a
 * thread that may not read; PH_ENOENT for no such instance or key, or a
 * key of another type. */
static int peer_key(ph_ctx *ctx, const char *fn, const char *section,
                    const char *key, const void *out, const ph_conf **conf,
                    const ph_conf_key **decl, int (*type_ok)(ph_conf_type)) {
  if (!ctx || !section || !key || !out)
    return PH_EINVAL;
  const ph_conf *c = conf_of(ctx, fn);
  if (!c)
    return PH_ESTATE;
  const ph_conf_key *d = conf_key_decl(c, section, key);
  if (!d || !type_ok(d->type))
    return PH_ENOENT;
  *conf = c;
  *decl = d;
  return PH_OK;
}

static int peer_number(ph_conf_type t) {
  return t == PH_CONF_INT || t == PH_CONF_DURATION || t == PH_CONF_SIZE ||
         t == PH_CONF_BOOL;
}

static int peer_string(ph_conf_type t) {
  return t == PH_CONF_STRING || t == PH_CONF_ENUM;
}

static int api_conf_peer_int(ph_ctx *ctx, const char *section,
                             const char *key, int64_t *out) {
  const ph_conf *c = NULL;
  const ph_conf_key *d = NULL;
  int rc = peer_key(ctx, "conf_peer_int", section, key, out, &c, &d,
                    peer_number);
  if (rc == PH_OK)
    *out = conf_int(c, section, key);
  return rc;
}

/* A string another module may see: never one its owner flagged sensitive,
 * nor one named like a secret (the words log.h redacts), so that no
 * module reads another's passwords or DSNs through this. */
static int api_conf_peer_str(ph_ctx *ctx, const char *section,
                             const char *key, const char **out) {
  const ph_conf *c = NULL;
  const ph_conf_key *d = NULL;
  int rc = peer_key(ctx, "conf_peer_str", section, key, out, &c, &d,
                    peer_string);
  if (rc != PH_OK)
    return rc;
  if ((d->flags & PH_CONF_SENSITIVE) || log_key_is_secret(d->name))
    return PH_EINVAL;
  const char *v = conf_str(c, section, key);
  if (!v)
    return PH_ENOENT; /* declared but not finalized: no value to give */
  *out = v;
  return PH_OK;
}

/* ---- loop, fd watchers, timers --------------------------------------- */

static struct ev_loop *api_loop(ph_ctx *ctx) {
  if (!on_loop(ctx, LOOP_ONLY("loop")))
    return NULL;
  return ctx->core->loop;
}

static int64_t api_now_ms(ph_ctx *ctx) {
  (void)ctx;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void io_cb(struct ev_loop *loop, ev_io *w, int revents) {
  (void)loop;
  ph_io *io = (ph_io *)w;
  int ev = ((revents & EV_READ) ? PH_READ : 0) |
           ((revents & EV_WRITE) ? PH_WRITE : 0);
  io->fn(io, w->fd, ev, io->arg);
}

static void io_apply(ph_io *io, int events) {
  struct ev_loop *loop = io->ctx->core->loop;
  int ev = ((events & PH_READ) ? EV_READ : 0) |
           ((events & PH_WRITE) ? EV_WRITE : 0);
  if (ev_is_active(&io->w)) {
    if ((io->w.events & (EV_READ | EV_WRITE)) == ev)
      return;
    ev_io_stop(loop, &io->w);
  }
  if (ev) {
    ev_io_set(&io->w, io->w.fd, ev);
    ev_io_start(loop, &io->w);
  }
}

static void api_io_set(ph_io *io, int events) {
  if (!on_loop(io->ctx, LOOP_ONLY("io_set")))
    return;
  io_apply(io, events);
}

static ph_io *api_io_new(ph_ctx *ctx, int fd, int events, ph_io_fn fn,
                         void *arg) {
  if (!on_loop(ctx, LOOP_ONLY("io_new")))
    return NULL;
  if (fd < 0 || !fn || in_check(ctx))
    return NULL;
  ph_io *io = calloc(1, sizeof(*io));
  if (!io)
    return NULL;
  io->ctx = ctx;
  io->fn = fn;
  io->arg = arg;
  ev_io_init(&io->w, io_cb, fd, 0);
  io_apply(io, events);
  return io;
}

static void api_io_free(ph_io *io) {
  if (!io || !on_loop(io->ctx, LOOP_ONLY("io_free")))
    return;
  ev_io_stop(io->ctx->core->loop, &io->w);
  free(io);
}

static void timer_cb(struct ev_loop *loop, ev_timer *w, int revents) {
  (void)loop;
  (void)revents;
  ph_timer *t = (ph_timer *)w;
  t->fn(t, t->arg);
}

static ph_timer *api_timer_new(ph_ctx *ctx, ph_timer_fn fn, void *arg) {
  if (!on_loop(ctx, LOOP_ONLY("timer_new")))
    return NULL;
  if (!fn || in_check(ctx))
    return NULL;
  ph_timer *t = calloc(1, sizeof(*t));
  if (!t)
    return NULL;
  t->ctx = ctx;
  t->fn = fn;
  t->arg = arg;
  ev_timer_init(&t->w, timer_cb, 0., 0.);
  return t;
}

static void api_timer_set(ph_timer *t, uint64_t after_ms, uint64_t repeat_ms) {
  if (!on_loop(t->ctx, LOOP_ONLY("timer_set")))
    return;
  struct ev_loop *loop = t->ctx->core->loop;
  ev_timer_stop(loop, &t->w);
  if (after_ms == 0 && repeat_ms == 0)
    return;
  ev_timer_set(&t->w, (double)after_ms / 1000.0, (double)repeat_ms / 1000.0);
  ev_timer_start(loop, &t->w);
}

static void api_timer_free(ph_timer *t) {
  if (!t || !on_loop(t->ctx, LOOP_ONLY("timer_free")))
    return;
  ev_timer_stop(t->ctx->core->loop, &t->w);
  free(t);
}

/* ---- calls on the loop's next turn (ABI 1.6; defer.c) ---------------- */

static ph_defer *api_defer_new(ph_ctx *ctx, ph_defer_fn fn, void *arg) {
  if (!on_loop(ctx, LOOP_ONLY("defer_new")))
    return NULL;
  if (!fn || in_check(ctx) || !ctx->core->defers)
    return NULL;
  return defer_new(ctx->core->defers, ctx, fn, arg);
}

static int api_defer_post(ph_defer *d) {
  if (!d)
    return PH_EINVAL;
  if (!on_loop(d->ctx, LOOP_ONLY("defer_post")))
    return PH_ESTATE;
  defer_post(d);
  return PH_OK;
}

static int api_defer_cancel(ph_defer *d) {
  if (!d)
    return PH_EINVAL;
  if (!on_loop(d->ctx, LOOP_ONLY("defer_cancel")))
    return PH_ESTATE;
  return defer_cancel(d);
}

static void api_defer_free(ph_defer *d) {
  if (!d || !on_loop(d->ctx, LOOP_ONLY("defer_free")))
    return;
  defer_free(d);
}

/* ---- cross-thread work ----------------------------------------------- */

static int api_post(ph_ctx *ctx, ph_call_fn fn, void *arg,
                    ph_free_fn free_arg) {
  if (!fn)
    return PH_EINVAL;
  ph_mailbox *mb = ctx->core->mailbox;
  if (!mb || in_check(ctx))
    return PH_ESTATE;
  return mailbox_post(mb, fn, arg, free_arg);
}

static int64_t api_submit(ph_ctx *ctx, ph_work_fn work, ph_done_fn done,
                          void *arg) {
  if (!on_loop(ctx, LOOP_ONLY("submit")))
    return PH_ESTATE;
  if (!work || !done)
    return PH_EINVAL;
  if (!ctx->core->pool || in_check(ctx))
    return PH_ESTATE;
  /* The job reads the configuration in force now, whatever reloads
   * happen before its done ran. */
  return pool_submit_conf(ctx->core->pool, ctx, work, done, arg,
                          ctx->core->conf);
}

/* A job id belongs to the ctx that submitted it. */
static int api_job_cancel(ph_ctx *ctx, int64_t job) {
  if (!on_loop(ctx, LOOP_ONLY("job_cancel")))
    return PH_ESTATE;
  if (!ctx->core->pool)
    return PH_ENOENT;
  int rc = pool_cancel(ctx->core->pool, ctx, job);
  if (rc != POOL_EFOREIGN)
    return rc;
  debug_misuse(ctx->name, "job_cancel: the job belongs to another module");
  return PH_ENOENT;
}

/* ---- module threads (ABI 1.2) ------------------------------------------ */

static ph_thread *api_thread_start(ph_ctx *ctx, const char *name,
                                   ph_thread_fn run, ph_call_fn stop,
                                   void *arg, size_t queue) {
  if (!on_loop(ctx, LOOP_ONLY("thread_start")))
    return NULL;
  const char *why = NULL;
  ph_thread *t = NULL;
  if (in_check(ctx) || !in_init_or_start(ctx) || !ctx->core->loop)
    why = "allowed only in the module's init or start";
  else
    t = threads_start(ctx, name, run, stop, arg, queue, &why);
  if (!t) {
    ph_log_field f[] = {PH_STR("thread", name ? name : ""),
                        PH_STR("reason", why ? why : "")};
    log_write(ctx->name, PH_LOG_ERROR, "module thread refused", f, 2);
  }
  return t;
}

static int api_thread_post(ph_thread *t, ph_call_fn fn, void *arg,
                           ph_free_fn free_arg) {
  if (!t || !fn)
    return PH_EINVAL;
  return threads_post(t, fn, arg, free_arg);
}

static void api_thread_join(ph_thread *t) {
  if (!t || !on_loop(threads_ctx(t), LOOP_ONLY("thread_join")))
    return;
  threads_join(t);
}

/* ---- services -------------------------------------------------------- */

static int api_service_register(ph_ctx *ctx, const char *name, uint16_t major,
                                uint16_t minor, const void *vt, void *self) {
  if (!on_loop(ctx, LOOP_ONLY("service_register")))
    return PH_ESTATE;
  if (!in_init(ctx))
    return PH_ESTATE;
  /* The provider is the caller's instance (ABI 1.2). */
  return services_register(ctx->core->services, ctx, ctx->name, name, major,
                           minor, vt, self);
}

static int lists(const char *const *list, const char *name) {
  for (; list && *list; list++)
    if (strcmp(*list, name) == 0)
      return 1;
  return 0;
}

/* Declared, not registered: answers in check and init, before any
 * provider ran, from the descriptors of the modules loaded. */
static int api_service_provided(ph_ctx *ctx, const char *name) {
  if (!ctx || !name || !on_loop(ctx, LOOP_ONLY("service_provided")))
    return 0;
  for (size_t i = 0; i < ctx->core->n_mods; i++)
    if (lists(ctx->core->mods[i]->mod->provides, name))
      return 1;
  return 0;
}

/* The same, for one provider named by its instance's full name. */
static int api_service_provider_loaded(ph_ctx *ctx, const char *name,
                                       const char *provider) {
  if (!ctx || !name || !provider ||
      !on_loop(ctx, LOOP_ONLY("service_provider_loaded")))
    return 0;
  for (size_t i = 0; i < ctx->core->n_mods; i++)
    if (strcmp(ctx->core->mods[i]->name, provider) == 0)
      return lists(ctx->core->mods[i]->mod->provides, name);
  return 0;
}

static const void *api_service_get_named(ph_ctx *ctx, const char *name,
                                         const char *provider, uint16_t major,
                                         uint16_t min_minor, void **self) {
  if (!on_loop(ctx, LOOP_ONLY("service_get")))
    return NULL;
  if (ctx->core->phase < PH_PHASE_START || in_check(ctx))
    return NULL;
  ph_buf why;
  buf_init(&why, 1024);
  const void *vt = services_get_named(ctx->core->services, ctx, name,
                                      provider, major, min_minor, self, &why);
  if (!vt && why.len) {
    /* Several providers and none named: fail closed, and say which. */
    ph_log_field f[] = {PH_STR("reason", why.data)};
    log_write(ctx->name, PH_LOG_ERROR,
              "service has several providers; name one", f, 1);
  }
  buf_free(&why);
  return vt;
}

static const void *api_service_get(ph_ctx *ctx, const char *name,
                                   uint16_t major, uint16_t min_minor,
                                   void **self) {
  return api_service_get_named(ctx, name, NULL, major, min_minor, self);
}

/* Drops the caller's use of every provider of name it got. */
static void api_service_release(ph_ctx *ctx, const char *name) {
  if (!on_loop(ctx, LOOP_ONLY("service_release")))
    return;
  services_release(ctx->core->services, ctx, name);
}

static int api_service_unregister(ph_ctx *ctx, const char *name) {
  if (!on_loop(ctx, LOOP_ONLY("service_unregister")))
    return PH_ESTATE;
  return services_unregister(ctx->core->services, ctx, name);
}

/* ---- bus ------------------------------------------------------------- */

static ph_topic *api_topic(ph_ctx *ctx, const char *name, const char *type) {
  if (!on_loop(ctx, LOOP_ONLY("topic")))
    return NULL;
  if (!in_init(ctx) || !name || !type)
    return NULL;
  return bus_topic(ctx->core->bus, name, type);
}

static int api_subscribe(ph_ctx *ctx, ph_topic *t, ph_bus_fn fn, void *arg) {
  if (!on_loop(ctx, LOOP_ONLY("subscribe")))
    return PH_ESTATE;
  if (!in_init(ctx))
    return PH_ESTATE;
  if (!t || !fn)
    return PH_EINVAL;
  return bus_subscribe(ctx->core->bus, t, fn, arg, ctx);
}

/* A subscription id belongs to the ctx that subscribed. */
static int api_unsubscribe(ph_ctx *ctx, int id) {
  if (!on_loop(ctx, LOOP_ONLY("unsubscribe")))
    return PH_ESTATE;
  int rc = bus_unsubscribe(ctx->core->bus, id, ctx);
  if (rc != BUS_EFOREIGN)
    return rc;
  debug_misuse(ctx->name,
               "unsubscribe: the subscription belongs to another module");
  return PH_ENOENT;
}

static int api_publish(ph_ctx *ctx, ph_topic *t, void *payload,
                       ph_free_fn free_fn) {
  if (!on_loop(ctx, LOOP_ONLY("publish"))) {
    /* The bus owns the payload whatever the result. */
    if (free_fn)
      free_fn(payload);
    return PH_ESTATE;
  }
  if (!t || in_check(ctx)) {
    if (free_fn)
      free_fn(payload);
    return t ? PH_ESTATE : PH_EINVAL;
  }
  return bus_publish(ctx->core->bus, t, payload, free_fn);
}

static int api_post_publish(ph_ctx *ctx, ph_topic *t, void *payload,
                            ph_free_fn free_fn) {
  if (!t)
    return PH_EINVAL;
  if (!ctx->core->mailbox || in_check(ctx))
    return PH_ESTATE;
  return bus_post(ctx->core->bus, t, payload, free_fn);
}

/* ---- metrics --------------------------------------------------------- */

static ph_metric *register_metric(ph_ctx *ctx, const char *fn,
                                  const ph_metric_def *def,
                                  const char *const *combos, size_t n_combos,
                                  int all) {
  if (!on_loop(ctx, fn))
    return NULL;
  if (!in_init(ctx) || !def)
    return NULL;
  ph_buf err;
  buf_init(&err, 1024);
  ph_metric *m =
      all ? metrics_register(ctx->core->metrics, def, &err)
          : metrics_register_only(ctx->core->metrics, def, combos, n_combos,
                                  &err);
  if (!m) {
    ph_log_field f[] = {PH_STR("metric", def->name ? def->name : ""),
                        PH_STR("reason", err.data ? err.data : "")};
    log_write(ctx->name, PH_LOG_ERROR, "metric registration refused", f,
              2);
  }
  buf_free(&err);
  return m;
}

static ph_metric *api_metric(ph_ctx *ctx, const ph_metric_def *def) {
  return register_metric(ctx, LOOP_ONLY("metric"), def, NULL, 0, 1);
}

static ph_metric *api_metric_only(ph_ctx *ctx, const ph_metric_def *def,
                                  const char *const *combos,
                                  size_t n_combos) {
  return register_metric(ctx, LOOP_ONLY("metric_only"), def, combos,
                         n_combos, 0);
}

/* ---- admin routes (ABI 1.3) ------------------------------------------ */

static int api_route_register(ph_ctx *ctx, const char *prefix,
                              ph_route_fn handle, ph_route_cancel_fn cancel,
                              void *arg, uint32_t max_in_flight) {
  if (!on_loop(ctx, LOOP_ONLY("route_register")))
    return PH_ESTATE;
  if (!in_init(ctx))
    return PH_ESTATE;
  ph_buf why;
  buf_init(&why, 512);
  int rc = routes_add(ctx->core->routes, ctx, ctx->name, prefix, handle,
                      cancel, arg, max_in_flight, &why);
  if (rc != PH_OK) {
    ph_log_field f[] = {PH_STR("reason", why.data ? why.data : "")};
    log_write(ctx->name, PH_LOG_ERROR, "admin route refused", f, 1);
  }
  buf_free(&why);
  return rc;
}

static int api_route_reply(ph_ctx *ctx, int64_t req, int status,
                           const char *content_type, const char *body,
                           size_t body_len) {
  if (!on_loop(ctx, LOOP_ONLY("route_reply")))
    return PH_ESTATE;
  return routes_reply(ctx->core->routes, ctx, req, status, content_type,
                      body, body_len);
}

/* ---- status panels (ABI 1.7) ----------------------------------------- */

static int api_status_register(ph_ctx *ctx, const char *name,
                               const char *title, ph_panel_fn fill,
                               void *arg) {
  if (!on_loop(ctx, LOOP_ONLY("status_register")))
    return PH_ESTATE;
  if (!in_init(ctx))
    return PH_ESTATE;
  ph_buf why;
  buf_init(&why, 512);
  int rc = status_add(ctx->core->status, ctx, ctx->name, ctx->mod->name,
                      name, title, fill, arg, &why);
  if (rc != PH_OK) {
    ph_log_field f[] = {PH_STR("reason", why.data ? why.data : "")};
    log_write(ctx->name, PH_LOG_ERROR, "status panel refused", f, 1);
  }
  buf_free(&why);
  return rc;
}

const ph_api ph_host_api = {
    .size = sizeof(ph_api),
    .abi_major = PH_ABI_MAJOR,
    .abi_minor = PH_ABI_MINOR,
    .module_name = api_module_name,
    .set_ready = api_set_ready,
    .stop_done = api_stop_done,
    .stopping = api_stopping,
    .log_enabled = api_log_enabled,
    .log = api_log,
    .log_rl = api_log_rl,
    .conf_str = api_conf_str,
    .conf_int = api_conf_int,
    .conf_list_len = api_conf_list_len,
    .conf_list_at = api_conf_list_at,
    .loop = api_loop,
    .now_ms = api_now_ms,
    .io_new = api_io_new,
    .io_set = api_io_set,
    .io_free = api_io_free,
    .timer_new = api_timer_new,
    .timer_set = api_timer_set,
    .timer_free = api_timer_free,
    .post = api_post,
    .submit = api_submit,
    .job_cancel = api_job_cancel,
    .service_register = api_service_register,
    .service_get = api_service_get,
    .service_release = api_service_release,
    .service_unregister = api_service_unregister,
    .topic = api_topic,
    .subscribe = api_subscribe,
    .unsubscribe = api_unsubscribe,
    .publish = api_publish,
    .post_publish = api_post_publish,
    .topic_name = bus_topic_name,
    .metric = api_metric,
    .series = metrics_series,
    .inc = metrics_inc,
    .gauge_set = metrics_gauge_set,
    .gauge_add = metrics_gauge_add,
    .observe = metrics_observe,
    .counter_set = metrics_counter_set,
    .parse_listen_addr = addr_parse_listen,
    .service_provided = api_service_provided,
    .thread_start = api_thread_start,
    .thread_post = api_thread_post,
    .thread_join = api_thread_join,
    .service_get_named = api_service_get_named,
    .service_provider_loaded = api_service_provider_loaded,
    .metric_only = api_metric_only,
    .conf_is_set = api_conf_is_set,
    .route_register = api_route_register,
    .route_reply = api_route_reply,
    .conf_peer_int = api_conf_peer_int,
    .conf_peer_str = api_conf_peer_str,
    .drain_cut = api_drain_cut,
    .defer_new = api_defer_new,
    .defer_post = api_defer_post,
    .defer_cancel = api_defer_cancel,
    .defer_free = api_defer_free,
    .status_register = api_status_register,
    .status_field = status_api_field,
    .status_field_int = status_api_field_int,
    .status_table = status_api_table,
    .status_row = status_api_row,
};
