/* SPDX-License-Identifier: BSD-2-Clause */
/* The configuration keys every frontend has, declared once with one set
 * of bounds (socks5, http_proxy, and the tunnel's and the gateway's
 * frontends after them). A frontend's key table starts with
 *   FRONTEND_KEYS("127.0.0.1:1080", "SOCKS5"),
 * then lists its own keys. frontend_check (frontend_check.h) checks the
 * values only a frontend can judge: listen parses, and auth = password has
 * an authorizer.
 *
 * listen       address:port, IPv6 as [addr]:port, numeric (restart)
 * backlog      listen(2) backlog (restart)
 * reuseport    SO_REUSEPORT, to share the port between processes (restart)
 * max_clients  concurrent client connections; more are accepted and
 *              closed at once, counted (restart)
 * buffer_size  per-direction buffer of a stream (and the splice chunk)
 * splice       zero-copy splice(2) between TCP sockets
 * auth         none, or password: checked by the "authorizer" service
 *              (restart)
 * connector    the "connector" provider to open targets with, by its
 *              instance name (direct, direct.lab); empty: the only one
 *              loaded (restart)
 * authorizer   with auth = password, the "authorizer" provider, by its
 *              instance name (auth_local.staff); empty: the only one
 *              (restart)
 * validation   the "validation" provider (validation.h) that checks each
 *              stream's credentials and target after the authorizer and
 *              before the open (remote_validation); empty: none, and no
 *              step at all (restart)
 * frontend_services (frontend_services.h) looks them up at start.
 * allow_clients  the client networks (CIDRs, IPv4 and IPv6, 1 to 64;
 *              client_acl.h) allowed to connect; others are closed at
 *              accept before a byte is read. Default loopback only. A
 *              listen address that is not loopback with auth = none needs
 *              it written out (frontend_check). Reload: new connections
 * log_target   the target (host:port, an HTTP URL) in the access line
 *              and the debug lines; off: never logged (TM-SEC)
 */
#ifndef PH_FRONTEND_KEYS_H
#define PH_FRONTEND_KEYS_H

#include <proxyhost/config.h>

#include "client_acl.h"

#define FRONTEND_KEYS(default_listen, what)                                  \
  PH_CONF_KEY("listen", PH_CONF_STRING, default_listen, 3, 128,              \
              PH_CONF_RESTART, NULL,                                         \
              "address to accept " what " clients on: IPv4:PORT or "         \
              "[IPv6]:PORT, numeric",                                        \
              NULL),                                                         \
      PH_CONF_KEY("backlog", PH_CONF_INT, "1024", 1, 65535, PH_CONF_RESTART, \
                  NULL, "listen(2) backlog", NULL),                          \
      PH_CONF_KEY("reuseport", PH_CONF_BOOL, "false", 0, 0, PH_CONF_RESTART, \
                  NULL,                                                      \
                  "SO_REUSEPORT, to share the port with other proxyhost "    \
                  "processes",                                               \
                  NULL),                                                     \
      PH_CONF_KEY("max_clients", PH_CONF_INT, "1024", 1, 1000000,            \
                  PH_CONF_RESTART, NULL,                                     \
                  "concurrent clients; more are accepted and closed at once",\
                  NULL),                                                     \
      PH_CONF_KEY("buffer_size", PH_CONF_SIZE, "256KiB", 4096, 1048576, 0,   \
                  NULL,                                                      \
                  "buffer per direction of a stream (and the splice chunk); "\
                  "taken only while bytes are in flight",                    \
                  NULL),                                                     \
      PH_CONF_KEY("splice", PH_CONF_BOOL, "true", 0, 0, 0, NULL,             \
                  "zero-copy splice(2) for bulk data between TCP sockets",   \
                  NULL),                                                     \
      PH_CONF_KEY("auth", PH_CONF_ENUM, "none", 0, 0, PH_CONF_RESTART, NULL, \
                  "client authentication: none, or password (checked by "   \
                  "the authorizer service)",                                 \
                  "none|password"),                                  \
      PH_CONF_KEY("connector", PH_CONF_STRING, "", 0, 97, PH_CONF_RESTART,  \
                  NULL,                                                      \
                  "connector instance to open targets with (direct, "       \
                  "direct.lab); empty: the only one loaded",                 \
                  NULL),                                                     \
      PH_CONF_KEY("authorizer", PH_CONF_STRING, "", 0, 97, PH_CONF_RESTART, \
                  NULL,                                                      \
                  "with auth = password: authorizer instance to check "     \
                  "passwords with (auth_local.staff); empty: the only one", \
                  NULL),                                                     \
      PH_CONF_KEY("validation", PH_CONF_STRING, "", 0, 97, PH_CONF_RESTART, \
                  NULL,                                                      \
                  "validation instance that checks each stream's "          \
                  "credentials and target before the open "                 \
                  "(remote_validation); empty: none",                        \
                  NULL),                                                     \
      PH_CONF_KEY(CLIENT_ACL_KEY, PH_CONF_LIST, CLIENT_ACL_DEFAULT, 1,       \
                  CLIENT_ACL_MAX, 0, NULL,                                   \
                  "client networks allowed to connect (CIDRs, IPv4 and "     \
                  "IPv6); others are closed at accept. Default: loopback",   \
                  NULL),                                                     \
      PH_CONF_KEY("log_target", PH_CONF_BOOL, "false", 0, 0, 0, NULL,        \
                  "write the target (host:port, URL) in the access and "     \
                  "debug lines; off by default (targets are private)",       \
                  NULL)

#endif
