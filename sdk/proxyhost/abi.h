/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proxyhost SDK: ABI version, magic and status codes.
 *
 * Rules (see sdk/ABI.md for the full text and the dated changelog):
 *  - Adding to the SDK (a new function at the end of ph_api, a new constant,
 *    a new optional module callback taken from a reserved slot) bumps
 *    PH_ABI_MINOR.
 *  - Changing or removing anything bumps PH_ABI_MAJOR and resets the minor.
 *  - The host loads a module only when the module's major equals the host's
 *    and the module's minor is not greater than the host's.
 *  - The ABI never depends on configure switches or build options.
 *  - 1.1 added ph_module.check (taken from reserved[0]).
 *  - 1.2 added streams (stream.h), PH_EAGAIN and PH_ERESET, module
 *    threads, reserved[4] in ph_conf_key (the host reads a module's key
 *    table with the layout of its abi_minor), one thread rule for the
 *    conf_* getters, and appended functions to ph_api (sdk/ABI.md lists
 *    it all).
 *  - 1.3 appended route_register and route_reply to ph_api (modules
 *    serve routes under /v1/ on the admin listener).
 *  - 1.4 named ph_conf_key's reserved[0] .flag (a key's command-line
 *    name) added service contracts for the control plane (sdk/ABI.md), among them
 *    "pool.store" (pool_store.h); ph_api and ph_module's layout are as in
 *    1.3.
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
#define PH_ABI_MINOR 4
#define PH_ABI_STR2_(x) #x
#define PH_ABI_STR_(x) PH_ABI_STR2_(x)
/* "major.minor", e.g. "1.4" */
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
