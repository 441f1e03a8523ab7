/* SPDX-License-Identifier: BSD-2-Clause */
/* A fake "connector" provider for tunnel_agent's unit tests, included by
 * test_tm_dial_exec.c and test_tm_agent.c (static: one copy per test):
 * it answers by the target's name: hang* never (until cancelled), late*
 * after 300 ms, refused* connect/connection_refused, nxdomain*
 * dns/host_unreachable, tcp* open with a TCP socket connected to a
 * listener of its own on 127.0.0.1 (a connector that ignores the
 * request's addr_filter), anything else open with a socketpair whose other
 * end the test keeps (fake_peer_fd of the request). It counts opens,
 * cancels and dials in flight, keeps the last request's addr_filter and
 * the order of the hosts it was asked to open (f_order).
 * A driver module gets the api, a ctx and the connector service for the
 * code under test. */
#ifndef TM_FAKECONN_H
#define TM_FAKECONN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <proxyhost/connector.h>
#include <proxyhost/module.h>

#include "mock_test.h"

/* ---- the fake connector ------------------------------------------------ */

#define FAKE_MAX 256

typedef struct fake_req {
  int used;
  int64_t id;
  ph_open_cb cb;
  void *arg;
  ph_timer *timer;
  char host[256];
} fake_req;

static const ph_api *fapi;
static ph_ctx *fctx;
static fake_req freqs[FAKE_MAX];
static int64_t fnext = 1;
static int f_opened, f_cancelled, f_in_flight, f_max_in_flight, f_answered;
static int f_refuse_next; /* open() returns PH_ENOMEM once */
static int f_last_peer_fd = -1; /* the target side of the last success */
static const ph_open_addr_filter *f_last_filter; /* of the last open */
static char f_order[1024]; /* the hosts opened, in order, "a,b," */

/* A socket connected to 127.0.0.1 (tcp*): a listener made once, the
 * accepted side left in its backlog. -1 on failure. */
static int fake_tcp_socket(void) {
  static int lfd = -1;
  static struct sockaddr_in la;
  if (lfd < 0) {
    socklen_t len = sizeof(la);
    memset(&la, 0, sizeof(la));
    la.sin_family = AF_INET;
    la.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&la, sizeof(la)) < 0 ||
        listen(lfd, 16) < 0 ||
        getsockname(lfd, (struct sockaddr *)&la, &len) < 0)
      return -1;
  }
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd >= 0 && connect(fd, (struct sockaddr *)&la, sizeof(la)) < 0) {
    close(fd);
    fd = -1;
  }
  return fd;
}

static void fake_answer(ph_timer *t, void *arg) {
  (void)t;
  fake_req *r = arg;
  ph_open_result res;
  memset(&res, 0, sizeof(res));
  res.size = sizeof(res);
  res.fd = -1;
  if (strncmp(r->host, "refused", 7) == 0) {
    res.stage = PH_STAGE_CONNECT;
    res.code = PH_OPEN_CONNECTION_REFUSED;
  } else if (strncmp(r->host, "nxdomain", 8) == 0) {
    res.stage = PH_STAGE_DNS;
    res.code = PH_OPEN_HOST_UNREACHABLE;
  } else if (strncmp(r->host, "tcp", 3) == 0) {
    res.fd = fake_tcp_socket();
    if (res.fd < 0) {
      res.stage = PH_STAGE_CONNECT;
      res.code = PH_OPEN_INTERNAL_ERROR;
    }
  } else {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0) {
      if (f_last_peer_fd >= 0)
        close(f_last_peer_fd);
      f_last_peer_fd = sv[1]; /* the target's side, for the test */
      res.fd = sv[0];
    } else {
      res.stage = PH_STAGE_CONNECT;
      res.code = PH_OPEN_INTERNAL_ERROR;
    }
  }
  ph_open_cb cb = r->cb;
  void *cbarg = r->arg;
  fapi->timer_free(r->timer);
  r->used = 0;
  f_in_flight--;
  f_answered++;
  cb(cbarg, &res);
}

static int64_t fake_open(void *self, const ph_open_request *req, ph_open_cb cb,
                         void *arg) {
  (void)self;
  if (f_refuse_next) {
    f_refuse_next = 0;
    return PH_ENOMEM;
  }
  for (int i = 0; i < FAKE_MAX; i++)
    if (!freqs[i].used) {
      fake_req *r = &freqs[i];
      memset(r, 0, sizeof(*r));
      r->used = 1;
      r->id = fnext++;
      r->cb = cb;
      r->arg = arg;
      snprintf(r->host, sizeof(r->host), "%s", req->host);
      f_last_filter = req->addr_filter;
      size_t ol = strlen(f_order);
      if (ol + strlen(req->host) + 2 < sizeof(f_order))
        snprintf(f_order + ol, sizeof(f_order) - ol, "%s,", req->host);
      r->timer = fapi->timer_new(fctx, fake_answer, r);
      f_opened++;
      if (++f_in_flight > f_max_in_flight)
        f_max_in_flight = f_in_flight;
      /* hang*: never; late*: 300 ms; anything else: the next round. */
      if (strncmp(req->host, "hang", 4) != 0)
        fapi->timer_set(r->timer, strncmp(req->host, "late", 4) == 0 ? 300 : 1,
                        0);
      return r->id;
    }
  return PH_ENOMEM;
}

static void reset_counts(void) {
  f_opened = f_cancelled = f_max_in_flight = f_answered = 0;
  f_order[0] = '\0';
}

static int fake_cancel(void *self, int64_t id) {
  (void)self;
  for (int i = 0; i < FAKE_MAX; i++)
    if (freqs[i].used && freqs[i].id == id) {
      fapi->timer_free(freqs[i].timer);
      freqs[i].used = 0;
      f_in_flight--;
      f_cancelled++;
      return PH_OK;
    }
  return PH_ENOENT;
}

static const ph_connector_v1 fake_vt = {fake_open, fake_cancel};
static const char *const fake_provides[] = {PH_CONNECTOR_SERVICE, NULL};

static int fake_init(ph_ctx *ctx, const ph_api *a, void **state) {
  fapi = a;
  fctx = ctx;
  *state = NULL;
  return a->service_register(ctx, PH_CONNECTOR_SERVICE, PH_CONNECTOR_MAJOR,
                             PH_CONNECTOR_MINOR, &fake_vt, NULL);
}

static const ph_module fake_mod = {
    PH_MODULE_HEADER("fakeconn", "1"),
    .provides = fake_provides,
    .init = fake_init,
};

/* ---- the driver: owns the executor --------------------------------------- */

/* The module that finds fakeconn in start. A test that registers more in
 * init (TM_FAKECONN_OWN_DRIVER defined before including this) writes its
 * own drv_init and drv_mod and keeps drv_start and these. */
static const ph_api *dapi;
static ph_ctx *dctx;
static const ph_connector_v1 *dconn;
static void *dcself;
static const char *const drv_requires[] = {PH_CONNECTOR_SERVICE, NULL};

static int drv_start(void *state) {
  (void)state;
  dconn = dapi->service_get_named(dctx, PH_CONNECTOR_SERVICE, "fakeconn",
                                  PH_CONNECTOR_MAJOR, 0, &dcself);
  return dconn ? PH_OK : PH_ENOENT;
}

#ifndef TM_FAKECONN_OWN_DRIVER
MOCK_TEST_KEEP(drv_init, dapi, dctx);
MOCK_TEST_MODULE(drv_mod, "driver", "1", .requires = drv_requires,
                 .init = drv_init, .start = drv_start);
#endif /* TM_FAKECONN_OWN_DRIVER */

#endif
