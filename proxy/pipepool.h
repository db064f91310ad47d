/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_PIPEPOOL_H
#define SMBSPLICE_PIPEPOOL_H

#include <stddef.h>

/**
 * struct pipe_slot - one pipe, either lent to a direction or free
 * @rd:		read end
 * @wr:		write end
 * @cap:	capacity the kernel granted (F_GETPIPE_SZ)
 * @next:	free-list link, meaningful only while the slot is free
 */
struct pipe_slot {
	int rd, wr;
	size_t cap;
	struct pipe_slot *next;
};

/**
 * struct pipe_pool - a capped set of splice pipes shared by all connections
 * @free:	empty pipes ready to lend, most recently returned first
 * @size:	requested size of every pipe
 * @max:	cap on open pipes (lent + free)
 * @open:	pipes open now
 * @lent:	pipes lent out now
 * @created:	pipes ever created
 * @denied:	requests refused because @max was reached or pipe2() failed
 * @size_warned: a smaller-than-requested pipe was already reported
 */
struct pipe_pool {
	struct pipe_slot *free;
	size_t size;
	unsigned max, open, lent;
	unsigned long created, denied;
	int size_warned;
};

void pool_init(struct pipe_pool *p, unsigned max, size_t size);
struct pipe_slot *pool_get(struct pipe_pool *p);
void pool_put(struct pipe_pool *p, struct pipe_slot *s);
void pool_drop(struct pipe_pool *p, struct pipe_slot *s);
void pool_destroy(struct pipe_pool *p);

#endif /* SMBSPLICE_PIPEPOOL_H */
