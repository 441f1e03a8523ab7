/* SPDX-License-Identifier: BSD-2-Clause */
/* The probe engine (chk_probe.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include <proxyhost/pool_store.h>

#include "chk_errno.h"
#include "chk_probe.h"
#include "lib/http1_head.h"

const char *const chk_reason_names[] = {CHK_REASONS, NULL};

enum { P_CONNECT = 1, P_HS, P_SEND, P_RECV, P_END };

static int end(chk_probe *p, int status, int reason) {
  /* The echo probed directly: its failure is the checker's own. */
  if (p->s.protocol == 0 && status != CHK_OK && reason != CHK_R_BAD_TASK) {
    status = CHK_CHECKER_ERROR;
    reason = CHK_R_ECHO_UNREACHABLE;
  }
  p->res.status = status;
  p->res.reason = reason;
  p->phase = P_END;
  chk_probe_end(p);
  return 0;
}

/* ---- the request -------------------------------------------------------- */

static int host_fmt(char *out, size_t cap, const chk_url *u, int with_port) {
  const char *l = u->v6 ? "[" : "", *r = u->v6 ? "]" : "";
  int n = with_port || u->port != 80
              ? snprintf(out, cap, "%s%s%s:%u", l, u->host, r, u->port)
              : snprintf(out, cap, "%s%s%s", l, u->host, r);
  return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* The GET (or HEAD) of p->url: origin form in a tunnel or direct,
 * absolute form to an `http` proxy with its Proxy-Authorization. */
static int build_request(chk_probe *p) {
  const char *method = p->s.tier == CHK_TIER_BASIC ? "HEAD" : "GET";
  char host[CHK_HOST_MAX + 16];
  if (host_fmt(host, sizeof(host), &p->url, 0))
    return -1;
  int with_nonce = p->s.nonce && p->s.nonce[0] &&
                   (p->s.tier == CHK_TIER_EGRESS || p->s.protocol == 0);
  const char *sep = strchr(p->url.path, '?') ? "&" : "?";
  char auth[UP_HS_PROXY_AUTH_MAX + 1];
  size_t alen = 0;
  if (p->absolute && p->s.user) {
    alen = up_hs_proxy_auth(p->s.user, p->s.user_len, p->s.pass,
                            p->s.pass_len, auth, sizeof(auth));
    if (!alen)
      return -1;
  }
  int n = snprintf(
      p->req, sizeof(p->req),
      "%s %s%s%s%s%s%s HTTP/1.1\r\nHost: %s\r\n%s%s%s%s%s%s"
      "User-Agent: proxyhost-checker\r\nAccept: application/json\r\n"
      "Connection: close\r\n\r\n",
      method, p->absolute ? "http://" : "", p->absolute ? host : "",
      p->url.path, with_nonce ? sep : "", with_nonce ? "nonce=" : "",
      with_nonce ? p->s.nonce : "", host,
      with_nonce ? "X-Proxyhost-Nonce: " : "", with_nonce ? p->s.nonce : "",
      with_nonce ? "\r\n" : "", alen ? "Proxy-Authorization: " : "",
      alen ? auth : "", alen ? "\r\n" : "");
  OPENSSL_cleanse(auth, sizeof(auth));
  if (n < 0 || (size_t)n >= sizeof(p->req)) {
    OPENSSL_cleanse(p->req, sizeof(p->req));
    return -1;
  }
  p->req_len = (size_t)n;
  p->req_off = 0;
  return 0;
}

/* ---- start -------------------------------------------------------------- */

/* What the spec asks for: where to dial, whether a tunnel and a request
 * follow. -1: a bad task. */
static int plan(chk_probe *p) {
  const chk_probe_spec *s = &p->s;
  int target_url = s->target && !strncmp(s->target, "http://", 7);
  p->get = 0;
  p->absolute = 0;
  if (s->protocol == 0) { /* direct: the echo itself */
    if (chk_url_parse(s->echo_url, &p->url) || !s->nonce || !s->nonce[0])
      return -1;
    p->get = 1;
    return 0;
  }
  if (s->protocol < PH_POOL_UPSTREAM_HTTP_CONNECT ||
      s->protocol > PH_POOL_UPSTREAM_HTTP)
    return -1;
  switch (s->tier) {
  case CHK_TIER_BASIC:
    if (s->target && s->target[0]) {
      if (target_url ? chk_url_parse(s->target, &p->url)
                     : chk_hostport_parse(s->target, &p->url))
        return -1;
    } else if (chk_url_parse(s->echo_url, &p->url)) {
      return -1;
    }
    /* An `http` proxy with a URL to fetch: a HEAD in absolute form. */
    if (s->protocol == PH_POOL_UPSTREAM_HTTP &&
        (target_url || !(s->target && s->target[0]))) {
      p->get = 1;
      p->absolute = 1;
    }
    return 0;
  case CHK_TIER_EGRESS:
    if (chk_url_parse(s->echo_url, &p->url) || !s->nonce || !s->nonce[0])
      return -1;
    p->get = 1;
    break;
  case CHK_TIER_TARGET:
    if (!s->target || !s->target[0])
      return -1;
    if (target_url) {
      if (chk_url_parse(s->target, &p->url))
        return -1;
      p->get = 1;
    } else if (chk_hostport_parse(s->target, &p->url)) {
      return -1;
    }
    break;
  default:
    return -1;
  }
  p->absolute = p->get && s->protocol == PH_POOL_UPSTREAM_HTTP;
  return 0;
}

/* Only what a check reads before it writes (a slot's probe is reused
 * check after check: the 2.4 KB request buffer and the url are written
 * before they are read, and chk_probe_end wiped the request's bytes). */
static void reset(chk_probe *p) {
  p->fd = -1;
  p->phase = 0;
  p->get = p->absolute = p->unconfirmed = 0;
  p->hs.phase = 0; /* up_hs_wipe before up_hs_init: nothing to end */
  p->hs.out_len = p->hs.out_off = 0;
  p->hs.user = p->hs.pass = NULL;
  p->req_len = p->req_off = 0;
  p->resp = NULL;
  p->resp_len = 0;
  p->local[0] = 0;
  memset(&p->res, 0, sizeof(p->res));
}

static int dial_reason(int err) {
  switch (err) {
  case ECONNREFUSED:
  case ECONNRESET:
    return CHK_R_DIAL_REFUSED;
  case ENETUNREACH:
  case EHOSTUNREACH:
    return CHK_R_DIAL_UNREACHABLE;
  case ETIMEDOUT:
    return CHK_R_DIAL_TIMEOUT;
  default:
    return CHK_R_DIAL_FAILED;
  }
}

/* A failed connect: the proxy's failure, or the checker's own
 * (chk_errno.h: no verdict). */
static int dial_end(chk_probe *p, int err) {
  if (chk_errno_local(err))
    return end(p, CHK_CHECKER_ERROR, CHK_R_NO_RESOURCES);
  return end(p, CHK_FAILED, dial_reason(err));
}

int chk_probe_prepare(chk_probe *p, const chk_probe_spec *s,
                      const char **host, uint16_t *port) {
  reset(p);
  p->s = *s;
  if (p->s.resp_max < CHK_RESP_MIN)
    p->s.resp_max = CHK_RESP_MIN;
  if (p->s.resp_max > CHK_RESP_MAX)
    p->s.resp_max = CHK_RESP_MAX;
  if (plan(p))
    return end(p, CHK_CHECKER_ERROR, CHK_R_BAD_TASK);
  *host = s->protocol ? s->proxy_host : p->url.host;
  *port = s->protocol ? s->proxy_port : p->url.port;
  if (!*host || !**host || !*port)
    return end(p, CHK_CHECKER_ERROR, CHK_R_BAD_TASK);
  p->phase = P_CONNECT;
  return 1;
}

/* A probe's socket closes with a reset (SO_LINGER 0), as HAProxy's
 * checks do: a check has nothing left to send when it closes, and a
 * reset spares both ends the FIN exchange and the checker a TIME_WAIT
 * per check (10,000 a second at the highest rate). */
static void set_linger0(int fd) {
  struct linger l = {1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
}

int chk_probe_connected(chk_probe *p, int fd) {
  if (p->phase != P_CONNECT) {
    if (fd >= 0)
      close(fd);
    return 0;
  }
  p->fd = fd;
  /* The connector's dialer set TCP_NODELAY; the close is a reset. */
  set_linger0(p->fd);
  return chk_probe_io(p, CHK_EV_WRITE);
}

void chk_probe_fail(chk_probe *p, int status, int reason) {
  if (p->phase != P_END)
    end(p, status, reason);
}

int chk_probe_start(chk_probe *p, const chk_probe_spec *s) {
  const char *host = NULL;
  uint16_t port = 0;
  if (!chk_probe_prepare(p, s, &host, &port))
    return 0;
  struct sockaddr_storage ss;
  socklen_t sl;
  memset(&ss, 0, sizeof(ss));
  struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
  struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
  if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
    a4->sin_family = AF_INET;
    a4->sin_port = htons(port);
    sl = sizeof(*a4);
  } else if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons(port);
    sl = sizeof(*a6);
  } else {
    /* No connector to resolve it: not a verdict on the proxy. */
    return end(p, CHK_CHECKER_ERROR, CHK_R_NAME);
  }
  p->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (p->fd < 0)
    return end(p, CHK_CHECKER_ERROR, CHK_R_NO_RESOURCES);
  /* No TCP_NODELAY (one system call per check less): a probe sends one
   * request at a time and the next only after the answer, which
   * acknowledges it, so Nagle never holds a segment back. As HAProxy's
   * checks: the handshake's last ACK goes with the request instead of a
   * packet of its own. */
  int zero = 0;
  setsockopt(p->fd, IPPROTO_TCP, TCP_QUICKACK, &zero, sizeof(zero));
  set_linger0(p->fd);
  if (connect(p->fd, (struct sockaddr *)&ss, sl) == 0)
    return chk_probe_io(p, CHK_EV_WRITE);
  if (errno != EINPROGRESS)
    return dial_end(p, errno);
  p->unconfirmed = 1;
  return CHK_EV_WRITE;
}

/* ---- the steps ---------------------------------------------------------- */

static int start_hs(chk_probe *p) {
  const chk_probe_spec *s = &p->s;
  if (up_hs_init(&p->hs, s->protocol, p->url.host, p->url.port,
                 s->user, s->user ? s->user_len : 0, s->pass,
                 s->user ? s->pass_len : 0) != 0)
    return end(p, CHK_CHECKER_ERROR, CHK_R_BAD_TASK);
  p->phase = P_HS;
  return -1; /* go on */
}

static int start_send(chk_probe *p) {
  if (build_request(p))
    return end(p, CHK_CHECKER_ERROR, CHK_R_BAD_TASK);
  p->phase = P_SEND;
  return -1;
}

static int after_tunnel(chk_probe *p) {
  up_hs_wipe(&p->hs);
  if (!p->get)
    return end(p, CHK_OK, CHK_R_NONE);
  return start_send(p);
}

static int after_connect(chk_probe *p) {
  if (!p->unconfirmed) { /* a connector's socket: ask */
    int err = 0;
    socklen_t el = sizeof(err);
    if (getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &err, &el) || err)
      return dial_end(p, err ? err : errno);
  }
  if (p->s.protocol == 0 || p->absolute)
    return start_send(p);
  return start_hs(p);
}

/* A send failed (not EAGAIN): the dial's failure when it was the first
 * on our own connect (a failed connect's error comes back there, so no
 * getsockopt(SO_ERROR) per check), else other_reason's. */
static int send_failed(chk_probe *p, int other_reason) {
  if (p->unconfirmed)
    return dial_end(p, errno);
  return end(p, CHK_FAILED, other_reason);
}

static int hs_reason(const chk_probe *p, up_hs_state st) {
  switch (st) {
  case UP_HS_AUTH:
    return CHK_R_AUTH_FAILED;
  case UP_HS_REFUSED:
    return p->s.tier == CHK_TIER_TARGET ? CHK_R_TARGET_UNREACHABLE
                                        : CHK_R_HS_REJECTED;
  default:
    return CHK_R_HS_MALFORMED;
  }
}

/* One round of the handshake's I/O rule: -1 go on, else the events to
 * wait for (or 0: ended). */
static int hs_step(chk_probe *p) {
  uint8_t buf[UP_HS_HEAD_MAX];
  const uint8_t *out;
  size_t n_out = up_hs_pending_out(&p->hs, &out);
  if (n_out) {
    ssize_t w = send(p->fd, out, n_out, MSG_NOSIGNAL);
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return CHK_EV_WRITE;
    if (w <= 0)
      return send_failed(p, CHK_R_HS_MALFORMED);
    p->unconfirmed = 0;
    up_hs_sent(&p->hs, (size_t)w);
    /* All sent: the answer cannot be there yet, so no recv that would
     * only say EAGAIN (one syscall per check less); the loop wakes us. */
    return up_hs_pending_out(&p->hs, &out) ? -1 : CHK_EV_READ;
  }
  size_t want = up_hs_want(&p->hs);
  if (want > sizeof(buf))
    want = sizeof(buf);
  if (!want)
    return end(p, CHK_FAILED, CHK_R_HS_MALFORMED);
  /* up_hs.h's rule peeks so that the bytes after the handshake stay for
   * the request that follows; when nothing follows (BASIC through a
   * tunnel), one recv that consumes: given at most want(), a handshake
   * not done consumes all of them, and what follows its end is not ours
   * to keep (the probe closes next). One syscall per check less. */
  int last = !p->get;
  ssize_t n = recv(p->fd, buf, want, last ? 0 : MSG_PEEK);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
    return CHK_EV_READ;
  if (n < 0)
    return end(p, CHK_FAILED, CHK_R_HS_MALFORMED);
  size_t consume = 0;
  up_hs_state st = up_hs_feed(&p->hs, buf, (size_t)n, n == 0, &consume);
  if (last ? st == UP_HS_MORE && consume != (size_t)n
           : consume && recv(p->fd, buf, consume, 0) != (ssize_t)consume)
    return end(p, CHK_FAILED, CHK_R_HS_MALFORMED);
  if (st == UP_HS_DONE)
    return after_tunnel(p);
  if (st != UP_HS_MORE) {
    p->res.http_status = p->hs.status;
    return end(p, CHK_FAILED, hs_reason(p, st));
  }
  return -1;
}

static int send_step(chk_probe *p) {
  ssize_t w = send(p->fd, p->req + p->req_off, p->req_len - p->req_off,
                   MSG_NOSIGNAL);
  if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
    return CHK_EV_WRITE;
  if (w <= 0)
    return send_failed(p, p->s.protocol ? CHK_R_PROXY_ERROR
                                        : CHK_R_ECHO_UNREACHABLE);
  p->unconfirmed = 0;
  p->req_off += (size_t)w;
  if (p->req_off < p->req_len)
    return -1;
  /* The request (and a Proxy-Authorization in it) is sent: wiped, once
   * (req_len 0: chk_probe_end has nothing left to wipe). */
  OPENSSL_cleanse(p->req, p->req_len);
  p->req_len = 0;
  p->resp = malloc(p->s.resp_max);
  if (!p->resp)
    return end(p, CHK_CHECKER_ERROR, CHK_R_NO_RESOURCES);
  p->phase = P_RECV;
  return CHK_EV_READ; /* as in hs_step: no recv before the loop says so */
}

/* p->local: the socket's own address, which the echo's answer must not
 * show; asked only when an echo's body is read (not per BASIC check). */
static void local_addr(chk_probe *p) {
  struct sockaddr_storage ss;
  socklen_t sl = sizeof(ss);
  if (getsockname(p->fd, (struct sockaddr *)&ss, &sl))
    return;
  if (ss.ss_family == AF_INET)
    inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, p->local,
              sizeof(p->local));
  else if (ss.ss_family == AF_INET6)
    inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, p->local,
              sizeof(p->local));
}

/* The whole answer is in (or the peer closed): the verdict. */
static int judge(chk_probe *p, int eof) {
  h1_head h;
  static const h1_limits lim = {8192, 65536, 65536, 256};
  size_t used = 0;
  h1_init(&h, H1_RESPONSE, H1_LF | H1_CODE_ONLY, &lim, NULL);
  int r = h1_feed(&h, p->resp, p->resp_len, &used);
  if (r == H1_MORE && !eof)
    return -1;
  int direct = p->s.protocol == 0;
  if (r != H1_DONE)
    return end(p, direct ? CHK_CHECKER_ERROR : CHK_FAILED,
               direct ? CHK_R_ECHO_UNREACHABLE : CHK_R_BAD_RESPONSE);
  p->res.http_status = h.status;
  size_t body = p->resp_len - h.head_len;
  if (p->s.tier != CHK_TIER_EGRESS && !direct) {
    /* BASIC (HEAD) and TARGET: the status line decides. */
    if (p->absolute && h.status == 407)
      return end(p, CHK_FAILED, CHK_R_AUTH_FAILED);
    if (p->s.tier == CHK_TIER_TARGET && h.status >= 500)
      return end(p, CHK_FAILED, CHK_R_TARGET_STATUS);
    return end(p, CHK_OK, CHK_R_NONE);
  }
  /* The echo's body whole: its Content-Length, else to the close. */
  if (!eof && (h.content_length < 0 ? h.te_fields == 0
                                    : (size_t)h.content_length > body))
    return -1;
  if (h.te_fields)
    return end(p, direct ? CHK_CHECKER_ERROR : CHK_FAILED,
               direct ? CHK_R_ECHO_UNREACHABLE : CHK_R_BAD_ECHO);
  if (h.content_length >= 0 && (size_t)h.content_length < body)
    body = (size_t)h.content_length;
  if (h.status != 200) {
    if (direct)
      return end(p, CHK_CHECKER_ERROR, CHK_R_ECHO_UNREACHABLE);
    if (p->absolute && h.status == 407)
      return end(p, CHK_FAILED, CHK_R_AUTH_FAILED);
    return end(p, CHK_FAILED,
               h.status >= 500 ? CHK_R_PROXY_ERROR : CHK_R_BAD_ECHO);
  }
  const char *own[17];
  size_t n_own = 0;
  local_addr(p);
  own[n_own++] = p->local;
  for (size_t i = 0; i < p->s.n_own && n_own < 17; i++)
    own[n_own++] = p->s.own[i];
  if (chk_echo_read(p->resp + h.head_len, body, p->s.nonce, own, n_own,
                    &p->res.echo))
    return end(p, direct ? CHK_CHECKER_ERROR : CHK_FAILED,
               direct ? CHK_R_ECHO_UNREACHABLE : CHK_R_BAD_ECHO);
  return end(p, CHK_OK, CHK_R_NONE);
}

static int recv_step(chk_probe *p) {
  if (p->resp_len >= p->s.resp_max)
    return end(p, p->s.protocol ? CHK_FAILED : CHK_CHECKER_ERROR,
               CHK_R_TOO_LARGE);
  ssize_t n = recv(p->fd, p->resp + p->resp_len, p->s.resp_max - p->resp_len,
                   0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
    return CHK_EV_READ;
  if (n < 0)
    return judge(p, 1);
  p->resp_len += (size_t)n;
  int r = judge(p, n == 0);
  if (r < 0 && p->resp_len >= p->s.resp_max)
    return end(p, p->s.protocol ? CHK_FAILED : CHK_CHECKER_ERROR,
               CHK_R_TOO_LARGE);
  return r;
}

int chk_probe_io(chk_probe *p, int revents) {
  (void)revents;
  for (int rounds = 0; rounds < 64; rounds++) {
    int r;
    switch (p->phase) {
    case P_CONNECT:
      r = after_connect(p);
      break;
    case P_HS:
      r = hs_step(p);
      break;
    case P_SEND:
      r = send_step(p);
      break;
    case P_RECV:
      r = recv_step(p);
      break;
    default:
      return 0;
    }
    if (r >= 0)
      return r;
  }
  return p->phase == P_RECV || p->phase == P_HS ? CHK_EV_READ : CHK_EV_WRITE;
}

void chk_probe_timeout(chk_probe *p) {
  if (p->phase == P_END)
    return;
  int reason = p->phase == P_CONNECT ? CHK_R_DIAL_TIMEOUT
               : p->phase == P_HS    ? CHK_R_HS_TIMEOUT
                                     : CHK_R_RESPONSE_TIMEOUT;
  if (p->s.protocol == 0)
    end(p, CHK_CHECKER_ERROR, CHK_R_ECHO_UNREACHABLE);
  else
    end(p, CHK_TIMEOUT, reason);
}

void chk_probe_end(chk_probe *p) {
  if (p->fd >= 0) {
    close(p->fd);
    p->fd = -1;
  }
  up_hs_wipe(&p->hs);
  if (p->req_len) /* what build_request wrote, not yet sent whole */
    OPENSSL_cleanse(p->req, p->req_len);
  p->req_len = 0;
  free(p->resp);
  p->resp = NULL;
  p->resp_len = 0;
  p->s.user = p->s.pass = NULL;
  p->s.user_len = p->s.pass_len = 0;
  if (p->phase != P_END)
    p->phase = P_END;
}
