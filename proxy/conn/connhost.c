// SPDX-License-Identifier: GPL-2.0-or-later
/* connhost.c - a thread's side of its connections, as it reads them
 *
 * Theory of operation: a worker embeds a struct conn_host, which
 * conn_host_init() (conn.c) sets up and conn/ alone writes. The worker,
 * and through it the main thread, read it here: its gauges and counters
 * (counter.h, so that any thread may), and whether any connection is left. A
 * new connection's two descriptors are reserved from the process's budget here
 * before the accept, and given back here: when the client is turned away, or
 * when the connection ends.
 */
#include "config.h"

#include "io/budget.h"
#include "conn/connhost.h"
#include "common/counter.h"
#include "core/proxy.h"
#include "net/listener.h"

/* Descriptors a connection holds: the client socket and the backend's. */
#define CONN_FDS 2

/* The last connection number given out, in any worker. */
static uint64_t conn_last_id;

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
 * conn_host_arrived() - lower a count of clients on their way to a host
 *			 (worker/balance.c's), as conn_open() counts one
 *			 open or turns it away
 * @arrival:	the count, NULL for none
 */
void conn_host_arrived(unsigned *arrival)
{
	if (arrival)
		__atomic_sub_fetch(arrival, 1, __ATOMIC_SEQ_CST);
}

/**
 * conn_host_link() - count a connection in, at the head of the host's list
 * @h:	the host
 * @c:	the connection, new or just adopted, in no list, its listener
 *	set
 */
void conn_host_link(struct conn_host *h, struct conn *c)
{
	c->prev = NULL;
	c->next = h->conns;
	if (h->conns)
		h->conns->prev = c;
	h->conns = c;
	counter_add(&h->active, 1);
	counter_add(&c->l->counters->active[h->id], 1);
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
