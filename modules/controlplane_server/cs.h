/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The controller's shared state (controlplane_server): one per instance,
 * loop thread only. The RPCs (cs_register.c, cs_ack.c, cs_runtime.c,
 * cs_outcomes.c, cs_watch.c), the pool cache (cs_pool.c) and the periodic
 * assign (cs_assign.c) use it; controlplane_server.c owns its life.
 */
#ifndef CS_H
#define CS_H

#include <stdint.h>

#include <proxyhost/module.h>
#include <proxyhost/pool_store.h>

#include "lib/clocks.h"
#include "contracts/cp_authority.h"
#include "contracts/cp_credcheck.h"
#include "cp_common/grpc/cp_grpc.h"
#include "cp_common/grpc/cp_grpc_conf.h"
#include "cp_requests.h"
#include "cs_conf.h"
#include "lib/ilist.h"

#define CS_KEY_LEN 32
#define CS_WORKER_ID_MAX PH_POOL_ID_MAX

/* The methods, for metrics. */
typedef enum cs_method {
  CS_M_REGISTER = 0,
  CS_M_WATCH,
  CS_M_ACK,
  CS_M_RUNTIME,
  CS_M_OUTCOMES,
  CS_M_REGISTER_CHECKER, /* CheckerControlPlane (cs_checker.h) */
  CS_M_WATCH_TASKS,
  CS_M_OBSERVATIONS,
  CS_M_COUNT
} cs_method;

/* The pool's rows at one revision, shared by builds (refcounted on the
 * loop thread; read-only once made, so a build job may read it). */
typedef struct cs_pool {
  int refs;
  uint64_t revision;
  ph_pool_route_row *routes;
  size_t n_routes;
  ph_pool_proxy_row *proxies;
  size_t n_proxies;
} cs_pool;

typedef void (*cs_pool_cb)(void *arg, cs_pool *pool); /* NULL: unavailable */

typedef struct cs_pool_waiter {
  ilist_node node; /* in cs.waiters */
  cs_pool_cb cb;
  void *arg;
} cs_pool_waiter;

typedef struct cs_watch cs_watch;
struct cs_health_state; /* the reducer (cs_health.c) */

/* A unary or client-streaming RPC waiting on the authority: linked in
 * cs.pending so that stop can cancel its call (the authority answers
 * every pending call UNAVAILABLE once it stops, after us). */
typedef struct cs_link {
  ilist_node node;                    /* in cs.pending */
  void (*abandon)(struct cs_link *l); /* cancel and free, no gRPC call */
} cs_link;


typedef struct cs {
  ph_ctx *ctx;
  cs_conf conf;
  const cp_authority_v1 *auth;
  void *auth_self;
  const ph_pool_store_v1 *store;
  void *store_self;
  cp_grpc_cq *cq;
  cp_grpc_server *srv;
  /* tls.* re-read on SIGHUP or a change (issue 23 item 14) */
  ph_tls_reload tls;
  cp_grpc_tls_paths tls_paths;
  uint8_t ref_key[CS_KEY_LEN];
  ph_timer *assign_timer;
  int stopping;
  int auth_up;  /* the last authority answer was not UNAVAILABLE */
  int store_up; /* the last pool read succeeded */
  /* pool cache */
  cs_pool *pool;
  int64_t pool_read; /* a store snapshot call in flight (id), 0 none */
  ilist waiters; /* cs_pool_waiter, newest first */
  char (*prev_ids)[PH_POOL_ID_MAX + 1]; /* proxies the last assign saw */
  size_t n_prev_ids;
  int64_t assign_call;
  /* the last assign's extraction counts (cp_authority minor 8): status */
  int extract_known; /* an assign answered them */
  uint32_t n_reclaiming, n_extracted;
  ilist watches; /* open streams (cs_watch) */
  ilist pending; /* unary and client-streaming RPCs in flight (cs_link) */
  /* metrics */
  ph_series *m_rpcs[CS_M_COUNT][17];
  ph_series *m_seconds[CS_M_COUNT];
  ph_series *m_streams, *m_sent, *m_deltas, *m_build, *m_build_fail, *m_assign[2];
  ph_series *m_bytes[2]; /* bytes sent: full snapshots, deltas */
  ph_series *m_replaced; /* streams ended by a newer one of their session */
  ph_series *m_withheld; /* owned proxies a build left out: no credential */
  ph_series *m_rebalance[2]; /* proxies set moving; moves held back */
  ph_series *m_unauth, *m_dropped[2]; /* the front: cp_grpc_front.h */
  struct cs_checkers *checkers; /* the CheckerControlPlane: cs_checker.h */
  struct cs_health_state *health; /* the reducer: cs_health.c */
  struct cs_members *members; /* several controllers: cs_members.h */
} cs;

extern const ph_api *cs_api;

/* "cp.credentials" over secrets_dir (cs_credcheck.c, issue 23 item 6). */
extern const cp_credcheck_v1 cs_credcheck_service;
/* "cp.health": the reducer's view of a proxy (cs_health_view.c). */
struct cp_health_v1;
extern const struct cp_health_v1 cs_health_service;

void cs_link_add(cs *m, cs_link *l, void (*abandon)(cs_link *));
void cs_link_del(cs_link *l);

/* Identity of a call: the certificate's worker id into peer (mtls), or
 * "" for plaintext. 0, or a gRPC status with *why. */
int cs_peer(cs *m, cp_grpc_call *call, char peer[CS_WORKER_ID_MAX + 1],
            const char **why);
/* The same for a role ("worker", "checker"): a certificate of the other
 * role is refused PERMISSION_DENIED (issue 26). */
int cs_peer_as(cs *m, cp_grpc_call *call, const char *role,
               char peer[CS_WORKER_ID_MAX + 1], const char **why);
/* One request's fence, from its handler's first line to its answer: the
 * caller's identity, the status so far and why. */
typedef struct cs_req {
  cs *m;
  cp_grpc_call *call;
  int64_t start;                   /* api->now_ms at arrival */
  char peer[CS_WORKER_ID_MAX + 1]; /* the certificate's worker id (mtls) */
  cp_caller c;                     /* what the cp_check_* rules compare */
  int st;                          /* 0, or the gRPC status to answer */
  const char *why;                 /* with st: the status message */
} cs_req;
/* The first steps of every request message: r filled for m (arg) and
 * call, the peer's identity (cs_peer) and the message unpacked by its
 * descriptor (cp_request_unpack: no NUL inside a string field), returned
 * (freed by the caller with its __free_unpacked, or by cs_request_fail),
 * with r->c the caller the cp_check_* rules compare it with (peer_id the
 * certificate's worker id under mtls, else NULL). r->st 0, or a gRPC
 * status with r->why (NULL returned). */
void *cs_request(cs_req *r, void *arg, cp_grpc_call *call,
                 const ProtobufCMessageDescriptor *d, const uint8_t *msg,
                 size_t len);
/* The same with the certificate's role (cs_peer_as). */
void *cs_request_as(cs_req *r, void *arg, cp_grpc_call *call,
                    const char *role, const ProtobufCMessageDescriptor *d,
                    const uint8_t *msg, size_t len);
/* A refusal of r (r->st set): frees the message q (NULL: none) and ends
 * the call with r->st and r->why, counted as meth. */
void cs_request_fail(cs_req *r, cs_method meth, void *q);
/* Ends a call and counts it. */
void cs_finish(cs *m, cp_grpc_call *call, cs_method meth, int64_t start_ms,
               int status, const char *msg, const uint8_t *resp, size_t len);
/* HMAC-SHA256(ref_key, checksum): what Redis holds instead. */
void cs_reference(const cs *m, const uint8_t *checksum, size_t len,
                  uint8_t out[32]);
void cs_note_auth(cs *m, cp_auth_result r);
/* Cancels the authority call *call when one is in flight (> 0, and the
 * authority bound) and sets *call to 0: no callback of it runs any more. */
void cs_auth_cancel(cs *m, int64_t *call);
void cs_update_ready(cs *m);

/* The pool's rows at the store's current revision: cb now (cached) or
 * later. 0, or -1 when nothing could be asked (cb not called). */
int cs_pool_get(cs *m, cs_pool_cb cb, void *arg);
void cs_pool_forget(cs *m, void *arg); /* drops arg's waiters */
void cs_pool_ref(cs_pool *p);
void cs_pool_unref(cs_pool *p);
void cs_pool_stop(cs *m);

/* The RPC handlers (cp_grpc_handler_fn). */
void cs_register_rpc(void *arg, cp_grpc_call *call, const uint8_t *req,
                     size_t len);
void cs_ack_rpc(void *arg, cp_grpc_call *call, const uint8_t *req, size_t len);
void cs_runtime_rpc(void *arg, cp_grpc_call *call, const uint8_t *req,
                    size_t len);
void cs_outcomes_rpc(void *arg, cp_grpc_call *call, const uint8_t *req,
                     size_t len);
void cs_watch_rpc(void *arg, cp_grpc_call *call, const uint8_t *req,
                  size_t len);
void cs_watch_stop_all(cs *m);
/* The CheckerControlPlane handlers (cs_checker.h). */
void cs_checker_register_rpc(void *arg, cp_grpc_call *call,
                             const uint8_t *req, size_t len);
void cs_checker_watch_rpc(void *arg, cp_grpc_call *call, const uint8_t *req,
                          size_t len);
void cs_checker_report_rpc(void *arg, cp_grpc_call *call, const uint8_t *req,
                           size_t len);
/* A proxy's health in Redis changed (cs_health.c): every stream's next
 * round now, not at its next poll (CP-6-7). */
void cs_watch_health_changed(cs *m);
/* worker registered with session here: its other streams end now. */
void cs_watch_replaced(cs *m, const char *worker, const char *session);
/* The authority accepted an ACK of (version, epoch) for worker's session:
 * the stream that sent that snapshot may base its next one on it as a
 * delta (accepted 1), or not (0). */
void cs_watch_acked(cs *m, const char *worker, const char *session,
                    uint64_t version, uint64_t epoch, int accepted);

/* The periodic assign (cs_assign.c). */
void cs_assign_tick(ph_timer *t, void *arg);

#endif
