/* SPDX-License-Identifier: BSD-2-Clause */
/* TLS credentials from PEM files (cp_grpc_int.h): mutual TLS both ways.
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

grpc_server_credentials *cp_creds_server(const cp_grpc_tls *t, char *err,
                                         size_t errlen) {
  if (t->mode == CP_TLS_DISABLED)
    return grpc_insecure_server_credentials_create();
  pems p;
  if (read_all(t, &p, err, errlen) < 0)
    return NULL;
  grpc_ssl_pem_key_cert_pair pair = {p.key, p.cert};
  grpc_server_credentials *c = grpc_ssl_server_credentials_create_ex(
      p.ca, &pair, 1, GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY,
      NULL);
  free_all(&p);
  if (!c)
    snprintf(err, errlen, "tls: gRPC refused the certificate, key or CA");
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
  grpc_ssl_pem_key_cert_pair pair = {p.key, p.cert};
  grpc_channel_credentials *c =
      grpc_ssl_credentials_create_ex(p.ca, &pair, NULL, NULL);
  free_all(&p);
  if (!c)
    snprintf(err, errlen, "tls: gRPC refused the certificate, key or CA");
  return c;
}
