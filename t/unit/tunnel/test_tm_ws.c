/* SPDX-License-Identifier: BSD-2-Clause */
/* tm_ws (libwebsockets on the host's loop) through the mock host's real
 * loop: a server and clients in one process, with an echo stand-in for
 * tm_session (tm_ws_stubs.c). Whole binary messages both ways up to
 * max_message, one more byte closing with 1009; every combination of
 * server and client capabilities choosing the expected subprotocol
 * (TM-PROTO-14..16, TM-TEST-2) and an old server answering none; the
 * bearer header exactly, and never in the request line; wss with a CA
 * and certificates made at test time, a wrong CA and a wrong name
 * refused; plain ws off loopback refused (no packet sent); reading
 * paused until resume; 100 connect/close cycles leaving no fd; tm_ws_free
 * with live connections; raw clients for the path check, no offer, text
 * frames; a raw server answering no name, an offered one, one never
 * offered and an unknown one; the URL parser and the backoff. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ev.h>
#include <lws_config.h> /* LWS_LIBRARY_VERSION_MAJOR */
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>

#include "lib/backoff.h"
#include <proxyhost/mock.h>
#include "host_test.h"
#include "loop_test.h"
#include "sock_test.h"
#include "tap.h"
#include "tunnel_common/session/tm_ws.h"
#include "tm_ws_stubs.h"
#include "tunnel_common/session/tm_ws_url.h"

#ifndef TM_TEST_SRCDIR
#define TM_TEST_SRCDIR "."
#endif

#define BAIL_OUT(msg)                                                          \
  do {                                                                         \
    printf("Bail out! %s\n", (msg));                                           \
    exit(1);                                                                   \
  } while (0)

HOST_TEST_MODULE("tm_ws_host");

/* ---- what the handlers saw --------------------------------------------- */

#define MAXC 128

typedef struct rec {
  int accepts, connected, connect_errors, srv_closed, cli_closed;
  tm_ws_conn *srv_c, *cli_c;
  char bearer[256];
  size_t bearer_len;
  const char *srv_sub, *cli_sub;
  int no_resume; /* the server leaves reading paused */
  int accept_rc; /* what on_accept answers */
  tm_session *srv_s[MAXC], *cli_s[MAXC];
  int n_srv_s, n_cli_s;
  char peer[64];
} rec;

static int srv_accept(void *arg, tm_ws_conn *c, const char *bearer, size_t len,
                      const char *subproto, const char *peer) {
  rec *r = arg;
  r->accepts++;
  r->srv_c = c;
  r->bearer_len = len;
  if (len < sizeof(r->bearer)) {
    memcpy(r->bearer, bearer ? bearer : "", len);
    r->bearer[len] = '\0';
  }
  r->srv_sub = subproto;
  snprintf(r->peer, sizeof(r->peer), "%s", peer ? peer : "");
  if (r->accept_rc < 0)
    return -1;
  tm_session *s = stub_session_new(c, 1);
  if (r->n_srv_s < MAXC)
    r->srv_s[r->n_srv_s++] = s;
  tm_ws_conn_bind(c, s);
  tm_ws_conn_set_user(c, s);
  if (!r->no_resume)
    tm_ws_conn_resume(c);
  return 0;
}

static void cli_connected(void *arg, tm_ws_conn *c, const char *subproto) {
  rec *r = arg;
  r->connected++;
  r->cli_c = c;
  r->cli_sub = subproto;
  tm_session *s = stub_session_new(c, 0);
  if (r->n_cli_s < MAXC)
    r->cli_s[r->n_cli_s++] = s;
  tm_ws_conn_bind(c, s);
  tm_ws_conn_set_user(c, s);
}

static void cli_error(void *arg, tm_ws_conn *c) {
  rec *r = arg;
  r->connect_errors++;
  if (r->cli_c == c)
    r->cli_c = NULL;
}

static void on_closed(void *arg, tm_ws_conn *c) {
  rec *r = arg;
  tm_session *s = tm_ws_conn_user(c);
  int client = 0;
  for (int i = 0; i < r->n_cli_s; i++)
    if (r->cli_s[i] == s)
      client = 1;
  if (client)
    r->cli_closed++;
  else
    r->srv_closed++;
  if (r->srv_c == c)
    r->srv_c = NULL;
  if (r->cli_c == c)
    r->cli_c = NULL;
}

static const tm_ws_handlers handlers = {
    .on_accept = srv_accept,
    .on_connected = cli_connected,
    .on_connect_error = cli_error,
    .on_closed = on_closed,
};

static void rec_reset(rec *r) {
  for (int i = 0; i < r->n_srv_s; i++)
    stub_session_free(r->srv_s[i]);
  for (int i = 0; i < r->n_cli_s; i++)
    stub_session_free(r->cli_s[i]);
  memset(r, 0, sizeof(*r));
}

/* The end of a test's client and server: both freed, the record reset. */
static void pair_free(rec *r, tm_ws *cw, tm_ws *sw) {
  tm_ws_free(cw);
  tm_ws_free(sw);
  rec_reset(r);
}

static tm_ws_cfg base_cfg(const char *listen, unsigned caps) {
  tm_ws_cfg c = {.listen = listen,
                 .caps = caps,
                 .max_message = TM_MAX_FRAME,
                 .path = "/tunnel"};
  return c;
}

static tm_ws *server_new(rec *r, unsigned caps, int legacy) {
  const char *err = NULL;
  tm_ws_cfg c = base_cfg("127.0.0.1:0", caps);
  c.legacy_no_subprotocol = legacy;
  tm_ws *w = tm_ws_new(api, hctx, &c, &handlers, r, &err);
  if (!w)
    diag("server: %s", err);
  return w;
}

static tm_ws *client_new(rec *r, unsigned caps, const char *ca) {
  const char *err = NULL;
  tm_ws_cfg c = base_cfg(NULL, caps);
  c.ca_file = ca;
  tm_ws *w = tm_ws_new(api, hctx, &c, &handlers, r, &err);
  if (!w)
    diag("client: %s", err);
  return w;
}

static tm_ws_conn *connect_to(tm_ws *cw, const char *scheme, const char *host,
                              int port, const char *path, const char *bearer) {
  char url[256];
  const char *err = NULL;
  snprintf(url, sizeof(url), "%s://%s:%d%s", scheme, host, port, path);
  tm_ws_conn *c = tm_ws_connect(cw, url, bearer, &err);
  if (!c)
    diag("connect %s: %s", url, err);
  return c;
}

/* ---- fds ---------------------------------------------------------------- */

static int count_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (e->d_name[0] != '.')
      n++;
  if (d)
    closedir(d);
  return n;
}

/* ---- a raw TCP peer, served by the loop -------------------------------- */

/* One step of a raw peer served beside the loop: runs the loop once,
 * accepts from ls while *fd < 0 (pausing 5 ms when nothing came), then
 * reads what arrived within 10 ms into req (NUL-terminated, cap bytes with
 * the NUL, *got so far). 0 to go on; -1 once the peer closed or failed. */
static int raw_step(int ls, int *fd, char *req, size_t cap, size_t *got) {
  ev_run(loop, EVRUN_NOWAIT);
  if (*fd < 0)
    *fd = accept(ls, NULL, NULL);
  if (*fd < 0) {
    poll(NULL, 0, 5);
    return 0;
  }
  struct pollfd p = {.fd = *fd, .events = POLLIN};
  if (poll(&p, 1, 10) > 0) {
    ssize_t n = read(*fd, req + *got, cap - 1 - *got);
    if (n <= 0)
      return -1;
    *got += (size_t)n;
    req[*got] = '\0';
  }
  return 0;
}

/* Connects to 127.0.0.1:port, writes req (len bytes), then reads until
 * "\r\n\r\n" plus extra bytes, the peer closes, or the safety bound
 * passes. The answer into out (NUL-terminated); returns its length. */
static int raw_exchange(int port, const void *req, size_t len, char *out,
                        size_t cap, size_t extra, int *fd_keep) {
  int fd = sock_test_dial(port, 0);
  size_t got = 0;
  if (fd < 0)
    return -1;
  if (write(fd, req, len) != (ssize_t)len) {
    close(fd);
    return -1;
  }
  fcntl(fd, F_SETFL, O_NONBLOCK);
  for (int i = 0; i < 1000 && got + 1 < cap; i++) {
    ev_run(loop, EVRUN_NOWAIT);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 10) <= 0)
      continue;
    ssize_t n = read(fd, out + got, cap - 1 - got);
    if (n <= 0)
      break;
    got += (size_t)n;
    out[got] = '\0';
    char *eoh = strstr(out, "\r\n\r\n");
    if (eoh && (size_t)(out + got - (eoh + 4)) >= extra)
      break;
  }
  out[got] = '\0';
  if (fd_keep)
    *fd_keep = fd;
  else
    close(fd);
  return (int)got;
}

#define UPGRADE_HEAD(path, extra)                                              \
  "GET " path " HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"         \
  "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"     \
  "Sec-WebSocket-Version: 13\r\n" extra "\r\n"

/* ---- cases --------------------------------------------------------------- */

static void test_messages(void) {
  rec r = {0};
  tm_ws *sw = server_new(&r, TM_CAP_ALL, 0);
  tm_ws *cw = client_new(&r, TM_CAP_ALL, NULL);
  ok(sw && cw, "a server and a client context on the host's loop");
  if (!sw || !cw)
    return;
  int port = tm_ws_port(sw);
  ok(port > 0 && port < 65536, "listen port 0 picks a port (tm_ws_port)");
  tm_ws_conn *c = connect_to(cw, "ws", "127.0.0.1", port, "/tunnel", "tok-1");
  ok(c != NULL, "tm_ws_connect starts a connection");
  ok(poll_until(loop, r.connected >= 1, 10000) && r.accepts == 1,
     "the client connects and the server accepts it");
  like(r.peer, "127.0.0.1", "on_accept gets the peer address");

  /* Messages both ways: 1 byte, 64 KiB + 10 (= max_message), 3 in a row */
  static uint8_t big[TM_MAX_FRAME + 1];
  for (size_t i = 0; i < sizeof(big); i++)
    big[i] = (uint8_t)(i * 7 + 3);
  tm_session *cs = r.cli_s[0], *ss = r.srv_s[0];
  stub_session_send(cs, (const uint8_t *)"x", 1);
  ok(poll_until(loop, cs->messages >= 1, 10000) && cs->last_len == 1 &&
         cs->last[0] == 'x',
     "a 1-byte message goes to the server and is echoed back whole");
  stub_session_send(cs, big, TM_MAX_FRAME);
  ok(poll_until(loop, cs->messages >= 2, 10000) &&
         ss->last_len == TM_MAX_FRAME &&
         ss->last_sum == stub_sum(big, TM_MAX_FRAME),
     "a 64 KiB + 10 message arrives whole at the server (TM-PROTO-1)");
  ok(cs->last_len == TM_MAX_FRAME &&
         cs->last_sum == stub_sum(big, TM_MAX_FRAME),
     "and whole back at the client");
  for (int i = 0; i < 3; i++)
    stub_session_send(cs, big + i, 100 + (size_t)i);
  ok(poll_until(loop, cs->messages >= 5, 10000) && cs->last_len == 102 &&
         cs->last_sum == stub_sum(big + 2, 102),
     "three messages in a row arrive in order, one per writable event");
  ok(ss->write_errors == 0 && cs->write_errors == 0, "no write failed");

  /* max_message + 1: the server closes with 1009 */
  stub_session_send(cs, big, TM_MAX_FRAME + 1);
  ok(poll_until(loop, r.cli_closed >= 1, 10000) &&
         poll_until(loop, r.srv_closed >= 1, 10000),
     "a message of max_message + 1 bytes closes the connection (1009)");
  is_int(ss->messages, 5, "the oversized message was not delivered");
  ok(ss->closed == 1 && cs->closed == 1,
     "both sessions see on_transport_closed once");
  tm_ws_free(cw);
  tm_ws_free(sw);
  is_int(r.srv_closed + r.cli_closed, 2,
         "freeing closed contexts calls nothing");
  rec_reset(&r);
}

static const char *expected_name(unsigned s, unsigned c) {
  unsigned of = TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL;
  unsigned oft = of | TM_CAP_TRACE;
  if ((s & oft) == oft && (c & oft) == oft)
    return TM_SUBPROTO_TRACE;
  if ((s & of) == of && (c & of) == of)
    return TM_SUBPROTO_FULL;
  if ((s & TM_CAP_OPEN_RESULT) && (c & TM_CAP_OPEN_RESULT))
    return TM_SUBPROTO_OPEN;
  return TM_SUBPROTO_BASE;
}

static void test_subprotocols(void) {
  const unsigned set[4] = {0, TM_CAP_OPEN_RESULT, TM_CAP_FLOW_CONTROL,
                           TM_CAP_ALL};
  int good = 0, both = 0;
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) {
      rec r = {0};
      tm_ws *sw = server_new(&r, set[i], 0);
      tm_ws *cw = client_new(&r, set[j], NULL);
      if (sw && cw &&
          connect_to(cw, "ws", "127.0.0.1", tm_ws_port(sw), "/tunnel", "t") &&
          poll_until(loop, r.connected >= 1, 10000)) {
        const char *want = expected_name(set[i], set[j]);
        if (r.cli_sub && !strcmp(r.cli_sub, want))
          good++;
        else
          diag("server caps %u client caps %u: got %s want %s", set[i], set[j],
               r.cli_sub ? r.cli_sub : "(none)", want);
        if (r.srv_sub && r.cli_sub && !strcmp(r.srv_sub, r.cli_sub))
          both++;
      }
      pair_free(&r, cw, sw);
    }
  is_int(good, 16,
         "TM-PROTO-14/15, TM-TEST-2: each of 16 server x client capability "
         "sets chooses the first offered name the server has");
  is_int(both, 16, "the server's on_accept names the same choice");

  /* An old server: no Sec-WebSocket-Protocol in the answer. */
  rec r = {0};
  tm_ws *sw = server_new(&r, TM_CAP_ALL, 1);
  tm_ws *cw = client_new(&r, TM_CAP_ALL, NULL);
  for (int k = 0; k < 2; k++) {
    int before = r.connected;
    ok(sw && cw &&
           connect_to(cw, "ws", "127.0.0.1", tm_ws_port(sw), "/tunnel", "t") &&
           poll_until(loop, r.connected >= (before + 1), 10000) &&
           r.cli_sub == NULL && r.srv_sub == NULL,
       k == 0 ? "TM-PROTO-16, TM-TEST-2: legacy_no_subprotocol answers none; "
                "the client sees NULL (legacy)"
              : "and again on a second connection (the names are restored)");
  }
  char out[2048];
  int n = raw_exchange(
      tm_ws_port(sw),
      UPGRADE_HEAD("/tunnel", "Sec-WebSocket-Protocol: tunnelmesh.v1\r\n"),
      sizeof(UPGRADE_HEAD("/tunnel", "Sec-WebSocket-Protocol: "
                                     "tunnelmesh.v1\r\n")) -
          1,
      out, sizeof(out), 0, NULL);
  ok(n > 0 && strstr(out, " 101 ") &&
         !strcasestr(out, "Sec-WebSocket-Protocol"),
     "the old server's 101 carries no Sec-WebSocket-Protocol at all");
  pair_free(&r, cw, sw);
}

static void test_bearer(void) {
  rec r = {0};
  tm_ws *sw = server_new(&r, TM_CAP_ALL, 0);
  tm_ws *cw = client_new(&r, TM_CAP_ALL, NULL);
  const char *tok = "tm_abcDEF012.secret-part_xyz";
  ok(connect_to(cw, "ws", "127.0.0.1", tm_ws_port(sw), "/tunnel", tok) &&
         poll_until(loop, r.accepts >= 1, 10000),
     "a connection with a bearer token");
  ok(r.bearer_len == strlen(tok) && !strcmp(r.bearer, tok),
     "on_accept gets exactly the token from Authorization: Bearer");
  ok(connect_to(cw, "ws", "127.0.0.1", tm_ws_port(sw), "/tunnel", NULL) &&
         poll_until(loop, r.accepts >= 2, 10000) && r.bearer_len == 0,
     "no token: on_accept gets length 0");
  ok(connect_to(cw, "ws", "127.0.0.1", tm_ws_port(sw), "/tunnel", "") &&
         poll_until(loop, r.accepts >= 3, 10000) && r.bearer_len == 0,
     "a blank token: no header, length 0");
  const char *err = NULL;
  ok(!tm_ws_connect(cw, "ws://127.0.0.1:1/tunnel", "a b", &err) && err,
     "a token with a space is refused before anything is sent");
  pair_free(&r, cw, sw);

  /* What goes on the wire: a raw listener reads the client's request. */
  int lport;
  int ls = sock_test_listen(&lport, 4, 1);
  if (ls < 0)
    BAIL_OUT("raw listener");
  cw = client_new(&r, TM_CAP_ALL, NULL);
  ok(connect_to(cw, "ws", "127.0.0.1", lport, "/tunnel?x=1", tok) != NULL,
     "a client towards a raw listener");
  char req[4096] = "";
  size_t got = 0;
  int fd = -1;
  for (int i = 0; i < 1000 && !strstr(req, "\r\n\r\n"); i++)
    if (raw_step(ls, &fd, req, sizeof(req), &got) < 0)
      break;
  char *eol = strstr(req, "\r\n");
  ok(eol && !strncmp(req, "GET /tunnel?x=1 HTTP/1.1\r\n", 26),
     "the request line is the path only");
  ok(eol && !memmem(req, (size_t)(eol - req), tok, strlen(tok)),
     "the token is never in the request line");
  char want[256];
  snprintf(want, sizeof(want), "\r\nAuthorization: Bearer %s\r\n", tok);
  const char *h1 = strcasestr(req, "\r\nauthorization:");
  ok(h1 && !strncasecmp(h1, want, strlen(want)) &&
         !strcasestr(h1 + 2, "\r\nauthorization:"),
     "exactly one Authorization: Bearer header with the token");
  /* The offer's names, split at commas and spaces, in order. */
  char names[4][64] = {"", "", "", ""};
  int nn = 0;
  const char *po = strcasestr(req, "\r\nSec-WebSocket-Protocol:");
  if (po) {
    po += 25;
    while (*po && *po != '\r' && nn < 4) {
      while (*po == ' ' || *po == ',')
        po++;
      size_t k = strcspn(po, ", \r");
      if (k && k < sizeof(names[0])) {
        memcpy(names[nn], po, k);
        names[nn++][k] = '\0';
      }
      po += k;
    }
  }
  ok(nn == 4 && !strcmp(names[0], TM_SUBPROTO_TRACE) &&
         !strcmp(names[1], TM_SUBPROTO_FULL) &&
         !strcmp(names[2], TM_SUBPROTO_OPEN) &&
         !strcmp(names[3], TM_SUBPROTO_BASE) && po && *po == '\r',
     "TM-PROTO-14: the offer in priority order, tunnelmesh.v1 last");
  if (fd >= 0)
    close(fd);
  ok(poll_until(loop, r.connect_errors >= 1, 10000),
     "the refused handshake is a connect "
     "error, from the loop");
  close(ls);
  tm_ws_free(cw);
  rec_reset(&r);
}

/* A raw WebSocket "server" on a loopback socket answering the client's
 * upgrade with a chosen Sec-WebSocket-Protocol line (or none): what lws
 * and tm_ws do with an answer the real server never gives. */
static int raw_server_answer(int port_fd, const char *proto_line, rec *r,
                             int want_connected) {
  char req[4096];
  size_t got = 0;
  int fd = -1, answered = 0;
  req[0] = '\0';
  for (int i = 0; i < 1000 && !answered; i++) {
    if (raw_step(port_fd, &fd, req, sizeof(req), &got) < 0)
      break;
    if (!strstr(req, "\r\n\r\n"))
      continue;
    const char *k = strcasestr(req, "\r\nSec-WebSocket-Key: ");
    if (!k)
      break;
    k += 21;
    char key[128];
    size_t kl = strcspn(k, "\r");
    if (kl >= 64)
      break;
    memcpy(key, k, kl);
    memcpy(key + kl, "258EAFA5-E914-47DA-95CA-C5AB0DC85B11", 37);
    unsigned char sha[SHA_DIGEST_LENGTH];
    SHA1((const unsigned char *)key, strlen(key), sha);
    unsigned char acc[64];
    EVP_EncodeBlock(acc, sha, SHA_DIGEST_LENGTH);
    char ans[512];
    int n =
        snprintf(ans, sizeof(ans),
                 "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                 "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n%s\r\n",
                 (const char *)acc, proto_line);
    answered = write(fd, ans, (size_t)n) == n;
  }
  int okc = want_connected ? poll_until(loop, r->connected >= 1, 10000)
                           : poll_until(loop, r->connect_errors >= 1, 10000);
  if (fd >= 0)
    close(fd);
  return answered && okc;
}

static void test_client_answers(void) {
  int port;
  int ls = sock_test_listen(&port, 4, 1);
  if (ls < 0)
    BAIL_OUT("raw listener");
  static const struct {
    unsigned caps;
    const char *line;
    int connects;
    const char *want, *name;
  } cases[] = {
      {TM_CAP_ALL, "", 1, NULL,
       "TM-PROTO-16: a 101 without Sec-WebSocket-Protocol: connected, legacy "
       "(NULL)"},
      {TM_CAP_ALL, "Sec-WebSocket-Protocol: tunnelmesh.v1.open-result\r\n", 1,
       TM_SUBPROTO_OPEN, "a 101 naming an offered name: that name"},
      {0, "Sec-WebSocket-Protocol: tunnelmesh.v1.open-result.flow-control\r\n",
       0, NULL,
       "TM-PROTO-15: a name the client never offered is refused (closed)"},
      {TM_CAP_ALL, "Sec-WebSocket-Protocol: chat\r\n", 0, NULL,
       "an unknown name in the answer is refused"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    rec r = {0};
    tm_ws *cw = client_new(&r, cases[i].caps, NULL);
    connect_to(cw, "ws", "127.0.0.1", port, "/tunnel", "t");
    int fine = raw_server_answer(ls, cases[i].line, &r, cases[i].connects);
    if (cases[i].connects)
      fine = fine && r.connected == 1 &&
             (cases[i].want ? r.cli_sub && !strcmp(r.cli_sub, cases[i].want)
                            : r.cli_sub == NULL);
    else
      fine = fine && r.connected == 0;
    ok(fine, cases[i].name);
    tm_ws_free(cw);
    rec_reset(&r);
  }
  close(ls);
}

static void test_refusals(void) {
  rec r = {0};
  const char *err = NULL;
  tm_ws *cw = client_new(&r, TM_CAP_ALL, NULL);
  tm_ws_conn *c = tm_ws_connect(cw, "ws://192.0.2.1:80/tunnel", "t", &err);
  ok(!c && err && strstr(err, "plain"),
     "plain ws to 192.0.2.1 is refused in tm_ws_connect (nothing sent)");
  ok(!tm_ws_connect(cw, "ws://user:pw@127.0.0.1/tunnel", "t", &err),
     "a URL with user information is refused");
  ok(!tm_ws_connect(cw, "http://127.0.0.1/tunnel", "t", &err),
     "a URL that is not ws:// or wss:// is refused");
  ok(!tm_ws_connect(cw, "wss://[::1]:443/tunnel", "t", &err),
     "wss to an IPv6 literal is refused (lws 4.1 cannot check its name)");
  spin_for(loop, 50);
  is_int(r.connect_errors, 0, "a refused URL reports no connect error");
  tm_ws_free(cw);

  tm_ws_cfg cfg = base_cfg("0.0.0.0:0", TM_CAP_ALL);
  ok(!tm_ws_new(api, hctx, &cfg, &handlers, &r, &err) && strstr(err, "plain"),
     "a plain ws server on 0.0.0.0 is refused without allow_plain");
  cfg.listen = "127.0.0.1";
  ok(!tm_ws_new(api, hctx, &cfg, &handlers, &r, &err),
     "a listen address without a port is refused");
  cfg.listen = "127.0.0.1:0";
  cfg.max_message = TM_MAX_FRAME + 1;
  ok(!tm_ws_new(api, hctx, &cfg, &handlers, &r, &err),
     "max_message above the protocol's frame is refused");
  cfg.max_message = TM_MAX_FRAME;
  cfg.cert_file = "/nonexistent/cert.pem";
  cfg.key_file = "/nonexistent/key.pem";
  ok(!tm_ws_new(api, hctx, &cfg, &handlers, &r, &err) && strstr(err, "TLS"),
     "a certificate that cannot be read is refused");
  rec_reset(&r);
}

/* Runs the loop until a close frame arrives on the raw socket fd (or EOF,
 * or the bound); its status code, or -1. */
static int read_close_code(int fd) {
  uint8_t fr[64];
  ssize_t got = 0;
  for (int i = 0; i < 1000 && got < 4; i++) {
    ev_run(loop, EVRUN_NOWAIT);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 10) > 0) {
      ssize_t n = read(fd, fr + got, sizeof(fr) - (size_t)got);
      if (n <= 0)
        break;
      got += n;
    }
  }
  return got >= 4 && fr[0] == 0x88 ? (fr[2] << 8) | fr[3] : -1;
}

/* Issue 22 item 6: an unmasked client frame is a protocol error (RFC 6455
 * 5.1): closed with 1002, never delivered. libwebsockets 4.x's ws role
 * delivered it, and its API does not say whether a frame was masked; the
 * server end is our own RFC 6455 on a raw listener since
 * (tm_ws_server.c). */
static void unmasked_frame(int port, rec *r, const char *good, size_t len) {
  static const char *const name =
      "issue 22 item 6: an unmasked client frame closes with 1002";
  char out[4096];
  int fd = -1;
  ok(raw_exchange(port, good, len, out, sizeof(out), 0, &fd) > 0 &&
         strstr(out, " 101 "),
     "another raw client upgrades");
  ok(poll_until(loop, r->accepts >= 2, 10000), "and is accepted");
  static const uint8_t unmasked[] = {0x82, 0x02, 'h', 'i'};
  ok(write(fd, unmasked, sizeof(unmasked)) == (ssize_t)sizeof(unmasked),
     "sent an unmasked binary frame");
  is_int(read_close_code(fd), 1002, name);
  ok(poll_until(loop, r->srv_closed >= 2, 10000) && r->srv_s[1]->messages == 0,
     "the unmasked message was never delivered; on_closed ran");
  is_int(r->srv_s[1]->proto_errors, 1,
         "the bound session was told it is a protocol error (1002)");
  close(fd);
}

static void test_raw_peers(void) {
  rec r = {0};
  char out[4096];
  tm_ws *sw = server_new(&r, TM_CAP_ALL, 0);
  int port = tm_ws_port(sw);
  /* Refused heads: answered want (NULL: anything but 101, and not
   * accepted). */
  static const struct {
    const char *head, *want, *what;
  } refused[] = {
      {"GET /tunnel HTTP/1.1\r\nHost: x\r\n\r\n", " 404",
       "a plain HTTP request is answered 404"},
      {UPGRADE_HEAD("/other", "Sec-WebSocket-Protocol: tunnelmesh.v1\r\n"),
       " 404", "an upgrade on another path is answered 404"},
      {UPGRADE_HEAD("/tunnel", ""), NULL,
       "an upgrade without any subprotocol offer is refused"},
      {UPGRADE_HEAD("/tunnel",
                    "Sec-WebSocket-Protocol: chat, superchat\r\n"),
       NULL, "an offer without any TunnelMesh name is refused (TM-PROTO-15)"},
      {UPGRADE_HEAD("/tunnel", "Sec-WebSocket-Protocol: tm-http\r\n"), NULL,
       "an offer naming the server's http protocol is refused"},
  };
  for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
    const char *h = refused[i].head, *want = refused[i].want;
    int n = raw_exchange(port, h, strlen(h), out, sizeof(out), 0, NULL);
    ok(want ? n > 0 && strstr(out, want)
            : n >= 0 && !strstr(out, " 101 ") && r.accepts == 0,
       refused[i].what);
  }
  static const char good[] = UPGRADE_HEAD(
      "/tunnel", "Sec-WebSocket-Protocol: tunnelmesh.v1.open-result\r\n");
  int fd = -1;
  ok(raw_exchange(port, good, sizeof(good) - 1, out, sizeof(out), 0, &fd) > 0 &&
         strstr(out, " 101 ") &&
         strstr(out, "Sec-WebSocket-Protocol: tunnelmesh.v1.open-result\r\n"),
     "a raw client offering open-result gets 101 with that name");
  ok(poll_until(loop, r.accepts >= 1, 10000), "and is accepted");
  /* A masked text frame "hi": the protocol is binary only -> 1003. */
  static const uint8_t text[] = {0x81, 0x82, 1, 2, 3, 4, 'h' ^ 1, 'i' ^ 2};
  ok(write(fd, text, sizeof(text)) == (ssize_t)sizeof(text),
     "sent a text frame");
  is_int(read_close_code(fd), 1003,
         "a text message closes the connection with 1003");
  ok(poll_until(loop, r.srv_closed >= 1, 10000) && r.srv_s[0]->messages == 0,
     "the text message was never delivered; on_closed ran");
  close(fd);

  unmasked_frame(port, &r, good, sizeof(good) - 1);


  /* Text after the upgrade with the connection cap reached: 503 */
  tm_ws_free(sw);
  rec_reset(&r);
  tm_ws_cfg cfg = base_cfg("127.0.0.1:0", TM_CAP_ALL);
  cfg.max_connections = 1;
  const char *err;
  sw = tm_ws_new(api, hctx, &cfg, &handlers, &r, &err);
  tm_ws *cw = client_new(&r, TM_CAP_ALL, NULL);
  port = tm_ws_port(sw);
  connect_to(cw, "ws", "127.0.0.1", port, "/tunnel", "t");
  ok(poll_until(loop, r.connected >= 1, 10000),
     "max_connections 1: the first connects");
  ok(raw_exchange(port, good, sizeof(good) - 1, out, sizeof(out), 0, NULL) >
             0 &&
         strstr(out, " 503"),
     "the second upgrade is answered 503");
  pair_free(&r, cw, sw);
}

/* A peer that sends half a request and waits: closed at the handshake
 * deadline (the loop runs until EOF; the 15 s bound is only a guard). */
static void test_handshake_timeout(void) {
  rec r = {0};
  const char *err;
  tm_ws_cfg cfg = base_cfg("127.0.0.1:0", TM_CAP_ALL);
  cfg.handshake_timeout_ms = 1000;
  tm_ws *sw = tm_ws_new(api, hctx, &cfg, &handlers, &r, &err);
  ok(sw != NULL, "a server with a 1 s handshake timeout");
  if (!sw)
    return;
  int fd = sock_test_dial(tm_ws_port(sw), 0), eof = 0;
  static const char half[] = "GET /tunnel HTTP/1.1\r\nHost: x\r\n";
  if (fd >= 0 &&
      write(fd, half, sizeof(half) - 1) == (ssize_t)sizeof(half) - 1) {
    fcntl(fd, F_SETFL, O_NONBLOCK);
    for (int i = 0; i < 1500 && !eof; i++) {
      char b[256];
      ev_run(loop, EVRUN_NOWAIT);
      struct pollfd p = {.fd = fd, .events = POLLIN};
      if (poll(&p, 1, 10) > 0 && read(fd, b, sizeof(b)) <= 0)
        eof = 1;
    }
  }
  if (fd >= 0)
    close(fd);
  ok(eof, "a peer that never finishes its handshake is closed");
  is_int(r.accepts, 0, "and never accepted");
  tm_ws_free(sw);
  cfg.handshake_timeout_ms = 300001;
  ok(!tm_ws_new(api, hctx, &cfg, &handlers, &r, &err),
     "a handshake timeout above 300 s is refused");
  cfg.handshake_timeout_ms = 0;
  cfg.max_connections = 65537;
  ok(!tm_ws_new(api, hctx, &cfg, &handlers, &r, &err),
     "max_connections above 65536 is refused");
  rec_reset(&r);
}

/* IPv6 loopback: a server on [::1] and a client to ws://[::1]:port. */
static void test_ipv6(void) {
  rec r = {0};
  const char *err = NULL;
  tm_ws_cfg cfg = base_cfg("[::1]:0", TM_CAP_ALL);
  tm_ws *sw = tm_ws_new(api, hctx, &cfg, &handlers, &r, &err);
  if (!sw) {
    diag("no IPv6 loopback here: %s", err);
    ok(1, "# SKIP IPv6 loopback");
    ok(1, "# SKIP IPv6 loopback");
    return;
  }
  ok(tm_ws_port(sw) > 0, "a plain ws server on [::1] (loopback) starts");
  tm_ws *cw = client_new(&r, TM_CAP_ALL, NULL);
  connect_to(cw, "ws", "[::1]", tm_ws_port(sw), "/tunnel", "t6");
  ok(poll_until(loop, r.connected >= 1, 10000) && r.bearer_len == 2 &&
         !strcmp(r.bearer, "t6"),
     "ws://[::1]:port connects (Host with brackets) with its token");
  pair_free(&r, cw, sw);
}

static void test_pause(void) {
  rec r = {0};
  r.no_resume = 1;
  tm_ws *sw = server_new(&r, TM_CAP_ALL, 0);
  tm_ws *cw = client_new(&r, TM_CAP_ALL, NULL);
  connect_to(cw, "ws", "127.0.0.1", tm_ws_port(sw), "/tunnel", "t");
  ok(poll_until(loop, r.connected >= 1, 10000) &&
         poll_until(loop, r.accepts >= 1, 10000),
     "a connection the server does not resume");
  stub_session_send(r.cli_s[0], (const uint8_t *)"abc", 3);
  spin_for(loop, 200);
  is_int(r.srv_s[0]->messages, 0, "nothing is read before tm_ws_conn_resume");
  tm_ws_conn_resume(r.srv_c);
  ok(poll_until(loop, r.srv_s[0]->messages >= 1, 10000) &&
         r.srv_s[0]->last_len == 3,
     "after resume the message arrives");
  ok(poll_until(loop, r.cli_s[0]->messages >= 1, 10000),
     "and its echo comes back");
  tm_ws_transport()->pause_read(r.srv_c, 1);
  stub_session_send(r.cli_s[0], (const uint8_t *)"defg", 4);
  spin_for(loop, 200);
  is_int(r.srv_s[0]->messages, 1, "pause_read(1) stops reading");
  tm_ws_transport()->pause_read(r.srv_c, 0);
  ok(poll_until(loop, r.srv_s[0]->messages >= 2, 10000) &&
         r.srv_s[0]->last_len == 4,
     "pause_read(0) resumes it");
  /* The client end pausing inside a read: what it had read waits, in
   * order, and comes after resume (the client's own frame reader). */
  r.cli_s[0]->pause_at = r.cli_s[0]->messages + 1;
  int base = r.cli_s[0]->messages;
  stub_session_send(r.srv_s[0], (const uint8_t *)"m1", 2);
  stub_session_send(r.srv_s[0], (const uint8_t *)"m2", 2);
  stub_session_send(r.srv_s[0], (const uint8_t *)"m3", 2);
  poll_until(loop, r.cli_s[0]->messages >= (base + 1), 10000);
  spin_for(loop, 200);
  is_int(r.cli_s[0]->messages, base + 1, "the client end paused after one message");
  /* m4 waits in the socket while paused; on resume it is readable at once,
   * before the pass over m2 and m3 (issue 22 item 7: it must not overtake
   * them, the session would see stream ids out of order). */
  stub_session_send(r.srv_s[0], (const uint8_t *)"m4", 2);
  spin_for(loop, 200);
  is_int(r.cli_s[0]->messages, base + 1, "nothing more is read while paused");
  r.cli_s[0]->pause_at = 0;
  tm_ws_transport()->pause_read(r.cli_c, 0);
  ok(poll_until(loop, r.cli_s[0]->messages >= (base + 4), 10000) &&
         !memcmp(r.cli_s[0]->last, "m4", 2),
     "after resume the other three arrive, in order (m4 last)");
  /* Closing from the role: a status and a reason. */
  tm_ws_conn_close(r.srv_c, 4401, "unauthorized");
  ok(poll_until(loop, r.cli_closed >= 1, 10000) &&
         poll_until(loop, r.srv_closed >= 1, 10000),
     "tm_ws_conn_close(4401) ends it on both sides");
  pair_free(&r, cw, sw);

  /* on_accept refusing */
  r.accept_rc = -1;
  sw = server_new(&r, TM_CAP_ALL, 0);
  cw = client_new(&r, TM_CAP_ALL, NULL);
  connect_to(cw, "ws", "127.0.0.1", tm_ws_port(sw), "/tunnel", "t");
  ok(poll_until(loop, r.accepts >= 1, 10000) &&
         poll_until(loop, r.cli_closed >= 1, 10000),
     "on_accept returning -1 closes the connection");
  is_int(r.srv_closed, 0, "a refused connection gets no on_closed");
  pair_free(&r, cw, sw);
}

static void test_cycles_and_free(void) {
  rec r = {0};
  tm_ws *sw = server_new(&r, TM_CAP_ALL, 0);
  tm_ws *cw = client_new(&r, TM_CAP_ALL, NULL);
  int port = tm_ws_port(sw);
  /* One cycle first, so lazily made things (TLS, buffers) exist. */
  connect_to(cw, "ws", "127.0.0.1", port, "/tunnel", "t");
  poll_until(loop, r.connected >= 1, 10000);
  tm_ws_conn_close(r.cli_c, 1000, "bye");
  poll_until(loop, r.srv_closed >= 1, 10000);
  poll_until(loop, r.cli_closed >= 1, 10000);
  int base = count_fds(), okc = 0;
  for (int i = 0; i < 100; i++) {
    int want = r.connected + 1;
    if (!connect_to(cw, "ws", "127.0.0.1", port, "/tunnel", "t") ||
        !poll_until(loop, r.connected >= want, 10000))
      break;
    tm_ws_conn_close(r.cli_c, 1000, "bye");
    if (poll_until(loop, r.srv_closed >= want, 10000) &&
        poll_until(loop, r.cli_closed >= want, 10000))
      okc++;
    if (r.n_cli_s > 100) {
      /* keep the stub arrays bounded */
      for (int k = 0; k < r.n_srv_s; k++)
        stub_session_free(r.srv_s[k]);
      for (int k = 0; k < r.n_cli_s; k++)
        stub_session_free(r.cli_s[k]);
      r.n_srv_s = r.n_cli_s = 0;
    }
  }
  is_int(okc, 100, "100 connect/close cycles");
  is_int(count_fds(), base, "no fd is left behind after 100 cycles");
  pair_free(&r, cw, sw);

  /* tm_ws_free with live connections */
  sw = server_new(&r, TM_CAP_ALL, 0);
  cw = client_new(&r, TM_CAP_ALL, NULL);
  for (int i = 0; i < 3; i++)
    connect_to(cw, "ws", "127.0.0.1", tm_ws_port(sw), "/tunnel", "t");
  ok(poll_until(loop, r.connected >= 3, 10000) &&
         poll_until(loop, r.accepts >= 3, 10000),
     "three live connections");
  tm_ws_free(sw);
  is_int(r.srv_closed, 3, "tm_ws_free calls on_closed for each connection");
  int all = 1;
  for (int i = 0; i < 3; i++)
    all = all && r.srv_s[i]->closed == 1;
  ok(all, "and each bound session sees on_transport_closed");
  ok(poll_until(loop, r.cli_closed >= 3, 10000),
     "the clients see their connections end");
  connect_to(cw, "ws", "127.0.0.1", 1, "/tunnel", "t");
  tm_ws_free(cw);
  is_int(r.connect_errors, 1,
         "tm_ws_free reports a connection still connecting as a connect error");
  rec_reset(&r);
}

/* A TLS client that completes its handshake (non-blocking, the loop
 * running) and then sends nothing: 1 when the server closes it within
 * the bound, 0 when it did not. */
static int tls_idle_closed(int port, const char *ca) {
  SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
  int fd = sock_test_dial(port, 0), done = 0, closed = 0;
  if (!ctx || fd < 0 || !SSL_CTX_load_verify_locations(ctx, ca, NULL)) {
    if (fd >= 0)
      close(fd);
    SSL_CTX_free(ctx);
    return 0;
  }
  fcntl(fd, F_SETFL, O_NONBLOCK);
  SSL *ssl = SSL_new(ctx);
  SSL_set_fd(ssl, fd);
  SSL_set_verify(ssl, SSL_VERIFY_PEER, NULL);
  for (int i = 0; i < 1500 && !closed; i++) {
    ev_run(loop, EVRUN_NOWAIT);
    if (!done) {
      int r = SSL_connect(ssl);
      if (r == 1)
        done = 1;
      else if (SSL_get_error(ssl, r) != SSL_ERROR_WANT_READ &&
               SSL_get_error(ssl, r) != SSL_ERROR_WANT_WRITE)
        break;
    } else {
      char b[64];
      int r = SSL_read(ssl, b, sizeof(b));
      if (r <= 0 && SSL_get_error(ssl, r) != SSL_ERROR_WANT_READ)
        closed = 1;
    }
    struct pollfd p = {.fd = fd, .events = POLLIN};
    poll(&p, 1, 10);
  }
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  close(fd);
  return done && closed;
}

static void test_tls(void) {
  char dir[] = "/tmp/tm_ws_tls_XXXXXX", cmd[512], ca[300], other[300],
       cert[300], key[300], wcert[300], wkey[300];
  if (!mkdtemp(dir))
    BAIL_OUT("mkdtemp");
  snprintf(cmd, sizeof(cmd), "sh %s/t/unit/tunnel/tm_ws_certs.sh %s", TM_TEST_SRCDIR,
           dir);
  if (system(cmd) != 0) {
    for (int i = 0; i < 10; i++)
      ok(1, "# SKIP the openssl command could not make certificates");
    return;
  }
  snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
  snprintf(other, sizeof(other), "%s/other-ca.pem", dir);
  snprintf(cert, sizeof(cert), "%s/server.pem", dir);
  snprintf(key, sizeof(key), "%s/server.key", dir);
  snprintf(wcert, sizeof(wcert), "%s/wrongname.pem", dir);
  snprintf(wkey, sizeof(wkey), "%s/wrongname.key", dir);

  rec r = {0};
  const char *err = NULL;
  tm_ws_cfg cfg = base_cfg("127.0.0.1:0", TM_CAP_ALL);
  cfg.cert_file = cert;
  cfg.key_file = key;
  tm_ws *sw = tm_ws_new(api, hctx, &cfg, &handlers, &r, &err);
  ok(sw != NULL, "a wss server with the operator's certificate");
  if (!sw) {
    diag("%s", err);
    return;
  }
  int port = tm_ws_port(sw);
  tm_ws *cw = client_new(&r, TM_CAP_ALL, ca);
  connect_to(cw, "wss", "127.0.0.1", port, "/tunnel", "tok-tls");
  ok(poll_until(loop, r.connected >= 1, 10000) && r.bearer_len == 7,
     "wss with the right CA connects (chain and name verified)");
  stub_session_send(r.cli_s[0], (const uint8_t *)"hello", 5);
  ok(poll_until(loop, r.cli_s[0]->messages >= 1, 10000) &&
         r.cli_s[0]->last_len == 5,
     "a message over wss is echoed");
  /* A name: resolved off the loop (here from /etc/hosts: no DNS query),
   * then checked against the certificate (DNS:localhost). */
  connect_to(cw, "wss", "localhost", port, "/tunnel", "tok-tls");
  ok(poll_until(loop, r.connected >= 2, 10000) && r.accepts == 2,
     "wss://localhost: the name is resolved on a helper thread and matches "
     "the certificate");
  tm_ws_conn *pending =
      connect_to(cw, "wss", "localhost", port, "/tunnel", "t");
  tm_ws_conn_close(pending, 1000, "never mind");
  ok(poll_until(loop, r.connect_errors >= 1, 10000) && r.connected == 2,
     "closing a connection while its name resolves is a connect error");
  r.connected = 1;
  r.connect_errors = 0;
  r.accepts = 1;
  tm_ws_free(cw);
  cw = client_new(&r, TM_CAP_ALL, other);
  connect_to(cw, "wss", "127.0.0.1", port, "/tunnel", "t");
  ok(poll_until(loop, r.connect_errors >= 1, 10000) && r.connected == 1,
     "wss with another CA fails");
  tm_ws_free(cw);
  cw = client_new(&r, TM_CAP_ALL, NULL);
  connect_to(cw, "wss", "127.0.0.1", port, "/tunnel", "t");
  ok(poll_until(loop, r.connect_errors >= 2, 10000) && r.connected == 1,
     "wss with the system store fails (never self-signed by default)");
  tm_ws_free(cw);
  tm_ws_free(sw);

  /* The handshake deadline covers TLS and the request: a client that
   * completes TLS and sends nothing is closed (the loop runs until then;
   * 15 s is only the guard). */
  cfg.handshake_timeout_ms = 1000;
  sw = tm_ws_new(api, hctx, &cfg, &handlers, &r, &err);
  ok(sw && tls_idle_closed(tm_ws_port(sw), ca) && r.accepts == 1,
     "wss: a client idle after its TLS handshake is closed at the "
     "handshake deadline");
  tm_ws_free(sw);
  cfg.handshake_timeout_ms = 0;

  cfg.cert_file = wcert;
  cfg.key_file = wkey;
  sw = tm_ws_new(api, hctx, &cfg, &handlers, &r, &err);
  cw = client_new(&r, TM_CAP_ALL, ca);
  ok(sw && connect_to(cw, "wss", "127.0.0.1", tm_ws_port(sw), "/tunnel", "t") &&
         poll_until(loop, r.connect_errors >= 3, 10000) && r.connected == 1,
     "wss to a certificate for another name fails (host name checked)");
  tm_ws_free(cw);
  tm_ws_free(sw);
  /* A plain client to the TLS port gets no WebSocket either. */
  ok(r.accepts == 1, "the server accepted only the verified connection");
  rec_reset(&r);
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  if (system(cmd) != 0)
    diag("could not remove %s", dir);
}

static void test_url(void) {
  tm_ws_url u;
  const char *err;
  ok(!tm_ws_url_parse("ws://127.0.0.1:8080/tunnel", 26, &u, &err) && !u.tls &&
         u.port == 8080 && !strcmp(u.host, "127.0.0.1") &&
         !strcmp(u.path, "/tunnel"),
     "url: ws://127.0.0.1:8080/tunnel");
  ok(!tm_ws_url_parse("WSS://Server.Example", 20, &u, &err) && u.tls &&
         u.port == 443 && !strcmp(u.host, "Server.Example") &&
         !strcmp(u.path, "/"),
     "url: wss default port, path /");
  ok(!tm_ws_url_parse("ws://[::1]:9/t?a=b", 18, &u, &err) && u.ipv6 &&
         !strcmp(u.host, "::1") && u.port == 9 && !strcmp(u.path, "/t?a=b"),
     "url: an IPv6 literal and a query");
  ok(!tm_ws_url_parse("ws://h?q", 8, &u, &err) && !strcmp(u.path, "/?q"),
     "url: a query without a path");
  const char *bad[] = {
      "ws://",        "ws:///x",      "ws://h:",       "ws://h:0",
      "ws://h:65536", "ws://h:1x",    "ws://u@h/",     "ws://h/#f",
      "ws://h /",     "ws://[::1/",   "ws://[zz]/",    "ws://[]:1/",
      "ftp://h/",     "ws:/h",        "ws://h..x/",    "ws://999.1.1.1",
      "ws://h_x/",    "ws://[::1]x/", "ws://-.-:1:2/", "ws://1.2.3/"};
  int refused = 0;
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    if (tm_ws_url_parse(bad[i], strlen(bad[i]), &u, &err) < 0 && err)
      refused++;
    else
      diag("accepted %s", bad[i]);
  }
  is_int(refused, (int)(sizeof(bad) / sizeof(bad[0])),
         "url: 20 malformed URLs refused with a reason");
  ok(tm_ws_url_parse("ws://h/\0x", 9, &u, &err) < 0, "url: a NUL byte");
  /* RFC 3986: a path or query byte is unreserved, a sub-delim, ':', '@',
   * '/', '?' or a whole %XX; the URL goes into the request line and the
   * status page as it is. */
  const char *bad_path[] = {"ws://h/<s>", "ws://h/a\"b", "ws://h/a\\b",
                            "ws://h/a{b}", "ws://h/a|b", "ws://h/a^b",
                            "ws://h/a`b", "ws://h/%", "ws://h/%4",
                            "ws://h/%zz", "ws://h?a=<"};
  refused = 0;
  for (size_t i = 0; i < sizeof(bad_path) / sizeof(bad_path[0]); i++) {
    if (tm_ws_url_parse(bad_path[i], strlen(bad_path[i]), &u, &err) < 0 &&
        err && strstr(err, "path"))
      refused++;
    else
      diag("accepted %s", bad_path[i]);
  }
  is_int(refused, (int)(sizeof(bad_path) / sizeof(bad_path[0])),
         "url: a path byte RFC 3986 does not allow is refused, naming the path");
  ok(!tm_ws_url_parse("ws://h/a-b._~!$&'()*+,;=:@/%2Fx?k=v&y=%41", 41, &u,
                      &err) &&
         !strcmp(u.path, "/a-b._~!$&'()*+,;=:@/%2Fx?k=v&y=%41"),
     "url: every byte RFC 3986 allows in a path and query is kept");
  ok(tm_ws_host_is_loopback("127.1.2.3") && tm_ws_host_is_loopback("::1") &&
         tm_ws_host_is_loopback("localhost") &&
         !tm_ws_host_is_loopback("192.0.2.1") &&
         !tm_ws_host_is_loopback("0.0.0.0") && !tm_ws_host_is_loopback("::") &&
         !tm_ws_host_is_loopback("localhost.example"),
     "loopback: 127/8, ::1, localhost only");
}

static void test_backoff(void) {
  is_int(ph_backoff_ms(0, 100, 10000, 0), 50, "backoff: attempt 0, rnd 0: d/2");
  is_int(ph_backoff_ms(0, 100, 10000, 50), 100, "backoff: attempt 0, top: d");
  is_int(ph_backoff_ms(0, 100, 10000, 51), 50, "backoff: wraps in the span");
  is_int(ph_backoff_ms(3, 100, 10000, 400), 800, "backoff: 100 << 3 = 800");
  is_int(ph_backoff_ms(10, 100, 10000, 0), 5000, "backoff: capped at max");
  is_int(ph_backoff_ms(40, 100, 10000, 0xffffffffu) <= 10000, 1,
         "backoff: a huge attempt does not overflow");
  is_int(ph_backoff_ms(31, 0x80000000u, 0xffffffffu, 0xffffffffu) >=
             0x7fffffffu,
         1, "backoff: no overflow at the top of the range");
  is_int(ph_backoff_ms(0, 0, 0, 12345), 0, "backoff: zero bounds give 0");
  is_int(ph_backoff_ms(0, 500, 100, 0), 50, "backoff: min above max is max");
  int inside = 1;
  for (uint32_t a = 0; a < 40; a++)
    for (uint32_t k = 0; k < 50; k++) {
      uint32_t rnd = k * 2654435761u;
      uint32_t d = ph_backoff_ms(a, 100, 30000, rnd);
      uint32_t top = a < 20 && (100u << a) < 30000 ? 100u << a : 30000;
      if (d < top / 2 || d > top)
        inside = 0;
    }
  ok(inside, "backoff: 2000 delays all within [d/2, d]");
}

int main(void) {
  plan_lazy();
  ph_mock *m = host_test_start(&host_mod, "[proxyhost]\n");

  test_url();
  test_backoff();
  test_messages();
  test_subprotocols();
  test_bearer();
  test_client_answers();
  test_refusals();
  test_raw_peers();
  test_handshake_timeout();
  test_ipv6();
  test_pause();
  test_cycles_and_free();
  test_tls();

  ph_mock_stop(m);
  ph_mock_free(m);
  return done_testing();
}
