/* SPDX-License-Identifier: BSD-2-Clause */
/* ro_reply: a script's reply (hiredis's redisReply) read into a
 * cp_auth_reply. Pure: no I/O, no logging. Every script answers an array
 * whose first element is the result word (the files in lua/ say what follows);
 * anything else, a wrong type, a negative number or a missing element is
 * CP_AUTH_UNAVAILABLE (fail closed). Strings in the result point into
 * the redisReply; the arrays are allocated in mem. */
#ifndef PH_RO_REPLY_H
#define PH_RO_REPLY_H

#include "contracts/cp_authority.h"
#include "ro_scripts.h"

struct redisReply;

typedef struct ro_reply_mem {
  const char **revoke;
  cp_auth_owned *owned;
  cp_auth_usable *usable;
  cp_auth_health *health;
  const char **members;
  cp_auth_passive *passive;
} ro_reply_mem;

/* Fills *out (its size too) from r (NULL: unavailable). Returns
 * out->result. */
cp_auth_result ro_reply_parse(ro_script s, const struct redisReply *r,
                              cp_auth_reply *out, ro_reply_mem *mem);
void ro_reply_mem_free(ro_reply_mem *mem);
/* "ok", "replay", "stale_session", ...: metric label values. */
extern const char *const ro_result_names[CP_AUTH_RESULT_COUNT + 1];

#endif
