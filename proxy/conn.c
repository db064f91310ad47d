// SPDX-License-Identifier: GPL-2.0-or-later
/* conn.c - one proxied connection: backend connect, two directions, end
 *
 * Theory of operation: a connection is a client socket, a backend socket
 * and two directions (struct dir), "up" from client to server and "down"
 * back. Its life has these stages (enum conn_state):
 *
 *   handshake:  smb mode only. An SMB client always speaks first, and
 *               with a NEGOTIATE (or, on port 139, a session request), so
 *               the backend is not dialled until the client's whole first
 *               frame has arrived and smb_opening_judge() says it is one,
 *               under --handshake-timeout: a flood of empty or garbage
 *               connections costs the server nothing (Samba forks one smbd
 *               per connection); anything else is reset and counted. The
 *               frame is only peeked at, at most SMB_OPENING_MAX bytes,
 *               and stays in the kernel; while it is incomplete, a
 *               receive low-water mark keeps the socket quiet until the
 *               rest is in. tcp mode skips this stage, since other
 *               protocols may have the server speak first.
 *   connecting: the backend connect is in flight, under --connect-timeout.
 *               The client is not read yet, so its bytes wait in the
 *               kernel. A refused, unreachable or timed-out backend resets
 *               the client at once. When no descriptor is left for the
 *               backend socket, the worker stops accepting for a moment
 *               and the connect is retried, so the client waits instead of
 *               being reset.
 *   open:       each direction runs half_run() whenever its source is
 *               readable or its destination writable, and arms exactly the
 *               one watcher half_run() asks for. The timer is the idle
 *               timeout, rearmed lazily from @last_active so that traffic
 *               costs no timer syscalls. In smb mode the same timer is
 *               also --auth-timeout, counted from accept, until the
 *               server's stream shows a successful session setup: from
 *               then on the connection is authenticated for good, and it
 *               stops counting against --max-preauth-per-source.
 *   ended:      when both directions have forwarded end of file (clean), or
 *               on any error, reset or timeout (abortive: both sockets are
 *               closed with SO_LINGER 0, so each peer sees a reset). One log
 *               line tells the story; then everything is freed.
 *
 * A stream that ends in the middle of an SMB message is no error: its end
 * of file is forwarded after its last byte, as direct TCP would, and the
 * other direction goes on to its own end. Resetting would destroy what the
 * other direction still had in flight, and a length-framed receiver knows
 * a message cut short when it reads end of file. The log line says
 * midframe= and smbsplice_streams_ended_midframe_total counts it.
 */
#include "config.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "accept.h"
#include "conn.h"
#include "counter.h"
#include "dial.h"
#include "listener.h"
#include "log.h"
#include "netns.h"
#include "opening.h"
#include "timing.h"
#include "trace.h"
#include "tracefile.h"
#include "proxy.h"
#include "pump.h"
#include "sock.h"
#include "stats.h"
#include "worker.h"

enum conn_end {
	END_FIN,      /* both directions forwarded end of file */
	END_RST,      /* a peer reset its socket; the other was reset too */
	END_TIMEOUT,  /* handshake, connect or idle timeout */
	END_ERROR,    /* any other failure */
	END_SHUTDOWN, /* the daemon is stopping */
};

static const char *const end_word[] = { "fin", "rst", "timeout", "error",
					"shutdown" };

enum conn_state {
	CS_NEW,	       /* accepted, not yet in a stage */
	CS_HANDSHAKE,  /* waiting for the client's first frame (smb mode) */
	CS_CONNECTING, /* the backend connect is in flight, or waits for a
			* descriptor */
	CS_OPEN,       /* both directions forward */
	CS_ENDED,      /* logged and closed, about to be freed */
	CS_COUNT
};

static const char *const conn_state_name[] = {
	[CS_NEW] = "new",
	[CS_HANDSHAKE] = "handshake",
	[CS_CONNECTING] = "connecting",
	[CS_OPEN] = "open",
	[CS_ENDED] = "ended",
};

_Static_assert(sizeof(conn_state_name) / sizeof(conn_state_name[0]) ==
		       CS_COUNT,
	       "a name per connection state");

/* After the backend socket could not be created for want of descriptors:
 * how long to wait before the next try (and the accept pause). */
#define CONNECT_RETRY 0.1

/* A pipe whose destination has taken none of its bytes for this long is
 * moved to a buffer, so that stalled receivers cannot hold the pool. */
#define PIPE_HOLD_MAX 1.0

/* In the handshake, on a socket that takes no SO_RCVLOWAT: how often an
 * incomplete first frame is looked at again. */
#define FIRST_FRAME_POLL 0.05

struct conn;

/* What has happened to a direction; each bit is set once, never cleared. */
enum dir_flag {
	DIR_F_DONE = 1u << 0,	    /* end of file was forwarded */
	DIR_F_OPAQUE = 1u << 1,	    /* the framer gave up; that was logged */
	DIR_F_MULTICHANNEL = 1u << 2, /* the server's offer of multichannel
				       * was logged */
	DIR_F_IFLIST = 1u << 3,	    /* the server's interface list was
				     * logged */
};

/**
 * struct dir - a direction and the two watchers that drive it
 * @h:		the bytes and the pumps
 * @rd:		readable watcher on @h.src
 * @wr:		writable watcher on @h.dst
 * @c:		the connection
 * @fr:		the SMB framer, used in smb mode
 * @flags:	what has happened to it, DIR_F_* (set through dir_set())
 * @stall_prev:	link in the worker's list of stalled pipes
 * @stall_next:	likewise
 * @stall_since: when its pipe began to wait for the destination, 0 when
 *		the direction is not on that list
 */
struct dir {
	struct half h;
	ev_io rd, wr;
	struct conn *c;
	struct smb_framer fr;
	unsigned flags;
	struct dir *stall_prev, *stall_next;
	ev_tstamp stall_since;
};

/**
 * struct conn - a client, its backend connection and the two directions
 * @w:		the worker that owns it
 * @prev:	list link
 * @next:	list link
 * @cli:	client socket
 * @srv:	backend socket, fd -1 until created
 * @up:		client to server
 * @down:	server to client
 * @connect_w:	readable watcher on @cli in the handshake, then writable
 *		watcher on @srv while the connect is in flight
 * @timer:	the timeout of the current stage (see enum conn_state)
 * @state:	the stage
 * @started:	when the client was accepted
 * @deadline:	when the handshake or the connect times out
 * @last_active: last time either direction delivered a byte
 * @l:		the listener it came on (a reference)
 * @cfg:	the listener's settings it started with (a reference)
 * @lo:		&cfg->o
 * @st:		the listener's counters in this worker
 * @be:		the backend being dialled or forwarded to, an index into
 *		@lo's backends
 * @cli_text:	client address, for the log
 * @source:	client address, as --max-conns-per-source counts it
 * @unauth:	smb mode, and no session setup has succeeded yet: it counts
 *		against --max-preauth-per-source and --auth-timeout
 * @lowat:	in the handshake: the client socket's SO_RCVLOWAT is raised
 * @peeked:	in the handshake: bytes of the first frame seen so far
 * @tm:		smb mode: the clocks of its messages in flight
 * @trace:	its capture, with --trace
 *
 * This is all an idle connection costs smbsplice: copy buffers and pipes
 * are lent only while bytes are in flight.
 */
struct conn {
	struct worker *w;
	struct conn *prev, *next;
	struct sock cli, srv;
	struct dir up, down;
	ev_io connect_w;
	ev_timer timer;
	enum conn_state state;
	ev_tstamp started, deadline, last_active;
	struct listener *l;
	struct lcfg *cfg;
	const struct listen_opts *lo;
	struct lstats *st;
	unsigned be;
	char cli_text[64];
	struct source_key source;
	bool unauth, lowat;
	unsigned peeked;
	struct timing tm;
	struct trace_conn *trace;
};

/* The stages a connection may go to from each: the whole life of one. */
static const unsigned conn_state_next[CS_COUNT] = {
	[CS_NEW] = 1u << CS_HANDSHAKE | 1u << CS_CONNECTING,
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
static void conn_set_state(struct conn *c, enum conn_state next)
{
	assert(conn_state_next[c->state] & 1u << next);
	if (c->state != next)
		log_debug("conn %s: %s -> %s", c->cli_text,
			  conn_state_name[c->state], conn_state_name[next]);
	c->state = next;
}

/**
 * dir_set() - record that something happened to a direction
 * @d:		the direction
 * @flag:	one DIR_F_*
 */
static void dir_set(struct dir *d, enum dir_flag flag)
{
	d->flags |= flag;
}

/**
 * midframe_word() - which streams ended in the middle of an SMB message
 * @c:	the connection
 *
 * Return: " midframe=" and the direction (named as the metrics name it),
 * or "" when both ended at a message boundary.
 */
static const char *midframe_word(const struct conn *c)
{
	static const char *const word[] = { "", " midframe=to_server",
					    " midframe=to_client",
					    " midframe=both" };

	return word[c->up.h.midframe | c->down.h.midframe << 1];
}

/**
 * conn_smb_text() - the SMB part of a connection's log line
 * @c:		the connection
 * @out:	buffer
 * @outlen:	its size
 *
 * Return: @out, empty in tcp mode.
 */
static const char *conn_smb_text(const struct conn *c, char *out, size_t outlen)
{
	const struct smb_stream_facts *u = &c->up.fr.facts,
				      *d = &c->down.fr.facts;
	char dialect[16];

	*out = '\0';
	if (c->lo->mode != MODE_SMB)
		return out;
	smb_dialect_text(d->dialect, dialect, sizeof(dialect));
	snprintf(
		out, outlen,
		" smb dialect=%s reads=%llu/%lluB writes=%llu/%lluB signed=%s encrypted=%s%s%s",
		dialect, (unsigned long long)d->reads,
		(unsigned long long)d->read_bytes,
		(unsigned long long)u->writes,
		(unsigned long long)u->write_bytes,
		u->signed_seen || d->signed_seen ? "yes" : "no",
		u->encrypted_seen || d->encrypted_seen ? "yes" : "no",
		(c->up.flags | c->down.flags) & DIR_F_OPAQUE ? " opaque=yes"
							     : "",
		midframe_word(c));
	return out;
}

/* End lines of connections that forwarded nothing, per way of ending,
 * in this worker. */
static __thread struct log_limit
	quiet_end_limit[sizeof(end_word) / sizeof(end_word[0])];

/**
 * conn_log_end() - the one line that records a connection
 * @c:		the connection
 * @end:	how it ended
 * @why:	detail for errors and timeouts, or NULL
 *
 * A connection that forwarded no byte either way (connect and close, a
 * silent client, a server never reached) is what a flood is made of, so
 * its line is rate limited like any per-client line; one that moved
 * bytes always gets its line.
 */
static void conn_log_end(const struct conn *c, enum conn_end end,
			 const char *why)
{
	const struct half *u = &c->up.h, *d = &c->down.h;
	char smb[256], line[1024];

	snprintf(
		line, sizeof(line),
		"conn %s -> %s listener=%s worker=%u end=%s%s%s%s dur=%.3fs "
		"c2s=%llu (splice %llu copy %llu) s2c=%llu (splice %llu copy %llu)%s",
		c->cli_text, c->lo->backend[c->be].text, c->lo->name, c->w->id,
		end_word[end], why ? " (" : "", why ? why : "", why ? ")" : "",
		ev_now(c->w->loop) - c->started,
		(unsigned long long)(u->spliced + u->copied),
		(unsigned long long)u->spliced, (unsigned long long)u->copied,
		(unsigned long long)(d->spliced + d->copied),
		(unsigned long long)d->spliced, (unsigned long long)d->copied,
		conn_smb_text(c, smb, sizeof(smb)));
	if (u->spliced + u->copied + d->spliced + d->copied)
		log_info("%s", line);
	else
		log_limited(&quiet_end_limit[end], LOG_LVL_INFO, "%s", line);
}

/**
 * conn_log_quiet() - count the end lines suppressed in a window now over
 *
 * Called every few seconds in each worker, so that a burst of empty
 * connections is accounted for even if no other follows it.
 */
void conn_log_quiet(void)
{
	unsigned long n;

	for (size_t e = 0; e < sizeof(end_word) / sizeof(end_word[0]); e++) {
		n = log_limit_expired(&quiet_end_limit[e]);
		if (n)
			log_info(
				"%lu more connections that forwarded nothing ended (%s); their lines were suppressed",
				n, end_word[e]);
	}
}

/**
 * stall_forget() - take a direction off the worker's list of stalled pipes
 * @d:	the direction, listed or not
 */
static void stall_forget(struct dir *d)
{
	if (!d->stall_since)
		return;
	if (d->stall_prev)
		d->stall_prev->stall_next = d->stall_next;
	else
		d->c->w->stalls = d->stall_next;
	if (d->stall_next)
		d->stall_next->stall_prev = d->stall_prev;
	d->stall_prev = d->stall_next = NULL;
	d->stall_since = 0;
}

/**
 * stall_note() - a direction's pipe waits for its destination
 * @d:	the direction
 *
 * The first time, it goes on the worker's list with the time; the check
 * that runs while the list is not empty moves its bytes to a buffer if
 * it is still waiting PIPE_HOLD_MAX later.
 */
static void stall_note(struct dir *d)
{
	struct worker *w = d->c->w;

	if (d->stall_since)
		return;
	d->stall_since = ev_now(w->loop);
	d->stall_prev = NULL;
	d->stall_next = w->stalls;
	if (w->stalls)
		w->stalls->stall_prev = d;
	w->stalls = d;
	if (!ev_is_active(&w->stall_check))
		ev_timer_again(w->loop, &w->stall_check);
}

/**
 * stall_expired() - the first listed direction that waited too long
 * @w:		the worker
 * @now:	the loop's time
 *
 * Return: the direction, or NULL.
 */
static struct dir *stall_expired(struct worker *w, ev_tstamp now)
{
	for (struct dir *d = w->stalls; d; d = d->stall_next)
		if (now - d->stall_since >= PIPE_HOLD_MAX)
			return d;
	return NULL;
}

static void conn_end(struct conn *c, enum conn_end end, const char *why);

/**
 * on_stall_check() - move the bytes of pipes that waited too long
 * @loop:	the worker's loop
 * @t:		&worker.stall_check
 * @revents:	unused
 */
static void on_stall_check(struct ev_loop *loop, ev_timer *t, int revents)
{
	struct worker *w = t->data;
	ev_tstamp now = ev_now(loop);
	struct dir *d;
	int r;

	(void)revents;
	while ((d = stall_expired(w, now))) {
		stall_forget(d);
		r = half_unpipe(&d->h);
		if (r == 0)
			counter_add(&w->pipe_stalls, 1);
		else if (r > 0) /* no buffer: the pipe stays; try again later */
			stall_note(d);
		else
			conn_end(d->c, END_ERROR, strerror(d->h.err));
	}
	if (!w->stalls)
		ev_timer_stop(loop, t);
}

/**
 * conn_worker_init() - set up what conn.c keeps in a worker
 * @w:	the worker
 */
void conn_worker_init(struct worker *w)
{
	w->stalls = NULL;
	ev_init(&w->stall_check, on_stall_check);
	w->stall_check.repeat = PIPE_HOLD_MAX / 2;
	w->stall_check.data = w;
}

/**
 * conn_end() - log, close both sockets and free the connection
 * @c:		the connection
 * @end:	how it ended; anything but END_FIN resets both peers, so
 *		that no peer takes a stream cut short for a complete one
 * @why:	detail for the log, or NULL
 */
static void conn_end(struct conn *c, enum conn_end end, const char *why)
{
	struct worker *w = c->w;
	struct ev_loop *loop = w->loop;

	conn_log_end(c, end, why);
	conn_set_state(c, CS_ENDED);
	stall_forget(&c->up);
	stall_forget(&c->down);
	ev_io_stop(loop, &c->up.rd);
	ev_io_stop(loop, &c->up.wr);
	ev_io_stop(loop, &c->down.rd);
	ev_io_stop(loop, &c->down.wr);
	ev_io_stop(loop, &c->connect_w);
	ev_timer_stop(loop, &c->timer);
	half_release(&c->up.h);
	half_release(&c->down.h);
	timing_end(&c->tm);
	trace_conn_end(c->trace, end == END_FIN);
	c->trace = NULL;
	if (end != END_FIN) {
		sock_set_linger0(c->cli.fd);
		if (c->srv.fd >= 0)
			sock_set_linger0(c->srv.fd);
	}
	close(c->cli.fd);
	if (c->srv.fd >= 0)
		close(c->srv.fd);

	if (c->prev)
		c->prev->next = c->next;
	else
		w->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	counter_sub(&w->active, 1);
	limits_release(&w->px->limits, &c->source, c->unauth);
	budget_give(&w->px->limits.fds, 2);
	lcfg_put(c->cfg);
	listener_put(c->l);
	free(c);
	worker_conn_ended(w);
}

/**
 * end_for_errno() - how a failed read or write ends the connection
 * @err:	the errno
 *
 * Return: END_RST when a peer reset, END_ERROR otherwise.
 */
static enum conn_end end_for_errno(int err)
{
	/* ENOTCONN: the shutdown() forwarding a FIN found the socket reset. */
	return err == ECONNRESET || err == EPIPE || err == ENOTCONN ? END_RST
								    : END_ERROR;
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
	if (!((c->up.flags | c->down.flags) & DIR_F_OPAQUE))
		counter_add(&c->st->tot.opaque_conns, 1);
	dir_set(d, DIR_F_OPAQUE);
	if (d == &c->down)
		timing_responses_hidden(&c->tm);
	log_rate(
		LOG_LVL_WARN,
		"conn %s: %s is not SMB as smbsplice reads it (%s); forwarding it opaque",
		d->c->cli_text,
		d == &d->c->up ? "client to server" : "server to client",
		d->fr.why);
}

/**
 * conn_rearm() - run the connection's timer @after seconds from now
 * @c:		the connection
 * @after:	seconds
 */
static void conn_rearm(struct conn *c, ev_tstamp after)
{
	ev_timer_stop(c->w->loop, &c->timer);
	ev_timer_set(&c->timer, after, 0.);
	ev_timer_start(c->w->loop, &c->timer);
}

/**
 * dir_log_multichannel() - say, once per connection, that clients may go
 *			    around smbsplice
 * @d:	the direction, in smb mode
 *
 * A server that offers multichannel, or tells a client its interface
 * addresses, invites the client to open more connections straight to
 * those addresses. smbsplice changes no byte, so it cannot hide them;
 * the README says how to configure the server instead.
 */
static void dir_log_multichannel(struct dir *d)
{
	const struct smb_stream_facts *f = &d->fr.facts;

	if (f->multichannel && !(d->flags & DIR_F_MULTICHANNEL)) {
		dir_set(d, DIR_F_MULTICHANNEL);
		log_rate(
			LOG_LVL_WARN,
			"conn %s: the server offers SMB3 multichannel; clients may open connections to its own addresses, around smbsplice (set 'server multi channel support = no' in smb.conf, see README)",
			d->c->cli_text);
	}
	if (f->interface_list && !(d->flags & DIR_F_IFLIST)) {
		dir_set(d, DIR_F_IFLIST);
		log_rate(
			LOG_LVL_WARN,
			"conn %s: the server sent the client its network interface list (FSCTL_QUERY_NETWORK_INTERFACE_INFO); the client may connect to those addresses directly, around smbsplice",
			d->c->cli_text);
	}
}

/**
 * conn_note_auth() - see whether the server has let the client in
 * @c:	the connection, in smb mode and not authenticated yet
 *
 * Once the server's stream has carried a successful session setup
 * response, the connection is authenticated for good: it leaves
 * --max-preauth-per-source and --auth-timeout. A server stream the framer
 * gave up on cannot show one, and is let be likewise: what the server
 * sends is not the client's to shape.
 */
static void conn_note_auth(struct conn *c)
{
	const struct smb_framer *f = &c->down.fr;

	if (!f->facts.session_ok && !smb_framer_opaque(f))
		return;
	c->unauth = false;
	limits_authenticated(&c->w->px->limits, &c->source);
	log_debug("conn %s: %s", c->cli_text,
		  f->facts.session_ok
			  ? "session setup succeeded"
			  : "server's stream not parsed: no --auth-timeout");
}

/**
 * dir_run() - run a direction and arm the watcher it asks for
 * @d:	the direction
 */
static void dir_run(struct dir *d)
{
	struct conn *c = d->c;
	struct ev_loop *loop = c->w->loop;
	struct dir *other = d == &c->up ? &c->down : &c->up;
	uint64_t moved = d->h.spliced + d->h.copied;
	enum pump_status st = half_run(&d->h);
	bool progress = d->h.spliced + d->h.copied != moved;

	/* Only bytes count as activity: a wake-up that moves nothing must
	 * not keep a stuck connection alive. */
	if (progress)
		c->last_active = ev_now(loop);
	if (d->h.fr && !(d->flags & DIR_F_OPAQUE) && smb_framer_opaque(d->h.fr))
		dir_went_opaque(d);
	if (d->h.fr)
		dir_log_multichannel(d);
	if (c->unauth && d == &c->down)
		conn_note_auth(c);
	switch (st) {
	case PUMP_WAIT_READ:
		stall_forget(d);
		ev_io_stop(loop, &d->wr);
		ev_io_start(loop, &d->rd);
		return;
	case PUMP_WAIT_WRITE:
		/* The stall clock measures how long the destination has
		 * taken nothing: bytes written restart it. */
		if (progress || !half_holds_pipe(&d->h))
			stall_forget(d);
		if (half_holds_pipe(&d->h))
			stall_note(d);
		ev_io_stop(loop, &d->rd);
		ev_io_start(loop, &d->wr);
		return;
	case PUMP_FIN:
		stall_forget(d);
		ev_io_stop(loop, &d->rd);
		ev_io_stop(loop, &d->wr);
		dir_set(d, DIR_F_DONE);
		if (other->flags & DIR_F_DONE)
			conn_end(c, END_FIN, NULL);
		return;
	case PUMP_SRC_ERR:
	case PUMP_DST_ERR:
		conn_end(c, end_for_errno(d->h.err), strerror(d->h.err));
		return;
	}
}

/**
 * on_io() - a direction's source is readable or its destination writable
 * @loop:	the loop
 * @w:		&dir.rd or &dir.wr, with data pointing at the dir
 * @revents:	unused
 */
static void on_io(struct ev_loop *loop, ev_io *w, int revents)
{
	struct dir *d = w->data;

	(void)revents;
	dir_run(d);
}

static void conn_connect(struct conn *c);
static void conn_backend_failed(struct conn *c, enum conn_end end,
				const char *why);
static void conn_peek_first(struct conn *c);

/**
 * conn_arm_open() - set an open connection's timer for its next deadline
 * @c:	the connection, in CS_OPEN
 *
 * The idle timeout, if any, or --auth-timeout while the client has not
 * authenticated, whichever comes first; with neither the timer stays off.
 */
static void conn_arm_open(struct conn *c)
{
	const struct listen_opts *o = c->lo;
	ev_tstamp now = ev_now(c->w->loop), at = 0;

	if (o->idle_timeout > 0)
		at = c->last_active + o->idle_timeout;
	if (c->unauth && o->auth_timeout > 0 &&
	    (!at || c->started + o->auth_timeout < at))
		at = c->started + o->auth_timeout;
	if (!at) {
		ev_timer_stop(c->w->loop, &c->timer);
		return;
	}
	conn_rearm(c, at > now ? at - now : 0.);
}

/**
 * on_timer() - the current stage's timeout, or a connect retry is due
 * @loop:	the loop
 * @w:		&conn.timer
 * @revents:	unused
 *
 * The idle timeout is checked lazily: traffic only moves @last_active, and
 * the timer, when it fires early, is set again for the time that is left.
 * An authentication that came meanwhile is seen the same way: the timer
 * then only serves the idle timeout.
 */
static void on_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct conn *c = w->data;
	const struct listen_opts *o = c->lo;
	ev_tstamp left;
	char why[96];

	(void)revents;
	switch (c->state) {
	case CS_NEW:
	case CS_ENDED:
	case CS_COUNT:
		return; /* no timer runs in these */
	case CS_HANDSHAKE:
		if (!ev_is_active(&c->connect_w) &&
		    ev_now(loop) < c->deadline) {
			conn_peek_first(c); /* polled: no low-water mark */
			return;
		}
		snprintf(why, sizeof(why),
			 "%s within %gs (--handshake-timeout)",
			 c->peeked ? "client sent no complete first frame"
				   : "client sent nothing",
			 o->handshake_timeout);
		conn_end(c, END_TIMEOUT, why);
		return;
	case CS_CONNECTING:
		if (c->srv.fd < 0 && ev_now(loop) < c->deadline) {
			conn_connect(c); /* out of descriptors last time */
			return;
		}
		snprintf(why, sizeof(why), "connect timed out after %gs",
			 o->connect_timeout);
		conn_backend_failed(c, END_TIMEOUT, why);
		return;
	case CS_OPEN:
		if (c->unauth && o->auth_timeout > 0 &&
		    ev_now(loop) >= c->started + o->auth_timeout) {
			counter_add(&c->st->auth_timeouts, 1);
			snprintf(
				why, sizeof(why),
				"no session setup completed within %gs (--auth-timeout)",
				o->auth_timeout);
			conn_end(c, END_TIMEOUT, why);
			return;
		}
		left = c->last_active + o->idle_timeout - ev_now(loop);
		if (o->idle_timeout > 0 && left <= 0) {
			snprintf(why, sizeof(why), "idle for %gs",
				 o->idle_timeout);
			conn_end(c, END_TIMEOUT, why);
			return;
		}
		conn_arm_open(c);
		return;
	}
}

/**
 * dir_index() - which way a direction goes
 * @d:	&c->up or &c->down
 *
 * Return: DIR_TO_SERVER or DIR_TO_CLIENT.
 */
static enum dir_index dir_index(const struct dir *d)
{
	return d == &d->c->up ? DIR_TO_SERVER : DIR_TO_CLIENT;
}

/**
 * dir_saw_message() - the framer parsed a message's header
 * @ctx:	the direction
 * @m:		the message
 */
static void dir_saw_message(void *ctx, const struct smb_msg *m)
{
	struct dir *d = ctx;

	if (d->c->lo->latency)
		timing_message(&d->c->tm, dir_index(d), m);
	trace_message(d->c->trace, dir_index(d), m);
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
		trace_chunk(d->c->trace, dir_index(d), p, n);
	else
		trace_chunk_done(d->c->trace, dir_index(d),
				 !d->h.fr || smb_framer_opaque(&d->fr));
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

	timing_wrote(&d->c->tm, dir_index(d), written, began);
}

/**
 * dir_init() - set up a direction and its watchers
 * @c:		the connection
 * @d:		&c->up or &c->down
 * @src:	socket it reads
 * @dst:	socket it writes
 * @tot:	the worker's counters for this direction
 */
static void dir_init(struct conn *c, struct dir *d, struct sock *src,
		     struct sock *dst, struct dir_totals *tot)
{
	const struct listen_opts *o = c->lo;
	struct worker *w = c->w;

	smb_framer_init(&d->fr, &o->th, &tot->smb);
	half_init(&d->h, src, dst, &w->pipes, &w->bufs, o->splice,
		  o->mode == MODE_SMB ? &d->fr : NULL, &tot->pump);
	if (o->mode == MODE_SMB && (o->latency || c->trace))
		smb_framer_observe(&d->fr, dir_saw_message, d);
	if (o->mode == MODE_SMB && o->latency)
		half_watch_writes(&d->h, dir_wrote, d);
	if (c->trace)
		half_tap(&d->h, dir_tap, d);
	d->c = c;
	d->flags = 0;
	ev_io_init(&d->rd, on_io, src->fd, EV_READ);
	ev_io_init(&d->wr, on_io, dst->fd, EV_WRITE);
	d->rd.data = d->wr.data = d;
}

/**
 * conn_trace_begin() - with --trace, start the connection's capture
 * @c:	the connection, about to forward
 *
 * The addresses are the client's and the listener's as the client sees
 * them: two system calls per connection, and only when tracing.
 */
static void conn_trace_begin(struct conn *c)
{
	struct sockaddr_storage peer, local;
	socklen_t plen = sizeof(peer), llen = sizeof(local);

	if (!tracefile_enabled() ||
	    getpeername(c->cli.fd, (struct sockaddr *)&peer, &plen) ||
	    getsockname(c->cli.fd, (struct sockaddr *)&local, &llen))
		return;
	c->trace = trace_conn_new(&peer, &local, c->cli_text);
	trace_conn_start(c->trace);
}

/**
 * conn_start_forwarding() - the backend is connected: start both directions
 * @c:	the connection
 *
 * Both sockets have their options already: the client socket inherited
 * them from the listening socket, the backend socket got them from
 * dial_backend().
 */
static void conn_start_forwarding(struct conn *c)
{
	struct ev_loop *loop = c->w->loop;

	conn_set_state(c, CS_OPEN);
	ev_io_stop(loop, &c->connect_w);
	ev_timer_stop(loop, &c->timer);
	timing_init(&c->tm, &c->w->timing, &c->st->tot);
	conn_trace_begin(c);
	dir_init(c, &c->up, &c->cli, &c->srv, &c->st->tot.dir[DIR_TO_SERVER]);
	dir_init(c, &c->down, &c->srv, &c->cli, &c->st->tot.dir[DIR_TO_CLIENT]);
	c->last_active = ev_now(loop);
	log_debug("conn %s: backend connected", c->cli_text);
	conn_arm_open(c);
	ev_io_start(loop, &c->up.rd);
	ev_io_start(loop, &c->down.rd);
}

/**
 * on_connect() - the backend connect finished, one way or the other
 * @loop:	the loop
 * @w:		&conn.connect_w
 * @revents:	unused
 */
static void on_connect(struct ev_loop *loop, ev_io *w, int revents)
{
	struct conn *c = w->data;
	int err = sock_connect_result(c->srv.fd);
	char why[160];

	(void)loop;
	(void)revents;
	if (err) {
		snprintf(why, sizeof(why), "connect: %s", strerror(err));
		conn_backend_failed(c, END_ERROR, why);
		return;
	}
	conn_start_forwarding(c);
}

/**
 * conn_dial_in_netns() - dial the backend from its namespace
 * @c:		the connection
 * @client:	the client's address, for --transparent
 * @fd:		the new socket, on success
 *
 * A worker sits in the backend namespace already when every listener
 * dials into the same one; otherwise the socket is made from inside the
 * listener's, and the thread goes back where it was. Under --user the
 * privileged helper makes it instead, and every --transparent one.
 *
 * Return: as dial_backend().
 */
static int conn_dial_in_netns(struct conn *c, const struct sockaddr *client,
			      int *fd)
{
	struct proxy *px = c->w->px;
	int ns = c->cfg->netns[SIDE_BACKEND], home, r, err;
	ino_t want = ns >= 0 ? c->cfg->netns_ino[SIDE_BACKEND] : 0;

	if (px->helper.fds && (c->lo->transparent ||
			       (want ? want : px->home_ino) != c->w->netns_ino))
		return dial_backend_helped(&px->helper, c->w->id + 1, c->lo,
					   c->be, c->cli.fd, fd);
	if (!want || want == c->w->netns_ino) {
		if (ns >= 0 || px->worker_netns < 0)
			return dial_backend(c->lo, c->be, client, fd);
		ns = netns_home(); /* the worker sits elsewhere */
	}
	home = px->worker_netns >= 0 ? px->worker_netns : netns_home();
	if (netns_enter(ns))
		return -1;
	r = dial_backend(c->lo, c->be, client, fd);
	err = errno;
	netns_enter(home);
	errno = err;
	return r;
}

/**
 * conn_connect() - start the backend connect, or wait for a descriptor
 * @c:	the connection, in CS_CONNECTING with no backend socket yet
 *
 * Out of descriptors (EMFILE, ENFILE) is not the client's fault and is
 * usually brief: the worker stops accepting for a moment, as it does when
 * accept() itself runs out, and the connect is tried again until
 * --connect-timeout is spent.
 */
static void conn_connect(struct conn *c)
{
	struct ev_loop *loop = c->w->loop;
	struct sockaddr_storage client;
	int r, fd;

	source_key_addr(&c->source, c->lo->listen.addr.ss_family, &client);
	r = conn_dial_in_netns(c, (struct sockaddr *)&client, &fd);
	if (r < 0 && (errno == EMFILE || errno == ENFILE)) {
		accept_pause_all(c->w, strerror(errno));
		conn_rearm(c, CONNECT_RETRY);
		return;
	}
	if (r < 0) {
		conn_backend_failed(c, END_ERROR, strerror(errno));
		return;
	}
	c->srv.fd = fd;
	if (r == 0) {
		conn_start_forwarding(c);
		return;
	}
	ev_io_init(&c->connect_w, on_connect, fd, EV_WRITE);
	ev_io_start(loop, &c->connect_w);
	conn_rearm(c, c->deadline - ev_now(loop));
}

/**
 * conn_dial() - start the connect to the current backend
 * @c:	the connection, leaving the handshake or a failed backend
 */
static void conn_dial(struct conn *c)
{
	ev_io_stop(c->w->loop, &c->connect_w);
	conn_set_state(c, CS_CONNECTING);
	c->deadline = ev_now(c->w->loop) + c->lo->connect_timeout;
	log_debug("conn %s: connecting to %s", c->cli_text,
		  c->lo->backend[c->be].text);
	conn_connect(c);
}

/**
 * transparent_hint() - what to check when a transparent connect times out
 * @lo:		the listener's settings
 * @end:	how the connect failed
 *
 * With --transparent, the server answers the client's address; if the
 * routing does not bring that answer back to this host, the connect never
 * completes, and the timeout is all anyone sees.
 *
 * Return: the hint, or "".
 */
static const char *transparent_hint(const struct listen_opts *lo,
				    enum conn_end end)
{
	return lo->transparent && end == END_TIMEOUT
		       ? "; with --transparent, check that the server's replies to the client's address are routed back through this host (see README)"
		       : "";
}

/**
 * conn_backend_failed() - the backend being dialled failed: try the next
 * @c:		the connection, in CS_CONNECTING
 * @end:	how the connection ends if no backend is left
 * @why:	what failed
 *
 * Backends are tried in the order given, from the first, for every
 * client: a second server is a failover, not a share of the load. Each
 * failure is counted against its backend.
 */
static void conn_backend_failed(struct conn *c, enum conn_end end,
				const char *why)
{
	const struct listen_opts *lo = c->lo;
	bool next = c->be + 1 < lo->nbackends;
	char text[256];

	counter_add(&c->st->backend_failures[c->be], 1);
	ev_io_stop(c->w->loop, &c->connect_w);
	if (c->srv.fd >= 0)
		close(c->srv.fd);
	c->srv.fd = -1;
	if (next) {
		log_rate(LOG_LVL_WARN, "conn %s: backend %s: %s; trying %s",
			 c->cli_text, lo->backend[c->be].text, why,
			 lo->backend[c->be + 1].text);
		c->be++;
		conn_dial(c);
		return;
	}
	if (lo->nbackends > 1)
		snprintf(text, sizeof(text),
			 "all %u backends failed, the last: %s%s",
			 lo->nbackends, why, transparent_hint(lo, end));
	else
		snprintf(text, sizeof(text), "backend %s%s", why,
			 transparent_hint(lo, end));
	conn_end(c, end, text);
}

/**
 * conn_netbios_listener() - did the client dial the NetBIOS session port
 * @c:	the connection
 *
 * The accepted socket's own address is the port the client dialled, with
 * socket activation and --transparent alike. Asked only of a client that
 * opened with a session request.
 *
 * Return: true for port 139.
 */
static bool conn_netbios_listener(const struct conn *c)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	in_port_t port;

	if (getsockname(c->cli.fd, (struct sockaddr *)&ss, &len))
		return false;
	port = ss.ss_family == AF_INET6
		       ? ((struct sockaddr_in6 *)&ss)->sin6_port
		       : ((struct sockaddr_in *)&ss)->sin_port;
	return ntohs(port) == NBT_SESSION_PORT;
}

/**
 * conn_refuse_opening() - reset a client whose first frame no SMB server
 *			   answers, before any server is dialled
 * @c:		the connection, in CS_HANDSHAKE
 * @why:	what is wrong with the frame
 */
static void conn_refuse_opening(struct conn *c, const char *why)
{
	char text[160];

	counter_add(&c->st->bad_openings, 1);
	snprintf(text, sizeof(text), "%s; reset before dialling the server",
		 why);
	conn_end(c, END_ERROR, text);
}

/**
 * conn_wait_rest() - the first frame is incomplete: sleep until it is not
 * @c:		the connection, in CS_HANDSHAKE
 * @need:	bytes the verdict needs
 *
 * A receive low-water mark keeps the socket quiet until @need bytes are
 * queued (or the client closes); where the socket takes none (MPTCP on
 * older kernels), it is peeked at every FIRST_FRAME_POLL instead, until
 * --handshake-timeout.
 */
static void conn_wait_rest(struct conn *c, size_t need)
{
	struct ev_loop *loop = c->w->loop;
	ev_tstamp left = c->deadline - ev_now(loop);

	if (ev_is_active(&c->connect_w) &&
	    !sock_set_rcvlowat(c->cli.fd, (int)need)) {
		c->lowat = true;
		return;
	}
	ev_io_stop(loop, &c->connect_w);
	conn_rearm(c, left < FIRST_FRAME_POLL ? left : FIRST_FRAME_POLL);
}

/**
 * conn_peek_first() - judge what the client has sent; dial for an opening
 * @c:	the connection, in CS_HANDSHAKE
 *
 * The bytes are only peeked at, SMB_OPENING_MAX at most: they stay queued
 * for the up direction. A client that leaves before its first frame is
 * complete never reaches the server; nor does one whose frame is not an
 * SMB opening (smb_opening_judge()), which is reset and counted. With
 * --first-frame any, the first byte is enough.
 */
static void conn_peek_first(struct conn *c)
{
	uint8_t buf[SMB_OPENING_MAX];
	size_t want = c->lo->any_first_frame ? 1 : sizeof(buf), need = 0;
	const char *why = NULL;
	enum smb_opening v;
	ssize_t n;
	bool stale;

	n = recv(c->cli.fd, buf, want, MSG_PEEK);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n < 0) {
		conn_end(c, end_for_errno(errno), strerror(errno));
		return;
	}
	if (n == 0) {
		conn_end(c, END_FIN, "client closed before sending a byte");
		return;
	}
	if (c->lo->any_first_frame) {
		conn_dial(c);
		return;
	}
	v = smb_opening_judge(buf, (size_t)n, &need, &why);
	if (v == SMB_OPENING_NETBIOS && !conn_netbios_listener(c)) {
		v = SMB_OPENING_BAD;
		why = "NetBIOS session request on a port other than 139";
	}
	if (v == SMB_OPENING_BAD) {
		conn_refuse_opening(c, why);
		return;
	}
	if (v != SMB_OPENING_MORE) {
		if (c->lowat)
			sock_set_rcvlowat(c->cli.fd, 1);
		conn_dial(c);
		return;
	}
	/* Woken with nothing new: the client closed, or a spurious wake. */
	stale = (size_t)n <= c->peeked;
	c->peeked = (unsigned)n;
	if (stale && sock_peer_shut(c->cli.fd)) {
		conn_end(c, END_FIN,
			 "client closed in the middle of its first frame");
		return;
	}
	conn_wait_rest(c, need);
}

/**
 * on_first_frame() - the client's socket became readable in the handshake
 * @loop:	the loop
 * @w:		&conn.connect_w, on the client socket
 * @revents:	unused
 */
static void on_first_frame(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)revents;
	conn_peek_first(w->data);
}

/**
 * conn_open() - take a new client: wait for its first frame, or dial
 * @w:		the worker that accepted it
 * @cli_fd:	the accepted, non-blocking client socket
 * @peer:	the client's address
 * @source:	the same, as admitted by limits_admit(); the connection
 *		releases it, and its two descriptors, when it ends
 */
void conn_open(struct worker *w, struct listener *l, struct lcfg *cfg,
	       int cli_fd, const struct sockaddr *peer,
	       const struct source_key *source)
{
	const struct listen_opts *o = &cfg->o;
	struct conn *c;
	char text[64];

	c = calloc(1, sizeof(*c));
	if (!c) {
		sock_addr_text(peer, text, sizeof(text));
		log_rate(LOG_LVL_ERR, "conn %s rejected: out of memory", text);
		limits_release(&w->px->limits, source, o->mode == MODE_SMB);
		budget_give(&w->px->limits.fds, 2);
		sock_set_linger0(cli_fd);
		close(cli_fd);
		return;
	}
	c->w = w;
	c->l = l;
	listener_get(l);
	c->cfg = cfg;
	lcfg_get(cfg);
	c->lo = o;
	c->st = &l->st[w->id];
	c->source = *source;
	c->unauth = o->mode == MODE_SMB; /* as take_client() admitted it */
	c->cli.fd = cli_fd;
	c->srv.fd = -1;
	c->started = ev_now(w->loop);
	sock_addr_text(peer, c->cli_text, sizeof(c->cli_text));
	ev_timer_init(&c->timer, on_timer, 0., 0.);
	c->timer.data = c;
	/* Unused watchers must be initialised for conn_end() to stop them. */
	ev_io_init(&c->connect_w, on_first_frame, cli_fd, EV_READ);
	c->connect_w.data = c;
	ev_io_init(&c->up.rd, on_io, cli_fd, EV_READ);
	ev_io_init(&c->up.wr, on_io, cli_fd, EV_WRITE);
	ev_io_init(&c->down.rd, on_io, cli_fd, EV_READ);
	ev_io_init(&c->down.wr, on_io, cli_fd, EV_WRITE);

	c->next = w->conns;
	if (w->conns)
		w->conns->prev = c;
	w->conns = c;
	counter_add(&w->active, 1);
	counter_add(&w->accepted, 1);

	log_debug("conn %s: accepted", c->cli_text);
	if (o->mode != MODE_SMB) {
		conn_dial(c);
		return;
	}
	conn_set_state(c, CS_HANDSHAKE);
	c->deadline = c->started + o->handshake_timeout;
	ev_io_start(w->loop, &c->connect_w);
	conn_rearm(c, o->handshake_timeout);
}

/**
 * conn_close_all() - end every connection of a worker, for a clean stop
 * @w:	the worker
 */
void conn_close_all(struct worker *w)
{
	while (w->conns)
		conn_end(w->conns, END_SHUTDOWN, NULL);
}
