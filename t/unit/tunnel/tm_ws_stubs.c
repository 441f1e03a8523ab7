/* SPDX-License-Identifier: BSD-2-Clause */
/* test_tm_ws's echo session (tm_ws_stubs.h). */
#include "tm_ws_stubs.h"

#include "tunnel_common/session/tm_session_ws.h"

#include <stdlib.h>
#include <string.h>

uint32_t stub_sum(const uint8_t *p, size_t len) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < len; i++)
    h = (h ^ p[i]) * 16777619u;
  return h;
}

tm_session *stub_session_new(tm_ws_conn *c, int echo) {
  tm_session *s = calloc(1, sizeof(*s));
  if (!s)
    return NULL;
  s->c = c;
  s->echo = echo;
  return s;
}

int stub_session_send(tm_session *s, const uint8_t *p, size_t len) {
  const tm_transport *t = tm_ws_transport();
  if (s->qn >= STUB_QMAX)
    return -1;
  uint8_t *b = malloc(t->headroom + len + 1);
  if (!b)
    return -1;
  memcpy(b + t->headroom, p, len);
  s->q[s->qn] = b;
  s->qlen[s->qn++] = len;
  t->want_write(s->c);
  return 0;
}

void tm_session_on_message(tm_session *s, const uint8_t *msg, size_t len) {
  s->messages++;
  s->last_len = len;
  memcpy(s->last, msg, len < sizeof(s->last) ? len : sizeof(s->last));
  s->last_sum = stub_sum(msg, len);
  if (s->echo)
    stub_session_send(s, msg, len);
  if (s->pause_at && s->messages == s->pause_at)
    tm_ws_transport()->pause_read(s->c, 1); /* mid-read, perhaps */
}

void tm_session_on_writable(tm_session *s) {
  const tm_transport *t = tm_ws_transport();
  s->writable++;
  if (!s->qn)
    return;
  uint8_t *b = s->q[0];
  size_t n = s->qlen[0];
  memmove(&s->q[0], &s->q[1], sizeof(s->q[0]) * (size_t)(s->qn - 1));
  memmove(&s->qlen[0], &s->qlen[1], sizeof(s->qlen[0]) * (size_t)(s->qn - 1));
  s->qn--;
  if (t->write(s->c, b + t->headroom, n) < 0)
    s->write_errors++;
  free(b);
  if (s->qn)
    t->want_write(s->c);
}

void tm_session_on_transport_closed(tm_session *s) {
  /* The real session frees itself here; the stub stays for the test to
   * read, marked closed (the test frees it). */
  s->closed++;
  s->c = NULL;
}

void tm_session_on_transport_error(tm_session *s) { s->proto_errors++; }

#ifndef TM_HAVE_PROTO
/* Until tm-proto's tm_proto.c is merged: the offer and the caps of a
 * chosen name, as tm_proto.h specifies them. */
int tm_subproto_offer(unsigned caps, char *out, size_t cap) {
  char buf[128] = "";
  if ((caps & (TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL)) ==
      (TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL))
    strcat(buf, TM_SUBPROTO_FULL ", ");
  if (caps & TM_CAP_OPEN_RESULT)
    strcat(buf, TM_SUBPROTO_OPEN ", ");
  strcat(buf, TM_SUBPROTO_BASE);
  size_t n = strlen(buf);
  if (n + 1 > cap)
    return TM_ESPACE;
  memcpy(out, buf, n + 1);
  return (int)n;
}

int tm_subproto_caps(const char *name) {
  if (!name || !*name || !strcmp(name, TM_SUBPROTO_BASE))
    return 0;
  if (!strcmp(name, TM_SUBPROTO_FULL))
    return TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL;
  if (!strcmp(name, TM_SUBPROTO_OPEN))
    return TM_CAP_OPEN_RESULT;
  return -1;
}
#endif

void stub_session_free(tm_session *s) {
  if (!s)
    return;
  for (int i = 0; i < s->qn; i++)
    free(s->q[i]);
  free(s);
}
