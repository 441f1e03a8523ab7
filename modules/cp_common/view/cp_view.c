/* SPDX-License-Identifier: BSD-2-Clause */
/* A view's life (publish, acquire, release, the wipe at the end) and the
 * questions dispatch asks it (cp_view.h). Everything here runs in
 * constant time or a bounded scan of the view, allocates nothing and
 * takes no lock. Publishing and the subscriber: cp_view_sub.c. */
#include "cp_view.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#include "cp_view_int.h"

void (*cp_view_free_hook)(const void *block, size_t len);

void cp_view_hold(const ph_pool_view *v) {
  if (v)
    atomic_fetch_add_explicit(&cp_view_block_of(v)->refs, 1,
                              memory_order_relaxed);
}

void cp_view_release(const ph_pool_view *v) {
  if (!v)
    return;
  cp_view_block *b = cp_view_block_of(v);
  /* acq_rel: every holder's reads happen before the free. */
  if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) != 1)
    return;
  OPENSSL_cleanse((char *)b + b->secret_off, b->secret_len);
  if (cp_view_free_hook)
    cp_view_free_hook(b, b->len);
  free(b);
}

uint32_t cp_view_refs(const ph_pool_view *v) {
  return v ? atomic_load_explicit(&cp_view_block_of(v)->refs,
                                  memory_order_relaxed)
           : 0;
}

const ph_pool_view *cp_view_current(cp_view_slot *slot) {
  return atomic_load_explicit(&slot->cur, memory_order_acquire);
}

const ph_pool_view *cp_view_acquire(cp_view_slot *slot) {
  const ph_pool_view *v = cp_view_current(slot);
  cp_view_hold(v);
  return v;
}

/* ---- questions ------------------------------------------------------- */

/* An address in normal form: an IPv6 literal has a ':'; an IPv4 one only
 * digits and dots (a name's last label is never all digits). */
static int host_is_address(const char *h, size_t n) {
  if (memchr(h, ':', n))
    return 1;
  for (size_t i = 0; i < n; i++)
    if (h[i] != '.' && (h[i] < '0' || h[i] > '9'))
      return 0;
  return 1;
}

static int host_matches(const ph_pool_view_rule *r, const char *host,
                        size_t hl, int *is_addr) {
  switch (r->host_kind) {
  case PH_POOL_VIEW_HOST_ANY:
    return 1;
  case PH_POOL_VIEW_HOST_EXACT:
    return hl == r->host_len && strncasecmp(host, r->host, hl) == 0;
  case PH_POOL_VIEW_HOST_SUFFIX:
    if (*is_addr < 0)
      *is_addr = host_is_address(host, hl);
    return !*is_addr && hl > r->host_len &&
           strncasecmp(host + hl - r->host_len, r->host, r->host_len) == 0;
  default:
    return 0;
  }
}

static int field_matches(const char *want, const char *got) {
  return !want || (got && strcmp(want, got) == 0);
}

uint32_t cp_view_match(const ph_pool_view *v, const char *host,
                       uint16_t port, const char *identity,
                       const char *listener) {
  if (!v || !host)
    return PH_POOL_VIEW_NONE;
  size_t hl = strnlen(host, 256);
  if (hl == 0 || hl > 255)
    return PH_POOL_VIEW_NONE;
  int is_addr = -1; /* computed once, when a suffix rule asks */
  for (uint32_t i = 0; i < v->n_rules; i++) {
    const ph_pool_view_rule *r = &v->rules[i];
    if (r->port_min || r->port_max)
      if (port < r->port_min || port > r->port_max)
        continue;
    if (!field_matches(r->listener, listener) ||
        !field_matches(r->client_identity, identity))
      continue;
    if (host_matches(r, host, hl, &is_addr))
      return i;
  }
  return PH_POOL_VIEW_NONE;
}

int cp_view_live(const ph_pool_view *v, int64_t now_ms) {
  return ph_pool_view_live(v, now_ms);
}

int cp_view_usable(const ph_pool_view *v, uint32_t proxy, int64_t now_ms) {
  if (!v || proxy >= v->n_proxies)
    return 0;
  return ph_pool_view_proxy_usable(v, &v->proxies[proxy], now_ms);
}

uint32_t cp_view_find(const ph_pool_view *v, const char *proxy_id) {
  if (!v || !proxy_id)
    return PH_POOL_VIEW_NONE;
  uint32_t lo = 0, hi = v->n_proxies;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    int c = strcmp(v->proxies[mid].proxy_id, proxy_id);
    if (c == 0)
      return mid;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return PH_POOL_VIEW_NONE;
}

void cp_view_remap(const ph_pool_view *old_v, const ph_pool_view *new_v,
                   uint32_t *map) {
  if (!old_v || !map)
    return;
  uint32_t j = 0, nn = new_v ? new_v->n_proxies : 0;
  for (uint32_t i = 0; i < old_v->n_proxies; i++) {
    const char *id = old_v->proxies[i].proxy_id;
    while (j < nn && strcmp(new_v->proxies[j].proxy_id, id) < 0)
      j++;
    map[i] = j < nn && strcmp(new_v->proxies[j].proxy_id, id) == 0
                 ? j
                 : PH_POOL_VIEW_NONE;
  }
}

static void wipe_str(char *s) {
  if (s && *s)
    OPENSSL_cleanse(s, strlen(s));
}

void cp_view_wipe_message(Controlplane__V1__WorkerSnapshot *s) {
  if (!s)
    return;
  for (size_t i = 0; i < s->n_credentials; i++) {
    if (!s->credentials[i])
      continue;
    wipe_str(s->credentials[i]->username);
    wipe_str(s->credentials[i]->password);
  }
}

/* ---- the service ------------------------------------------------------ */

static const ph_pool_view *vt_current(void *self) {
  return cp_view_current(self);
}

static const ph_pool_view *vt_acquire(void *self) {
  return cp_view_acquire(self);
}

static void vt_release(void *self, const ph_pool_view *v) {
  (void)self;
  cp_view_release(v);
}

static int vt_subscribe(void *self, const ph_pool_view_sub *sub, void *arg) {
  return cp_view_subscribe(self, sub, arg);
}

const ph_pool_view_v1 cp_view_service = {
    vt_current,     vt_acquire,    vt_release,  cp_view_match,
    cp_view_usable, cp_view_live,  cp_view_find, vt_subscribe,
};
