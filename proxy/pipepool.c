// SPDX-License-Identifier: GPL-2.0-or-later
/* pipepool.c - the pools of splice pipes
 *
 * Theory of operation: a direction borrows a pipe only for the span of one
 * splice (socket -> pipe -> socket) and hands it back as soon as the pipe is
 * empty, so idle connections hold none and a few pipes serve many
 * connections. Returned pipes stay open on a free list: creating a pipe costs
 * pipe2() plus fcntl(F_SETPIPE_SZ), and reusing one costs nothing.
 *
 * Each worker thread has its own pool, so lending takes no lock. The cap,
 * --max-pipes, is one budget for the whole process: a pool reserves a slot
 * in it with one atomic add before it creates a pipe, and gives the slot
 * back when it closes one.
 *
 * Lifecycle of a slot: created by pool_get() when the free list is empty and
 * the budget allows; lent; then either pool_put() (empty, back on the free
 * list) or pool_drop() (closed: it may still hold bytes of a connection that
 * was reset, and those must never reach another connection). pool_trim(),
 * called every few seconds, closes the free pipes that were not lent once
 * during the whole interval, so an idle pool shrinks back to nothing
 * instead of keeping its peak number of descriptors open for good.
 *
 * When the budget is spent (--max-pipes, or the descriptors that
 * connections leave), or the kernel refuses a new pipe (EMFILE, ENFILE),
 * pool_get() returns NULL and the caller copies instead: no error
 * reaches a client because pipes ran out.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "counter.h"
#include "log.h"
#include "pipepool.h"

/**
 * pool_init() - set up an empty pool
 * @p:		the pool
 * @budget:	the process-wide cap, shared with the other pools
 * @size:	size to request for each pipe
 */
void pool_init(struct pipe_pool *p, struct pipe_budget *budget, size_t size)
{
	*p = (struct pipe_pool){ .budget = budget, .size = size };
}

/**
 * budget_take() - reserve room for one more pipe
 * @b:	the budget
 *
 * A pipe needs room under --max-pipes and two descriptors that
 * connections do not need.
 *
 * Return: true if the pipe may be created.
 */
static bool budget_take(struct pipe_budget *b)
{
	if (__atomic_add_fetch(&b->open, 1, __ATOMIC_RELAXED) > b->max)
		goto full;
	if (b->fds && !fd_budget_take(b->fds, 2))
		goto full;
	return true;
full:
	__atomic_sub_fetch(&b->open, 1, __ATOMIC_RELAXED);
	return false;
}

/**
 * budget_give() - a pipe was closed
 * @b:	the budget
 */
static void budget_give(struct pipe_budget *b)
{
	__atomic_sub_fetch(&b->open, 1, __ATOMIC_RELAXED);
	if (b->fds)
		fd_budget_give(b->fds, 2);
}

/**
 * pool_budget_open() - pipes open in the whole process
 * @b:	the budget
 *
 * Return: the count.
 */
unsigned pool_budget_open(const struct pipe_budget *b)
{
	return __atomic_load_n(&b->open, __ATOMIC_RELAXED);
}

/**
 * pool_new_slot() - open and size a new pipe
 * @p:	the pool, for the requested size
 *
 * Return: the slot, or NULL if the kernel refused a pipe or memory ran out.
 */
static struct pipe_slot *pool_new_slot(struct pipe_pool *p)
{
	struct pipe_slot *s;
	int fds[2], got;

	if (pipe2(fds, O_NONBLOCK | O_CLOEXEC))
		return NULL;
	s = malloc(sizeof(*s));
	if (!s) {
		close(fds[0]);
		close(fds[1]);
		return NULL;
	}
	s->rd = fds[0];
	s->wr = fds[1];
	s->next = NULL;
	/* The kernel may refuse the size (pipe-max-size, pipe-user-pages-*):
	 * the pipe still works at whatever size it has. */
	fcntl(s->wr, F_SETPIPE_SZ, (int)p->size);
	got = fcntl(s->wr, F_GETPIPE_SZ);
	s->cap = got > 0 ? (size_t)got : 4096;
	if (s->cap < p->size && !p->size_warned) {
		p->size_warned = 1;
		log_warn(
			"pipe size %zu refused, using %zu (see /proc/sys/fs/pipe-max-size and pipe-user-pages-soft)",
			p->size, s->cap);
	}
	counter_add(&p->created, 1);
	return s;
}

/**
 * pool_get() - borrow an empty pipe
 * @p:	the pool
 *
 * Return: a pipe, or NULL when the budget is spent or no pipe can be made;
 * the caller then uses the copy pump.
 */
struct pipe_slot *pool_get(struct pipe_pool *p)
{
	struct pipe_slot *s = p->free;

	if (s) {
		p->free = s->next;
		counter_sub(&p->nfree, 1);
		if (p->nfree < p->low)
			p->low = p->nfree;
	} else if (!budget_take(p->budget)) {
		counter_add(&p->denied, 1);
		return NULL;
	} else if (!(s = pool_new_slot(p))) {
		budget_give(p->budget);
		counter_add(&p->denied, 1);
		return NULL;
	}
	counter_add(&p->lent, 1);
	return s;
}

/**
 * pool_put() - give back a pipe that is empty
 * @p:	the pool
 * @s:	the pipe; the caller guarantees it holds no bytes
 */
void pool_put(struct pipe_pool *p, struct pipe_slot *s)
{
	s->next = p->free;
	p->free = s;
	counter_add(&p->nfree, 1);
	counter_sub(&p->lent, 1);
}

/**
 * slot_close() - close a pipe and give its room back to the budget
 * @p:	the pool
 * @s:	the pipe, no longer on any list
 */
static void slot_close(struct pipe_pool *p, struct pipe_slot *s)
{
	close(s->rd);
	close(s->wr);
	free(s);
	budget_give(p->budget);
}

/**
 * pool_drop() - close a lent pipe that may still hold bytes
 * @p:	the pool
 * @s:	the pipe, lent from @p
 */
void pool_drop(struct pipe_pool *p, struct pipe_slot *s)
{
	slot_close(p, s);
	counter_sub(&p->lent, 1);
}

/**
 * pool_trim() - close the free pipes that sat unused since the last trim
 * @p:	the pool
 *
 * The last @low pipes of the free list (the list is most recently returned
 * first) were not lent once since the last call.
 *
 * Return: how many pipes were closed.
 */
unsigned pool_trim(struct pipe_pool *p)
{
	struct pipe_slot **link = &p->free, *s;
	uint64_t stay = p->nfree - p->low;
	unsigned closed = 0;

	for (uint64_t i = 0; i < stay; i++)
		link = &(*link)->next;
	while ((s = *link)) {
		*link = s->next;
		slot_close(p, s);
		closed++;
	}
	counter_sub(&p->nfree, closed);
	p->low = p->nfree;
	return closed;
}

/**
 * pool_destroy() - close every free pipe (lent ones belong to connections)
 * @p:	the pool
 */
void pool_destroy(struct pipe_pool *p)
{
	p->low = p->nfree;
	pool_trim(p);
}
