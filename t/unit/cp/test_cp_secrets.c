/* SPDX-License-Identifier: BSD-2-Clause */
/* Credential material from secrets_dir (modules/controlplane_server/
 * cp_secrets.c): the one-line file format, the file's safety (mode, type,
 * size, links, names that could leave the directory), and that a refusal
 * never carries the material (CP-1-18, CP-8-4, CP-8-5). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "controlplane_server/cp_secrets.h"
#include "tap.h"

static char dir[64];

static void put(const char *name, const char *text, mode_t mode) {
  char p[256];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd >= 0) {
    if (write(fd, text, strlen(text)) < 0)
      perror("write");
    close(fd);
  }
  chmod(p, mode);
}

static void test_parse(void) {
  ph_pool_credential c;
  const char *why = NULL;
  memset(&c, 0, sizeof c);
  ok(cp_secret_parse("alice:s3cr:et\n", 14, &c, &why) == 0 &&
         strcmp(c.username, "alice") == 0 && strcmp(c.password, "s3cr:et") == 0,
     "username:password, a ':' in the password, a trailing LF");
  ok(cp_secret_parse("bob:pw\r\n", 8, &c, &why) == 0 &&
         strcmp(c.password, "pw") == 0,
     "a trailing CRLF");
  ok(cp_secret_parse("nocolon", 7, &c, &why) < 0 && why && c.username[0] == 0,
     "no ':' is refused and the output wiped");
  ok(cp_secret_parse(":pw", 3, &c, &why) < 0, "an empty username is refused");
  ok(cp_secret_parse("u:", 2, &c, &why) < 0, "an empty password is refused");
  ok(cp_secret_parse("u:p w", 5, &c, &why) < 0, "a space is refused");
  ok(cp_secret_parse("u:p\nq:r", 7, &c, &why) < 0, "two lines are refused");
  char big[300];
  memset(big, 'a', sizeof big);
  big[1] = ':';
  ok(cp_secret_parse(big, sizeof big, &c, &why) < 0,
     "a password over 255 bytes is refused");
  ok(cp_secret_parse("u:p\0w", 5, &c, &why) < 0, "a NUL inside is refused");
  ok(strstr(why, "u:p") == NULL,
     "the reason does not quote the file");
}

static void test_files(void) {
  ph_pool_credential c;
  const char *why = NULL;
  put("px-a", "alice:pw-a\n", 0600);
  is_int(cp_secret_read(dir, "px-a", 3, &c, &why), CP_SECRET_OK,
         "a 0600 file is read");
  ok(strcmp(c.username, "alice") == 0 && strcmp(c.password, "pw-a") == 0 &&
         strcmp(c.secret_ref, "px-a") == 0 && c.credential_version == 3,
     "with its ref and the store's version");
  cp_secret_wipe(&c);
  ok(c.password[0] == 0 && c.username[0] == 0, "cp_secret_wipe() clears it");
  put("px-ro", "u:p\n", 0400);
  is_int(cp_secret_read(dir, "px-ro", 1, &c, &why), CP_SECRET_OK,
         "a 0400 file is read");
  put("px-open", "u:p\n", 0644);
  is_int(cp_secret_read(dir, "px-open", 1, &c, &why), CP_SECRET_UNSAFE,
         "a file others may read is refused");
  ok(c.password[0] == 0, "and nothing of it is returned");
  is_int(cp_secret_read(dir, "px-none", 1, &c, &why), CP_SECRET_MISSING,
         "a missing file is told apart");
  put("px-bad", "no colon\n", 0600);
  is_int(cp_secret_read(dir, "px-bad", 1, &c, &why), CP_SECRET_MALFORMED,
         "a malformed file is refused");
  ok(why && strstr(why, "colon") == NULL, "with a reason that does not quote it");
  is_int(cp_secret_read(dir, "../etc/passwd", 1, &c, &why), CP_SECRET_BADREF,
         "a ref with a path is refused before any open");
  is_int(cp_secret_read(dir, ".hidden", 1, &c, &why), CP_SECRET_BADREF,
         "a ref starting with '.' is refused");
  is_int(cp_secret_read(dir, "", 1, &c, &why), CP_SECRET_BADREF,
         "an empty ref is refused");
  char p[256], q[256];
  snprintf(p, sizeof p, "%s/px-a", dir);
  snprintf(q, sizeof q, "%s/px-link", dir);
  ok(symlink(p, q) == 0, "a symbolic link to a good file");
  is_int(cp_secret_read(dir, "px-link", 1, &c, &why), CP_SECRET_UNSAFE,
         "is not followed");
  snprintf(p, sizeof p, "%s/px-dir", dir);
  mkdir(p, 0700);
  is_int(cp_secret_read(dir, "px-dir", 1, &c, &why), CP_SECRET_UNSAFE,
         "a directory is refused");
  char big[CP_SECRET_FILE_MAX + 10];
  memset(big, 'a', sizeof big - 1);
  big[sizeof big - 1] = 0;
  big[5] = ':';
  put("px-big", big, 0600);
  is_int(cp_secret_read(dir, "px-big", 1, &c, &why), CP_SECRET_UNSAFE,
         "a file over 1024 bytes is refused");
  unlink(q);
  rmdir(p);
}

int main(void) {
  plan_lazy();
  snprintf(dir, sizeof dir, "/tmp/cp-secrets.XXXXXX");
  if (!mkdtemp(dir))
    return 1;
  test_parse();
  test_files();
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0)
    return 1;
  return done_testing();
}
