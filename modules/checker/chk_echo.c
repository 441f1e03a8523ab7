/* SPDX-License-Identifier: BSD-2-Clause */
/* The echo answer's reading (chk_echo.h). */
#include <string.h>
#include <strings.h>

#include "chk_echo.h"
#include "lib/json.h"

static const char *const forwarding[] = {
    "x-forwarded-for", "forwarded",        "x-real-ip",
    "via",             "client-ip",        "true-client-ip",
    "x-client-ip",     "x-originating-ip", "x-cluster-client-ip",
    "forwarded-for",   "x-proxyuser-ip",   "cf-connecting-ip",
    "x-forwarded-host", "x-forwarded-proto", "x-forwarded-server",
    "x-proxy-id",      "x-bluecoat-via",   "x-tinyproxy",
    NULL};

static int is_forwarding(const char *name) {
  for (size_t i = 0; forwarding[i]; i++)
    if (!strcasecmp(name, forwarding[i]))
      return 1;
  return 0;
}

static int addr_byte(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
         (c >= 'A' && c <= 'F') || c == '.' || c == ':';
}

int chk_addr_in(const char *s, size_t n, const char *addr) {
  size_t a = strlen(addr);
  if (!a || a > n)
    return 0;
  for (size_t i = 0; i + a <= n; i++) {
    if (strncasecmp(s + i, addr, a))
      continue;
    if (i > 0 && addr_byte(s[i - 1]))
      continue;
    if (i + a < n && addr_byte(s[i + a]))
      continue;
    return 1;
  }
  return 0;
}

int chk_echo_read(const char *body, size_t len, const char *nonce,
                  const char *const *own, size_t n_own, chk_echo_result *r) {
  memset(r, 0, sizeof(*r));
  if (len > CHK_ECHO_BODY_MAX || !nonce || !nonce[0])
    return -1;
  json_tok toks[CHK_ECHO_TOKENS_MAX];
  json_doc d;
  /* A trailing newline is the echo's; anything else trailing is not. */
  while (len && (body[len - 1] == '\n' || body[len - 1] == '\r'))
    len--;
  if (json_parse(&d, body, len, toks, CHK_ECHO_TOKENS_MAX, 4, NULL) !=
          JSON_OK ||
      json_type_of(&d, 0) != JSON_OBJECT)
    return -1;
  long ni = json_get(&d, 0, "nonce"), ai = json_get(&d, 0, "remote_addr"),
       hi = json_get(&d, 0, "headers");
  if (ni < 0 || ai < 0 || hi < 0 || !json_str_eq(&d, (size_t)ni, nonce) ||
      json_type_of(&d, (size_t)hi) != JSON_ARRAY)
    return -1;
  if (json_str(&d, (size_t)ai, r->egress_ip, sizeof(r->egress_ip)) < 1)
    return -1;
  int proxy_headers = 0, mine = 0;
  size_t n = toks[hi].size, i = (size_t)hi + 1;
  for (size_t k = 0; k < n; k++) {
    const json_tok *pair = &toks[i];
    if (pair->type != JSON_ARRAY || pair->size != 2 ||
        toks[i + 1].type != JSON_STRING || toks[i + 2].type != JSON_STRING)
      return -1;
    char name[128];
    if (json_str(&d, i + 1, name, sizeof(name)) >= 0 && is_forwarding(name)) {
      proxy_headers = 1;
      const json_tok *v = &toks[i + 2];
      for (size_t o = 0; o < n_own; o++)
        if (own[o] && own[o][0] &&
            chk_addr_in(body + v->start, v->end - v->start, own[o]))
          mine = 1;
    }
    i = pair->next;
  }
  r->anonymity = mine ? CHK_ANON_TRANSPARENT
                      : proxy_headers ? CHK_ANON_ANONYMOUS : CHK_ANON_ELITE;
  return 0;
}
