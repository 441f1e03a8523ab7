/* SPDX-License-Identifier: BSD-2-Clause */
/* Fuzz target: redis_ownership's reading of a script's reply
 * (modules/redis_ownership/ro_reply.c) from the RESP bytes Redis sends,
 * parsed by hiredis's own reader as the connection parses them. Byte 0
 * picks the script; the rest is the bytes. It checks the contract of
 * ro_reply.h: the result is a cp_auth_result; an unavailable answer
 * carries nothing else; every array has the length it says, every id is
 * a NUL-terminated string of at most PH_POOL_ID_MAX bytes that lies
 * inside the reply; usable entries are valid 0/1 and zero when not
 * valid; an extraction state is whole (its time, its owner); a
 * session's zone is an id where the script gives one; and the
 * verdict is deterministic. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "redis_ownership/ro_reply.h"

#define CHECK(c)                                                          \
  do {                                                                    \
    if (!(c)) {                                                           \
      fprintf(stderr, "fuzz_ro_reply: %s\n", #c);                         \
      abort();                                                            \
    }                                                                     \
  } while (0)

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* hiredis 0.14's reader has no bound on an array's announced length (it
 * allocates it at once; hiredis 1.0 added maxelements): inputs announcing
 * more than the longest reply a script can give (usable: 2 + 4 per id)
 * are out of this target's scope. The module trusts its Redis server. */
static int announces_huge(const unsigned char *d, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (d[i] != '*' && d[i] != '$')
      continue;
    unsigned long long v = 0;
    size_t j = i + 1;
    while (j < n && d[j] >= '0' && d[j] <= '9' && v < 100000000ULL)
      v = v * 10 + (d[j++] - '0');
    if (v > 4ULL * PH_POOL_PROXIES_MAX + 2)
      return 1;
  }
  return 0;
}

static void check_id(const char *s) {
  CHECK(s != NULL);
  CHECK(strlen(s) <= PH_POOL_ID_MAX);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  if (size < 1 || announces_huge(data + 1, size - 1))
    return 0;
  ro_script s = (ro_script)(data[0] % RO_S_COUNT);
  redisReader *rd = redisReaderCreate();
  if (!rd)
    return 0;
  void *reply = NULL;
  if (redisReaderFeed(rd, (const char *)data + 1, size - 1) == REDIS_OK &&
      redisReaderGetReply(rd, &reply) == REDIS_OK && reply) {
    cp_auth_reply out, again;
    ro_reply_mem mem, mem2;
    cp_auth_result r = ro_reply_parse(s, reply, &out, &mem);
    CHECK(r >= CP_AUTH_OK && r < CP_AUTH_RESULT_COUNT);
    CHECK(out.result == r && out.size == sizeof(out));
    CHECK(ro_result_names[r] != NULL);
    if (r == CP_AUTH_UNAVAILABLE)
      CHECK(out.n_revoke == 0 && out.n_owned == 0 && out.n_usable == 0 &&
            out.epoch == 0 && out.version == 0);
    CHECK(out.n_revoke <= PH_POOL_PROXIES_MAX && out.n_owned <= PH_POOL_PROXIES_MAX &&
          out.n_usable <= PH_POOL_PROXIES_MAX);
    CHECK((out.n_revoke == 0) == (out.revoke == NULL));
    CHECK((out.n_owned == 0) == (out.owned == NULL));
    CHECK((out.n_usable == 0) == (out.usable == NULL));
    for (size_t i = 0; i < out.n_revoke; i++)
      check_id(out.revoke[i]);
    for (size_t i = 0; i < out.n_owned; i++) {
      check_id(out.owned[i].proxy_id);
      CHECK(out.owned[i].lease_until_ms >= 0);
    }
    for (size_t i = 0; i < out.n_usable; i++) {
      check_id(out.usable[i].owner);
      CHECK(out.usable[i].valid == 0 || out.usable[i].valid == 1);
      if (!out.usable[i].valid)
        CHECK(out.usable[i].active == 0 && out.usable[i].reserved == 0);
    }
    if (s == RO_S_NEXT_VERSION && r == CP_AUTH_OK)
      CHECK(out.version >= 1);
    /* minor 8: the session's zone with owned and checker_alive, the
     * extraction counts with assign (each within what Redis may hold) */
    if ((s == RO_S_OWNED || s == RO_S_CHECKER_ALIVE) && r == CP_AUTH_OK)
      check_id(out.zone);
    else
      CHECK(out.zone == NULL);
    CHECK(out.n_reclaiming <= PH_POOL_PROXIES_MAX &&
          out.n_extracted <= PH_POOL_PROXIES_MAX);
    /* extract: a state, its time exactly when EXTRACTED, an owner only
     * when RECLAIMING; nothing for a refusal. */
    if (s == RO_S_EXTRACT && r == CP_AUTH_OK) {
      CHECK(out.extract_state <= CP_EXTRACT_EXTRACTED && out.extract_owner);
      check_id(out.extract_owner);
      CHECK((out.extract_state == CP_EXTRACT_EXTRACTED) == (out.extracted_ms > 0));
      CHECK(out.extract_state == CP_EXTRACT_RECLAIMING || !out.extract_owner[0]);
    } else {
      CHECK(out.extract_state == CP_EXTRACT_AVAILABLE && out.extracted_ms == 0);
    }
    CHECK(ro_reply_parse(s, reply, &again, &mem2) == r);
    CHECK(again.n_revoke == out.n_revoke && again.n_owned == out.n_owned &&
          again.n_usable == out.n_usable && again.epoch == out.epoch);
    ro_reply_mem_free(&mem);
    ro_reply_mem_free(&mem2);
    freeReplyObject(reply);
  }
  redisReaderFree(rd);
  return 0;
}
