// SPDX-License-Identifier: GPL-2.0-or-later
/* connsetup.c - a thread's side of its connections, set up
 *
 * Theory of operation: a worker embeds a struct conn_host and has it set
 * up here, once, with the pools its connections draw on and its two calls
 * back; the host's stalled-pipe list (stall.c) is given the one thing it
 * may do to a direction, move its pipe's bytes into a buffer, which ends
 * the connection if the pipe cannot be read. Apart from connhost.c, which
 * reads the host, and conn.c, which runs its connections, so that neither
 * reaches the other.
 */
#include "config.h"

#include <stddef.h>
#include <string.h>

#include "conn/connsetup.h"
#include "conn/connstate.h"
#include "io/pump.h"
#include "conn/stall.h"

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
