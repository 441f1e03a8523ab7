/* SPDX-License-Identifier: BSD-2-Clause */
/* The mock host: the host core driven by a test program instead of main.c.
 * One API, <proxyhost/mock.h>'s ph_mock_*, the only symbols that
 * libproxyhost-mock exports; our own unit tests link the same code as
 * host/libphmock.la. The ph_mock_* functions check the phase, so that a
 * misuse is an error code and not a crash inside the host, and copy the
 * errors into the caller's buffer; the static mk_* below do the work.
 * mock_core (host/mock_core.h) is the one in-tree extra: white-box tests
 * of the host's own loader and configuration read its ph_core. */
#include "mock_core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "debug.h"
#include "status_json.h"

/* Where the public face is in the lifecycle (the in-tree face does not
 * look at it). */
enum mock_phase {
  MOCK_NEW = 0,
  MOCK_INITED,
  MOCK_STARTED,
  MOCK_STOPPED,
  MOCK_FAILED /* init or start failed: only free, metrics, ready */
};

struct ph_mock {
  ph_core *core;
  ph_buf text;
  enum mock_phase phase;
  /* The last request's answer (mock_request). */
  ph_buf reply_body;
  char reply_type[256];
  int reply_status; /* 0 while none came */
  ph_buf status_json; /* the last ph_mock_status's document */
};

#define MOCK_ERR_LIMIT 65536
#define MOCK_RUN_MAX_MS 3600000

/* The identity of the mock as a service provider and user. */
#define MOCK_PROVIDER "mock"

static void mk_free(ph_mock *m);

/* ---- the host core behind the API --------------------------------------- */

/* Each mock host runs the host core on a libev loop of its own, so that
 * several live in one process (a test drives a client, a server and an
 * agent together, each run in turn by mock_run_for). They share the
 * process's logger: the [log] section of the last one initialised
 * applies. */
static ph_mock *mk_new(const char *ini_text, ph_buf *err) {
  ph_mock *m = calloc(1, sizeof(*m));
  if (!m)
    return NULL;
  buf_init(&m->text, 0);
  buf_init(&m->reply_body, 0);
  buf_init(&m->status_json, 0);
  debug_checks = 1; /* the mock host runs tests: misuse aborts (debug.h) */
  m->core = core_new();
  if (m->core)
    m->core->own_loop = 1;
  if (!m->core ||
      core_read_config(m->core, NULL, ini_text ? ini_text : "", NULL, 0,
                       NULL, err) < 0 ||
      core_load_modules(m->core, err) < 0) {
    mk_free(m);
    return NULL;
  }
  return m;
}

static int mk_add(ph_mock *m, const ph_module *mod, ph_buf *err) {
  return core_add_module(m->core, mod, err);
}

static int mk_add_instance(ph_mock *m, const ph_module *mod,
                           const char *instance, ph_buf *err) {
  return core_add_instance(m->core, mod, instance, err);
}

static int mk_init(ph_mock *m, ph_buf *err) {
  if (core_validate(m->core, err) < 0 ||
      core_check_modules(m->core, m->core->conf, err) < 0 ||
      core_setup(m->core, err) < 0)
    return -1;
  return core_init_modules(m->core, err);
}

static int mk_start(ph_mock *m, ph_buf *err) {
  return core_start_modules(m->core, err);
}

static void run_timeout(struct ev_loop *loop, ev_timer *w, int revents) {
  (void)w;
  (void)revents;
  ev_break(loop, EVBREAK_ONE);
}

static void mk_run_for(ph_mock *m, int ms) {
  ev_timer t;
  ev_timer_init(&t, run_timeout, ms / 1000.0, 0.);
  ev_timer_start(m->core->loop, &t);
  ev_run(m->core->loop, 0);
  ev_timer_stop(m->core->loop, &t);
}

static int mk_stop(ph_mock *m) {
  ph_core *c = m->core;
  core_begin_stop(c);
  if (c->stop_pending) {
    /* The drain timer bounds this run. */
    ev_run(c->loop, 0);
  }
  return c->drain_expired ? -1 : 0;
}

static const char *mk_metrics_text(ph_mock *m) {
  if (!m->core->metrics)
    return ""; /* before init created the registry */
  buf_reset(&m->text);
  metrics_render(m->core->metrics, &m->text);
  return m->text.data ? m->text.data : "";
}

static int mk_ready(ph_mock *m) {
  ph_buf why;
  buf_init(&why, 4096);
  int r = core_ready(m->core, &why);
  buf_free(&why);
  return r;
}

static int mk_publish(ph_mock *m, const char *topic, const char *type,
                      void *payload, ph_free_fn free_fn) {
  ph_topic *t = bus_topic(m->core->bus, topic, type);
  if (!t) {
    if (free_fn)
      free_fn(payload);
    return PH_EINVAL;
  }
  return bus_publish(m->core->bus, t, payload, free_fn);
}

/* ---- admin routes (ABI 1.3) ---------------------------------------- */

static void on_reply(void *arg, int status, const char *type,
                     const char *body, size_t body_len) {
  ph_mock *m = arg;
  m->reply_status = status;
  snprintf(m->reply_type, sizeof(m->reply_type), "%s", type ? type : "");
  buf_append(&m->reply_body, body, body_len);
}

/* Stops the loop once the answer came. A prepare watcher, not a check:
 * it runs before the loop blocks, so an answer given by a callback of one
 * turn ends the run at the next turn instead of after the whole timeout
 * (a check watcher runs after the poll, which then waited for nothing). */
static void reply_seen(struct ev_loop *loop, ev_prepare *w, int revents) {
  (void)revents;
  ph_mock *m = w->data;
  if (m->reply_status)
    ev_break(loop, EVBREAK_ONE);
}

static int mk_request(ph_mock *m, const char *method, const char *target,
                      const char *authorization, const char *content_type,
                      const char *body, size_t body_len, int timeout_ms) {
  m->reply_status = 0;
  m->reply_type[0] = '\0';
  buf_reset(&m->reply_body);
  if (!method || !target)
    return PH_EINVAL;
  const char *q = strchr(target, '?');
  routes_in in = {
      .method = method,
      .method_len = strlen(method),
      .path = target,
      .path_len = q ? (size_t)(q - target) : strlen(target),
      .query = q ? q + 1 : "",
      .query_len = q ? strlen(q + 1) : 0,
      .authorization = authorization,
      .authorization_len = authorization ? strlen(authorization) : 0,
      .content_type = content_type,
      .content_type_len = content_type ? strlen(content_type) : 0,
      .body = body,
      .body_len = body ? body_len : 0,
  };
  int64_t id = routes_dispatch(m->core->routes, &in, on_reply, m);
  if (id == 0)
    return 404; /* as the admin listener answers */
  if (id == PH_EFULL)
    return 503;
  if (id < 0)
    return (int)id;
  if (!m->reply_status) {
    ev_prepare seen;
    ev_prepare_init(&seen, reply_seen);
    seen.data = m;
    ev_prepare_start(m->core->loop, &seen);
    mk_run_for(m, timeout_ms);
    ev_prepare_stop(m->core->loop, &seen);
  }
  if (!m->reply_status) {
    routes_cancel(m->core->routes, id); /* the deadline passed */
    return 504;
  }
  return m->reply_status;
}

static const char *mk_reply_body(ph_mock *m, size_t *len) {
  if (len)
    *len = m->reply_body.len;
  return m->reply_body.data ? m->reply_body.data : "";
}

static const char *mk_reply_type(ph_mock *m) { return m->reply_type; }

ph_core *mock_core(ph_mock *m) { return m->core; }

static void mk_free(ph_mock *m) {
  if (!m)
    return;
  core_free(m->core);
  buf_free(&m->text);
  buf_free(&m->reply_body);
  buf_free(&m->status_json);
  free(m);
}

/* ---- the public face: <proxyhost/mock.h> -------------------------------- */

/* err is always written when errlen > 0: "" unless there are reasons. */
static void put_err(char *err, size_t errlen, const char *text) {
  if (err && errlen > 0)
    snprintf(err, errlen, "%s", text ? text : "");
}

static void put_buf(char *err, size_t errlen, const ph_buf *b) {
  put_err(err, errlen, b->data);
}

static int refuse(char *err, size_t errlen, int status, const char *what,
                  const char *rule) {
  if (err && errlen > 0)
    snprintf(err, errlen, "%s: %s\n", what, rule);
  return status;
}

#define NO_MOCK(what) refuse(err, errlen, PH_EINVAL, what, "the mock is NULL")

/* Whether the loop and the host services exist and may run. */
static int loop_usable(const ph_mock *m) {
  return m && (m->phase == MOCK_INITED || m->phase == MOCK_STARTED ||
               m->phase == MOCK_STOPPED);
}

ph_mock *ph_mock_new(const char *ini_text, char *err, size_t errlen) {
  ph_buf b;
  buf_init(&b, MOCK_ERR_LIMIT);
  ph_mock *m = mk_new(ini_text, &b);
  if (!m && b.len == 0)
    buf_puts(&b, "out of memory\n");
  put_err(err, errlen, m ? "" : b.data);
  buf_free(&b);
  return m;
}

int ph_mock_add(ph_mock *m, const ph_module *mod, char *err, size_t errlen) {
  if (!m)
    return NO_MOCK("ph_mock_add");
  if (m->phase != MOCK_NEW)
    return refuse(err, errlen, PH_ESTATE, "ph_mock_add",
                  "modules are added before ph_mock_init");
  if (!mod)
    return refuse(err, errlen, PH_EINVAL, "ph_mock_add", "the module is NULL");
  ph_buf b;
  buf_init(&b, MOCK_ERR_LIMIT);
  int rc = mk_add(m, mod, &b) < 0 ? PH_EINVAL : PH_OK;
  put_buf(err, errlen, &b);
  buf_free(&b);
  return rc;
}

int ph_mock_add_instance(ph_mock *m, const ph_module *mod,
                         const char *instance, char *err, size_t errlen) {
  if (!m)
    return NO_MOCK("ph_mock_add_instance");
  if (m->phase != MOCK_NEW)
    return refuse(err, errlen, PH_ESTATE, "ph_mock_add_instance",
                  "modules are added before ph_mock_init");
  if (!mod)
    return refuse(err, errlen, PH_EINVAL, "ph_mock_add_instance",
                  "the module is NULL");
  ph_buf b;
  buf_init(&b, MOCK_ERR_LIMIT);
  int rc =
      mk_add_instance(m, mod, instance && *instance ? instance : NULL, &b) < 0
          ? PH_EINVAL
          : PH_OK;
  put_buf(err, errlen, &b);
  buf_free(&b);
  return rc;
}

int ph_mock_init(ph_mock *m, char *err, size_t errlen) {
  if (!m)
    return NO_MOCK("ph_mock_init");
  if (m->phase != MOCK_NEW)
    return refuse(err, errlen, PH_ESTATE, "ph_mock_init",
                  "already called");
  ph_buf b;
  buf_init(&b, MOCK_ERR_LIMIT);
  int rc = mk_init(m, &b) < 0 ? PH_EINVAL : PH_OK;
  m->phase = rc == PH_OK ? MOCK_INITED : MOCK_FAILED;
  put_buf(err, errlen, &b);
  buf_free(&b);
  return rc;
}

int ph_mock_start(ph_mock *m, char *err, size_t errlen) {
  if (!m)
    return NO_MOCK("ph_mock_start");
  if (m->phase != MOCK_INITED)
    return refuse(err, errlen, PH_ESTATE, "ph_mock_start",
                  "allowed once, right after a successful ph_mock_init");
  ph_buf b;
  buf_init(&b, MOCK_ERR_LIMIT);
  int rc = mk_start(m, &b) < 0 ? PH_EINVAL : PH_OK;
  m->phase = rc == PH_OK ? MOCK_STARTED : MOCK_FAILED;
  put_buf(err, errlen, &b);
  buf_free(&b);
  return rc;
}

/* Validates text exactly as core_reload will (read, declare every
 * section, finalize, the modules' checks), on a scratch core holding the
 * same descriptors: core_reload only logs its reasons, and the public API
 * returns them. check callbacks are pure (ABI 1.1), so running them twice
 * changes nothing. */
static int reload_precheck(ph_mock *m, const char *text, ph_buf *err) {
  ph_core *s = core_new();
  if (!s) {
    buf_puts(err, "out of memory\n");
    return -1;
  }
  int rc = core_read_config(s, NULL, text, NULL, 0, m->core->env, err);
  for (size_t i = 0; rc == 0 && i < m->core->n_mods; i++)
    rc = core_add_module(s, m->core->mods[i]->mod, err);
  if (rc == 0)
    rc = core_validate(s, err);
  if (rc == 0)
    rc = core_check_modules(s, s->conf, err);
  core_free(s); /* no loop, no init ran: frees the parsed text only */
  return rc;
}

int ph_mock_reload(ph_mock *m, const char *new_text, char *err,
                   size_t errlen) {
  if (!m)
    return NO_MOCK("ph_mock_reload");
  if (m->phase != MOCK_STARTED)
    return refuse(err, errlen, PH_ESTATE, "ph_mock_reload",
                  "allowed between ph_mock_start and ph_mock_stop");
  ph_core *c = m->core;
  char *next = strdup(new_text ? new_text
                               : (c->config_text ? c->config_text : ""));
  if (!next)
    return refuse(err, errlen, PH_ENOMEM, "ph_mock_reload", "out of memory");
  ph_buf b;
  buf_init(&b, MOCK_ERR_LIMIT);
  int valid = reload_precheck(m, next, &b) == 0;
  char *prev = c->config_text;
  const ph_conf *in_force = c->conf;
  c->config_text = next;
  int rc = core_reload(c);
  if (c->conf == in_force) {
    /* Refused: the old configuration, and so its text, stays in force
     * (NULL next time re-reads that, not the refused text). */
    c->config_text = prev;
    free(next);
    if (valid)
      buf_puts(&b, "configuration refused (see the log)\n");
  } else {
    free(prev);
    buf_reset(&b);
    if (rc < 0)
      buf_puts(&b, "a module's reload failed (see the log)\n");
  }
  put_buf(err, errlen, &b);
  buf_free(&b);
  return rc < 0 ? PH_EINVAL : PH_OK;
}

int ph_mock_run_for(ph_mock *m, int ms) {
  if (!m)
    return PH_EINVAL;
  if (!loop_usable(m))
    return PH_ESTATE;
  if (ms < 0 || ms > MOCK_RUN_MAX_MS)
    return PH_EINVAL;
  mk_run_for(m, ms);
  return PH_OK;
}

int ph_mock_stop(ph_mock *m) {
  if (!m)
    return PH_EINVAL;
  if (m->phase != MOCK_STARTED)
    return PH_ESTATE;
  m->phase = MOCK_STOPPED;
  return mk_stop(m) < 0 ? PH_ELIMIT : PH_OK;
}

const char *ph_mock_metrics_text(ph_mock *m) {
  return m ? mk_metrics_text(m) : "";
}

int ph_mock_ready(ph_mock *m) { return m ? mk_ready(m) : 0; }

int ph_mock_publish(ph_mock *m, const char *topic, const char *type,
                    void *payload, ph_free_fn free_payload) {
  int rc = !m ? PH_EINVAL : !loop_usable(m) ? PH_ESTATE : PH_OK;
  if (rc == PH_OK && (!topic || !type))
    rc = PH_EINVAL;
  if (rc != PH_OK) {
    /* The bus owns the payload whatever the result. */
    if (free_payload)
      free_payload(payload);
    return rc;
  }
  return mk_publish(m, topic, type, payload, free_payload);
}

void ph_mock_free(ph_mock *m) { mk_free(m); }

int ph_mock_request(ph_mock *m, const char *method, const char *target,
                    const char *authorization, const char *content_type,
                    const char *body, size_t body_len, int timeout_ms,
                    const char **reply_type, const char **reply_body,
                    size_t *reply_len) {
  if (!m)
    return PH_EINVAL;
  if (m->phase != MOCK_STARTED)
    return PH_ESTATE;
  if (!method || !target || target[0] != '/' || (!body && body_len) ||
      timeout_ms < 0 || timeout_ms > MOCK_RUN_MAX_MS)
    return PH_EINVAL;
  int rc = mk_request(m, method, target, authorization, content_type, body,
                      body_len, timeout_ms);
  if (reply_type)
    *reply_type = mk_reply_type(m);
  if (reply_body)
    *reply_body = mk_reply_body(m, reply_len);
  else if (reply_len)
    mk_reply_body(m, reply_len);
  return rc;
}

int ph_mock_status(ph_mock *m, const char *target, const char **json) {
  if (json)
    *json = NULL;
  if (!m || !target)
    return PH_EINVAL;
  if (m->phase != MOCK_STARTED)
    return PH_ESTATE;
  const char *q = strchr(target, '?');
  size_t plen = q ? (size_t)(q - target) : strlen(target);
  if (plen < 10 || memcmp(target, "/v1/status", 10) != 0 ||
      (plen > 10 && target[10] != '/'))
    return PH_EINVAL;
  status_query sq;
  char store[512];
  uint32_t rows = (uint32_t)conf_int(m->core->conf, "admin", "status_rows");
  int rc = status_parse(target + 10, plen - 10, q ? q + 1 : NULL,
                        q ? strlen(q + 1) : 0, rows, &sq, store,
                        sizeof(store));
  buf_reset(&m->status_json);
  if (rc == 0)
    rc = status_json(m->core->status, &sq, &m->status_json);
  if (rc == 503 && m->status_json.overflow)
    return PH_ENOMEM;
  if (rc == 200 && json)
    *json = m->status_json.data;
  return rc;
}

/* ---- the test kit: loop, services, metrics, descriptors ------------------ */

struct ev_loop *ph_mock_loop(ph_mock *m) {
  return loop_usable(m) ? m->core->loop : NULL;
}

/* Whether name[0..n) is a valid provider name: [a-z0-9_.], 1..max. */
static int provider_ok(const char *p) {
  size_t n = strlen(p);
  if (n == 0 || n > SERVICE_PROVIDER_MAX)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= '0' && p[i] <= '9') ||
          p[i] == '_' || p[i] == '.'))
      return 0;
  return 1;
}

int ph_mock_service_provide(ph_mock *m, const char *name, const char *provider,
                            uint16_t major, uint16_t minor, const void *vtable,
                            void *self) {
  if (!m)
    return PH_EINVAL;
  if (m->phase != MOCK_INITED && m->phase != MOCK_STARTED)
    return PH_ESTATE;
  if (!name || !vtable || (provider && !provider_ok(provider)))
    return PH_EINVAL;
  return services_register(m->core->services, m,
                           provider ? provider : MOCK_PROVIDER, name, major,
                           minor, vtable, self);
}

const void *ph_mock_service(ph_mock *m, const char *name, const char *provider,
                            uint16_t major, uint16_t min_minor, void **self) {
  if (self)
    *self = NULL;
  if (!loop_usable(m) || !name)
    return NULL;
  void *s = NULL;
  const void *vt = services_get_named(m->core->services, m, name,
                                      provider && *provider ? provider : NULL,
                                      major, min_minor, &s, NULL);
  if (vt && self)
    *self = s;
  return vt;
}

/* The value on the line "series value" of text, where series is name
 * followed by {labels}, or by nothing when labels is "". */
static int find_series(const char *text, const char *name, const char *labels,
                       double *value) {
  size_t nl = strlen(name), ll = labels ? strlen(labels) : 0;
  for (const char *p = text; p && *p;) {
    const char *q = p;
    if (strncmp(q, name, nl) == 0) {
      q += nl;
      int match;
      if (!labels)
        match = *q == ' ';
      else if (ll == 0)
        match = *q == ' ';
      else
        match = *q == '{' && strncmp(q + 1, labels, ll) == 0 &&
                q[1 + ll] == '}' && q[2 + ll] == ' ';
      if (match) {
        q = strchr(q, ' ');
        char *end;
        double v = strtod(q + 1, &end);
        if (end != q + 1) {
          *value = v;
          return PH_OK;
        }
      }
    }
    p = strchr(p, '\n');
    if (p)
      p++;
  }
  return PH_ENOENT;
}

int ph_mock_metric(ph_mock *m, const char *name, const char *labels,
                   double *value) {
  if (value)
    *value = 0;
  if (!m || !name || !*name || !value)
    return PH_EINVAL;
  if (!m->core->metrics)
    return PH_ESTATE;
  /* labels NULL: name is the whole series as rendered, with its labels
   * if any ("x_total{result=\"ok\"}"). */
  return find_series(mk_metrics_text(m), name, labels, value);
}

const ph_module *ph_mock_module(ph_mock *m, const char *instance) {
  if (!m || m->core->n_mods == 0)
    return NULL;
  if (!instance || !*instance)
    return m->core->mods[0]->mod;
  for (size_t i = 0; i < m->core->n_mods; i++)
    if (strcmp(m->core->mods[i]->name, instance) == 0)
      return m->core->mods[i]->mod;
  return NULL;
}
