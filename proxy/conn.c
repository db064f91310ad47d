// SPDX-License-Identifier: GPL-2.0-or-later
/* conn.c - one proxied connection: backend connect, two directions, end
 *
 * Theory of operation: a connection is a client socket, a backend socket
 * and two directions (struct dir), "up" from client to server and "down"
 * back. Its life has three stages:
 *
 *   connecting: the backend connect is in flight, under --connect-timeout.
 *               The client is not read yet, so its bytes wait in the
 *               kernel. A refused, unreachable or timed-out backend resets
 *               the client at once.
 *   open:       each direction runs half_run() whenever its source is
 *               readable or its destination writable, and arms exactly the
 *               one watcher half_run() asks for. The timer is the idle
 *               timeout, rearmed lazily from @last_active so that traffic
 *               costs no timer syscalls.
 *   ended:      when both directions have forwarded end of file (clean), or
 *               on any error, reset or timeout (abortive: both sockets are
 *               closed with SO_LINGER 0, so each peer sees a reset). One log
 *               line tells the story; then everything is freed.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conn.h"
#include "log.h"
#include "pump.h"
#include "sock.h"
#include "stats.h"

enum conn_end {
	END_FIN,      /* both directions forwarded end of file */
	END_RST,      /* a peer reset its socket; the other was reset too */
	END_TIMEOUT,  /* connect or idle timeout */
	END_ERROR,    /* any other failure */
	END_SHUTDOWN, /* the daemon is stopping */
};

static const char *const end_word[] = { "fin", "rst", "timeout", "error",
					"shutdown" };

struct conn;

/**
 * struct dir - a direction and the two watchers that drive it
 * @h:		the bytes and the pumps
 * @rd:		readable watcher on @h.src
 * @wr:		writable watcher on @h.dst
 * @c:		the connection
 * @fr:		the SMB framer, used in smb mode
 * @done:	end of file was forwarded
 * @opaque_logged: the framer's giving up was logged
 */
struct dir {
	struct half h;
	ev_io rd, wr;
	struct conn *c;
	struct smb_framer fr;
	bool done;
	bool opaque_logged;
};

/**
 * struct conn - a client, its backend connection and the two directions
 * @px:		the daemon
 * @prev:	list link
 * @next:	list link
 * @cli:	client socket
 * @srv:	backend socket, fd -1 until created
 * @up:		client to server
 * @down:	server to client
 * @connect_w:	writable watcher on @srv while the connect is in flight
 * @timer:	connect timeout, then idle timeout
 * @connected:	the backend connect succeeded
 * @started:	when the client was accepted
 * @last_active: last time either direction delivered a byte
 * @cli_text:	client address, for the log
 * @bufs:	the two copy buffers, --buffer-size each
 */
struct conn {
	struct proxy *px;
	struct conn *prev, *next;
	struct sock cli, srv;
	struct dir up, down;
	ev_io connect_w;
	ev_timer timer;
	bool connected;
	ev_tstamp started, last_active;
	char cli_text[64];
	char bufs[];
};

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
	const struct smb_dir_stats *u = &c->up.fr.st, *d = &c->down.fr.st;
	char dialect[16];

	*out = '\0';
	if (c->px->opt->mode != MODE_SMB)
		return out;
	smb_dialect_text(d->dialect, dialect, sizeof(dialect));
	snprintf(
		out, outlen,
		" smb dialect=%s reads=%llu/%lluB writes=%llu/%lluB signed=%s encrypted=%s%s",
		dialect, (unsigned long long)d->reads,
		(unsigned long long)d->read_bytes,
		(unsigned long long)u->writes,
		(unsigned long long)u->write_bytes,
		u->signed_seen || d->signed_seen ? "yes" : "no",
		u->encrypted || d->encrypted ? "yes" : "no",
		c->up.opaque_logged || c->down.opaque_logged ? " opaque=yes"
							     : "");
	return out;
}

/**
 * conn_log_end() - the one line that records a connection
 * @c:		the connection
 * @end:	how it ended
 * @why:	detail for errors and timeouts, or NULL
 */
static void conn_log_end(const struct conn *c, enum conn_end end,
			 const char *why)
{
	const struct half_stats *u = &c->up.h.st, *d = &c->down.h.st;
	char smb[192];

	log_info(
		"conn %s -> %s end=%s%s%s%s dur=%.3fs "
		"c2s=%llu (splice %llu copy %llu) s2c=%llu (splice %llu copy %llu)%s",
		c->cli_text, c->px->opt->backend.text, end_word[end],
		why ? " (" : "", why ? why : "", why ? ")" : "",
		ev_now(c->px->loop) - c->started,
		(unsigned long long)(u->spliced + u->copied),
		(unsigned long long)u->spliced, (unsigned long long)u->copied,
		(unsigned long long)(d->spliced + d->copied),
		(unsigned long long)d->spliced, (unsigned long long)d->copied,
		conn_smb_text(c, smb, sizeof(smb)));
}

/**
 * conn_add_totals() - add a connection's counters to @t
 * @c:	the connection
 * @t:	the totals
 */
static void conn_add_totals(const struct conn *c, struct totals *t)
{
	bool smb = c->px->opt->mode == MODE_SMB;

	totals_add_dir(&t->dir[DIR_TO_SERVER], &c->up.h.st,
		       smb ? &c->up.fr.st : NULL, c->srv.uncorks);
	totals_add_dir(&t->dir[DIR_TO_CLIENT], &c->down.h.st,
		       smb ? &c->down.fr.st : NULL, c->cli.uncorks);
	t->opaque_conns += c->up.opaque_logged || c->down.opaque_logged;
}

/**
 * conn_sum_live() - add every open connection's counters to @t
 * @px:	the daemon
 * @t:	the totals, usually a copy of the closed connections' totals
 */
void conn_sum_live(const struct proxy *px, struct totals *t)
{
	for (const struct conn *c = px->conns; c; c = c->next)
		conn_add_totals(c, t);
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
	struct proxy *px = c->px;
	struct ev_loop *loop = px->loop;

	conn_log_end(c, end, why);
	conn_add_totals(c, &px->closed);
	ev_io_stop(loop, &c->up.rd);
	ev_io_stop(loop, &c->up.wr);
	ev_io_stop(loop, &c->down.rd);
	ev_io_stop(loop, &c->down.wr);
	ev_io_stop(loop, &c->connect_w);
	ev_timer_stop(loop, &c->timer);
	half_release(&c->up.h);
	half_release(&c->down.h);
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
		px->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	px->active--;
	free(c);
}

/**
 * end_for_errno() - how a failed read or write ends the connection
 * @err:	the errno
 *
 * Return: END_RST when a peer reset, END_ERROR otherwise.
 */
static enum conn_end end_for_errno(int err)
{
	return err == ECONNRESET || err == EPIPE ? END_RST : END_ERROR;
}

/**
 * dir_log_opaque() - say, once, that a direction stopped parsing SMB
 * @d:	the direction
 */
static void dir_log_opaque(struct dir *d)
{
	d->opaque_logged = true;
	log_warn(
		"conn %s: %s is not SMB as smbsplice reads it (%s); forwarding it opaque",
		d->c->cli_text,
		d == &d->c->up ? "client to server" : "server to client",
		d->fr.why);
}

/**
 * dir_run() - run a direction and arm the watcher it asks for
 * @d:	the direction
 */
static void dir_run(struct dir *d)
{
	struct conn *c = d->c;
	struct ev_loop *loop = c->px->loop;
	struct dir *other = d == &c->up ? &c->down : &c->up;
	uint64_t moved = d->h.st.spliced + d->h.st.copied;
	enum pump_status st = half_run(&d->h);

	/* Only bytes count as activity: a wake-up that moves nothing must
	 * not keep a stuck connection alive. */
	if (d->h.st.spliced + d->h.st.copied != moved)
		c->last_active = ev_now(loop);
	if (d->h.fr && !d->opaque_logged && smb_framer_opaque(d->h.fr))
		dir_log_opaque(d);
	switch (st) {
	case PUMP_WAIT_READ:
		ev_io_stop(loop, &d->wr);
		ev_io_start(loop, &d->rd);
		return;
	case PUMP_WAIT_WRITE:
		ev_io_stop(loop, &d->rd);
		ev_io_start(loop, &d->wr);
		return;
	case PUMP_FIN:
		ev_io_stop(loop, &d->rd);
		ev_io_stop(loop, &d->wr);
		d->done = true;
		if (other->done)
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

/**
 * on_timer() - connect timeout, or the idle timer's lazy check
 * @loop:	the loop
 * @w:		&conn.timer
 * @revents:	unused
 */
static void on_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct conn *c = w->data;
	double idle = c->px->opt->idle_timeout;
	ev_tstamp left;
	char why[96];

	(void)revents;
	if (!c->connected) {
		snprintf(why, sizeof(why),
			 "backend connect timed out after %gs",
			 c->px->opt->connect_timeout);
		conn_end(c, END_TIMEOUT, why);
		return;
	}
	left = c->last_active + idle - ev_now(loop);
	if (left > 0) {
		ev_timer_set(w, left, 0.);
		ev_timer_start(loop, w);
		return;
	}
	snprintf(why, sizeof(why), "idle for %gs", idle);
	conn_end(c, END_TIMEOUT, why);
}

/**
 * dir_init() - set up a direction and its watchers
 * @c:		the connection
 * @d:		&c->up or &c->down
 * @src:	socket it reads
 * @dst:	socket it writes
 * @buf:	its copy buffer
 */
static void dir_init(struct conn *c, struct dir *d, struct sock *src,
		     struct sock *dst, char *buf)
{
	const struct options *o = c->px->opt;

	smb_framer_init(&d->fr, &o->th);
	half_init(&d->h, src, dst, &c->px->pool, buf, o->buf_size, o->splice,
		  o->mode == MODE_SMB ? &d->fr : NULL);
	d->c = c;
	d->done = false;
	d->opaque_logged = false;
	ev_io_init(&d->rd, on_io, src->fd, EV_READ);
	ev_io_init(&d->wr, on_io, dst->fd, EV_WRITE);
	d->rd.data = d->wr.data = d;
}

/**
 * conn_start_forwarding() - the backend is connected: start both directions
 * @c:	the connection
 */
static void conn_start_forwarding(struct conn *c)
{
	struct ev_loop *loop = c->px->loop;
	double idle = c->px->opt->idle_timeout;

	c->connected = true;
	ev_io_stop(loop, &c->connect_w);
	ev_timer_stop(loop, &c->timer);
	sock_set_nodelay(c->cli.fd);
	sock_set_nodelay(c->srv.fd);
	sock_set_oobinline(c->cli.fd);
	sock_set_oobinline(c->srv.fd);
	dir_init(c, &c->up, &c->cli, &c->srv, c->bufs);
	dir_init(c, &c->down, &c->srv, &c->cli, c->bufs + c->px->opt->buf_size);
	c->last_active = ev_now(loop);
	log_debug("conn %s: backend connected", c->cli_text);
	if (idle > 0) {
		ev_timer_set(&c->timer, idle, 0.);
		ev_timer_start(loop, &c->timer);
	}
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
		snprintf(why, sizeof(why), "backend connect: %s",
			 strerror(err));
		conn_end(c, END_ERROR, why);
		return;
	}
	conn_start_forwarding(c);
}

/**
 * conn_reject() - reset a client we cannot serve, with one log line
 * @cli_fd:	the client socket
 * @peer:	its address
 * @why:	the reason
 */
static void conn_reject(int cli_fd, const struct sockaddr *peer,
			const char *why)
{
	char text[64];

	sock_addr_text(peer, text, sizeof(text));
	log_err("conn %s rejected: %s", text, why);
	sock_set_linger0(cli_fd);
	close(cli_fd);
}

/**
 * conn_open() - take a new client and start connecting to the backend
 * @px:		the daemon
 * @cli_fd:	the accepted, non-blocking client socket
 * @peer:	the client's address
 */
void conn_open(struct proxy *px, int cli_fd, const struct sockaddr *peer)
{
	const struct options *o = px->opt;
	struct conn *c;
	char why[256];
	int r, fd = -1;

	c = malloc(sizeof(*c) + 2 * o->buf_size);
	if (!c) {
		conn_reject(cli_fd, peer, "out of memory");
		return;
	}
	r = sock_connect_start((const struct sockaddr *)&o->backend.addr,
			       o->backend.len, &fd);
	if (r < 0) {
		snprintf(
			why, sizeof(why), "backend %s: %s%s", o->backend.text,
			strerror(errno),
			errno == EMFILE || errno == ENFILE
				? " (raise the open-files limit, ulimit -n or LimitNOFILE=)"
				: "");
		free(c);
		conn_reject(cli_fd, peer, why);
		return;
	}

	memset(c, 0, sizeof(*c));
	c->px = px;
	c->cli.fd = cli_fd;
	c->srv.fd = fd;
	c->started = ev_now(px->loop);
	sock_addr_text(peer, c->cli_text, sizeof(c->cli_text));
	ev_io_init(&c->connect_w, on_connect, fd, EV_WRITE);
	c->connect_w.data = c;
	ev_timer_init(&c->timer, on_timer, o->connect_timeout, 0.);
	c->timer.data = c;
	/* Unused watchers must be initialised for conn_end() to stop them. */
	ev_io_init(&c->up.rd, on_io, cli_fd, EV_READ);
	ev_io_init(&c->up.wr, on_io, fd, EV_WRITE);
	ev_io_init(&c->down.rd, on_io, fd, EV_READ);
	ev_io_init(&c->down.wr, on_io, cli_fd, EV_WRITE);

	c->next = px->conns;
	if (px->conns)
		px->conns->prev = c;
	px->conns = c;
	px->active++;
	px->total++;

	log_debug("conn %s: accepted, connecting to %s", c->cli_text,
		  o->backend.text);
	if (r == 0) {
		conn_start_forwarding(c);
		return;
	}
	ev_io_start(px->loop, &c->connect_w);
	ev_timer_start(px->loop, &c->timer);
}

/**
 * conn_close_all() - end every connection, for a clean stop
 * @px:	the daemon
 */
void conn_close_all(struct proxy *px)
{
	while (px->conns)
		conn_end(px->conns, END_SHUTDOWN, NULL);
}
