/* SPDX-License-Identifier: BSD-2-Clause */
/* The agent's host-local guard (target_guard.h). */
#include "target_guard.h"

#include <ifaddrs.h>
#include <stdlib.h>
#include <string.h>

#include "lib/cidr.h"

#define N_FIXED 7

struct target_guard {
  ip_cidr fixed[N_FIXED]; /* fixed_local, parsed */
  ip_cidr allow[GUARD_MAX_ALLOW];
  size_t n_allow;
  ip_addr local[GUARD_MAX_LOCAL];
  size_t n_local;
  int64_t local_at_ms; /* last getifaddrs, 0: never */
};

/* Host-local by their prefix, whatever the interfaces say. */
static const char *const fixed_local[N_FIXED] = {
    "0.0.0.0/8",      /* "this host" (0.0.0.0 connects to loopback) */
    "127.0.0.0/8",    /* loopback */
    "169.254.0.0/16", /* link-local, with the metadata 169.254.169.254 */
    "::/128",         /* unspecified */
    "::1/128",        /* loopback */
    "fe80::/10",      /* link-local */
    "fd00:ec2::254",  /* the IPv6 metadata address (EC2) */
};

target_guard *guard_new(void) {
  target_guard *g = calloc(1, sizeof(*g));
  for (size_t i = 0; g && i < N_FIXED; i++)
    if (ip_cidr_parse(fixed_local[i], &g->fixed[i]) < 0)
      abort(); /* a typo above: every test would show it */
  return g;
}

void guard_free(target_guard *g) { free(g); }

int guard_allow(target_guard *g, const char *cidr) {
  ip_cidr c;
  if (!cidr || ip_cidr_parse(cidr, &c) < 0)
    return -1;
  if (g->n_allow >= GUARD_MAX_ALLOW)
    return -2;
  g->allow[g->n_allow++] = c;
  return 0;
}

void guard_clear_local(target_guard *g) { g->n_local = 0; }

void guard_add_local(target_guard *g, const struct sockaddr *sa) {
  ip_addr a;
  if (g->n_local < GUARD_MAX_LOCAL && ip_addr_from_sa(sa, &a, NULL) == 0)
    g->local[g->n_local++] = a;
}

void guard_refresh(target_guard *g, int64_t now_ms) {
  if (g->local_at_ms && now_ms - g->local_at_ms < GUARD_REFRESH_MS)
    return;
  struct ifaddrs *ifs;
  if (getifaddrs(&ifs) < 0)
    return; /* the last list stays; the fixed prefixes always apply */
  g->local_at_ms = now_ms ? now_ms : 1;
  guard_clear_local(g);
  for (struct ifaddrs *i = ifs; i; i = i->ifa_next)
    if (i->ifa_addr && (i->ifa_addr->sa_family == AF_INET ||
                        i->ifa_addr->sa_family == AF_INET6))
      guard_add_local(g, i->ifa_addr);
  freeifaddrs(ifs);
}

static int host_local(const target_guard *g, const ip_addr *a) {
  for (size_t i = 0; i < N_FIXED; i++)
    if (ip_cidr_match(&g->fixed[i], a))
      return 1;
  for (size_t i = 0; i < g->n_local; i++)
    if (ip_addr_eq(&g->local[i], a))
      return 1;
  return 0;
}

int guard_check(const target_guard *g, const struct sockaddr *sa) {
  ip_addr a;
  if (!sa || ip_addr_from_sa(sa, &a, NULL) < 0)
    return 0;
  if (!host_local(g, &a))
    return 1;
  for (size_t i = 0; i < g->n_allow; i++)
    if (ip_cidr_match(&g->allow[i], &a))
      return 1;
  return 0;
}
