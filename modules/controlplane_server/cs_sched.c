/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The scheduler (issue 26 "Scheduling"; the controller decides, checkers
 * execute). From the pool's rows (cs_pool_get; every proxy but a
 * DISABLED one, owned or not, extracted or not) it keeps one item per
 * (proxy, tier, target group): BASIC always, EGRESS when echo_url is set,
 * TARGET for each of the proxy's groups with a probe in target_probes.
 * Every tick it expires the tasks whose deadline passed (a checker
 * failure: counted, the item due again at once, for another checker,
 * keeping the time it was due) and gives the due items without a task,
 * oldest due first (cs_sched_order: under overload every item is checked
 * less often, in turn, none never), each to one checker: the least loaded
 * that supports the tier and has room under its max_concurrency
 * (cs_sched_pick), at most max_tasks out in all, TARGET tasks spaced per
 * target host (target_host_interval). An answered item is due again
 * check_interval after the time it was due (not after its answer came),
 * or fast_interval while the reducer says it is changing state, moved by
 * check_spread percent (cs_sched_jitter); a new item first within one
 * interval, so that checks spread out. A task carries
 * the proxy's credentials (read from secrets_dir now, only in the packed
 * message, wiped once sent) and its deadline (now + task_deadline).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include "cp_common/snapshot/cp_snapshot_time.h"
#include "cp_checker_requests.h"
#include "cp_secrets.h"
#include "cs_checker.h"
#include "cs_health.h"
#include "cs_members.h"

#define api cs_api

#define TIER(x) CONTROLPLANE__V1__CHECK_TIER__CHECK_TIER_##x

static uint32_t rnd32(void) {
  uint32_t v = 0;
  if (RAND_bytes((unsigned char *)&v, sizeof(v)) != 1)
    v = (uint32_t)wall_ms();
  return v;
}

static void hex_random(char *out, size_t bytes) {
  unsigned char b[32];
  static const char d[] = "0123456789abcdef";
  if (bytes > sizeof(b))
    bytes = sizeof(b);
  if (RAND_bytes(b, (int)bytes) != 1)
    for (size_t i = 0; i < bytes; i++)
      b[i] = (unsigned char)rnd32();
  for (size_t i = 0; i < bytes; i++) {
    out[2 * i] = d[b[i] >> 4];
    out[2 * i + 1] = d[b[i] & 15];
  }
  out[2 * bytes] = 0;
}

static int item_cmp(const void *pa, const void *pb) {
  const cs_item *a = pa, *b = pb;
  int c = strcmp(a->proxy_id, b->proxy_id);
  if (c)
    return c;
  if (a->tier != b->tier)
    return a->tier < b->tier ? -1 : 1;
  return strcmp(a->group, b->group);
}

static int64_t interval_of(cs *m, const cs_item *it) {
  return cs_health_changing(m, it->proxy_id, it->tier, it->group)
             ? m->conf.fast_interval_ms
             : m->conf.check_interval_ms;
}

static int64_t next_due(cs *m, const cs_item *it, int64_t now) {
  return now + cs_sched_jitter(interval_of(m, it), m->conf.check_spread_pct,
                               rnd32());
}

cs_task *cs_task_find(cs_checker *c, const char *task_id) {
  int64_t key;
  if (!cs_task_key(task_id, &key))
    return NULL;
  idtab_node *n = idtab_find(&c->task_ids, key);
  return n ? IDTAB_ENTRY(n, cs_task, hnode) : NULL;
}

void cs_task_done(cs *m, cs_task *t, int result) {
  struct cs_checkers *k = m->checkers;
  cs_checker *c = t->owner;
  cs_item *it = t->item;
  int64_t now = wall_ms();
  ilist_remove(&t->node);
  idtab_del(&c->task_ids, &t->hnode);
  k->outstanding--;
  if (result == CS_TASK_EXPIRED) {
    c->missed++;
    snprintf(c->late[c->n_late++ % CS_LATE_RING], CS_TASK_ID_HEX + 1, "%s",
             t->id);
  }
  if (it) {
    api->inc(k->m_tasks[cs_tier_index(it->tier)][result], 1);
    it->task = NULL;
    if (result == CS_TASK_ANSWERED) {
      /* From the due time it was issued for, not the answer's arrival. */
      it->due_ms = cs_sched_next_due(it->due_ms, now, interval_of(m, it),
                                     m->conf.check_spread_pct, rnd32());
      it->avoid = 0;
    } else { /* a checker failure, never the proxy's: elsewhere, at once,
              * keeping the time it was due: the oldest, first in turn */
      if (it->due_ms > now)
        it->due_ms = now;
      it->avoid = c->serial;
    }
  }
  free(t);
}

/* ---- the items ---------------------------------------------------------- */

static size_t count_items(const cs *m, const cs_pool *p) {
  const struct cs_checkers *k = m->checkers;
  size_t n = 0;
  for (size_t i = 0; i < p->n_proxies; i++) {
    const ph_pool_proxy_row *r = &p->proxies[i];
    if (r->admin_state == PH_POOL_ADMIN_DISABLED)
      continue;
    n += m->conf.echo_url[0] ? 2 : 1;
    for (uint32_t g = 0; g < r->n_groups; g++)
      n += cs_probe_of((cs_probe *)k->probes, k->n_probes, r->groups[g]) != 0;
  }
  return n;
}

static cs_item *add(cs_item *v, size_t *n, const ph_pool_proxy_row *r,
                    size_t row, int tier, cs_probe *probe) {
  cs_item *it = &v[(*n)++];
  memset(it, 0, sizeof(*it));
  snprintf(it->proxy_id, sizeof(it->proxy_id), "%s", r->proxy_id);
  it->tier = tier;
  it->row = row;
  it->probe = probe;
  if (probe)
    snprintf(it->group, sizeof(it->group), "%s", probe->group);
  return it;
}

/* New items from p; the state of those that were there already carries
 * over (due time, the task out); tasks of items gone are dropped. */
static void rebuild(cs *m, cs_pool *p) {
  struct cs_checkers *k = m->checkers;
  size_t cap = count_items(m, p), n = 0;
  cs_item *v = calloc(cap ? cap : 1, sizeof(*v));
  if (!v)
    return; /* the next tick tries again */
  for (size_t i = 0; i < p->n_proxies; i++) {
    const ph_pool_proxy_row *r = &p->proxies[i];
    if (r->admin_state == PH_POOL_ADMIN_DISABLED)
      continue;
    add(v, &n, r, i, TIER(BASIC), NULL);
    if (m->conf.echo_url[0])
      add(v, &n, r, i, TIER(EGRESS), NULL);
    for (uint32_t g = 0; g < r->n_groups; g++) {
      cs_probe *pr = cs_probe_of(k->probes, k->n_probes, r->groups[g]);
      if (pr)
        add(v, &n, r, i, TIER(TARGET), pr);
    }
  }
  qsort(v, n, sizeof(*v), item_cmp);
  int64_t now = wall_ms();
  for (size_t i = 0; i < n; i++) /* new ones: within one interval */
    v[i].due_ms = now + (int64_t)(rnd32() % (uint64_t)m->conf.check_interval_ms);
  for (size_t i = 0; i < k->n_items; i++) {
    cs_item *old = &k->items[i];
    cs_item *nw = bsearch(old, v, n, sizeof(*v), item_cmp);
    if (nw) {
      nw->due_ms = old->due_ms;
      nw->avoid = old->avoid;
      nw->task = old->task;
      if (nw->task)
        nw->task->item = nw;
    } else if (old->task) {
      old->task->item = NULL; /* its answer finds no item: dropped */
      cs_task_done(m, old->task, CS_TASK_RELEASED);
    }
  }
  free(k->items);
  k->items = v;
  k->n_items = n;
  cs_pool_ref(p);
  cs_pool_unref(k->pool);
  k->pool = p;
}

static void got_pool(void *arg, cs_pool *p) {
  struct cs_checkers *k = arg;
  cs *m = k->m;
  k->pool_wait = 0;
  if (p && (!k->pool || p->revision != k->pool->revision))
    rebuild(m, p);
}

/* ---- a task ------------------------------------------------------------- */

/* The packed CheckTask of t for it (credentials inside), or NULL: no
 * memory, or the credential cannot be read (counted and logged). */
static cs_out *pack_task(cs *m, const cs_item *it, const cs_task *t) {
  struct cs_checkers *k = m->checkers;
  const ph_pool_proxy_row *r = &k->pool->proxies[it->row];
  Controlplane__V1__CheckTask ct = CONTROLPLANE__V1__CHECK_TASK__INIT;
  Controlplane__V1__Credential cr = CONTROLPLANE__V1__CREDENTIAL__INIT;
  Google__Protobuf__Timestamp dl = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
  ph_pool_credential pc;
  memset(&pc, 0, sizeof(pc));
  char nonce[33];
  ct.task_id = (char *)t->id;
  ct.proxy_id = (char *)r->proxy_id;
  ct.tier = (Controlplane__V1__CheckTier)it->tier;
  ct.protocol = (Controlplane__V1__UpstreamProtocol)r->protocol;
  ct.host = (char *)r->host;
  ct.port = r->port;
  if (r->secret_ref[0]) {
    const char *why = NULL;
    if (cp_secret_read(m->conf.secrets_dir, r->secret_ref,
                       r->credential_version, &pc, &why) != CP_SECRET_OK) {
      api->inc(k->m_no_credential, 1);
      PH_LOG_RL(api, m->ctx, PH_LOG_WARN,
                "no check task for a proxy: its secret file cannot be read",
                PH_STR("proxy_id", r->proxy_id),
                PH_STR("file", r->secret_ref),
                PH_STR("reason", why ? why : "unknown"));
      return NULL;
    }
    ct.secret_ref = (char *)r->secret_ref;
    ct.credential_version = r->credential_version;
    cr.secret_ref = (char *)r->secret_ref;
    cr.credential_version = r->credential_version;
    cr.username = pc.username;
    cr.password = pc.password;
    ct.credential = &cr;
  }
  if (it->tier == TIER(TARGET)) {
    ct.target_group = (char *)it->group;
    ct.target = it->probe->target;
  }
  if (it->tier == TIER(EGRESS)) {
    hex_random(nonce, 16);
    ct.echo_url = m->conf.echo_url;
    ct.nonce = nonce;
  } else if (it->tier == TIER(BASIC) && m->conf.echo_url[0]) {
    /* BASIC without a target tunnels to the echo: a checker's first
     * BASIC task may come before any EGRESS one told it where that is. */
    ct.echo_url = m->conf.echo_url;
  }
  cp_ms_to_ts(t->deadline_ms, &dl);
  ct.deadline = &dl;
  size_t len = controlplane__v1__check_task__get_packed_size(&ct);
  cs_out *o = calloc(1, sizeof(*o) + (len ? len : 1));
  if (o)
    o->len = controlplane__v1__check_task__pack(&ct, o->data);
  cp_secret_wipe(&pc);
  return o;
}

/* The checkers that may take tasks, with their loads. */
typedef struct loads {
  size_t n;
  cs_checker **c;
  cs_sched_load *l;
  uint64_t room;
} loads;

static int loads_get(cs *m, loads *s) {
  struct cs_checkers *k = m->checkers;
  size_t cap = ilist_len(&k->live);
  memset(s, 0, sizeof(*s));
  s->c = calloc(cap ? cap : 1, sizeof(*s->c));
  s->l = calloc(cap ? cap : 1, sizeof(*s->l));
  if (!s->c || !s->l)
    return -1;
  ILIST_FOREACH_SAFE(&k->live, it, nx) {
    cs_checker *c = ILIST_ENTRY(it, cs_checker, node);
    if (!c->claimed || c->missed || !c->call)
      continue;
    cs_sched_load *l = &s->l[s->n];
    l->outstanding = (uint32_t)ilist_len(&c->tasks);
    l->max = c->max_concurrency;
    l->tiers = c->tiers;
    l->usable = 1;
    l->serial = c->serial;
    if (l->outstanding < l->max)
      s->room += l->max - l->outstanding;
    s->c[s->n++] = c;
  }
  return 0;
}

/* Gives it to a checker: 1 given, 0 not now (no room for its tier, its
 * target host is held, no credential), -1 given but the checker's stream
 * ended on the send (s is stale). */
static int issue(cs *m, loads *s, cs_item *it, int64_t now) {
  struct cs_checkers *k = m->checkers;
  int i = cs_sched_pick(s->l, s->n, CP_TIER_BIT(it->tier), it->avoid);
  if (i < 0)
    return 0;
  /* Its target host is held: it keeps the time it was due, so that of
   * the items waiting for one host the oldest has it next (moved to the
   * host's next slot, they all tied there and the first in the pool's
   * order had the host every time: one proxy's TARGET item checked 25
   * times in 30 s, another's never). */
  if (it->tier == TIER(TARGET) &&
      !cs_probe_take(k->probes, k->n_probes, it->probe, now,
                     m->conf.target_host_interval_ms))
    return 0;
  cs_task *t = calloc(1, sizeof(*t));
  if (!t)
    return 0;
  cs_checker *c = s->c[i];
  int64_t key = 0;
  int unique = 0;
  /* An id unique among c's tasks: a 64-bit random one repeats once in
   * billions; the bound only keeps the loop finite. */
  for (int tries = 0; tries < 8 && !unique; tries++) {
    hex_random(t->id, CS_TASK_ID_HEX / 2);
    unique = cs_task_key(t->id, &key) && !idtab_find(&c->task_ids, key);
  }
  if (!unique) {
    free(t);
    return 0;
  }
  t->deadline_ms = now + m->conf.task_deadline_ms;
  cs_out *o = pack_task(m, it, t);
  if (!o) {
    free(t);
    it->due_ms = next_due(m, it, now);
    return 0;
  }
  t->owner = c;
  t->item = it;
  it->task = t;
  ilist_push(&c->tasks, &t->node);
  idtab_put(&c->task_ids, &t->hnode, key);
  k->outstanding++;
  s->l[i].outstanding++;
  s->room--;
  api->inc(k->m_tasks[cs_tier_index(it->tier)][CS_TASK_ISSUED], 1);
  PH_LOG(api, m->ctx, PH_LOG_DEBUG, "check task issued",
         PH_STR("proxy_id", it->proxy_id),
         PH_INT("tier", cs_tier_index(it->tier)),
         PH_STR("checker_id", c->id));
  return cs_checker_send(c, o) == 0 ? 1 : -1;
}

static void expire(cs *m, int64_t now) {
  ILIST_FOREACH_SAFE(&m->checkers->live, it, nx) {
    cs_checker *c = ILIST_ENTRY(it, cs_checker, node);
    for (ilist_node *n; (n = ilist_first(&c->tasks));) {
      cs_task *t = ILIST_ENTRY(n, cs_task, node);
      if (t->deadline_ms >= now)
        break;
      cs_task_done(m, t, CS_TASK_EXPIRED);
    }
  }
}

/* The items due now without a task, into *out, oldest due first
 * (cs_sched_order: under overload every item has its turn, and of the
 * TARGET items waiting for one host the oldest has it next); their count,
 * or -1 (no memory). Another controller's items are moved on an interval
 * here. */
static long due_items(cs *m, int64_t now, cs_sched_due **out) {
  struct cs_checkers *k = m->checkers;
  cs_sched_due *v = malloc(k->n_items * sizeof(*v));
  size_t n = 0;
  if (!v)
    return -1;
  for (size_t i = 0; i < k->n_items; i++) {
    cs_item *it = &k->items[i];
    if (it->task || it->due_ms > now)
      continue;
    if (!cs_members_mine(m, it->proxy_id)) { /* another controller's */
      it->due_ms = next_due(m, it, now);
      continue;
    }
    v[n].due_ms = it->due_ms;
    v[n++].idx = i;
  }
  cs_sched_order(v, n);
  *out = v;
  return (long)n;
}

static void tick(ph_timer *tm, void *arg) {
  cs *m = arg;
  struct cs_checkers *k = m->checkers;
  (void)tm;
  if (!k->pool_wait) {
    k->pool_wait = 1;
    if (cs_pool_get(m, got_pool, k) != 0)
      k->pool_wait = 0;
  }
  int64_t now = wall_ms();
  expire(m, now);
  if (!k->n_items || k->outstanding >= m->conf.max_tasks ||
      !cs_members_scheduling(m))
    return;
  loads s;
  cs_sched_due *due = NULL;
  k->corked = 1; /* this tick's tasks go out together (cs_checkers_uncork) */
  long n = loads_get(m, &s) == 0 ? due_items(m, now, &due) : -1;
  for (long i = 0; i < n && s.room > 0 && k->outstanding < m->conf.max_tasks;
       i++) {
    if (issue(m, &s, &k->items[due[i].idx], now) < 0) { /* a stream ended */
      free(s.c);
      free(s.l);
      if (loads_get(m, &s) != 0)
        break;
    }
  }
  free(due);
  free(s.c);
  free(s.l);
  cs_checkers_uncork(m);
}

void cs_sched_start(cs *m) {
  struct cs_checkers *k = m->checkers;
  int64_t t = m->conf.fast_interval_ms / 2;
  if (t > m->conf.check_interval_ms / 4)
    t = m->conf.check_interval_ms / 4;
  if (t < 20)
    t = 20;
  if (t > 250)
    t = 250;
  k->tick = api->timer_new(m->ctx, tick, m);
  if (k->tick)
    api->timer_set(k->tick, (uint64_t)t, (uint64_t)t);
}

void cs_sched_stop(cs *m) {
  struct cs_checkers *k = m->checkers;
  if (!k)
    return;
  if (k->tick)
    api->timer_free(k->tick);
  k->tick = NULL;
  cs_pool_forget(m, k);
  k->pool_wait = 0;
}
