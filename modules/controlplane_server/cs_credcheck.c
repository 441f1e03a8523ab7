/* SPDX-License-Identifier: BSD-2-Clause */
/* The controller's "cp.credentials" (cp_credcheck.h, issue 23 item 6):
 * the snapshot build's own reader (cp_secret_read) over secrets_dir, so
 * that what the admin API says is what the next build will do. */
#include "contracts/cp_credcheck.h"
#include "cp_secrets.h"
#include "cs.h"

static const char *problem(void *self, const char *ref, uint64_t version) {
  cs *m = self;
  ph_pool_credential c;
  const char *why = NULL;
  int rc = cp_secret_read(m->conf.secrets_dir, ref, version, &c, &why);
  if (rc == CP_SECRET_OK)
    cp_secret_wipe(&c);
  switch (rc) {
  case CP_SECRET_OK:
    return NULL;
  case CP_SECRET_MISSING:
    return "credential_missing";
  case CP_SECRET_MALFORMED:
    return "credential_malformed";
  case CP_SECRET_BADREF:
    return "credential_bad_ref";
  default:
    return "credential_unsafe";
  }
}

const cp_credcheck_v1 cs_credcheck_service = {problem};
