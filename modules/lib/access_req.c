/* SPDX-License-Identifier: BSD-2-Clause */
/* Reading an "access" question (access_req.h). */
#include "access_req.h"

#include <string.h>

#include "host_norm.h"

/* 1..ACCESS_REQ_NAME_MAX bytes; NULL is allowed when may_be_null. */
static int name_ok(const char *s, int may_be_null) {
  if (!s)
    return may_be_null;
  size_t n = strnlen(s, ACCESS_REQ_NAME_MAX + 1);
  return n >= 1 && n <= ACCESS_REQ_NAME_MAX;
}

int access_req_read(const ph_access_request *req, ph_access_request *out) {
  memset(out, 0, sizeof(*out));
  if (!req || req->size < PH_ACCESS_REQUEST_MIN_SIZE)
    return PH_EINVAL;
  memcpy(out, req, PH_ACCESS_REQUEST_MIN_SIZE);
  if (PH_ACCESS_HAS(ph_access_request, req->size, agent))
    out->agent = req->agent;
  out->size = sizeof(*out);
  if (out->protocol != PH_PROTO_TCP || out->port == 0 ||
      !host_norm_ok(out->host) || !name_ok(out->principal, 1) ||
      !name_ok(out->agent, 1))
    return PH_EINVAL;
  return PH_OK;
}
