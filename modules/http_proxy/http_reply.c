/* SPDX-License-Identifier: BSD-2-Clause */
/* http_proxy, phase: replies of our own (errors, 407, CONNECT's 200), and
 * what comes once one is out: the tunnel, the next request, or a
 * lingering close. Returns what comes next. */
#include <errno.h>
#include <stdio.h>
#include <sys/socket.h>

#include "http_proxy_int.h"
#include "frontend/open_map.h"

/* Writes the head (and the short fixed body) of a reply of our own. The
 * body never says more than the status: no system or resolver detail. */
static int format_reply(conn *c, int status, int after, char *out,
                        size_t cap) {
  const char *reason = open_map_http_reason(status);
  if (status == 200)
    return snprintf(out, cap, "HTTP/1.%d 200 %s\r\n\r\n",
                    c->req.done ? hp_head_minor(&c->req) : 1, reason);
  char body[96];
  int blen = snprintf(body, sizeof(body), "%d %s\n", status, reason);
  int head_only = c->req.done && hp_head_method(&c->req) == HTTP_HEAD;
  return snprintf(
      out, cap,
      "HTTP/1.1 %d %s\r\n%sContent-Type: text/plain\r\n"
      "Content-Length: %d\r\nConnection: %s\r\n\r\n%s",
      status, reason,
      status == 407 ? "Proxy-Authenticate: Basic realm=\"proxyhost\"\r\n"
                    : "",
      blen, after == AFTER_NEXT ? "keep-alive" : "close",
      head_only ? "" : body);
}

int hp_reply_start(conn *c) {
  hp *h = c->hp;
  int status = c->reply_status, after = c->after;
  char msg[512];
  int n = format_reply(c, status, after, msg, sizeof(msg));
  if (n < 0 || (size_t)n >= sizeof(msg) ||
      hp_buf_set(&c->cout, msg, (size_t)n) < 0)
    return HP_CLOSE;
  hp_count_status(c, status);
  frontend_session_cancel_open(&c->fs);
  if (frontend_session_authing(&c->fs)) {
    frontend_session_cancel_auth(&c->fs);
    hp_wipe_free(&c->cred.pending_token, &c->cred.pending_len);
  }
  if (c->state == S_EXCHANGE && after != AFTER_TUNNEL)
    hp_close_upstream(c, c->up_how); /* hp_fail_exchange's reason */
  c->state = S_REPLY;
  hp_arm_timer(c, T_IDLE, h->conf.idle_timeout_ms);
  return HP_PUMP;
}

int hp_reply_done(conn *c) {
  if (c->after == AFTER_TUNNEL)
    return HP_TUNNEL;
  hp_access_log(c);
  if (c->after == AFTER_NEXT)
    return HP_BEGIN;
  /* Lingering close: stop sending, then read and drop what the client
   * still sends for a while, so that closing does not reset the
   * connection before the client read the reply. */
  c->counted = 0; /* logged */
  hp_close_upstream(c, c->up_how);
  shutdown(c->fs.fd, SHUT_WR);
  c->state = S_LINGER;
  int64_t ms = c->hp->conf.header_timeout_ms;
  hp_arm_timer(c, T_LINGER, ms < HP_LINGER_MS ? ms : HP_LINGER_MS);
  return HP_WAIT;
}

int hp_reply_linger_read(conn *c) {
  char drop[4096];
  ssize_t n = recv(c->fs.fd, drop, sizeof(drop), 0);
  if (n > 0)
    c->lingered += (uint64_t)n;
  if (n == 0 || c->lingered > HP_LINGER_BYTES ||
      (n < 0 && errno != EAGAIN && errno != EINTR))
    return HP_CLOSE;
  return HP_WAIT;
}
