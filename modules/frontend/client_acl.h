/* SPDX-License-Identifier: BSD-2-Clause */
/* A frontend's client access list: the key "allow_clients" of
 * the frontend key group (frontend.keys), a list of at most CLIENT_ACL_MAX CIDRs (cidr.h; IPv4
 * and IPv6, a bare address is /32 or /128), default loopback only
 * (127.0.0.0/8, ::1/128). A client whose address is in none of them is
 * closed at accept, before a byte is read or written. An IPv4-mapped
 * IPv6 client (::ffff:10.1.2.3 on a [::] listener) is checked as its
 * IPv4 address. Pure: no I/O, no host API beyond reading the key. */
#ifndef PH_CLIENT_ACL_H
#define PH_CLIENT_ACL_H

#include <stddef.h>
#include <sys/socket.h>

#include <proxyhost/host.h>

#include "lib/cidr.h"

#define CLIENT_ACL_MAX 64
#define CLIENT_ACL_KEY "allow_clients"
#define CLIENT_ACL_DEFAULT "127.0.0.0/8, ::1/128"

typedef struct client_acl {
  ip_cidr net[CLIENT_ACL_MAX];
  size_t n;
} client_acl;

/* Parses the items of the key "allow_clients" (api->conf_list_*) into
 * acl. 0, or -1 with the reason (naming the bad item, which is not a
 * secret) in why; acl is then empty, which allows nobody. */
int client_acl_load(client_acl *acl, ph_ctx *ctx, const ph_api *api,
                    char *why, size_t whylen);
/* Adds one CIDR. 0, -1 bad syntax, -2 full. */
int client_acl_add(client_acl *acl, const char *text);
/* 1 when the client's address is in the list; 0 otherwise, also for a
 * family other than AF_INET/AF_INET6. */
int client_acl_allows(const client_acl *acl, const struct sockaddr *peer);

#endif
