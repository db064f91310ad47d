/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_STALL_H
#define SMBSPLICE_STALL_H

#include <ev.h>
#include <stdint.h>

/**
 * struct stall - a pipe waiting for its destination, as the list knows it
 * @prev:	list link
 * @next:	list link
 * @since:	when it began to wait, 0 when it is not on the list
 *
 * Embedded in whatever holds the pipe; zeroed means "not listed".
 */
struct stall {
	struct stall *prev, *next;
	ev_tstamp since;
};

/**
 * struct stall_list - one thread's pipes that wait for their destination
 * @loop:	the thread's loop
 * @head:	the waiting pipes, newest first
 * @check:	runs while @head is not empty
 * @move:	moves a pipe's bytes elsewhere: returns 0 when it did, > 0
 *		when it cannot yet (the pipe stays listed), < 0 when the
 *		owner failed and went away (and took @s off the list)
 * @moved:	pipes moved (a counter any thread may read)
 */
struct stall_list {
	struct ev_loop *loop;
	struct stall *head;
	ev_timer check;
	int (*move)(struct stall *s);
	uint64_t moved;
};

void stall_list_init(struct stall_list *sl, struct ev_loop *loop,
		     int (*move)(struct stall *s));
void stall_list_stop(struct stall_list *sl);
void stall_note(struct stall_list *sl, struct stall *s);
void stall_forget(struct stall_list *sl, struct stall *s);
uint64_t stall_moved(const struct stall_list *sl);

#endif /* SMBSPLICE_STALL_H */
