/* SPDX-License-Identifier: BSD-2-Clause */
/* tunnel_agent: the server's AGENT_METADATA_ACK on a connection
 * (agent_int.h). Apart from agent_pool.c so that test_tm_agent drives it
 * with the real session and stream path. */
#include "agent_int.h"

void agent_conn_metadata(void *arg, const tm_metadata *m, int ack) {
  agent_conn *c = arg;
  agent *a = c->a;
  if (!ack)
    return; /* only the server's ACK is expected here */
  c->acked = 1;
  a->attempt = 0; /* a working connection: the next loss starts over */
  /* The ACK is the intersection (TM-PROTO-18): what it grants is what
   * the connection uses. The session started with the subprotocol's caps;
   * an ACK granting less narrows them, which the session allows until its
   * first stream (the server sends the ACK before it opens any). Later,
   * we can only say so: the streams already run with the handshake's. */
  unsigned want = c->caps & (TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL);
  unsigned got = m->caps & a->cfg.caps;
  if ((got & want) != want) {
    if (c->s && tm_session_narrow_caps(c->s, got) == PH_OK) {
      PH_LOG(a->api, a->ctx, PH_LOG_WARN,
             "the server's metadata ACK grants fewer capabilities than its "
             "subprotocol: the connection uses the ACK's",
             PH_UINT("subprotocol_caps", want), PH_UINT("ack_caps", got));
    } else {
      PH_LOG(a->api, a->ctx, PH_LOG_WARN,
             "the server's metadata ACK grants fewer capabilities than its "
             "subprotocol after a stream started: keeping the subprotocol's",
             PH_UINT("subprotocol_caps", want), PH_UINT("ack_caps", got));
      got = want;
    }
  }
  c->caps = (c->caps & ~(TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL)) |
            (want & got);
  PH_LOG(a->api, a->ctx, PH_LOG_INFO, "agent metadata acknowledged",
         PH_UINT("caps", c->caps));
}
