/* SPDX-License-Identifier: BSD-2-Clause */
/* tunnel_client's pure parts: server_url parsing with the loopback rule
 * for plain ws, and the bearer token from a file or the token key (read
 * at every attempt: a rotated or late file is picked up; missing, empty
 * and unusable told apart, never the content). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"
#include "tc_token.h"
#include "tc_url.h"

static void test_url(void) {
  tc_url u;
  char why[128];
  ok(tc_url_parse("ws://127.0.0.1:8443/tunnel", &u, why, sizeof(why)) == 0 &&
         !u.tls && u.port == 8443 && !strcmp(u.host, "127.0.0.1") &&
         !strcmp(u.path, "/tunnel"),
     "ws URL with port and path");
  ok(tc_url_parse("wss://tm.example.org", &u, why, sizeof(why)) == 0 &&
         u.tls && u.port == 443 && !strcmp(u.path, "/") &&
         !strcmp(u.host, "tm.example.org"),
     "wss URL: default port 443, path /");
  ok(tc_url_parse("WS://[::1]:9/x", &u, why, sizeof(why)) == 0 &&
         !strcmp(u.host, "::1") && u.port == 9,
     "IPv6 literal in brackets, scheme case-insensitive");
  ok(tc_url_parse("ws://h", &u, why, sizeof(why)) == 0 && u.port == 80,
     "ws default port 80");
  static const char *const badv[] = {
      "", "http://h/", "ws://", "ws://:80/", "ws://h:0/", "ws://h:65536/",
      "ws://h:/", "ws://h:8x/", "ws://user:pw@h/", "ws://tok@h/",
      "ws://[::1/", "ws://[zz]/", "ws://h/a b", "ws://h/?token=x",
      "ws://h#f", "ws://h%41/", "ws://[::1]x/", NULL};
  for (int i = 0; badv[i]; i++) {
    char name[96];
    snprintf(name, sizeof(name), "refused: \"%s\"", badv[i]);
    ok(tc_url_parse(badv[i], &u, why, sizeof(why)) < 0 && why[0], name);
  }
  ok(tc_url_parse("ws://a:b@h/", &u, why, sizeof(why)) < 0 &&
         !strstr(why, "b@"),
     "the reason for a URL with credentials does not quote them");
  char big[3000];
  memset(big, 'a', sizeof(big) - 1);
  big[sizeof(big) - 1] = 0;
  memcpy(big, "ws://", 5);
  ok(tc_url_parse(big, &u, why, sizeof(why)) < 0, "URL over 2048 bytes");
  /* The loopback rule of plain ws (the check refuses the rest unless
   * allow_plain). */
  ok(tc_url_host_is_loopback("127.0.0.1"), "127.0.0.1 is loopback");
  ok(tc_url_host_is_loopback("127.9.8.7"), "127/8 is loopback");
  ok(tc_url_host_is_loopback("::1"), "::1 is loopback");
  ok(tc_url_host_is_loopback("localhost") &&
         tc_url_host_is_loopback("LOCALHOST."),
     "localhost (any case, trailing dot)");
  ok(!tc_url_host_is_loopback("10.0.0.1"), "10.0.0.1 is not");
  ok(!tc_url_host_is_loopback("128.0.0.1"), "128.0.0.1 is not");
  ok(!tc_url_host_is_loopback("::2"), "::2 is not");
  ok(!tc_url_host_is_loopback("x.localhost"),
     "x.localhost is not (a resolver may say otherwise)");
  ok(!tc_url_host_is_loopback("localhost.example.org"),
     "localhost.example.org is not");
}

static void write_file(const char *path, const char *s, size_t n) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd >= 0) {
    if (n && write(fd, s, n) != (ssize_t)n)
      perror("write");
    close(fd);
  }
}

static void test_token(void) {
  char dir[] = "/tmp/tc_tok.XXXXXX";
  if (!mkdtemp(dir)) {
    ok(0, "mkdtemp");
    return;
  }
  char path[128], out[TC_TOKEN_MAX + 1];
  snprintf(path, sizeof(path), "%s/token", dir);
  is_int(tc_token_read(path, out, sizeof(out)), TC_TOKEN_MISSING,
         "a missing file is missing (not ready, retry)");
  write_file(path, "", 0);
  is_int(tc_token_read(path, out, sizeof(out)), TC_TOKEN_EMPTY,
         "an empty file is empty");
  write_file(path, " \n\n", 3);
  is_int(tc_token_read(path, out, sizeof(out)), TC_TOKEN_EMPTY,
         "white space only is empty");
  write_file(path, "tok_0123456789abcdef.secret\n", 28);
  ok(tc_token_read(path, out, sizeof(out)) == TC_TOKEN_OK &&
         !strcmp(out, "tok_0123456789abcdef.secret"),
     "a token file with a line end: the token, trimmed");
  /* Read at every attempt: the rotated content is what the next read
   * returns. */
  write_file(path, "tok_ffffffffffffffff.rotated", 28);
  ok(tc_token_read(path, out, sizeof(out)) == TC_TOKEN_OK &&
         !strcmp(out, "tok_ffffffffffffffff.rotated"),
     "a rotated file is read again");
  write_file(path, "two words\n", 10);
  ok(tc_token_read(path, out, sizeof(out)) == TC_TOKEN_BAD && out[0] == 0,
     "a token a header cannot carry is unusable, and not returned");
  write_file(path, "a\r\nb", 4);
  is_int(tc_token_read(path, out, sizeof(out)), TC_TOKEN_BAD,
         "CR LF inside (header injection) is unusable");
  char *big = malloc(TC_TOKEN_MAX + 10);
  memset(big, 'x', TC_TOKEN_MAX + 10);
  write_file(path, big, TC_TOKEN_MAX + 10);
  is_int(tc_token_read(path, out, sizeof(out)), TC_TOKEN_BAD,
         "a file above 4096 bytes is unusable");
  free(big);
  is_int(tc_token_read(dir, out, sizeof(out)), TC_TOKEN_BAD,
         "a directory is unusable");
  is_int(tc_token_take("  abc  ", 7, out, sizeof(out)), TC_TOKEN_OK,
         "the token key is trimmed");
  is_str(out, "abc", "... to its value");
  is_int(tc_token_take("", 0, out, sizeof(out)), TC_TOKEN_EMPTY,
         "an empty token key is empty");
  is_int(tc_token_take("abc", 3, out, 3), TC_TOKEN_BAD,
         "a token longer than the buffer is refused, not cut");
  is_str(tc_token_state_name(TC_TOKEN_MISSING), "missing", "state names");
  unlink(path);
  rmdir(dir);
}

int main(void) {
  plan_lazy();
  test_url();
  test_token();
  return done_testing();
}
