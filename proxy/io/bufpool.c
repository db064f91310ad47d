// SPDX-License-Identifier: GPL-2.0-or-later
/* bufpool.c - the pool of copy buffers
 *
 * Theory of operation: a direction reads nothing new while it holds bytes
 * it has not written, so its copy buffer is empty whenever it waits to
 * read. It therefore borrows a buffer for each copy read and gives it back
 * as soon as the buffer is flushed: a connection that waits for its peer,
 * which is what most SMB connections do most of the day, holds no buffer
 * at all, only its state.
 *
 * Lending is a pointer swap on a free list, so the hot path allocates
 * nothing. The free list is bounded twice over, so that memory falls after
 * a burst of busy connections:
 *
 *   - at most @keep buffers stay on it; one returned beyond that goes
 *     straight back to the allocator;
 *   - bufpool_trim(), called every few seconds, frees the buffers that sat
 *     unused for the whole interval (the low-water mark of the free list),
 *     coldest first. A pool in steady use keeps what it uses; an idle one
 *     drains to nothing.
 */
#include "config.h"

#include <stdlib.h>

#include "io/bufpool.h"
#include "common/counter.h"

/* A free buffer's first bytes link it into the free list. */
struct buf_node {
	struct buf_node *next;
};

/**
 * bufpool_init() - set up an empty pool
 * @p:		the pool
 * @size:	bytes per buffer
 * @keep_bytes:	how many bytes of free buffers the pool may keep; at least
 *		two buffers are kept whatever their size
 */
void bufpool_init(struct buf_pool *p, size_t size, size_t keep_bytes)
{
	size_t keep = keep_bytes / size;

	*p = (struct buf_pool){
		.size = size,
		.keep = keep < 2 ? 2 : (unsigned)keep,
	};
}

/**
 * bufpool_get() - borrow a buffer
 * @p:	the pool
 *
 * Return: a buffer of @p->size bytes, or NULL if memory ran out.
 */
void *bufpool_get(struct buf_pool *p)
{
	struct buf_node *b = p->free;

	if (b) {
		p->free = b->next;
		counter_sub(&p->nfree, 1);
		if (p->nfree < p->low)
			p->low = p->nfree;
	} else {
		b = malloc(p->size);
		if (!b)
			return NULL;
		counter_add(&p->allocs, 1);
	}
	counter_add(&p->lent, 1);
	counter_add(&p->lent_bytes, p->size);
	return b;
}

/**
 * bufpool_put() - give a buffer back
 * @p:		the pool it came from
 * @buf:	the buffer; its contents are no longer needed
 */
void bufpool_put(struct buf_pool *p, void *buf)
{
	struct buf_node *b = buf;

	counter_sub(&p->lent, 1);
	counter_sub(&p->lent_bytes, p->size);
	if (p->nfree >= p->keep) {
		free(b);
		return;
	}
	b->next = p->free;
	p->free = b;
	counter_add(&p->nfree, 1);
}

/**
 * bufpool_get_large() - a one-off buffer larger than the pool's own
 * @p:		the pool, which counts it as lent
 * @size:	its size
 *
 * For the bytes of a stalled pipe (see pump_unpipe()): rare, so it comes
 * straight from the allocator and goes straight back; but it is counted,
 * so the metrics show every byte smbsplice holds for a slow receiver.
 * Past the bound set by bufpool_bound_large(), none is lent.
 *
 * Return: the buffer, or NULL if memory ran out or the bound is reached.
 */
void *bufpool_get_large(struct buf_pool *p, size_t size)
{
	void *b;

	if (p->large && !budget_take(p->large, (long)size))
		return NULL;
	b = malloc(size);
	if (!b) {
		if (p->large)
			budget_give(p->large, (long)size);
		return NULL;
	}
	counter_add(&p->lent, 1);
	counter_add(&p->lent_bytes, size);
	return b;
}

/**
 * bufpool_bound_large() - bound the bytes of large buffers lent at once
 * @p:		the pool
 * @b:		the bytes they may take, shared by the pools it bounds
 */
void bufpool_bound_large(struct buf_pool *p, struct budget *b)
{
	p->large = b;
}

/**
 * bufpool_put_large() - give back a buffer from bufpool_get_large()
 * @p:		the pool
 * @buf:	the buffer
 * @size:	the size it was asked with
 */
void bufpool_put_large(struct buf_pool *p, void *buf, size_t size)
{
	free(buf);
	if (p->large)
		budget_give(p->large, (long)size);
	counter_sub(&p->lent, 1);
	counter_sub(&p->lent_bytes, size);
}

/**
 * bufpool_trim() - free the buffers that sat unused since the last trim
 * @p:	the pool
 *
 * The last @low buffers of the free list were not lent once since the
 * last call: free them, coldest first, and start a new interval.
 *
 * Return: how many buffers were freed.
 */
unsigned bufpool_trim(struct buf_pool *p)
{
	struct buf_node **link = &p->free, *b;
	uint64_t stay = p->nfree - p->low;
	unsigned freed = 0;

	for (uint64_t i = 0; i < stay; i++)
		link = &(*link)->next;
	while ((b = *link)) {
		*link = b->next;
		free(b);
		freed++;
	}
	counter_sub(&p->nfree, freed);
	p->low = p->nfree;
	return freed;
}

/**
 * bufpool_destroy() - free every free buffer
 * @p:	the pool; buffers still lent belong to their directions
 */
void bufpool_destroy(struct buf_pool *p)
{
	p->low = p->nfree;
	bufpool_trim(p);
}
