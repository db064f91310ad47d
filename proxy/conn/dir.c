// SPDX-License-Identifier: GPL-2.0-or-later
/* dir.c - one direction of an open connection
 *
 * Theory of operation: a direction (struct dir) is the pump (pump.c) of
 * one way's bytes, DIR_TO_SERVER or DIR_TO_CLIENT, and the two watchers
 * that drive it. dir_step() runs the pump whenever its source is readable
 * or its destination writable, and arms exactly the one watcher the pump
 * asks for. A pipe that waits for its destination goes on the worker's
 * list of stalled pipes (stall.c), and comes off it when its destination
 * takes bytes again.
 *
 * In smb mode a step also looks at what the framer learnt: a stream it
 * gave up on, a server that invites clients around smbsplice. Each is
 * said once (connlog.c) and recorded in the direction's flags word, whose
 * bits only dir_set() sets. What a step means for the connection (it is
 * active; it has ended) is conn.c's to decide.
 */
#include "config.h"

#include <errno.h>

#include "conn/connlog.h"
#include "common/counter.h"
#include "conn/dir.h"
#include "net/listener.h"
#include "conf/options.h"

/**
 * dir_set() - record what happened to a direction
 * @d:		the direction
 * @flags:	DIR_F_* bits, never cleared
 */
static void dir_set(struct dir *d, unsigned flags)
{
	d->flags |= flags;
}

/**
 * dir_init() - set up a direction and its watchers
 * @d:		the direction
 * @c:		its connection
 * @id:		which way it goes
 * @src:	socket it reads
 * @dst:	socket it writes
 * @cb:		the watchers' callback, whose data is @d
 */
void dir_init(struct dir *d, struct conn *c, enum dir_index id,
	      struct sock *src, struct sock *dst,
	      void (*cb)(struct ev_loop *, ev_io *, int))
{
	const struct listen_opts *o = c->lo;
	struct dir_totals *tot = &c->st->tot.dir[id];

	smb_framer_init(&d->fr, &o->th, &tot->smb);
	pump_init(&d->pump, src, dst, c->host->pipes, c->host->bufs, o->splice,
		  o->mode == MODE_SMB ? &d->fr : NULL, &tot->pump);
	d->c = c;
	d->id = id;
	d->flags = 0;
	ev_io_init(&d->rd, cb, src->fd, EV_READ);
	ev_io_init(&d->wr, cb, dst->fd, EV_WRITE);
	d->rd.data = d->wr.data = d;
}

/**
 * dir_went_opaque() - a direction stopped parsing SMB: say so, once
 * @d:	the direction
 *
 * Responses forwarded opaque can no longer be paired with requests, so the
 * connection stops timing them.
 */
static void dir_went_opaque(struct dir *d)
{
	struct conn *c = d->c;

	/* One count per connection, whichever direction gives up first. */
	if (!((c->dir[DIR_TO_SERVER].flags | c->dir[DIR_TO_CLIENT].flags) &
	      DIR_F_OPAQUE))
		counter_add(&c->st->tot.opaque_conns, 1);
	dir_set(d, DIR_F_OPAQUE);
	if (d->id == DIR_TO_CLIENT)
		timing_responses_hidden(&c->tm);
	connlog_opaque(d);
}

/**
 * dir_step() - run a direction and arm the watcher it asks for
 * @d:		the direction
 * @progress:	set to whether it moved bytes
 *
 * Return: the pump's status; after PUMP_FIN the direction is done
 * (DIR_F_DONE) and its watchers are off.
 */
enum pump_status dir_step(struct dir *d, bool *progress)
{
	struct conn_host *h = d->c->host;
	uint64_t moved = d->pump.spliced + d->pump.copied;
	enum pump_status st = pump_run(&d->pump);

	*progress = d->pump.spliced + d->pump.copied != moved;
	if (d->pump.fr && !(d->flags & DIR_F_OPAQUE) &&
	    smb_framer_opaque(d->pump.fr))
		dir_went_opaque(d);
	if (d->pump.fr)
		dir_set(d, connlog_smb_warnings(d));
	switch (st) {
	case PUMP_WAIT_READ:
		stall_forget(&h->stalls, &d->stall);
		ev_io_stop(h->loop, &d->wr);
		ev_io_start(h->loop, &d->rd);
		break;
	case PUMP_WAIT_WRITE:
		/* The stall clock measures how long the destination has
		 * taken nothing: bytes written restart it. */
		if (*progress || !pump_holds_pipe(&d->pump))
			stall_forget(&h->stalls, &d->stall);
		if (pump_holds_pipe(&d->pump))
			stall_note(&h->stalls, &d->stall);
		ev_io_stop(h->loop, &d->rd);
		ev_io_start(h->loop, &d->wr);
		break;
	case PUMP_FIN:
		stall_forget(&h->stalls, &d->stall);
		ev_io_stop(h->loop, &d->rd);
		ev_io_stop(h->loop, &d->wr);
		dir_set(d, DIR_F_DONE);
		break;
	case PUMP_SRC_ERR:
	case PUMP_DST_ERR:
		break;
	}
	return st;
}

/**
 * dir_stop() - stop a direction's watchers and take it off the stall list
 * @d:	the direction, set up or only its watchers initialised
 * @h:	its connection's host
 */
void dir_stop(struct dir *d, struct conn_host *h)
{
	stall_forget(&h->stalls, &d->stall);
	ev_io_stop(h->loop, &d->rd);
	ev_io_stop(h->loop, &d->wr);
}

/* The DIR_F_* bits a direction can have. */
#define DIR_F_ALL                                                              \
	(DIR_F_DONE | DIR_F_OPAQUE | DIR_F_MULTICHANNEL | DIR_F_IFLIST)

/**
 * dir_save() - write a direction into a handover record
 * @d:		the direction, its connection paused
 * @r:		the record
 * @bytes:	set to its copy buffer's pending bytes, or NULL
 * @pipe:	set to the pipe holding its spliced bytes, or NULL
 */
void dir_save(const struct dir *d, struct dir_saved *r, const void **bytes,
	      const struct pipe_slot **pipe)
{
	pump_save(&d->pump, &r->pump, bytes, pipe);
	if (d->pump.fr)
		smb_framer_save(&d->fr, &r->fr);
	r->flags = d->flags;
}

/**
 * dir_restore() - continue a direction from a handover record
 * @d:		the direction, just set up by dir_init() and observed
 * @r:		the record
 * @bytes:	its copy buffer's pending bytes
 * @pipe:	its pipe, adopted into the pool, or NULL; the direction owns
 *		it whatever the outcome
 *
 * Return: 0, or -1 with errno (EINVAL: a state the record's checks
 * refuse; ENOMEM).
 */
int dir_restore(struct dir *d, const struct dir_saved *r, const void *bytes,
		struct pipe_slot *pipe)
{
	if ((r->flags & ~DIR_F_ALL) ||
	    (d->pump.fr && smb_framer_restore(&d->fr, &r->fr))) {
		if (pipe)
			pipepool_drop(d->c->host->pipes, pipe);
		errno = EINVAL;
		return -1;
	}
	if (pump_restore(&d->pump, &r->pump, bytes, pipe))
		return -1;
	dir_set(d, r->flags);
	return 0;
}
