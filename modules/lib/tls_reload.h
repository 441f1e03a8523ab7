/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What every role that holds TLS material does when it re-reads it (issue
 * 23 item 14: the tunnel server's certificate, the tunnel client's and
 * agent's CA, the controller's and the gateway's mTLS files): one log
 * line and one counter per attempt, the same for all, so an operator
 * renewing certificates sees each role take (or refuse) the new files;
 * and, when the operator asks (tls.reload_check_interval), a poll of the
 * files that re-reads them when one changed, without a SIGHUP.
 *
 *   proxyhost_tls_reloads_total{module,result}   counter
 *       module: tunnel_server|tunnel_client|tunnel_agent|
 *               controlplane_server|controlplane_client|checker
 *       result: ok|error
 *
 * The log line names what was reloaded ("tunnel TLS certificate") and,
 * on error, why (a static sentence naming a file by its key, never its
 * content); the files in use stay in use after an error.
 *
 * The poll compares each file's identity and times (device, inode, size,
 * modification and change times: a renewal that swaps a symlink, as
 * certbot's live/ directory does, or rewrites the file in place, both
 * show) every interval; a change calls the role's reload once. A file
 * that vanished is not a change (a renewal half done); its return is.
 *
 * Loop thread only (registration from init).
 */
#ifndef PH_TLS_RELOAD_H
#define PH_TLS_RELOAD_H

#include <stdint.h>
#include <sys/stat.h>

#include <proxyhost/host.h>

#define PH_TLS_WATCH_FILES 3

typedef void (*ph_tls_reload_fn)(void *arg, const char *trigger);

typedef struct ph_tls_reload {
  const ph_api *api;
  ph_ctx *ctx;
  const char *what; /* "tunnel TLS certificate": a literal */
  ph_series *ok, *err;
  /* the poll */
  ph_timer *timer;
  uint64_t interval_ms;
  char *files[PH_TLS_WATCH_FILES];
  struct stat seen[PH_TLS_WATCH_FILES];
  int have[PH_TLS_WATCH_FILES];
  ph_tls_reload_fn fn;
  void *arg;
} ph_tls_reload;

/* From init: registers (or shares) the counter and resolves module's
 * series. PH_OK or PH_EINVAL (an undeclared module name). */
int ph_tls_reload_init(ph_tls_reload *r, const ph_api *api, ph_ctx *ctx,
                       const char *module, const char *what);
/* One attempt's outcome: rc 0 logs "<what> reloaded" (info), anything
 * else "<what> not reloaded: the files in use stay" (warn) with why;
 * trigger is "sighup" or "file_change" (a literal). */
void ph_tls_reload_done(const ph_tls_reload *r, int rc, const char *trigger,
                        const char *why);
/* (Re)starts the poll of files (up to PH_TLS_WATCH_FILES, NULL or ""
 * skipped; copied) every interval_ms (0: stops it); fn(arg,
 * "file_change") runs from the loop when one changed. The files' state
 * now is the baseline. PH_OK or PH_ENOMEM. */
int ph_tls_watch(ph_tls_reload *r, uint64_t interval_ms,
                 const char *const files[PH_TLS_WATCH_FILES],
                 ph_tls_reload_fn fn, void *arg);
/* ph_tls_watch at the module's tls.reload_check_interval (the key group
 * lib/tls_reload.keys in its sample) as it is now; off when no file is given. */
int ph_tls_watch_key(ph_tls_reload *r,
                     const char *const files[PH_TLS_WATCH_FILES],
                     ph_tls_reload_fn fn, void *arg);
/* Takes the files' state now as the baseline (after a SIGHUP reload, so
 * that the poll does not reload the same files again). */
void ph_tls_watch_rebase(ph_tls_reload *r);
/* Stops the poll and frees its copies. */
void ph_tls_reload_free(ph_tls_reload *r);

#endif
