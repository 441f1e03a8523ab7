/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A bounded bump arena for one snapshot or delta and everything under it,
 * so that a message is freed in one call. Chunks grow geometrically (4 KiB
 * to 1 MiB, a larger request gets its own chunk); the total is capped, a
 * request past the cap fails (NULL), and the free wipes every chunk first,
 * since a full snapshot holds credential material (CP-8-5).
 */
#ifndef PH_CP_SNAPSHOT_ARENA_H
#define PH_CP_SNAPSHOT_ARENA_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

typedef struct cp_arena cp_arena;

/* A new arena whose chunks together never exceed `cap` bytes. */
cp_arena *cp_arena_new(size_t cap);
/* Wipes and frees; NULL is a no-op. */
void cp_arena_free(cp_arena *a);
/* n bytes aligned for any type, zeroed; NULL past the cap. n == 0 is a
 * valid one-byte request. */
void *cp_arena_alloc(cp_arena *a, size_t n);
/* n elements of `size` (overflow-checked), zeroed. */
void *cp_arena_array(cp_arena *a, size_t n, size_t size);
/* A copy of s (NULL taken as ""), NUL-terminated. */
char *cp_arena_strdup(cp_arena *a, const char *s);
/* A copy of n bytes (n may be 0: a valid non-NULL pointer). */
void *cp_arena_memdup(cp_arena *a, const void *p, size_t n);
/* The bytes the arena's chunks hold. */
size_t cp_arena_bytes(const cp_arena *a);
/* The arena as protobuf-c's allocator (its free does nothing). */
void cp_arena_allocator(cp_arena *a, ProtobufCAllocator *out);

#endif
