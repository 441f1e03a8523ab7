/* SPDX-License-Identifier: BSD-2-Clause */
/* The bearer token of tunnel_client and tunnel_agent (tm_token.c), from
 * a file or the token key (read at every attempt: a rotated or late file is picked up; missing, empty and
 * unusable told apart, never the content). server_url is tm_ws_url.c's,
 * tested with tm_ws. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"
#include "tunnel_common/session/tm_token.h"

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
  char path[128], out[TM_TOKEN_MAX + 1];
  snprintf(path, sizeof(path), "%s/token", dir);
  is_int(tm_token_read(path, out, sizeof(out)), TM_TOKEN_MISSING,
         "a missing file is missing (not ready, retry)");
  write_file(path, "", 0);
  is_int(tm_token_read(path, out, sizeof(out)), TM_TOKEN_EMPTY,
         "an empty file is empty");
  write_file(path, " \n\n", 3);
  is_int(tm_token_read(path, out, sizeof(out)), TM_TOKEN_EMPTY,
         "white space only is empty");
  write_file(path, "tok_0123456789abcdef.secret\n", 28);
  ok(tm_token_read(path, out, sizeof(out)) == TM_TOKEN_OK &&
         !strcmp(out, "tok_0123456789abcdef.secret"),
     "a token file with a line end: the token, trimmed");
  /* Read at every attempt: the rotated content is what the next read
   * returns. */
  write_file(path, "tok_ffffffffffffffff.rotated", 28);
  ok(tm_token_read(path, out, sizeof(out)) == TM_TOKEN_OK &&
         !strcmp(out, "tok_ffffffffffffffff.rotated"),
     "a rotated file is read again");
  write_file(path, "two words\n", 10);
  ok(tm_token_read(path, out, sizeof(out)) == TM_TOKEN_BAD && out[0] == 0,
     "a token a header cannot carry is unusable, and not returned");
  write_file(path, "a\r\nb", 4);
  is_int(tm_token_read(path, out, sizeof(out)), TM_TOKEN_BAD,
         "CR LF inside (header injection) is unusable");
  char *big = malloc(TM_TOKEN_MAX + 10);
  memset(big, 'x', TM_TOKEN_MAX + 10);
  write_file(path, big, TM_TOKEN_MAX + 10);
  is_int(tm_token_read(path, out, sizeof(out)), TM_TOKEN_BAD,
         "a file above 4096 bytes is unusable");
  free(big);
  is_int(tm_token_read(dir, out, sizeof(out)), TM_TOKEN_BAD,
         "a directory is unusable");
  is_int(tm_token_take("  abc  ", 7, out, sizeof(out)), TM_TOKEN_OK,
         "the token key is trimmed");
  is_str(out, "abc", "... to its value");
  is_int(tm_token_take("", 0, out, sizeof(out)), TM_TOKEN_EMPTY,
         "an empty token key is empty");
  is_int(tm_token_take("abc", 3, out, 3), TM_TOKEN_BAD,
         "a token longer than the buffer is refused, not cut");
  is_str(tm_token_state_name(TM_TOKEN_MISSING), "missing", "state names");
  unlink(path);
  rmdir(dir);
}

int main(void) {
  plan_lazy();
  test_token();
  return done_testing();
}
