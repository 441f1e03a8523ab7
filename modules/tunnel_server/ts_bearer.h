/* SPDX-License-Identifier: BSD-2-Clause */
/* The part of a peer's bearer token a log line may show: its id. Pure,
 * any thread; fuzzed by t/fuzz/fuzz_ts_bearer.c. */
#ifndef TS_BEARER_H
#define TS_BEARER_H

#include <stddef.h>

#include <proxyhost/authz_store.h>

/* Writes into out the token id of the bearer b (len bytes, untrusted,
 * not NUL-terminated) when it has the store's form "tok_" + 16 lower-case
 * hex digits followed by '.', else "-". Nothing after the '.' (the
 * secret) is ever read into out. */
void ts_bearer_id(const char *b, size_t len, char out[PH_AZ_ID_LEN + 1]);

#endif
