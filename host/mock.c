#include "mock.h"

#include <stdlib.h>
#include <string.h>

struct ph_mock {
  ph_core *core;
  ph_buf text;
};

ph_mock *mock_new(const char *ini_text, ph_buf *err) {
  ph_mock *m = calloc(1, sizeof(*m));
  if (!m)
    return NULL;
  buf_init(&m->text, 0);
  m->core = core_new();
  if (!m->core ||
      core_read_config(m->core, NULL, ini_text ? ini_text : "", NULL, 0,
                       NULL, err) < 0 ||
      core_load_modules(m->core, err) < 0) {
    mock_free(m);
    return NULL;
  }
  return m;
}

int mock_add(ph_mock *m, const ph_module *mod, ph_buf *err) {
  return core_add_module(m->core, mod, err);
}

int mock_init(ph_mock *m, ph_buf *err) {
  if (core_validate(m->core, err) < 0 ||
      core_check_modules(m->core, m->core->conf, err) < 0 ||
      core_setup(m->core, err) < 0)
    return -1;
  return core_init_modules(m->core, err);
}

int mock_start(ph_mock *m, ph_buf *err) {
  return core_start_modules(m->core, err);
}

int mock_reload(ph_mock *m, const char *new_text) {
  if (new_text) {
    free(m->core->config_text);
    m->core->config_text = strdup(new_text);
  }
  return core_reload(m->core);
}

static void run_timeout(struct ev_loop *loop, ev_timer *w, int revents) {
  (void)w;
  (void)revents;
  ev_break(loop, EVBREAK_ONE);
}

void mock_run_for(ph_mock *m, int ms) {
  ev_timer t;
  ev_timer_init(&t, run_timeout, ms / 1000.0, 0.);
  ev_timer_start(m->core->loop, &t);
  ev_run(m->core->loop, 0);
  ev_timer_stop(m->core->loop, &t);
}

int mock_stop(ph_mock *m) {
  ph_core *c = m->core;
  core_begin_stop(c);
  if (c->stop_pending) {
    /* The drain timer bounds this run. */
    ev_run(c->loop, 0);
  }
  return c->drain_expired ? -1 : 0;
}

const char *mock_metrics_text(ph_mock *m) {
  buf_reset(&m->text);
  metrics_render(m->core->metrics, &m->text);
  return m->text.data ? m->text.data : "";
}

int mock_ready(ph_mock *m) {
  ph_buf why;
  buf_init(&why, 4096);
  int r = core_ready(m->core, &why);
  buf_free(&why);
  return r;
}

int mock_publish(ph_mock *m, const char *topic, const char *type,
                 void *payload, ph_free_fn free_fn) {
  ph_topic *t = bus_topic(m->core->bus, topic, type);
  if (!t) {
    if (free_fn)
      free_fn(payload);
    return PH_EINVAL;
  }
  return bus_publish(m->core->bus, t, payload, free_fn);
}

ph_core *mock_core(ph_mock *m) { return m->core; }

void mock_free(ph_mock *m) {
  if (!m)
    return;
  core_free(m->core);
  buf_free(&m->text);
  free(m);
}
