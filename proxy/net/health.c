// SPDX-License-Identifier: GPL-2.0-or-later
/* health.c - probing each backend, so that a down one is skipped
 *
 * Theory of operation: a listener with health-check = tcp or smb has every one
 * of its backends probed from the main thread's loop, every health-interval: a
 * non-blocking connect, made as its connections' are (in the backend namespace,
 * through the privileged helper under --user), and with smb an SMB2 NEGOTIATE
 * request whose answer must be a NEGOTIATE response that succeeded
 * (smb/probe.c). The whole probe has the shorter of connect-timeout and
 * health-interval. health-fall probes that fail in a row mark an up backend
 * down, health-rise that pass in a row mark it up again, as HAProxy's fall and
 * rise do; the state is the backend's struct bstate, which workers read when
 * they choose a backend (listener_pick_backend()), and each change is a log
 * line and a count.
 *
 * A quic: backend is probed over QUIC: a dial as its connections' (the
 * handshake, the server's certificate checked, the stream opened), made by
 * quic/ through struct health_quic, and with smb the same NEGOTIATE on
 * the stream, read from the dial's socketpair as from a TCP socket.
 *
 * A backend starts up, so that checks never delay a fresh start. One in
 * maintenance is not probed (its health stays as it was); a drained one
 * is, so that it is known to be up before it is made ready again.
 *
 * health_sync() runs after every reload: the probes are made anew for the
 * listeners' current settings, whose states a reload carried over
 * (listener_carry_states()); the counts in a row start again. A listener
 * whose checks were turned off has its backends marked up, since nothing
 * would ever mark them up again. With send-proxy the backend expects a
 * PROXY header before any SMB, and smb checks are done as tcp ones (said
 * once in the log).
 *
 * Probes cost the backend a connection each; on Samba an smb probe
 * forks an smbd, hence the default interval of 5 s, and checks off by
 * default.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "common/log.h"
#include "common/netns.h"
#include "core/proxy.h"
#include "net/dial.h"
#include "net/health.h"
#include "net/listener.h"
#include "smb/probe.h"

/**
 * struct probe - one backend's checks
 * @set:	its listener's
 * @be:		which backend
 * @fd:		the probe's socket (a quic: backend's: the socketpair end
 *		its dial carries the stream on), -1 between probes
 * @qd:		a quic: backend's dial, NULL between probes
 * @tick:	every health-interval
 * @tmo:	the probe's deadline
 * @io:		writable while connecting, then readable
 * @ok:		probes passed in a row
 * @bad:	probes failed in a row
 * @got:	bytes of the answer read
 * @rsp:	the answer, as much as smb_probe_judge() reads
 */
struct probe {
	struct hset *set;
	unsigned be;
	int fd;
	void *qd;
	ev_timer tick, tmo;
	ev_io io;
	unsigned ok, bad;
	size_t got;
	uint8_t rsp[SMB_PROBE_RSP_NEED];
};

/**
 * struct hset - one listener's probes
 * @px:		the process
 * @cfg:	the listener's settings (a reference): where the states are
 * @mode:	CHECK_TCP or CHECK_SMB, as done
 * @next:	the list of sets
 * @n:		how many backends
 * @p:		their probes
 */
struct hset {
	struct proxy *px;
	struct lcfg *cfg;
	enum check_mode mode;
	struct hset *next;
	unsigned n;
	struct probe p[];
};

/* Every set, main thread only. */
static struct hset *sets;
/* How a quic: backend is dialled; NULL in a build without QUIC, which
 * has no quic: backend. */
static const struct health_quic *quic_ops;

/**
 * health_set_quic() - how probes dial quic: backends, from now on
 * @q:		quic/'s dial, or NULL
 */
void health_set_quic(const struct health_quic *q)
{
	quic_ops = q;
}

/**
 * probe_dial() - start the probe's connect, as a connection's would be
 * @px:		the process
 * @cfg:	the listener's settings
 * @be:		the backend
 * @fd:		the socket, on success
 *
 * As dial_from(), but from the main thread, which sits in the process's
 * own namespace, or under --user in the workers'; it has no client, so
 * --transparent's probe comes from this host's address.
 *
 * Return: as dial_backend().
 */
static int probe_dial(struct proxy *px, const struct lcfg *cfg, unsigned be,
		      int *fd)
{
	int ns = cfg->netns[SIDE_BACKEND], r, err;
	ino_t want = ns >= 0 ? cfg->netns_ino[SIDE_BACKEND] : px->home_ino;
	ino_t here = px->helper.fds ? px->worker_netns_ino : px->home_ino;

	if (px->helper.fds && (cfg->o.transparent || want != here))
		return dial_backend_helped(&px->helper, 0, &cfg->o, be, -1, fd);
	if (want == here)
		return dial_backend(&cfg->o, be, NULL, fd);
	if (netns_enter(ns))
		return -1;
	r = dial_backend(&cfg->o, be, NULL, fd);
	err = errno;
	netns_enter(netns_home());
	errno = err;
	return r;
}

/**
 * probe_close() - end the probe's dial, connection and timers
 * @p:		the probe
 */
static void probe_close(struct probe *p)
{
	ev_io_stop(p->set->px->loop, &p->io);
	ev_timer_stop(p->set->px->loop, &p->tmo);
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	if (p->qd)
		quic_ops->release(p->qd); /* after the close: a FIN to send */
	p->qd = NULL;
}

/**
 * probe_end() - a probe passed or failed: count it, and change the
 *		 backend's health when enough did in a row
 * @p:		the probe
 * @why:	what failed, or NULL if it passed
 */
static void probe_end(struct probe *p, const char *why)
{
	struct hset *s = p->set;
	struct lcfg *c = s->cfg;
	char text[160];

	probe_close(p);
	if (why) {
		p->ok = 0;
		p->bad++;
		log_debug("listener %s backend %s: check failed: %s", c->o.name,
			  c->o.backend[p->be].text, why);
		if (p->bad >= c->o.check_fall)
			listener_set_down(c, p->be, true, why);
		return;
	}
	p->bad = 0;
	p->ok++;
	snprintf(text, sizeof(text), "%u %s check%s passed", p->ok,
		 s->mode == CHECK_SMB ? "smb" : "tcp", p->ok > 1 ? "s" : "");
	if (p->ok >= c->o.check_rise)
		listener_set_down(c, p->be, false, text);
}

/**
 * on_readable() - the backend answered, or part of it
 * @loop:	the main loop
 * @w:		&probe.io
 * @revents:	unused
 */
static void on_readable(struct ev_loop *loop, ev_io *w, int revents)
{
	struct probe *p = w->data;
	const char *why;
	ssize_t r;

	(void)loop;
	(void)revents;
	r = recv(p->fd, p->rsp + p->got, sizeof(p->rsp) - p->got, 0);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) {
		probe_end(p, r ? strerror(errno)
			       : "the connection closed before an answer");
		return;
	}
	p->got += (size_t)r;
	switch (smb_probe_judge(p->rsp, p->got, &why)) {
	case SMB_PROBE_MORE:
		return;
	case SMB_PROBE_OK:
		probe_end(p, NULL);
		return;
	case SMB_PROBE_BAD:
		probe_end(p, why);
		return;
	}
}

/**
 * probe_ask() - connected: with smb, send the NEGOTIATE and wait for the
 *		 answer; with tcp, that was all
 * @p:		the probe
 */
static void probe_ask(struct probe *p)
{
	struct ev_loop *loop = p->set->px->loop;
	uint8_t req[SMB_PROBE_REQ_LEN];
	size_t n = smb_probe_request(req, sizeof(req));

	if (p->set->mode != CHECK_SMB) {
		probe_end(p, NULL);
		return;
	}
	/* A fresh socket's buffer takes the whole request. */
	if (send(p->fd, req, n, MSG_NOSIGNAL) != (ssize_t)n) {
		probe_end(p, "cannot send the NEGOTIATE request");
		return;
	}
	p->got = 0;
	ev_io_stop(loop, &p->io);
	ev_io_init(&p->io, on_readable, p->fd, EV_READ);
	p->io.data = p;
	ev_io_start(loop, &p->io);
}

/**
 * on_connected() - the probe's connect finished, one way or the other
 * @loop:	the main loop
 * @w:		&probe.io
 * @revents:	unused
 */
static void on_connected(struct ev_loop *loop, ev_io *w, int revents)
{
	struct probe *p = w->data;
	char why[96];
	int err = 0;
	socklen_t len = sizeof(err);

	(void)loop;
	(void)revents;
	if (getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	if (err) {
		snprintf(why, sizeof(why), "connect: %s", strerror(err));
		probe_end(p, why);
		return;
	}
	probe_ask(p);
}

/**
 * on_timeout() - the probe took too long
 * @loop:	the main loop
 * @w:		&probe.tmo
 * @revents:	unused
 */
static void on_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct probe *p = w->data;

	(void)loop;
	(void)revents;
	probe_end(p, ev_is_active(&p->io) && p->io.cb == on_readable
			     ? "no answer to the NEGOTIATE in time"
		     : p->qd ? "the QUIC handshake timed out"
			     : "connect timed out");
}

/**
 * probe_deadline() - the whole probe has the shorter of connect-timeout
 *		      and health-interval
 * @p:		the probe, starting
 */
static void probe_deadline(struct probe *p)
{
	const struct listen_opts *o = &p->set->cfg->o;

	ev_timer_set(&p->tmo,
		     o->connect_timeout < o->check_interval ? o->connect_timeout
							    : o->check_interval,
		     0);
	ev_timer_start(p->set->px->loop, &p->tmo);
}

/**
 * on_quic() - a probe's QUIC dial is over: handshake and stream, or not
 * @ctx:	the probe
 * @why:	NULL if the stream is open, else why not
 */
static void on_quic(void *ctx, const char *why)
{
	struct probe *p = ctx;
	char text[160];

	if (!why) {
		probe_ask(p); /* may end the probe: the dial allows it */
		return;
	}
	p->qd = NULL; /* gone already */
	snprintf(text, sizeof(text), "QUIC: %s", why);
	probe_end(p, text);
}

/**
 * probe_quic() - start a probe of a quic: backend
 * @p:		the probe
 */
static void probe_quic(struct probe *p)
{
	struct hset *s = p->set;
	char why[320];

	if (!quic_ops || quic_ops->open(s->px, s->cfg, p->be, on_quic, p,
					&p->qd, &p->fd, why, sizeof(why))) {
		int e = errno;

		p->qd = NULL;
		p->fd = -1;
		if (quic_ops && (e == EMFILE || e == ENFILE)) {
			/* The dial takes from the connections' descriptor
			 * budget (a TCP probe's socket is not in it): spent,
			 * it says the proxy is busy, not that the backend is
			 * down. The next tick tries again. */
			log_debug("listener %s backend %s: no check now: %s",
				  s->cfg->o.name, s->cfg->o.backend[p->be].text,
				  why);
			return;
		}
		probe_end(p, quic_ops ? why : "QUIC is not built in");
		return;
	}
	probe_deadline(p);
}

/**
 * on_tick() - time for the next probe
 * @loop:	the main loop
 * @w:		&probe.tick
 * @revents:	unused
 */
static void on_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct probe *p = w->data;
	struct hset *s = p->set;
	const struct listen_opts *o = &s->cfg->o;
	int r;

	(void)revents;
	if (p->fd >= 0 || __atomic_load_n(&s->cfg->be[p->be].admin,
					  __ATOMIC_RELAXED) == BE_MAINT)
		return;
	if (o->backend_quic[p->be]) {
		probe_quic(p);
		return;
	}
	r = probe_dial(s->px, s->cfg, p->be, &p->fd);
	if (r < 0) {
		char why[96];

		p->fd = -1;
		snprintf(why, sizeof(why), "connect: %s", strerror(errno));
		probe_end(p, why);
		return;
	}
	probe_deadline(p);
	if (r == 0) {
		probe_ask(p);
		return;
	}
	ev_io_init(&p->io, on_connected, p->fd, EV_WRITE);
	p->io.data = p;
	ev_io_start(loop, &p->io);
}

/**
 * set_new() - start probing one listener's backends
 * @px:		the process
 * @l:		the listener, with checks on
 *
 * Return: the set, or NULL if memory ran out (said in the log).
 */
static struct hset *set_new(struct proxy *px, struct listener *l)
{
	const struct listen_opts *o = &l->cfg->o;
	struct hset *s = calloc(1, sizeof(*s) + o->nbackends * sizeof(*s->p));

	if (!s) {
		log_err("listener %s: out of memory for its health checks",
			l->name);
		return NULL;
	}
	s->px = px;
	s->cfg = l->cfg;
	listener_cfg_get(s->cfg);
	s->mode = o->check;
	if (s->mode == CHECK_SMB && o->send_proxy) {
		log_warn("listener %s: health-check = smb with send-proxy: the "
			 "backends expect a PROXY header first; they are "
			 "checked with a connect only (tcp)",
			 l->name);
		s->mode = CHECK_TCP;
	}
	s->n = o->nbackends;
	for (unsigned i = 0; i < s->n; i++) {
		struct probe *p = &s->p[i];

		p->set = s;
		p->be = i;
		p->fd = -1;
		ev_init(&p->io, on_connected);
		ev_init(&p->tmo, on_timeout);
		p->tmo.data = p;
		/* The first probes go out at once, a little apart. */
		ev_timer_init(&p->tick, on_tick, 0.01 * i, o->check_interval);
		p->tick.data = p;
		ev_timer_start(px->loop, &p->tick);
	}
	return s;
}

/**
 * health_stop() - stop every probe (a reload, a drain, the end)
 */
void health_stop(void)
{
	struct hset *s;

	while ((s = sets)) {
		sets = s->next;
		for (unsigned i = 0; i < s->n; i++) {
			struct probe *p = &s->p[i];

			ev_timer_stop(s->px->loop, &p->tick);
			probe_close(p);
		}
		listener_cfg_put(s->cfg);
		free(s);
	}
}

/**
 * health_sync() - probe the backends of the listeners as configured now
 * @px:		the process, its listeners just made or reloaded
 */
void health_sync(struct proxy *px)
{
	struct hset *s;

	health_stop();
	for (struct listener *l = px->listeners; l; l = l->next) {
		if (listener_is(l, LISTENER_RETIRED))
			continue;
		if (l->cfg->o.check == CHECK_OFF) {
			for (unsigned i = 0; i < l->cfg->o.nbackends; i++)
				listener_set_down(l->cfg, i, false,
						  "checks turned off");
			continue;
		}
		s = set_new(px, l);
		if (s) {
			s->next = sets;
			sets = s;
		}
	}
}
