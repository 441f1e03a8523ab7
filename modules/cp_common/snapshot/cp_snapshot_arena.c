/* SPDX-License-Identifier: BSD-2-Clause */
/* The bounded, wiped bump arena of cp_snapshot_arena.h. */
#include "cp_snapshot_arena.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#define CHUNK_MIN ((size_t)4096)
#define CHUNK_MAX ((size_t)1 << 20)
#define ALIGN ((size_t)16)

struct chunk {
  struct chunk *next;
  size_t size, used; /* bytes of data[] */
  _Alignas(16) unsigned char data[];
};

struct cp_arena {
  struct chunk *head;
  size_t cap, total, next_size;
};

cp_arena *cp_arena_new(size_t cap) {
  cp_arena *a = calloc(1, sizeof *a);
  if (!a)
    return NULL;
  a->cap = cap;
  a->next_size = CHUNK_MIN;
  return a;
}

void cp_arena_free(cp_arena *a) {
  if (!a)
    return;
  for (struct chunk *c = a->head, *n; c; c = n) {
    n = c->next;
    OPENSSL_cleanse(c->data, c->used);
    free(c);
  }
  free(a);
}

static struct chunk *grow(cp_arena *a, size_t need) {
  size_t size = a->next_size;
  if (need > size)
    size = need; /* a large request gets a chunk of its own size */
  if (size > a->cap || a->total > a->cap - size)
    return NULL;
  struct chunk *c = malloc(sizeof *c + size);
  if (!c)
    return NULL;
  c->size = size;
  c->used = 0;
  c->next = a->head;
  a->head = c;
  a->total += size;
  if (a->next_size < CHUNK_MAX)
    a->next_size *= 2;
  return c;
}

void *cp_arena_alloc(cp_arena *a, size_t n) {
  if (!a || n > CHUNK_MAX * 4096)
    return NULL;
  if (n == 0)
    n = 1;
  n = (n + ALIGN - 1) & ~(ALIGN - 1);
  struct chunk *c = a->head;
  if (!c || c->size - c->used < n) {
    c = grow(a, n);
    if (!c)
      return NULL;
  }
  void *p = c->data + c->used;
  c->used += n;
  memset(p, 0, n);
  return p;
}

void *cp_arena_array(cp_arena *a, size_t n, size_t size) {
  if (size && n > SIZE_MAX / size)
    return NULL;
  return cp_arena_alloc(a, n * size);
}

void *cp_arena_memdup(cp_arena *a, const void *p, size_t n) {
  void *d = cp_arena_alloc(a, n);
  if (d && n)
    memcpy(d, p, n);
  return d;
}

char *cp_arena_strdup(cp_arena *a, const char *s) {
  if (!s)
    s = "";
  return cp_arena_memdup(a, s, strlen(s) + 1);
}

size_t cp_arena_bytes(const cp_arena *a) { return a ? a->total : 0; }

static void *pb_alloc(void *ud, size_t n) { return cp_arena_alloc(ud, n); }
static void pb_free(void *ud, void *p) {
  (void)ud;
  (void)p; /* released with the arena */
}

void cp_arena_allocator(cp_arena *a, ProtobufCAllocator *out) {
  out->alloc = pb_alloc;
  out->free = pb_free;
  out->allocator_data = a;
}
