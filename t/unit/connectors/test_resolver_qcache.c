/* SPDX-License-Identifier: BSD-2-Clause */
/* TM-PROTO-8 (issue 24 item 7): the resolver turns c-ares's own query
 * cache off. The installed c-ares here may predate the cache (Debian 12's
 * 1.18 has no ARES_OPT_QUERY_CACHE), so this program gives the option and
 * the field the way c-ares 1.23+ declares them and compiles
 * resolver_qcache.h's guarded path against them: the path Debian 13
 * builds. (test_direct's "an answer that changed is seen" shows the
 * behaviour against the installed library.) */
#include <string.h>

#include "tap.h"

/* As <ares.h> 1.23+ declares them (the bit and the field). */
#define ARES_OPT_QUERY_CACHE (1 << 21)
struct ares_options {
  int flags;
  unsigned int qcache_max_ttl; /* 0: the query cache is off */
};

#include "direct/resolver_qcache.h"

int main(void) {
  plan_lazy();
  struct ares_options o;
  memset(&o, 0, sizeof(o));
  o.qcache_max_ttl = 3600; /* c-ares's default */
  int mask = 1 | 4;
  resolver_no_qcache(&o, &mask);
  is_int((int)o.qcache_max_ttl, 0,
         "TM-PROTO-8: on c-ares 1.23+ the query cache's maximum TTL is 0 "
         "(the cache is off)");
  ok((mask & ARES_OPT_QUERY_CACHE) != 0,
     "TM-PROTO-8: and ares_init_options is told so (ARES_OPT_QUERY_CACHE)");
  is_int(mask & ~ARES_OPT_QUERY_CACHE, 1 | 4,
         "the other options are kept");
  return done_testing();
}
