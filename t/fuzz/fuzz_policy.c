/* SPDX-License-Identifier: BSD-2-Clause */
/* libFuzzer target: the direct connector's target policy
 * (modules/direct/policy.c) and the host's listen-address parser
 * (host/addr.c). The policy reads rules from the configuration and, for
 * every open, the target host a SOCKS5 or HTTP client sent; the listen
 * parser reads configuration values.
 *
 * Input: lines. The first line is the target ("host" then a port byte
 * pair is taken from the line's last two bytes when it has at least
 * three); every further line is a rule whose first byte picks the list
 * (bit 0: allow/deny) and the kind (bits 1-2: cidr, host, ports, listen
 * address). Contract checked:
 *   - every call returns one of its documented values;
 *   - a name accepted by policy_parse_host is normalised: lower case, no
 *     trailing dot, at most POLICY_MAX_NAME bytes, NUL-terminated;
 *   - the verdicts are deterministic (asked twice, the same answer);
 *   - a denied name is never passed, and a listen address that parses
 *     has a port and a family of its length. */
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <proxyhost/abi.h>

#include "addr.h"
#include "direct/policy.h"

#define LINE_MAX_LEN 300

static void check_listen(const char *text) {
  struct sockaddr_storage ss;
  socklen_t len = 0;
  char why[96];
  int r = addr_parse_listen(text, &ss, &len, why, sizeof(why));
  if (r != 0 && r != PH_EINVAL)
    abort();
  if (r == 0 && !((ss.ss_family == AF_INET &&
                   len == sizeof(struct sockaddr_in)) ||
                  (ss.ss_family == AF_INET6 &&
                   len == sizeof(struct sockaddr_in6))))
    abort();
  if (r != 0 && strlen(why) >= sizeof(why))
    abort();
}

static void add_rule(policy *p, const char *line) {
  int list = line[0] & 1 ? POLICY_DENY : POLICY_ALLOW;
  const char *text = line + 1;
  int r = 0;
  switch ((line[0] >> 1) & 3) {
  case 0:
    r = policy_add_cidr(p, list, text);
    break;
  case 1:
    r = policy_add_host(p, list, text);
    break;
  case 2:
    r = policy_add_ports(p, list, text);
    break;
  default:
    check_listen(text);
    return;
  }
  if (r != 0 && r != -1 && r != -2)
    abort();
}

static void check_target(const policy *p, const char *host, uint16_t port) {
  struct sockaddr_storage ss;
  char name[POLICY_MAX_NAME + 1];
  memset(name, 'x', sizeof(name));
  int kind = policy_parse_host(host, port, &ss, name);
  if (kind != POLICY_HOST_BAD && kind != POLICY_HOST_NAME &&
      kind != POLICY_HOST_LITERAL)
    abort();
  if (kind == POLICY_HOST_NAME) {
    size_t n = strnlen(name, sizeof(name));
    if (n == sizeof(name) || n == 0 || name[n - 1] == '.')
      abort();
    for (size_t i = 0; i < n; i++)
      if (name[i] >= 'A' && name[i] <= 'Z')
        abort();
  }
  if (kind == POLICY_HOST_BAD)
    return;
  const char *n = kind == POLICY_HOST_NAME ? name : NULL;
  int v = policy_check_name(p, n, port);
  if (v != POLICY_DENIED && v != POLICY_PASS && v != POLICY_PASS_BY_NAME)
    abort();
  if (policy_check_name(p, n, port) != v)
    abort();
  if (kind == POLICY_HOST_LITERAL && v != POLICY_DENIED) {
    int a = policy_check_addr(p, (const struct sockaddr *)&ss, v);
    if ((a != 0 && a != 1) ||
        policy_check_addr(p, (const struct sockaddr *)&ss, v) != a)
      abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  policy *p = policy_new();
  if (!p)
    return 0;
  char target[LINE_MAX_LEN + 1] = "";
  uint16_t port = 0;
  size_t off = 0;
  for (int first = 1; off < size; first = 0) {
    const uint8_t *nl = memchr(data + off, '\n', size - off);
    size_t n = nl ? (size_t)(nl - (data + off)) : size - off;
    char line[LINE_MAX_LEN + 1];
    size_t k = n < LINE_MAX_LEN ? n : LINE_MAX_LEN;
    memcpy(line, data + off, k);
    line[k] = '\0';
    off += n + (nl ? 1 : 0);
    if (first) {
      if (k >= 3) {
        port = (uint16_t)((uint8_t)line[k - 2] << 8 | (uint8_t)line[k - 1]);
        line[k - 2] = '\0';
      }
      memcpy(target, line, sizeof(target));
    } else if (line[0]) {
      add_rule(p, line);
    }
  }
  check_target(p, target, port);
  policy_free(p);
  return 0;
}
