/* SPDX-License-Identifier: BSD-2-Clause */
/* Asynchronous DNS for the direct connector: c-ares driven by the host's
 * event loop (its sockets become api io watchers, its timeouts one api
 * timer), so a lookup never blocks the loop and lookups run concurrently.
 * Loop thread only. */
#ifndef PH_DIRECT_RESOLVER_H
#define PH_DIRECT_RESOLVER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <proxyhost/host.h>

#define RESOLVER_MAX_ADDRS 16  /* addresses kept per answer */
#define RESOLVER_MAX_SERVERS 8 /* resolver_servers entries */

enum resolver_status {
  RESOLVER_OK = 0,
  RESOLVER_NXDOMAIN, /* the name does not exist or has no address */
  RESOLVER_FAILURE,  /* the server refused or failed, or was unreachable */
  RESOLVER_TIMEOUT,  /* no answer within the tries */
  RESOLVER_BADNAME,  /* the name cannot be looked up */
  RESOLVER_INTERNAL  /* out of memory, channel destroyed */
};

typedef struct resolver resolver;
typedef struct resolver_query resolver_query;

/* One answer: addrs (in c-ares' RFC 6724 order, ports set) is valid only
 * during the call. */
typedef void (*resolver_cb)(void *arg, int status,
                            const struct sockaddr_storage *addrs, size_t n);

typedef struct resolver_opts {
  /* "127.0.0.1:5353", "[::1]:53", "10.0.0.1" items; n_servers 0 means
   * the system's resolver configuration (/etc/resolv.conf). */
  const char *const *servers;
  size_t n_servers;
  int timeout_ms; /* per try */
  int tries;
  /* Called (if not NULL) each time an abandoned query's answer or
   * failure finally arrives, i.e. when resolver_abandoned() went down. */
  void (*on_release)(void *arg);
  void *release_arg;
} resolver_opts;

/* Whether item is a server entry resolver_new accepts ("ip", "ip:port",
 * "[ip6]", "[ip6]:port" or a bare IPv6 address; numeric, port 1-65535),
 * by the same parser: 0, or -1 with a reason quoting item in why. Pure
 * (no channel, no I/O). */
int resolver_check_server(const char *item, char *why, size_t whylen);

/* NULL with a reason in err (which never contains raw system text). */
resolver *resolver_new(const ph_api *api, ph_ctx *ctx, const resolver_opts *o,
                       char *err, size_t errlen);
/* Destroys the channel: pending queries end without callbacks. */
void resolver_free(resolver *r);

/* Starts looking up name (AF_UNSPEC). The callback runs exactly once
 * unless the query is abandoned first; it may run before this returns
 * (answers from the hosts file, immediate failures). *q receives the
 * query handle before any callback, and it is valid until the callback
 * starts or resolver_abandon is called. 0, or -1 when out of memory. */
int resolver_lookup(resolver *r, const char *name, uint16_t port,
                    resolver_cb cb, void *arg, resolver_query **q);
/* Forgets a query: c-ares has no per-query cancel, so its late answer is
 * dropped when it arrives. The callback is never called afterwards. */
void resolver_abandon(resolver_query *q);
/* Abandoned queries still waiting for c-ares. */
size_t resolver_abandoned(const resolver *r);

#endif
