// SPDX-License-Identifier: GPL-2.0-or-later
/* stall.c - pipes that wait too long for their destination
 *
 * Theory of operation: a splice pipe is lent while it holds bytes, and the
 * pool is bounded (--max-pipes). A receiver that stops reading would keep
 * its pipe for as long as it likes, so that a few stalled clients could
 * hold every pipe. Each worker keeps a list of the pipes that wait for
 * their destination, with the time each began to; a timer that runs only
 * while the list is not empty hands each one that waited PIPE_HOLD_MAX to
 * its owner, which moves the bytes to a buffer and gives the pipe back.
 *
 * The list knows nothing of connections: its entries are embedded in
 * their owners, and the owner's move() callback does the moving.
 */
#include "config.h"

#include <stddef.h>

#include "common/counter.h"
#include "conn/stall.h"

/* A pipe whose destination has taken none of its bytes for this long is
 * moved to a buffer, so that stalled receivers cannot hold the pool. */
#define PIPE_HOLD_MAX 1.0

/**
 * stall_forget() - take an entry off the list
 * @sl:	the list
 * @s:	the entry, listed or not
 */
void stall_forget(struct stall_list *sl, struct stall *s)
{
	if (!s->since)
		return;
	if (s->prev)
		s->prev->next = s->next;
	else
		sl->head = s->next;
	if (s->next)
		s->next->prev = s->prev;
	s->prev = s->next = NULL;
	s->since = 0;
}

/**
 * stall_note() - a pipe waits for its destination
 * @sl:	the list
 * @s:	its entry
 *
 * The first time, it goes on the list with the time; the check that runs
 * while the list is not empty hands it to its owner if it is still
 * waiting PIPE_HOLD_MAX later.
 */
void stall_note(struct stall_list *sl, struct stall *s)
{
	if (s->since)
		return;
	s->since = ev_now(sl->loop);
	s->prev = NULL;
	s->next = sl->head;
	if (sl->head)
		sl->head->prev = s;
	sl->head = s;
	if (!ev_is_active(&sl->check))
		ev_timer_again(sl->loop, &sl->check);
}

/**
 * stall_expired() - the first listed entry that waited too long
 * @sl:		the list
 * @now:	the loop's time
 *
 * Return: the entry, or NULL.
 */
static struct stall *stall_expired(struct stall_list *sl, ev_tstamp now)
{
	for (struct stall *s = sl->head; s; s = s->next)
		if (now - s->since >= PIPE_HOLD_MAX)
			return s;
	return NULL;
}

/**
 * on_stall_check() - move the bytes of pipes that waited too long
 * @loop:	the thread's loop
 * @t:		&stall_list.check
 * @revents:	unused
 */
static void on_stall_check(struct ev_loop *loop, ev_timer *t, int revents)
{
	struct stall_list *sl = t->data;
	ev_tstamp now = ev_now(loop);
	struct stall *s;
	int r;

	(void)revents;
	while ((s = stall_expired(sl, now))) {
		stall_forget(sl, s);
		r = sl->move(s);
		if (r == 0)
			counter_add(&sl->moved, 1);
		else if (r > 0) /* no buffer: the pipe stays; try again later */
			stall_note(sl, s);
	}
	if (!sl->head)
		ev_timer_stop(loop, t);
}

/**
 * stall_list_init() - set up a thread's empty list
 * @sl:		the list
 * @loop:	the thread's loop
 * @move:	the owners' way to move a pipe's bytes (see struct stall_list)
 */
void stall_list_init(struct stall_list *sl, struct ev_loop *loop,
		     int (*move)(struct stall *s))
{
	sl->loop = loop;
	sl->head = NULL;
	sl->move = move;
	ev_init(&sl->check, on_stall_check);
	sl->check.repeat = PIPE_HOLD_MAX / 2;
	sl->check.data = sl;
}

/**
 * stall_list_stop() - stop the check, for the thread's end
 * @sl:	the list
 */
void stall_list_stop(struct stall_list *sl)
{
	ev_timer_stop(sl->loop, &sl->check);
}

/**
 * stall_moved() - how many pipes were moved, from any thread
 * @sl:	the list
 *
 * Return: the count.
 */
uint64_t stall_moved(const struct stall_list *sl)
{
	return counter_read(&sl->moved);
}
