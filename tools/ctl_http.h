/* SPDX-License-Identifier: BSD-2-Clause */
/* proxyhostctl's HTTP/1.1 client for the admin listener: one request per
 * connection (the listener closes after each answer), numeric addresses
 * only, every wait bounded by a timeout, the answer bounded in size. */
#ifndef PH_CTL_HTTP_H
#define PH_CTL_HTTP_H

#include <stddef.h>

#define CTL_RESPONSE_MAX (8u << 20)

typedef struct ctl_response {
  int status;
  char *body; /* malloc'd, NUL-terminated; free it */
  size_t len;
} ctl_response;

/* Sends method path (with its query) to addr ("127.0.0.1:9470",
 * "[::1]:9470") with "Authorization: Bearer <token>" (token NULL: none)
 * and body (NULL: none) as application/json. 0 with *r filled, or -1
 * with the reason in err (the address was bad, the connection failed,
 * timed out or the answer was not HTTP): the server was not reached. */
/* 0 when addr is a numeric IPv4:PORT or [IPv6]:PORT; -1 with the reason
 * (checked before anything is sent: a usage error). */
int ctl_admin_check(const char *addr, char *err, size_t errlen);
int ctl_request(const char *addr, const char *method, const char *path,
                const char *token, const char *body, int timeout_ms,
                ctl_response *r, char *err, size_t errlen);

#endif
