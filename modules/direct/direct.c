/* SPDX-License-Identifier: BSD-2-Clause */
/* direct: the "connector" service that dials targets itself. It is the
 * 001 seed's bounded dial executor: a non-blocking admission (a full queue
 * is answered queue_full at once), at most max_concurrent_dials requests
 * resolving or connecting, at most max_pending_dials waiting, each request
 * with its own deadlines and cancellation, asynchronous DNS (c-ares on the
 * host loop), happy-eyeballs connects and a target policy that keeps
 * clients off the process's own listeners.
 *
 * A request goes NEW → (QUEUED →) DNS → CONNECT → DONE; literals skip
 * DNS, policy and validation failures go straight to DONE. Results wait
 * on the done list and are delivered from a timer callback, so a callback
 * never runs inside open(). While stopping, open() answers
 * stage=queue code=queue_full (retryable): the stream fails fast and the
 * client may retry elsewhere; requests already accepted run to their end. */
#include <errno.h>
#include <ifaddrs.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <proxyhost/connector.h>
#include <proxyhost/module.h>

#include "lib/clocks.h"
#include "lib/idtab.h"
#include "lib/ilist.h"
#include "lib/metric_table.h"
#include "dialer.h"
#include "policy.h"
#include "resolver.h"
#include "frontend/stream_metrics.h"

/* retry_after_ms hints. */
#define RETRY_QUEUE_FULL_MS 100
#define RETRY_STOPPING_MS 1000
#define RETRY_TRANSIENT_MS 1000
/* How often local interface addresses are re-read (for listeners on
 * 0.0.0.0 or ::), at most. */
#define LOCAL_REFRESH_MS 10000

enum rq_state { RQ_NEW = 0, RQ_QUEUED, RQ_DNS, RQ_CONNECT, RQ_DONE };

typedef struct direct direct;
typedef struct dreq dreq;

struct dreq {
  ilist_node link; /* in exactly one list once admitted */
  idtab_node hn;   /* in the id table while the caller may cancel */
  direct *d;
  int64_t id;
  ph_open_cb cb;
  void *arg;
  int state;
  uint16_t port;
  int kind;    /* policy_host_kind */
  int verdict; /* policy_check_name */
  char host[256];
  char name[POLICY_MAX_NAME + 1];
  struct sockaddr_storage literal;
  const ph_open_addr_filter *filter; /* the caller's, NULL: none */
  int64_t deadline_ms;     /* open_timeout */
  int64_t dns_deadline_ms; /* dns_timeout */
  int64_t t_admit, t_stage; /* mono_us(), for the histograms */
  ph_timer *timer;
  resolver_query *q;
  dialer *dl;
  int err; /* errno of a failed connect, for the debug log */
  ph_open_result res;
};

struct direct {
  ph_ctx *ctx;
  /* configuration */
  int max_concurrent, max_pending;
  int log_target; /* the target in the "open failed" debug line */
  uint32_t connect_timeout_ms, open_timeout_ms, dns_timeout_ms, he_delay_ms;
  int stopping;
  policy *pol;
  resolver *res;
  /* metrics */
  stream_metrics sm;
  ph_series *g_active, *g_pending, *c_queue_full;
  /* requests */
  ilist queue, running, done;
  idtab ids;
  int64_t next_id;
  int pumping;
  int entered; /* open/cancel/pump on the stack: deliver later */
  ph_defer *deliver; /* hands done results over on the next loop turn */
  int64_t local_at_ms; /* last refresh of local addresses, 0 never */
};

static const ph_api *api;

static const char *const direct_provides[] = {PH_CONNECTOR_SERVICE, NULL};

/* The key table, generated from direct.ini.sample (its "; type:" lines) by
 * tools/gen_conf_keys.awk into direct_keys.c. resolver_servers' maximum there
 * is RESOLVER_MAX_SERVERS and each policy list's POLICY_MAX_RULES, which
 * resolver_new and the policy's adders check again: a sample that allows more
 * fails the start or the reload, closed. */
extern const ph_conf_key direct_keys[];

/* ---- the lists and the id table (ilist.h, idtab.h) -------------------- */

static dreq *first(const ilist *l) {
  ilist_node *n = ilist_first(l);
  return n ? ILIST_ENTRY(n, dreq, link) : NULL;
}

static dreq *table_find(const direct *d, int64_t id) {
  idtab_node *n = idtab_find(&d->ids, id);
  return n ? IDTAB_ENTRY(n, dreq, hn) : NULL;
}

/* ---- metrics and logs ------------------------------------------------ */

static void update_gauges(direct *d) {
  api->gauge_set(d->g_active, (double)ilist_len(&d->running));
  api->gauge_set(d->g_pending, (double)ilist_len(&d->queue));
}

static void record_stage(direct *d, int sm_stage, int code, int64_t since) {
  stream_metrics_stage(&d->sm, sm_stage, stream_metrics_result(code),
                       mono_seconds_since(since));
}

static void log_failure(direct *d, const dreq *r) {
  /* The target only with log_target (TM-SEC-9), and at debug level only;
   * stage and code are the stable names, the errno is for operators,
   * never for clients. */
  int64_t us = mono_us() - r->t_admit;
  if (d->log_target)
    PH_LOG(api, d->ctx, PH_LOG_DEBUG, "open failed",
           PH_STR("stage", ph_open_stage_name(r->res.stage)),
           PH_STR("code", ph_open_code_name(r->res.code)),
           PH_STR("host", r->host), PH_UINT("port", r->port),
           PH_INT("errno", r->err), PH_INT("us", us));
  else
    PH_LOG(api, d->ctx, PH_LOG_DEBUG, "open failed",
           PH_STR("stage", ph_open_stage_name(r->res.stage)),
           PH_STR("code", ph_open_code_name(r->res.code)),
           PH_INT("errno", r->err), PH_INT("us", us));
}

/* ---- the executor ---------------------------------------------------- */

static void pump(direct *d);

static void arm_delivery(direct *d) {
  api->defer_post(d->deliver); /* the next loop turn, no clock tick */
}

/* Stops whatever the request is doing (DNS, dial, deadline). */
static void stop_work(dreq *r) {
  if (r->q) {
    resolver_abandon(r->q);
    r->q = NULL;
  }
  if (r->dl) {
    dialer_free(r->dl);
    r->dl = NULL;
  }
  if (r->timer)
    api->timer_set(r->timer, 0, 0);
}

/* Ends a request with its result; it is delivered on the next loop
 * iteration. retry_ms > 0 marks it retryable. */
static void finish(dreq *r, int stage, int code, int fd, uint32_t retry_ms) {
  direct *d = r->d;
  int was_running = r->state == RQ_DNS || r->state == RQ_CONNECT;
  stop_work(r);
  ilist_remove(&r->link);
  r->state = RQ_DONE;
  r->res.stage = code == PH_OPEN_OK ? PH_STAGE_NONE : stage;
  r->res.code = code;
  r->res.fd = fd;
  r->res.retryable = retry_ms > 0;
  r->res.retry_after_ms = retry_ms;
  ilist_push(&d->done, &r->link);
  arm_delivery(d);
  if (code != PH_OPEN_OK)
    log_failure(d, r);
  if (was_running)
    pump(d);
  update_gauges(d);
}

static void arm_deadline(dreq *r) {
  int64_t when = r->deadline_ms;
  if (r->state == RQ_DNS && r->dns_deadline_ms < when)
    when = r->dns_deadline_ms;
  int64_t wait = when - api->now_ms(r->d->ctx);
  api->timer_set(r->timer, wait > 0 ? (uint64_t)wait : 1, 0);
}

static void deliver(dreq *r);

/* A dial that completes from a loop callback (the dialer's watcher or
 * timer) with no open/cancel/pump of ours on the stack is delivered at
 * once: the caller is not inside open(), and the target socket changes
 * hands within one loop iteration, so libev turns its EPOLLOUT interest
 * into the relay's EPOLLIN with one epoll_ctl(MOD) instead of a spurious
 * wake-up, a DEL and an ADD one iteration later. */
static void on_dialed(void *arg, int fd, int code, int err) {
  dreq *r = arg;
  direct *d = r->d;
  dialer *dl = r->dl;
  r->dl = NULL;
  dialer_free(dl);
  r->err = err;
  record_stage(d, SM_CONNECT, code, r->t_stage);
  finish(r, PH_STAGE_CONNECT, code, fd,
         code == PH_OPEN_OK || code == PH_OPEN_CONNECTION_REFUSED
             ? 0
             : RETRY_TRANSIENT_MS);
  if (d->entered == 0 && r->state == RQ_DONE) {
    ilist_remove(&r->link);
    deliver(r);
    if (!first(&d->done))
      api->defer_cancel(d->deliver);
  }
}

static void begin_connect(dreq *r, const struct sockaddr_storage *addrs,
                          size_t n) {
  direct *d = r->d;
  dialer_opts o = {d->connect_timeout_ms, d->he_delay_ms};
  r->state = RQ_CONNECT;
  r->t_stage = mono_us();
  r->dl = dialer_new(api, d->ctx, addrs, n, &o, on_dialed, r);
  if (!r->dl) {
    finish(r, PH_STAGE_CONNECT, PH_OPEN_INTERNAL_ERROR, -1, RETRY_TRANSIENT_MS);
    return;
  }
  /* A connect may finish inside dialer_start (at once to a loopback
   * address, see dialer.c): as entered, on_dialed leaves the result on
   * the done list instead of delivering it, which would free r under
   * this function and, from on_resolved, under the resolver. */
  d->entered++;
  dialer_start(r->dl);
  d->entered--;
  if (r->state == RQ_CONNECT)
    arm_deadline(r);
}

/* Whether r may connect to sa: the target policy, then the caller's own
 * filter (the agent's host-local guard), both on the address itself. */
static int addr_allowed(const dreq *r, const struct sockaddr_storage *sa) {
  const struct sockaddr *a = (const struct sockaddr *)sa;
  return policy_check_addr(r->d->pol, a, r->verdict) &&
         (!r->filter || r->filter->allow(r->filter->arg, a));
}

/* Keeps the addresses the policy allows; none left is policy/forbidden. */
static void connect_allowed(dreq *r, const struct sockaddr_storage *addrs,
                            size_t n) {
  struct sockaddr_storage ok[RESOLVER_MAX_ADDRS];
  size_t k = 0;
  for (size_t i = 0; i < n && k < RESOLVER_MAX_ADDRS; i++)
    if (addr_allowed(r, &addrs[i]))
      ok[k++] = addrs[i];
  if (k == 0) {
    finish(r, PH_STAGE_POLICY, PH_OPEN_FORBIDDEN, -1, 0);
    return;
  }
  begin_connect(r, ok, k);
}

static void on_resolved(void *arg, int status,
                        const struct sockaddr_storage *addrs, size_t n) {
  dreq *r = arg;
  r->q = NULL;
  int code = PH_OPEN_HOST_UNREACHABLE;
  uint32_t retry = 0;
  switch (status) {
  case RESOLVER_OK:
    code = PH_OPEN_OK;
    break;
  case RESOLVER_FAILURE: /* the server may answer later */
    retry = RETRY_TRANSIENT_MS;
    break;
  case RESOLVER_TIMEOUT:
    code = PH_OPEN_TIMEOUT;
    retry = RETRY_TRANSIENT_MS;
    break;
  case RESOLVER_INTERNAL:
    code = PH_OPEN_INTERNAL_ERROR;
    retry = RETRY_TRANSIENT_MS;
    break;
  default: /* NXDOMAIN, no address, a name DNS cannot carry */
    break;
  }
  record_stage(r->d, SM_DNS, code, r->t_stage);
  if (code != PH_OPEN_OK) {
    finish(r, PH_STAGE_DNS, code, -1, retry);
    return;
  }
  connect_allowed(r, addrs, n);
}

/* Takes a dial slot: DNS for names, a connect for literals. */
static void start(dreq *r) {
  direct *d = r->d;
  ilist_remove(&r->link);
  record_stage(d, SM_QUEUE, PH_OPEN_OK, r->t_admit);
  api->observe(d->sm.queue_wait, mono_seconds_since(r->t_admit));
  ilist_push(&d->running, &r->link);
  if (r->kind == POLICY_HOST_LITERAL) {
    begin_connect(r, &r->literal, 1);
    return;
  }
  r->state = RQ_DNS;
  r->t_stage = mono_us();
  int64_t dns_end = api->now_ms(d->ctx) + d->dns_timeout_ms;
  r->dns_deadline_ms = dns_end < r->deadline_ms ? dns_end : r->deadline_ms;
  if (resolver_lookup(d->res, r->name, r->port, on_resolved, r, &r->q) < 0) {
    r->q = NULL;
    finish(r, PH_STAGE_DNS, PH_OPEN_INTERNAL_ERROR, -1, RETRY_TRANSIENT_MS);
    return;
  }
  if (r->state == RQ_DNS)
    arm_deadline(r);
}

/* Whether a queued request may start. Abandoned lookups (cancelled or
 * timed out while c-ares still waits for their answer) keep a c-ares query
 * each: running plus abandoned stays under twice max_concurrent_dials, so
 * a storm of cancels cannot pile up queries. A cancel frees its slot at
 * once as long as that budget lasts; past it, the next request starts
 * when a late answer (or c-ares' own timeout) ends an abandoned query. */
static int can_start(const direct *d) {
  size_t max = (size_t)d->max_concurrent;
  return ilist_len(&d->running) < max &&
         ilist_len(&d->running) + resolver_abandoned(d->res) < 2 * max;
}

static void pump(direct *d) {
  if (d->pumping)
    return; /* the outer call keeps going */
  d->pumping = 1;
  d->entered++;
  while (first(&d->queue) && can_start(d))
    start(first(&d->queue));
  d->entered--;
  d->pumping = 0;
  update_gauges(d);
}

static void on_deadline(ph_timer *t, void *arg) {
  (void)t;
  dreq *r = arg;
  int64_t now = api->now_ms(r->d->ctx) + 1; /* loop time slack */
  static const int stage_of[] = {[RQ_QUEUED] = PH_STAGE_QUEUE,
                                 [RQ_DNS] = PH_STAGE_DNS,
                                 [RQ_CONNECT] = PH_STAGE_CONNECT};
  static const int sm_of[] = {
      [RQ_QUEUED] = SM_QUEUE, [RQ_DNS] = SM_DNS, [RQ_CONNECT] = SM_CONNECT};
  if (r->state < RQ_QUEUED || r->state > RQ_CONNECT)
    return;
  int open_expired = r->deadline_ms <= now;
  int dns_expired = r->state == RQ_DNS && r->dns_deadline_ms <= now;
  if (!open_expired && !dns_expired) {
    arm_deadline(r);
    return;
  }
  if (r->state == RQ_QUEUED)
    api->observe(r->d->sm.queue_wait, mono_seconds_since(r->t_admit));
  record_stage(r->d, sm_of[r->state], PH_OPEN_TIMEOUT,
               r->state == RQ_QUEUED ? r->t_admit : r->t_stage);
  finish(r, stage_of[r->state], PH_OPEN_TIMEOUT, -1, RETRY_TRANSIENT_MS);
}

static void free_req(dreq *r) {
  stop_work(r);
  if (r->state == RQ_DONE && r->res.fd >= 0)
    close(r->res.fd);
  api->timer_free(r->timer);
  free(r);
}

/* Hands an unlinked done request's result over and frees it. */
static void deliver(dreq *r) {
  idtab_del(&r->d->ids, &r->hn);
  r->cb(r->arg, &r->res);
  r->res.fd = -1; /* the callee owns it now */
  free_req(r);
}

static void on_deliver(ph_defer *t, void *arg) {
  (void)t;
  direct *d = arg;
  /* Only what is due now: results produced by callbacks (an open()
   * refused at once) wait for the next iteration. */
  size_t n = ilist_len(&d->done);
  while (n-- > 0 && first(&d->done)) {
    dreq *r = first(&d->done);
    ilist_remove(&r->link);
    deliver(r);
  }
  if (first(&d->done))
    arm_delivery(d);
}

/* Re-reads interface addresses, which wildcard listeners cover. */
static void refresh_local(direct *d) {
  int64_t now = api->now_ms(d->ctx);
  if (policy_listener_count(d->pol) == 0 ||
      (d->local_at_ms && now - d->local_at_ms < LOCAL_REFRESH_MS))
    return;
  struct ifaddrs *ifs;
  if (getifaddrs(&ifs) < 0)
    return;
  d->local_at_ms = now;
  policy_clear_local(d->pol);
  for (struct ifaddrs *i = ifs; i; i = i->ifa_next)
    if (i->ifa_addr && (i->ifa_addr->sa_family == AF_INET ||
                        i->ifa_addr->sa_family == AF_INET6))
      policy_add_local(d->pol, i->ifa_addr);
  freeifaddrs(ifs);
}

/* Admission: validation and policy answer at once (through the done
 * list); otherwise a slot, a queue place, or queue_full. */
static void admit(direct *d, dreq *r) {
  if (d->stopping) {
    api->inc(d->c_queue_full, 1);
    finish(r, PH_STAGE_QUEUE, PH_OPEN_QUEUE_FULL, -1, RETRY_STOPPING_MS);
    return;
  }
  r->kind = policy_parse_host(r->host, r->port, &r->literal, r->name);
  if (r->kind == POLICY_HOST_BAD) {
    finish(r, PH_STAGE_DNS, PH_OPEN_HOST_UNREACHABLE, -1, 0);
    return;
  }
  refresh_local(d);
  int literal = r->kind == POLICY_HOST_LITERAL;
  r->verdict = policy_check_name(d->pol, literal ? NULL : r->name, r->port);
  if (r->verdict == POLICY_DENIED ||
      (literal && !addr_allowed(r, &r->literal))) {
    finish(r, PH_STAGE_POLICY, PH_OPEN_FORBIDDEN, -1, 0);
    return;
  }
  if (!first(&d->queue) && can_start(d)) {
    start(r);
    update_gauges(d);
  } else if (ilist_len(&d->queue) < (size_t)d->max_pending) {
    r->state = RQ_QUEUED;
    ilist_push(&d->queue, &r->link);
    arm_deadline(r);
    update_gauges(d);
  } else {
    api->inc(d->c_queue_full, 1);
    record_stage(d, SM_QUEUE, PH_OPEN_QUEUE_FULL, r->t_admit);
    finish(r, PH_STAGE_QUEUE, PH_OPEN_QUEUE_FULL, -1, RETRY_QUEUE_FULL_MS);
  }
}

/* ---- the service ----------------------------------------------------- */

static int valid_request(const ph_open_request *req, ph_open_cb cb) {
  if (!req || !cb ||
      req->size < offsetof(ph_open_request, principal) + sizeof(req->principal))
    return 0;
  if (req->protocol != PH_PROTO_TCP || req->port == 0 || !req->host)
    return 0;
  size_t n = strnlen(req->host, 256);
  return n >= 1 && n <= 255;
}

static int64_t direct_open(void *self, const ph_open_request *req,
                           ph_open_cb cb, void *arg) {
  direct *d = self;
  if (!valid_request(req, cb))
    return PH_EINVAL;
  dreq *r = calloc(1, sizeof(*r));
  if (!r)
    return PH_ENOMEM;
  r->timer = api->timer_new(d->ctx, on_deadline, r);
  if (!r->timer) {
    free(r);
    return PH_ENOMEM;
  }
  r->d = d;
  r->id = ++d->next_id;
  r->cb = cb;
  r->arg = arg;
  r->port = req->port;
  if (req->size >= offsetof(ph_open_request, addr_filter) +
                       sizeof(req->addr_filter) &&
      req->addr_filter && req->addr_filter->allow)
    r->filter = req->addr_filter;
  r->res.size = sizeof(r->res);
  r->res.fd = -1;
  memcpy(r->host, req->host, strnlen(req->host, 255));
  r->t_admit = mono_us();
  r->deadline_ms = api->now_ms(d->ctx) + d->open_timeout_ms;
  idtab_put(&d->ids, &r->hn, r->id);
  d->entered++;
  admit(d, r);
  d->entered--;
  return r->id;
}

static int direct_cancel(void *self, int64_t id) {
  direct *d = self;
  dreq *r = id > 0 ? table_find(d, id) : NULL;
  if (!r)
    return PH_ENOENT;
  int was_running = r->state == RQ_DNS || r->state == RQ_CONNECT;
  idtab_del(&d->ids, &r->hn);
  ilist_remove(&r->link);
  d->entered++;
  free_req(r); /* abandons the lookup, closes the dial or the result fd */
  d->entered--;
  if (was_running)
    pump(d);
  update_gauges(d);
  return PH_OK;
}

static const ph_connector_v1 direct_vt = {direct_open, direct_cancel};

/* ---- listeners on the bus -------------------------------------------- */

static void on_listener(const ph_topic *t, const void *payload, void *arg) {
  (void)t;
  direct *d = arg;
  const ph_listener_event *ev = payload;
  if (!ev || ev->size < sizeof(*ev) || ev->addrlen > sizeof(ev->addr) ||
      ev->addrlen > sizeof(struct sockaddr_storage))
    return;
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof(ss));
  memcpy(&ss, ev->addr, ev->addrlen);
  int rc = policy_listener(d->pol, (const struct sockaddr *)&ss, ev->addrlen,
                           ev->bound);
  if (rc == -2)
    PH_LOG(api, d->ctx, PH_LOG_ERROR,
           "too many listeners to protect; the extra one is not",
           PH_INT("max", POLICY_MAX_LISTENERS));
  d->local_at_ms = 0; /* re-read local addresses at the next open */
}

/* ---- configuration --------------------------------------------------- */

typedef int (*rule_fn)(policy *, int, const char *);

/* The policy keys: the list each feeds, its parser, what it takes. */
static const struct policy_key {
  const char *key;
  int list;
  rule_fn add;
  const char *want;
} policy_keys[] = {
    {"allow_cidrs", POLICY_ALLOW, policy_add_cidr,
     "an IP address or address/prefix"},
    {"deny_cidrs", POLICY_DENY, policy_add_cidr,
     "an IP address or address/prefix"},
    {"allow_hosts", POLICY_ALLOW, policy_add_host, "a host name or .suffix"},
    {"deny_hosts", POLICY_DENY, policy_add_host, "a host name or .suffix"},
    {"allow_ports", POLICY_ALLOW, policy_add_ports,
     "a port or a lo-hi range (1-65535)"},
    {"deny_ports", POLICY_DENY, policy_add_ports,
     "a port or a lo-hi range (1-65535)"},
};

/* The policy the configuration describes: the one parser of the policy
 * keys, for check, init and reload. NULL with the failing key and a
 * reason (quoting the rule: rules are not secrets). a is passed in
 * because check runs before init set the module's api. */
static policy *build_policy(const ph_api *a, ph_ctx *ctx, const char **key,
                            char *why, size_t whylen) {
  policy *p = policy_new();
  if (!p) {
    snprintf(why, whylen, "out of memory");
    return NULL;
  }
  policy_set_deny_own(p, (int)a->conf_int(ctx, "deny_own_listeners"));
  for (size_t k = 0; k < sizeof(policy_keys) / sizeof(policy_keys[0]); k++) {
    const struct policy_key *pk = &policy_keys[k];
    size_t n = a->conf_list_len(ctx, pk->key);
    for (size_t i = 0; i < n; i++) {
      const char *item = a->conf_list_at(ctx, pk->key, i);
      int rc = item ? pk->add(p, pk->list, item) : -1;
      if (rc == 0)
        continue;
      *key = pk->key;
      if (rc == -1)
        snprintf(why, whylen, "\"%s\" is not %s", item ? item : "",
                 pk->want);
      else
        snprintf(why, whylen, "\"%s\": more than %d rules, or out of memory",
                 item, POLICY_MAX_RULES);
      policy_free(p);
      return NULL;
    }
  }
  return p;
}

/* build_policy for init and reload: errors go to the log. */
static policy *load_policy(direct *d) {
  const char *key = NULL;
  char why[256];
  policy *p = build_policy(api, d->ctx, &key, why, sizeof(why));
  if (!p)
    PH_LOG(api, d->ctx, PH_LOG_ERROR, "invalid policy rule",
           PH_STR("key", key ? key : "-"), PH_STR("reason", why));
  return p;
}

/* Each resolver_servers entry, by the parser resolver_new uses. */
static int check_servers(const ph_api *a, ph_ctx *ctx, const char **key,
                         char *why, size_t whylen) {
  size_t n = a->conf_list_len(ctx, "resolver_servers");
  for (size_t i = 0; i < n; i++)
    if (resolver_check_server(a->conf_list_at(ctx, "resolver_servers", i),
                              why, whylen) < 0) {
      *key = "resolver_servers";
      return PH_EINVAL;
    }
  return PH_OK;
}

/* ph_module.check: what init would refuse, without building anything
 * that outlives the call. */
static int direct_check(ph_ctx *ctx, const ph_api *a, const char **key,
                        char *why, size_t whylen) {
  policy *p = build_policy(a, ctx, key, why, whylen);
  if (!p)
    return PH_EINVAL;
  policy_free(p);
  return check_servers(a, ctx, key, why, whylen);
}

static void read_limits(direct *d) {
  d->max_concurrent = (int)api->conf_int(d->ctx, "max_concurrent_dials");
  d->max_pending = (int)api->conf_int(d->ctx, "max_pending_dials");
  d->connect_timeout_ms = (uint32_t)api->conf_int(d->ctx, "connect_timeout");
  d->open_timeout_ms = (uint32_t)api->conf_int(d->ctx, "open_timeout");
  d->dns_timeout_ms = (uint32_t)api->conf_int(d->ctx, "dns_timeout");
  d->he_delay_ms = (uint32_t)api->conf_int(d->ctx, "happy_eyeballs_delay");
  d->log_target = (int)api->conf_int(d->ctx, "log_target");
}

/* An abandoned lookup ended: its budget may let a queued request start. */
static void on_release(void *arg) { pump(arg); }

static resolver *build_resolver(direct *d) {
  size_t n = api->conf_list_len(d->ctx, "resolver_servers");
  const char *servers[RESOLVER_MAX_SERVERS];
  for (size_t i = 0; i < n && i < RESOLVER_MAX_SERVERS; i++)
    servers[i] = api->conf_list_at(d->ctx, "resolver_servers", i);
  int tries = (int)api->conf_int(d->ctx, "dns_tries");
  /* c-ares doubles the timeout each round: split dns_timeout so that
   * every try fits in it (the request's own timer is the hard limit). */
  int per_try = (int)(d->dns_timeout_ms / ((1u << tries) - 1));
  resolver_opts o = {servers, n,          per_try > 50 ? per_try : 50,
                     tries,   on_release, d};
  char err[128];
  resolver *r = resolver_new(api, d->ctx, &o, err, sizeof(err));
  if (!r)
    PH_LOG(api, d->ctx, PH_LOG_ERROR, "resolver setup failed",
           PH_STR("reason", err));
  return r;
}

/* ---- lifecycle ------------------------------------------------------- */

static const ph_metric_table direct_metrics[] = {
    PH_METRIC("proxyhost_direct_dials_active", PH_METRIC_GAUGE,
              "Dials resolving or connecting now", PH_METRIC_NO_LABELS,
              PH_METRIC_NO_BUCKETS, direct, g_active),
    PH_METRIC("proxyhost_direct_dials_pending", PH_METRIC_GAUGE,
              "Opens waiting for a dial slot", PH_METRIC_NO_LABELS,
              PH_METRIC_NO_BUCKETS, direct, g_pending),
    PH_METRIC("proxyhost_direct_dial_queue_full_total", PH_METRIC_COUNTER,
              "Opens answered queue_full", PH_METRIC_NO_LABELS,
              PH_METRIC_NO_BUCKETS, direct, c_queue_full),
    PH_METRIC_END};

static int direct_init(ph_ctx *ctx, const ph_api *a, void **state) {
  api = a;
  direct *d = calloc(1, sizeof(*d));
  if (!d)
    return PH_ENOMEM;
  *state = d;
  d->ctx = ctx;
  ilist_init(&d->queue);
  ilist_init(&d->running);
  ilist_init(&d->done);
  read_limits(d);
  int comp = stream_metrics_component(api->conf_str(ctx, "component"));
  if (stream_metrics_init(&d->sm, api, ctx, comp, SM_DIALER) != PH_OK)
    return PH_EINVAL;
  if (ph_metric_table_register(api, ctx, direct_metrics, d) != PH_OK)
    return PH_EINVAL;
  /* Slots and queue places bound the live requests; the table only needs
   * to keep chains short. */
  size_t want = (size_t)d->max_concurrent + (size_t)d->max_pending;
  int ids_rc = idtab_init(&d->ids, want);
  d->deliver = api->defer_new(ctx, on_deliver, d);
  d->pol = load_policy(d);
  if (ids_rc < 0 || !d->deliver || !d->pol)
    return d->pol ? PH_ENOMEM : PH_EINVAL;
  d->res = build_resolver(d);
  if (!d->res)
    return PH_EINVAL;
  ph_topic *topic = api->topic(ctx, PH_LISTENER_TOPIC, PH_LISTENER_TYPE);
  if (!topic || api->subscribe(ctx, topic, on_listener, d) <= 0)
    return PH_EINVAL;
  return api->service_register(ctx, PH_CONNECTOR_SERVICE, PH_CONNECTOR_MAJOR,
                               PH_CONNECTOR_MINOR, &direct_vt, d);
}

static int direct_start(void *state) {
  direct *d = state;
  update_gauges(d);
  PH_LOG(api, d->ctx, PH_LOG_INFO, "direct connector ready",
         PH_INT("max_concurrent_dials", d->max_concurrent),
         PH_INT("max_pending_dials", d->max_pending),
         PH_UINT("resolver_servers",
                 api->conf_list_len(d->ctx, "resolver_servers")));
  return PH_OK;
}

static int direct_reload(void *state) {
  direct *d = state;
  policy *p = load_policy(d); /* checked before: fails only without memory */
  if (!p)
    return PH_EINVAL;
  policy_copy_learned(p, d->pol);
  policy_free(d->pol);
  d->pol = p;
  read_limits(d); /* resolver keys are PH_CONF_RESTART: the host warns */
  pump(d); /* the limits may have grown */
  return PH_OK;
}

static int direct_stop(void *state) {
  direct *d = state;
  d->stopping = 1; /* accepted requests run to their end */
  return PH_OK;
}

static void free_list(ilist *l) {
  ilist_node *n;
  while ((n = ilist_pop(l)))
    free_req(ILIST_ENTRY(n, dreq, link));
}

static void direct_destroy(void *state) {
  direct *d = state;
  if (!d)
    return;
  free_list(&d->queue);
  free_list(&d->running);
  free_list(&d->done);
  resolver_free(d->res); /* drops the late answers of abandoned lookups */
  policy_free(d->pol);
  api->defer_free(d->deliver);
  idtab_free(&d->ids);
  free(d);
}

PROXYHOST_MODULE = {
    PH_MODULE_HEADER("direct", "1.0.0"),
    .description = "connector that dials targets itself: bounded dial "
                   "executor, c-ares DNS, happy eyeballs, target policy",
    .provides = direct_provides,
    .config = direct_keys,
    .check = direct_check,
    .init = direct_init,
    .start = direct_start,
    .reload = direct_reload,
    .stop = direct_stop,
    .destroy = direct_destroy,
};
