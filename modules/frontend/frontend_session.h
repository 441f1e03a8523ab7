/* SPDX-License-Identifier: BSD-2-Clause */
/* The session skeleton every frontend repeats, in one place: a client
 * connection's guard (guard.h), its socket watcher, its deadline timer
 * (with the hangup probe of hangup.h while the client is not read), the
 * authorizer's check and the connector's open with their cancellation,
 * the hand-over to the relay, exactly one end, and per listener the
 * count of sessions and the drain on stop. The protocol (SOCKS5's
 * messages, HTTP's heads and bodies, a tunnel's or a gateway's frames)
 * stays in its module and is called back through frontend_session_ops.
 *
 * The per-listener part (the sessions' list and count, the stop and the
 * drain, destroy) is frontend_server.h's, which includes this header.
 *
 * How a frontend uses it (socks5.c and http_proxy's http_conn.c do; the
 * tunnel server's and the gateway's frontends do the same with their
 * handshake in ops: a deadline for it, a check through the authorizer,
 * an open through the connector, and the relay with a socket or a
 * ph_stream (a multiplexed stream) as the target end):
 *
 *   typedef struct my_conn {
 *     frontend_session fs;      // embedded; fs.owner points back here
 *     ... protocol state ...
 *   } my_conn;
 *
 *   init:   frontend_server_init(&srv, api, ctx, &my_ops, &sm, gauge)
 *   start:  frontend_server_services_get(&srv, password): the connector,
 *           the authorizer and the validation into srv (and their self
 *           pointers); open the listener into srv.listener
 *   accept: c = calloc(...); frontend_session_start(&srv, &c->fs, c, fd);
 *           then, between frontend_session_enter/leave, read the client
 *   events: my_ops.client_io(c, revents), my_ops.deadline(c), ...
 *           each already between enter and leave: the protocol may close
 *           the session (frontend_session_close) anywhere inside
 *   stop:   return frontend_server_stop(&srv);  (my_ops.stop decides, per
 *           session, to close it now or let it finish)
 *   destroy: frontend_server_destroy(&srv);
 *           frontend_server_services_release(&srv)
 *
 * The guard rule (guard.h): every entry into a session from outside (its
 * watcher and timer, the authorizer's and the connector's answers, the
 * relay's callbacks, a stop) runs between frontend_session_enter and
 * frontend_session_leave, here, before the protocol is called. Closing a
 * session releases everything at once (ops->end first, for the
 * protocol's own resources and its log line, then the check, the open,
 * the relay, the watcher, the timer and the client socket here), marks
 * it dead, and its memory is freed (ops->free) only by the outermost
 * leave, at the end of the event; outside any entry (a stop or destroy
 * walking the list), at once. Code that runs after a callee may have
 * closed the session checks frontend_session_dead.
 *
 * Leases (open_lease.h): every open asks for a lease and names the
 * listener (the frontend instance, api->module_name), with the request
 * headers the frontend set in s->headers, and asks for absolute-form
 * forwarding when s->open_forward is set (open_http_forward.h); whether
 * a success's stream goes to an HTTP forward proxy, and what to add to
 * its requests, is in s->open_http_proxy and s->open_proxy_auth during
 * ops->open_done. Each extension is asked with its old flag as well and
 * read from an older connector's old fields, so connectors built against
 * SDK 1.6 and older serve the frontends unchanged. A success's lease (may
 * be NULL) goes to ops->open_done with the target; from then on its
 * holder ends it exactly once: the frontend while it holds the target,
 * the skeleton once frontend_session_relay took both. The skeleton tells
 * first_byte at the relay's first byte down and ends the lease with the
 * relay (relay_lease_end), or with CLIENT_ERROR when the relay could not
 * start or the session closed while relaying (a stop, a destroy). It
 * gives every lease the connector's cut (ph_open_lease_on_cut): a cut
 * closes the session (FRONTEND_END_LOG), which ends the lease.
 *
 * No allocation and no system call per session beyond what the two
 * frontends made before: one watcher and one timer, made at start.
 *
 * Loop thread only. */
#ifndef PH_FRONTEND_SESSION_H
#define PH_FRONTEND_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/authorizer.h>
#include <proxyhost/connector.h>
#include <proxyhost/open_http_forward.h>
#include <proxyhost/open_lease.h>
#include <proxyhost/open_upstream.h>
#include <proxyhost/host.h>
#include <proxyhost/validation.h>

#include "client_acl.h"
#include "lib/guard.h"
#include "lib/ilist.h"
#include "listener.h"
#include "relay.h"
#include "traffic_gate.h"
#include "stream_metrics.h"

/* How a session ends, as ops->end sees it. */
enum frontend_end {
  FRONTEND_END_LOG = 0, /* closed: the protocol writes its end line */
  FRONTEND_END_QUIET    /* the module is destroyed (or the session could
                           not start in a frontend that logs nothing
                           then): no line */
};

/* The protocol's part. owner is the pointer given to
 * frontend_session_start. Every call is an entry already (the session
 * is between enter and leave); each may close the session. */
typedef struct frontend_session_ops {
  /* The client's socket has revents (PH_READ, PH_WRITE) of those asked
   * with frontend_session_watch. Not called while relaying (the relay
   * gets them). Mandatory. */
  void (*client_io)(void *owner, int revents);
  /* The deadline set with frontend_session_deadline passed. Mandatory. */
  void (*deadline)(void *owner);
  /* The client left while it was not read during a check or an open
   * (hangup.h). Mandatory. */
  void (*hangup)(void *owner);
  /* The authorizer's verdict (ph_auth_verdict) of frontend_session_auth.
   * Mandatory for a frontend that calls it. */
  void (*auth_done)(void *owner, int verdict);
  /* The connector's answer to frontend_session_open, taken with
   * relay_take_open: code is a ph_open_code (PH_OPEN_OK: target holds
   * the socket or the stream, now the owner's, and lease the connector's
   * lease for it, or NULL), stage the result's ph_open_stage. The owner
   * ends the lease (ph_open_lease_end) exactly once, when it closes the
   * target, unless it hands both to frontend_session_relay. The open's
   * stage duration and counter are recorded already. Mandatory for a
   * frontend that calls it. */
  void (*open_done)(void *owner, int code, int stage, stream_end target,
                    ph_open_lease *lease);
  /* The relay of frontend_session_relay ended (relay_end), after it
   * closed both ends; the byte counters are counted already.
   * Mandatory for a frontend that calls frontend_session_relay. */
  void (*relay_done)(void *owner, const relay_stats *st, int end);
  /* The module stops: close the session now (frontend_session_close) or
   * let it finish; the host cuts what is left at its drain_timeout.
   * NULL: every session is let finish. */
  void (*stop)(void *owner);
  /* Exactly once per session, from frontend_session_close, before the
   * session releases its own parts: the protocol writes its end line
   * (how == FRONTEND_END_LOG) and releases what it holds. While it runs,
   * frontend_session_relaying still tells whether a relay runs (it is
   * aborted after). Mandatory. */
  void (*end)(void *owner, int how);
  /* Frees the owner's memory: once, when the session is closed and no
   * entry runs. Mandatory. */
  void (*free)(void *owner);
} frontend_session_ops;

typedef struct frontend_session frontend_session;

/* Per module instance (one listener). Fields marked "set by the
 * frontend" are the frontend's to fill in; the others are the
 * skeleton's. */
typedef struct frontend_server {
  const ph_api *api;
  ph_ctx *ctx;
  const frontend_session_ops *ops;
  stream_metrics *sm;
  ph_series *clients; /* a gauge of the sessions open now, or NULL */
  /* Set by the frontend in start: */
  ph_listener *listener; /* closed by frontend_server_stop/destroy */
  const ph_connector_v1 *connector;
  void *connector_self;
  const ph_authorizer_v1 *authorizer; /* NULL without auth */
  void *authorizer_self;
  const ph_validation_v1 *validation; /* NULL: no validation step */
  void *validation_self;
  /* The connector's traffic.gate, when it has one (frontend_gate.c). */
  const traffic_gate_v1 *gate;
  void *gate_self;
  traffic_gate_watch gate_watch;
  /* The instance's name (api->module_name, host-owned): the listener of
   * every open (ph_open_request.listener). Set by frontend_server_init. */
  const char *name;
  /* From the configuration (init, frontend_server_reload): */
  client_acl acl; /* allow_clients: checked at accept */
  int log_target; /* log_target: the target in access and debug lines */
  ph_series *denied; /* proxyhost_frontend_clients_denied_total{reason=...} */
  uint64_t last_id;  /* the last stream id given (frontend_session_new_id) */
  /* The sessions. */
  ilist sessions;
  size_t n_sessions; /* ilist_len(&sessions) */
  unsigned stopping : 1;     /* frontend_server_stop ran */
  unsigned stop_pending : 1; /* stop_done is owed when the last ends */
} frontend_server;

/* One client connection's skeleton, embedded in the frontend's own
 * connection struct. Read-only for the frontend. */
struct frontend_session {
  guard g;
  frontend_server *srv;
  void *owner;
  ilist_node link; /* on srv->sessions */
  int fd;        /* the client's socket; -1 once closed or relayed */
  ph_io *io;     /* its watcher; NULL once handed to the relay */
  int events;    /* asked of io */
  ph_timer *timer;
  int64_t deadline_ms; /* api->now_ms of the deadline; 0: none */
  int64_t auth_id, open_id; /* in flight, or 0 */
  int64_t val_id;           /* the validation in flight, or 0 */
  const char *v_host;       /* the open that follows it (the */
  const char *v_principal;  /* frontend's, kept until open_done) */
  uint16_t v_port;
  int64_t t_val_us;
  int64_t t_open_us, t_relay_us; /* CLOCK_MONOTONIC, for the stages */
  ph_relay *relay;
  ph_open_lease *lease; /* the relay's target's, ended with the relay */
  /* Set by the frontend (NULL: none): the request headers the next open
   * offers the connector (ph_open_request.headers). get is called only
   * inside the connector's open(), which may come later than
   * frontend_session_open (after a validation step): it must answer from
   * what the session holds then. */
  const ph_open_headers *headers;
  /* Set by the frontend: 1 asks the next open for absolute-form
   * forwarding (open_http_forward.h: http_proxy, for a request it
   * forwards). 0: not. */
  int open_forward;
  /* Set by the skeleton just before ops->open_done, from a success's
   * result (0 and NULL for a failure): open_http_proxy 1 when the stream
   * goes to an HTTP forward proxy (ph_open_result_http_proxy), with the
   * Proxy-Authorization value to add (open_proxy_auth_len bytes; NULL:
   * none; the connector's, valid until the lease ends; a credential:
   * never logged). Read them in open_done. */
  int open_http_proxy;
  const char *open_proxy_auth;
  uint32_t open_proxy_auth_len;
  /* Set by the skeleton before ops->open_done, from any result: the hop
   * the connector went through (open_upstream.h: the pool's proxy id),
   * copied; "" when none was named. For the access line (upstream) and
   * http_proxy's Proxy-Status. */
  char open_upstream[PH_OPEN_UPSTREAM_ID_MAX + 1];
  uint64_t id; /* the stream id of the access line and the debug lines */
  struct sockaddr_storage peer; /* the client's address (family 0: none) */
  unsigned probing : 1;   /* not read while a check or an open runs */
  unsigned in_call : 1;   /* inside check_password or open */
  unsigned answered : 1;  /* the answer came inside that call */
};

/* Takes an accepted client socket (and its listener slot) over: links
 * the session, counts it, gives it a stream id, keeps the client's
 * address (peer, may be NULL), makes its watcher (no events yet) and
 * timer. The frontend has admitted the client already
 * (frontend_server_admit). PH_OK, or PH_ENOMEM: the session is linked
 * all the same, and the caller closes it (frontend_session_close) at
 * once. */
int frontend_session_start(frontend_server *srv, frontend_session *s,
                           void *owner, int fd, const struct sockaddr *peer,
                           socklen_t peerlen);
/* Gives the session a new stream id (an HTTP connection: one per
 * request) and returns it. Ids grow from 1 per module instance. */
uint64_t frontend_session_new_id(frontend_session *s);
/* Every entry from outside that the skeleton does not make itself (the
 * accept, a frontend's own watcher on its upstream) runs between these;
 * leave frees the session's owner when it was closed inside and this was
 * the outermost entry. */
void frontend_session_enter(frontend_session *s);
void frontend_session_leave(frontend_session *s);
static inline int frontend_session_dead(const frontend_session *s) {
  return guard_dead(&s->g);
}
/* Ends the session (once; a dead one is left alone): ops->end(owner,
 * how), then cancels the check and the open in flight, aborts the relay,
 * frees the watcher and the timer, closes the client's socket, unlinks
 * and gives the listener slot back (stop_done if it was the last one
 * during a drain). The owner is freed now outside an entry, else by the
 * outermost leave. */
void frontend_session_close(frontend_session *s, int how);

/* Asks the client's watcher for events (PH_READ | PH_WRITE, 0: none);
 * the loop is told only when they change. While a check or an open runs
 * and PH_READ is not asked, the client's hangup is probed for every
 * HANGUP_PROBE_MS (ops->hangup). */
void frontend_session_watch(frontend_session *s, int events);
/* A deadline ms from now (ops->deadline when it passes); 0: none. */
void frontend_session_deadline(frontend_session *s, int64_t ms);

/* Asks srv->authorizer about a user name and password (copied by the
 * authorizer: the caller may wipe them on return). PH_OK: the verdict
 * comes through ops->auth_done (possibly already inside this call, if
 * the authorizer broke its contract: the caller checks
 * frontend_session_dead and the state it left). A negative ph_status:
 * refused at once, no callback. */
int frontend_session_auth(frontend_session *s, const char *user,
                          size_t user_len, const char *pass,
                          size_t pass_len);
/* Abandons the check in flight, if any: no callback afterwards. */
void frontend_session_cancel_auth(frontend_session *s);
/* Asks srv->connector for a TCP stream to host:port for principal (NULL:
 * none), taking a socket or a stream (PH_OPEN_F_STREAM) and honouring a
 * lease (open_lease.h), from listener srv->name with s->headers.
 * PH_OK: the answer comes through ops->open_done (as above, possibly
 * inside). A negative ph_status: refused at once, no callback. */
int frontend_session_open(frontend_session *s, const char *host,
                          uint16_t port, const char *principal);
/* The open with the validation step before it (validation.h), for a
 * frontend that has the client's entry credentials (user/pass, 0..255
 * bytes each; NULL and 0 for a client that gave none). Without a
 * validation provider (srv->validation NULL) this is
 * frontend_session_open and nothing more. With one, the provider copies
 * the credentials (the caller wipes its own on return), and its verdict
 * decides: an allow opens host:port for principal; anything else ends
 * in ops->open_done with PH_OPEN_FORBIDDEN (stage authorization, as a
 * denied target: SOCKS5 0x02, HTTP 403), the stage remote_validation
 * recorded either way. host and principal must stay valid until
 * ops->open_done. Returns as frontend_session_open; ops->open_done may
 * have run inside (a refusal of the provider is a denial at once). */
int frontend_session_open_validated(frontend_session *s, const char *host,
                                    uint16_t port, const char *principal,
                                    const char *user, size_t user_len,
                                    const char *pass, size_t pass_len);
/* Abandons the open (or the validation before it) in flight, if any: no
 * callback afterwards. */
void frontend_session_cancel_open(frontend_session *s);
/* 1 while a check (an open, or its validation) is in flight. */
static inline int frontend_session_authing(const frontend_session *s) {
  return s->auth_id > 0;
}
static inline int frontend_session_opening(const frontend_session *s) {
  return s->open_id > 0 || s->val_id > 0;
}

/* The relay's settings for frontend_session_relay. */
typedef struct frontend_relay_opts {
  int64_t idle_timeout_ms;
  size_t buffer_size;
  int use_splice;
} frontend_relay_opts;

/* Hands the client's socket and watcher, and target with its lease (or
 * NULL), over to the relay, with pre (bytes the client sent past its
 * head) going first; stops the deadline. The relay records the time to
 * the first byte down (SM_TTFB, and the lease's first_byte) and the
 * bytes both ways; ops->relay_done tells its end, after the lease was
 * ended (relay_lease_end). PH_OK, or PH_ENOMEM: the relay could not
 * start and closed both ends, the lease ended with CLIENT_ERROR; the
 * caller closes the session. */
int frontend_session_relay(frontend_session *s, stream_end target,
                           ph_open_lease *lease, const void *pre,
                           size_t pre_len, const frontend_relay_opts *o);
static inline int frontend_session_relaying(const frontend_session *s) {
  return s->relay != NULL;
}

#endif
