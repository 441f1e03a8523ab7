/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proxyhost SDK: the net.listener topic (its own header since ABI 1.2;
 * <proxyhost/connector.h> includes it).
 *
 * Listener announcements, so a connector can refuse to connect back to the
 * process's own listeners. A frontend publishes one message per bound
 * listener on topic PH_LISTENER_TOPIC (type PH_LISTENER_TYPE) at start,
 * before it accepts, and one with bound = 0 when it closes the listener;
 * the payload is a ph_listener_event.
 */
#ifndef PROXYHOST_LISTENER_EVENT_H
#define PROXYHOST_LISTENER_EVENT_H

#include <stdint.h>

#define PH_LISTENER_TOPIC "net.listener"
#define PH_LISTENER_TYPE "ph.listener/1"

typedef struct ph_listener_event {
  uint32_t size;
  int bound;           /* 1 bound, 0 closed */
  uint32_t addrlen;    /* bytes used in addr */
  unsigned char addr[128]; /* a struct sockaddr_in or sockaddr_in6 */
} ph_listener_event;

#endif
