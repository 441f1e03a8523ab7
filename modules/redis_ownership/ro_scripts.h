/* SPDX-License-Identifier: BSD-2-Clause */
/* The scripts redis_ownership runs: each is lua/prelude.lua followed by
 * its own file, loaded with SCRIPT LOAD and run with EVALSHA by the SHA-1
 * of that text (computed here, once). */
#ifndef PH_RO_SCRIPTS_H
#define PH_RO_SCRIPTS_H

#include <stddef.h>

typedef enum ro_script {
  RO_S_REGISTER = 0,
  RO_S_NEXT_VERSION,
  RO_S_ISSUE,
  RO_S_ACK,
  RO_S_RUNTIME,
  RO_S_OUTCOMES,
  RO_S_ASSIGN,
  RO_S_OWNED,
  RO_S_USABLE,
  RO_S_EXTRACT,
  RO_S_CHECKER_REGISTER,
  RO_S_CHECKER_ALIVE,
  RO_S_OBSERVATIONS, /* outcomes.lua, kind 'c' */
  RO_S_HEALTH, /* minor 5 */
  RO_S_MEMBERS, /* minor 6 */
  RO_S_PASSIVE, /* minor 7 */
  RO_S_COUNT
} ro_script;

/* The names: metric label values and log fields. */
extern const char *const ro_script_names[RO_S_COUNT + 1];

/* Builds every script's text and SHA-1. 0, or -1 when memory or the
 * digest failed. Idempotent; ro_scripts_free undoes it. Loop thread. */
int ro_scripts_init(void);
void ro_scripts_free(void);
/* The script's full text and its length, and its SHA-1 as 40 lower-case
 * hex digits. Valid between ro_scripts_init and ro_scripts_free. */
const char *ro_script_text(ro_script s, size_t *len);
const char *ro_script_sha(ro_script s);

#endif
