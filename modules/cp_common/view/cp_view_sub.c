/* SPDX-License-Identifier: BSD-2-Clause */
/* Publishing a view, and the one subscriber that keeps state beside each
 * view (ph_pool_view_sub, CP-3-17, issue 23 item 13): its prepare() runs
 * in the job that compiled the view, its install() right after the swap
 * on the loop, so that no request builds per-view state. The mutex only
 * keeps an unsubscribe from returning while a prepare() of it runs (the
 * pool stopping while a build job is in flight); the loop never waits on
 * it otherwise: subscribe happens at start and stop. */
#include "cp_view.h"

#include <stdlib.h>

#include <proxyhost/abi.h>

void cp_view_slot_init(cp_view_slot *slot) {
  atomic_init(&slot->cur, NULL);
  pthread_mutex_init(&slot->mu, NULL);
  slot->sub = NULL;
  slot->sub_arg = NULL;
}

void cp_view_slot_destroy(cp_view_slot *slot) {
  pthread_mutex_destroy(&slot->mu);
}

int cp_view_subscribe(cp_view_slot *slot, const ph_pool_view_sub *sub,
                      void *arg) {
  int rc = PH_OK;
  pthread_mutex_lock(&slot->mu);
  if (sub && slot->sub && (slot->sub != sub || slot->sub_arg != arg))
    rc = PH_EBUSY;
  else {
    slot->sub = sub;
    slot->sub_arg = sub ? arg : NULL;
  }
  pthread_mutex_unlock(&slot->mu);
  return rc;
}

void *cp_view_prepare(cp_view_slot *slot, const ph_pool_view *v,
                      const ph_pool_view *base) {
  void *prepared = NULL;
  pthread_mutex_lock(&slot->mu);
  if (slot->sub && v)
    prepared = slot->sub->prepare(slot->sub_arg, v, base);
  pthread_mutex_unlock(&slot->mu);
  return prepared;
}

void cp_view_publish_prepared(cp_view_slot *slot, ph_pool_view *v,
                              void *prepared) {
  /* release: the view's contents, written by the job that compiled it,
   * are visible to whoever loads the pointer with acquire. */
  ph_pool_view *old =
      atomic_exchange_explicit(&slot->cur, v, memory_order_acq_rel);
  /* The loop thread is the only one that changes sub: no lock needed to
   * read it here. install() before the old view's slot reference goes,
   * so the subscriber's current state still holds a live view. */
  if (slot->sub)
    slot->sub->install(slot->sub_arg, v, prepared);
  else
    free(prepared);
  cp_view_release(old);
}

void cp_view_publish(cp_view_slot *slot, ph_pool_view *v) {
  cp_view_publish_prepared(slot, v, NULL);
}
