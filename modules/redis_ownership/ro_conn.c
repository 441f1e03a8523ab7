/* SPDX-License-Identifier: BSD-2-Clause */
/* ro_conn: see ro_conn.h. */
#include <stdlib.h>
#include <string.h>

#include <ev.h>
#include <hiredis/adapters/libev.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <openssl/rand.h>

#include "lib/backoff.h"
#include "lib/ilist.h"
#include "ro_conn.h"

enum conn_state { ST_IDLE, ST_BACKOFF, ST_CONNECTING, ST_UP, ST_STOPPED };

typedef struct call call;
struct call {
  ro_conn *c;
  int64_t id;
  ro_script script;
  ro_args args;     /* the full EVALSHA command, kept for the retry */
  ro_reply_fn fn;
  void *arg;
  ph_timer *timer;
  int hrefs;        /* hiredis callbacks still to come for it */
  int answered, cancelled, retried;
  ilist_node node; /* in c->live until answered */
};

struct ro_conn {
  ph_ctx *ctx;
  const ph_api *api;
  ro_conn_conf conf;
  ro_state_fn state_fn;
  void *state_arg;
  redisAsyncContext *ac;
  int state;
  int attempt;           /* backoff step since the last success */
  uint64_t attempts;
  ph_timer *retry_timer; /* backoff, then the connect deadline */
  ilist live;            /* unanswered calls, newest first */
  int64_t inflight, next_id;
};

static void drop(ro_conn *c, int event);

static void free_call(call *k) {
  if (k->timer)
    k->c->api->timer_free(k->timer);
  ro_args_free(&k->args);
  free(k);
}

/* Answers k once; frees it unless hiredis still holds it. Do not touch k
 * after this. */
static void answer(call *k, const redisReply *r) {
  ro_conn *c = k->c;
  if (k->answered)
    return;
  k->answered = 1;
  ilist_remove(&k->node);
  c->inflight--;
  c->api->timer_set(k->timer, 0, 0);
  if (!k->cancelled)
    k->fn(k->arg, r);
  if (k->hrefs == 0)
    free_call(k);
}

static int is_noscript(const redisReply *r) {
  return r && r->type == REDIS_REPLY_ERROR && r->str &&
         strncmp(r->str, "NOSCRIPT", 8) == 0;
}

static int send_eval(call *k);

static void on_reply(redisAsyncContext *ac, void *reply, void *privdata) {
  (void)ac;
  call *k = privdata;
  const redisReply *r = reply;
  k->hrefs--;
  if (k->answered) {
    if (k->hrefs == 0)
      free_call(k);
    return;
  }
  if (is_noscript(r) && !k->retried && k->c->ac) {
    /* The script cache was flushed (a restart, SCRIPT FLUSH): load it
     * and run the same command again, pipelined in this order. */
    k->retried = 1;
    size_t len;
    const char *text = ro_script_text(k->script, &len);
    const char *argv[3] = {"SCRIPT", "LOAD", text};
    size_t lens[3] = {6, 4, len};
    if (redisAsyncCommandArgv(k->c->ac, NULL, NULL, 3, argv, lens) ==
            REDIS_OK &&
        send_eval(k) == 0)
      return;
    r = NULL;
  }
  answer(k, r);
}

static int send_eval(call *k) {
  if (redisAsyncCommandArgv(k->c->ac, on_reply, k, (int)k->args.n,
                            (const char **)k->args.v,
                            k->args.len) != REDIS_OK)
    return -1;
  k->hrefs++;
  return 0;
}

static void on_call_timer(ph_timer *t, void *arg) {
  (void)t;
  call *k = arg;
  ro_conn *c = k->c;
  /* Sent and not answered within command_timeout: the connection is
   * presumed dead. Answer first; dropping then releases hiredis's hold. */
  int sent = k->hrefs > 0;
  answer(k, NULL);
  if (sent && c->state == ST_UP) {
    PH_LOG_RL(c->api, c->ctx, PH_LOG_WARN,
              "redis did not answer within command_timeout; reconnecting",
              PH_INT("timeout_ms", c->conf.command_timeout_ms));
    drop(c, RO_DOWN);
  }
}

int64_t ro_conn_eval(ro_conn *c, ro_script s, ro_args *args, ro_reply_fn fn,
                     void *arg) {
  if (c->state == ST_STOPPED) {
    ro_args_free(args);
    return PH_ESTATE;
  }
  if (c->inflight >= c->conf.max_inflight) {
    ro_args_free(args);
    return PH_EFULL;
  }
  call *k = calloc(1, sizeof(*k));
  if (!k) {
    ro_args_free(args);
    return PH_ENOMEM;
  }
  k->c = c;
  k->script = s;
  k->fn = fn;
  k->arg = arg;
  ro_args_str(&k->args, "EVALSHA");
  ro_args_str(&k->args, ro_script_sha(s));
  ro_args_str(&k->args, "1");
  ro_args_str(&k->args, c->conf.key);
  ro_args_str(&k->args, c->conf.prefix);
  for (size_t i = 0; i < args->n; i++)
    ro_args_add(&k->args, args->v[i], args->len[i]);
  int failed = ro_args_failed(args) || ro_args_failed(&k->args);
  ro_args_free(args);
  k->timer = c->api->timer_new(c->ctx, on_call_timer, k);
  if (failed || !k->timer) {
    free_call(k);
    return PH_ENOMEM;
  }
  k->id = ++c->next_id;
  ilist_push_front(&c->live, &k->node);
  c->inflight++;
  if (c->state == ST_UP && c->ac && send_eval(k) == 0)
    c->api->timer_set(k->timer, (uint64_t)c->conf.command_timeout_ms, 0);
  else
    c->api->timer_set(k->timer, 1, 0); /* UNAVAILABLE on the next round */
  return k->id;
}

int ro_conn_cancel(ro_conn *c, int64_t id, void **arg) {
  ILIST_FOREACH_SAFE(&c->live, it, nx) {
    call *k = ILIST_ENTRY(it, call, node);
    if (k->id == id && !k->cancelled) {
      k->cancelled = 1;
      *arg = k->arg;
      return PH_OK;
    }
  }
  return PH_ENOENT;
}

/* ---- the connection ---------------------------------------------------- */

static void schedule(ro_conn *c) {
  uint32_t rnd = 0;
  if (RAND_bytes((unsigned char *)&rnd, sizeof(rnd)) != 1)
    rnd = (uint32_t)c->attempts * 2654435761u;
  uint32_t d = ph_backoff_ms((uint32_t)c->attempt,
                             (uint32_t)c->conf.reconnect_min_ms,
                             (uint32_t)c->conf.reconnect_max_ms, rnd);
  if (c->attempt < 32)
    c->attempt++;
  c->state = ST_BACKOFF;
  c->api->timer_set(c->retry_timer, d ? d : 1, 0);
}

/* Ends the connection: every call sent on it answers NULL (hiredis calls
 * their callbacks), and the next attempt is scheduled. */
static void drop(ro_conn *c, int event) {
  redisAsyncContext *ac = c->ac;
  int was_up = c->state == ST_UP;
  c->ac = NULL;
  c->state = ST_IDLE;
  if (ac) {
    ac->data = NULL;
    redisAsyncFree(ac);
  }
  if (was_up || event == RO_FAILED)
    c->state_fn(c->state_arg, was_up ? RO_DOWN : RO_FAILED);
  if (c->state == ST_IDLE)
    schedule(c);
}

static void on_handshake(redisAsyncContext *ac, void *reply, void *privdata) {
  (void)privdata;
  ro_conn *c = ac->data;
  const redisReply *r = reply;
  if (!c || c->ac != ac || c->state != ST_CONNECTING)
    return;
  if (!r || r->type == REDIS_REPLY_ERROR) {
    /* AUTH or SELECT refused: the reason is Redis's, never the password. */
    PH_LOG_RL(c->api, c->ctx, PH_LOG_ERROR, "redis refused the handshake",
              PH_STR("reason", r && r->str ? r->str : "connection lost"));
    drop(c, RO_FAILED);
    return;
  }
  if (r->type == REDIS_REPLY_STATUS && r->str && strcmp(r->str, "PONG") == 0) {
    c->state = ST_UP;
    c->attempt = 0;
    c->api->timer_set(c->retry_timer, 0, 0);
    PH_LOG(c->api, c->ctx, PH_LOG_INFO, "redis connected");
    c->state_fn(c->state_arg, RO_UP);
  }
}

static void on_connect(const redisAsyncContext *cac, int status) {
  redisAsyncContext *ac = (redisAsyncContext *)cac;
  ro_conn *c = ac->data;
  if (!c || c->ac != ac)
    return;
  if (status != REDIS_OK) {
    /* hiredis frees ac after this callback. */
    c->ac = NULL;
    PH_LOG_RL(c->api, c->ctx, PH_LOG_WARN, "redis connection failed",
              PH_STR("reason", ac->errstr));
    c->state = ST_IDLE;
    c->state_fn(c->state_arg, RO_FAILED);
    schedule(c);
    return;
  }
  if (c->conf.password[0]) {
    const char *argv[2] = {"AUTH", c->conf.password};
    size_t lens[2] = {4, strlen(c->conf.password)};
    redisAsyncCommandArgv(ac, on_handshake, NULL, 2, argv, lens);
  }
  if (c->conf.database != 0) {
    char db[24];
    snprintf(db, sizeof(db), "%lld", (long long)c->conf.database);
    const char *argv[2] = {"SELECT", db};
    size_t lens[2] = {6, strlen(db)};
    redisAsyncCommandArgv(ac, on_handshake, NULL, 2, argv, lens);
  }
  redisAsyncCommand(ac, on_handshake, NULL, "PING");
}

static void on_disconnect(const redisAsyncContext *cac, int status) {
  (void)status;
  redisAsyncContext *ac = (redisAsyncContext *)cac;
  ro_conn *c = ac->data;
  if (!c || c->ac != ac)
    return;
  /* hiredis answered every pending callback with NULL already and frees
   * ac after this returns. */
  c->ac = NULL;
  int was_up = c->state == ST_UP;
  c->state = ST_IDLE;
  PH_LOG_RL(c->api, c->ctx, PH_LOG_WARN, "redis connection lost");
  c->state_fn(c->state_arg, was_up ? RO_DOWN : RO_FAILED);
  schedule(c);
}

static void attempt(ro_conn *c) {
  c->attempts++;
  redisAsyncContext *ac = c->conf.host[0]
                              ? redisAsyncConnect(c->conf.host, c->conf.port)
                              : redisAsyncConnectUnix(c->conf.unix_path);
  if (!ac || ac->err) {
    if (ac)
      redisAsyncFree(ac);
    c->state_fn(c->state_arg, RO_FAILED);
    schedule(c);
    return;
  }
  ac->data = c;
  if (redisLibevAttach(c->api->loop(c->ctx), ac) != REDIS_OK) {
    redisAsyncFree(ac);
    c->state_fn(c->state_arg, RO_FAILED);
    schedule(c);
    return;
  }
  redisAsyncSetConnectCallback(ac, on_connect);
  redisAsyncSetDisconnectCallback(ac, on_disconnect);
  c->ac = ac;
  c->state = ST_CONNECTING;
  /* The deadline of connect + handshake. */
  c->api->timer_set(c->retry_timer, (uint64_t)c->conf.command_timeout_ms, 0);
}

static void on_retry_timer(ph_timer *t, void *arg) {
  (void)t;
  ro_conn *c = arg;
  if (c->state == ST_BACKOFF) {
    attempt(c);
  } else if (c->state == ST_CONNECTING) {
    PH_LOG_RL(c->api, c->ctx, PH_LOG_WARN,
              "redis connection not up within command_timeout",
              PH_INT("timeout_ms", c->conf.command_timeout_ms));
    drop(c, RO_FAILED);
  }
}

ro_conn *ro_conn_new(ph_ctx *ctx, const ph_api *api, const ro_conn_conf *conf,
                     ro_state_fn state, void *state_arg) {
  ro_conn *c = calloc(1, sizeof(*c));
  if (!c)
    return NULL;
  c->ctx = ctx;
  c->api = api;
  ilist_init(&c->live);
  c->conf = *conf;
  c->state_fn = state;
  c->state_arg = state_arg;
  c->retry_timer = api->timer_new(ctx, on_retry_timer, c);
  if (!c->retry_timer) {
    free(c);
    return NULL;
  }
  return c;
}

void ro_conn_start(ro_conn *c) {
  if (c->state == ST_IDLE)
    attempt(c);
}

void ro_conn_stop(ro_conn *c) {
  if (!c || c->state == ST_STOPPED)
    return;
  c->api->timer_set(c->retry_timer, 0, 0);
  redisAsyncContext *ac = c->ac;
  c->ac = NULL;
  c->state = ST_STOPPED;
  if (ac) {
    ac->data = NULL;
    redisAsyncFree(ac); /* sent calls answer NULL here */
  }
  while (!ilist_empty(&c->live))
    answer(ILIST_ENTRY(ilist_first(&c->live), call, node), NULL);
}

void ro_conn_free(ro_conn *c) {
  if (!c)
    return;
  ro_conn_stop(c);
  c->api->timer_free(c->retry_timer);
  free(c);
}

void ro_conn_discard(ro_conn *c, void (*free_arg)(void *arg)) {
  if (!c)
    return;
  ILIST_FOREACH_SAFE(&c->live, it, nx) {
    call *k = ILIST_ENTRY(it, call, node);
    if (!k->cancelled) {
      k->cancelled = 1;
      free_arg(k->arg);
    }
  }
}

int ro_conn_up(const ro_conn *c) { return c->state == ST_UP; }
uint64_t ro_conn_attempts(const ro_conn *c) { return c->attempts; }
int64_t ro_conn_inflight(const ro_conn *c) { return c->inflight; }
