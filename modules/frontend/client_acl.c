/* SPDX-License-Identifier: BSD-2-Clause */
/* The client access list (client_acl.h). */
#include "client_acl.h"

#include <stdio.h>

int client_acl_add(client_acl *acl, const char *text) {
  ip_cidr c;
  if (ip_cidr_parse(text, &c) < 0)
    return -1;
  if (acl->n >= CLIENT_ACL_MAX)
    return -2;
  acl->net[acl->n++] = c;
  return 0;
}

int client_acl_load(client_acl *acl, ph_ctx *ctx, const ph_api *api,
                    char *why, size_t whylen) {
  acl->n = 0;
  size_t n = api->conf_list_len(ctx, CLIENT_ACL_KEY);
  for (size_t i = 0; i < n; i++) {
    const char *item = api->conf_list_at(ctx, CLIENT_ACL_KEY, i);
    int r = client_acl_add(acl, item ? item : "");
    if (r == 0)
      continue;
    if (r == -2)
      snprintf(why, whylen, "more than %d networks", CLIENT_ACL_MAX);
    else
      snprintf(why, whylen,
               "\"%.64s\" is not a network (an IPv4 or IPv6 address, or a "
               "CIDR such as 192.0.2.0/24 or 2001:db8::/32)",
               item ? item : "");
    acl->n = 0;
    return -1;
  }
  return 0;
}

int client_acl_allows(const client_acl *acl, const struct sockaddr *peer) {
  ip_addr a;
  if (!peer || ip_addr_from_sa(peer, &a, NULL) < 0)
    return 0;
  for (size_t i = 0; i < acl->n; i++)
    if (ip_cidr_match(&acl->net[i], &a))
      return 1;
  return 0;
}
