/* SPDX-License-Identifier: BSD-2-Clause */
/* An intrusive doubly linked list (the shape of nginx's ngx_queue.h and
 * HAProxy's list.h): the node lives inside the element, so inserting and
 * removing cost O(1) and allocate nothing.
 *
 * The head is a sentinel node plus a count; a node also remembers its list,
 * so an element can be removed without naming the list and can tell
 * whether (and where) it is linked: `ilist_of(&e->node) == &m->running`.
 * A node not in a list has list == NULL (zero it, or ilist_node_init).
 *
 *   typedef struct req { ilist_node node; ... } req;
 *   ilist q; ilist_init(&q);
 *   ilist_push(&q, &r->node);
 *   ILIST_FOREACH_SAFE(&q, it, nx) {   // it may be removed or freed here
 *     req *r = ILIST_ENTRY(it, req, node); ...
 *   }
 *
 * ILIST_FOREACH_SAFE reads the next node before the body runs: the body may
 * remove (or free) the current element, but not the next one; code that can
 * end other elements restarts from ilist_first instead.
 *
 * Loop thread only: no locking. A list head must not be copied or moved
 * while it holds nodes (they point at its sentinel). */
#ifndef PH_ILIST_H
#define PH_ILIST_H

#include <stddef.h>

typedef struct ilist ilist;

typedef struct ilist_node {
  struct ilist_node *prev, *next;
  ilist *list; /* NULL when not linked */
} ilist_node;

struct ilist {
  ilist_node head; /* sentinel: head.next is the first, head.prev the last */
  size_t n;
};

/* The element that holds node `n` as its member `member`. */
#define ILIST_ENTRY(n, type, member)                                           \
  ((type *)(void *)((char *)(n) - offsetof(type, member)))

/* Every node of `l`, first to last; `it` may be removed in the body. */
#define ILIST_FOREACH_SAFE(l, it, nx)                                          \
  for (ilist_node *it = (l)->head.next, *nx = it->next; it != &(l)->head;     \
       it = nx, nx = it->next)

static inline void ilist_init(ilist *l) {
  l->head.prev = l->head.next = &l->head;
  l->head.list = l;
  l->n = 0;
}

static inline void ilist_node_init(ilist_node *n) {
  n->prev = n->next = NULL;
  n->list = NULL;
}

static inline int ilist_empty(const ilist *l) { return l->n == 0; }
static inline size_t ilist_len(const ilist *l) { return l->n; }

/* The list `n` is on, or NULL. */
static inline ilist *ilist_of(const ilist_node *n) { return n->list; }

static inline ilist_node *ilist_first(const ilist *l) {
  return l->n ? l->head.next : NULL;
}

static inline ilist_node *ilist_last(const ilist *l) {
  return l->n ? l->head.prev : NULL;
}

/* The node after `n` in its list, or NULL at the end. */
static inline ilist_node *ilist_next(const ilist_node *n) {
  return n->next == &n->list->head ? NULL : n->next;
}

static inline void ilist_insert_after_(ilist *l, ilist_node *at,
                                       ilist_node *n) {
  n->prev = at;
  n->next = at->next;
  at->next->prev = n;
  at->next = n;
  n->list = l;
  l->n++;
}

/* Removes `n` from its list; nothing when it is not linked. */
static inline void ilist_remove(ilist_node *n) {
  ilist *l = n->list;
  if (!l)
    return;
  n->prev->next = n->next;
  n->next->prev = n->prev;
  l->n--;
  ilist_node_init(n);
}

/* Appends `n` (moving it from the list it is on, if any). */
static inline void ilist_push(ilist *l, ilist_node *n) {
  ilist_remove(n);
  ilist_insert_after_(l, l->head.prev, n);
}

/* Prepends `n` (moving it from the list it is on, if any). */
static inline void ilist_push_front(ilist *l, ilist_node *n) {
  ilist_remove(n);
  ilist_insert_after_(l, &l->head, n);
}

/* Removes and returns the first node, or NULL when empty. */
static inline ilist_node *ilist_pop(ilist *l) {
  ilist_node *n = ilist_first(l);
  if (n)
    ilist_remove(n);
  return n;
}

#endif
