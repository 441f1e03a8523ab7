/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Re-reading a tm_ws's TLS files (tm_ws_reload_tls, issue 23 item 14),
 * one of the files that include <libwebsockets.h> (through tm_ws_int.h).
 *
 * Server: lws 4.1 has no call that replaces a vhost's certificate from
 * its file paths (lws_tls_cert_updated matches only vhosts made by its
 * ACME plugin), so tm_ws_server.c keeps the vhost's SSL_CTX (lws hands it
 * to protocol 0's LOAD_EXTRA_SERVER_VERIFY_CERTS callback when the vhost
 * is made) and the new pair is loaded into it. OpenSSL copies the context's
 * certificate and key into each SSL at SSL_new, so connections accepted
 * earlier keep theirs and every later handshake uses the new pair. The
 * pair is first loaded into a scratch context and checked (the chain
 * parses, the key parses and matches): a bad pair never reaches the
 * vhost. All of it runs on the loop thread, where the handshakes run,
 * so no handshake sees a certificate without its key.
 *
 * Client: the CA file is loaded into a new X509_STORE that replaces the
 * old one in our client SSL_CTX; a handshake consults the context's
 * store when it verifies (inside one SSL_do_handshake on the loop), so
 * established connections are untouched and the next verification uses
 * the new CAs. A client certificate and key (mutual TLS: the relay
 * between tunnel servers, issue 27) are checked in a scratch context and
 * loaded into our client SSL_CTX like the server's pair: SSL_new copies
 * them, so links dialed later present the new pair. A server that asks
 * for client certificates (require_client_cert) gets a new store from
 * the CA file for its vhost's context too.
 */
#include "tm_ws_int.h"

#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <string.h>

/* The chain and key into ctx, matching: 0, or -1 (nothing is half-set
 * in a scratch context; the vhost's is loaded only after a scratch load
 * passed). */
static int load_pair(SSL_CTX *ctx, const char *cert, const char *key) {
  ERR_clear_error();
  int ok = SSL_CTX_use_certificate_chain_file(ctx, cert) == 1 &&
           SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) == 1 &&
           SSL_CTX_check_private_key(ctx) == 1;
  ERR_clear_error();
  return ok ? 0 : -1;
}

/* A pair loads and matches in a scratch context (method: the role's):
 * 0, or -1. */
static int check_pair(const SSL_METHOD *method, const char *cert,
                      const char *key) {
  SSL_CTX *scratch = SSL_CTX_new(method);
  if (!scratch)
    return -1;
  int rc = load_pair(scratch, cert, key);
  SSL_CTX_free(scratch);
  return rc;
}

static X509_STORE *load_store(const char *file) {
  X509_STORE *st = X509_STORE_new();
  ERR_clear_error();
  if (st && X509_STORE_load_file(st, file) == 1)
    return st;
  ERR_clear_error();
  X509_STORE_free(st);
  return NULL;
}

/* Every file is read and checked before any context changes (a bad
 * pair or CA never reaches one); then the server's pair, the CA stores
 * and the client's pair are put in place. */
int tm_ws_reload_tls(tm_ws *w, const char **err) {
  *err = NULL;
  if (!w)
    return 0;
  int srv = w->vh_server && w->cert_file;
  /* A server asking for client certificates verifies them against the
   * CA file too (lws loaded it into the vhost's context). */
  int srv_ca = srv && w->cfg.require_client_cert && w->ca_file;
  int cli = w->client_cert_file && w->client_key_file;
  if (srv && !w->srv_tls) {
    *err = "the server's TLS context was not found";
    return -1;
  }
  if (srv && check_pair(TLS_server_method(), w->cert_file, w->key_file) < 0) {
    *err = "tls.cert or tls.key does not load, or the key does not match "
           "the certificate";
    return -1;
  }
  if (cli && check_pair(TLS_client_method(), w->client_cert_file,
                        w->client_key_file) < 0) {
    *err = "the client certificate or key does not load, or the key does "
           "not match the certificate";
    return -1;
  }
  X509_STORE *st = NULL, *srv_st = NULL;
  if (w->ca_file && (!(st = load_store(w->ca_file)) ||
                     (srv_ca && !(srv_st = load_store(w->ca_file))))) {
    X509_STORE_free(st);
    *err = "tls.ca_file does not load";
    return -1;
  }
  /* Changed again between the check and here: try once more at the
   * next reload (the scratch check makes this rare). */
  if (srv && load_pair(w->srv_tls, w->cert_file, w->key_file) < 0) {
    X509_STORE_free(st);
    X509_STORE_free(srv_st);
    *err = "the certificate changed while it was being read";
    return -1;
  }
  if (cli &&
      load_pair(w->client_tls, w->client_cert_file, w->client_key_file) < 0) {
    X509_STORE_free(st);
    X509_STORE_free(srv_st);
    *err = "the client certificate changed while it was being read";
    return -1;
  }
  if (st)
    SSL_CTX_set_cert_store(w->client_tls, st); /* frees the old store */
  if (srv_st)
    SSL_CTX_set_cert_store(w->srv_tls, srv_st);
  return 0;
}

int tm_ws_has_tls_files(const tm_ws *w) {
  return w &&
         ((w->vh_server && w->cert_file) || w->ca_file || w->client_cert_file);
}

/* ---- the peer's identity (tm_ws_conn_peer_uri) --------------------------- */

int tm_ws_conn_peer_uri(const tm_ws_conn *c, const char *prefix, char *out,
                        size_t cap) {
  SSL *ssl = c->client ? c->ce.ssl : c->wsi ? lws_get_ssl(c->wsi) : NULL;
  if (!ssl || !prefix || !out || !cap)
    return -1;
  /* Only a certificate that verified (the client end verifies the
   * server's; a server end under require_client_cert, the client's). */
  if (SSL_get_verify_result(ssl) != X509_V_OK)
    return -1;
  X509 *x = SSL_get_peer_certificate(ssl);
  if (!x)
    return -1;
  GENERAL_NAMES *names = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
  X509_free(x);
  size_t plen = strlen(prefix);
  int found = 0, ok = 0;
  for (int i = 0; names && i < sk_GENERAL_NAME_num(names); i++) {
    const GENERAL_NAME *g = sk_GENERAL_NAME_value(names, i);
    if (g->type != GEN_URI)
      continue;
    const unsigned char *u = ASN1_STRING_get0_data(g->d.uniformResourceIdentifier);
    int ul = ASN1_STRING_length(g->d.uniformResourceIdentifier);
    if (ul < 0 || (size_t)ul <= plen || memcmp(u, prefix, plen) != 0)
      continue;
    size_t rest = (size_t)ul - plen;
    found++;
    ok = rest < cap && !memchr(u + plen, '\0', rest);
    if (ok) {
      memcpy(out, u + plen, rest);
      out[rest] = '\0';
    }
  }
  GENERAL_NAMES_free(names);
  return found == 1 && ok ? 0 : -1;
}
