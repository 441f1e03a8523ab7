/* SPDX-License-Identifier: BSD-2-Clause */
/* libFuzzer target for the configuration store (host/conf_*.c): arbitrary
 * bytes as an INI file, then a small schema covering every key type, the
 * environment, finalize and the getters. Build (clang):
 *   clang -std=c11 -D_GNU_SOURCE -g -fsanitize=fuzzer,address,undefined \
 *     -Isdk -Ihost host/conf_*.c host/buf.c t/fuzz/fuzz_conf.c -linih
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const ph_conf_key host_keys[] = {
    {.name = "threads", .type = PH_CONF_INT, .def = "4", .min = 1, .max = 64},
    {.name = "modules", .type = PH_CONF_LIST, .max = 8},
    PH_CONF_END};

static const ph_conf_key fuzz_keys[] = {
    {.name = "name", .type = PH_CONF_STRING, .def = "x", .max = 32},
    {.name = "port", .type = PH_CONF_INT, .def = "1", .min = 1, .max = 65535},
    {.name = "offset", .type = PH_CONF_INT},
    {.name = "on", .type = PH_CONF_BOOL, .def = "no"},
    {.name = "timeout", .type = PH_CONF_DURATION, .def = "5s", .max = 3600000},
    {.name = "buffer", .type = PH_CONF_SIZE, .def = "4KiB", .min = 1},
    {.name = "peers", .type = PH_CONF_LIST, .max = 16},
    {.name = "stream.window", .type = PH_CONF_INT, .def = "8"},
    {.name = "mode", .type = PH_CONF_ENUM, .def = "a", .choices = "a|b"},
    {.name = "secret",
     .type = PH_CONF_STRING,
     .max = 8,
     .flags = PH_CONF_SENSITIVE,
     .env = "FUZZ_SECRET"},
    PH_CONF_END};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text)
    return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  /* Keep includes inside a directory that does not exist: without '/' a
   * pattern can neither be absolute nor climb out with "..", so the
   * fuzzer never reads real files. */
  for (size_t i = 0; i < size; i++)
    if (text[i] == '/')
      text[i] = '_';

  ph_buf err;
  buf_init(&err, 1 << 16);
  ph_conf *c = conf_new();
  if (!c) {
    free(text);
    return 0;
  }
  conf_load_string(c, "/nonexistent-proxyhost-fuzz/fuzz.ini", text, &err);
  (void)conf_raw(c, "fuzz", "peers", NULL);
  conf_set_cli(c, "fuzz.offset=-3", &err);
  conf_declare(c, "proxyhost", host_keys);
  conf_declare(c, "fuzz", fuzz_keys);
  char *env[] = {"PROXYHOST_FUZZ_STREAM_WINDOW=9", "FUZZ_SECRET=s3", NULL};
  if (conf_finalize(c, env, &err) == 0) {
    (void)conf_str(c, "fuzz", "name");
    (void)conf_int(c, "fuzz", "timeout");
    for (size_t i = 0; i < conf_list_len(c, "fuzz", "peers"); i++)
      (void)conf_list_at(c, "fuzz", "peers", i);
    FILE *out = fopen("/dev/null", "w");
    if (out) {
      conf_print(c, out);
      fclose(out);
    }
  }
  int64_t v;
  (void)conf_parse_duration_ms(text, &v);
  (void)conf_parse_size(text, &v);
  (void)conf_parse_bool(text, &v);
  conf_free(c);
  buf_free(&err);
  free(text);
  return 0;
}
