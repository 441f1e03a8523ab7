/* SPDX-License-Identifier: BSD-2-Clause */
/* "cp.credentials" (issue 23 item 6): whether the controller can read a
 * proxy's credential now, so that the admin API shows a proxy whose
 * secret file is missing or unusable as unusable, with its reason,
 * instead of letting it vanish from every snapshot unseen. Provided by
 * controlplane_server over its secrets_dir (cp_secrets.h); asked by
 * admin_api ([admin_api] credentials). Header only. */
#ifndef PH_CP_CREDCHECK_H
#define PH_CP_CREDCHECK_H

#include <stdint.h>

#define CP_CREDCHECK_SERVICE "cp.credentials"
#define CP_CREDCHECK_MAJOR 1
#define CP_CREDCHECK_MINOR 0

typedef struct cp_credcheck_v1 {
  /* NULL when the material of (secret_ref, version) can be read now; else
   * why not, one of "credential_missing" (no such file),
   * "credential_unsafe" (others may read it, not a regular file, too
   * large), "credential_malformed" (not one "username:password" line),
   * "credential_bad_ref" (not a safe file name). Reads one file of at
   * most 1 KiB and wipes what it read; never returns material. Loop
   * thread. */
  const char *(*problem)(void *self, const char *secret_ref,
                         uint64_t version);
} cp_credcheck_v1;

#endif
