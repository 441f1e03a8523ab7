/* SPDX-License-Identifier: BSD-2-Clause */
/* remote_validation: libcurl's multi interface on the host's loop
 * (rv_http.h).
 *
 * Why libcurl: it is the standard HTTP client, keeps a connection pool
 * per multi handle, multiplexes HTTP/2 over TLS and checks certificates
 * the way every other client on the system does; libwebsockets' HTTP
 * client (also in the stack, for the tunnel) has no general keep-alive
 * pool for this kind of traffic. */
#include "rv_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#define RV_BODY_MAX 4096 /* response body bytes read at most */

/* One socket libcurl asked us to watch. */
typedef struct rv_sock {
  rv_http *h;
  curl_socket_t fd;
  ph_io *io;
  struct rv_sock *prev, *next;
} rv_sock;

struct rv_http_req {
  rv_http *h;
  CURL *easy;
  rv_http_done_fn done;
  void *arg;
  size_t body_seen; /* response body bytes, counted and dropped */
  struct rv_http_req *prev, *next;
};

struct rv_http {
  const ph_api *api;
  ph_ctx *ctx;
  CURLM *multi;
  ph_timer *timer;
  struct curl_slist *headers; /* holds the bearer token: wiped at free */
  char *url, *ca_file;
  int64_t timeout_ms;
  int tls; /* an https endpoint */
  size_t max_inflight, inflight;
  rv_http_req *reqs;
  rv_sock *socks;
  int retired;
  void (*gone)(void *arg, rv_http *h);
  void *gone_arg;
  int in_action; /* inside action(): destroy waits for its end */
};

static void wipe_headers(struct curl_slist *l) {
  for (; l; l = l->next)
    if (l->data)
      memset(l->data, 0, strlen(l->data));
}

/* The body is dropped: only the status matters, and a body is never
 * kept or logged (TM-P1-39). Past RV_BODY_MAX bytes the transfer is cut
 * (an error): an endpoint cannot keep a request slot with a long body. */
static size_t drop_body(char *p, size_t size, size_t n, void *arg) {
  (void)p;
  rv_http_req *r = arg;
  r->body_seen += size * n;
  return r->body_seen > RV_BODY_MAX ? 0 : size * n;
}

static void req_unlink(rv_http *h, rv_http_req *r) {
  if (r->prev)
    r->prev->next = r->next;
  else
    h->reqs = r->next;
  if (r->next)
    r->next->prev = r->prev;
  h->inflight--;
}

static void req_free(rv_http *h, rv_http_req *r) {
  curl_multi_remove_handle(h->multi, r->easy);
  curl_easy_cleanup(r->easy);
  free(r);
}

static void destroy(rv_http *h);

static void retired_free(rv_http *h) {
  if (h->gone)
    h->gone(h->gone_arg, h);
  destroy(h);
}

/* Collects the finished transfers and reports them. */
static void check_done(rv_http *h) {
  CURLMsg *m;
  int left;
  while ((m = curl_multi_info_read(h->multi, &left))) {
    if (m->msg != CURLMSG_DONE)
      continue;
    rv_http_req *r = NULL;
    curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
    if (!r)
      continue;
    long status = 0;
    int out = RV_OUT_ERROR;
    if (m->data.result == CURLE_OK &&
        curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status) ==
            CURLE_OK) {
      if (status >= 200 && status <= 299)
        out = RV_OUT_ALLOW;
      else if (status == 401 || status == 403)
        out = RV_OUT_DENY;
    }
    if (out == RV_OUT_ERROR)
      PH_LOG_RL(h->api, h->ctx, PH_LOG_DEBUG,
                "remote validation request failed",
                PH_INT("curl_code", (int64_t)m->data.result),
                PH_INT("http_status", (int64_t)status));
    req_unlink(h, r);
    rv_http_done_fn done = r->done;
    void *arg = r->arg;
    req_free(h, r);
    done(arg, out);
  }
}

static void action(rv_http *h, curl_socket_t fd, int ev) {
  int running;
  h->in_action = 1; /* a done callback may retire h: freed below */
  curl_multi_socket_action(h->multi, fd, ev, &running);
  check_done(h);
  h->in_action = 0;
  if (h->retired && h->inflight == 0)
    retired_free(h);
}

static void on_io(ph_io *io, int fd, int revents, void *arg) {
  (void)io;
  rv_sock *s = arg;
  int ev = (revents & PH_READ ? CURL_CSELECT_IN : 0) |
           (revents & PH_WRITE ? CURL_CSELECT_OUT : 0);
  action(s->h, (curl_socket_t)fd, ev);
}

static void on_timer(ph_timer *t, void *arg) {
  (void)t;
  action(arg, CURL_SOCKET_TIMEOUT, 0);
}

static void sock_free(rv_http *h, rv_sock *s) {
  if (s->prev)
    s->prev->next = s->next;
  else
    h->socks = s->next;
  if (s->next)
    s->next->prev = s->prev;
  h->api->io_free(s->io);
  free(s);
}

/* CURLMOPT_SOCKETFUNCTION: what to watch on one of libcurl's sockets. */
static int sock_cb(CURL *e, curl_socket_t fd, int what, void *userp,
                   void *socketp) {
  (void)e;
  rv_http *h = userp;
  rv_sock *s = socketp;
  if (what == CURL_POLL_REMOVE) {
    if (s)
      sock_free(h, s);
    curl_multi_assign(h->multi, fd, NULL);
    return 0;
  }
  int events = (what & CURL_POLL_IN ? PH_READ : 0) |
               (what & CURL_POLL_OUT ? PH_WRITE : 0);
  if (!s) {
    s = calloc(1, sizeof(*s));
    if (!s)
      return -1;
    s->h = h;
    s->fd = fd;
    s->io = h->api->io_new(h->ctx, fd, events, on_io, s);
    if (!s->io) {
      free(s);
      return -1;
    }
    s->next = h->socks;
    if (h->socks)
      h->socks->prev = s;
    h->socks = s;
    curl_multi_assign(h->multi, fd, s);
  } else {
    h->api->io_set(s->io, events);
  }
  return 0;
}

/* CURLMOPT_TIMERFUNCTION: -1 stops the timer; 0 means "as soon as
 * possible", which is the next loop iteration (a ph_timer of 0 is
 * stopped). */
static int timer_cb(CURLM *m, long ms, void *userp) {
  (void)m;
  rv_http *h = userp;
  if (ms < 0)
    h->api->timer_set(h->timer, 0, 0);
  else
    h->api->timer_set(h->timer, ms > 0 ? (uint64_t)ms : 1, 0);
  return 0;
}

rv_http *rv_http_new(const ph_api *api, ph_ctx *ctx, const rv_http_conf *c) {
  rv_http *h = calloc(1, sizeof(*h));
  if (!h)
    return NULL;
  h->api = api;
  h->ctx = ctx;
  h->timeout_ms = c->timeout_ms;
  h->max_inflight = c->max_inflight;
  h->url = strdup(c->endpoint);
  h->tls = strncasecmp(c->endpoint, "https:", 6) == 0;
  h->ca_file = c->ca_file && *c->ca_file ? strdup(c->ca_file) : NULL;
  h->multi = curl_multi_init();
  h->timer = api->timer_new(ctx, on_timer, h);
  struct curl_slist *l =
      curl_slist_append(NULL, "Content-Type: application/json");
  if (l)
    h->headers = l;
  /* No "Expect: 100-continue" round trip for a small body. */
  if (l && !(l = curl_slist_append(h->headers, "Expect:")))
    h->headers = NULL;
  if (h->headers && c->token && *c->token) {
    size_t n = strlen(c->token) + sizeof("Authorization: Bearer ");
    char *line = malloc(n);
    if (line) {
      snprintf(line, n, "Authorization: Bearer %s", c->token);
      l = curl_slist_append(h->headers, line);
      memset(line, 0, n);
      free(line);
    }
    if (!line || !l) {
      wipe_headers(h->headers);
      curl_slist_free_all(h->headers);
      h->headers = NULL;
    }
  }
  if (!h->url || (c->ca_file && *c->ca_file && !h->ca_file) || !h->multi ||
      !h->timer || !h->headers) {
    destroy(h);
    return NULL;
  }
  curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, sock_cb);
  curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h);
  curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
  curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h);
  curl_multi_setopt(h->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
  /* The pool: at most max_inflight connections, kept alive. */
  curl_multi_setopt(h->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS,
                    (long)h->max_inflight);
  curl_multi_setopt(h->multi, CURLMOPT_MAXCONNECTS, (long)h->max_inflight);
  return h;
}

int rv_http_post(rv_http *h, const char *body, size_t len,
                 rv_http_done_fn done, void *arg) {
  if (h->retired || h->inflight >= h->max_inflight)
    return PH_EFULL;
  rv_http_req *r = calloc(1, sizeof(*r));
  if (!r)
    return PH_ENOMEM;
  r->h = h;
  r->done = done;
  r->arg = arg;
  r->easy = curl_easy_init();
  if (!r->easy) {
    free(r);
    return PH_ENOMEM;
  }
  CURL *e = r->easy;
  curl_easy_setopt(e, CURLOPT_PRIVATE, (char *)r);
  curl_easy_setopt(e, CURLOPT_URL, h->url);
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  /* The endpoint is asked directly, whatever http_proxy says. */
  curl_easy_setopt(e, CURLOPT_PROXY, "");
  curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
  /* On TLS, wait for the connection being set up rather than open
   * another: it may turn out to be HTTP/2 and carry both. Plain http is
   * HTTP/1.1, where waiting would queue one request behind another. */
  if (h->tls)
    curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)h->timeout_ms);
  curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
  if (h->ca_file)
    curl_easy_setopt(e, CURLOPT_CAINFO, h->ca_file);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, h->headers);
  curl_easy_setopt(e, CURLOPT_POST, 1L);
  curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)len);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, drop_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
  curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  if (curl_multi_add_handle(h->multi, e) != CURLM_OK) {
    curl_easy_cleanup(e);
    free(r);
    return PH_ENOMEM;
  }
  r->next = h->reqs;
  if (h->reqs)
    h->reqs->prev = r;
  h->reqs = r;
  h->inflight++;
  return PH_OK;
}

size_t rv_http_inflight(const rv_http *h) { return h->inflight; }

/* Everything goes: transfers, connections (curl_multi_cleanup closes the
 * pool), watchers, the token. */
static void destroy(rv_http *h) {
  while (h->reqs) {
    rv_http_req *r = h->reqs;
    req_unlink(h, r);
    req_free(h, r);
  }
  if (h->multi)
    curl_multi_cleanup(h->multi); /* may still report sockets removed */
  while (h->socks)
    sock_free(h, h->socks);
  if (h->timer)
    h->api->timer_free(h->timer);
  wipe_headers(h->headers);
  curl_slist_free_all(h->headers);
  free(h->url);
  free(h->ca_file);
  free(h);
}

void rv_http_retire(rv_http *h, void (*gone)(void *arg, rv_http *h),
                    void *arg) {
  if (!h)
    return;
  h->retired = 1;
  h->gone = gone;
  h->gone_arg = arg;
  if (h->inflight == 0 && !h->in_action)
    retired_free(h);
}

void rv_http_free(rv_http *h) {
  if (h)
    destroy(h);
}
