/* SPDX-License-Identifier: BSD-2-Clause */
/* The stream the client hands to the frontend: the session's tm_stream
 * seen through a ph_stream of ours that forwards every call (no copy,
 * peek and consume go straight to the session's inbound queue, so the
 * window still reopens only by what the frontend delivered). It adds the
 * one thing only the client knows: a log line when the frontend closes
 * it, with its stage, code, lifetime, bytes, open_mode, trace id (the
 * one its OPEN_STREAM carried, issue 24 item 10) and whether it
 * ended by a reset (the target only at debug with log_target). The
 * SOCKS5 local TTFB (TM-OBS-21) is the frontend's own stage="ttfb" of
 * component "client": its relay times it from the success it sends to
 * the first byte it delivers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tunnel_client_int.h"

typedef struct tc_stream {
  ph_stream base; /* first: the ph_stream we hand over */
  ph_stream *inner;
  tm_stream *st; /* the same stream, for its reset code */
  tc_client *tc;
  ph_stream_fn fn;
  void *arg;
  int64_t t_open_us;
  uint64_t up, down;
  int strict, was_reset;
  uint16_t port;
  char host[TM_HOST_MAX + 1];
  char trace[TM_TRACE_LEN + 1];
} tc_stream;

static tc_stream *of(ph_stream *s) { return (tc_stream *)s; }

static void relay_event(ph_stream *inner, int revents, void *arg) {
  (void)inner;
  tc_stream *w = arg;
  /* The user may close w in there; nothing touches it afterwards. */
  w->fn(&w->base, revents, w->arg);
}

static void w_watch(ph_stream *s, int events, ph_stream_fn fn, void *arg) {
  tc_stream *w = of(s);
  w->fn = fn;
  w->arg = arg;
  ph_stream_watch(w->inner, fn ? events : 0, fn ? relay_event : NULL, w);
}

static ssize_t w_peek(ph_stream *s, const void **data) {
  tc_stream *w = of(s);
  ssize_t n = ph_stream_peek(w->inner, data);
  if (n == PH_ERESET)
    w->was_reset = 1;
  return n;
}

static void w_consume(ph_stream *s, size_t n) {
  tc_stream *w = of(s);
  w->down += n;
  ph_stream_consume(w->inner, n);
}

static ssize_t w_write(ph_stream *s, const void *data, size_t len) {
  tc_stream *w = of(s);
  ssize_t n = ph_stream_write(w->inner, data, len);
  if (n > 0)
    w->up += (uint64_t)n;
  else if (n == PH_ERESET)
    w->was_reset = 1;
  return n;
}

static int w_shutdown(ph_stream *s) {
  tc_stream *w = of(s);
  int rc = ph_stream_shutdown(w->inner);
  if (rc == PH_ERESET)
    w->was_reset = 1;
  return rc;
}

static void w_close(ph_stream *s) {
  tc_stream *w = of(s);
  tc_client *tc = w->tc;
  const ph_api *api = tc->api;
  int64_t us = mono_us() - w->t_open_us;
  const char *mode = w->strict ? "strict" : "legacy";
  /* The code of the RESET that ended it, as the server sent it (issue 22
   * item 8): "ok" only when nothing failed. */
  int rc = tm_stream_reset_code(w->st);
  const char *code = rc > 0 ? ph_open_code_name(rc) : "ok";
  const char *end = w->was_reset || rc >= 0 ? "reset" : "closed";
  if (tc->cfg.log_target && api->log_enabled(tc->ctx, PH_LOG_DEBUG))
    PH_LOG(api, tc->ctx, PH_LOG_DEBUG, "stream end", PH_STR("stage", "none"),
           PH_STR("code", code), PH_INT("us", us), PH_STR("open_mode", mode),
           PH_STR("end", end), PH_UINT("up", w->up), PH_UINT("down", w->down),
           PH_STR("trace_id", w->trace), PH_STR("host", w->host),
           PH_UINT("port", w->port));
  else
    PH_LOG_RL(api, tc->ctx, PH_LOG_INFO, "stream end",
              PH_STR("stage", "none"), PH_STR("code", code), PH_INT("us", us),
              PH_STR("open_mode", mode), PH_STR("end", end),
              PH_UINT("up", w->up), PH_UINT("down", w->down),
              PH_STR("trace_id", w->trace));
  ph_stream_close(w->inner);
  free(w);
}

static const ph_stream_ops tc_stream_ops = {
    .size = sizeof(ph_stream_ops),
    .watch = w_watch,
    .peek = w_peek,
    .consume = w_consume,
    .write = w_write,
    .shutdown = w_shutdown,
    .close = w_close,
};

ph_stream *tc_stream_wrap(tc_client *tc, tm_stream *st, int strict,
                          int64_t t_open_us, const char *host,
                          uint16_t port, const char *trace) {
  tc_stream *w = calloc(1, sizeof(*w));
  if (!w)
    return NULL;
  w->base.ops = &tc_stream_ops;
  w->inner = tm_stream_ph(st);
  w->st = st;
  w->tc = tc;
  w->strict = strict;
  w->t_open_us = t_open_us;
  w->port = port;
  snprintf(w->host, sizeof(w->host), "%s", host);
  snprintf(w->trace, sizeof(w->trace), "%s", trace);
  return &w->base;
}
