/* SPDX-License-Identifier: BSD-2-Clause */
#include "policy.h"

#include "lib/cidr.h"
#include "lib/host_norm.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* The addresses and prefixes are cidr.h's. */
typedef ip_addr paddr;
typedef ip_cidr pcidr;

typedef struct prange {
  uint16_t lo, hi;
} prange;

typedef struct plistener {
  paddr addr;
  uint16_t port;
  uint32_t refs;
} plistener;

typedef struct plist {
  pcidr cidr[POLICY_MAX_RULES];
  size_t n_cidr;
  char *host[POLICY_MAX_RULES];
  size_t n_host;
  prange port[POLICY_MAX_RULES];
  size_t n_port;
} plist;

struct policy {
  plist lists[2]; /* POLICY_ALLOW, POLICY_DENY */
  int deny_own;
  plistener lst[POLICY_MAX_LISTENERS];
  size_t n_lst;
  paddr local[POLICY_MAX_LOCAL];
  size_t n_local;
};

policy *policy_new(void) {
  policy *p = calloc(1, sizeof(*p));
  if (p)
    p->deny_own = 1;
  return p;
}

void policy_free(policy *p) {
  if (!p)
    return;
  for (int l = 0; l < 2; l++)
    for (size_t i = 0; i < p->lists[l].n_host; i++)
      free(p->lists[l].host[i]);
  free(p);
}

/* ---- addresses ------------------------------------------------------- */

int policy_add_cidr(policy *p, int list, const char *text) {
  plist *l = &p->lists[list == POLICY_DENY];
  pcidr c;
  if (ip_cidr_parse(text, &c) < 0)
    return -1;
  if (l->n_cidr >= POLICY_MAX_RULES)
    return -2;
  l->cidr[l->n_cidr++] = c;
  return 0;
}

/* ---- names ----------------------------------------------------------- */

/* Validates and normalises a DNS name: letters, digits, '-' and '_',
 * labels of 1..63 bytes, at most POLICY_MAX_NAME bytes without a trailing
 * dot. out may be NULL. */
static int normalise_name(const char *in, char *out) {
  size_t n = strlen(in);
  if (n - (n > 0 && in[n - 1] == '.') > POLICY_MAX_NAME)
    return -1;
  return host_norm_name(in, n, out); /* the rules of host_norm's names */
}

int policy_add_host(policy *p, int list, const char *pattern) {
  plist *l = &p->lists[list == POLICY_DENY];
  int suffix = pattern[0] == '.';
  char name[POLICY_MAX_NAME + 2];
  if (normalise_name(pattern + suffix, name + 1) < 0)
    return -1;
  name[0] = '.';
  if (l->n_host >= POLICY_MAX_RULES)
    return -2;
  char *copy = strdup(suffix ? name : name + 1);
  if (!copy)
    return -2;
  l->host[l->n_host++] = copy;
  return 0;
}

static int host_matches(const char *pattern, const char *name) {
  if (pattern[0] != '.')
    return strcmp(pattern, name) == 0;
  size_t pl = strlen(pattern), nl = strlen(name);
  if (strcmp(pattern + 1, name) == 0)
    return 1;
  return nl > pl && strcmp(name + nl - pl, pattern) == 0;
}

static int any_host(const plist *l, const char *name) {
  for (size_t i = 0; i < l->n_host; i++)
    if (host_matches(l->host[i], name))
      return 1;
  return 0;
}

static int is_localhost_name(const char *name) {
  return host_matches(".localhost", name);
}

/* ---- ports ----------------------------------------------------------- */

static int parse_port(const char *s, size_t n, uint16_t *out) {
  if (n == 0 || n > 5)
    return -1;
  long v = 0;
  for (size_t i = 0; i < n; i++) {
    if (!isdigit((unsigned char)s[i]))
      return -1;
    v = v * 10 + (s[i] - '0');
  }
  if (v < 1 || v > 65535)
    return -1;
  *out = (uint16_t)v;
  return 0;
}

int policy_add_ports(policy *p, int list, const char *text) {
  plist *l = &p->lists[list == POLICY_DENY];
  prange r;
  const char *dash = strchr(text, '-');
  if (dash) {
    if (parse_port(text, (size_t)(dash - text), &r.lo) < 0 ||
        parse_port(dash + 1, strlen(dash + 1), &r.hi) < 0 || r.lo > r.hi)
      return -1;
  } else {
    if (parse_port(text, strlen(text), &r.lo) < 0)
      return -1;
    r.hi = r.lo;
  }
  if (l->n_port >= POLICY_MAX_RULES)
    return -2;
  l->port[l->n_port++] = r;
  return 0;
}

static int any_port(const plist *l, uint16_t port) {
  for (size_t i = 0; i < l->n_port; i++)
    if (port >= l->port[i].lo && port <= l->port[i].hi)
      return 1;
  return 0;
}

/* ---- own listeners --------------------------------------------------- */

void policy_set_deny_own(policy *p, int on) { p->deny_own = on; }

int policy_listener(policy *p, const struct sockaddr *sa, size_t len,
                    int bound) {
  paddr a;
  uint16_t port = 0;
  sa_family_t fam = AF_UNSPEC;
  if (len >= offsetof(struct sockaddr, sa_family) + sizeof(fam))
    memcpy(&fam, (const char *)sa + offsetof(struct sockaddr, sa_family),
           sizeof(fam));
  size_t need = fam == AF_INET    ? sizeof(struct sockaddr_in)
                : fam == AF_INET6 ? sizeof(struct sockaddr_in6)
                                  : SIZE_MAX;
  if (len < need || ip_addr_from_sa(sa, &a, &port) < 0)
    return -1;
  for (size_t i = 0; i < p->n_lst; i++) {
    plistener *l = &p->lst[i];
    if (l->port != port || !ip_addr_eq(&l->addr, &a))
      continue;
    if (bound) {
      l->refs++;
    } else if (--l->refs == 0) {
      p->lst[i] = p->lst[--p->n_lst];
    }
    return 0;
  }
  if (!bound)
    return 0;
  if (p->n_lst >= POLICY_MAX_LISTENERS)
    return -2;
  p->lst[p->n_lst++] = (plistener){a, port, 1};
  return 0;
}

size_t policy_listener_count(const policy *p) { return p->n_lst; }

void policy_clear_local(policy *p) { p->n_local = 0; }

void policy_add_local(policy *p, const struct sockaddr *sa) {
  paddr a;
  if (p->n_local < POLICY_MAX_LOCAL && ip_addr_from_sa(sa, &a, NULL) == 0)
    p->local[p->n_local++] = a;
}

void policy_copy_learned(policy *dst, const policy *src) {
  memcpy(dst->lst, src->lst, sizeof(dst->lst));
  dst->n_lst = src->n_lst;
  memcpy(dst->local, src->local, sizeof(dst->local));
  dst->n_local = src->n_local;
}

static int is_local(const policy *p, const paddr *a) {
  if (ip_addr_loopback(a) || ip_addr_unspecified(a))
    return 1;
  for (size_t i = 0; i < p->n_local; i++)
    if (ip_addr_eq(&p->local[i], a))
      return 1;
  return 0;
}

/* Whether dialling a:port reaches one of our listeners. */
static int is_own(const policy *p, const paddr *a, uint16_t port) {
  for (size_t i = 0; i < p->n_lst; i++) {
    const plistener *l = &p->lst[i];
    if (l->port != port)
      continue;
    if (ip_addr_unspecified(&l->addr)
            ? is_local(p, a)
            : ip_addr_eq(&l->addr, a) || ip_addr_unspecified(a))
      return 1;
  }
  return 0;
}

/* Whether "localhost" with this port reaches one of our listeners. */
static int is_own_loopback_port(const policy *p, uint16_t port) {
  for (size_t i = 0; i < p->n_lst; i++) {
    const plistener *l = &p->lst[i];
    if (l->port == port &&
        (ip_addr_unspecified(&l->addr) || ip_addr_loopback(&l->addr)))
      return 1;
  }
  return 0;
}

/* ---- decisions ------------------------------------------------------- */

int policy_parse_host(const char *host, uint16_t port,
                      struct sockaddr_storage *ss, char *name) {
  char buf[64];
  size_t n = strlen(host);
  const char *lit = host;
  if (n >= 2 && host[0] == '[' && host[n - 1] == ']' && n - 2 < sizeof(buf)) {
    memcpy(buf, host + 1, n - 2);
    buf[n - 2] = '\0';
    lit = buf;
  }
  memset(ss, 0, sizeof(*ss));
  struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
  struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
  if (lit == host && inet_pton(AF_INET, lit, &s4->sin_addr) == 1) {
    s4->sin_family = AF_INET;
    s4->sin_port = htons(port);
    return POLICY_HOST_LITERAL;
  }
  if (inet_pton(AF_INET6, lit, &s6->sin6_addr) == 1) {
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(port);
    return POLICY_HOST_LITERAL;
  }
  if (lit != host)
    return POLICY_HOST_BAD;
  return normalise_name(host, name) == 0 ? POLICY_HOST_NAME : POLICY_HOST_BAD;
}

static int restricted(const policy *p) {
  const plist *a = &p->lists[POLICY_ALLOW];
  return a->n_host > 0 || a->n_cidr > 0;
}

int policy_check_name(const policy *p, const char *name, uint16_t port) {
  const plist *allow = &p->lists[POLICY_ALLOW];
  const plist *deny = &p->lists[POLICY_DENY];
  if (port == 0 || any_port(deny, port) ||
      (allow->n_port > 0 && !any_port(allow, port)))
    return POLICY_DENIED;
  if (!name)
    return POLICY_PASS;
  if (any_host(deny, name))
    return POLICY_DENIED;
  if (p->deny_own && is_localhost_name(name) && is_own_loopback_port(p, port))
    return POLICY_DENIED;
  if (any_host(allow, name))
    return POLICY_PASS_BY_NAME;
  /* allow_hosts alone: a name it does not list can never pass. */
  if (restricted(p) && allow->n_cidr == 0)
    return POLICY_DENIED;
  return POLICY_PASS;
}

int policy_check_addr(const policy *p, const struct sockaddr *sa, int verdict) {
  paddr a;
  uint16_t port = 0;
  if (verdict == POLICY_DENIED || ip_addr_from_sa(sa, &a, &port) < 0)
    return 0;
  const plist *deny = &p->lists[POLICY_DENY];
  for (size_t i = 0; i < deny->n_cidr; i++)
    if (ip_cidr_match(&deny->cidr[i], &a))
      return 0;
  if (p->deny_own && is_own(p, &a, port))
    return 0;
  if (verdict == POLICY_PASS_BY_NAME || !restricted(p))
    return 1;
  const plist *allow = &p->lists[POLICY_ALLOW];
  for (size_t i = 0; i < allow->n_cidr; i++)
    if (ip_cidr_match(&allow->cidr[i], &a))
      return 1;
  return 0;
}
