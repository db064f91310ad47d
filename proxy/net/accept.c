// SPDX-License-Identifier: GPL-2.0-or-later
/* accept.c - accepting clients, in each worker
 *
 * Theory of operation: every worker has a listening socket of its own per
 * listener, bound to the same address with SO_REUSEPORT, and the kernel
 * spreads new connections over them; so workers never contend for an
 * accept queue. An admitted client is placed through accept_ops' place():
 * the worker keeps it, or hands it to one that serves fewer connections
 * (worker/balance.c), since the kernel's hash spreads a few long SMB
 * sessions unevenly. The main thread makes
 * the sockets (listener.c) and hands each to its worker, which watches it
 * here until the listener is removed or the process drains.
 *
 * The backlog is as deep as the kernel allows (net.core.somaxconn), so
 * that every client of a failed-over server can reconnect at once. The
 * listening socket is level-triggered; each wake accepts a bounded batch
 * so that a flood of connects cannot starve the connections already open.
 *
 * Before each accept the worker takes a new connection's two descriptors
 * from the process's budget (limits.c), and pauses accepting for
 * ACCEPT_PAUSE seconds when the budget cannot spare them, leaving clients
 * in the backlog until connections end; accept() failing for lack of
 * descriptors or memory, or the socket() of a backend connection (see
 * conn.c), pauses it the same way, with at most one log line every
 * ACCEPT_WARN_EVERY seconds. A client outside every --allow network is
 * reset at once, with a rate-limited log line, before it counts against
 * any cap (admit.c); one past --max-conns, --max-conns-per-source or
 * --max-preauth-per-source likewise. On a listener with --accept-proxy the
 * peer is a gateway: one outside every --proxy-from network is reset the
 * same way, and --allow waits for the client its header names (conn.c).
 *
 * Removing a listener (a reload, or SIGTERM's drain) first accepts what
 * is already queued on the socket, so that no client the kernel accepted
 * is reset by the close, then closes it.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/accept.h"
#include "net/admit.h"
#include "common/counter.h"
#include "net/dial.h"
#include "core/limits.h"
#include "net/listener.h"
#include "common/log.h"
#include "conf/options.h"
#include "core/proxy.h"
#include "io/sock.h"

#define ACCEPT_BATCH	  64
#define ACCEPT_PAUSE	  0.1
#define ACCEPT_WARN_EVERY 10.0

/* A removed socket's queue is drained up to this many clients. */
#define ACCEPT_DRAIN_MAX 4096

/**
 * accept_out_of_resources() - is this accept() failure worth a pause
 * @err:	errno from accept()
 *
 * Return: true for EMFILE, ENFILE, ENOBUFS and ENOMEM.
 */
bool accept_out_of_resources(int err)
{
	return err == EMFILE || err == ENFILE || err == ENOBUFS ||
	       err == ENOMEM;
}

/**
 * accept_backoff() - stop accepting on a socket for ACCEPT_PAUSE seconds
 * @loop:	the loop
 * @t:		the socket's pause timer, set up by accept_pause_init()
 */
void accept_backoff(struct ev_loop *loop, ev_timer *t)
{
	ev_io_stop(loop, t->data);
	/* It may be running already (a second pause within one accept
	 * batch, or from a backend connect's EMFILE): libev forbids
	 * setting a running timer. */
	ev_timer_stop(loop, t);
	ev_timer_set(t, ACCEPT_PAUSE, 0.);
	ev_timer_start(loop, t);
}

/**
 * on_accept_resume() - the pause is over: accept again
 * @loop:	the loop
 * @w:		the pause timer, whose data is the socket's watcher
 * @revents:	unused
 */
static void on_accept_resume(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)revents;
	ev_io_start(loop, w->data);
}

/**
 * accept_pause_init() - set up the pause timer of a listening socket
 * @t:	the timer
 * @w:	the socket's readable watcher, which the timer restarts
 */
void accept_pause_init(ev_timer *t, ev_io *w)
{
	ev_timer_init(t, on_accept_resume, ACCEPT_PAUSE, 0.);
	t->data = w;
}

/**
 * accept_pause_all() - stop a worker accepting for a moment
 * @a:		the worker's acceptor
 * @why:	what ran out: strerror() of accept()'s or socket()'s errno,
 *		or the descriptor budget
 */
void accept_pause_all(struct acceptor *a, const char *why)
{
	ev_tstamp now = ev_now(a->loop);

	/* One line per ACCEPT_WARN_EVERY seconds, not one per pause. */
	if (now - a->warned >= ACCEPT_WARN_EVERY) {
		a->warned = now;
		log_warn(
			"out of file descriptors (%s); pausing accepts for %gs (%u connections open; raise ulimit -n or LimitNOFILE=)",
			why, ACCEPT_PAUSE, limits_conns(&a->px->limits));
	}
	for (struct wlistener *wl = a->list; wl; wl = wl->next)
		if (!wl->held)
			accept_backoff(a->loop, &wl->pause);
}

/**
 * accept_hold() - stop accepting on one listener's socket, or start again
 * @wl:		the listener in this worker
 * @hold:	true to stop (the control socket's drain), false to resume
 *
 * Return: 0, or -1 with errno set (the socket is left as it was).
 */
int accept_hold(struct wlistener *wl, bool hold)
{
	struct ev_loop *loop = wl->a->loop;

	if (wl->held == hold)
		return 0;
	if (sock_listen_hold(wl->fd, hold))
		return -1;
	wl->held = hold;
	ev_timer_stop(loop, &wl->pause);
	if (hold)
		ev_io_stop(loop, &wl->io);
	else
		ev_io_start(loop, &wl->io);
	return 0;
}

/**
 * turn_away() - reset a client that is not to be served
 * @fd:		the client socket
 * @peer:	its address
 * @lname:	the listener's name
 * @why:	why, for the rate-limited log line
 */
static void turn_away(int fd, const struct sockaddr *peer, const char *lname,
		      const char *why)
{
	char text[64];

	sock_addr_text(peer, text, sizeof(text));
	log_rate(LOG_LVL_WARN, "conn %s refused by listener %s: %s", text,
		 lname, why);
	sock_set_linger0(fd);
	close(fd);
}

/**
 * take_client() - admit an accepted client, or refuse it
 * @wl:		the listener it came on
 * @fd:		the client socket; its two descriptors are reserved
 * @peer:	its address
 *
 * With --accept-proxy the peer is a gateway: only one in --proxy-from is
 * heard, and it is held to the caps under its own address until its
 * header names the client, whom --allow and the caps then judge
 * (conn.c).
 */
static void take_client(struct wlistener *wl, int fd,
			const struct sockaddr *peer)
{
	struct acceptor *acc = wl->a;
	const struct listen_opts *lo = &wl->cfg->o;
	struct lstats *st = &wl->l->st[acc->id];
	struct source_key key;
	char why[160];
	enum admit a;

	if (lo->accept_proxy &&
	    !admit_in(lo->proxy_from, lo->nproxy_from, peer)) {
		acc->ops->unreserve(acc->host);
		counter_add(&st->proxy_refused, 1);
		turn_away(
			fd, peer, wl->l->name,
			"not in --proxy-from, so its PROXY header is not believed");
		return;
	}
	a = admit_client(acc->px, lo, peer, !lo->accept_proxy, &key, why,
			 sizeof(why));
	if (a != ADMIT_OK) {
		acc->ops->unreserve(acc->host);
		counter_add(a == ADMIT_DENIED ? &st->denied : &st->refused[a],
			    1);
		turn_away(fd, peer, wl->l->name, why);
		return;
	}
	counter_add(&st->accepted, 1);
	acc->ops->place(acc->host, wl->l, wl->cfg, fd, peer, &key);
}

/**
 * accept_batch() - accept up to @max clients queued on a socket
 * @wl:		the listener
 * @max:	how many at most
 *
 * Return: true if the queue is empty (or accepting must pause).
 */
static bool accept_batch(struct wlistener *wl, int max)
{
	struct acceptor *a = wl->a;
	struct sockaddr_storage peer;
	char why[96];
	socklen_t len;
	int fd;

	for (int i = 0; i < max; i++) {
		if (!a->ops->reserve(a->host)) {
			snprintf(why, sizeof(why),
				 "budget of %ld spent by connections and pipes",
				 a->px->limits.fds.limit);
			accept_pause_all(a, why);
			return true;
		}
		len = sizeof(peer);
		fd = accept4(wl->fd, (struct sockaddr *)&peer, &len,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			take_client(wl, fd, (struct sockaddr *)&peer);
			continue;
		}
		a->ops->unreserve(a->host);
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		if (accept_out_of_resources(errno))
			accept_pause_all(a, strerror(errno));
		else if (errno != EAGAIN && errno != EWOULDBLOCK)
			log_rate(LOG_LVL_ERR, "accept: %s", strerror(errno));
		return true;
	}
	return false;
}

/**
 * on_accept() - a listening socket is readable
 * @loop:	the loop
 * @io:		&wlistener.io
 * @revents:	unused
 */
static void on_accept(struct ev_loop *loop, ev_io *io, int revents)
{
	(void)loop;
	(void)revents;
	accept_batch(io->data, ACCEPT_BATCH);
}

/**
 * accept_add() - start accepting on a listener's socket, in its worker
 * @a:		the worker's acceptor
 * @l:		the listener, whose reference (taken by the main thread for
 *		this worker) the worker now holds
 * @fd:		the worker's socket for it
 *
 * Return: the worker's handle on it, or NULL if memory ran out (the
 * socket is closed and the reference dropped).
 */
struct wlistener *accept_add(struct acceptor *a, struct listener *l, int fd)
{
	struct wlistener *wl = calloc(1, sizeof(*wl));

	if (!wl) {
		log_err("worker %u: out of memory for listener %s", a->id,
			l->name);
		close(fd);
		listener_put(l);
		return NULL;
	}
	wl->a = a;
	wl->l = l;
	wl->cfg = l->cfg;
	listener_cfg_get(wl->cfg);
	wl->fd = fd;
	ev_io_init(&wl->io, on_accept, fd, EV_READ);
	wl->io.data = wl;
	accept_pause_init(&wl->pause, &wl->io);
	ev_io_start(a->loop, &wl->io);
	wl->next = a->list;
	a->list = wl;
	return wl;
}

/**
 * accept_set_cfg() - new connections start with new settings
 * @wl:		the worker's listener
 * @cfg:	the settings, whose reference the worker now holds
 *
 * The client side's socket options (keepalive, congestion control) are
 * set on the listening socket, which accepted sockets inherit. Only the
 * worker holds that socket once it runs, so it sets them here; the reload
 * tried them on a scratch socket first, so a failure is unlikely, and
 * then the old ones stay.
 */
void accept_set_cfg(struct wlistener *wl, struct lcfg *cfg)
{
	char err[256];

	if (dial_client_side(wl->fd, &cfg->o, err, sizeof(err)))
		log_warn("%s; new clients keep the old settings", err);
	listener_cfg_put(wl->cfg);
	wl->cfg = cfg;
}

/**
 * accept_remove() - stop accepting on a listener and close its socket
 * @wl:		the worker's listener, unlinked and freed here
 * @drain:	first accept what the kernel already queued, so that the
 *		close resets no client that completed its handshake
 */
void accept_remove(struct wlistener *wl, bool drain)
{
	struct acceptor *a = wl->a;
	struct wlistener **link = &a->list;

	while (*link != wl)
		link = &(*link)->next;
	*link = wl->next;
	ev_io_stop(a->loop, &wl->io);
	ev_timer_stop(a->loop, &wl->pause);
	if (drain)
		accept_batch(wl, ACCEPT_DRAIN_MAX);
	close(wl->fd);
	listener_cfg_put(wl->cfg);
	listener_put(wl->l);
	free(wl);
}

/**
 * accept_remove_all() - stop accepting on every listener of a worker
 * @a:		the worker's acceptor
 * @drain:	as accept_remove()
 */
void accept_remove_all(struct acceptor *a, bool drain)
{
	while (a->list)
		accept_remove(a->list, drain);
}

/**
 * accept_find() - the worker's handle on a listener
 * @a:	the worker's acceptor
 * @l:	the listener
 *
 * Return: the handle, or NULL if the worker does not accept on it.
 */
struct wlistener *accept_find(struct acceptor *a, const struct listener *l)
{
	for (struct wlistener *wl = a->list; wl; wl = wl->next)
		if (wl->l == l)
			return wl;
	return NULL;
}

/**
 * accept_init() - set up a worker's acceptor, with no listener yet
 * @a:		the acceptor
 * @px:		the process
 * @loop:	the worker's loop
 * @id:		the worker's number
 * @host:	where accepted clients become connections
 * @ops:	how they become connections there
 */
void accept_init(struct acceptor *a, struct proxy *px, struct ev_loop *loop,
		 unsigned id, struct conn_host *host,
		 const struct accept_ops *ops)
{
	*a = (struct acceptor){
		.px = px, .loop = loop, .id = id, .host = host, .ops = ops
	};
}

/**
 * accept_pause() - stop taking clients, for a handover
 * @a:	the worker's acceptor
 *
 * The clients that come meanwhile wait in the kernel's queue, which goes
 * with the socket to the next process, or is served here again after
 * accept_resume().
 */
void accept_pause(struct acceptor *a)
{
	for (struct wlistener *wl = a->list; wl; wl = wl->next) {
		ev_io_stop(a->loop, &wl->io);
		ev_timer_stop(a->loop, &wl->pause);
	}
}

/**
 * accept_resume() - take clients again after accept_pause()
 * @a:	the worker's acceptor
 */
void accept_resume(struct acceptor *a)
{
	for (struct wlistener *wl = a->list; wl; wl = wl->next)
		if (!wl->held)
			ev_io_start(a->loop, &wl->io);
}
