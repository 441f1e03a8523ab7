/* SPDX-License-Identifier: BSD-2-Clause */
/* http_proxy, phase: replies of our own (errors, 407, CONNECT's 200), and
 * what comes once one is out: the tunnel, the next request, or a
 * lingering close. Returns what comes next. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "http_proxy_int.h"
#include "frontend/open_map.h"

/* The Proxy-Status field of an error reply (RFC 9209, issue 28): the
 * error type, and for a failed open its stage and code as details and,
 * with proxy_status.next_hop, the hop the connector named (a pool
 * proxy's id: [A-Za-z0-9._:-], nothing to escape in an sf-string). ""
 * for a reply that is no error. */
static int hop_ok(const char *id) {
  size_t n = strlen(id);
  return n > 0 && n <= PH_OPEN_UPSTREAM_ID_MAX &&
         strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                    "0123456789._:-") == n;
}

static void proxy_status(const conn *c, int status, char *out, size_t cap) {
  out[0] = '\0';
  const char *err = c->open_failed
                        ? open_map_proxy_error(c->open_stage, c->open_code)
                        : open_map_status_error(status);
  if (!err)
    return;
  int n = snprintf(out, cap, "Proxy-Status: proxyhost; error=%s", err);
  if (c->open_failed && n > 0 && (size_t)n < cap)
    n += snprintf(out + n, cap - (size_t)n, "; details=\"%s/%s\"",
                  ph_open_stage_name(c->open_stage),
                  ph_open_code_name(c->open_code));
  if (c->open_failed && c->hp->conf.next_hop && hop_ok(c->fs.open_upstream) &&
      n > 0 && (size_t)n < cap)
    n += snprintf(out + n, cap - (size_t)n, "; next-hop=\"%s\"",
                  c->fs.open_upstream);
  if (n > 0 && (size_t)n < cap)
    snprintf(out + n, cap - (size_t)n, "\r\n");
  else
    out[0] = '\0'; /* cut short: none rather than half of one */
}

/* Writes the head (and the short fixed body) of a reply of our own. The
 * body never says more than the status: no system or resolver detail;
 * an error's cause is in its Proxy-Status. */
static int format_reply(conn *c, int status, int after, char *out,
                        size_t cap) {
  const char *reason = open_map_http_reason(status);
  if (status == 200)
    return snprintf(out, cap, "HTTP/1.%d 200 %s\r\n\r\n",
                    c->req.done ? hp_head_minor(&c->req) : 1, reason);
  char body[96], ps[320];
  int blen = snprintf(body, sizeof(body), "%d %s\n", status, reason);
  int head_only = c->req.done && hp_head_method(&c->req) == HTTP_HEAD;
  proxy_status(c, status, ps, sizeof(ps));
  return snprintf(
      out, cap,
      "HTTP/1.1 %d %s\r\n%s%sContent-Type: text/plain\r\n"
      "Content-Length: %d\r\nConnection: %s\r\n\r\n%s",
      status, reason,
      status == 407 ? "Proxy-Authenticate: Basic realm=\"proxyhost\"\r\n"
                    : "",
      ps, blen, after == AFTER_NEXT ? "keep-alive" : "close",
      head_only ? "" : body);
}

int hp_reply_start(conn *c) {
  hp *h = c->hp;
  int status = c->reply_status, after = c->after;
  char msg[896];
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
