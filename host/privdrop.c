/* SPDX-License-Identifier: BSD-2-Clause */
/* Dropping root after start (privdrop.h). */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "privdrop.h"

/* A decimal id, or -1. */
static long parse_id(const char *s) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (!*s || *end || errno || v < 0 || v > 0x7fffffffL)
    return -1;
  return v;
}

int privdrop_resolve(const char *user, const char *group, ph_privdrop *out,
                     ph_buf *err) {
  memset(out, 0, sizeof(*out));
  if (!user || !*user) {
    if (group && *group) {
      buf_printf(err, "[proxyhost] group = %s needs [proxyhost] user too\n",
                 group);
      return -1;
    }
    return 0;
  }
  struct passwd *pw = getpwnam(user);
  long id = parse_id(user);
  if (!pw && id >= 0)
    pw = getpwuid((uid_t)id);
  if (!pw) {
    buf_printf(err,
               "[proxyhost] user = %s: no such user (refusing to run as "
               "root)\n",
               user);
    return -1;
  }
  out->uid = pw->pw_uid;
  out->gid = pw->pw_gid;
  snprintf(out->user, sizeof(out->user), "%s", pw->pw_name);
  if (group && *group) {
    struct group *gr = getgrnam(group);
    id = parse_id(group);
    if (!gr && id >= 0)
      gr = getgrgid((gid_t)id);
    if (!gr) {
      buf_printf(err,
                 "[proxyhost] group = %s: no such group (refusing to run "
                 "as root)\n",
                 group);
      return -1;
    }
    out->gid = gr->gr_gid;
  }
  if (out->uid == 0) {
    buf_printf(err, "[proxyhost] user = %s is root: nothing to drop to\n",
               user);
    return -1;
  }
  if (geteuid() == 0) {
    out->active = 1;
  } else if (geteuid() != out->uid) {
    ph_log_field f[] = {PH_STR("user", out->user),
                        PH_UINT("uid", (unsigned)geteuid())};
    log_write(NULL, PH_LOG_WARN,
              "not started as root: [proxyhost] user ignored", f, 2);
  }
  return 0;
}

int privdrop_apply(const ph_privdrop *p, ph_buf *err) {
  if (!p->active)
    return 0;
  if (setgroups(1, &p->gid) < 0 || setgid(p->gid) < 0 ||
      setuid(p->uid) < 0) {
    buf_printf(err, "cannot become user %s (uid %u, gid %u): %s\n", p->user,
               (unsigned)p->uid, (unsigned)p->gid, strerror(errno));
    return -1;
  }
  if (setuid(0) == 0 || geteuid() == 0 || (p->gid != 0 && getegid() == 0)) {
    buf_printf(err, "root could be regained after becoming %s\n", p->user);
    return -1;
  }
  ph_log_field f[] = {PH_STR("user", p->user), PH_UINT("uid", (unsigned)p->uid),
                      PH_UINT("gid", (unsigned)p->gid)};
  log_write(NULL, PH_LOG_INFO, "dropped root privileges", f, 3);
  return 0;
}
