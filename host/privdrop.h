/* SPDX-License-Identifier: BSD-2-Clause */
/* Dropping root: [proxyhost] user and group. A daemon started as root
 * runs init and start as root (so modules bind privileged ports and open
 * root-only files), then becomes user:group for good before it serves:
 * supplementary groups, gid and uid are all replaced, and the drop is
 * verified (root cannot be regained). */
#ifndef PH_HOST_PRIVDROP_H
#define PH_HOST_PRIVDROP_H

#include <sys/types.h>

#include "buf.h"

typedef struct {
  int active; /* a drop is due: user set and the process is root */
  uid_t uid;
  gid_t gid;
  char user[64];
} ph_privdrop;

/* Resolves user (a name or a number) and group (empty: the user's
 * primary group). user empty: nothing to do. An unknown user or group is
 * an error (-1, reason in err) whether or not the process is root, so
 * --check-config finds it; when not root, a resolved user other than the
 * current one is only warned about (the drop needs root). 0 or -1. */
int privdrop_resolve(const char *user, const char *group, ph_privdrop *out,
                     ph_buf *err);
/* Performs a due drop. 0 or -1 (reason in err): then the process must
 * not run on. */
int privdrop_apply(const ph_privdrop *p, ph_buf *err);

#endif
