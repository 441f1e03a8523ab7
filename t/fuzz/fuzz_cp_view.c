/* SPDX-License-Identifier: BSD-2-Clause */
/* libFuzzer target: the gateway's snapshot view (modules/cp_common/
 * cp_view*.c) compiled from a WorkerSnapshot as protobuf-c unpacks it
 * from the controller's bytes. The view's contract is to be given
 * validated snapshots only; this target gives it anything protobuf-c
 * accepts, so that a gap in the validation can never become a memory
 * error or an inconsistent view.
 *
 * Input: a packed controlplane.v1.WorkerSnapshot. Contract checked, for
 * any snapshot cp_view_compile accepts:
 *   - proxies are sorted by id without duplicates, each index is its
 *     position, find() finds each one at it, remap onto itself is the
 *     identity;
 *   - every candidate is a proxy index in range and a member of the
 *     rule's target group, ascending; every credential pointer points
 *     into the credentials of that view with the proxy's reference;
 *   - first match: asking with a rule's own exact host (or a name below
 *     its suffix), a port in its range, its identity and listener
 *     answers that rule or an earlier one;
 *   - usable() is 0 or 1 and never 1 at valid_until;
 *   - the last release frees everything (LSan) and wipes the secrets. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <proxyhost/abi.h>

#include "cp_common/view/cp_view.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                      \
  do {                                                                \
    if (!(c)) {                                                       \
      fprintf(stderr, "fuzz_cp_view: %s:%d: %s\n", __FILE__, __LINE__, \
              #c);                                                    \
      abort();                                                        \
    }                                                                 \
  } while (0)

static int in_group(const Controlplane__V1__WorkerSnapshot *s,
                    const char *proxy_id, const char *group) {
  for (size_t i = 0; i < s->n_proxies; i++) {
    if (strcmp(s->proxies[i]->proxy_id ? s->proxies[i]->proxy_id : "",
               proxy_id) != 0)
      continue;
    for (size_t g = 0; g < s->proxies[i]->n_groups; g++)
      if (strcmp(s->proxies[i]->groups[g], group) == 0)
        return 1;
  }
  return 0;
}

static void check_view(const Controlplane__V1__WorkerSnapshot *s,
                       const ph_pool_view *v) {
  CHECK(v->n_proxies == s->n_proxies && v->n_rules == s->n_routing);
  for (uint32_t i = 0; i < v->n_proxies; i++) {
    const ph_pool_view_proxy *p = &v->proxies[i];
    CHECK(p->index == i && p->proxy_id && p->host && p->zone);
    CHECK(i == 0 || strcmp(v->proxies[i - 1].proxy_id, p->proxy_id) < 0);
    CHECK(cp_view_find(v, p->proxy_id) == i);
    if (p->credential) {
      CHECK(p->credential->username && p->credential->password);
      CHECK(strlen(p->credential->password) == p->credential->password_len);
    }
    int u = cp_view_usable(v, i, v->valid_until_ms);
    CHECK(u == 0);
    u = cp_view_usable(v, i, v->obtained_at_ms);
    CHECK(u == 0 || u == 1);
  }
  uint32_t *map = malloc((v->n_proxies ? v->n_proxies : 1) * sizeof *map);
  CHECK(map);
  cp_view_remap(v, v, map);
  for (uint32_t i = 0; i < v->n_proxies; i++)
    CHECK(map[i] == i);
  free(map);

  for (uint32_t i = 0; i < v->n_rules; i++) {
    const ph_pool_view_rule *r = &v->rules[i];
    CHECK(r->index == i && r->rule_id && r->host && r->target_group &&
          r->strategy && r->sticky_key);
    CHECK(strlen(r->host) == r->host_len);
    for (uint32_t c = 0; c < r->n_candidates; c++) {
      CHECK(r->candidates[c] < v->n_proxies);
      CHECK(c == 0 || r->candidates[c - 1] < r->candidates[c]);
      CHECK(in_group(s, v->proxies[r->candidates[c]].proxy_id,
                     r->target_group));
    }
    char host[300];
    if (r->host_kind == PH_POOL_VIEW_HOST_EXACT)
      snprintf(host, sizeof host, "%s", r->host);
    else if (r->host_kind == PH_POOL_VIEW_HOST_SUFFIX)
      snprintf(host, sizeof host, "x%s", r->host);
    else if (r->host_kind == PH_POOL_VIEW_HOST_ANY)
      snprintf(host, sizeof host, "any.test");
    else
      continue;
    if (strlen(host) > 255 || (r->port_min > r->port_max))
      continue;
    uint16_t port = r->port_min ? r->port_min : 1;
    if (!r->port_min && r->port_max)
      continue; /* 0..N: a range that starts at port 0 */
    uint32_t m = cp_view_match(v, host, port, r->client_identity,
                               r->listener);
    CHECK(m <= i);
  }
  CHECK(cp_view_match(v, "", 1, NULL, NULL) == PH_POOL_VIEW_NONE);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Controlplane__V1__WorkerSnapshot *s =
      controlplane__v1__worker_snapshot__unpack(NULL, size, data);
  if (!s)
    return 0;
  cp_view_opts o = {1800000000000, 300000};
  ph_pool_view *v = NULL;
  const char *why = NULL;
  int rc = cp_view_compile(s, &o, &v, &why);
  CHECK(rc == PH_OK || rc == PH_EINVAL || rc == PH_ENOMEM);
  if (rc == PH_OK) {
    CHECK(v != NULL);
    check_view(s, v);
    cp_view_hold(v);
    cp_view_release(v);
    CHECK(cp_view_refs(v) == 1);
    cp_view_release(v);
  } else {
    CHECK(v == NULL && why != NULL);
  }
  cp_view_wipe_message(s);
  controlplane__v1__worker_snapshot__free_unpacked(s, NULL);
  return 0;
}
