/* SPDX-License-Identifier: BSD-2-Clause */
/* One TLS handshake with the controller to tell an authentication
 * refusal from an unreachable controller (cpc_tls_probe.h). */
#include "cpc_tls_probe.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

/* The alerts a TLS peer sends about the certificate it was given. */
static int cert_alert(unsigned long e) {
  if (ERR_GET_LIB(e) != ERR_LIB_SSL)
    return 0;
  switch (ERR_GET_REASON(e)) {
  case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
  case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
  case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
  case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
  case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
  case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
  case SSL_R_TLSV1_ALERT_ACCESS_DENIED:
  case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
    return 1;
  default:
    return 0;
  }
}

/* Set once this side sent its certificate (the handshake got that far). */
static int sent_cert_idx = -1;

static void on_info(const SSL *ssl, int where, int ret) {
  (void)ret;
  if ((where & SSL_CB_CONNECT_LOOP) && SSL_get_state(ssl) == TLS_ST_CW_CERT)
    SSL_set_ex_data((SSL *)ssl, sent_cert_idx, (void *)1);
}

/* The controller closed the connection (EOF or reset) after it had this
 * side's certificate, sending nothing: gRPC's server does exactly that
 * when the certificate fails its check, without an alert. A timeout is
 * not a refusal. */
static int closed_on_cert(SSL *ssl, int r, char *why, size_t whylen) {
  if (!SSL_get_ex_data(ssl, sent_cert_idx))
    return 0;
  int e = SSL_get_error(ssl, r);
  unsigned long last = ERR_peek_last_error();
  int eof = e == SSL_ERROR_ZERO_RETURN ||
            (e == SSL_ERROR_SYSCALL && (errno == ECONNRESET || errno == EPIPE ||
                                        errno == 0)) ||
            (e == SSL_ERROR_SSL && ERR_GET_LIB(last) == ERR_LIB_SSL &&
             ERR_GET_REASON(last) == SSL_R_UNEXPECTED_EOF_WHILE_READING);
  if (!eof)
    return 0;
  snprintf(why, whylen, "the controller closed the connection on this "
           "gateway's certificate in the TLS handshake");
  return 1;
}

/* "host:port" or "[v6]:port" into host and port; 0 or -1. */
static int split(const char *address, char *host, size_t hostlen,
                 char *port, size_t portlen) {
  const char *colon = strrchr(address, ':');
  if (!colon || colon == address)
    return -1;
  const char *h = address;
  size_t hl = (size_t)(colon - address);
  if (h[0] == '[' && hl >= 2 && h[hl - 1] == ']') {
    h++;
    hl -= 2;
  }
  if (hl >= hostlen || strlen(colon + 1) >= portlen)
    return -1;
  memcpy(host, h, hl);
  host[hl] = '\0';
  snprintf(port, portlen, "%s", colon + 1);
  return 0;
}

/* A connected socket (SO_RCVTIMEO/SO_SNDTIMEO set to timeout_ms), or -1. */
static int dial(const char *host, const char *port, int timeout_ms) {
  struct addrinfo hints = {0}, *res = NULL;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host, port, &hints, &res) != 0)
    return -1;
  int fd = -1;
  for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (fd < 0)
      continue;
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  return fd;
}

static int is_ip(const char *host) {
  unsigned char buf[sizeof(struct in6_addr)];
  return inet_pton(AF_INET, host, buf) == 1 ||
         inet_pton(AF_INET6, host, buf) == 1;
}

/* The last OpenSSL error: a certificate alert from the controller? */
static int refused(char *why, size_t whylen) {
  unsigned long e, last = 0;
  while ((e = ERR_get_error()) != 0)
    if (!last || cert_alert(e))
      last = e;
  if (last && cert_alert(last)) {
    snprintf(why, whylen, "the controller refused this gateway's "
             "certificate in the TLS handshake (%s)",
             ERR_reason_error_string(last) ? ERR_reason_error_string(last)
                                           : "alert");
    return 1;
  }
  return 0;
}

int cpc_tls_probe(const char *address, const cp_grpc_tls *tls,
                  int timeout_ms, char *why, size_t whylen) {
  char host[262], port[8];
  why[0] = '\0';
  if (!address || !tls || tls->mode != CP_TLS_MTLS ||
      split(address, host, sizeof(host), port, sizeof(port)) != 0)
    return CP_GRPC_UNAVAILABLE;
  int rc = CP_GRPC_UNAVAILABLE;
  SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
  SSL *ssl = NULL;
  int fd = -1;
  if (!ctx || !tls->ca_file ||
      SSL_CTX_load_verify_locations(ctx, tls->ca_file, NULL) != 1 ||
      (tls->cert_file && *tls->cert_file &&
       (SSL_CTX_use_certificate_chain_file(ctx, tls->cert_file) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx, tls->key_file, SSL_FILETYPE_PEM) !=
            1))) {
    snprintf(why, whylen, "the TLS files could not be read");
    goto out;
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
  SSL_CTX_set_info_callback(ctx, on_info);
  if (sent_cert_idx < 0) /* the first probe's job; a benign race else */
    sent_cert_idx = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
  fd = dial(host, port, timeout_ms);
  if (fd < 0 || !(ssl = SSL_new(ctx)) || SSL_set_fd(ssl, fd) != 1)
    goto out;
  const char *name =
      tls->server_name && *tls->server_name ? tls->server_name : host;
  if (!is_ip(name))
    SSL_set_tlsext_host_name(ssl, name);
  /* The name check gRPC makes: a DNS name or an IP address SAN. */
  X509_VERIFY_PARAM *vp = SSL_get0_param(ssl);
  if (is_ip(name))
    X509_VERIFY_PARAM_set1_ip_asc(vp, name);
  else
    X509_VERIFY_PARAM_set1_host(vp, name, 0);
  static const unsigned char alpn[] = {2, 'h', '2'};
  SSL_set_alpn_protos(ssl, alpn, sizeof(alpn));
  ERR_clear_error();
  errno = 0;
  int r = SSL_connect(ssl);
  if (r != 1) {
    long v = SSL_get_verify_result(ssl);
    if (v != X509_V_OK) {
      snprintf(why, whylen, "the controller's certificate failed the "
               "check against tls.ca_file (%s)",
               X509_verify_cert_error_string(v));
      rc = CP_GRPC_UNAUTHENTICATED;
    } else if (closed_on_cert(ssl, r, why, whylen) || refused(why, whylen)) {
      rc = CP_GRPC_UNAUTHENTICATED; /* TLS 1.2: the server's verdict */
    }
    goto out;
  }
  /* TLS 1.3: the controller judges the certificate after the client's
   * handshake is over; its answer to the HTTP/2 preface and an empty
   * SETTINGS frame is either its own SETTINGS or the alert. */
  static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
                                "\x00\x00\x00\x04\x00\x00\x00\x00\x00";
  unsigned char buf[64];
  ERR_clear_error();
  errno = 0;
  r = SSL_write(ssl, preface, (int)sizeof(preface) - 1);
  if (r > 0) {
    errno = 0;
    r = SSL_read(ssl, buf, sizeof(buf));
  }
  if (r <= 0 && (closed_on_cert(ssl, r, why, whylen) || refused(why, whylen)))
    rc = CP_GRPC_UNAUTHENTICATED;
out:
  ERR_clear_error();
  if (ssl)
    SSL_free(ssl);
  if (fd >= 0)
    close(fd);
  SSL_CTX_free(ctx);
  return rc;
}
