/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The resolver keeps no DNS cache (TM-PROTO-8: "the Agent implements no
 * DNS cache of its own; caching is the host's or the container's"). c-ares
 * 1.23 and later (Debian 13) cache answers by default, up to their TTL;
 * resolver_no_qcache turns that off with a zero maximum TTL. Older c-ares
 * (Debian 12's 1.18) has no such cache and no such option: nothing to do.
 *
 * The caller includes <ares.h> first (a test may give its own struct
 * ares_options and ARES_OPT_QUERY_CACHE instead, to compile the guarded
 * path where the installed c-ares lacks it).
 */
#ifndef PH_RESOLVER_QCACHE_H
#define PH_RESOLVER_QCACHE_H

/* Adds "no query cache" to the options ares_init_options gets. */
static inline void resolver_no_qcache(struct ares_options *o, int *mask) {
#ifdef ARES_OPT_QUERY_CACHE
  o->qcache_max_ttl = 0; /* 0: the cache is off */
  *mask |= ARES_OPT_QUERY_CACHE;
#else
  (void)o;
  (void)mask;
#endif
}

#endif
