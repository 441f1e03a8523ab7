/* SPDX-License-Identifier: BSD-2-Clause */
/* Learning the port a frontend under test bound ("127.0.0.1:0" in its
 * configuration) from the host's listener events (PH_LISTENER_TOPIC). */
#ifndef PH_LISTENER_TEST_H
#define PH_LISTENER_TEST_H

#include <netinet/in.h>

#include <proxyhost/listener_event.h>
#include <proxyhost/module.h>

static inline void listener_test_cb_(const ph_topic *t, const void *payload,
                                     void *arg) {
  (void)t;
  const ph_listener_event *ev = payload;
  const struct sockaddr_in *a = (const void *)ev->addr;
  if (ev->bound && a->sin_family == AF_INET)
    *(int *)arg = ntohs(a->sin_port);
}

/* Subscribes ctx (a module's, in its init) to the listener events: from
 * then on *port is the port of the last IPv4 listener bound. PH_OK, or
 * PH_EINVAL when the topic or the subscription fails. */
static inline int listener_test_watch(ph_ctx *ctx, const ph_api *a, int *port) {
  ph_topic *t = a->topic(ctx, PH_LISTENER_TOPIC, PH_LISTENER_TYPE);
  return t && a->subscribe(ctx, t, listener_test_cb_, port) > 0 ? PH_OK
                                                                : PH_EINVAL;
}

#endif
