/* SPDX-License-Identifier: BSD-2-Clause */
/* remote_validation: the HTTP client. libcurl's multi interface driven by
 * the host's loop (CURLMOPT_SOCKETFUNCTION and CURLMOPT_TIMERFUNCTION on
 * ph_io and ph_timer, curl_multi_socket_action): no thread of its own, a
 * pool of kept-alive connections per client, HTTP/2 multiplexing on TLS
 * when the endpoint offers it (TM-P1-42), certificates checked against
 * the system's store or ca_file. One client per configuration of the
 * endpoint: a reload that changes it makes a new one and retires the old,
 * which closes its connections once its last request ended (TM-P1-40).
 * The response body is read and dropped, never kept or logged; only the
 * status decides. Loop thread only. */
#ifndef PH_RV_HTTP_H
#define PH_RV_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/host.h>

/* What one POST came to. */
enum rv_outcome {
  RV_OUT_ALLOW = 0, /* 2xx */
  RV_OUT_DENY,      /* 401, 403 */
  RV_OUT_ERROR      /* anything else: another status, a timeout, no
                       connection, TLS, the in-flight bound */
};

typedef struct rv_http rv_http;
typedef struct rv_http_req rv_http_req;

typedef struct rv_http_conf {
  const char *endpoint;   /* http(s) URL, checked by the caller */
  const char *token;      /* bearer token, NULL: no Authorization */
  const char *ca_file;    /* NULL or "": the system's store */
  int64_t timeout_ms;     /* the whole request */
  size_t max_inflight;    /* requests at once; more: RV_OUT_ERROR */
} rv_http_conf;

/* Called once per accepted request, on the loop, never inside
 * rv_http_post, never after rv_http_free. */
typedef void (*rv_http_done_fn)(void *arg, int outcome);

/* NULL when out of memory or libcurl refuses. The token is copied (and
 * wiped when the client is freed). */
rv_http *rv_http_new(const ph_api *api, ph_ctx *ctx, const rv_http_conf *c);
/* POSTs body (application/json), which the caller keeps unchanged until
 * done ran (or the client was freed). PH_OK, PH_EFULL at max_inflight,
 * PH_ENOMEM. */
int rv_http_post(rv_http *h, const char *body, size_t len,
                 rv_http_done_fn done, void *arg);
/* Requests in flight. */
size_t rv_http_inflight(const rv_http *h);
/* Retires the client: no new requests; it frees itself (closing every
 * connection) once the last in flight ended (their done calls come as
 * usual), at once when none is, and then calls gone(arg, h) if not NULL.
 * rv_http_free still frees it before that (no gone call then). */
void rv_http_retire(rv_http *h, void (*gone)(void *arg, rv_http *h),
                    void *arg);
/* Aborts what is in flight (no done calls), closes every connection and
 * frees the client. NULL is ignored. */
void rv_http_free(rv_http *h);

#endif
