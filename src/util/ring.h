/* ring.h: lock-free single-producer single-consumer ring of fixed-size slots. */
#ifndef CONTINUO_UTIL_RING_H
#define CONTINUO_UTIL_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Exactly one thread pushes and exactly one other thread pops.  The
 * producer publishes a slot with a release store of HEAD after writing it;
 * the consumer reads HEAD with acquire, copies the slot, then publishes
 * TAIL with release so the producer may reuse it.  Push and pop never
 * block and never allocate; memory is allocated once by ring_init.
 * Wake-ups are not the ring's business: pair it with an eventfd. */
typedef struct ring {
    unsigned char *slots;       /* capacity * elem; owned */
    size_t elem;                /* bytes per slot */
    size_t mask;                /* capacity - 1 (capacity is a power of two) */
    _Atomic size_t head;        /* next slot to write (producer) */
    _Atomic size_t tail;        /* next slot to read (consumer) */
} ring;

/* CAPACITY is rounded up to a power of two.  Returns 0 or -1 (no memory). */
static inline int ring_init(ring *r, size_t capacity, size_t elem)
{
    size_t cap = 1;
    while (cap < capacity)
        cap <<= 1;
    r->slots = calloc(cap, elem);
    if (!r->slots)
        return -1;
    r->elem = elem;
    r->mask = cap - 1;
    atomic_init(&r->head, 0);
    atomic_init(&r->tail, 0);
    return 0;
}

static inline void ring_free(ring *r)
{
    free(r->slots);
    r->slots = NULL;
}

/* Producer: copies ITEM in; returns 0, or -1 when the ring is full. */
static inline int ring_push(ring *r, const void *item)
{
    size_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    size_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
    if (head - tail > r->mask)
        return -1;
    memcpy(r->slots + (head & r->mask) * r->elem, item, r->elem);
    atomic_store_explicit(&r->head, head + 1, memory_order_release);
    return 0;
}

/* Producer: 1 when the consumer has taken every item pushed. */
static inline int ring_drained(ring *r)
{
    return atomic_load_explicit(&r->tail, memory_order_acquire) ==
           atomic_load_explicit(&r->head, memory_order_relaxed);
}

/* Consumer: copies the oldest item out; returns 1, or 0 when empty. */
static inline int ring_pop(ring *r, void *item)
{
    size_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    size_t head = atomic_load_explicit(&r->head, memory_order_acquire);
    if (head == tail)
        return 0;
    memcpy(item, r->slots + (tail & r->mask) * r->elem, r->elem);
    atomic_store_explicit(&r->tail, tail + 1, memory_order_release);
    return 1;
}

#endif
