/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The session's keys for the three tunnel roles: the window, queue,
 * violation, heartbeat and capability keys that fill a tm_session_cfg
 * (TM-CFG-25: no zero window, no frame above the protocol's MaxPayload,
 * no byte count that overflows 32 bits). They are declared once in the
 * key group tm_session.keys beside this file, which each role's sample
 * writes out and the build holds it to (tools/gen_conf_keys.awk -v
 * groups); the window/queue/violation keys take the role's prefix
 * ("stream." in tunnel_client and tunnel_server, "streams." in
 * tunnel_agent), the heartbeat and capability keys none. A role calls
 * tm_conf_check from its check and tm_conf_session/tm_conf_caps from
 * init.
 */
#ifndef TM_CONF_H
#define TM_CONF_H

#include <stddef.h>

#include <proxyhost/module.h>

#include "tunnel_common/proto/tm_proto.h"
#include "tm_session.h"

/* The rules between those keys that per-key bounds cannot say: threshold
 * <= window, a frame fits in the window, the inbound queue holds a whole
 * window, a quantum holds a frame, ping_timeout <= 4 x ping_interval,
 * flow_control only with open_result. keys is the role's table (the
 * failing key's name is returned from it). PH_OK, or PH_EINVAL with *key
 * and why set. */
int tm_conf_check(ph_ctx *ctx, const ph_api *a, const char *prefix,
                  const ph_conf_key *keys, const char **key, char *why,
                  size_t whylen);

/* Fills s's limits, heartbeat and local_caps (fair_writer) from the keys;
 * component, opener, caps, max_streams and metrics stay the caller's. */
void tm_conf_session(ph_ctx *ctx, const ph_api *a, const char *prefix,
                     tm_session_cfg *s);

/* The capabilities this side offers or negotiates: TM_CAP_OPEN_RESULT and
 * TM_CAP_FLOW_CONTROL from capabilities.*. */
unsigned tm_conf_caps(ph_ctx *ctx, const ph_api *a);

#endif
