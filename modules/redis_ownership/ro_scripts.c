/* SPDX-License-Identifier: BSD-2-Clause */
/* The scripts' texts (prelude + script) and their SHA-1 for EVALSHA. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "ro_lua.h"
#include "ro_scripts.h"

const char *const ro_script_names[RO_S_COUNT + 1] = {
    "register", "next_version", "issue", "ack", "runtime",
    "outcomes", "assign", "owned", "usable", "extract",
    /* minor 4: checkers; "observations" runs outcomes.lua with kind 'c' */
    "checker_register", "checker_alive", "observations",
    /* minor 5: the pool's health */
    "health",
    /* minor 6: the controllers that schedule checks */
    "members",
    /* minor 7: outcomes handed to a proxy's member */
    "passive", NULL};

static const char *const bodies[RO_S_COUNT] = {
    ro_lua_register, ro_lua_next_version, ro_lua_issue,
    ro_lua_ack,      ro_lua_runtime,      ro_lua_outcomes,
    ro_lua_assign,   ro_lua_owned,        ro_lua_usable,
    ro_lua_extract, ro_lua_checker_register, ro_lua_checker_alive,
    ro_lua_outcomes, ro_lua_health, ro_lua_members,
    ro_lua_passive};

static char *texts[RO_S_COUNT];
static size_t lens[RO_S_COUNT];
static char shas[RO_S_COUNT][41];
static int refs; /* ro_scripts_init calls not yet undone */

static int sha1_hex(const char *s, size_t len, char out[41]) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_Digest(s, len, md, &n, EVP_sha1(), NULL) != 1 || n != 20)
    return -1;
  for (unsigned i = 0; i < n; i++)
    snprintf(out + 2 * i, 3, "%02x", md[i]);
  return 0;
}

int ro_scripts_init(void) {
  if (refs++ > 0)
    return 0;
  size_t plen = strlen(ro_lua_prelude);
  for (int i = 0; i < RO_S_COUNT; i++) {
    size_t blen = strlen(bodies[i]);
    texts[i] = malloc(plen + blen + 1);
    if (!texts[i])
      goto fail;
    memcpy(texts[i], ro_lua_prelude, plen);
    memcpy(texts[i] + plen, bodies[i], blen + 1);
    lens[i] = plen + blen;
    if (sha1_hex(texts[i], lens[i], shas[i]) < 0)
      goto fail;
  }
  return 0;
fail:
  refs = 1;
  ro_scripts_free();
  return -1;
}

void ro_scripts_free(void) {
  if (refs == 0 || --refs > 0)
    return;
  for (int i = 0; i < RO_S_COUNT; i++) {
    free(texts[i]);
    texts[i] = NULL;
    lens[i] = 0;
    shas[i][0] = 0;
  }
}

const char *ro_script_text(ro_script s, size_t *len) {
  *len = lens[s];
  return texts[s];
}

const char *ro_script_sha(ro_script s) { return shas[s]; }
