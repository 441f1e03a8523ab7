/* SPDX-License-Identifier: BSD-2-Clause */
/* The in-process message bus: named, typed topics; synchronous delivery in
 * subscription order on the loop thread; posts from other threads go
 * through the mailbox. */
#ifndef PH_BUS_H
#define PH_BUS_H

#include <stdint.h>

#include <proxyhost/host.h>

#include "mailbox.h"

typedef struct ph_bus ph_bus;

/* dropped_counter (may be NULL) counts posts refused by a full mailbox;
 * delivered_counter (may be NULL) counts handler calls. */
ph_bus *bus_new(ph_mailbox *mb, ph_series *dropped_counter,
                ph_series *delivered_counter);
/* Finds or creates a topic. NULL when it exists with another type, or on
 * a bad name (empty, > 128 bytes). At most 1024 topics. */
ph_topic *bus_topic(ph_bus *b, const char *name, const char *type);
ph_topic *bus_find(ph_bus *b, const char *name);
const char *bus_topic_name(const ph_topic *t);
const char *bus_topic_type(const ph_topic *t);
/* owner identifies the subscriber (the module ctx) for bus_unsubscribe_all.
 * Returns an id > 0 or a negative ph_status. */
int bus_subscribe(ph_bus *b, ph_topic *t, ph_bus_fn fn, void *arg,
                  void *owner);
/* bus_unsubscribe: the subscription exists but another owner made it
 * (the API reports the misuse and answers PH_ENOENT). Not a ph_status. */
#define BUS_EFOREIGN (-100)

/* Only the owner given to bus_subscribe may remove it: PH_OK, PH_ENOENT,
 * or BUS_EFOREIGN (left alone). Safe from inside a handler, also for the
 * handler being run. */
int bus_unsubscribe(ph_bus *b, int id, const void *owner);
void bus_unsubscribe_all(ph_bus *b, void *owner);
/* Loop thread. See ph_api.publish. Publishing from inside a handler is
 * allowed (nested delivery, depth bounded at 16: deeper returns
 * PH_ELIMIT after freeing the payload). */
int bus_publish(ph_bus *b, ph_topic *t, void *payload, ph_free_fn free_fn);
/* Any thread. See ph_api.post_publish. */
int bus_post(ph_bus *b, ph_topic *t, void *payload, ph_free_fn free_fn);
void bus_free(ph_bus *b);

#endif
