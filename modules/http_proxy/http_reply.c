/* http_proxy: replies of our own (errors, 407, CONNECT's 200), and what
 * comes once one is out: the tunnel, the next request, or a lingering
 * close. */
#include <stdio.h>
#include <sys/socket.h>

#include "http_proxy_int.h"
#include "open_map.h"

/* Writes the head (and the short fixed body) of a reply of our own. The
 * body never says more than the status: no system or resolver detail. */
static int format_reply(conn *c, int status, int after, char *out,
                        size_t cap) {
  const char *reason = open_map_http_reason(status);
  if (status == 200)
    return snprintf(out, cap, "HTTP/1.%d 200 %s\r\n\r\n",
                    c->req.done ? hh_minor(&c->req) : 1, reason);
  char body[96];
  int blen = snprintf(body, sizeof(body), "%d %s\n", status, reason);
  int head_only = c->req.done && hh_method(&c->req) == HTTP_HEAD;
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

int reply(conn *c, int status, int after) {
  hp *h = c->hp;
  if (conn_dead(c))
    return GONE;
  char msg[512];
  int n = format_reply(c, status, after, msg, sizeof(msg));
  if (n < 0 || (size_t)n >= sizeof(msg) ||
      buf_set(&c->cout, msg, (size_t)n) < 0)
    return conn_close(c);
  count_status(c, status);
  if (c->open_id > 0) {
    h->connector->cancel(h->connector_self, c->open_id);
    c->open_id = 0;
  }
  if (c->auth_id > 0) {
    h->authorizer->cancel(h->authorizer_self, c->auth_id);
    c->auth_id = 0;
    wipe_free(&c->pending_token, &c->pending_len);
  }
  if (c->state == S_EXCHANGE && after != AFTER_TUNNEL)
    close_upstream(c);
  c->state = S_REPLY;
  c->after = after;
  arm_timer(c, T_IDLE, h->conf.idle_timeout_ms);
  return client_step(c);
}

/* An error before any response byte reached the client gets a status;
 * after that, only closing tells the client. */
int fail_exchange(conn *c, int status) {
  if (conn_dead(c))
    return GONE;
  if (c->resp_started)
    return conn_close(c);
  return reply(c, status, AFTER_CLOSE);
}

int reply_done(conn *c) {
  if (c->after == AFTER_TUNNEL)
    return start_tunnel(c);
  if (c->after == AFTER_NEXT) {
    access_log(c);
    return begin_head(c);
  }
  /* Lingering close: stop sending, then read and drop what the client
   * still sends for a while, so that closing does not reset the
   * connection before the client read the reply. */
  access_log(c);
  c->counted = 0; /* logged */
  close_upstream(c);
  shutdown(c->cfd, SHUT_WR);
  c->state = S_LINGER;
  int64_t ms = c->hp->conf.header_timeout_ms;
  arm_timer(c, T_LINGER, ms < LINGER_MS ? ms : LINGER_MS);
  update_io(c);
  return 0;
}
