/* SPDX-License-Identifier: BSD-2-Clause */
/* ro_conn: one hiredis connection on the host's loop and the calls that
 * run scripts over it.
 *
 * Connecting: TCP (a numeric address) or a unix socket, then AUTH (when a
 * password is set), SELECT (database != 0) and PING; the connection is
 * up when PING answered, all within command_timeout (hiredis 0.14 has no
 * connect timeout: an ev timer of ours). Lost or never up: the next
 * attempt comes after a jittered, bounded backoff (ph_backoff_ms of
 * modules/lib/backoff.h: reconnect_min doubling
 * up to reconnect_max, each delay between half of it and all of it), so
 * a Redis that is down costs one attempt per backoff step, never a tight
 * loop.
 *
 * Calls: EVALSHA of a script (ro_scripts.h); NOSCRIPT → SCRIPT LOAD and
 * the same EVALSHA again, once. Each call answers exactly once, on the
 * loop, never from inside ro_conn_eval: with Redis's reply, or with NULL
 * (Redis down, the connection lost, or no reply within command_timeout;
 * a timeout also drops the connection, since a Redis that does not answer
 * one call will not answer the next). At most max_inflight calls. */
#ifndef PH_RO_CONN_H
#define PH_RO_CONN_H

#include <stdint.h>

#include <proxyhost/module.h>

#include "ro_args.h"
#include "ro_scripts.h"

struct redisReply;

typedef struct ro_conn_conf {
  char host[64];        /* numeric IPv4 or IPv6, "" for a unix socket */
  int port;
  char unix_path[108];  /* when host is "" */
  char password[256];   /* "" for no AUTH; never logged */
  int64_t database;
  int64_t command_timeout_ms;
  int64_t reconnect_min_ms, reconnect_max_ms;
  int64_t max_inflight;
  char key[160];        /* KEYS[1]: ph:cp:{<cluster>}:epoch */
  char prefix[160];     /* ARGV[1]: ph:cp:{<cluster>}: */
} ro_conn_conf;

/* r: the script's reply, NULL when unavailable. Valid during the call. */
typedef void (*ro_reply_fn)(void *arg, const struct redisReply *r);
/* RO_UP: the connection is up; RO_DOWN: an up connection was lost;
 * RO_FAILED: an attempt failed (refused, timed out, AUTH refused). */
enum { RO_FAILED = -1, RO_DOWN = 0, RO_UP = 1 };
typedef void (*ro_state_fn)(void *arg, int event);

typedef struct ro_conn ro_conn;

ro_conn *ro_conn_new(ph_ctx *ctx, const ph_api *api, const ro_conn_conf *c,
                     ro_state_fn state, void *state_arg);
/* Starts the first connection attempt. */
void ro_conn_start(ro_conn *c);
/* Runs script with ARGV[2..] = args (ARGV[1], the prefix, and KEYS[1]
 * are added here). args is consumed (freed) whatever the result.
 * Returns a call id > 0; PH_EFULL (max_inflight), PH_ENOMEM. */
int64_t ro_conn_eval(ro_conn *c, ro_script s, ro_args *args, ro_reply_fn fn,
                     void *arg);
/* The call's fn will not run; *arg receives the arg it was given (the
 * caller frees what it points to). PH_OK or PH_ENOENT. */
int ro_conn_cancel(ro_conn *c, int64_t id, void **arg);
/* Cancels every pending call without calling its fn, passing each arg to
 * free_arg (for destroy: the callers may be gone already). */
void ro_conn_discard(ro_conn *c, void (*free_arg)(void *arg));
/* Disconnects, answers every pending call with NULL, stops reconnecting. */
void ro_conn_stop(ro_conn *c);
void ro_conn_free(ro_conn *c);
int ro_conn_up(const ro_conn *c);
/* Connection attempts so far, and calls in flight. */
uint64_t ro_conn_attempts(const ro_conn *c);
int64_t ro_conn_inflight(const ro_conn *c);

#endif
