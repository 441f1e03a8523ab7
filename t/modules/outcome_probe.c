/* SPDX-License-Identifier: BSD-2-Clause */
/* A test module (t/integration/cp_outcomes.sh): records outcomes through
 * "outcome.sink" when asked on its admin route:
 *   GET /v1/test/outcomes?n=N[&bad=1][&rule=R]
 * records N outcomes (proxy "p1", rule "r1" or R, stage DIAL, SUCCESS, latency
 * i microseconds, observed now), or with bad=1 N malformed ones (an
 * empty proxy id), all inside the one loop callback, and answers
 * "ok=A full=F invalid=I": what record() returned. It stands for issue
 * 13's dispatch, the sink's real caller. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <proxyhost/module.h>
#include <proxyhost/outcome_sink.h>

#define N_MAX 1000000

typedef struct oprobe {
  ph_ctx *ctx;
  const ph_outcome_sink_v1 *sink;
  void *self;
} oprobe;

static const ph_api *api;

static long query_int(const char *q, const char *name) {
  size_t l = strlen(name);
  for (const char *p = q; p && *p;) {
    if (!strncmp(p, name, l) && p[l] == '=')
      return strtol(p + l + 1, NULL, 10);
    p = strchr(p, '&');
    if (p)
      p++;
  }
  return 0;
}

/* The value of name in q, copied into out (at most outlen - 1 bytes), or
 * def. */
static const char *query_str(const char *q, const char *name, char *out,
                             size_t outlen, const char *def) {
  size_t l = strlen(name);
  for (const char *p = q; p && *p;) {
    if (!strncmp(p, name, l) && p[l] == '=') {
      size_t n = strcspn(p + l + 1, "&");
      if (n >= outlen)
        n = outlen - 1;
      memcpy(out, p + l + 1, n);
      out[n] = 0;
      return out;
    }
    p = strchr(p, '&');
    if (p)
      p++;
  }
  return def;
}

static void route_handle(void *arg, int64_t id, const ph_http_request *r) {
  oprobe *p = arg;
  long n = query_int(r->query, "n");
  int bad = query_int(r->query, "bad") != 0;
  char rbuf[PH_OUTCOME_ID_MAX + 1];
  const char *rule = query_str(r->query, "rule", rbuf, sizeof(rbuf), "r1");
  if (n < 0 || n > N_MAX || !p->sink) {
    api->route_reply(p->ctx, id, 400, "text/plain", "bad n\n", 6);
    return;
  }
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
  long ok = 0, full = 0, invalid = 0;
  for (long i = 0; i < n; i++) {
    ph_outcome o = {0, bad ? "" : "p1", rule, PH_OUTCOME_STAGE_DIAL,
                    PH_OUTCOME_SUCCESS, i, now};
    int rc = p->sink->record(p->self, &o);
    if (rc == PH_OK)
      ok++;
    else if (rc == PH_EFULL)
      full++;
    else
      invalid++;
  }
  char body[96];
  int len = snprintf(body, sizeof(body), "ok=%ld full=%ld invalid=%ld\n", ok,
                     full, invalid);
  api->route_reply(p->ctx, id, 200, "text/plain", body, (size_t)len);
}

static void route_cancel(void *arg, int64_t id) {
  (void)arg;
  (void)id;
}

static int op_init(ph_ctx *ctx, const ph_api *a, void **state) {
  api = a;
  oprobe *p = calloc(1, sizeof(*p));
  if (!p)
    return PH_ENOMEM;
  *state = p;
  p->ctx = ctx;
  return api->route_register(ctx, "/v1/test/outcomes", route_handle,
                             route_cancel, p, 4);
}

static int op_start(void *state) {
  oprobe *p = state;
  p->sink = api->service_get(p->ctx, PH_OUTCOME_SINK_SERVICE,
                             PH_OUTCOME_SINK_MAJOR, 0, &p->self);
  return p->sink ? PH_OK : PH_ENOENT;
}

static void op_destroy(void *state) { free(state); }

static const char *const requires[] = {PH_OUTCOME_SINK_SERVICE, NULL};

PROXYHOST_MODULE = {
    PH_MODULE_HEADER("outcome_probe", "1.0.0"),
    .description = "test: records outcomes through outcome.sink on demand",
    .requires = requires,
    .init = op_init,
    .start = op_start,
    .destroy = op_destroy,
};
