/* SPDX-License-Identifier: BSD-2-Clause */
/* The one scriptable fake connector of the unit tests: a ph_connector_v1
 * (connector.h) whose answers a table of rows decides per target host,
 * and that records what it was asked. The frontends' tests (socks5,
 * http_proxy) register it from a test module's init in place of a real
 * connector:
 *
 *   static const fc_row rows[] = {
 *       {.host = "refused.test", .code = PH_OPEN_CONNECTION_REFUSED},
 *       {.host = "hang.test", .when = FC_NEVER},
 *       {.host = "inside-*", .when = FC_INSIDE},     a '*' ends a prefix
 *       {.host = "code-*", .code_from_host = 1},     the code is the number
 * after it
 *       {.host = NULL}};                             the rest: FC_DIAL the port
 *   static fake_connector FC;
 *   fake_connector_init(&FC, api, ctx, rows);   in the module's init
 *   api->service_register(ctx, PH_CONNECTOR_SERVICE, 1, 0,
 *                         &fake_connector_vt, &FC);
 *   ... FC.opens, FC.cancels, FC.last.host, fake_connector_pending(&FC)
 *   fake_connector_release(&FC);                answers FC_HELD opens
 *   fake_connector_answer(&FC, id, code);       answers one now
 *   FC.log[i], FC.n_log                         every open, in order
 *   fake_connector_free(&FC);                   in the module's destroy
 *
 * An OK answer carries a connected socket: by default one to
 * 127.0.0.1:<the request's port> (row .port overrides it), made when the
 * answer is given (a refused connect answers PH_OPEN_CONNECTION_REFUSED),
 * or with .give = FC_SOCKETPAIR one end of a socketpair whose other end
 * the test reads from fake_connector_peer(). An open that asked
 * PH_OPEN_F_LEASE gets a lease from FC.lease (fake_lease_*), which
 * records first_byte and end and counts what the contract forbids.
 * The test's hooks may change an open's code, port, timing or shape when
 * it is made (prepare) and its result before it is delivered (decorate).
 * A row's shape (fc_shape) answers with size-tagged extensions
 * (open_ext.h): the lease in the chain, the old field or both, an HTTP
 * forward by extension or by the old flag, an unknown type, a struct too
 * short, a result of SDK 1.6's size, a success without a socket. A row "*" matches every host; without one, a host
 * no row names is dialled.
 *
 * Loop thread only, like a real connector; every answer but FC_INSIDE
 * comes on a later loop turn (a timer of .delay_ms, 1 by default), never
 * inside open(). */
#ifndef PH_FAKE_CONNECTOR_H
#define PH_FAKE_CONNECTOR_H

#include <stdint.h>

#include <proxyhost/connector.h>
#include <proxyhost/module.h>
#include <proxyhost/open_ext.h>
#include <proxyhost/open_http_forward.h>
#include <proxyhost/open_lease.h>

/* ---- leases ------------------------------------------------------------- */

#define FAKE_LEASE_MAX 512

typedef struct fake_leases fake_leases;
typedef struct fake_lease {
  ph_open_lease base;
  fake_leases *owner;
  int first, ended, how;
  /* What the caller gave on_cut (NULL: nothing); fake_lease_cut calls
   * it, as a connector's drain would. */
  void (*cut)(void *arg);
  void *cut_arg;
} fake_lease;

/* Leases handed out, never freed (so a second end or a late first_byte
 * is seen and counted in broken). */
struct fake_leases {
  fake_lease l[FAKE_LEASE_MAX];
  int n;
  int first_bytes, ends[PH_LEASE_END_CLIENT_ERROR + 1];
  int broken; /* a call the contract forbids */
};

/* A new lease of ls, NULL once FAKE_LEASE_MAX were given. */
ph_open_lease *fake_lease_new(fake_leases *ls);
/* Leases given and not ended. */
int fake_lease_live(const fake_leases *ls);
/* The last lease given (NULL: none yet). */
fake_lease *fake_lease_last(fake_leases *ls);
/* Cuts l as its connector would (the caller's on_cut callback, from
 * outside any of its calls): 1, or 0 when the caller gave none. */
int fake_lease_cut(fake_lease *l);

/* ---- the connector ------------------------------------------------------ */

typedef enum fc_when {
  FC_LATER = 0, /* on a later loop turn: a timer of delay_ms (1 if 0) */
  FC_INSIDE,    /* inside open() itself, against connector.h's contract,
                 * to test the caller's guard */
  FC_HELD,      /* when the test calls fake_connector_release() */
  FC_NEVER      /* never: only a cancel ends it */
} fc_when;

typedef enum fc_give {
  FC_DIAL = 0,  /* OK: a socket connected to 127.0.0.1:port */
  FC_SOCKETPAIR /* OK: one end of a socketpair (fake_connector_peer) */
} fc_give;

/* How a result carries its lease (issue 25 item 5: size-tagged
 * extensions, open_ext.h). */
typedef enum fc_lease_form {
  FC_LEASE_ASKED = 0, /* in each form the request asked (ph_open_lease_give:
                       * the chain's PH_OPEN_EXT_LEASE, the old field) */
  FC_LEASE_FIELD,     /* the old field only, as a connector of SDK 1.6 */
  FC_LEASE_EXT,       /* the chain only */
  FC_LEASE_NONE       /* none, asked or not */
} fc_lease_form;

/* How a result says "HTTP forward proxy" (open_http_forward.h). */
typedef enum fc_fwd_form {
  FC_FWD_NONE = 0,
  FC_FWD_ASKED,   /* in each form asked (ph_open_http_forward_give) */
  FC_FWD_EXT,     /* the chain's PH_OPEN_EXT_HTTP_FORWARD only, of
                   * fwd_size bytes (0: its struct's) */
  FC_FWD_FLAG,    /* the old PH_OPEN_R_HTTP_PROXY and http_forward (of
                   * fwd_size bytes, 0: its struct's) */
  FC_FWD_POINTER  /* the old http_forward without the flag (a bug) */
} fc_fwd_form;

/* The shape of an answer beyond its code: a row's, copied into each
 * open it answers (the prepare hook may change q->shape). */
typedef struct fc_shape {
  fc_lease_form lease;
  fc_fwd_form fwd;
  uint32_t fwd_size;        /* 0: the struct's; less: too short a one */
  const char *proxy_auth;   /* the forwarding's value (NULL: none) */
  int junk;       /* an extension of an unknown type first in the chain */
  int v16;        /* a result of SDK 1.6's size (no ext; garbage there) */
  int no_socket;  /* OK without a socket or stream (a connector's bug) */
  int on_failure; /* the lease and forwarding on a failure too (a bug
                   * the caller must ignore: it never touches them) */
} fc_shape;

/* One scripted answer. */
typedef struct fc_row {
  /* The target host it answers: exact, or a prefix when it ends in '*'.
   * NULL ends the table. */
  const char *host;
  int code;  /* PH_OPEN_OK (0) or the refusal's code */
  int stage; /* a refusal's stage; 0: PH_STAGE_CONNECT */
  int retryable;
  uint32_t retry_after_ms;
  int code_from_host; /* the code is the number after the prefix */
  fc_when when;
  int delay_ms; /* FC_LATER: the delay; 0 is 1 ms */
  fc_give give;
  uint16_t port; /* FC_DIAL: this port instead of the request's */
  int peer_nonblock; /* FC_SOCKETPAIR: the test's end non-blocking too */
  fc_shape shape;
} fc_row;

#define FC_MAX_PENDING 64

typedef struct fc_pending {
  struct fake_connector *fc;
  int64_t id; /* 0: the slot is free */
  const fc_row *row;
  int code;
  uint16_t port;
  int lease; /* the open asked PH_OPEN_F_LEASE */
  int held;
  ph_open_cb cb;
  void *arg;
  ph_timer *t;
  uint32_t flags; /* the request's */
  int tag;        /* the test's, set by its prepare hook */
  fc_when when;   /* the row's (prepare may change it) */
  fc_shape shape; /* the row's (prepare may change it) */
  int lease_asked, fwd_asked; /* enum ph_open_asked bits */
} fc_pending;

/* What an open asked (and, in the log, what became of it). */
typedef struct fc_request {
  int64_t id;
  char host[256];
  uint16_t port;
  uint32_t flags;
  char principal[256]; /* "(none)" when NULL */
  char listener[64];   /* "(none)" when NULL */
  char session[64];    /* "[x-session's value]" or "(none)" */
  int saw_proxy_authz; /* its headers showed Proxy-Authorization */
  int lease_asked, fwd_asked; /* how it asked (enum ph_open_asked bits) */
  int header_calls;           /* headers->get calls for x-session */
  int answered, cancelled; /* in the log: what became of it */
} fc_request;

#define FC_LOG_MAX 64
#define FC_FWD_MAX 64

typedef struct fake_connector {
  const ph_api *api;
  ph_ctx *ctx;
  const fc_row *rows;
  fc_pending p[FC_MAX_PENDING];
  int64_t next_id;
  int opens, cancels, answered, leases_asked;
  fc_request last;
  /* Every open in order, the first FC_LOG_MAX of them (n_log counts
   * them all): log[i] is the open whose id is i + 1. */
  fc_request log[FC_LOG_MAX];
  int n_log;
  fake_leases lease;
  int peer; /* FC_SOCKETPAIR: the test's end of the last pair, or -1 */
  /* The forwarding structs given (they live until the lease ends: here,
   * until they are reused FC_FWD_MAX answers later). */
  union {
    ph_open_http_forward_res x;
    ph_open_http_forward old;
  } fwd[FC_FWD_MAX];
  int n_fwd;
  /* The test's hooks (NULL: none), with hook_arg: admit first in open()
   * (a status other than PH_OK refuses the call with it, nothing counted
   * or recorded); prepare runs in open()
   * once the row is chosen (it may change q->code, q->port, q->tag);
   * decorate on each result just before it is delivered. */
  int (*admit)(void *arg, const ph_open_request *rq);
  void (*prepare)(void *arg, const ph_open_request *rq, fc_pending *q);
  void (*decorate)(void *arg, const fc_pending *q, ph_open_result *r);
  void *hook_arg;
} fake_connector;

/* The connector's vtable; its self is the fake_connector. */
extern const ph_connector_v1 fake_connector_vt;

/* Resets fc (counters, leases, pending) to answer by rows. */
void fake_connector_init(fake_connector *fc, const ph_api *api, ph_ctx *ctx,
                         const fc_row *rows);
/* fake_connector_init, then fc registered as the host's connector service
 * (PH_CONNECTOR_MAJOR.PH_CONNECTOR_MINOR), in a test module's init: what
 * service_register returned (< 0: refused). */
int fake_connector_serve(fake_connector *fc, const ph_api *api, ph_ctx *ctx,
                         const fc_row *rows);
/* Between cases: forgets what is pending (no callback runs), the
 * counters, the log and the leases; keeps the rows, the hooks and the id
 * sequence (an id is never given twice). */
void fake_connector_clear(fake_connector *fc);
/* Answers (on a later turn) every open held by an FC_HELD row. Returns
 * how many. */
int fake_connector_release(fake_connector *fc);
/* Answers the pending open id now, from inside this call, as its row
 * would (an OK code: the row's socket or socketpair end) but with code.
 * PH_OK, or PH_ENOENT when id is not pending. */
int fake_connector_answer(fake_connector *fc, int64_t id, int code);
/* Opens not answered nor cancelled yet. */
int fake_connector_pending(const fake_connector *fc);
/* The test's end of the last FC_SOCKETPAIR answer, handed over: the test
 * closes it; -1 when none. */
int fake_connector_peer(fake_connector *fc);
/* Frees the timers of what is pending (no callback runs) and the last
 * peer. */
void fake_connector_free(fake_connector *fc);

#endif
