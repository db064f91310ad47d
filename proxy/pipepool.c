// SPDX-License-Identifier: GPL-2.0-or-later
/* pipepool.c - the pool of splice pipes
 *
 * Theory of operation: a direction borrows a pipe only for the span of one
 * splice (socket -> pipe -> socket) and hands it back as soon as the pipe is
 * empty, so idle connections hold none and a few pipes serve many
 * connections. Returned pipes stay open on a free list: creating a pipe costs
 * pipe2() plus fcntl(F_SETPIPE_SZ), and reusing one costs nothing.
 *
 * Lifecycle of a slot: created by pool_get() when the free list is empty and
 * fewer than @max are open; lent; then either pool_put() (empty, back on the
 * free list) or pool_drop() (closed: it may still hold bytes of a connection
 * that was reset, and those must never reach another connection).
 *
 * When the cap is reached, or the kernel refuses a new pipe (EMFILE, ENFILE),
 * pool_get() returns NULL and the caller copies instead: no error reaches a
 * client because pipes ran out.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "log.h"
#include "pipepool.h"

/**
 * pool_init() - set up an empty pool
 * @p:		the pool
 * @max:	cap on open pipes
 * @size:	size to request for each pipe
 */
void pool_init(struct pipe_pool *p, unsigned max, size_t size)
{
	p->free = NULL;
	p->size = size;
	p->max = max;
	p->open = p->lent = 0;
	p->created = p->denied = 0;
	p->size_warned = 0;
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
	p->created++;
	p->open++;
	return s;
}

/**
 * pool_get() - borrow an empty pipe
 * @p:	the pool
 *
 * Return: a pipe, or NULL when the cap is reached or no pipe can be made;
 * the caller then uses the copy pump.
 */
struct pipe_slot *pool_get(struct pipe_pool *p)
{
	struct pipe_slot *s = p->free;

	if (s) {
		p->free = s->next;
	} else if (p->open >= p->max || !(s = pool_new_slot(p))) {
		p->denied++;
		return NULL;
	}
	p->lent++;
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
	p->lent--;
}

/**
 * pool_drop() - close a lent pipe that may still hold bytes
 * @p:	the pool
 * @s:	the pipe, lent from @p
 */
void pool_drop(struct pipe_pool *p, struct pipe_slot *s)
{
	close(s->rd);
	close(s->wr);
	free(s);
	p->lent--;
	p->open--;
}

/**
 * pool_destroy() - close every free pipe (lent ones belong to connections)
 * @p:	the pool
 */
void pool_destroy(struct pipe_pool *p)
{
	struct pipe_slot *s;

	while ((s = p->free)) {
		p->free = s->next;
		close(s->rd);
		close(s->wr);
		free(s);
		p->open--;
	}
}
