/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Credential material for the upstream proxies (CP-1-18, CP-8-4, CP-8-5):
 * the pool's tables hold only a secret_ref and a credential_version; the
 * controller reads the material from secrets_dir/<secret_ref> when it
 * builds a snapshot, keeps it in memory only for that build, and wipes
 * what it read. Never in Redis, SQL, logs or metrics.
 *
 * A secret file is one line "username:password" (a trailing LF or CRLF
 * allowed), at most CP_SECRET_FILE_MAX bytes, owned by the controller's
 * user and readable by it alone (mode 0600 or 0400). The username is
 * 1..255 visible ASCII bytes without ':'; the password 1..255 visible
 * ASCII bytes (':' allowed). The credential_version is the store's: the
 * operator raises it (proxyhostctl credential rotate) when the file
 * changes, and gateways replace the credential on the next snapshot.
 *
 * Thread: any (the snapshot build runs as a host job); no shared state.
 */
#ifndef PH_CP_SECRETS_H
#define PH_CP_SECRETS_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/pool_store.h>

#define CP_SECRET_FILE_MAX 1024

/* Parses a secret file's bytes into out's username and password (pure).
 * Returns 0, or -1 with *why a short static reason that never contains
 * the bytes. out is wiped on a refusal. */
int cp_secret_parse(const char *buf, size_t len, ph_pool_credential *out,
                    const char **why);

/* A secret_ref usable as a file name: 1..PH_POOL_SECRET_REF_MAX bytes of
 * [A-Za-z0-9._-], not starting with '.' (no path, no hidden file). */
int cp_secret_ref_ok(const char *ref);

/* Results of cp_secret_read. */
enum {
  CP_SECRET_OK = 0,
  CP_SECRET_MISSING = -1,   /* no such file (the proxy is left out) */
  CP_SECRET_UNSAFE = -2,    /* not a regular file, or group/other may
                               read it, or it is larger than the bound */
  CP_SECRET_MALFORMED = -3, /* cp_secret_parse refused it */
  CP_SECRET_BADREF = -4     /* the ref is not a safe file name */
};

/* Reads dir/ref into out (secret_ref and credential_version = version).
 * Returns a CP_SECRET_* value with *why set on a failure; the buffer it
 * read is wiped either way. */
int cp_secret_read(const char *dir, const char *ref, uint64_t version,
                   ph_pool_credential *out, const char **why);

/* Wipes a credential (OPENSSL_cleanse: not optimised away). */
void cp_secret_wipe(ph_pool_credential *c);

#endif
