/* SPDX-License-Identifier: BSD-2-Clause */
/* Credential material from secrets_dir (cp_secrets.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "lib/conf_values.h"
#include "cp_secrets.h"

#define FIELD_MAX 255

void cp_secret_wipe(ph_pool_credential *c) { OPENSSL_cleanse(c, sizeof(*c)); }

int cp_secret_ref_ok(const char *ref) {
  /* A file name in secrets_dir: no '/', and no leading dot (".", "..",
   * hidden files). */
  return ref && ref[0] != '.' &&
         ph_conf_id_ok(ref, 1, PH_POOL_SECRET_REF_MAX);
}

static int visible(char ch) { return ch > 0x20 && ch < 0x7f; }

int cp_secret_parse(const char *buf, size_t len, ph_pool_credential *out,
                    const char **why) {
  /* One line: strip one LF, then one CR before it. */
  if (len > 0 && buf[len - 1] == '\n')
    len--;
  if (len > 0 && buf[len - 1] == '\r')
    len--;
  const char *colon = memchr(buf, ':', len);
  size_t ulen = colon ? (size_t)(colon - buf) : 0;
  size_t plen = colon ? len - ulen - 1 : 0;
  const char *reason = NULL;
  if (!colon)
    reason = "no ':' between username and password";
  else if (ulen == 0 || ulen > FIELD_MAX)
    reason = "the username is empty or longer than 255 bytes";
  else if (plen == 0 || plen > FIELD_MAX)
    reason = "the password is empty or longer than 255 bytes";
  for (size_t i = 0; !reason && i < len; i++)
    if (!visible(buf[i]))
      reason = "a byte that is not visible ASCII (one line, no spaces)";
  if (reason) {
    cp_secret_wipe(out);
    *why = reason;
    return -1;
  }
  memcpy(out->username, buf, ulen);
  out->username[ulen] = '\0';
  memcpy(out->password, colon + 1, plen);
  out->password[plen] = '\0';
  return 0;
}

int cp_secret_read(const char *dir, const char *ref, uint64_t version,
                   ph_pool_credential *out, const char **why) {
  memset(out, 0, sizeof(*out));
  if (!cp_secret_ref_ok(ref)) {
    *why = "secret_ref is not a safe file name";
    return CP_SECRET_BADREF;
  }
  char path[4096];
  if (snprintf(path, sizeof(path), "%s/%s", dir, ref) >= (int)sizeof(path)) {
    *why = "the secret's path is too long";
    return CP_SECRET_BADREF;
  }
  /* O_NOFOLLOW: the file itself, never what a link points at. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    *why = errno == ENOENT ? "no such secret file" : "the secret file cannot be opened";
    return errno == ENOENT ? CP_SECRET_MISSING : CP_SECRET_UNSAFE;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      (st.st_mode & (S_IRWXG | S_IRWXO)) != 0 ||
      st.st_size > CP_SECRET_FILE_MAX) {
    close(fd);
    *why = "the secret file is not a regular file of mode 0600 or 0400 "
           "within 1024 bytes";
    return CP_SECRET_UNSAFE;
  }
  char buf[CP_SECRET_FILE_MAX + 1];
  size_t n = 0;
  int read_err = 0;
  while (n < sizeof(buf)) { /* one byte more than allowed: growth shows */
    ssize_t r = read(fd, buf + n, sizeof(buf) - n);
    if (r > 0)
      n += (size_t)r;
    else if (r == 0)
      break;
    else if (errno != EINTR) {
      read_err = 1;
      break;
    }
  }
  close(fd);
  int rc = CP_SECRET_OK;
  if (read_err) {
    *why = "the secret file cannot be read";
    rc = CP_SECRET_UNSAFE;
  } else if (n > CP_SECRET_FILE_MAX) {
    *why = "the secret file grew beyond 1024 bytes";
    rc = CP_SECRET_UNSAFE;
  } else if (cp_secret_parse(buf, n, out, why) < 0) {
    rc = CP_SECRET_MALFORMED;
  } else {
    snprintf(out->secret_ref, sizeof(out->secret_ref), "%s", ref);
    out->credential_version = version;
  }
  OPENSSL_cleanse(buf, sizeof(buf));
  return rc;
}
