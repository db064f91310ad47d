// SPDX-License-Identifier: GPL-2.0-or-later
/* observe.c - what watches a connection without steering it
 *
 * Theory of operation: two things look at a connection's bytes without
 * changing what it does: --trace, which captures its streams (trace.c,
 * tracefile.c), and --latency, which times its SMB messages from request
 * to response (timing.c). Both hang on hooks the framer and the pump
 * offer (smb_framer_observe(), pump_tap(), pump_watch_writes()), set here
 * only when asked for, so a connection that is neither traced nor timed
 * pays one test of a NULL pointer per read.
 *
 * A third thing looks, in smb mode always: the view `ctl conns` shows
 * of a session (smb/who.c), which the framers fill in. It costs nothing
 * till the client sets up a session, then one block of 552 bytes,
 * freed with the connection; a handover carries it.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "net/listener.h"
#include "conn/observe.h"
#include "conf/options.h"
#include "observe/trace.h"
#include "observe/tracefile.h"

/**
 * dir_saw_message() - the framer parsed a message's header
 * @ctx:	the direction
 * @m:		the message
 */
static void dir_saw_message(void *ctx, const struct smb_msg *m)
{
	struct dir *d = ctx;

	if (d->c->lo->latency)
		timing_message(&d->c->tm, d->id, m);
	trace_message(d->c->trace, d->id, m);
}

/**
 * dir_tap() - a read, before and after the framer walks it: for the trace
 * @ctx:	the direction
 * @p:		its bytes, NULL if spliced
 * @n:		how many
 * @walked:	the framer has walked them
 */
static void dir_tap(void *ctx, const void *p, size_t n, bool walked)
{
	struct dir *d = ctx;

	if (!walked)
		trace_chunk(d->c->trace, d->id, p, n);
	else
		trace_chunk_done(d->c->trace, d->id,
				 !d->pump.fr || smb_framer_opaque(&d->fr));
}

/**
 * dir_wrote() - the direction handed bytes to its destination
 * @ctx:	the direction
 * @written:	bytes it has written so far
 * @began:	when the writes that moved the last of them began
 */
static void dir_wrote(void *ctx, uint64_t written, uint64_t began)
{
	struct dir *d = ctx;

	timing_wrote(&d->c->tm, d->id, written, began);
}

/**
 * observe_begin() - start timing a connection and, with --trace, its
 *		     capture
 * @c:	the connection, about to forward
 *
 * The capture's addresses are the client's and the listener's as the
 * client sees them: two system calls per connection, and only when
 * tracing. A QUIC stream's client socket is one end of a socketpair,
 * whose addresses say nothing: its capture is between the client's UDP
 * address and the listener's.
 */
void observe_begin(struct conn *c)
{
	struct sockaddr_storage peer, local;
	socklen_t plen = sizeof(peer), llen = sizeof(local);

	timing_init(&c->tm, c->host->timing, &c->st->tot);
	if (!tracefile_enabled() ||
	    getpeername(c->cli.fd, (struct sockaddr *)&peer, &plen) ||
	    getsockname(c->cli.fd, (struct sockaddr *)&local, &llen))
		return;
	if (local.ss_family == AF_UNIX) {
		peer = c->peer;
		local = c->lo->listen.addr;
	}
	c->trace = trace_conn_new(&peer, &local, c->cli_text);
	trace_conn_start(c->trace);
}

/**
 * conn_who() - the connection's view, for its framers
 * @ctx:	the connection
 * @create:	make it if there is none
 *
 * Return: the view, or NULL (none yet; or no memory: the view stays
 * empty, and the connection goes on).
 */
static struct smb_who *conn_who(void *ctx, bool create)
{
	struct conn *c = ctx;

	if (!c->who && create)
		c->who = calloc(1, sizeof(*c->who));
	return c->who;
}

/**
 * observe_dir() - hang the hooks a direction needs on its framer and pump
 * @d:	the direction, its framer and pump set up
 */
void observe_dir(struct dir *d)
{
	const struct listen_opts *o = d->c->lo;

	if (o->mode == MODE_SMB && (o->latency || d->c->trace))
		smb_framer_observe(&d->fr, dir_saw_message, d);
	if (o->mode == MODE_SMB)
		smb_framer_who(&d->fr, conn_who, d->c);
	if (o->mode == MODE_SMB && o->latency)
		pump_watch_writes(&d->pump, dir_wrote, d);
	if (d->c->trace)
		pump_tap(&d->pump, dir_tap, d);
}

/**
 * observe_end() - the connection ends: close its clocks and capture
 * @c:		the connection
 * @clean:	it ended with end of file both ways
 */
void observe_end(struct conn *c, bool clean)
{
	timing_end(&c->tm);
	trace_conn_end(c->trace, clean);
	c->trace = NULL;
}

/**
 * observe_save_timing() - what a handover carries of a connection's clocks
 * @c:		the connection, paused
 * @tm:		filled with its outstanding requests
 * @tm_len:	set to the bytes of @tm that hold anything, or 0 if there
 *		is nothing to carry
 */
void observe_save_timing(const struct conn *c, struct timing_saved *tm,
			 uint32_t *tm_len)
{
	/* A connection with nothing in flight, the most of them, carries
	 * nothing: clearing a 33 KiB table for each of 9,000 would be most of
	 * the pause. */
	*tm_len = 0;
	if (timing_busy(&c->tm)) {
		timing_save(&c->tm, tm);
		*tm_len = (uint32_t)timing_saved_len(tm->nreq);
	}
}

/**
 * observe_save_trace() - what a handover carries of a connection's capture
 * @c:		the connection, paused
 * @tr:		filled with its capture's state
 * @tr_len:	set to sizeof(*@tr), or 0 without a capture
 */
void observe_save_trace(const struct conn *c, struct trace_conn_saved *tr,
			uint32_t *tr_len)
{
	*tr_len = 0;
	if (c->trace) {
		trace_conn_save(c->trace, tr);
		*tr_len = sizeof(*tr);
	}
}

/**
 * observe_adopt_timing() - a connection a handover brought in is timed as
 *			    it was
 * @c:		the connection, open, before conn_dirs_init()
 * @tm:		its outstanding requests (unaligned), or NULL
 * @tm_len:	their bytes, as timing_saved_len()
 *
 * Return: 0, or -1 (a state the checks refuse, or memory).
 */
int observe_adopt_timing(struct conn *c, const void *tm, size_t tm_len)
{
	struct timing_saved *ts;
	int r;

	timing_init(&c->tm, c->host->timing, &c->st->tot);
	if (!tm)
		return 0;
	/* Up to 24 KiB: not for the stack of a thread. */
	if (!(ts = calloc(1, sizeof(*ts))))
		return -1;
	memcpy(ts, tm, tm_len);
	r = timing_restore(&c->tm, ts);
	free(ts);
	return r ? -1 : 0;
}

/**
 * observe_adopt_trace() - a connection a handover brought in is captured
 *			   as it was
 * @c:		the connection, open, before conn_dirs_init()
 * @tr:		its capture's state (unaligned), or NULL
 *
 * Without --trace here the capture stops; with it, and none before, this
 * connection is not captured (its start was not seen).
 *
 * Return: 0, or -1 (a state the checks refuse, or memory).
 */
int observe_adopt_trace(struct conn *c, const void *tr)
{
	struct trace_conn_saved trs;

	if (!tr || !tracefile_enabled())
		return 0;
	memcpy(&trs, tr, sizeof(trs));
	return trace_conn_restore(&c->trace, &trs) ? -1 : 0;
}

/**
 * observe_forget() - a connection was handed over: free its observers
 *		      without a last word
 * @c:	the connection
 *
 * The capture's end is the next process's to write.
 */
void observe_forget(struct conn *c)
{
	timing_end(&c->tm);
	trace_conn_free(c->trace);
	c->trace = NULL;
}

/**
 * observe_save_who() - what a handover carries of a connection's view
 * @c:	the connection, paused
 * @s:	filled whole; @s->present 0 if it has none
 */
void observe_save_who(const struct conn *c, struct smb_who_saved *s)
{
	smb_who_save(c->who, s);
}

/**
 * observe_adopt_who() - a connection a handover brought in shows its
 *			 session as it did
 * @c:	the connection, open, its view not yet made
 * @s:	what the old process saved (its record, copied out aligned)
 *
 * Return: 0, or -1 with errno (a view the checks refuse, or memory).
 */
int observe_adopt_who(struct conn *c, const struct smb_who_saved *s)
{
	if (!s->present)
		return 0;
	if (!(c->who = calloc(1, sizeof(*c->who))))
		return -1;
	if (smb_who_restore(c->who, s)) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}
