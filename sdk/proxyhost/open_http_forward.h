/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proxyhost SDK: absolute-form HTTP forwarding, an extension of an open
 * (open_ext.h; part of the connector contract, connector.h).
 *
 * The caller (http_proxy, for a request it forwards; never for CONNECT,
 * socks5 never) says it will send HTTP/1.1 requests for host:port over
 * the stream and can send each in absolute form with one more
 * Proxy-Authorization field: ph_open_http_forward_ask in the request's
 * chain (ph_open_http_forward_request). A connector that does not know
 * it ignores it: nothing changes for its caller. A connector whose
 * socket or stream goes to an HTTP forward proxy rather than to the
 * target (the pool, for an upstream of protocol `http`) answers the
 * success with ph_open_http_forward_res in the result's chain. The
 * caller then sends each request in absolute form ("GET
 * http://host:port/p HTTP/1.1", the scheme, host and port the client
 * asked for), with the Proxy-Authorization given, and reuses the
 * connection only for requests to the same host:port. Its responses are
 * the target's, but for a 407: that one is about the connector's
 * credentials (answer the client 502 and end the lease TARGET_ERROR). A
 * connector answers it only with a lease (open_lease.h).
 *
 * Connector 1.3 to 1.4 carried the same as PH_OPEN_F_HTTP_FORWARD,
 * PH_OPEN_R_HTTP_PROXY and ph_open_result.http_forward (the struct
 * ph_open_http_forward below); they stay for callers and connectors
 * built against them (SDK 1.6 and older): the helpers below set and read
 * them as well.
 */
#ifndef PROXYHOST_OPEN_HTTP_FORWARD_H
#define PROXYHOST_OPEN_HTTP_FORWARD_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/connector.h>
#include <proxyhost/open_ext.h>

/* Connector 1.3 to 1.4 (SDK 1.6 and older; new code uses the extension
 * below): what ph_open_result.http_forward points to with
 * PH_OPEN_R_HTTP_PROXY. The connector owns the struct and its bytes;
 * they stay valid until the lease ends. */
struct ph_open_http_forward {
  uint32_t size; /* sizeof(ph_open_http_forward) of the connector */
  /* As proxy_authorization in ph_open_http_forward_res. */
  uint32_t proxy_authorization_len;
  const char *proxy_authorization;
  void *reserved[2]; /* zero */
};

/* In a request's chain (PH_OPEN_EXT_HTTP_FORWARD_ASK): the caller
 * forwards HTTP requests in absolute form when told. The caller's, read
 * during open() only. */
typedef struct ph_open_http_forward_ask {
  ph_open_ext ext;
} ph_open_http_forward_ask;

/* In a success's chain (PH_OPEN_EXT_HTTP_FORWARD), only to a request
 * that asked: the socket or stream goes to an HTTP forward proxy. The
 * connector owns the struct and its bytes; they stay valid until the
 * lease ends.
 *
 * proxy_authorization: the value of one Proxy-Authorization field to
 * add to every request ("Basic dXNlcjpwdw=="): visible ASCII and spaces
 * only, NUL-terminated, proxy_authorization_len bytes without the NUL.
 * NULL (and 0): the upstream takes no credentials; add nothing. It is a
 * credential: the caller writes it only into the request heads it sends
 * over this socket or stream, wipes its copies once they are sent, and
 * never logs it, counts it or shows it in an error. */
typedef struct ph_open_http_forward_res {
  ph_open_ext ext;
  uint32_t proxy_authorization_len;
  const char *proxy_authorization;
} ph_open_http_forward_res;

/* The caller: asks with x (which must live until open() returns), and
 * sets PH_OPEN_F_HTTP_FORWARD for a connector built against connector
 * 1.4 or older. */
static inline void ph_open_http_forward_request(ph_open_request *req,
                                                ph_open_http_forward_ask *x) {
  ph_open_ext_push(&req->ext, &x->ext, PH_OPEN_EXT_HTTP_FORWARD_ASK,
                   sizeof(*x));
  req->flags |= PH_OPEN_F_HTTP_FORWARD;
}

/* The caller: 1 when a success's socket or stream goes to an HTTP
 * forward proxy, with the Proxy-Authorization value to add in *auth and
 * *auth_len (NULL and 0: none); from the result's chain or, from a
 * connector built against connector 1.4 or older, from its flag and
 * http_forward. 0 (and NULL, 0) otherwise. */
static inline int ph_open_result_http_proxy(const ph_open_result *res,
                                            const char **auth,
                                            uint32_t *auth_len) {
  *auth = NULL;
  *auth_len = 0;
  const ph_open_http_forward_res *x =
      (const ph_open_http_forward_res *)ph_open_ext_find(
          ph_open_result_ext(res), PH_OPEN_EXT_HTTP_FORWARD,
          sizeof(ph_open_http_forward_res));
  if (x) {
    *auth = x->proxy_authorization;
    *auth_len = x->proxy_authorization ? x->proxy_authorization_len : 0;
    return 1;
  }
  if (res->size < offsetof(ph_open_result, flags) + sizeof(res->flags) ||
      !(res->flags & PH_OPEN_R_HTTP_PROXY))
    return 0;
  const ph_open_http_forward *f =
      res->size >= offsetof(ph_open_result, http_forward) +
                       sizeof(res->http_forward)
          ? res->http_forward
          : NULL;
  if (f && f->size >= offsetof(ph_open_http_forward, proxy_authorization) +
                          sizeof(f->proxy_authorization) &&
      f->proxy_authorization) {
    *auth = f->proxy_authorization;
    *auth_len = f->proxy_authorization_len;
  }
  return 1;
}

/* The connector: how the request asked (enum ph_open_asked bits); 0: it
 * did not. */
static inline int ph_open_http_forward_asked(const ph_open_request *req) {
  return ph_open_ext_asked(req, PH_OPEN_EXT_HTTP_FORWARD_ASK,
                           sizeof(ph_open_http_forward_ask),
                           PH_OPEN_F_HTTP_FORWARD);
}

/* The connector: says in res, in each form asked, that the stream goes
 * to an HTTP forward proxy, with the value auth (auth_len bytes, or
 * NULL): x linked into its chain, and the old flag with old pointing to
 * the value (x and old are the connector's and live until the lease
 * ends). */
static inline void ph_open_http_forward_give(ph_open_result *res,
                                             ph_open_http_forward_res *x,
                                             ph_open_http_forward *old,
                                             int asked, const char *auth,
                                             uint32_t auth_len) {
  if (asked & PH_OPEN_ASKED_EXT) {
    x->proxy_authorization = auth;
    x->proxy_authorization_len = auth ? auth_len : 0;
    ph_open_ext_push(&res->ext, &x->ext, PH_OPEN_EXT_HTTP_FORWARD,
                     sizeof(*x));
  }
  if (asked & PH_OPEN_ASKED_FLAG) {
    *old = (ph_open_http_forward){.size = sizeof(*old),
                                  .proxy_authorization = auth,
                                  .proxy_authorization_len =
                                      auth ? auth_len : 0};
    res->flags |= PH_OPEN_R_HTTP_PROXY;
    res->http_forward = old;
  }
}

#endif
