/* SPDX-License-Identifier: BSD-2-Clause */
/* Reading an "access" question (<proxyhost/access.h>) the way every
 * provider does (auth_local, auth_cache, the stores): one place, so the
 * providers cannot drift apart on what they accept. Pure, any thread. */
#ifndef PH_ACCESS_REQ_H
#define PH_ACCESS_REQ_H

#include <proxyhost/abi.h>
#include <proxyhost/access.h>

/* The longest principal or agent name, in bytes (the contract's bound). */
#define ACCESS_REQ_NAME_MAX 255

/* Copies what the caller's size covers into out (the rest zero: an older
 * caller's defaults; what a newer caller added and the reserved fields
 * are ignored), sets out->size to this build's size (a store gets what a
 * cache keys on, nothing more) and checks it: protocol TCP, port
 * 1..65535, a host in normal form (host_norm_ok), principal and agent
 * NULL or 1..ACCESS_REQ_NAME_MAX bytes. PH_OK or PH_EINVAL (req NULL,
 * too small or any of these). The strings of out are the caller's. */
int access_req_read(const ph_access_request *req, ph_access_request *out);

#endif
