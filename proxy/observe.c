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
 */
#include "config.h"

#include <sys/socket.h>

#include "listener.h"
#include "observe.h"
#include "options.h"
#include "trace.h"
#include "tracefile.h"

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
 * tracing.
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
	c->trace = trace_conn_new(&peer, &local, c->cli_text);
	trace_conn_start(c->trace);
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
