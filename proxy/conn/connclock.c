// SPDX-License-Identifier: GPL-2.0-or-later
/* connclock.c - an open connection's clocks: idle and --auth-timeout
 *
 * Theory of operation: an open connection has one timer (conn.c runs
 * it), set for whichever comes first of its idle timeout and, in smb mode
 * until the server's stream shows a successful session setup, its
 * --auth-timeout. Traffic moves only @last_active; the timer, when it
 * fires early, is set again for what is left, so the hot path never
 * touches it.
 */
#include "config.h"

#include <stdio.h>

#include "conn/connclock.h"
#include "conn/connstate.h"
#include "common/counter.h"
#include "net/listener.h"
#include "common/log.h"
#include "core/proxy.h"

/**
 * conn_note_auth() - see whether the server has let the client in
 * @c:	the connection, in smb mode and not authenticated yet
 *
 * Once the server's stream has carried a successful session setup
 * response (not a guest or null one: the framer tells), the connection is
 * authenticated for good: it leaves --max-preauth-per-source and
 * --auth-timeout. A server stream the framer gave up on cannot show one;
 * it is let be only under --first-frame any, where the backend may speak
 * another protocol. With the first frame checked, the backend is an SMB
 * server, and a stream it cannot parse may be one a client provoked: it
 * authenticates nobody.
 */
void conn_note_auth(struct conn *c)
{
	const struct smb_framer *f = &c->dir[DIR_TO_CLIENT].fr;

	if (!f->facts.session_ok &&
	    !(c->lo->any_first_frame && smb_framer_opaque(f)))
		return;
	c->unauth = false;
	limits_authenticated(&c->host->px->limits, &c->source);
	log_debug("conn %s: %s", c->cli_text,
		  f->facts.session_ok
			  ? "session setup succeeded"
			  : "server's stream not parsed: no --auth-timeout");
}

/**
 * conn_arm_open() - set an open connection's timer for its next deadline
 * @c:	the connection, in CS_OPEN
 *
 * The idle timeout, if any, or --auth-timeout while the client has not
 * authenticated, whichever comes first; with neither the timer stays off.
 */
void conn_arm_open(struct conn *c)
{
	const struct listen_opts *o = c->lo;
	ev_tstamp now = ev_now(c->host->loop), at = 0;

	if (o->idle_timeout > 0)
		at = c->last_active + o->idle_timeout;
	if (c->unauth && o->auth_timeout > 0 &&
	    (!at || c->started + o->auth_timeout < at))
		at = c->started + o->auth_timeout;
	if (!at) {
		ev_timer_stop(c->host->loop, &c->timer);
		return;
	}
	conn_rearm(c, at > now ? at - now : 0.);
}

/**
 * conn_open_timer() - an open connection's timer fired
 * @c:	the connection, in CS_OPEN
 *
 * The idle timeout is checked lazily: traffic only moves @last_active, and
 * the timer, when it fires early, is set again for the time that is left.
 * An authentication that came meanwhile is seen the same way: the timer
 * then only serves the idle timeout.
 */
void conn_open_timer(struct conn *c)
{
	const struct listen_opts *o = c->lo;
	ev_tstamp now = ev_now(c->host->loop), left;
	char why[96];

	if (c->unauth && o->auth_timeout > 0 &&
	    now >= c->started + o->auth_timeout) {
		counter_add(&c->st->auth_timeouts, 1);
		snprintf(
			why, sizeof(why),
			"no session setup completed within %gs (--auth-timeout)",
			o->auth_timeout);
		conn_end(c, END_TIMEOUT, why);
		return;
	}
	left = c->last_active + o->idle_timeout - now;
	if (o->idle_timeout > 0 && left <= 0) {
		snprintf(why, sizeof(why), "idle for %gs", o->idle_timeout);
		conn_end(c, END_TIMEOUT, why);
		return;
	}
	conn_arm_open(c);
}
