/* SPDX-License-Identifier: BSD-2-Clause */
/* proxyhost-passwd: prints the configuration hash of a password read from
 * standard input (first line), for [auth_local] users = NAME:HASH.
 *
 *   printf '%s\n' "$password" | proxyhost-passwd [-i ITERATIONS]
 *
 * proxyhost-passwd(1) documents it.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "auth_local/pwhash.h"

int main(int argc, char **argv) {
  unsigned long iter = PWHASH_DEFAULT_ITER;
  static const struct option opts[] = {{"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  int opt;
  while ((opt = getopt_long(argc, argv, "i:h", opts, NULL)) != -1) {
    if (opt == 'i') {
      char *end;
      iter = strtoul(optarg, &end, 10);
      if (*end || iter < PWHASH_MIN_ITER || iter > PWHASH_MAX_ITER) {
        fprintf(stderr, "proxyhost-passwd: iterations must be %d..%d\n",
                PWHASH_MIN_ITER, PWHASH_MAX_ITER);
        return 2;
      }
    } else {
      fprintf(opt == 'h' ? stdout : stderr,
              "usage: proxyhost-passwd [-i ITERATIONS] < password\n"
              "Reads one line (the password, at most 255 bytes) and prints "
              "its hash\nfor [auth_local] users = NAME:HASH.\n"
              "  -i ITERATIONS  PBKDF2 iterations, %d..%d (default %d)\n"
              "  -h, --help     this text\n"
              "See proxyhost-passwd(1).\n",
              PWHASH_MIN_ITER, PWHASH_MAX_ITER, PWHASH_DEFAULT_ITER);
      return opt == 'h' ? 0 : 2;
    }
  }
  char pw[512];
  if (!fgets(pw, sizeof(pw), stdin)) {
    fprintf(stderr, "proxyhost-passwd: no password on standard input\n");
    return 2;
  }
  size_t len = strcspn(pw, "\r\n");
  pw[len] = '\0';
  if (len == 0 || len > 255) {
    fprintf(stderr, "proxyhost-passwd: the password must be 1..255 bytes\n");
    OPENSSL_cleanse(pw, sizeof(pw));
    return 2;
  }
  char out[PWHASH_TEXT_MAX];
  int rc = pwhash_create(pw, len, (uint32_t)iter, out, sizeof(out));
  OPENSSL_cleanse(pw, sizeof(pw));
  if (rc < 0) {
    fprintf(stderr, "proxyhost-passwd: hashing failed\n");
    return 1;
  }
  puts(out);
  return 0;
}
