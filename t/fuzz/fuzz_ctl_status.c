/* SPDX-License-Identifier: BSD-2-Clause */
/* libFuzzer target: what proxyhostctl reads from GET /v1/status (issue
 * 28), network bytes from the admin listener: the summary
 * (tools/ctl_status_print.c) and agent list's live columns
 * (tools/ctl_live.c).
 *
 * Input: byte 0 bit 0 picks the reader (0 the summary, 1 a page of the
 * agents table); byte 1 the width (the summary: 0..255, clamped by the
 * printer) and the rows shown (bits 0-2); the rest is the body. Contract
 * checked:
 *   - the summary returns 0 or -1, and prints nothing with -1;
 *   - every line it prints is at most the clamped width in characters,
 *     and holds no control byte (C0, DEL, a C1 control's UTF-8);
 *   - the live reader returns -1 or the rows on the page; with -1 it marks
 *     nothing; it never touches a name, marks online 0 or 1, and leaves
 *     each node NUL-terminated without control or non-ASCII bytes. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_live.h"
#include "ctl_status_print.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void summary(const char *body, size_t len, unsigned width,
                    unsigned rows) {
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  if (!f)
    return;
  ctl_status_view v = {width, rows};
  int rc = ctl_print_status(f, body, len, &v);
  fclose(f);
  if ((rc != 0 && rc != -1) || (rc < 0 && n != 0))
    abort();
  unsigned cap = width < CTL_STATUS_WIDTH_MIN   ? CTL_STATUS_WIDTH_MIN
                 : width > CTL_STATUS_WIDTH_MAX ? CTL_STATUS_WIDTH_MAX
                                                : width;
  size_t chars = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)buf[i];
    if (c == '\n') {
      chars = 0;
      continue;
    }
    if (c < 0x20 || c == 0x7f ||
        (c == 0xc2 && i + 1 < n && (unsigned char)buf[i + 1] >= 0x80 &&
         (unsigned char)buf[i + 1] <= 0x9f))
      abort();
    if ((c & 0xc0) != 0x80 && ++chars > cap)
      abort();
  }
  free(buf);
}

static void live(const char *body, size_t len) {
  static const char *const names[] = {"edge-1", "edge-2", "a", "x"};
  ctl_live_agent a[4];
  memset(a, 0, sizeof(a));
  for (size_t i = 0; i < 4; i++)
    snprintf(a[i].name, sizeof(a[i].name), "%s", names[i]);
  int more = 7;
  int64_t off = -7;
  long rows = ctl_live_page(body, len, a, 4, &more, &off);
  if (rows < -1 || (more != 0 && more != 1) || off < 0)
    abort();
  for (size_t i = 0; i < 4; i++) {
    if (strcmp(a[i].name, names[i]) != 0 || (a[i].online & ~1) ||
        (rows < 0 && (a[i].online || a[i].node[0])) ||
        (rows < 0 && a[i].last_seen[0]) ||
        !memchr(a[i].node, '\0', sizeof(a[i].node)) ||
        !memchr(a[i].last_seen, '\0', sizeof(a[i].last_seen)))
      abort();
    for (const char *q = a[i].node; *q; q++)
      if ((unsigned char)*q < 0x20 || *q == 0x7f || (*q & 0x80))
        abort();
    for (const char *q = a[i].last_seen; *q; q++)
      if ((unsigned char)*q < 0x20 || *q == 0x7f || (*q & 0x80))
        abort();
  }
}

/* The modules table agent list reads to find the tunnel servers: every
 * name copied is NUL-terminated and of [a-z0-9_.], never more than max. */
static void servers(const char *body, size_t len) {
  char names[3][CTL_LIVE_INSTANCE_MAX + 1];
  memset(names, 0x55, sizeof(names));
  long n = ctl_live_servers(body, len, names, 2);
  if (n < -1 || n > 2 || names[2][0] != 0x55)
    abort();
  for (long i = 0; i < n; i++) {
    if (!memchr(names[i], '\0', sizeof(names[i])) || !names[i][0])
      abort();
    for (const char *q = names[i]; *q; q++)
      if (!((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') ||
            *q == '_' || *q == '.'))
        abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2)
    return 0;
  const char *body = (const char *)data + 2;
  if (data[0] & 1) {
    live(body, size - 2);
    servers(body, size - 2);
  }
  else
    summary(body, size - 2, data[1], (data[1] & 7) + 1);
  return 0;
}
