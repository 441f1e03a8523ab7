/* SPDX-License-Identifier: BSD-2-Clause */
/* The normal form of a target host (modules/lib/host_norm.h), the one
 * the "access" contract and the authorization cache's key use (TM-P1-4):
 * names lower-cased without the trailing dot, addresses in standard text
 * form, everything else refused. */
#include <string.h>

#include "lib/host_norm.h"
#include "tap.h"

static void norm_is(const char *in, const char *want, const char *name) {
  char out[HOST_NORM_MAX + 1] = "";
  int rc = host_norm(in, out);
  if (!want) {
    is_int(rc, -1, name);
    return;
  }
  is_int(rc, 0, name);
  is_str(out, want, name);
}

int main(void) {
  plan_lazy();
  norm_is("Example.ORG.", "example.org",
          "TM-P1-4: a name is lower-cased and loses its trailing dot");
  norm_is("a-b_c.example", "a-b_c.example", "TM-P1-4: '-' and '_' stay");
  norm_is("192.0.2.1", "192.0.2.1", "TM-P1-4: an IPv4 address stays");
  norm_is("2001:DB8:0:0:0:0:0:1", "2001:db8::1",
          "TM-P1-4: an IPv6 address takes its standard text form");
  norm_is("[2001:db8::1]", "2001:db8::1", "TM-P1-4: brackets around IPv6 go");
  norm_is("::ffff:192.0.2.1", "::ffff:192.0.2.1",
          "TM-P1-4: a mapped IPv4 address keeps its form");
  norm_is("", NULL, "an empty host is refused");
  norm_is(NULL, NULL, "NULL is refused");
  norm_is(".", NULL, "a lone dot is refused");
  norm_is("a..b", NULL, "an empty label is refused");
  norm_is("a b", NULL, "a space is refused");
  norm_is("[192.0.2.1]", NULL, "brackets around IPv4 are refused");
  norm_is("[example.org]", NULL, "brackets around a name are refused");
  norm_is("2001:db8::1%eth0", NULL, "a zone index is refused");
  norm_is("exa\xc3\xa9mple.org", NULL, "non-ASCII is refused");
  char label[80];
  memset(label, 'a', 64);
  label[64] = '\0';
  norm_is(label, NULL, "a label of 64 bytes is refused");
  label[63] = '\0';
  norm_is(label, label, "a label of 63 bytes is fine");
  char longname[300];
  memset(longname, 'a', sizeof(longname));
  for (int i = 50; i < 299; i += 51)
    longname[i] = '.';
  longname[256] = '\0';
  norm_is(longname, NULL, "a host of 256 bytes is refused");
  ok(host_norm_ok("example.org"), "host_norm_ok: a normal name");
  ok(!host_norm_ok("Example.org"), "host_norm_ok: upper case is not normal");
  ok(!host_norm_ok("example.org."), "host_norm_ok: a trailing dot is not");
  ok(!host_norm_ok("2001:db8:0::1"), "host_norm_ok: an IPv6 spelling "
                                     "other than the standard one is not");
  ok(!host_norm_ok("[2001:db8::1]"), "host_norm_ok: brackets are not");
  ok(host_norm_ok("2001:db8::1"), "host_norm_ok: standard IPv6 is");
  return done_testing();
}
