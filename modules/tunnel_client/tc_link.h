/* SPDX-License-Identifier: BSD-2-Clause */
/* The client's WebSocket connections behind one small table, so that the
 * connection logic (tc_conn.c) runs over libwebsockets in the module
 * (tc_link_ws.c, through tm_ws.h) and over in-memory links in its unit
 * test, which links its own tc_link_active. A link is one
 * connection attempt; its events come back as the tc_link_* calls of
 * tunnel_client_int.h, from the loop, never from inside connect. */
#ifndef TC_LINK_H
#define TC_LINK_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/host.h>

#include "tunnel_common/session/tm_session.h"

typedef struct tc_sess tc_sess; /* tunnel_client_int.h: one attempt */

typedef struct tc_link_cfg {
  const char *ca_file; /* NULL: the system store */
  int allow_plain;
  unsigned caps;       /* what the client offers (TM_CAP_*) */
  uint32_t max_message;
} tc_link_cfg;

typedef struct tc_link_ops {
  /* Init: the links' shared context. NULL with *err (a static sentence). */
  void *(*env_new)(const ph_api *api, ph_ctx *ctx, const tc_link_cfg *cfg,
                   const char **err);
  /* Closes every link (their closed events run) and frees the context. */
  void (*env_free)(void *env);
  /* Starts one attempt for ts; bearer is copied and wiped by the link.
   * NULL with *err: nothing started, no event will come. */
  void *(*connect)(void *env, tc_sess *ts, const char *url,
                   const char *bearer, const char **err);
  /* The transport of a link that is up, for tm_session_new (the link is
   * its argument), and where its messages go from now on. */
  const tm_transport *(*transport)(void);
  void (*bind)(void *link, tm_session *s);
  /* Closes an attempt or a link that is up; its failed or closed event
   * follows from the loop. */
  void (*close)(void *link, int status, const char *reason);
  /* Re-reads the CA file given to env_new (issue 23 item 14): later
   * connections verify with it. 0, or -1 with *err (the old CAs stay).
   * NULL: the links hold no TLS files. */
  int (*reload_tls)(void *env, const char **err);
} tc_link_ops;

/* The links an instance uses, read at init: tc_link_ws.c's over
 * libwebsockets in the module; a unit test links its own definition
 * instead of tc_link_ws.c (in-memory links to a fake server). */
const tc_link_ops *tc_link_active(void);

#endif
