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
 * Lifecycle of a slot: created by pipepool_get() when the free list is empty
 * and the budget allows; lent; then either pipepool_put() (empty, back on the
 * free list) or pipepool_drop() (closed: it may still hold bytes of a
 * connection that was reset, and those must never reach another connection).
 * pipepool_trim(), called every few seconds, closes the free pipes that were
 * not lent once during the whole interval, so an idle pool shrinks back to
 * nothing instead of keeping its peak number of descriptors open for good.
 *
 * When the budget is spent (--max-pipes, or the descriptors that
 * connections leave), or the kernel refuses a new pipe (EMFILE, ENFILE),
 * pipepool_get() returns NULL and the caller copies instead: no error
 * reaches a client because pipes ran out.
 *
 * A pipe is never lent smaller than --pipe-size. Without CAP_SYS_RESOURCE
 * (or CAP_SYS_ADMIN), once a user's pipes hold more than
 * /proc/sys/fs/pipe-user-pages-soft pages, the kernel makes new pipes of
 * two pages and refuses to grow them: spliced 8 KiB at a time, a stream
 * would cost a hundred times the system calls. pipepool_fit_kernel() caps
 * --max-pipes at start so that smbsplice's own pipes stay under that
 * limit, and a pipe that still comes out small (the user's other
 * processes hold pipes too) is closed unused and counted, and no new pipe
 * is tried for a second: the copy pump serves meanwhile.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/stat.h>

#include <stdio.h>
#include <time.h>
#include <linux/capability.h>

#include "common/counter.h"
#include "common/log.h"
#include "io/pipepool.h"

/* After a pipe came out smaller than asked, how long to copy instead. */
#define SMALL_PIPE_BACKOFF 1

/**
 * pipepool_init() - set up an empty pool
 * @p:		the pool
 * @budget:	the process-wide cap, shared with the other pools
 * @size:	size to request for each pipe
 */
void pipepool_init(struct pipe_pool *p, struct pipe_budget *budget, size_t size)
{
	*p = (struct pipe_pool){ .budget = budget, .size = size };
}

/**
 * pipe_budget_take() - reserve room for one more pipe
 * @b:	the budget
 *
 * A pipe needs room under --max-pipes and two descriptors that
 * connections do not need.
 *
 * Return: true if the pipe may be created.
 */
static bool pipe_budget_take(struct pipe_budget *b)
{
	if (!budget_take(&b->pipes, 1))
		return false;
	if (b->fds && !budget_take(b->fds, 2)) {
		budget_give(&b->pipes, 1);
		return false;
	}
	return true;
}

/**
 * pipe_budget_give() - a pipe was closed
 * @b:	the budget
 */
static void pipe_budget_give(struct pipe_budget *b)
{
	budget_give(&b->pipes, 1);
	if (b->fds)
		budget_give(b->fds, 2);
}

/**
 * pipepool_budget_open() - pipes open in the whole process
 * @b:	the budget
 *
 * Return: the count.
 */
unsigned pipepool_budget_open(const struct pipe_budget *b)
{
	return (unsigned)budget_used(&b->pipes);
}

/**
 * coarse_now() - seconds on a cheap monotonic clock
 *
 * Return: CLOCK_MONOTONIC_COARSE, in whole seconds.
 */
static int64_t coarse_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec;
}

/**
 * pipepool_new_slot() - open a new pipe of the pool's size
 * @p:	the pool, for the requested size
 *
 * Return: the slot, or NULL if the kernel refused a pipe, would not give
 * it the pool's size, or memory ran out.
 */
static struct pipe_slot *pipepool_new_slot(struct pipe_pool *p)
{
	struct pipe_slot *s;
	int fds[2], got;

	if (p->retry_at && coarse_now() < p->retry_at)
		return NULL;
	if (pipe2(fds, O_NONBLOCK | O_CLOEXEC))
		return NULL;
	fcntl(fds[1], F_SETPIPE_SZ, (int)p->size);
	got = fcntl(fds[1], F_GETPIPE_SZ);
	if (got < 0 || (size_t)got < p->size) {
		close(fds[0]);
		close(fds[1]);
		counter_add(&p->small, 1);
		p->retry_at = coarse_now() + SMALL_PIPE_BACKOFF;
		log_rate(
			LOG_LVL_WARN,
			"the kernel gave a %d-byte pipe, not --pipe-size %zu: copying instead (without CAP_SYS_RESOURCE a user's pipes are capped by /proc/sys/fs/pipe-user-pages-soft; lower --max-pipes or --pipe-size)",
			got, p->size);
		return NULL;
	}
	p->retry_at = 0;
	s = malloc(sizeof(*s));
	if (!s) {
		close(fds[0]);
		close(fds[1]);
		return NULL;
	}
	s->rd = fds[0];
	s->wr = fds[1];
	s->cap = (size_t)got;
	s->next = NULL;
	counter_add(&p->created, 1);
	return s;
}

/**
 * pipepool_get() - borrow an empty pipe
 * @p:	the pool
 *
 * Return: a pipe, or NULL when the budget is spent or no pipe can be made;
 * the caller then uses the copy pump.
 */
struct pipe_slot *pipepool_get(struct pipe_pool *p)
{
	struct pipe_slot *s = p->free;

	if (s) {
		p->free = s->next;
		counter_sub(&p->nfree, 1);
		if (p->nfree < p->low)
			p->low = p->nfree;
	} else if (!pipe_budget_take(p->budget)) {
		counter_add(&p->denied, 1);
		return NULL;
	} else if (!(s = pipepool_new_slot(p))) {
		pipe_budget_give(p->budget);
		counter_add(&p->denied, 1);
		return NULL;
	}
	counter_add(&p->lent, 1);
	return s;
}

/**
 * pipepool_put() - give back a pipe that is empty
 * @p:	the pool
 * @s:	the pipe; the caller guarantees it holds no bytes
 */
void pipepool_put(struct pipe_pool *p, struct pipe_slot *s)
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
	pipe_budget_give(p->budget);
}

/**
 * pipepool_drop() - close a lent pipe that may still hold bytes
 * @p:	the pool
 * @s:	the pipe, lent from @p
 */
void pipepool_drop(struct pipe_pool *p, struct pipe_slot *s)
{
	slot_close(p, s);
	counter_sub(&p->lent, 1);
}

/**
 * pipepool_trim() - close the free pipes that sat unused since the last trim
 * @p:	the pool
 *
 * The last @low pipes of the free list (the list is most recently returned
 * first) were not lent once since the last call.
 *
 * Return: how many pipes were closed.
 */
unsigned pipepool_trim(struct pipe_pool *p)
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
 * pipepool_destroy() - close every free pipe (lent ones belong to connections)
 * @p:	the pool
 */
void pipepool_destroy(struct pipe_pool *p)
{
	p->low = p->nfree;
	pipepool_trim(p);
}

/**
 * read_proc_ulong() - a number from a /proc/sys file
 * @path:	the file
 * @out:	the number
 *
 * Return: 0, or -1 if it could not be read.
 */
static int read_proc_ulong(const char *path, unsigned long *out)
{
	FILE *f = fopen(path, "re");
	int ok;

	if (!f)
		return -1;
	ok = fscanf(f, "%lu", out) == 1;
	fclose(f);
	return ok ? 0 : -1;
}

/**
 * pipe_pages() - pages the kernel accounts to a pipe of @size bytes
 * @size:	the size asked for
 * @page:	the page size
 *
 * Return: pages, a power of two (F_SETPIPE_SZ rounds up to one).
 */
static unsigned long pipe_pages(size_t size, unsigned long page)
{
	unsigned long want = (size + page - 1) / page, n = 1;

	while (n < want)
		n <<= 1;
	return n;
}

/**
 * pipepool_fit_kernel() - size the pools to what the kernel lets this
 *			   process have
 * @size:	--pipe-size; lowered to /proc/sys/fs/pipe-max-size without
 *		CAP_SYS_RESOURCE
 * @max:	--max-pipes
 * @resource:	this process holds CAP_SYS_RESOURCE
 * @admin:	the workers, which make the pipes, keep CAP_SYS_ADMIN
 * @note:	buffer for one line saying what was changed and why, left
 *		empty when nothing was
 * @len:	its size
 *
 * Without CAP_SYS_RESOURCE a pipe may not grow past pipe-max-size, and
 * without it and CAP_SYS_ADMIN a user's pipes may hold at most
 * pipe-user-pages-soft pages in all before new ones come out tiny.
 * Capabilities are per thread, and the workers may give one up that the
 * main thread, which asks here, still holds: hence @admin. The caller
 * asks (privs_have()), as io/ ranks below priv/.
 *
 * Return: --max-pipes, lowered to what the soft limit allows.
 */
unsigned pipepool_fit_kernel(size_t *size, unsigned max, bool resource,
			     bool admin, char *note, size_t len)
{
	unsigned long page = (unsigned long)sysconf(_SC_PAGESIZE);
	unsigned long max_size, soft, fit;
	int n = 0;

	*note = '\0';
	if (!resource &&
	    !read_proc_ulong("/proc/sys/fs/pipe-max-size", &max_size) &&
	    *size > max_size) {
		n = snprintf(
			note, len,
			"--pipe-size %zu is above /proc/sys/fs/pipe-max-size (%lu), which only CAP_SYS_RESOURCE may pass: using %lu. ",
			*size, max_size, max_size);
		*size = max_size;
	}
	if (resource || admin ||
	    read_proc_ulong("/proc/sys/fs/pipe-user-pages-soft", &soft) ||
	    !soft)
		return max;
	fit = soft / pipe_pages(*size, page);
	if (fit >= max)
		return max;
	if (n >= 0 && (size_t)n < len)
		snprintf(
			note + n, len - n,
			"--max-pipes %u lowered to %lu: without CAP_SYS_RESOURCE, a user's pipes may hold %lu pages (/proc/sys/fs/pipe-user-pages-soft), and pipes past that would be 8 KiB; the copy pump serves the rest",
			max, fit, soft);
	return (unsigned)fit;
}

/**
 * pipepool_adopt() - take a pipe that holds bytes, from another process
 * @p:	the pool
 * @rd:	its read end
 * @wr:	its write end
 *
 * A handover passes the pipes of splices in flight with their bytes still
 * inside. They count against the budget like the pool's own, even past
 * its limit: the process that held them was within the same limits.
 *
 * Return: the slot, lent; or NULL (memory, or not a pipe: EINVAL), with
 * both ends closed.
 */
struct pipe_slot *pipepool_adopt(struct pipe_pool *p, int rd, int wr)
{
	struct pipe_slot *s = NULL;
	int cap = fcntl(wr, F_GETPIPE_SZ);
	struct stat a, b;

	/* Two ends of one pipe, or the image lied. */
	if (cap <= 0 || fstat(rd, &a) || fstat(wr, &b) ||
	    !S_ISFIFO(a.st_mode) || a.st_ino != b.st_ino ||
	    a.st_dev != b.st_dev)
		errno = EINVAL;
	else if ((s = malloc(sizeof(*s))))
		*s = (struct pipe_slot){ .rd = rd,
					 .wr = wr,
					 .cap = (size_t)cap };
	if (!s) {
		close(rd);
		close(wr);
		return NULL;
	}
	budget_force(&p->budget->pipes, 1);
	if (p->budget->fds)
		budget_force(p->budget->fds, 2);
	counter_add(&p->lent, 1);
	return s;
}
