/* SPDX-License-Identifier: BSD-2-Clause */
/* A client's list of controller addresses (cp_addr_list.h). */
#include "cp_addr_list.h"

#include <stdio.h>
#include <string.h>

#include "cp_grpc.h"
#include "lib/cidr.h"

/* The entry of list at *s (up to ',' or the end) into out; *s moves past
 * it and its comma. Its length, or -1 when it does not fit. */
static long entry(const char **s, char *out, size_t cap) {
  const char *e = strchr(*s, ',');
  size_t n = e ? (size_t)(e - *s) : strlen(*s);
  if (n >= cap)
    return -1;
  memcpy(out, *s, n);
  out[n] = 0;
  *s += n + (e ? 1 : 0);
  return (long)n;
}

/* The family of entry a (4 or 6) when its host is an IP literal, 0 for a
 * name, -1 when a is not host:port with a port 1..65535. */
static int family(const char *a) {
  char host[CP_ADDR_ONE_MAX + 1];
  const char *colon;
  size_t hl;
  if (a[0] == '[') {
    const char *rb = strchr(a, ']');
    if (!rb || rb[1] != ':')
      return -1;
    hl = (size_t)(rb - a - 1);
    memcpy(host, a + 1, hl);
    colon = rb + 1;
  } else {
    colon = strrchr(a, ':');
    if (!colon || memchr(a, ':', (size_t)(colon - a)))
      return -1;
    hl = (size_t)(colon - a);
    memcpy(host, a, hl);
  }
  host[hl] = 0;
  const char *p = colon + 1;
  size_t pl = strlen(p);
  if (hl == 0 || pl == 0 || pl > 5 || strspn(p, "0123456789") != pl)
    return -1;
  long port = 0;
  for (size_t i = 0; i < pl; i++)
    port = port * 10 + (p[i] - '0');
  if (port < 1 || port > 65535)
    return -1;
  ip_addr ip;
  if (ip_addr_parse(host, &ip) == 0)
    return ip.fam == 4 && a[0] != '[' ? 4 : ip.fam == 6 && a[0] == '[' ? 6 : -1;
  return a[0] == '[' ? -1 : 0;
}

int cp_addr_list_check(const char *list, const char **why) {
  char seen[CP_ADDR_LIST_MAX][CP_ADDR_ONE_MAX + 1];
  int fam[CP_ADDR_LIST_MAX];
  size_t n = 0;
  const char *s = list ? list : "";
  if (!*s) {
    *why = "is empty";
    return -1;
  }
  while (*s || n == 0) {
    if (n == CP_ADDR_LIST_MAX) {
      *why = "lists more than 4 addresses";
      return -1;
    }
    long len = entry(&s, seen[n], sizeof(seen[n]));
    if (len <= 0) {
      *why = "has an empty or overlong entry";
      return -1;
    }
    fam[n] = family(seen[n]);
    if (fam[n] < 0) {
      *why = "must be host:port (IPv6 in brackets, port 1..65535), "
             "comma-separated";
      return -1;
    }
    for (size_t i = 0; i < n; i++)
      if (strcmp(seen[i], seen[n]) == 0) {
        *why = "lists one address twice";
        return -1;
      }
    n++;
    if (!*s && s[-1] == ',') {
      *why = "has an empty or overlong entry";
      return -1;
    }
  }
  for (size_t i = 0; n > 1 && i < n; i++)
    if (fam[i] == 0 || fam[i] != fam[0]) {
      *why = "of several addresses needs IP literals of one family";
      return -1;
    }
  return (int)n;
}

int cp_addr_list_nth(const char *list, size_t i, char *out, size_t cap) {
  const char *s = list ? list : "";
  for (size_t k = 0; *s; k++) {
    long len = entry(&s, out, cap);
    if (len < 0)
      return -1;
    if (k == i)
      return 0;
  }
  return -1;
}

int cp_addr_list_target(const char *list, char *out, size_t cap) {
  int n;
  if (!strchr(list, ','))
    n = snprintf(out, cap, "%s", list);
  else
    n = snprintf(out, cap, "%s:%s", list[0] == '[' ? "ipv6" : "ipv4", list);
  return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int cp_addr_list_loopback(const char *list) {
  char a[CP_ADDR_ONE_MAX + 1];
  size_t i = 0;
  for (; cp_addr_list_nth(list, i, a, sizeof(a)) == 0; i++)
    if (!cp_addr_is_loopback(a))
      return 0;
  return i > 0;
}
