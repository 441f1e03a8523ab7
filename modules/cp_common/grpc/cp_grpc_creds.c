/* SPDX-License-Identifier: BSD-2-Clause */
/* TLS credentials from PEM files (cp_grpc_int.h): mutual TLS both ways.
 *
 * The server's credentials take their certificate, key and CA from a
 * fetcher (grpc_ssl_server_credentials_create_options_using_config_
 * fetcher), which gRPC asks at each new connection's handshake: the
 * loop thread loads renewed files into a cp_cert_source (checked with
 * OpenSSL first: a pair gRPC would refuse is reported here, not
 * dropped by gRPC with a log line of its own), and the next handshake
 * takes them; connections already made keep theirs (issue 23 item 14).
 *
 * TLS version: gRPC 1.51's C API has no way to set the minimum: the
 * grpc_tls_version enum is public, but the setters are C++ members of
 * core's internal credential classes (grpc_ssl_server_credentials::
 * set_min_tls_version), not part of grpc_security.h. Core's default is
 * TLS 1.2 minimum, TLS 1.3 maximum, so two peers built on this layer
 * negotiate TLS 1.3, and an older peer can still get TLS 1.2 with core's
 * ECDHE AES-GCM suites (docs/operations/control-plane-transport.md). */
#include "cp_grpc_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <grpc/grpc_security.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

/* A whole PEM file, NUL-terminated, at most CP_GRPC_PEM_MAX bytes; NULL
 * with err naming which file (never its content). */
static char *read_pem(const char *what, const char *path, char *err,
                      size_t errlen) {
  FILE *f = (path && *path) ? fopen(path, "re") : NULL;
  if (!f) {
    snprintf(err, errlen, "tls.%s: cannot open the file", what);
    return NULL;
  }
  char *buf = malloc(CP_GRPC_PEM_MAX + 1);
  size_t n = buf ? fread(buf, 1, CP_GRPC_PEM_MAX + 1, f) : 0;
  int bad = !buf || ferror(f) || n == 0 || n > CP_GRPC_PEM_MAX;
  fclose(f);
  if (bad) {
    if (buf) {
      memset(buf, 0, CP_GRPC_PEM_MAX + 1);
      free(buf);
    }
    snprintf(err, errlen, "tls.%s: empty, unreadable or larger than %d bytes",
             what, CP_GRPC_PEM_MAX);
    return NULL;
  }
  buf[n] = '\0';
  return buf;
}

/* The private key never stays in our memory once gRPC copied it. */
static void wipe_free(char *p) {
  if (!p)
    return;
  volatile char *v = p;
  size_t n = strlen(p);
  for (size_t i = 0; i < n; i++)
    v[i] = 0;
  free(p);
}

typedef struct pems {
  char *cert, *key, *ca;
} pems;

static int read_all(const cp_grpc_tls *t, pems *p, char *err, size_t errlen) {
  memset(p, 0, sizeof(*p));
  if (!(p->cert = read_pem("cert_file", t->cert_file, err, errlen)) ||
      !(p->key = read_pem("key_file", t->key_file, err, errlen)) ||
      !(p->ca = read_pem("ca_file", t->ca_file, err, errlen))) {
    free(p->cert);
    wipe_free(p->key);
    return -1;
  }
  return 0;
}

static void free_all(pems *p) {
  free(p->cert);
  wipe_free(p->key);
  free(p->ca);
}

/* The files parse as PEM and belong together: the chain's first
 * certificate with the key, and at least one CA certificate; 0 with err
 * set otherwise. OpenSSL's error queue is left empty (gRPC's handshakes
 * share the thread). */
static int pems_match(const pems *p, char *err, size_t errlen) {
  BIO *cb = BIO_new_mem_buf(p->cert, -1), *kb = BIO_new_mem_buf(p->key, -1),
      *ab = BIO_new_mem_buf(p->ca, -1);
  X509 *cert = cb ? PEM_read_bio_X509(cb, NULL, NULL, NULL) : NULL;
  EVP_PKEY *key = kb ? PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL) : NULL;
  X509 *ca = ab ? PEM_read_bio_X509(ab, NULL, NULL, NULL) : NULL;
  int ok = cert && key && ca && X509_check_private_key(cert, key) == 1;
  X509_free(cert);
  EVP_PKEY_free(key);
  X509_free(ca);
  BIO_free(cb);
  BIO_free(kb);
  BIO_free(ab);
  ERR_clear_error();
  if (!ok)
    snprintf(err, errlen,
             "tls: the certificate, key or CA does not parse, or the key "
             "does not match the certificate");
  return ok;
}

struct cp_cert_source {
  pthread_mutex_t mu;
  /* mu: loaded and not yet taken by gRPC (NULL: gRPC has the latest). */
  grpc_ssl_server_certificate_config *pending;
};

/* gRPC's fetcher: a gRPC thread (or the loop, inside
 * grpc_server_add_http2_port for the first), at each new connection. */
static grpc_ssl_certificate_config_reload_status
fetch(void *arg, grpc_ssl_server_certificate_config **config) {
  cp_cert_source *src = arg;
  pthread_mutex_lock(&src->mu);
  grpc_ssl_server_certificate_config *c = src->pending;
  src->pending = NULL;
  pthread_mutex_unlock(&src->mu);
  if (!c)
    return GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_UNCHANGED;
  *config = c; /* gRPC owns it now */
  return GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_NEW;
}

int cp_cert_source_load(cp_cert_source *src, const cp_grpc_tls *t, char *err,
                        size_t errlen) {
  pems p;
  if (read_all(t, &p, err, errlen) < 0)
    return PH_EINVAL;
  grpc_ssl_server_certificate_config *c = NULL;
  if (pems_match(&p, err, errlen)) {
    grpc_ssl_pem_key_cert_pair pair = {p.key, p.cert};
    c = grpc_ssl_server_certificate_config_create(p.ca, &pair, 1);
    if (!c)
      snprintf(err, errlen, "tls: gRPC refused the certificate, key or CA");
  }
  free_all(&p);
  if (!c)
    return PH_EINVAL;
  pthread_mutex_lock(&src->mu);
  grpc_ssl_server_certificate_config *old = src->pending;
  src->pending = c;
  pthread_mutex_unlock(&src->mu);
  if (old)
    grpc_ssl_server_certificate_config_destroy(old);
  return PH_OK;
}

void cp_cert_source_free(cp_cert_source *src) {
  if (!src)
    return;
  if (src->pending)
    grpc_ssl_server_certificate_config_destroy(src->pending);
  pthread_mutex_destroy(&src->mu);
  free(src);
}

grpc_server_credentials *cp_creds_server(const cp_grpc_tls *t,
                                         cp_cert_source **srcp, char *err,
                                         size_t errlen) {
  *srcp = NULL;
  if (t->mode == CP_TLS_DISABLED)
    return grpc_insecure_server_credentials_create();
  cp_cert_source *src = calloc(1, sizeof(*src));
  if (!src) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  pthread_mutex_init(&src->mu, NULL);
  /* gRPC fetches the first configuration when the port is added: it
   * must be there (NEW) by then. */
  if (cp_cert_source_load(src, t, err, errlen) != PH_OK) {
    cp_cert_source_free(src);
    return NULL;
  }
  grpc_ssl_server_credentials_options *o =
      grpc_ssl_server_credentials_create_options_using_config_fetcher(
          GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY, fetch,
          src);
  grpc_server_credentials *c =
      o ? grpc_ssl_server_credentials_create_with_options(o) : NULL;
  if (!c) {
    cp_cert_source_free(src);
    snprintf(err, errlen, "tls: gRPC refused the certificate, key or CA");
    return NULL;
  }
  *srcp = src;
  return c;
}

grpc_channel_credentials *cp_creds_client(const cp_grpc_tls *t, char *err,
                                          size_t errlen) {
  if (t->mode == CP_TLS_DISABLED)
    return grpc_insecure_credentials_create();
  if (!t->cert_file || !*t->cert_file) {
    /* No certificate of our own: only tests do this (the configuration
     * check requires one), to see the server refuse such a client. */
    char *ca = read_pem("ca_file", t->ca_file, err, errlen);
    if (!ca)
      return NULL;
    grpc_channel_credentials *c =
        grpc_ssl_credentials_create_ex(ca, NULL, NULL, NULL);
    free(ca);
    return c;
  }
  pems p;
  if (read_all(t, &p, err, errlen) < 0)
    return NULL;
  if (!pems_match(&p, err, errlen)) {
    /* gRPC would take them and fail each handshake later. */
    free_all(&p);
    return NULL;
  }
  grpc_ssl_pem_key_cert_pair pair = {p.key, p.cert};
  grpc_channel_credentials *c =
      grpc_ssl_credentials_create_ex(p.ca, &pair, NULL, NULL);
  free_all(&p);
  if (!c)
    snprintf(err, errlen, "tls: gRPC refused the certificate, key or CA");
  return c;
}
