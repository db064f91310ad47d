// SPDX-License-Identifier: GPL-2.0-or-later
/* listener.c - accepting clients
 *
 * Theory of operation: the listening socket is level-triggered; each wake
 * accepts a bounded batch so that a flood of connects cannot starve the
 * connections already open. When accept() fails for lack of file
 * descriptors or memory, the pending connection stays in the backlog and
 * the socket stays readable, so retrying at once would spin at 100% CPU.
 * Instead accepting pauses for ACCEPT_PAUSE seconds, and says so in at most
 * one log line every ACCEPT_WARN_EVERY seconds.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "conn.h"
#include "listener.h"
#include "log.h"
#include "proxy.h"
#include "sock.h"

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
 * accept_pause() - stop accepting for a moment after running out of fds
 * @px:		the daemon
 * @err:	the errno that caused it
 */
static void accept_pause(struct proxy *px, int err)
{
	ev_tstamp now = ev_now(px->loop);

	/* One line per ACCEPT_WARN_EVERY seconds, not one per pause. */
	if (now - px->accept_warned >= ACCEPT_WARN_EVERY) {
		px->accept_warned = now;
		log_warn(
			"accept: %s; pausing accepts for %gs (%lu connections open; raise ulimit -n or LimitNOFILE=)",
			strerror(err), ACCEPT_PAUSE, px->active);
	}
	accept_backoff(px->loop, &px->accept_pause);
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
 * @w:		&proxy.accept_w
 * @revents:	unused
 */
static void on_accept(struct ev_loop *loop, ev_io *w, int revents)
{
	struct proxy *px = w->data;
	struct sockaddr_storage peer;
	socklen_t len;
	int i, fd;

	(void)loop;
	(void)revents;
	for (i = 0; i < ACCEPT_BATCH; i++) {
		len = sizeof(peer);
		fd = accept4(px->listen_fd, (struct sockaddr *)&peer, &len,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			conn_open(px, fd, (struct sockaddr *)&peer);
			continue;
		}
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		if (accept_out_of_resources(errno))
			accept_pause(px, errno);
		else if (errno != EAGAIN && errno != EWOULDBLOCK)
			log_err("accept: %s", strerror(errno));
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
 * listener_start() - open the listening socket and start accepting
 * @px:	the daemon, with @opt set
 *
 * Return: 0, or -1 after logging why.
 */
int listener_start(struct proxy *px)
{
	const struct endpoint *ep = &px->opt->listen;

	px->listen_fd =
		sock_listen((const struct sockaddr *)&ep->addr, ep->len);
	if (px->listen_fd < 0) {
		log_err("cannot listen on %s: %s", ep->text, strerror(errno));
		return -1;
	}
	ev_io_init(&px->accept_w, on_accept, px->listen_fd, EV_READ);
	px->accept_w.data = px;
	accept_pause_init(&px->accept_pause, &px->accept_w);
	ev_io_start(px->loop, &px->accept_w);
	return 0;
}

/**
 * listener_stop() - stop accepting and close the listening socket
 * @px:	the daemon
 */
void listener_stop(struct proxy *px)
{
	ev_io_stop(px->loop, &px->accept_w);
	ev_timer_stop(px->loop, &px->accept_pause);
	if (px->listen_fd >= 0)
		close(px->listen_fd);
	px->listen_fd = -1;
}
