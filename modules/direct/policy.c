/* SPDX-License-Identifier: BSD-2-Clause */
#include "policy.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* An address of either family; IPv4 uses a[0..3]. */
typedef struct paddr {
  uint8_t fam; /* 4 or 6 */
  uint8_t a[16];
} paddr;

typedef struct pcidr {
  paddr net;
  uint8_t bits;
} pcidr;

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

/* 16 IPv6 bytes; IPv4-mapped ones (::ffff:a.b.c.d) become IPv4. */
static void paddr_from_v6(const uint8_t *b, paddr *out) {
  static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  memset(out, 0, sizeof(*out));
  if (memcmp(b, mapped, 12) == 0) {
    out->fam = 4;
    memcpy(out->a, b + 12, 4);
  } else {
    out->fam = 6;
    memcpy(out->a, b, 16);
  }
}

/* 0, or -1 for a family other than AF_INET/AF_INET6. The socket address
 * is copied with memcpy: callers hand in sockaddr_storage objects written
 * through other sockaddr types, which must not be read through another
 * struct type (strict aliasing). */
static int paddr_from_sa(const struct sockaddr *sa, paddr *out,
                         uint16_t *port) {
  sa_family_t fam;
  memcpy(&fam, (const char *)sa + offsetof(struct sockaddr, sa_family),
         sizeof(fam));
  memset(out, 0, sizeof(*out));
  if (fam == AF_INET) {
    struct sockaddr_in s4;
    memcpy(&s4, sa, sizeof(s4));
    out->fam = 4;
    memcpy(out->a, &s4.sin_addr, 4);
    if (port)
      *port = ntohs(s4.sin_port);
    return 0;
  }
  if (fam == AF_INET6) {
    struct sockaddr_in6 s6;
    memcpy(&s6, sa, sizeof(s6));
    paddr_from_v6(s6.sin6_addr.s6_addr, out);
    if (port)
      *port = ntohs(s6.sin6_port);
    return 0;
  }
  return -1;
}

static size_t paddr_len(const paddr *a) { return a->fam == 4 ? 4 : 16; }

static int paddr_eq(const paddr *x, const paddr *y) {
  return x->fam == y->fam && memcmp(x->a, y->a, paddr_len(x)) == 0;
}

static int paddr_unspecified(const paddr *a) {
  static const uint8_t zero[16];
  return memcmp(a->a, zero, paddr_len(a)) == 0;
}

static int paddr_loopback(const paddr *a) {
  static const uint8_t one6[16] = {0, 0, 0, 0, 0, 0, 0, 0,
                                   0, 0, 0, 0, 0, 0, 0, 1};
  if (a->fam == 4)
    return a->a[0] == 127;
  return memcmp(a->a, one6, 16) == 0;
}

static int in_cidr(const pcidr *c, const paddr *a) {
  if (c->net.fam != a->fam)
    return 0;
  size_t full = c->bits / 8;
  if (memcmp(c->net.a, a->a, full) != 0)
    return 0;
  unsigned rest = c->bits % 8;
  if (rest == 0)
    return 1;
  uint8_t mask = (uint8_t)(0xffu << (8 - rest));
  return (c->net.a[full] & mask) == (a->a[full] & mask);
}

/* Parses a bare IPv4 or IPv6 address (no brackets). */
static int parse_addr(const char *text, paddr *out) {
  memset(out, 0, sizeof(*out));
  if (inet_pton(AF_INET, text, out->a) == 1) {
    out->fam = 4;
    return 0;
  }
  uint8_t a6[16];
  if (inet_pton(AF_INET6, text, a6) == 1) {
    paddr_from_v6(a6, out);
    return 0;
  }
  return -1;
}

int policy_add_cidr(policy *p, int list, const char *text) {
  plist *l = &p->lists[list == POLICY_DENY];
  char buf[64];
  size_t n = strlen(text);
  if (n == 0 || n >= sizeof(buf))
    return -1;
  memcpy(buf, text, n + 1);
  char *slash = strchr(buf, '/');
  long bits = -1;
  if (slash) {
    *slash = '\0';
    char *end;
    const char *digits = slash + 1;
    if (!isdigit((unsigned char)digits[0]) || strlen(digits) > 3)
      return -1;
    bits = strtol(digits, &end, 10);
    if (*end)
      return -1;
  }
  pcidr c;
  if (parse_addr(buf, &c.net) < 0)
    return -1;
  long max = c.net.fam == 4 ? 32 : 128;
  /* "::ffff:10.0.0.0/104" is the IPv4 network 10.0.0.0/8. */
  if (slash && c.net.fam == 4 && strchr(buf, ':')) {
    if (bits < 96)
      return -1;
    bits -= 96;
  }
  if (bits < 0)
    bits = max;
  if (bits > max)
    return -1;
  c.bits = (uint8_t)bits;
  /* Clear the host bits so that matching only compares the prefix. */
  for (size_t i = 0; i < paddr_len(&c.net); i++) {
    long keep = bits - (long)i * 8;
    if (keep <= 0)
      c.net.a[i] = 0;
    else if (keep < 8)
      c.net.a[i] &= (uint8_t)(0xffu << (8 - keep));
  }
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
  if (n > 0 && in[n - 1] == '.')
    n--;
  if (n == 0 || n > POLICY_MAX_NAME)
    return -1;
  size_t label = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)in[i];
    if (ch == '.') {
      if (label == 0)
        return -1;
      label = 0;
    } else if (isalnum(ch) || ch == '-' || ch == '_') {
      if (++label > 63)
        return -1;
    } else {
      return -1;
    }
    if (out)
      out[i] = (char)tolower(ch);
  }
  if (label == 0)
    return -1;
  if (out)
    out[n] = '\0';
  return 0;
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
  if (len < need || paddr_from_sa(sa, &a, &port) < 0)
    return -1;
  for (size_t i = 0; i < p->n_lst; i++) {
    plistener *l = &p->lst[i];
    if (l->port != port || !paddr_eq(&l->addr, &a))
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
  if (p->n_local < POLICY_MAX_LOCAL && paddr_from_sa(sa, &a, NULL) == 0)
    p->local[p->n_local++] = a;
}

void policy_copy_learned(policy *dst, const policy *src) {
  memcpy(dst->lst, src->lst, sizeof(dst->lst));
  dst->n_lst = src->n_lst;
  memcpy(dst->local, src->local, sizeof(dst->local));
  dst->n_local = src->n_local;
}

static int is_local(const policy *p, const paddr *a) {
  if (paddr_loopback(a) || paddr_unspecified(a))
    return 1;
  for (size_t i = 0; i < p->n_local; i++)
    if (paddr_eq(&p->local[i], a))
      return 1;
  return 0;
}

/* Whether dialling a:port reaches one of our listeners. */
static int is_own(const policy *p, const paddr *a, uint16_t port) {
  for (size_t i = 0; i < p->n_lst; i++) {
    const plistener *l = &p->lst[i];
    if (l->port != port)
      continue;
    if (paddr_unspecified(&l->addr)
            ? is_local(p, a)
            : paddr_eq(&l->addr, a) || paddr_unspecified(a))
      return 1;
  }
  return 0;
}

/* Whether "localhost" with this port reaches one of our listeners. */
static int is_own_loopback_port(const policy *p, uint16_t port) {
  for (size_t i = 0; i < p->n_lst; i++) {
    const plistener *l = &p->lst[i];
    if (l->port == port &&
        (paddr_unspecified(&l->addr) || paddr_loopback(&l->addr)))
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
  if (verdict == POLICY_DENIED || paddr_from_sa(sa, &a, &port) < 0)
    return 0;
  const plist *deny = &p->lists[POLICY_DENY];
  for (size_t i = 0; i < deny->n_cidr; i++)
    if (in_cidr(&deny->cidr[i], &a))
      return 0;
  if (p->deny_own && is_own(p, &a, port))
    return 0;
  if (verdict == POLICY_PASS_BY_NAME || !restricted(p))
    return 1;
  const plist *allow = &p->lists[POLICY_ALLOW];
  for (size_t i = 0; i < allow->n_cidr; i++)
    if (in_cidr(&allow->cidr[i], &a))
      return 1;
  return 0;
}
