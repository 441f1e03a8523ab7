/* SPDX-License-Identifier: BSD-2-Clause */
/* The tunnel server's agent selection (modules/tunnel_server/
 * agent_select.h): weighted least connections, connections that cannot
 * open skipped, none left (agent_offline), ties spread. */
#include <stdint.h>

#include "tunnel_server/agent_select.h"
#include "tap.h"

int main(void) {
  plan_lazy();
  is_int(sel_pick(NULL, 0, 0), -1,
         "TM-P0-19: no connection: no candidate (selection/agent_offline)");
  sel_cand off[2] = {{0, 1, 0}, {0, 1, 0}};
  is_int(sel_pick(off, 2, 0), -1,
         "connections that cannot open (draining, full, no metadata) are "
         "no candidates");
  sel_cand lc[3] = {{5, 1, 1}, {2, 1, 1}, {7, 1, 1}};
  is_int(sel_pick(lc, 3, 0), 1, "the connection with the fewest streams wins");
  sel_cand w[2] = {{4, 1, 1}, {6, 2, 1}};
  is_int(sel_pick(w, 2, 0), 1, "streams per weight: 6/2 beats 4/1");
  sel_cand z[2] = {{1, 0, 1}, {3, 1, 1}};
  is_int(sel_pick(z, 2, 0), 0, "a zero weight reads as one");
  sel_cand skip[3] = {{0, 1, 0}, {9, 1, 1}, {3, 1, 0}};
  is_int(sel_pick(skip, 3, 0), 1,
         "the least loaded connection is skipped when it cannot open");
  sel_cand tie[3] = {{1, 1, 1}, {1, 1, 1}, {1, 1, 1}};
  is_int(sel_pick(tie, 3, 0), 0, "a tie goes to the first from start");
  is_int(sel_pick(tie, 3, 2), 2, "a rotated start spreads ties");
  sel_cand big[2] = {{UINT32_MAX, UINT32_MAX, 1}, {UINT32_MAX - 1, 1, 1}};
  is_int(sel_pick(big, 2, 0), 0, "the largest counts compare without overflow");
  /* Placement of a sequence: a new stream goes where the load is least. */
  sel_cand seq[3] = {{0, 1, 1}, {0, 2, 1}, {0, 1, 1}};
  int count[3] = {0, 0, 0};
  for (int n = 0; n < 40; n++) {
    int i = sel_pick(seq, 3, (size_t)n);
    count[i]++;
    seq[i].streams++;
  }
  is_int(count[1], 20, "weighted: a weight-2 connection takes half of 40");
  is_int(count[0] + count[2], 20, "and the two weight-1 ones the rest");
  ok(count[0] == 10 && count[2] == 10, "equally between them");

  /* TM-P2-27: the weight is the connection's capacity, not 1. */
  is_int((int)sel_weight(512, 1024), 512,
         "a connection's weight is the capacity its agent advertised");
  is_int((int)sel_weight(4096, 1024), 1024,
         "... bounded by the server's per-connection stream limit");
  is_int((int)sel_weight(0, 1024), 1024,
         "an agent that said nothing: the server's per-connection limit");
  is_int((int)sel_weight(0, 0), 1, "never 0");
  sel_cand cap[2] = {{0, sel_weight(512, 1024), 1},
                     {0, sel_weight(1024, 1024), 1}};
  int got[2] = {0, 0};
  for (int n = 0; n < 300; n++) {
    int i = sel_pick(cap, 2, (size_t)n);
    got[i]++;
    cap[i].streams++;
  }
  is_int(got[1], 200,
         "TM-P2-27: twice the capacity takes twice the streams (200 of 300)");
  is_int(got[0], 100, "... and the other 100");
  return done_testing();
}
