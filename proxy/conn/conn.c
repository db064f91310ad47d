// SPDX-License-Identifier: GPL-2.0-or-later
/* conn.c - the life of one proxied connection
 *
 * Theory of operation: a connection is a client socket, a backend socket
 * and two directions (struct dir, dir.c), DIR_TO_SERVER and DIR_TO_CLIENT.
 * Its life is a few stages (enum conn_state), changed by conn_set_state()
 * alone along conn_state_next[], the whole life of a connection in one
 * table, each change logged at debug level with both stages' names:
 *
 *   new -> [proxy-header ->] handshake -> connecting -> open -> ended
 *     `-------------------------------^   ^----'   (failover)
 *   proxy-header, handshake, connecting -> ended
 *
 *   proxy-header: --accept-proxy only: the gateway's PROXY v2 header
 *               (pp2_sock.c), read under --handshake-timeout (a bad or
 *               missing one is reset), names the client, who takes the
 *               gateway's place in all that judges or records a client
 *               (--allow, the caps, the log, the address --transparent
 *               dials from, --send-proxy); a LOCAL header keeps the
 *               gateway. With --transparent an IPv6 client of an IPv4
 *               listener is reset, never dialled from a wrong address
 *               (conn_pp2_adopt()).
 *   handshake:  smb mode only: the backend is not dialled until the
 *               client's first frame is an SMB opening (handshake.c),
 *               under --handshake-timeout; while it is incomplete, a
 *               receive low-water mark keeps the socket quiet. tcp mode
 *               skips it, since other protocols may have the server speak
 *               first. It and proxy-header peek alike, to one verdict
 *               enum (io/peek.h) that conn_peeked() acts on.
 *   connecting: the backend connect (dial.c) is in flight, under
 *               --connect-timeout; the client's bytes wait in the kernel.
 *               A failed backend fails over to the next, and after the
 *               last the client is reset. Out of descriptors, the worker
 *               pauses accepting and the connect is retried.
 *   open:       both directions forward (dir.c). The timer is the idle
 *               timeout, rearmed lazily from @last_active, and in smb mode
 *               --auth-timeout until the server's stream shows a
 *               successful session setup, after which the connection is
 *               authenticated for good (--max-preauth-per-source).
 *               Traffic moves only @last_active: the timer, when it fires
 *               early, is set again for what is left (conn_arm_open()),
 *               so the hot path never touches it.
 *   ended:      both directions forwarded end of file (clean), or any
 *               error, reset or timeout (abortive: SO_LINGER 0 on both
 *               sockets, so each peer sees a reset). One line tells the
 *               story (connlog.c); then everything is freed.
 *
 * A stream that ends in the middle of an SMB message is no error: its end
 * of file is forwarded after its last byte, as direct TCP would, and the
 * other direction goes on to its own end (midframe= in the end line).
 *
 * A connection sees its thread only as a struct conn_host (connhost.c):
 * the pools it draws on, the stalled-pipe list (stall.c), two calls back,
 * and the descriptor budget (conn_host_reserve() before the accept, given
 * back when it ends). conn_end() is the one way into "ended": it writes
 * the end line (connlog.c), closes both sockets (resetting both peers
 * unless both directions ended cleanly), gives back everything the
 * connection held and tells its thread. The worker sets its host up once
 * (conn_host_init()); the host's stalled-pipe list is given the one thing
 * it may do to a direction, move its pipe's bytes into a buffer, which
 * ends the connection if the pipe cannot be read.
 */
#include "config.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>

#include "common/counter.h"
#include "common/log.h"
#include "conn/conn.h"
#include "conn/connhost.h"
#include "conn/connlog.h"
#include "conn/dir.h"
#include "conn/handshake.h"
#include "conn/observe.h"
#include "conn/stall.h"
#include "core/proxy.h"
#include "io/peek.h"
#include "io/pump.h"
#include "io/sock.h"
#include "io/sockbuf.h"
#include "net/dial.h"
#include "net/listener.h"
#include "pp2/pp2_sock.h"
#include "quic/qdial.h"
#include "smb/opening.h"
#include "net/admit.h"

/* In the handshake, on a socket that takes no SO_RCVLOWAT: how often an
 * incomplete first frame is looked at again. */
#define FIRST_FRAME_POLL 0.05

static void conn_connect(struct conn *c);
static void conn_dial_first(struct conn *c);
static void conn_backend_failed(struct conn *c, enum conn_end end,
				const char *why);
static void conn_peek_first(struct conn *c);
static void on_first_frame(struct ev_loop *loop, ev_io *w, int revents);

/**
 * on_io() - a direction's source is readable or its destination writable
 * @loop:	the loop
 * @w:		&dir.rd or &dir.wr, with data pointing at the dir
 * @revents:	unused
 *
 * Only bytes count as activity: a wake-up that moves nothing must not
 * keep a stuck connection alive.
 */
static void on_io(struct ev_loop *loop, ev_io *w, int revents)
{
	struct dir *d = w->data;
	struct conn *c = d->c;
	enum pump_status st;
	bool progress;

	st = dir_step(d, &progress);
	if (progress)
		c->last_active = ev_now(loop);
	if (c->unauth && d->id == DIR_TO_CLIENT)
		conn_note_auth(c);
	if (st == PUMP_FIN && c->dir[DIR_TO_SERVER].flags &
				      c->dir[DIR_TO_CLIENT].flags & DIR_F_DONE)
		conn_end(c, END_FIN, NULL);
	else if (st == PUMP_SRC_ERR || st == PUMP_DST_ERR)
		conn_end(c, conn_end_for_errno(d->pump.err),
			 strerror(d->pump.err));
}

/**
 * on_timer() - the current stage's timeout, or a connect retry is due
 * @loop:	the loop
 * @w:		&conn.timer
 * @revents:	unused
 */
static void on_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct conn *c = w->data;
	const struct listen_opts *o = c->lo;
	char why[96];

	switch (c->state) {
	case CS_NEW:
	case CS_ENDED:
	case CS_COUNT:
		return; /* no timer runs in these */
	case CS_PROXY_HEADER:
	case CS_HANDSHAKE:
		if (!ev_is_active(&c->connect_w) &&
		    ev_now(loop) < c->deadline) {
			on_first_frame(loop, &c->connect_w, 0); /* polled */
			return;
		}
		if (c->state == CS_PROXY_HEADER)
			counter_add(&c->st->proxy_refused, 1);
		snprintf(why, sizeof(why),
			 "%s within %gs (--handshake-timeout)",
			 c->state == CS_PROXY_HEADER
				 ? "client sent no complete PROXY header"
			 : c->peeked ? "client sent no complete first frame"
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
		conn_open_timer(c);
		return;
	}
}

/**
 * conn_dirs_init() - set up both directions, and what observes them
 * @c:	the connection, whose backend is connected
 *
 * Nothing starts: the caller arms the watchers.
 */
void conn_dirs_init(struct conn *c)
{
	dir_init(&c->dir[DIR_TO_SERVER], c, DIR_TO_SERVER, &c->cli, &c->srv,
		 on_io);
	dir_init(&c->dir[DIR_TO_CLIENT], c, DIR_TO_CLIENT, &c->srv, &c->cli,
		 on_io);
	/* Whether a login was anonymous is in the request. */
	smb_framer_pair(&c->dir[DIR_TO_CLIENT].fr, &c->dir[DIR_TO_SERVER].fr);
	observe_dir(&c->dir[DIR_TO_SERVER]);
	observe_dir(&c->dir[DIR_TO_CLIENT]);
}

/**
 * conn_fit_buffers() - hold each socket to what its path needs
 * @c:	the connection, both handshakes done and their RTTs measured
 *
 * An MPTCP side is left alone: its RTT is its first subflow's, and a
 * size set on it would bind every later subflow, over longer paths too.
 * A socket that cannot be held keeps what it had (or half of it held):
 * worth a debug line, not the connection.
 */
static void conn_fit_buffers(struct conn *c)
{
	static const char *const side_name[SIDE_COUNT] = { "client",
							   "backend" };
	const int fd[SIDE_COUNT] = { c->cli.fd, c->srv.fd };
	unsigned rtt, setting;
	int r;

	for (int s = 0; s < SIDE_COUNT; s++) {
		setting = c->lo->mptcp[s] ? SOCKBUF_KERNEL : c->lo->sockbuf[s];
		r = sockbuf_fit(fd[s], setting, &rtt);
		if (r < 0)
			log_debug("conn %s: %s socket buffers: %s", c->cli_text,
				  side_name[s], strerror(errno));
		else if (r)
			log_debug("conn %s: %s RTT %u us: socket buffers %d",
				  c->cli_text, side_name[s], rtt, r);
	}
}

/**
 * conn_start_forwarding() - the backend is connected: start both directions
 * @c:	the connection
 *
 * Both sockets have their options already: the client socket inherited
 * them from the listening socket, the backend socket got them from
 * dial_backend(); only --socket-buffer auto waited for the RTTs, which
 * are known now. With --send-proxy the backend's stream opens with the
 * PROXY header, before any byte of the client's.
 */
static void conn_start_forwarding(struct conn *c)
{
	struct ev_loop *loop = c->host->loop;
	char why[96];

	if (c->lo->send_proxy &&
	    pp2_sock_send(c->srv.fd, c->cli.fd, (struct sockaddr *)&c->peer)) {
		snprintf(why, sizeof(why), "sending the PROXY header: %s",
			 strerror(errno));
		conn_end(c, conn_end_for_errno(errno), why);
		return;
	}
	conn_fit_buffers(c);
	conn_set_state(c, CS_OPEN);
	ev_io_stop(loop, &c->connect_w);
	ev_timer_stop(loop, &c->timer);
	observe_begin(c);
	conn_dirs_init(c);
	c->last_active = ev_now(loop);
	log_debug("conn %s: backend connected", c->cli_text);
	conn_arm_open(c);
	ev_io_start(loop, &c->dir[DIR_TO_SERVER].rd);
	ev_io_start(loop, &c->dir[DIR_TO_CLIENT].rd);
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

	if (err) {
		snprintf(why, sizeof(why), "connect: %s", strerror(err));
		conn_backend_failed(c, END_ERROR, why);
		return;
	}
	conn_start_forwarding(c);
}

/**
 * on_qdial() - a quic: backend's dial: its stream is open, or it failed
 *		(before: try the next; after: reset the client as it was)
 * @ctx:	the connection
 * @why:	NULL once the stream is open; else why the dial failed
 */
static void on_qdial(void *ctx, const char *why)
{
	struct conn *c = ctx;

	if (!why) {
		conn_start_forwarding(c); /* @qd stays: conn_free() lets go */
		return;
	}
	c->qd = NULL;
	if (c->state == CS_OPEN)
		conn_end(c, END_ERROR, why);
	else
		conn_backend_failed(c, END_ERROR, why);
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
	struct conn_host *h = c->host;
	struct sockaddr_storage client;
	struct dial_req req = {
		.lo = c->lo,
		.be = c->be,
		.netns = c->cfg->netns[SIDE_BACKEND],
		.netns_ino = c->cfg->netns_ino[SIDE_BACKEND],
		.client = (struct sockaddr *)&client,
		.client_fd = c->cli.fd,
		.chan = h->id + 1,
	};
	struct qdial_req qr = {
		h->loop, h->px, h->netns_ino, &req, on_qdial, c
	};
	char why[320] = "";
	int r, fd;

	limits_source_addr(&c->source, c->lo->listen.addr.ss_family, &client);
	if (c->lo->backend_quic[c->be]) /* the socketpair's end, or -1 */
		r = qdial_open(&qr, &c->qd, &fd, why, sizeof(why)) ? -1 : 1;
	else
		r = dial_from(h->px, h->netns_ino, &req, &fd);
	if (r < 0 && (errno == EMFILE || errno == ENFILE)) {
		h->ops->out_of_fds(h->ctx, strerror(errno));
		conn_rearm(c, CONN_CONNECT_RETRY);
		return;
	}
	if (r < 0) {
		conn_backend_failed(c, END_ERROR, *why ? why : strerror(errno));
		return;
	}
	c->srv.fd = fd;
	if (r == 0) {
		conn_start_forwarding(c);
		return;
	}
	ev_io_init(&c->connect_w, on_connect, fd, EV_WRITE);
	if (!c->qd) /* a QUIC dial tells on_qdial() instead */
		ev_io_start(h->loop, &c->connect_w);
	conn_rearm(c, c->deadline - ev_now(h->loop));
}

/**
 * conn_dial() - start the connect to the current backend
 * @c:	the connection, leaving the handshake or a failed backend
 */
static void conn_dial(struct conn *c)
{
	ev_io_stop(c->host->loop, &c->connect_w);
	conn_set_state(c, CS_CONNECTING);
	c->deadline = ev_now(c->host->loop) + c->lo->connect_timeout;
	log_debug("conn %s: connecting to %s", c->cli_text,
		  c->lo->backend[c->be].text);
	conn_connect(c);
}

/**
 * conn_dial_first() - dial the first backend that takes new connections
 * @c:	the connection, past its handshake
 *
 * With every backend drained or in maintenance the client is reset, with
 * a line that says so: dialling one would undo what the admin asked.
 */
static void conn_dial_first(struct conn *c)
{
	int be = listener_pick_backend(c->cfg, 0);

	conn_set_state(c, CS_CONNECTING); /* the one way to ended from new */
	if (be < 0) {
		conn_end(c, END_ERROR,
			 "no backend takes new connections: every one is "
			 "drained or in maintenance (smbsplice ctl backend "
			 "LISTENER BACKEND ready puts one back)");
		return;
	}
	c->be = (unsigned)be;
	conn_dial(c);
}

/**
 * conn_backend_failed() - the backend being dialled failed: try the next
 * @c:		the connection, in CS_CONNECTING
 * @end:	how the connection ends if no backend is left
 * @why:	what failed
 *
 * Backends are tried in the order given, for every client: a second
 * server is a failover, not a share of the load. Those drained or in
 * maintenance are skipped, and those the checks call down come last
 * (listener_pick_backend()). Each failure is counted against its backend.
 */
static void conn_backend_failed(struct conn *c, enum conn_end end,
				const char *why)
{
	const struct listen_opts *lo = c->lo;
	int next = listener_pick_backend(c->cfg, c->be + 1);
	char text[256];

	counter_add(&c->st->backend_failures[c->be], 1);
	ev_io_stop(c->host->loop, &c->connect_w);
	qdial_cancel(c->qd); /* NULL-safe */
	c->qd = NULL;
	if (c->srv.fd >= 0)
		close(c->srv.fd);
	c->srv.fd = -1;
	if (next >= 0) {
		log_rate(LOG_LVL_WARN, "conn %s: backend %s: %s; trying %s",
			 c->cli_text, lo->backend[c->be].text, why,
			 lo->backend[next].text);
		c->be = (unsigned)next;
		conn_dial(c);
		return;
	}
	dial_failure_text(lo, why, end == END_TIMEOUT, text, sizeof(text));
	conn_end(c, end, text);
}

/**
 * conn_wait_rest() - what is peeked at is incomplete: sleep until it is not
 * @c:		the connection, in CS_PROXY_HEADER or CS_HANDSHAKE
 * @need:	bytes the verdict needs
 *
 * A receive low-water mark keeps the socket quiet until @need bytes are
 * queued (or the client closes); where the socket takes none (MPTCP on
 * older kernels), it is peeked at every FIRST_FRAME_POLL instead, until
 * --handshake-timeout.
 */
static void conn_wait_rest(struct conn *c, size_t need)
{
	struct ev_loop *loop = c->host->loop;
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
 * conn_peeked() - act on a verdict on what the client has sent
 * @c:		the connection, in CS_PROXY_HEADER or CS_HANDSHAKE
 * @v:		the verdict (pp2_sock.c or handshake.c)
 * @p:		its detail
 * @bad:	the counter a PEEK_BAD adds to
 * @what:	PEEK_BAD: what goes before its reason in the end line
 *
 * The PROXY header and the first frame are both judged before any dial,
 * so a bad one is reset before a server is dialled, and counted, and
 * one that is not whole is waited for; once it is, the low-water mark
 * the wait raised is dropped, for the next stage's bytes.
 *
 * Return: true for PEEK_OK, the caller's to go on; otherwise the
 * connection waits, or has ended.
 */
static bool conn_peeked(struct conn *c, enum peek_verdict v,
			const struct peek_detail *p, uint64_t *bad,
			const char *what)
{
	char text[160];

	switch (v) {
	case PEEK_WAIT:
		return false;
	case PEEK_FAILED:
		conn_end(c, conn_end_for_errno(p->err), strerror(p->err));
		return false;
	case PEEK_CLOSED:
		conn_end(c, END_FIN, p->why);
		return false;
	case PEEK_BAD:
		counter_add(bad, 1);
		snprintf(text, sizeof(text),
			 "%s%s; reset before dialling the server", what,
			 p->why);
		conn_end(c, END_ERROR, text);
		return false;
	case PEEK_MORE:
		conn_wait_rest(c, p->need);
		return false;
	case PEEK_OK:
		break;
	}
	if (c->lowat)
		sock_set_rcvlowat(c->cli.fd, 1);
	return true;
}

/**
 * conn_peek_first() - act on what the client has sent (handshake.c)
 * @c:	the connection, in CS_HANDSHAKE
 *
 * A first frame no SMB server answers is counted in bad_openings; a
 * whole one that does is dialled for.
 */
static void conn_peek_first(struct conn *c)
{
	struct peek_detail p;
	enum peek_verdict v;

	v = handshake_peek(c->cli.fd, c->lo->any_first_frame, &c->peeked, &p);
	if (conn_peeked(c, v, &p, &c->st->bad_openings, ""))
		conn_dial_first(c);
}

/**
 * conn_first_frame() - wait for the client's first frame, or dial
 * @c:	the connection, new or past its PROXY header
 *
 * tcp mode dials at once: other protocols may have the server speak
 * first.
 */
static void conn_first_frame(struct conn *c)
{
	if (c->lo->mode != MODE_SMB) {
		conn_dial_first(c);
		return;
	}
	conn_set_state(c, CS_HANDSHAKE);
	ev_io_start(c->host->loop, &c->connect_w);
	conn_rearm(c, c->deadline - ev_now(c->host->loop));
}

/**
 * conn_pp2_adopt() - the PROXY header named a client: judge it instead
 * @c:	the connection, in CS_PROXY_HEADER, its header read
 * @in:	what the header said
 *
 * The gateway's place under the caps is given back and the client's
 * taken, --allow checked; a LOCAL header (the gateway's health check) or
 * one without addresses leaves the gateway as the client.
 *
 * Return: true if the client is served; otherwise the connection ended.
 */
static bool conn_pp2_adopt(struct conn *c, const struct pp2_info *in)
{
	const struct sockaddr *src = (const struct sockaddr *)&in->src;
	char why[160], text[256], was[sizeof(c->cli_text)];
	enum admit a;

	if (!in->has_addr)
		return true;
	c->peer = in->src;
	memcpy(was, c->cli_text, sizeof(was));
	sock_addr_text(src, c->cli_text, sizeof(c->cli_text));
	log_debug("conn %s: PROXY header from %s", c->cli_text, was);
	if (c->lo->transparent && c->lo->listen.addr.ss_family == AF_INET &&
	    src->sa_family == AF_INET6 &&
	    !IN6_IS_ADDR_V4MAPPED(
		    &((const struct sockaddr_in6 *)src)->sin6_addr)) {
		counter_add(&c->st->proxy_refused, 1);
		conn_end(
			c, END_ERROR,
			"PROXY header names an IPv6 client: --transparent on an IPv4 listener cannot connect from it");
		return false;
	}
	limits_release(&c->host->px->limits, &c->source, c->unauth);
	a = admit_client(c->host->px, c->lo, src, true, &c->source, why,
			 sizeof(why));
	c->admitted = a == ADMIT_OK;
	if (c->admitted)
		return true;
	counter_add(a == ADMIT_DENIED ? &c->st->denied : &c->st->refused[a], 1);
	snprintf(text, sizeof(text), "refused by listener %s: %s", c->l->name,
		 why);
	conn_end(c, END_ERROR, text);
	return false;
}

/**
 * conn_read_proxy_header() - act on the PROXY header (pp2_sock.c)
 * @c:	the connection, in CS_PROXY_HEADER
 */
static void conn_read_proxy_header(struct conn *c)
{
	struct peek_detail p;
	struct pp2_info info;
	enum peek_verdict v;

	v = pp2_sock_read(c->cli.fd, &c->peeked, &p, &info);
	if (!conn_peeked(c, v, &p, &c->st->proxy_refused,
			 "bad PROXY header (--accept-proxy): "))
		return;
	/* conn_peeked() dropped the mark: say so, since the first frame's
	 * wait may raise its own. */
	c->lowat = false;
	if (conn_pp2_adopt(c, &info))
		conn_first_frame(c);
}

/**
 * on_first_frame() - the client's socket became readable before the dial
 * @loop:	the loop
 * @w:		&conn.connect_w, on the client socket
 * @revents:	unused
 */
static void on_first_frame(struct ev_loop *loop, ev_io *w, int revents)
{
	struct conn *c = w->data;

	if (c->state == CS_PROXY_HEADER)
		conn_read_proxy_header(c);
	else
		conn_peek_first(c);
}

/**
 * conn_watchers_init() - set up the watchers of a stage, none started
 * @c:	the connection, with its sockets and stage
 *
 * Unused watchers must be initialised too, for conn_end() to stop them.
 */
void conn_watchers_init(struct conn *c)
{
	bool dialling = c->state == CS_CONNECTING && c->srv.fd >= 0;

	ev_timer_init(&c->timer, on_timer, 0., 0.);
	c->timer.data = c;
	if (dialling)
		ev_io_init(&c->connect_w, on_connect, c->srv.fd, EV_WRITE);
	else
		ev_io_init(&c->connect_w, on_first_frame, c->cli.fd, EV_READ);
	c->connect_w.data = c;
	for (unsigned i = 0; i < DIR_COUNT; i++) {
		ev_io_init(&c->dir[i].rd, on_io, c->cli.fd, EV_READ);
		ev_io_init(&c->dir[i].wr, on_io, c->cli.fd, EV_WRITE);
	}
}

/**
 * conn_open() - take a new client: wait for its first frame, or dial
 * @h:		the thread that accepted it
 * @l:		the listener it came on
 * @cfg:	the settings it starts with
 * @cli_fd:	the accepted, non-blocking client socket
 * @peer:	the client's address
 * @source:	the same, as admitted by limits_admit(); the connection
 *		releases it, and the descriptors conn_host_reserve() took,
 *		when it ends
 * @arrival:	NULL, or a count of clients on their way to @h, lowered
 *		the instant this one is counted open or turned away
 */
void conn_open(struct conn_host *h, struct listener *l, struct lcfg *cfg,
	       int cli_fd, const struct sockaddr *peer,
	       const struct source_key *source, unsigned *arrival)
{
	const struct listen_opts *o = &cfg->o;
	struct conn *c = calloc(1, sizeof(*c));
	char text[64];

	if (!c) {
		sock_addr_text(peer, text, sizeof(text));
		log_rate(LOG_LVL_ERR, "conn %s rejected: out of memory", text);
		limits_release(&h->px->limits, source, o->mode == MODE_SMB);
		conn_host_unreserve(h);
		sock_set_linger0(cli_fd);
		close(cli_fd);
		conn_host_arrived(arrival);
		return;
	}
	c->host = h;
	c->l = l;
	listener_get(l);
	c->cfg = cfg;
	listener_cfg_get(cfg);
	c->lo = o;
	c->st = &l->st[h->id];
	c->source = *source;
	c->admitted = true;
	memcpy(&c->peer, peer,
	       peer->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
					   : sizeof(struct sockaddr_in));
	c->unauth = o->mode == MODE_SMB; /* as take_client() admitted it */
	c->cli.fd = cli_fd;
	c->srv.fd = -1;
	c->id = h->opened = conn_host_new_id();
	c->started = ev_now(h->loop);
	sock_addr_text(peer, c->cli_text, sizeof(c->cli_text));
	conn_watchers_init(c);

	conn_host_link(h, c);
	conn_host_arrived(arrival);
	counter_add(&h->accepted, 1);

	log_debug("conn %s: accepted", c->cli_text);
	c->deadline = c->started + o->handshake_timeout;
	if (!o->accept_proxy) {
		conn_first_frame(c);
		return;
	}
	conn_set_state(c, CS_PROXY_HEADER);
	ev_io_start(h->loop, &c->connect_w);
	conn_rearm(c, o->handshake_timeout);
}

/**
 * conn_close_all() - end every connection of a thread, for a clean stop
 * @h:	the thread's host
 */
void conn_close_all(struct conn_host *h)
{
	while (h->conns)
		conn_end(h->conns, END_SHUTDOWN, NULL);
	stall_list_stop(&h->stalls);
}

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
	if (end == END_SHUTDOWN) /* no loop is left for a released dial */
		qdial_abort(&c->qd);
	conn_free(c);
	h->ops->ended(h->ctx);
}

/**
 * conn_free() - close a connection's sockets, give back all, free it
 * @c:	the connection, its watchers stopped, its pumps and observers freed
 *
 * The close is a plain one: whatever conn_end() decided (a reset, a FIN)
 * is done, and a handed-over connection's sockets are the next process's.
 */
void conn_free(struct conn *c)
{
	struct conn_host *h = c->host;

	close(c->cli.fd);
	qdial_release(c->qd); /* cancelled, or left to end on its own */
	if (c->srv.fd >= 0)
		close(c->srv.fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		h->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	counter_sub(&h->active, 1);
	counter_sub(&c->l->counters->active[h->id], 1);
	if (c->admitted)
		limits_release(&h->px->limits, &c->source, c->unauth);
	conn_host_unreserve(h);
	listener_cfg_put(c->cfg);
	listener_put(c->l);
	free(c->who);
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
