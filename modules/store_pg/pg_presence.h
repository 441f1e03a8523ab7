/* SPDX-License-Identifier: BSD-2-Clause */
/* store_pg's tm.presence (modules/contracts/tm_presence.h): the writes
 * (pg_presence.c) and the view (pg_presence_view.c). */
#ifndef PH_STORE_PG_PRESENCE_H
#define PH_STORE_PG_PRESENCE_H

#include "contracts/tm_presence.h"
#include "store_pg_int.h"

/* Init: the view's state (nothing connects yet). PH_OK or PH_ENOMEM. */
int tm_view_init(spg *s);
/* Stop: the LISTEN connection closed, the poll stopped; a read in flight
 * ends without a re-read. */
void tm_view_stop(spg *s);
/* Destroy. NULL state ignored. */
void tm_view_free(spg *s);
/* The contract's view() and watch(). The first of them after start
 * starts the view: the LISTEN connection and the safety-net poll (a
 * store no one asks for presence costs no connection). */
int tm_view_get(void *self, tm_presence_view *out);
void tm_view_watch(void *self, tm_presence_watch_cb cb, void *arg);

extern const tm_presence_v1 spg_presence_vt;

#endif
