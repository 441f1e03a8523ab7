/* SPDX-License-Identifier: BSD-2-Clause */
/* The frontends' access line: one per SOCKS5 stream, per forwarded HTTP
 * request and per CONNECT tunnel, at info, with one shape for every
 * frontend (docs/user-guide/local.md, "Logs"):
 *
 *   msg=access stream=7 client=127.0.0.1:40112 user=- method=CONNECT
 *   status=succeeded status_code=0 result=success bytes_up=518 bytes_down=3012
 *   duration_us=5123 end=closed [target=example.com:443]
 *   [url=http://example.com/path]
 *
 * stream is the session's id (frontend_session.h): the frontend's debug
 * lines about it carry the same "stream" field. target and url are
 * written only when the frontend's log_target key is true (off by
 * default: TM-SEC-9, the seeds never log targets otherwise); the url
 * never has its query. No credentials ever: user is the authenticated
 * principal, or "-". */
#ifndef PH_ACCESS_LOG_H
#define PH_ACCESS_LOG_H

#include <stdint.h>
#include <sys/socket.h>

#include "frontend_session.h"

typedef struct access_line {
  const char *method; /* "CONNECT", "GET", ...; NULL: "-" */
  const char *user;   /* the authenticated user; NULL or "": "-" */
  const char *status; /* SOCKS5 reply name, HTTP status text; NULL: "-" */
  int64_t code;       /* SOCKS5 reply code, HTTP status; -1: none */
  const char *result; /* success, failure, timeout, rejected, ... */
  const char *end;    /* how the stream ended, or NULL: "-" */
  uint64_t bytes_up, bytes_down;
  int64_t duration_us;
  /* The target: logged only with log_target. host NULL: none. */
  const char *host;
  int port;
  const char *path; /* HTTP absolute-form: the path, without the query */
  size_t path_len;
} access_line;

/* "ip:port" or "[ip6]:port" (IPv4-mapped IPv6 as IPv4); "-" for none. */
#define ACCESS_PEER_TEXT 56
const char *access_peer_text(const struct sockaddr_storage *peer,
                             char out[ACCESS_PEER_TEXT]);
/* "host:port" or "[v6]:port" into out (bounded). */
const char *access_target_text(const char *host, int port, char *out,
                               size_t outlen);
/* Writes the line for session s (its stream id, its client) at info,
 * rate-limited when rl is not NULL (lines of connections that never got
 * to a request). */
void access_log_write(const frontend_session *s, const access_line *l,
                      int rate_limited);
/* The SOCKS5 reply code's name (RFC 1928): "succeeded",
 * "general_failure", ...; "-" for -1, "unknown" otherwise. */
const char *access_socks5_reply_name(int code);

#endif
