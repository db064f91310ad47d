// SPDX-License-Identifier: GPL-2.0-or-later
/* connstate.c - a connection's stage, and its end
 *
 * Theory of operation: a connection's stage (enum conn_state) changes in
 * conn_set_state() alone, along conn_state_next[], the whole life of a
 * connection in one table:
 *
 *   new        -> proxy-header (--accept-proxy), handshake (smb mode),
 *                 connecting (tcp mode)
 *   proxy-header -> handshake (smb mode), connecting (tcp mode), ended
 *   handshake  -> connecting (an SMB opening came), ended
 *   connecting -> connecting (failover), open, ended
 *   open       -> ended
 *
 * Each change is logged at debug level, with the names of both stages.
 * conn_end() is the one way into "ended": it writes the end line
 * (connlog.c), closes both sockets (resetting both peers unless both
 * directions ended cleanly), gives back everything the connection held
 * and tells its thread. The stages themselves are run by conn.c, which
 * sits above this file.
 */
#include "config.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "conn/connhost.h"
#include "conn/connlog.h"
#include "conn/connstate.h"
#include "common/counter.h"
#include "conn/dir.h"
#include "net/listener.h"
#include "common/log.h"
#include "conn/observe.h"
#include "core/proxy.h"

static const char *const conn_state_name[] = {
	[CS_NEW] = "new",
	[CS_PROXY_HEADER] = "proxy-header",
	[CS_HANDSHAKE] = "handshake",
	[CS_CONNECTING] = "connecting",
	[CS_OPEN] = "open",
	[CS_ENDED] = "ended",
};

_Static_assert(sizeof(conn_state_name) / sizeof(conn_state_name[0]) == CS_COUNT,
	       "a name per connection state");

/**
 * conn_state_text() - a stage's name, as the debug log and the control
 *		       socket print it
 * @s:	the stage
 *
 * Return: a static string.
 */
const char *conn_state_text(enum conn_state s)
{
	return s < CS_COUNT ? conn_state_name[s] : "?";
}

/* The stages a connection may go to from each: the whole life of one. */
static const unsigned conn_state_next[CS_COUNT] = {
	/* A handover (connmove.c) brings connections in at any stage. */
	[CS_NEW] = 1u << CS_PROXY_HEADER | 1u << CS_HANDSHAKE |
		   1u << CS_CONNECTING | 1u << CS_OPEN,
	[CS_PROXY_HEADER] =
		1u << CS_HANDSHAKE | 1u << CS_CONNECTING | 1u << CS_ENDED,
	[CS_HANDSHAKE] = 1u << CS_CONNECTING | 1u << CS_ENDED,
	[CS_CONNECTING] = 1u << CS_CONNECTING | 1u << CS_OPEN | 1u << CS_ENDED,
	[CS_OPEN] = 1u << CS_ENDED,
};

/**
 * conn_set_state() - move a connection to its next stage
 * @c:		the connection
 * @next:	the stage, one conn_state_next[] allows from the current
 *
 * The one place the stage changes, so that a debug log shows every
 * connection's whole life; dialling the next backend stays connecting.
 */
void conn_set_state(struct conn *c, enum conn_state next)
{
	assert(conn_state_next[c->state] & 1u << next);
	if (c->state != next)
		log_debug("conn %s: %s -> %s", c->cli_text,
			  conn_state_name[c->state], conn_state_name[next]);
	c->state = next;
}

/**
 * conn_end() - log, close both sockets and free the connection
 * @c:		the connection
 * @end:	how it ended; anything but END_FIN resets both peers, so
 *		that no peer takes a stream cut short for a complete one
 * @why:	detail for the log, or NULL
 */
void conn_end(struct conn *c, enum conn_end end, const char *why)
{
	struct conn_host *h = c->host;

	connlog_end(c, end, why);
	conn_set_state(c, CS_ENDED);
	for (unsigned i = 0; i < DIR_COUNT; i++)
		dir_stop(&c->dir[i], h);
	ev_io_stop(h->loop, &c->connect_w);
	ev_timer_stop(h->loop, &c->timer);
	for (unsigned i = 0; i < DIR_COUNT; i++)
		pump_release(&c->dir[i].pump);
	observe_end(c, end == END_FIN);
	if (end != END_FIN) {
		sock_set_linger0(c->cli.fd);
		if (c->srv.fd >= 0)
			sock_set_linger0(c->srv.fd);
	}
	conn_free(c);
	h->ops->ended(h->ctx);
}

/**
 * conn_free() - close a connection's sockets, give back all it holds, free
 *		 it
 * @c:	the connection, its watchers stopped, its pumps and observers
 *	released
 *
 * The close is a plain one: whatever conn_end() decided (a reset, a FIN)
 * is done, and a handed-over connection's sockets are the next process's.
 */
void conn_free(struct conn *c)
{
	struct conn_host *h = c->host;

	close(c->cli.fd);
	if (c->srv.fd >= 0)
		close(c->srv.fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		h->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	counter_sub(&h->active, 1);
	if (c->admitted)
		limits_release(&h->px->limits, &c->source, c->unauth);
	conn_host_unreserve(h);
	lcfg_put(c->cfg);
	listener_put(c->l);
	free(c);
}

/**
 * conn_end_for_errno() - how a failed read or write ends the connection
 * @err:	the errno
 *
 * Return: END_RST when a peer reset, END_ERROR otherwise.
 */
enum conn_end conn_end_for_errno(int err)
{
	/* ENOTCONN: the shutdown() forwarding a FIN found the socket reset. */
	return err == ECONNRESET || err == EPIPE || err == ENOTCONN ? END_RST
								    : END_ERROR;
}

/**
 * conn_rearm() - run the connection's timer @after seconds from now
 * @c:		the connection
 * @after:	seconds
 */
void conn_rearm(struct conn *c, ev_tstamp after)
{
	ev_timer_stop(c->host->loop, &c->timer);
	ev_timer_set(&c->timer, after, 0.);
	ev_timer_start(c->host->loop, &c->timer);
}
