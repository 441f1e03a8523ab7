/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proxyhost SDK: ABI version, magic and status codes.
 *
 * Rules (sdk/ABI.md has the full text and each change in detail):
 *  - Adding to the SDK (a new function at the end of ph_api, a new constant,
 *    a new optional module callback taken from a reserved slot) bumps
 *    PH_ABI_MINOR.
 *  - Changing or removing anything bumps PH_ABI_MAJOR and resets the minor.
 *  - The host loads a module only when the module's major equals the host's
 *    and the module's minor is not greater than the host's.
 *  - The ABI never depends on configure switches or build options.
 *  - A service contract (connector.h, access.h, ...) has its own version,
 *    the numbers given to service_register and service_get, under the same
 *    rules; changing one does not change the ABI's.
 *  - Every layout is recorded in t/unit/host/abi_layout.inc (sdk/abi-layout.py
 *    writes it and refuses a changed layout under the same version), and
 *    test_abi_layout compares it with the compiler's: a change is on
 *    purpose, versioned and listed below, or the build's tests fail.
 *
 * Changelog, newest first: the version, the day it was released, then one
 * line per change.
 *
 * 1.7 (2026-12-07)
 *   ph_api.status_register, status_field, status_field_int, status_table,
 *     status_row appended, ph_panel, ph_panel_fn: a module's panels on
 *     the status page (/ui/) and in GET /v1/status, rendered by the host
 * 1.6 (2026-12-06)
 *   ph_api.defer_new, defer_post, defer_cancel, defer_free appended,
 *     ph_defer, ph_defer_fn: a cancellable call on the loop's next turn
 *   services: connector 1.5 (open_ext.h: size-tagged extension chains
 *     on ph_open_request and ph_open_result; the lease and HTTP
 *     forwarding as extensions, open_lease.h, open_http_forward.h)
 *   services: pool.view 1.2 (ph_pool_view.health, was reserved[0]: the
 *     controller's verdict per proxy, ph_pool_view_health; issue 26)
 *   services: connector 1.6 (open_upstream.h: PH_OPEN_EXT_UPSTREAM, the
 *     hop a connector went through, named in a result's chain)
 * 1.5 (2026-12-06)
 *   ph_api.drain_cut appended: a module's own drain deadline closed
 *     streams, and the host's stop says it was cut short
 * 1.4 (2026-12-06)
 *   ph_api.conf_peer_int, ph_api.conf_peer_str appended: another loaded
 *     module's numeric and (never secret) string keys
 *   ph_conf_key.flag (was reserved[0]) and PH_CONF_KEY_FLAG: a key's
 *     command-line name
 *   services: connector 1.3 (lease, listener, headers, HTTP forwarding),
 *     connector 1.4 (on_cut, addr_filter), pool.view 1.1, pool.store 1.0,
 *     outcome.sink 1.0, dispatch.strategy 1.0 (their headers)
 * 1.3 (2026-12-01)
 *   ph_api.route_register, ph_api.route_reply appended, ph_http_request:
 *     module routes under /v1/ on the admin listener
 *   services: validation 1.0, authz.store 1.0, connector 1.2 (result
 *     flags: strict or legacy open)
 * 1.2 (2026-12-01)
 *   stream.h (ph_stream, ph_stream_ops), PH_EAGAIN, PH_ERESET
 *   module threads (thread_start and its family), several providers of a
 *     service (service_get_named), instances (NAME.INSTANCE)
 *   ph_conf_key.reserved[4] appended (the key table is read with the
 *     layout of the module's minor), one thread rule for the conf getters
 *   services: access 1.0, connector 1.1 (request flags: streams),
 *     listener_event.h (the net.listener topic)
 * 1.1 (2026-11-30)
 *   ph_module.check (was reserved[0]), ph_api.counter_set,
 *     ph_api.parse_listen_addr, ph_api.service_provided
 * 1.0 (2026-11-30)
 *   first ABI; services: connector 1.0, authorizer 1.0
 *
 * configure reads PH_ABI_MAJOR and PH_ABI_MINOR from the #define lines
 * below: keep them plain numbers with nothing after them.
 */
#ifndef PROXYHOST_ABI_H
#define PROXYHOST_ABI_H

#include <stdint.h>

/* "PHMD" read as a little-endian 32-bit integer. First field of ph_module. */
#define PH_MODULE_MAGIC 0x444d4850u

#define PH_ABI_MAJOR 1
#define PH_ABI_MINOR 7
#define PH_ABI_STR2_(x) #x
#define PH_ABI_STR_(x) PH_ABI_STR2_(x)
/* "major.minor", e.g. "1.7" */
#define PH_ABI_STRING PH_ABI_STR_(PH_ABI_MAJOR) "." PH_ABI_STR_(PH_ABI_MINOR)

/* Status codes returned by host API functions and module callbacks.
 * Zero is success; errors are negative and stable across minors. */
enum ph_status {
  PH_OK = 0,
  PH_EINVAL = -1,    /* bad argument */
  PH_EFULL = -2,     /* a bounded queue is full; nothing was taken */
  PH_ENOENT = -3,    /* no such service, topic, key or job */
  PH_EBUSY = -4,     /* in use (service with users, job already running) */
  PH_EEXIST = -5,    /* name already registered */
  PH_ENOMEM = -6,    /* allocation failed */
  PH_ECANCELED = -7, /* the job or request was cancelled */
  PH_ESTATE = -8,    /* not allowed in this lifecycle phase or thread */
  PH_ELIMIT = -9,    /* a declared bound would be exceeded */
  PH_EAGAIN = -10,   /* 1.2: nothing now; an event will tell (streams) */
  PH_ERESET = -11    /* 1.2: the stream was reset or its transport lost */
};

/* Returned by ph_module.stop when the module drains asynchronously and
 * will call api->stop_done() later. */
#define PH_STOP_PENDING 1

/* Exported symbol name of every module's descriptor. */
#define PH_MODULE_SYMBOL "proxyhost_module"

#if defined(__GNUC__)
#define PH_EXPORT __attribute__((visibility("default")))
#else
#define PH_EXPORT
#endif

#endif
