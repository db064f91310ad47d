// SPDX-License-Identifier: GPL-2.0-or-later
/* listener.c - accepting clients
 *
 * Theory of operation: every worker has a listening socket of its own,
 * bound to the same address with SO_REUSEPORT, and the kernel spreads new
 * connections over them; so workers never contend for an accept queue or
 * hand connections to each other. The sockets are opened by the main
 * thread before any worker runs, so a bad address fails the start, and
 * each worker then watches its own.
 *
 * The backlog is as deep as the kernel allows (net.core.somaxconn), so
 * that every client of a failed-over server can reconnect at once. The
 * listening socket is level-triggered; each wake
 * accepts a bounded batch so that a flood of connects cannot starve the
 * connections already open. When accept() fails for lack of file
 * descriptors or memory, the pending connection stays in the backlog and
 * the socket stays readable, so retrying at once would spin at 100% CPU.
 * Instead accepting pauses for ACCEPT_PAUSE seconds, and says so in at most
 * one log line every ACCEPT_WARN_EVERY seconds. Running out while opening a
 * backend connection pauses accepting the same way (see conn.c).
 *
 * Mostly, though, accept() never runs out: before each accept the worker
 * takes a new connection's two descriptors from the process's budget
 * (limits.c), and pauses the same way when the budget cannot spare them,
 * leaving clients in the backlog until connections end. A client outside
 * every --allow network is reset at once, with a rate-limited log line and
 * a count in smbsplice_denied_total, before it counts against any cap; one
 * accepted past --max-conns or --max-conns-per-source is reset the same
 * way and counted in smbsplice_refused_total.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "conn.h"
#include "counter.h"
#include "dial.h"
#include "limits.h"
#include "listener.h"
#include "log.h"
#include "netns.h"
#include "proxy.h"
#include "sock.h"
#include "worker.h"

#define ACCEPT_BATCH	  64
#define ACCEPT_PAUSE	  0.1
#define ACCEPT_WARN_EVERY 10.0

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
 * listener_pause() - stop accepting for a moment after running out of fds
 * @w:		the worker
 * @why:	what ran out: strerror() of accept()'s or socket()'s errno,
 *		or the descriptor budget
 */
void listener_pause(struct worker *w, const char *why)
{
	ev_tstamp now = ev_now(w->loop);

	/* One line per ACCEPT_WARN_EVERY seconds, not one per pause. */
	if (now - w->accept_warned >= ACCEPT_WARN_EVERY) {
		w->accept_warned = now;
		log_warn(
			"out of file descriptors (%s); pausing accepts for %gs (%u connections open; raise ulimit -n or LimitNOFILE=)",
			why, ACCEPT_PAUSE, limits_conns(&w->px->limits));
	}
	accept_backoff(w->loop, &w->accept_pause);
}

/**
 * refuse() - reset a client that a cap refuses, with a rate-limited line
 * @w:		the worker
 * @fd:		the client socket
 * @peer:	its address
 * @a:		the cap that refuses it
 */
static void refuse(struct worker *w, int fd, const struct sockaddr *peer,
		   enum admit a)
{
	const struct options *o = w->px->opt;
	char text[64];

	counter_add(&w->refused[a], 1);
	sock_addr_text(peer, text, sizeof(text));
	log_rate(LOG_LVL_WARN, "conn %s refused: %s (--%s %u)", text,
		 a == ADMIT_MAX_CONNS ? "too many connections"
				      : "too many connections from its address",
		 a == ADMIT_MAX_CONNS ? "max-conns" : "max-conns-per-source",
		 a == ADMIT_MAX_CONNS ? o->max_conns : o->max_per_source);
	sock_set_linger0(fd);
	close(fd);
}

/**
 * allowed() - is a client in one of the listener's --allow networks
 * @lo:		the listener's settings
 * @peer:	the client's address
 *
 * Return: true if it is, or if the listener allows everyone.
 */
static bool allowed(const struct listen_opts *lo, const struct sockaddr *peer)
{
	if (!lo->nallow)
		return true;
	for (unsigned i = 0; i < lo->nallow; i++)
		if (cidr_match(&lo->allow[i], peer))
			return true;
	return false;
}

/**
 * deny() - reset a client that --allow does not admit
 * @w:		the worker
 * @fd:		the client socket
 * @peer:	its address
 */
static void deny(struct worker *w, int fd, const struct sockaddr *peer)
{
	char text[64];

	counter_add(&w->denied, 1);
	sock_addr_text(peer, text, sizeof(text));
	log_rate(LOG_LVL_WARN, "conn %s refused: not in --allow (listener %s)",
		 text, w->px->opt->l.name);
	sock_set_linger0(fd);
	close(fd);
}

/**
 * take_client() - admit an accepted client, or refuse it
 * @w:		the worker
 * @fd:		the client socket; its two descriptors are reserved
 * @peer:	its address
 */
static void take_client(struct worker *w, int fd, const struct sockaddr *peer)
{
	struct limits *l = &w->px->limits;
	struct source_key key;
	enum admit a;

	if (!allowed(&w->px->opt->l, peer)) {
		fd_budget_give(&l->fds, 2);
		deny(w, fd, peer);
		return;
	}
	source_key_of(peer, &key);
	a = limits_admit(l, &key);
	if (a != ADMIT_OK) {
		fd_budget_give(&l->fds, 2);
		refuse(w, fd, peer, a);
		return;
	}
	conn_open(w, fd, peer, &key);
}

/**
 * accept_backoff() - stop accepting on a listener for ACCEPT_PAUSE seconds
 * @loop:	the loop
 * @t:		the listener's pause timer, set up by accept_pause_init()
 */
void accept_backoff(struct ev_loop *loop, ev_timer *t)
{
	ev_io_stop(loop, t->data);
	ev_timer_set(t, ACCEPT_PAUSE, 0.);
	ev_timer_start(loop, t);
}

/**
 * on_accept() - the listening socket is readable
 * @loop:	the loop
 * @io:		&worker.accept_w
 * @revents:	unused
 */
static void on_accept(struct ev_loop *loop, ev_io *io, int revents)
{
	struct worker *w = io->data;
	struct fd_budget *fds = &w->px->limits.fds;
	struct sockaddr_storage peer;
	char why[96];
	socklen_t len;
	int i, fd;

	(void)loop;
	(void)revents;
	for (i = 0; i < ACCEPT_BATCH; i++) {
		if (!fd_budget_take(fds, 2)) {
			snprintf(why, sizeof(why),
				 "budget of %ld spent by connections and pipes",
				 fds->limit);
			listener_pause(w, why);
			return;
		}
		len = sizeof(peer);
		fd = accept4(w->listen_fd, (struct sockaddr *)&peer, &len,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			take_client(w, fd, (struct sockaddr *)&peer);
			continue;
		}
		fd_budget_give(fds, 2);
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		if (accept_out_of_resources(errno))
			listener_pause(w, strerror(errno));
		else if (errno != EAGAIN && errno != EWOULDBLOCK)
			log_rate(LOG_LVL_ERR, "accept: %s", strerror(errno));
		return;
	}
}

/**
 * on_accept_resume() - the pause is over: accept again
 * @loop:	the loop
 * @w:		the pause timer, whose data is the listener's watcher
 * @revents:	unused
 */
static void on_accept_resume(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)revents;
	ev_io_start(loop, w->data);
}

/**
 * accept_pause_init() - set up the pause timer of a listener
 * @t:	the timer
 * @w:	the listener's readable watcher, which the timer restarts
 */
void accept_pause_init(ev_timer *t, ev_io *w)
{
	ev_timer_init(t, on_accept_resume, ACCEPT_PAUSE, 0.);
	t->data = w;
}

/**
 * listener_open() - open a worker's listening socket
 * @w:	the worker, not running yet
 *
 * Return: 0, or -1 after logging why.
 */
int listener_open(struct worker *w)
{
	const struct listen_opts *lo = &w->px->opt->l;
	const struct endpoint *ep = &lo->listen;
	int ns = w->px->netns[SIDE_CLIENT], err;
	char why[384];

	if (ns >= 0 && netns_enter(ns)) {
		log_err("listener %s: cannot enter %s: %s", lo->name,
			lo->netns[SIDE_CLIENT], strerror(errno));
		return -1;
	}
	w->listen_fd = sock_listen((const struct sockaddr *)&ep->addr, ep->len,
				   true, lo->mptcp[SIDE_CLIENT]);
	err = errno;
	if (ns >= 0)
		netns_enter(netns_home());
	if (w->listen_fd < 0) {
		log_err("cannot listen on %s%s%s: %s", ep->text,
			ns >= 0 ? " in " : "",
			ns >= 0 ? lo->netns[SIDE_CLIENT] : "", strerror(err));
		return -1;
	}
	/* Accepted sockets inherit these, so every client has them from its
	 * first byte, before the backend is even dialled. */
	if (dial_client_side(w->listen_fd, lo, why, sizeof(why))) {
		log_err("%s", why);
		return -1;
	}
	ev_io_init(&w->accept_w, on_accept, w->listen_fd, EV_READ);
	w->accept_w.data = w;
	accept_pause_init(&w->accept_pause, &w->accept_w);
	return 0;
}

/**
 * listener_start() - start accepting, from the worker's own thread
 * @w:	the worker
 */
void listener_start(struct worker *w)
{
	ev_io_start(w->loop, &w->accept_w);
}

/**
 * listener_stop() - stop accepting and close the listening socket
 * @w:	the worker
 */
void listener_stop(struct worker *w)
{
	ev_io_stop(w->loop, &w->accept_w);
	ev_timer_stop(w->loop, &w->accept_pause);
	if (w->listen_fd >= 0)
		close(w->listen_fd);
	w->listen_fd = -1;
}
