/* SPDX-License-Identifier: BSD-2-Clause */
/* Fuzz target: the tunnel client's ws:// / wss:// URL parser
 * (modules/tunnel_common/session/tm_ws_url.c). It checks the contract of
 * tm_ws_url.h: an accepted URL has a NUL-terminated host of 1..253
 * printable bytes without brackets, '@', '/' or spaces, a port 1..65535,
 * a path that starts with '/' and has no space, control byte or '#';
 * a refusal has a reason; the verdict is deterministic; and an accepted
 * URL written back out (scheme://host:port/path) parses to the same
 * fields. The input is the URL. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tunnel_common/session/tm_ws_url.h"

#define CHECK(c)                                                               \
  do {                                                                         \
    if (!(c)) {                                                                \
      fprintf(stderr, "fuzz_tm_url: %s\n", #c);                                \
      abort();                                                                 \
    }                                                                          \
  } while (0)

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  tm_ws_url u, v;
  const char *err = NULL;
  int rc = tm_ws_url_parse((const char *)data, size, &u, &err);
  int rc2 = tm_ws_url_parse((const char *)data, size, &v, &err);
  CHECK(rc == rc2);
  if (rc < 0) {
    CHECK(err && *err);
    return 0;
  }
  size_t hl = strnlen(u.host, sizeof(u.host));
  CHECK(hl >= 1 && hl <= TM_WS_HOST_MAX);
  for (size_t i = 0; i < hl; i++) {
    unsigned char ch = (unsigned char)u.host[i];
    CHECK(ch > 0x20 && ch < 0x7f && ch != '[' && ch != ']' && ch != '@' &&
          ch != '/');
  }
  CHECK(u.port >= 1);
  size_t pl = strnlen(u.path, sizeof(u.path));
  CHECK(pl >= 1 && pl < TM_WS_PATH_MAX && u.path[0] == '/');
  for (size_t i = 0; i < pl; i++) {
    unsigned char ch = (unsigned char)u.path[i];
    CHECK(ch > 0x20 && ch < 0x7f && ch != '#');
  }
  CHECK(!u.ipv6 || strchr(u.host, ':'));
  CHECK(u.ipv6 || !strchr(u.host, ':'));
  /* Round trip. */
  static char out[TM_WS_HOST_MAX + TM_WS_PATH_MAX + 32];
  int n = snprintf(out, sizeof(out), "%s://%s%s%s:%u%s", u.tls ? "wss" : "ws",
                   u.ipv6 ? "[" : "", u.host, u.ipv6 ? "]" : "",
                   (unsigned)u.port, u.path);
  CHECK(n > 0 && (size_t)n < sizeof(out));
  CHECK(tm_ws_url_parse(out, (size_t)n, &v, &err) == 0);
  CHECK(v.tls == u.tls && v.ipv6 == u.ipv6 && v.port == u.port &&
        !strcmp(v.host, u.host) && !strcmp(v.path, u.path));
  return 0;
}
