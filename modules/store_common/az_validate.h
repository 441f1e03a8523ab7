/* SPDX-License-Identifier: BSD-2-Clause */
/* Validation of authz.store requests (authz_store.h) before a store
 * touches its database: names, ids, scopes, ports, host patterns, and
 * which fields each kind and action may carry. Pure; both stores call it
 * so that one request is refused the same way by either.
 *
 * Every function returns PH_OK, or PH_EINVAL with *detail set to a short
 * static reason for the operator ("bad user name", "port_min above
 * port_max") that never quotes the request. */
#ifndef PH_STORE_AZ_VALIDATE_H
#define PH_STORE_AZ_VALIDATE_H

#include <stdint.h>

#include <proxyhost/abi.h>
#include <proxyhost/access.h>
#include <proxyhost/authz_store.h>

/* The fields an update may name, per kind (ph_az_field bits). */
uint32_t az_fields_allowed(int kind);

/* A user or agent name: 1..PH_AZ_NAME_MAX bytes of [a-z0-9._-], the
 * first a letter or digit. 1 or 0. */
int az_name_valid(const char *s);

/* A policy's host pattern as ph_az_policy documents it, in normal form
 * (lower case, no trailing dot, at most PH_AZ_PATTERN_MAX bytes): "*",
 * "name", "*.name", an address, or a CIDR without host bits. 1 or 0. */
int az_pattern_valid(const char *p);

/* A write: action, kind, fields, and every value the action reads. The
 * size must cover the 1.0 struct. */
int az_validate_write(const ph_az_write *w, const char **detail);

/* A list: kind, limit, the cursor (a name or an id of that kind) and the
 * filters the kind allows. */
int az_validate_list(const ph_az_list *l, const char **detail);

#endif
