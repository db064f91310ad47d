// SPDX-License-Identifier: GPL-2.0-or-later
/* connhost.c - a thread's side of its connections, as it reads them
 *
 * Theory of operation: a worker embeds a struct conn_host, which is set
 * up here (conn_host_init()) and written by conn.c's rooms alone. The worker, and through it
 * the main thread, read it here: its gauges and counters (counter.h, so
 * that any thread may), and whether any connection is left. A new
 * connection's two descriptors are reserved from the process's budget
 * here before the accept, and given back here: when the client is turned
 * away, or when the connection ends.
 */
#include "config.h"

#include <stddef.h>
#include <string.h>

#include "budget.h"
#include "conn.h"
#include "connhost.h"
#include "connstate.h"
#include "counter.h"
#include "proxy.h"
#include "pump.h"

/* Descriptors a connection holds: the client socket and the backend's. */
#define CONN_FDS 2

/* The last connection number given out, in any worker. */
static uint64_t conn_last_id;

/**
 * dir_unpipe() - move a stalled direction's pipe into a buffer
 * @s:	&dir.stall, handed over by stall.c
 *
 * Return: as pump_unpipe(); on failure the connection has ended.
 */
static int dir_unpipe(struct stall *s)
{
	struct dir *d = (struct dir *)((char *)s - offsetof(struct dir, stall));
	int r = pump_unpipe(&d->pump);

	if (r < 0)
		conn_end(d->c, END_ERROR, strerror(d->pump.err));
	return r;
}

/**
 * conn_host_init() - set up a thread's side of its connections
 * @h:		the host, in the thread's struct
 * @px:		the process
 * @loop:	the thread's loop
 * @id:		the thread's number
 * @pipes:	its splice pipes
 * @bufs:	its copy buffers
 * @timing:	its spare timing blocks
 * @ops:	its calls back (see struct conn_host_ops)
 * @ctx:	their argument
 */
void conn_host_init(struct conn_host *h, struct proxy *px, struct ev_loop *loop,
		    unsigned id, struct pipe_pool *pipes, struct buf_pool *bufs,
		    struct timing_pool *timing, const struct conn_host_ops *ops,
		    void *ctx)
{
	*h = (struct conn_host){ .px = px,
				 .loop = loop,
				 .id = id,
				 .pipes = pipes,
				 .bufs = bufs,
				 .timing = timing,
				 .ops = ops,
				 .ctx = ctx };
	stall_list_init(&h->stalls, loop, dir_unpipe);
}

/**
 * conn_host_new_id() - the next connection's number
 *
 * Return: a number no connection of this process, or of those it took
 * over from (conn_host_ids_from()), had.
 */
uint64_t conn_host_new_id(void)
{
	return __atomic_add_fetch(&conn_last_id, 1, __ATOMIC_RELAXED);
}

/**
 * conn_host_last_id() - the last number conn_host_new_id() gave
 *
 * Return: it, 0 if none.
 */
uint64_t conn_host_last_id(void)
{
	return __atomic_load_n(&conn_last_id, __ATOMIC_RELAXED);
}

/**
 * conn_host_ids_from() - go on numbering where a previous process stopped
 * @last:	the last number it gave
 */
void conn_host_ids_from(uint64_t last)
{
	__atomic_store_n(&conn_last_id, last, __ATOMIC_RELAXED);
}

/**
 * conn_host_reserve_force() - take a connection's descriptors, even past
 *			       the budget
 * @h:	the host
 *
 * For a connection a handover brings in: its process kept within the
 * same budget. conn_host_unreserve() gives them back as for any other.
 */
void conn_host_reserve_force(struct conn_host *h)
{
	budget_force(&h->px->limits.fds, CONN_FDS);
}


/**
 * conn_host_sits_in() - the thread sits in this network namespace now
 * @h:		the host
 * @netns_ino:	the namespace's inode
 */
void conn_host_sits_in(struct conn_host *h, ino_t netns_ino)
{
	h->netns_ino = netns_ino;
}

/**
 * conn_host_empty() - has the thread no connection left
 * @h:	the host, from its own thread
 *
 * Return: true if none is open.
 */
bool conn_host_empty(const struct conn_host *h)
{
	return !h->conns;
}

/**
 * conn_host_active() - connections open in a thread, from any thread
 * @h:	the host
 *
 * Return: the gauge.
 */
uint64_t conn_host_active(const struct conn_host *h)
{
	return counter_read(&h->active);
}

/**
 * conn_host_accepted() - connections a thread ever opened, from any thread
 * @h:	the host
 *
 * Return: the counter.
 */
uint64_t conn_host_accepted(const struct conn_host *h)
{
	return counter_read(&h->accepted);
}

/**
 * conn_host_pipe_stalls() - pipes a thread moved to a buffer after they
 *			     waited too long, from any thread
 * @h:	the host
 *
 * Return: the counter.
 */
uint64_t conn_host_pipe_stalls(const struct conn_host *h)
{
	return stall_moved(&h->stalls);
}

/**
 * conn_host_reserve() - take a new connection's descriptors from the budget
 * @h:	the host
 *
 * Return: true if the budget could spare them; then conn_open() or
 * conn_host_unreserve() must follow.
 */
bool conn_host_reserve(struct conn_host *h)
{
	return budget_take(&h->px->limits.fds, CONN_FDS);
}

/**
 * conn_host_unreserve() - give back what conn_host_reserve() took
 * @h:	the host
 */
void conn_host_unreserve(struct conn_host *h)
{
	budget_give(&h->px->limits.fds, CONN_FDS);
}

/**
 * conn_host_count_accepted() - carry over what a handover's old process
 *				accepted, so that the count never falls
 * @h:	the host, whose thread does not run yet
 * @n:	connections
 */
void conn_host_count_accepted(struct conn_host *h, uint64_t n)
{
	counter_add(&h->accepted, n);
}
