/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cp_grpc's insides, shared by its files (cq bridge, credentials, server,
 * client). Not for users of the layer.
 *
 * Tags: every gRPC operation batch carries a cp_tag embedded in the
 * object it belongs to; a tag is in flight at most once. The cq thread
 * moves completed tags to the cq's list; the loop runs tag->fn(tag, ok).
 * An object counts its tags in flight (pending) and is freed by the fn
 * that brings pending to 0 once the object has ended. While q->closing
 * (cp_grpc_cq_free), fns start no operation and call no user callback.
 */
#ifndef CP_GRPC_INT_H
#define CP_GRPC_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include <grpc/grpc.h>

#include "cp_grpc.h"
#include "lib/ilist.h"

typedef struct cp_tag cp_tag;
struct cp_tag {
  void (*fn)(cp_tag *t, int ok);
  cp_tag *next; /* in the cq's list */
  int ok;       /* set by the cq thread before it hands the tag over */
};

typedef struct cp_list {
  void *head;
} cp_list;

struct cp_grpc_cq {
  ph_ctx *ctx;
  const ph_api *api;
  grpc_completion_queue *cq;
  ph_thread *thread;
  atomic_int stop; /* the thread must return */
  pthread_mutex_t mu;
  cp_tag *head, *tail; /* completed, not yet run: mu */
  int wake_pending;    /* a thread_post is queued: mu */
  int closing;         /* cp_grpc_cq_free is running (loop thread) */
  long live;           /* objects with tags in flight (loop thread) */
  cp_grpc_server *servers;  /* loop thread */
  ilist channels; /* cp_grpc_channel, newest first */
  ilist ccalls;   /* cp_grpc_ccall, newest first */
};

/* Runs fn's state machine: starts a batch with tag t, or returns the
 * status grpc_call_start_batch gave (GRPC_CALL_OK is 0). */
grpc_call_error cp_batch(grpc_call *call, const grpc_op *ops, size_t n,
                         cp_tag *t);
/* The same for one message received into *bb. */
grpc_call_error cp_batch_recv(grpc_call *call, grpc_byte_buffer **bb,
                              cp_tag *t);

/* Bytes <-> byte buffers. cp_bb_read flattens bb into a slice (the caller
 * unrefs it). */
grpc_byte_buffer *cp_bb_new(const uint8_t *p, size_t n);
grpc_slice cp_bb_read(grpc_byte_buffer *bb);

/* Credentials from PEM files (cp_grpc_creds.c). NULL with err. A
 * server's mtls credentials come with *src, where cp_cert_source_load
 * puts renewed files for gRPC's next handshake (NULL for plaintext); it
 * must outlive the grpc_server (cp_cert_source_free after
 * grpc_server_destroy). */
typedef struct cp_cert_source cp_cert_source;
grpc_server_credentials *cp_creds_server(const cp_grpc_tls *t,
                                         cp_cert_source **src, char *err,
                                         size_t errlen);
/* Loop thread: reads and checks t's files, then hands them to the next
 * handshake. PH_OK, or PH_EINVAL with err (the files in use stay). */
int cp_cert_source_load(cp_cert_source *src, const cp_grpc_tls *t, char *err,
                        size_t errlen);
void cp_cert_source_free(cp_cert_source *src);
grpc_channel_credentials *cp_creds_client(const cp_grpc_tls *t, char *err,
                                          size_t errlen);

/* Called by cp_grpc_cq_free (loop thread, q->closing set): start ending
 * every server, channel and call of q without callbacks. */
void cp_server_close_all(cp_grpc_cq *q);
void cp_client_close_all(cp_grpc_cq *q);

int64_t cp_timespec_ms(gpr_timespec t);

#endif
