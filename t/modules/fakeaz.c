/* SPDX-License-Identifier: BSD-2-Clause */
/* fakeaz: a small in-memory "authz.store" (authz_store.h) for the tests of
 * admin_api and proxyhostctl: users, tokens, agents and policies in fixed
 * arrays, answered from a timer (never inside the call), with the
 * contract's statuses for the cases the tests need (a taken name, a
 * missing owner, a user that still owns agents). Key `fail` makes every
 * call fail with a status: "unavailable", "outcome", "full", or "hang"
 * (never answer). A metric counts the writes that changed something, so a
 * test can see that bad input changed nothing. Not a real store: no
 * persistence, no policy evaluation. Never installed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <proxyhost/authz_store.h>
#include <proxyhost/module.h>

#define MAX_RECS 256
#define MAX_CALLS 64
#define S 72 /* string fields */

typedef struct rec {
  int kind;
  char key[S]; /* name or id */
  char owner[S], user[S], agent[S], subject[S], host[256];
  ph_az_record r;
} rec;

typedef struct call {
  int64_t id;
  int is_list;
  ph_az_write_cb wcb;
  ph_az_list_cb lcb;
  void *arg;
  ph_az_write_result wres;
  ph_az_list_result lres;
  ph_az_record recs[PH_AZ_LIST_MAX > 64 ? 64 : PH_AZ_LIST_MAX];
  char bearer[PH_AZ_BEARER_MAX];
  rec copy; /* the record after a write (its strings) */
  struct call *next;
} call;

typedef struct fake {
  ph_ctx *ctx;
  rec recs[MAX_RECS];
  size_t n;
  uint64_t revision, next_id;
  int fail;
  call *calls;
  size_t n_calls;
  ph_timer *timer;
  ph_series *writes;
} fake;

static const ph_api *api;

static const ph_conf_key fake_keys[] = {
    PH_CONF_KEY("fail", PH_CONF_ENUM, "none", 0, 0, 0, NULL,
                "make every call fail", "none|unavailable|outcome|full|hang"),
    PH_CONF_END};
static const char *const fake_provides[] = {PH_AZ_STORE_SERVICE, NULL};

static const ph_metric_def writes_def = {
    .name = "proxyhost_fakeaz_writes_total",
    .help = "writes that changed the fake store",
    .type = PH_METRIC_COUNTER};

static void fix_ptrs(rec *x) {
  ph_az_record *r = &x->r;
  r->kind = x->kind;
#define P(s) ((s)[0] ? (s) : NULL)
  switch (x->kind) {
  case PH_AZ_USER:
    r->u.user.name = x->key;
    r->u.user.owner = P(x->owner);
    break;
  case PH_AZ_AGENT:
    r->u.agent.name = x->key;
    r->u.agent.owner = P(x->owner);
    break;
  case PH_AZ_TOKEN:
    r->u.token.id = x->key;
    r->u.token.user = P(x->user);
    r->u.token.agent = P(x->agent);
    break;
  case PH_AZ_POLICY:
    r->u.policy.id = x->key;
    r->u.policy.agent = P(x->agent);
    r->u.policy.subject = P(x->subject);
    r->u.policy.host_pattern = P(x->host);
    break;
  }
#undef P
}

static void cp(char *d, size_t cap, const char *s) {
  snprintf(d, cap, "%s", s ? s : "");
}

static rec *find(fake *f, int kind, const char *key) {
  for (size_t i = 0; key && i < f->n; i++)
    if (f->recs[i].kind == kind && strcmp(f->recs[i].key, key) == 0)
      return &f->recs[i];
  return NULL;
}

static int name_ok(const char *s) {
  size_t n = s ? strlen(s) : 0;
  if (n < 1 || n > PH_AZ_NAME_MAX)
    return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
          (i > 0 && (c == '.' || c == '_' || c == '-'))))
      return 0;
  }
  return 1;
}

static void remove_at(fake *f, size_t i) {
  f->recs[i] = f->recs[--f->n];
  fix_ptrs(&f->recs[i]);
}

static void remove_refs(fake *f, int kind, const char *field_owner) {
  for (size_t i = 0; i < f->n;) {
    rec *x = &f->recs[i];
    int hit = x->kind == kind &&
              (strcmp(x->user, field_owner) == 0 ||
               strcmp(x->agent, field_owner) == 0 ||
               strcmp(x->subject, field_owner) == 0);
    if (hit)
      remove_at(f, i);
    else
      i++;
  }
}

/* Runs one write; sets res->status and detail. */
static void do_write(fake *f, const ph_az_write *w, call *c) {
  ph_az_write_result *res = &c->wres;
  const ph_az_record *in = &w->rec;
  const char *key = in->kind == PH_AZ_USER    ? in->u.user.name
                    : in->kind == PH_AZ_AGENT ? in->u.agent.name
                    : in->kind == PH_AZ_TOKEN ? in->u.token.id
                                              : in->u.policy.id;
  res->status = PH_EINVAL;
  rec *x = find(f, in->kind, key);
  int64_t now = 1700000000 + (int64_t)f->revision;
  if (w->action == PH_AZ_CREATE) {
    if (f->n >= MAX_RECS) {
      res->status = PH_EFULL;
      return;
    }
    rec nr;
    memset(&nr, 0, sizeof(nr));
    nr.kind = in->kind;
    nr.r.kind = in->kind;
    switch (in->kind) {
    case PH_AZ_USER:
    case PH_AZ_AGENT: {
      const char *owner =
          in->kind == PH_AZ_USER ? in->u.user.owner : in->u.agent.owner;
      if (!name_ok(key)) {
        res->detail = "bad name";
        return;
      }
      if (x) {
        res->status = PH_EEXIST;
        return;
      }
      if (owner && !find(f, PH_AZ_USER, owner)) {
        res->status = PH_ENOENT;
        res->detail = "owner does not exist";
        return;
      }
      cp(nr.key, S, key);
      cp(nr.owner, S, owner);
      nr.r.u.user.enabled =
          in->kind == PH_AZ_USER ? in->u.user.enabled : in->u.agent.enabled;
      nr.r.u.user.created_at = nr.r.u.user.updated_at = now;
      break;
    }
    case PH_AZ_TOKEN:
      if (!find(f, PH_AZ_USER, in->u.token.user) ||
          (in->u.token.agent && !find(f, PH_AZ_AGENT, in->u.token.agent))) {
        res->status = PH_ENOENT;
        res->detail = "user or agent does not exist";
        return;
      }
      if (!in->u.token.scopes || in->u.token.scopes > 3) {
        res->detail = "bad scopes";
        return;
      }
      snprintf(nr.key, S, "tok_%016llx", (unsigned long long)++f->next_id);
      cp(nr.user, S, in->u.token.user);
      cp(nr.agent, S, in->u.token.agent);
      nr.r.u.token = in->u.token;
      nr.r.u.token.created_at = nr.r.u.token.updated_at = now;
      snprintf(c->bearer, sizeof(c->bearer),
               "%s.fakesecretfakesecretfakesecretfakesecret%03llu", nr.key,
               (unsigned long long)f->next_id % 1000);
      res->bearer = c->bearer;
      break;
    case PH_AZ_POLICY:
      if (!find(f, PH_AZ_AGENT, in->u.policy.agent)) {
        res->status = PH_ENOENT;
        res->detail = "agent does not exist";
        return;
      }
      if (in->u.policy.port_min > in->u.policy.port_max) {
        res->detail = "port_min above port_max";
        return;
      }
      snprintf(nr.key, S, "pol_%016llx", (unsigned long long)++f->next_id);
      cp(nr.agent, S, in->u.policy.agent);
      cp(nr.subject, S, in->u.policy.subject);
      cp(nr.host, sizeof(nr.host), in->u.policy.host_pattern);
      nr.r.u.policy = in->u.policy;
      nr.r.u.policy.created_at = nr.r.u.policy.updated_at = now;
      break;
    default:
      return;
    }
    f->recs[f->n] = nr;
    x = &f->recs[f->n++];
  } else {
    if (!x) {
      res->status = PH_ENOENT;
      return;
    }
    if (w->action == PH_AZ_DELETE) {
      if (in->kind == PH_AZ_USER) {
        for (size_t i = 0; i < f->n; i++)
          if ((f->recs[i].kind == PH_AZ_AGENT ||
               f->recs[i].kind == PH_AZ_USER) &&
              strcmp(f->recs[i].owner, key) == 0) {
            res->status = PH_EBUSY;
            return;
          }
      }
      char k[S];
      cp(k, S, key);
      int kind = in->kind;
      remove_at(f, (size_t)(x - f->recs));
      if (kind == PH_AZ_USER) {
        remove_refs(f, PH_AZ_TOKEN, k);
        remove_refs(f, PH_AZ_POLICY, k);
      } else if (kind == PH_AZ_AGENT || kind == PH_AZ_TOKEN) {
        remove_refs(f, PH_AZ_POLICY, k);
        if (kind == PH_AZ_AGENT)
          remove_refs(f, PH_AZ_TOKEN, k);
      }
      res->status = PH_OK;
      res->revision = ++f->revision;
      res->rec.kind = 0;
      api->inc(f->writes, 1);
      return;
    }
    if (w->action == PH_AZ_ROTATE) {
      if (in->kind != PH_AZ_TOKEN || x->r.u.token.revoked_at)
        return;
      x->r.u.token.rotated_at = now;
      snprintf(c->bearer, sizeof(c->bearer),
               "%s.rotatedrotatedrotatedrotatedrotatedrot%04llu", x->key,
               (unsigned long long)f->revision % 10000);
      res->bearer = c->bearer;
    } else if (w->action == PH_AZ_UPDATE) {
      uint32_t allowed =
          in->kind == PH_AZ_USER || in->kind == PH_AZ_AGENT
              ? PH_AZ_F_ENABLED | PH_AZ_F_OWNER
          : in->kind == PH_AZ_TOKEN
              ? PH_AZ_F_SCOPES | PH_AZ_F_EXPIRES | PH_AZ_F_REVOKED
              : PH_AZ_F_SUBJECT | PH_AZ_F_HOST | PH_AZ_F_PORTS |
                    PH_AZ_F_PROTOCOL;
      if (!w->fields || (w->fields & ~allowed))
        return;
      const ph_az_record *r = in;
      if (w->fields & PH_AZ_F_OWNER) {
        const char *o =
            in->kind == PH_AZ_USER ? r->u.user.owner : r->u.agent.owner;
        if (o && !find(f, PH_AZ_USER, o)) {
          res->status = PH_ENOENT;
          res->detail = "owner does not exist";
          return;
        }
        cp(x->owner, S, o);
      }
      if (w->fields & PH_AZ_F_ENABLED)
        x->r.u.user.enabled = r->u.user.enabled; /* same offset in agent */
      if (w->fields & PH_AZ_F_SCOPES)
        x->r.u.token.scopes = r->u.token.scopes;
      if (w->fields & PH_AZ_F_EXPIRES)
        x->r.u.token.expires_at = r->u.token.expires_at;
      if (w->fields & PH_AZ_F_REVOKED)
        x->r.u.token.revoked_at = now;
      if (w->fields & PH_AZ_F_SUBJECT) {
        x->r.u.policy.subject_kind = r->u.policy.subject_kind;
        cp(x->subject, S, r->u.policy.subject);
      }
      if (w->fields & PH_AZ_F_HOST)
        cp(x->host, sizeof(x->host), r->u.policy.host_pattern);
      if (w->fields & PH_AZ_F_PORTS) {
        x->r.u.policy.port_min = r->u.policy.port_min;
        x->r.u.policy.port_max = r->u.policy.port_max;
      }
    } else {
      return;
    }
  }
  fix_ptrs(x);
  c->copy = *x;
  fix_ptrs(&c->copy);
  res->rec = c->copy.r;
  res->status = PH_OK;
  res->revision = ++f->revision;
  api->inc(f->writes, 1);
}

static int cmp_rec(const void *a, const void *b) {
  const rec *x = *(rec *const *)a, *y = *(rec *const *)b;
  return strcmp(x->key, y->key);
}

static void do_list(fake *f, const ph_az_list *l, call *c) {
  ph_az_list_result *res = &c->lres;
  rec *sorted[MAX_RECS];
  size_t n = 0;
  for (size_t i = 0; i < f->n; i++) {
    rec *x = &f->recs[i];
    if (x->kind != l->kind || (l->after && strcmp(x->key, l->after) <= 0))
      continue;
    if (l->user && strcmp(x->kind == PH_AZ_TOKEN ? x->user : x->owner,
                          l->user) != 0)
      continue;
    if (l->agent && strcmp(x->agent, l->agent) != 0)
      continue;
    sorted[n++] = x;
  }
  qsort(sorted, n, sizeof(sorted[0]), cmp_rec);
  size_t cap = sizeof(c->recs) / sizeof(c->recs[0]);
  size_t lim = l->limit < cap ? l->limit : cap;
  res->n = n < lim ? n : lim;
  res->more = n > res->n;
  for (size_t i = 0; i < res->n; i++)
    c->recs[i] = sorted[i]->r;
  res->recs = c->recs;
  res->status = PH_OK;
  res->revision = f->revision;
}

static void deliver(ph_timer *t, void *arg) {
  (void)t;
  fake *f = arg;
  while (f->calls) {
    call *c = f->calls;
    f->calls = c->next;
    f->n_calls--;
    if (c->is_list)
      c->lcb(c->arg, &c->lres);
    else
      c->wcb(c->arg, &c->wres);
    free(c);
  }
}

static int failing(fake *f, call *c) {
  int st = f->fail == 1 ? PH_AZ_EUNAVAILABLE
           : f->fail == 2 ? PH_AZ_EOUTCOME
           : f->fail == 3 ? PH_EFULL
                          : 0;
  c->wres.status = c->lres.status = st;
  return st != 0;
}

static int64_t queue(fake *f, call *c) {
  static int64_t ids;
  c->id = ++ids;
  /* Appended; with fail = hang it is kept and never answered. */
  c->next = NULL;
  call **pp = &f->calls;
  while (*pp)
    pp = &(*pp)->next;
  *pp = c;
  f->n_calls++;
  if (f->fail != 4)
    api->timer_set(f->timer, 1, 0);
  return c->id;
}

static int64_t fake_write(void *self, const ph_az_write *w,
                          ph_az_write_cb cb, void *arg) {
  fake *f = self;
  if (!w || !cb || w->size < sizeof(*w) - sizeof(w->reserved))
    return PH_EINVAL;
  if (f->n_calls >= MAX_CALLS)
    return PH_EFULL;
  call *c = calloc(1, sizeof(*c));
  if (!c)
    return PH_ENOMEM;
  c->wcb = cb;
  c->arg = arg;
  c->wres.size = sizeof(c->wres);
  if (!failing(f, c))
    do_write(f, w, c);
  return queue(f, c);
}

static int64_t fake_list(void *self, const ph_az_list *l, ph_az_list_cb cb,
                         void *arg) {
  fake *f = self;
  if (!l || !cb || l->limit < 1 || l->limit > PH_AZ_LIST_MAX)
    return PH_EINVAL;
  call *c = calloc(1, sizeof(*c));
  if (!c)
    return PH_ENOMEM;
  c->is_list = 1;
  c->lcb = cb;
  c->arg = arg;
  c->lres.size = sizeof(c->lres);
  if (!failing(f, c))
    do_list(f, l, c);
  return queue(f, c);
}

static int64_t fake_auth(void *self, const char *bearer, size_t len,
                         ph_az_auth_cb cb, void *arg) {
  (void)self, (void)bearer, (void)len, (void)cb, (void)arg;
  return PH_EINVAL; /* not needed by the admin API */
}

static int fake_cancel(void *self, int64_t id) {
  fake *f = self;
  for (call **pp = &f->calls; *pp; pp = &(*pp)->next)
    if ((*pp)->id == id) {
      call *c = *pp;
      *pp = c->next;
      f->n_calls--;
      free(c);
      return PH_OK;
    }
  return PH_ENOENT;
}

static const ph_az_store_v1 fake_vt = {
    .authenticate = fake_auth,
    .write = fake_write,
    .list = fake_list,
    .cancel = fake_cancel,
};

static int fake_init(ph_ctx *ctx, const ph_api *a, void **state) {
  api = a;
  fake *f = calloc(1, sizeof(*f));
  if (!f)
    return PH_ENOMEM;
  f->ctx = ctx;
  const char *fail = a->conf_str(ctx, "fail");
  const char *names[] = {"none", "unavailable", "outcome", "full", "hang"};
  for (int i = 0; i < 5; i++)
    if (fail && strcmp(fail, names[i]) == 0)
      f->fail = i;
  f->timer = a->timer_new(ctx, deliver, f);
  ph_metric *m = a->metric(ctx, &writes_def);
  f->writes = m ? a->series(m, NULL) : NULL;
  *state = f;
  return a->service_register(ctx, PH_AZ_STORE_SERVICE, PH_AZ_STORE_MAJOR,
                             PH_AZ_STORE_MINOR, &fake_vt, f);
}

static void fake_destroy(void *state) {
  fake *f = state;
  while (f->calls) {
    call *c = f->calls;
    f->calls = c->next;
    free(c);
  }
  api->timer_free(f->timer);
  free(f);
}

PROXYHOST_MODULE = {
    PH_MODULE_HEADER("fakeaz", "1.0"),
    .description = "test: an in-memory authz.store",
    .provides = fake_provides,
    .config = fake_keys,
    .init = fake_init,
    .destroy = fake_destroy,
};
