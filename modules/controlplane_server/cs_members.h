/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Several controllers against one Redis (issue 26 "Several controllers").
 * A controller that holds at least one checker stream is a member: it
 * renews a lease in Redis (cp.authority members, lua/members.lua; Redis
 * time) every quarter of member_lease; one without leaves, and still
 * reads the set. Each proxy goes to one member by rendezvous hashing
 * (cs_hrw_pick over the live members' ids): that member alone schedules
 * the proxy's checks (cs_sched.c) and writes its verdict (cs_health.c),
 * so a proxy is checked once per interval in the whole cluster and two
 * controllers' verdicts never alternate. A member whose lease lapses
 * drops out of every controller's next read, and its share moves.
 * With no member at all (no checker anywhere) every controller writes
 * the verdicts its own outcomes give, as a single controller does.
 */
#ifndef CS_MEMBERS_H
#define CS_MEMBERS_H

#include "cs.h"

/* Made in init (PH_OK or an error, metrics registered), started with
 * the server, stopped before the authority goes, freed in destroy. */
int cs_members_init(cs *m);
void cs_members_start(cs *m);
void cs_members_stop(cs *m);
void cs_members_free(cs *m);

/* This controller may schedule checks now: it is a live member (its last
 * renewal, sent less than member_lease ago, was answered with it in the
 * set). */
int cs_members_scheduling(cs *m);
/* proxy_id goes to this controller: no member is known, or the rendezvous
 * pick among the live members is this one. */
int cs_members_mine(cs *m, const char *proxy_id);
/* The live members as last read (*ids, the count) and this controller's
 * own id ("" when it has none). */
size_t cs_members_list(cs *m, const char *const **ids);
const char *cs_members_self(cs *m);
/* The index in cs_members_list of proxy_id's member, -1 when none. */
int cs_members_pick(cs *m, const char *proxy_id);

#endif
