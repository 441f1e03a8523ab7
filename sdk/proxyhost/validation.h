/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proxyhost SDK: the "validation" service: does an outside authority
 * accept these local entry credentials for this target (through this
 * agent)? The TunnelMesh client's optional remote validation (its
 * auth_url): a frontend that authenticated a client (SOCKS5
 * username/password, HTTP Proxy-Authorization: Basic) and knows the
 * target asks once per stream, after the authorizer said yes and before
 * the connector opens anything.
 *
 * Service name "validation", major 1 (PH_VALIDATION_MAJOR). A frontend
 * names the provider with its "validation" key (empty: none, and then it
 * never calls this service) and gets it at start:
 *
 *   void *vself;
 *   const ph_validation_v1 *v = api->service_get_named(
 *       ctx, PH_VALIDATION_SERVICE, name, PH_VALIDATION_MAJOR, 0, &vself);
 *
 * Threads: loop thread only, for validate, cancel and the callback.
 *
 * Fail closed: anything but PH_VALIDATION_ALLOW is a denial, including
 * PH_VALIDATION_UNAVAILABLE (the authority could not be asked or did not
 * answer: a network error, a timeout, the provider's in-flight bound) and
 * a verdict value this header does not know. A frontend answers a denial
 * like a forbidden target (SOCKS5 reply 0x02, HTTP 403).
 */
#ifndef PROXYHOST_VALIDATION_H
#define PROXYHOST_VALIDATION_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/connector.h>

#define PH_VALIDATION_SERVICE "validation"
#define PH_VALIDATION_MAJOR 1
#define PH_VALIDATION_MINOR 0

/* Zero is no verdict, so a verdict left zeroed by mistake is a denial. */
typedef enum ph_validation_verdict {
  PH_VALIDATION_ALLOW = 1,      /* the authority accepts */
  PH_VALIDATION_DENY = 2,       /* the authority refuses */
  PH_VALIDATION_UNAVAILABLE = 3 /* no answer: a denial too */
} ph_validation_verdict;

/* validate's return value when the provider has nothing to ask (remote
 * validation switched off, an empty endpoint): the stream is allowed at
 * once and cb is never called. No lookup and no allocation were made. */
#define PH_VALIDATION_BYPASS 0

/*
 * The question. The caller fills it, sets size = sizeof(ph_validation_request)
 * of the headers it was built with, and zeroes what it does not use (a
 * designated initialiser does both). Ownership: the provider copies what
 * it keeps during validate, and wipes its copies of username and password
 * once they are no longer needed; the caller may (and should) wipe its own
 * on return. Every field the verdict may depend on is here, so a cache
 * keyed by all of them is exact.
 *
 * Growth: as for <proxyhost/access.h>: later minors append fields (their
 * zero is the old behaviour); a provider reads a field only when size
 * covers it and ignores bytes beyond its own sizeof.
 */
typedef struct ph_validation_request {
  uint32_t size;         /* the caller's sizeof */
  uint8_t protocol;      /* ph_protocol (PH_PROTO_TCP) */
  uint16_t port;         /* target port, 1..65535 */
  const char *host;      /* target, NUL-terminated, 1..255 bytes */
  const char *agent;     /* the agent the stream goes through,
                            NUL-terminated, 1..255 bytes; NULL: none */
  const char *username;  /* the client's entry credentials: bytes, not */
  size_t username_len;   /* NUL-terminated, 0..255 each (RFC 1929's */
  const char *password;  /* bounds); both empty for a client that */
  size_t password_len;   /* gave none */
  void *reserved[4];     /* zero */
} ph_validation_request;

/* The verdict (ph_validation_verdict). Called exactly once per validate
 * that returned an id > 0, on the loop thread, never from inside
 * validate itself, and never after cancel returned. arg is the caller's,
 * never freed by the provider. The callback may call validate and
 * cancel. Calls still unanswered when the provider is destroyed are
 * dropped without a call; the host destroys a service's users before
 * its provider. */
typedef void (*ph_validation_cb)(void *arg, int verdict);

typedef struct ph_validation_v1 {
  /* Starts a validation. Never blocks: a provider at its in-flight bound
   * answers PH_VALIDATION_UNAVAILABLE through the callback. Returns an id
   * > 0 (the verdict comes through cb), PH_VALIDATION_BYPASS (allowed, no
   * callback), or a negative ph_status and then cb is never called:
   * PH_EINVAL for a malformed request (NULL req or cb, a size too small,
   * an unknown protocol, port 0, a string out of bounds), PH_EFULL when
   * the provider's bound of waiting calls is reached, PH_ENOMEM. A caller
   * treats every negative status as a denial. */
  int64_t (*validate)(void *self, const ph_validation_request *req,
                      ph_validation_cb cb, void *arg);
  /* Abandons a validation: the callback is not called afterwards. PH_OK,
   * or PH_ENOENT when the id is unknown, answered or cancelled. The
   * request to the authority may go on (other callers may share it). */
  int (*cancel)(void *self, int64_t id);
} ph_validation_v1;

#endif
