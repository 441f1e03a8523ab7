/* SPDX-License-Identifier: BSD-2-Clause */
#include <stdlib.h>

#include "cs_unary.h"

static void abandon(cs_link *l) {
  cs_unary *u = (cs_unary *)l;
  cs_auth_cancel(u->m, &u->auth_call);
  free(u);
}

static void on_cancel(void *arg, cp_grpc_call *call) {
  cs_unary *u = arg;
  (void)call;
  cs_link_del(&u->link);
  abandon(&u->link);
}

cs_unary *cs_unary_new(cs *m, cp_grpc_call *call, cs_method meth,
                       int64_t start_ms) {
  return cs_unary_new_size(m, call, meth, start_ms, sizeof(cs_unary));
}

cs_unary *cs_unary_new_size(cs *m, cp_grpc_call *call, cs_method meth,
                            int64_t start_ms, size_t size) {
  cs_unary *u = size >= sizeof(*u) ? calloc(1, size) : NULL;
  if (!u)
    return NULL;
  u->m = m;
  u->call = call;
  u->method = meth;
  u->start_ms = start_ms;
  cp_grpc_call_on_cancel(call, on_cancel, u);
  cs_link_add(m, &u->link, abandon);
  return u;
}

void cs_unary_end(cs_unary *u, int status, const char *msg,
                  const uint8_t *resp, size_t len) {
  cs_link_del(&u->link);
  cs_finish(u->m, u->call, u->method, u->start_ms, status, msg, resp, len);
  free(u);
}

void cs_unary_started(cs_unary *u, int64_t id) {
  if (id > 0) {
    u->auth_call = id;
    return;
  }
  u->auth_call = 0;
  cs_unary_end(u,
               id == PH_EINVAL ? CP_GRPC_INVALID_ARGUMENT : CP_GRPC_UNAVAILABLE,
               id == PH_EINVAL ? "a field out of bounds"
                               : "the authority is busy",
               NULL, 0);
}

int cs_unary_refused(cs_unary *u, const cp_auth_reply *rep) {
  u->auth_call = 0;
  cs_note_auth(u->m, rep->result);
  if (rep->result == CP_AUTH_OK || rep->result == CP_AUTH_REPLAY)
    return 0;
  cs_unary_end(u, cp_auth_grpc_status(rep->result), cs_auth_why(rep->result),
               NULL, 0);
  return 1;
}

void *cs_unary_joining(cs_req *f, cs_method meth, size_t size,
                       size_t session_off) {
  cs_unary *u = cs_unary_new_size(f->m, f->call, meth, f->start, size);
  if (!u) {
    f->st = CP_GRPC_RESOURCE_EXHAUSTED;
    f->why = "out of memory";
    return NULL;
  }
  if (f->m->auth->new_session_id((char *)u + session_off) != PH_OK) {
    f->st = CP_GRPC_UNAVAILABLE;
    f->why = "no random session id";
    cs_unary_end(u, f->st, f->why, NULL, 0);
    f->st = -1; /* answered already */
    return NULL;
  }
  return u;
}

void cs_unary_launch(cs_req *f, cs_unary *u, int64_t id) {
  if (id > 0) {
    u->auth_call = id;
    return;
  }
  f->st = id == PH_EINVAL ? CP_GRPC_INVALID_ARGUMENT : CP_GRPC_UNAVAILABLE;
  f->why = f->st == CP_GRPC_INVALID_ARGUMENT ? "an identifier out of bounds"
                                             : "the authority is busy";
}

void cs_unary_close(cs_req *f, cs_unary *u, cs_method meth, void *q) {
  if (f->st > 0 && !u) {
    cs_request_fail(f, meth, q);
    return;
  }
  if (q)
    protobuf_c_message_free_unpacked(q, NULL);
  if (f->st > 0)
    cs_unary_end(u, f->st, f->why, NULL, 0);
}

const char *cs_auth_why(cp_auth_result r) {
  switch (r) {
  case CP_AUTH_OK:
  case CP_AUTH_REPLAY:
    return NULL;
  case CP_AUTH_STALE_SESSION:
    return "the session is not current";
  case CP_AUTH_FENCE_CLOSED:
    return "runtime fence closed: no positive acknowledgement";
  case CP_AUTH_BASELINE_MISMATCH:
    return "version or epoch is not the acknowledged baseline";
  case CP_AUTH_STALE_EPOCH:
    return CP_STATUS_MSG_STALE_EPOCH; /* the gateway reads it: cp_status.h */
  case CP_AUTH_NOT_ISSUED:
    return "no such snapshot was issued to this session";
  case CP_AUTH_SEQ_SMALLER:
    return "sequence below the last accepted";
  case CP_AUTH_SEQ_CONFLICT:
    return "the last accepted sequence with other content";
  case CP_AUTH_LIMIT:
    return "a limit of the authority";
  default:
    return "the authority did not answer";
  }
}
