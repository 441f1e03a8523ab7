/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libwebsockets 4.1 on the host's libev loop (tm_ws.h): the context and
 * the transport. With tm_ws_end.c, tm_ws_client.c, tm_ws_server.c and
 * tm_ws_tls.c the only files that include <libwebsockets.h> (through
 * tm_ws_int.h).
 *
 * One lws context per tm_ws, created with LWS_SERVER_OPTION_LIBEV and the
 * host's loop as its foreign loop, and explicit vhosts: "tm-server" (when
 * cfg->listen is set: a raw listener with lws' TLS, tm_ws_server.c) and
 * "tm-client" (always; no listener; TLS ours, tm_ws_end.c). Both ends
 * are our RFC 6455 (tm_wsc.h) on raw connections: lws' ws role is not used
 * (issue 11: its cost per byte; issue 22 item 6: as a server it accepts
 * unmasked client frames). Every connection is a tm_ws_conn found through
 * the wsi's opaque user pointer; a conn is linked in its tm_ws until it
 * ends with exactly one of on_connect_error / on_closed (tmws_finish()).
 */
#include "tm_ws_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

void tmws_wipe(void *p, size_t n) {
  volatile unsigned char *v = p;
  while (n--)
    *v++ = 0;
}

/* ---- lws' process-wide log, sent to a live tm_ws's host log ---------- */

static tm_ws *live_list;

static void lws_log_sink(int level, const char *line) {
  tm_ws *w = live_list;
  char buf[256];
  size_t n;
  (void)level;
  if (!w || !line)
    return;
  /* lws lines end with a newline; they never carry our token (it is
   * only in a header lws does not log), but may quote a peer's
   * subprotocol offer: debug level only. */
  n = strlen(line);
  if (n >= sizeof(buf))
    n = sizeof(buf) - 1;
  memcpy(buf, line, n);
  while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
    n--;
  buf[n] = '\0';
  PH_LOG(w->api, w->ctx, PH_LOG_DEBUG, "libwebsockets", PH_STR("lws", buf));
}

static void live_add(tm_ws *w) {
  /* lws formats every line it is allowed to log before our sink sees it,
   * and its libev plugin logs a notice per watcher change (about 2 % of a
   * bulk transfer's CPU): notices only when the host logs debug. */
  if (!live_list)
    lws_set_log_level(LLL_ERR | LLL_WARN |
                          (w->api->log_enabled(w->ctx, PH_LOG_DEBUG)
                               ? LLL_NOTICE
                               : 0),
                      lws_log_sink);
  w->next_live = live_list;
  live_list = w;
}

static void live_remove(tm_ws *w) {
  for (tm_ws **pp = &live_list; *pp; pp = &(*pp)->next_live)
    if (*pp == w) {
      *pp = w->next_live;
      break;
    }
}

/* ---- connections ------------------------------------------------------- */

tm_ws_conn *tmws_conn_new(tm_ws *w, int client) {
  tm_ws_conn *c = calloc(1, sizeof(*c));
  if (!c)
    return NULL;
  c->w = w;
  c->client = client;
  ilist_push_front(&w->conns, &c->link);
  return c;
}

void tmws_conn_drop_bearer(tm_ws_conn *c) {
  if (c->bearer) {
    tmws_wipe(c->bearer, c->bearer_len);
    free(c->bearer);
  }
  c->bearer = NULL;
  c->bearer_len = 0;
}

void tmws_conn_free(tm_ws_conn *c) {
  tm_ws *w = c->w;
  ilist_remove(&c->link);
  if (c->counted)
    w->n_server_conns--;
  tmws_conn_drop_bearer(c);
  tmws_end_free(c);
  free(c->rx.p);
  free(c);
}

/* The conn ends: lws is done with its wsi (or is being told to be). The
 * session first (its streams reset), then the role. */
void tmws_finish(tm_ws_conn *c) {
  tm_ws *w = c->w;
  if (c->resolve) {
    /* Resolving: the job frees itself when it ends. */
    c->resolve->c = NULL;
    c->resolve = NULL;
    if (c->job > 0)
      w->api->job_cancel(w->ctx, c->job);
  }
  if (c->wsi)
    lws_set_opaque_user_data(c->wsi, NULL);
  c->wsi = NULL;
  if (c->state == CS_OPEN) {
    tm_session *s = c->s;
    c->s = NULL;
    if (s)
      tm_session_on_transport_closed(s);
    if (w->h.on_closed)
      w->h.on_closed(w->arg, c);
  } else if (c->client) {
    if (w->h.on_connect_error)
      w->h.on_connect_error(w->arg, c);
  }
  tmws_conn_free(c);
}

static void apply_flow(tm_ws_conn *c) {
  if (c->wsi && c->state == CS_OPEN)
    lws_rx_flow_control(c->wsi, !(c->accept_paused || c->user_paused));
  tmws_end_resumed(c);
}

static void deferred_cb(ph_timer *t, void *arg) {
  tm_ws *w = arg;
  (void)t;
  ILIST_FOREACH_SAFE(&w->conns, n, nx) {
    tm_ws_conn *c = ILIST_ENTRY(n, tm_ws_conn, link);
    if (c->deferred_error)
      tmws_finish(c);
    else
      tmws_end_deferred(c);
  }
}

/* ---- messages ---------------------------------------------------------- */

void tmws_set_close(tm_ws_conn *c, int status, const char *reason) {
  size_t n = reason ? strlen(reason) : 0;
  if (n >= sizeof(c->close_reason))
    n = sizeof(c->close_reason) - 1;
  c->close_pending = 1;
  c->close_status = status;
  if (n)
    memcpy(c->close_reason, reason, n);
  c->close_reason[n] = '\0';
}

int tmws_append(tm_ws_conn *c, struct tmws_buf *b, const void *in,
                size_t len, size_t limit, int status, const char *reason) {
  if (len > limit - b->len) {
    tmws_set_close(c, status, reason);
    return -1;
  }
  if (b->len + len > b->cap) {
    /* Grow by doubling, bounded by limit (checked above). */
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + len)
      cap *= 2;
    if (cap > limit)
      cap = limit;
    uint8_t *nb = realloc(b->p, cap);
    if (!nb) {
      tmws_set_close(c, LWS_CLOSE_STATUS_UNEXPECTED_CONDITION, "no memory");
      return -1;
    }
    b->p = nb;
    b->cap = cap;
  }
  if (len)
    memcpy(b->p + b->len, in, len);
  b->len += len;
  return 0;
}

int tmws_rx_append(tm_ws_conn *c, const void *in, size_t len,
                   size_t frame_left) {
  size_t max = c->w->cfg.max_message;
  if (c->rx.len == 0 && len <= max && frame_left <= max - len &&
      c->rx.cap < len + frame_left) {
    size_t want = len + frame_left;
    /* A message's first piece: room for its whole frame at once, not a
     * chain of reallocations that copy it again and again. */
    free(c->rx.p);
    c->rx.p = malloc(want);
    c->rx.cap = c->rx.p ? want : 0;
  }
  return tmws_append(c, &c->rx, in, len, c->w->cfg.max_message,
                     LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, "message too large");
}

void tmws_deliver(tm_ws_conn *c, const uint8_t *msg, size_t len) {
  int own = msg == c->rx.p;
  if (own)
    c->rx.len = 0;
  if (c->s)
    tm_session_on_message(c->s, msg, len);
  /* An idle connection holds no reassembly buffer above lws' own chunk
   * size: 4096 connections must not keep 64 KiB each. */
  if (own && c->rx.cap > TM_WS_RX_CHUNK && c->rx.len == 0) {
    free(c->rx.p);
    c->rx.p = NULL;
    c->rx.cap = 0;
  }
}

/* ---- transport --------------------------------------------------------- */

static void tr_want_write(void *t) { tmws_end_want_write(t); }

static int tr_write(void *t, uint8_t *buf, size_t len) {
  tm_ws_conn *c = t;
  if (!c->wsi || c->state != CS_OPEN || c->close_pending || len > INT32_MAX)
    return -1;
  return tmws_end_write(c, buf, len);
}

static void tr_pause_read(void *t, int paused) {
  tm_ws_conn *c = t;
  c->user_paused = paused ? 1 : 0;
  apply_flow(c);
}

static void tr_close(void *t) {
  tm_ws_conn *c = t;
  /* The session is done with us (it frees itself after this). */
  c->s = NULL;
  tm_ws_conn_close(c, LWS_CLOSE_STATUS_NORMAL, "session closed");
}

static const tm_transport ws_transport = {
    .want_write = tr_want_write,
    .write = tr_write,
    .pause_read = tr_pause_read,
    .close = tr_close,
    .headroom = LWS_PRE,
};

const tm_transport *tm_ws_transport(void) { return &ws_transport; }

void tm_ws_conn_bind(tm_ws_conn *c, tm_session *s) { c->s = s; }
void tm_ws_conn_set_user(tm_ws_conn *c, void *user) { c->user = user; }
void *tm_ws_conn_user(const tm_ws_conn *c) { return c->user; }

void tm_ws_conn_resume(tm_ws_conn *c) {
  c->accept_paused = 0;
  apply_flow(c);
}

void tm_ws_conn_close(tm_ws_conn *c, int status, const char *reason) {
  if (c->close_pending || c->deferred_error)
    return;
  if (c->resolve) {
    /* Still resolving its name: a connect error, from the loop. The
     * answer is detached now, so that one arriving before the deferred
     * error cannot start the connect after all. */
    c->resolve->c = NULL;
    c->resolve = NULL;
    if (c->job > 0)
      c->w->api->job_cancel(c->w->ctx, c->job);
    c->job = 0;
    tmws_set_close(c, status, reason);
    c->deferred_error = 1;
    c->w->api->timer_set(c->w->deferred, 1, 0);
    return;
  }
  if (!c->wsi)
    return;
  tmws_set_close(c, status, reason);
  if (c->state == CS_OPEN) {
    /* The close frame goes out from the writable callback; if it never
     * comes (a peer that reads nothing), lws drops the socket. */
    lws_callback_on_writable(c->wsi);
    lws_set_timeout(c->wsi, PENDING_TIMEOUT_CLOSE_SEND, TM_WS_CLOSE_GRACE_S);
  } else {
    lws_set_timeout(c->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
  }
}

/* ---- context ----------------------------------------------------------- */

/* "host:port", "[v6]:port": the address text into host, the port. */
static int parse_listen(const char *s, char *host, size_t hcap, int *port) {
  const char *colon, *hs = s, *he;
  if (!s || !*s)
    return -1;
  if (*s == '[') {
    he = strchr(s, ']');
    if (!he || he[1] != ':')
      return -1;
    hs = s + 1;
    colon = he + 1;
  } else {
    colon = strrchr(s, ':');
    if (!colon)
      return -1;
    he = colon;
  }
  if ((size_t)(he - hs) == 0 || (size_t)(he - hs) >= hcap)
    return -1;
  memcpy(host, hs, (size_t)(he - hs));
  host[he - hs] = '\0';
  char *end;
  errno = 0;
  long p = strtol(colon + 1, &end, 10);
  if (errno || *end || end == colon + 1 || p < 0 || p > 65535)
    return -1;
  *port = (int)p;
  return 0;
}

static char *dup_or_null(const char *s) { return s && *s ? strdup(s) : NULL; }

static void free_strings(tm_ws *w) {
  free(w->listen);
  free(w->cert_file);
  free(w->key_file);
  free(w->ca_file);
  free(w->client_cert_file);
  free(w->client_key_file);
  free(w->path);
}

tm_ws *tm_ws_new(const ph_api *api, ph_ctx *ctx, const tm_ws_cfg *cfg,
                 const tm_ws_handlers *h, void *arg, const char **err) {
  struct lws_context_creation_info info;
  char host[64];
  int port = 0;
  tm_ws *w;
  void *loops[1];

  *err = "bad arguments";
  if (!api || !cfg || !h)
    return NULL;
  if (cfg->max_message < TM_HEADER_LEN || cfg->max_message > TM_MAX_FRAME) {
    *err = "max_message is not within the protocol's frame size";
    return NULL;
  }
  if (cfg->max_connections > TM_WS_MAX_CONN_LIMIT) {
    *err = "max_connections is above 65536";
    return NULL;
  }
  if (cfg->handshake_timeout_ms > TM_WS_HS_TIMEOUT_MAX) {
    *err = "the handshake timeout is above 300 s";
    return NULL;
  }
  if (cfg->listen) {
    if (parse_listen(cfg->listen, host, sizeof(host), &port) < 0) {
      *err = "the listen address is not host:port";
      return NULL;
    }
    if (!cfg->path || cfg->path[0] != '/') {
      *err = "the upgrade path does not start with /";
      return NULL;
    }
    if (!!cfg->cert_file != !!cfg->key_file) {
      *err = "TLS needs both a certificate and a key";
      return NULL;
    }
    if (!cfg->cert_file && !cfg->allow_plain && !tm_ws_host_is_loopback(host)) {
      *err = "plain ws off loopback is refused (give a certificate and key, "
             "or allow_plain)";
      return NULL;
    }
    if (cfg->cert_file &&
        (access(cfg->cert_file, R_OK) < 0 || access(cfg->key_file, R_OK) < 0)) {
      *err = "the TLS certificate or key cannot be read";
      return NULL;
    }
  }
  if (cfg->listen && cfg->require_client_cert &&
      (!cfg->cert_file || !cfg->ca_file || !*cfg->ca_file)) {
    *err = "client certificates need the server's certificate and a CA file";
    return NULL;
  }
  if (cfg->ca_file && *cfg->ca_file && access(cfg->ca_file, R_OK) < 0) {
    *err = "the CA file cannot be read";
    return NULL;
  }
  if (access(TM_WS_EVLIB_PLUGIN, R_OK) < 0) {
    *err = "libwebsockets' libev plugin is missing (install the package "
           "libwebsockets-evlib-ev)";
    return NULL;
  }

  w = calloc(1, sizeof(*w));
  if (!w) {
    *err = "no memory";
    return NULL;
  }
  ilist_init(&w->conns);
  w->api = api;
  w->ctx = ctx;
  w->cfg = *cfg;
  w->h = *h;
  w->arg = arg;
  if (!w->cfg.max_connections)
    w->cfg.max_connections = TM_WS_MAX_CONN_DEFAULT;
  if (!w->cfg.handshake_timeout_ms)
    w->cfg.handshake_timeout_ms = TM_WS_HS_TIMEOUT_DEFAULT;
  w->listen = dup_or_null(cfg->listen);
  w->cert_file = dup_or_null(cfg->cert_file);
  w->key_file = dup_or_null(cfg->key_file);
  w->ca_file = dup_or_null(cfg->ca_file);
  w->path = dup_or_null(cfg->path);
  w->cfg.listen = w->listen;
  w->cfg.cert_file = w->cert_file;
  w->cfg.key_file = w->key_file;
  w->cfg.ca_file = w->ca_file;
  w->cfg.path = w->path;
  w->client_cert_file = dup_or_null(cfg->client_cert_file);
  w->client_key_file = dup_or_null(cfg->client_key_file);
  w->cfg.client_cert_file = w->client_cert_file;
  w->cfg.client_key_file = w->client_key_file;
  w->deferred = api->timer_new(ctx, deferred_cb, w);
  if ((cfg->listen && !w->listen) || (cfg->path && !w->path) ||
      (cfg->client_cert_file && *cfg->client_cert_file &&
       !w->client_cert_file) ||
      (cfg->client_key_file && *cfg->client_key_file && !w->client_key_file) ||
      !w->deferred) {
    *err = "no memory";
    goto fail;
  }

  /* The server's names: exactly those caps allows, in the offer's
   * priority order (tm_wsc_upgrade_parse picks the client's first). */
  {
    const char *names[5] = {TM_SUBPROTO_PRINCIPAL, TM_SUBPROTO_TRACE,
                            TM_SUBPROTO_FULL, TM_SUBPROTO_OPEN,
                            TM_SUBPROTO_BASE};
    int k = 0;
    for (int i = 0; i < 5; i++) {
      unsigned need = (unsigned)tm_subproto_caps(names[i]);
      if ((cfg->caps & need) == need)
        w->srv_names[k++] = names[i];
    }
    w->srv_names[k] = NULL;
  }
  w->srv_protocols[0] = (struct lws_protocols){
      .name = "tm-server", .callback = tmws_srv_cb, .rx_buffer_size = 0};
  w->cli_protocols[0] =
      (struct lws_protocols){.name = "tm-client",
                             .callback = tmws_cli_cb,
                             .rx_buffer_size = TM_WS_RX_CHUNK};

  /* The client TLS context is ours, given to both vhosts: lws 4.1 finds
   * its own client SSL_CTX again at destroy through an ex_data index it
   * allocates anew in every lws_create_context, so with two contexts
   * alive (three roles in one process, a reload) the older one's is
   * never freed (lib/tls/openssl/openssl-tls.c, openssl-ssl.c). lws still
   * sets SSL_VERIFY_PEER and the host name check on each connection. */
  w->client_tls = SSL_CTX_new(TLS_client_method());
  if (!w->client_tls ||
      !SSL_CTX_set_min_proto_version(w->client_tls, TLS1_2_VERSION) ||
      !(w->ca_file
            ? SSL_CTX_load_verify_locations(w->client_tls, w->ca_file, NULL)
            : SSL_CTX_set_default_verify_paths(w->client_tls))) {
    *err = w->ca_file ? "the CA file does not load"
                      : "the client TLS context did not start";
    goto fail;
  }
  SSL_CTX_set_verify(w->client_tls, SSL_VERIFY_PEER, NULL);
  SSL_CTX_set_options(w->client_tls, SSL_OP_NO_COMPRESSION);
  if (cfg->client_cert_file && *cfg->client_cert_file &&
      (SSL_CTX_use_certificate_chain_file(w->client_tls,
                                          cfg->client_cert_file) != 1 ||
       !cfg->client_key_file ||
       SSL_CTX_use_PrivateKey_file(w->client_tls, cfg->client_key_file,
                                   SSL_FILETYPE_PEM) != 1 ||
       SSL_CTX_check_private_key(w->client_tls) != 1)) {
    *err = "the client certificate or key do not load or do not match";
    goto fail;
  }

  live_add(w);

  loops[0] = api->loop(ctx);
  memset(&info, 0, sizeof(info));
  info.options = LWS_SERVER_OPTION_LIBEV | LWS_SERVER_OPTION_EXPLICIT_VHOSTS |
                 LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
  info.foreign_loops = loops;
  info.port = CONTEXT_PORT_NO_LISTEN;
  info.timeout_secs = (w->cfg.handshake_timeout_ms + 999) / 1000;
  info.connect_timeout_secs = info.timeout_secs;
  /* A peer that connects and sends no (or half a) request: the same
   * deadline. */
  info.timeout_secs_ah_idle = info.timeout_secs;
  info.keepalive_timeout = (int)info.timeout_secs;
  info.user = w;
  /* What one read of a client's raw socket takes at most. */
  info.pt_serv_buf_size = TM_WS_READ_CHUNK;
  w->lws = lws_create_context(&info);
  if (!w->lws) {
    *err = "libwebsockets did not start on the loop (is the package "
           "libwebsockets-evlib-ev installed?)";
    goto fail;
  }

  if (w->listen) {
    struct lws_context_creation_info vi;
    memset(&vi, 0, sizeof(vi));
    vi.vhost_name = "tm-server";
    vi.port = port;
    vi.iface = host;
    vi.protocols = w->srv_protocols;
    vi.user = w;
    /* Raw: lws accepts the sockets, runs TLS on them (lws 4.1 can on a
     * raw server socket, unlike a raw client one) and moves the
     * plaintext; the WebSocket is ours (tm_ws_server.c). The deadline of
     * lws' TLS accept is the handshake's too. */
    vi.options = LWS_SERVER_OPTION_ADOPT_APPLY_LISTEN_ACCEPT_CONFIG |
                 LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
    vi.listen_accept_role = "raw-skt";
    vi.listen_accept_protocol = "tm-server";
    vi.timeout_secs = info.timeout_secs;
    vi.provided_client_ssl_ctx = w->client_tls;
    if (w->cert_file) {
      vi.ssl_cert_filepath = w->cert_file;
      vi.ssl_private_key_filepath = w->key_file;
      /* TLS 1.2 and later only. */
      vi.ssl_options_set = SSL_OP_NO_TLSv1 | SSL_OP_NO_TLSv1_1;
      /* Never h2 (lws' default offer): the upgrade is HTTP/1.1. */
      vi.alpn = "http/1.1";
      if (w->cfg.require_client_cert) {
        /* tmws_srv_cb answers lws' verification callback with
         * OpenSSL's own verdict (lws would accept any otherwise). */
        vi.options |= LWS_SERVER_OPTION_REQUIRE_VALID_OPENSSL_CLIENT_CERT;
        vi.ssl_ca_filepath = w->ca_file;
      }
    }
    w->vh_server = lws_create_vhost(w->lws, &vi);
    if (!w->vh_server) {
      *err = w->cert_file ? "the server vhost did not start (the address "
                            "is taken, or the certificate or key do not load)"
                          : "the server vhost did not start (the address "
                            "is taken or not local)";
      goto fail;
    }
    w->port = lws_get_vhost_listen_port(w->vh_server);
  }
  {
    struct lws_context_creation_info vi;
    memset(&vi, 0, sizeof(vi));
    vi.vhost_name = "tm-client";
    vi.port = CONTEXT_PORT_NO_LISTEN;
    vi.protocols = w->cli_protocols;
    vi.user = w;
    vi.timeout_secs = info.timeout_secs;
    vi.connect_timeout_secs = info.timeout_secs;
    vi.options = LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
    /* Only the operator's CA when given, else the system store: loaded
     * above into our context. */
    vi.provided_client_ssl_ctx = w->client_tls;
    w->vh_client = lws_create_vhost(w->lws, &vi);
    if (!w->vh_client) {
      *err = "the client vhost did not start";
      goto fail;
    }
  }
  return w;

fail:
  if (w->lws)
    lws_context_destroy(w->lws);
  live_remove(w);
  if (w->client_tls)
    SSL_CTX_free(w->client_tls);
  if (w->deferred)
    api->timer_free(w->deferred);
  free_strings(w);
  free(w);
  return NULL;
}

int tm_ws_port(const tm_ws *w) { return w ? w->port : 0; }

void tm_ws_free(tm_ws *w) {
  if (!w)
    return;
  /* Every conn ends here, with its callbacks, before lws tears the wsis
   * down (their callbacks then find no conn). */
  w->freeing = 1;
  ilist_node *n;
  while ((n = ilist_first(&w->conns))) {
    tm_ws_conn *c = ILIST_ENTRY(n, tm_ws_conn, link);
    if (c->wsi && c->state == CS_OPEN)
      tmws_end_goodbye(c);
    tmws_finish(c);
  }
  lws_context_destroy(w->lws);
  live_remove(w);
  SSL_CTX_free(w->client_tls);
  free(w->out);
  free(w->plain);
  w->api->timer_free(w->deferred);
  free_strings(w);
  free(w);
}

