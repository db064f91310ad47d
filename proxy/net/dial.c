// SPDX-License-Identifier: GPL-2.0-or-later
/* dial.c - the socket settings of both sides, and dialling the backend
 *
 * Theory of operation: a listener's settings become socket options in two
 * places. The client side is set once, on the listening socket, and every
 * accepted socket inherits it: TCP_NODELAY, SO_OOBINLINE, keepalive with
 * TCP_USER_TIMEOUT, congestion control. The backend side is set on each
 * backend socket before its connect: the same, plus where the connection
 * comes from (the client's own address with --transparent, or --source)
 * and Multipath TCP.
 *
 * Backend sockets are made by worker threads, which sit in the backend
 * network namespace (netns.c) when every listener dials into the same
 * one; otherwise dial_from() makes the socket from inside the listener's
 * and goes back where the thread was. Under
 * --user the daemon holds no capability: a socket that needs one (made in
 * another namespace, or --transparent's) comes from the privileged helper
 * (privhelper.c), and gets every other setting, and its connect, here.
 * dial_check() tries every setting once at start, on a socket that never
 * connects, so that a missing capability, algorithm or protocol is one
 * clear line then rather than a reset client later.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>

#include "net/dial.h"
#include "common/netns.h"
#include "priv/privhelper.h"
#include "core/proxy.h"
#include "io/sock.h"

/* What to look at when an algorithm is refused, on either side. */
#define CC_HINT                                                                \
	"is its module loaded (net.ipv4.tcp_available_congestion_control), "   \
	"and allowed (net.ipv4.tcp_allowed_congestion_control) or "            \
	"smbsplice given CAP_NET_ADMIN?"

/**
 * dial_client_side() - the client side's settings, on a listening socket
 * @fd:		the listening socket; accepted sockets inherit what is set
 * @lo:		the listener's settings
 * @err:	buffer for one line saying what cannot be set
 * @errlen:	its size
 *
 * TCP_NODELAY and SO_OOBINLINE failing is no error (MPTCP sockets may not
 * take the latter); keepalive and congestion control were asked for, and
 * TCP_SAVE_SYN is what the helper's proof of a transparent client needs.
 *
 * Return: 0, or -1 with @err set.
 */
int dial_client_side(int fd, const struct listen_opts *lo, char *err,
		     size_t errlen)
{
	sock_set_nodelay(fd);
	sock_set_oobinline(fd);
	if (sock_set_keepalive(fd, &lo->keepalive) && !lo->mptcp[SIDE_CLIENT]) {
		snprintf(err, errlen, "listener %s: --keepalive: %s", lo->name,
			 strerror(errno));
		return -1;
	}
	if (sock_set_congestion(fd, lo->cc[SIDE_CLIENT])) {
		snprintf(
			err, errlen,
			"listener %s: client sockets: --congestion %s: %s; " CC_HINT,
			lo->name, lo->cc[SIDE_CLIENT], strerror(errno));
		return -1;
	}
	if (sock_set_buffers(fd, sockbuf_fixed(lo->sockbuf[SIDE_CLIENT]))) {
		snprintf(err, errlen,
			 "listener %s: client sockets: --socket-buffer: %s",
			 lo->name, strerror(errno));
		return -1;
	}
	/* Off too when not needed: a reload may have dropped transparent. */
	if (sock_set_save_syn(fd, lo->save_syn) && lo->save_syn) {
		snprintf(
			err, errlen,
			"listener %s: --transparent under --user: TCP_SAVE_SYN: %s",
			lo->name, strerror(errno));
		return -1;
	}
	return 0;
}

/**
 * struct step - a setting backend_socket() makes, for the complaint
 * @what:	the option, as the user gave it
 * @hint:	what to check when it fails
 */
struct step {
	const char *what, *hint;
};

static const struct step step_mptcp = {
	"--mptcp: socket(IPPROTO_MPTCP)",
	"is Multipath TCP enabled? sysctl net.mptcp.enabled=1"
};
static const struct step step_socket = { "socket", "" };
static const struct step step_cc = { "--congestion", CC_HINT };
static const struct step step_transparent = { "--transparent: IP_TRANSPARENT",
					      "it needs CAP_NET_ADMIN" };
static const struct step step_keepalive = { "--keepalive", "" };
static const struct step step_sockbuf = { "--socket-buffer", "" };

/**
 * backend_settings() - every setting of a backend socket but its address
 * @fd:		the socket
 * @lo:		the listener's settings
 * @family:	the backend's address family
 * @transparent: set IP_TRANSPARENT too (not when the helper did)
 * @step:	set to the setting that failed, on failure
 *
 * Return: 0, or -1 with errno set and @step naming the setting.
 */
static int backend_settings(int fd, const struct listen_opts *lo, int family,
			    bool transparent, const struct step **step)
{
	*step = &step_cc;
	if (sock_set_congestion(fd, lo->cc[SIDE_BACKEND]))
		return -1;
	*step = &step_sockbuf;
	if (sock_set_buffers(fd, sockbuf_fixed(lo->sockbuf[SIDE_BACKEND])))
		return -1;
	*step = &step_transparent;
	if (transparent && sock_set_transparent(fd, family))
		return -1;
	sock_set_nodelay(fd);
	sock_set_oobinline(fd);
	/* MPTCP sockets may refuse some keepalive options: no error. */
	*step = &step_keepalive;
	if (sock_set_keepalive(fd, &lo->keepalive) && !lo->mptcp[SIDE_BACKEND])
		return -1;
	return 0;
}

/**
 * backend_socket() - a backend socket with every setting but the address
 * @lo:		the listener's settings
 * @family:	the backend's address family
 * @step:	set to the setting that failed, on failure
 *
 * Return: the socket, or -1 with errno set and @step naming the setting.
 */
static int backend_socket(const struct listen_opts *lo, int family,
			  const struct step **step)
{
	int fd, err;

	*step = lo->mptcp[SIDE_BACKEND] ? &step_mptcp : &step_socket;
	fd = sock_stream(family, lo->mptcp[SIDE_BACKEND]);
	if (fd < 0)
		return -1;
	if (!backend_settings(fd, lo, family, lo->transparent, step))
		return fd;
	err = errno;
	close(fd);
	errno = err;
	return -1;
}

/**
 * connect_from() - bind where the connection comes from, and connect
 * @s:		the backend socket; closed on failure
 * @lo:		the listener's settings
 * @be:		the backend
 * @client:	the client's address, for --transparent; NULL if @s is bound
 *		already (the helper bound it)
 * @fd:		set to @s, on success
 *
 * Return: as dial_backend().
 */
static int connect_from(int s, const struct listen_opts *lo,
			const struct endpoint *be,
			const struct sockaddr *client, int *fd)
{
	const struct sockaddr *from = NULL;
	socklen_t from_len = 0;
	int r, err;

	if (lo->transparent && client) {
		from = client;
		from_len = client->sa_family == AF_INET6
				   ? sizeof(struct sockaddr_in6)
				   : sizeof(struct sockaddr_in);
	} else if (!lo->transparent && lo->source.len) {
		from = (const struct sockaddr *)&lo->source.addr;
		from_len = lo->source.len;
	}
	if (from && sock_bind_any_port(s, from, from_len))
		goto fail;
	r = sock_connect_start(s, (const struct sockaddr *)&be->addr, be->len);
	if (r < 0)
		goto fail;
	*fd = s;
	return r;
fail:
	err = errno;
	close(s);
	errno = err;
	return -1;
}

/**
 * dial_backend() - start the connection to one backend
 * @lo:		the listener's settings
 * @idx:	which of its backends
 * @client:	the client's address, for --transparent
 * @fd:		the new socket, on success
 *
 * Return: 0 if connected already, 1 if in progress (wait for writable),
 * -1 with errno set (EMFILE and ENFILE among them).
 */
int dial_backend(const struct listen_opts *lo, unsigned idx,
		 const struct sockaddr *client, int *fd)
{
	const struct endpoint *be = &lo->backend[idx];
	const struct step *step;
	int s;

	s = backend_socket(lo, be->addr.ss_family, &step);
	if (s < 0)
		return -1;
	return connect_from(s, lo, be, client, fd);
}

/**
 * dial_backend_helped() - start the connection, on a socket from the
 *			   privileged helper
 * @ph:		the helper
 * @chan:	the calling thread's channel to it
 * @lo:		the listener's settings
 * @idx:	which of its backends
 * @client_fd:	the client's socket: with --transparent, the helper binds
 *		the new socket to its peer's address
 * @fd:		the new socket, on success
 *
 * Return: as dial_backend(); EOWNERDEAD if the helper is gone.
 */
int dial_backend_helped(struct privhelper *ph, unsigned chan,
			const struct listen_opts *lo, unsigned idx,
			int client_fd, int *fd)
{
	const struct endpoint *be = &lo->backend[idx];
	const struct step *step;
	int s, err;

	s = privhelper_backend(ph, chan, lo->name, lo->netns[SIDE_BACKEND],
			       be->addr.ss_family, lo->mptcp[SIDE_BACKEND],
			       lo->transparent ? client_fd : -1);
	if (s < 0)
		return -1;
	if (backend_settings(s, lo, be->addr.ss_family, false, &step)) {
		err = errno;
		close(s);
		errno = err;
		return -1;
	}
	return connect_from(s, lo, be, NULL, fd);
}

/**
 * check_socket() - a backend socket for dial_check()
 * @lo:		the listener's settings
 * @family:	the backend's address family
 * @ph:		the privileged helper to ask, or NULL to make it here
 * @step:	set to the setting that failed, on failure
 *
 * The helper's is not made IP_TRANSPARENT: that takes a client, and the
 * helper holds the privilege for it whatever the configuration.
 *
 * Return: the socket, or -1 with errno set and @step naming the setting.
 */
static int check_socket(const struct listen_opts *lo, int family,
			struct privhelper *ph, const struct step **step)
{
	int fd, err;

	if (!ph)
		return backend_socket(lo, family, step);
	*step = lo->mptcp[SIDE_BACKEND] ? &step_mptcp : &step_socket;
	fd = privhelper_backend(ph, 0, lo->name, lo->netns[SIDE_BACKEND],
				family, lo->mptcp[SIDE_BACKEND], -1);
	if (fd < 0 || !backend_settings(fd, lo, family, false, step))
		return fd;
	err = errno;
	close(fd);
	errno = err;
	return -1;
}

/**
 * dial_check() - can every backend socket setting be made
 * @lo:		the listener's settings
 * @ph:		under --user, the privileged helper, which makes the sockets
 *		in the backend namespace; NULL to make them here
 * @err:	buffer for one line saying what cannot, and what to do
 * @errlen:	its size
 *
 * Without @ph, call it from a thread in the backend namespace.
 *
 * Return: 0, or -1 with @err set.
 */
int dial_check(const struct listen_opts *lo, struct privhelper *ph, char *err,
	       size_t errlen)
{
	const struct step *step;
	int fd;

	for (unsigned i = 0; i < lo->nbackends; i++) {
		if (lo->backend_quic[i])
			continue; /* a UDP socket: qdial_check()'s */
		fd = check_socket(lo, lo->backend[i].addr.ss_family, ph, &step);
		if (fd < 0) {
			bool cc = step == &step_cc;

			snprintf(
				err, errlen,
				"listener %s: backend sockets: %s%s%s: %s%s%s%s",
				lo->name, step->what, cc ? " " : "",
				cc ? lo->cc[SIDE_BACKEND] : "", strerror(errno),
				*step->hint ? "; " : "", step->hint,
				privhelper_hint(errno));
			return -1;
		}
		if (lo->source.len && !lo->transparent &&
		    sock_bind_any_port(
			    fd, (const struct sockaddr *)&lo->source.addr,
			    lo->source.len)) {
			snprintf(err, errlen, "listener %s: --source %s: %s",
				 lo->name, lo->source.text, strerror(errno));
			close(fd);
			return -1;
		}
		close(fd);
	}
	return 0;
}

/**
 * dial_from() - dial a backend from its namespace
 * @px:		the process: its helper and its namespaces
 * @here:	the namespace the calling thread sits in (its inode)
 * @r:		the connect
 * @fd:		the new socket, on success
 *
 * A worker sits in the backend namespace already when every listener
 * dials into the same one; otherwise the socket is made from inside the
 * listener's, and the thread goes back where it was. Under --user the
 * privileged helper makes it instead, and every --transparent one.
 *
 * Return: as dial_backend().
 */
int dial_from(struct proxy *px, ino_t here, const struct dial_req *r, int *fd)
{
	int ns = r->netns, home, ret, err;
	ino_t want = ns >= 0 ? r->netns_ino : 0;

	if (px->helper.fds &&
	    (r->lo->transparent || (want ? want : px->home_ino) != here))
		return dial_backend_helped(&px->helper, r->chan, r->lo, r->be,
					   r->client_fd, fd);
	if (!want || want == here) {
		if (ns >= 0 || px->worker_netns < 0)
			return dial_backend(r->lo, r->be, r->client, fd);
		ns = netns_home(); /* the worker sits elsewhere */
	}
	home = px->worker_netns >= 0 ? px->worker_netns : netns_home();
	if (netns_enter(ns))
		return -1;
	ret = dial_backend(r->lo, r->be, r->client, fd);
	err = errno;
	netns_enter(home);
	errno = err;
	return ret;
}

/**
 * dial_failure_text() - why a connection ends when no backend is left
 * @lo:		the listener's settings
 * @why:	what failed, the last time
 * @timed_out:	the last connect timed out
 * @out:	buffer
 * @outlen:	its size
 *
 * With --transparent, the server answers the client's address; if the
 * routing does not bring that answer back to this host, the connect never
 * completes, and the timeout is all anyone sees: the text says so.
 */
void dial_failure_text(const struct listen_opts *lo, const char *why,
		       bool timed_out, char *out, size_t outlen)
{
	const char *hint =
		lo->transparent && timed_out
			? "; with --transparent, check that the server's replies to the client's address are routed back through this host (see README)"
			: "";

	if (lo->nbackends > 1)
		snprintf(out, outlen, "all %u backends failed, the last: %s%s",
			 lo->nbackends, why, hint);
	else
		snprintf(out, outlen, "backend %s%s", why, hint);
}

/**
 * udp_socket() - a UDP socket connected to a quic: backend
 * @lo:		the listener's settings
 * @idx:	which of its backends
 * @fd:		the socket, on success
 *
 * Connected, so that the kernel drops datagrams of anyone else and says
 * an ICMP port unreachable as ECONNREFUSED; from --source if given.
 *
 * Return: 0, or -1 with errno set.
 */
static int udp_socket(const struct listen_opts *lo, unsigned idx, int *fd)
{
	const struct endpoint *be = &lo->backend[idx];
	int s = socket(be->addr.ss_family,
		       SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int err;

	if (s < 0)
		return -1;
	if ((lo->source.len &&
	     sock_bind_any_port(s, (const struct sockaddr *)&lo->source.addr,
				lo->source.len)) ||
	    connect(s, (const struct sockaddr *)&be->addr, be->len)) {
		err = errno;
		close(s);
		errno = err;
		return -1;
	}
	*fd = s;
	return 0;
}

/**
 * dial_udp_from() - a quic: backend's UDP socket, from its namespace
 * @px:		the process: its helper and its namespaces
 * @here:	the namespace the calling thread sits in (its inode)
 * @r:		the dial
 * @fd:		the socket, on success
 *
 * As dial_from(), but the privileged helper makes only TCP sockets: under
 * --user, a socket in a namespace other than the worker's fails with
 * EOPNOTSUPP.
 *
 * Return: 0, or -1 with errno set.
 */
int dial_udp_from(struct proxy *px, ino_t here, const struct dial_req *r,
		  int *fd)
{
	int ns = r->netns, home, ret, err;
	ino_t want = ns >= 0 ? r->netns_ino : 0;

	if (px->helper.fds && (want ? want : px->home_ino) != here) {
		errno = EOPNOTSUPP;
		return -1;
	}
	if (!want || want == here) {
		if (ns >= 0 || px->worker_netns < 0)
			return udp_socket(r->lo, r->be, fd);
		ns = netns_home(); /* the worker sits elsewhere */
	}
	home = px->worker_netns >= 0 ? px->worker_netns : netns_home();
	if (netns_enter(ns))
		return -1;
	ret = udp_socket(r->lo, r->be, fd);
	err = errno;
	netns_enter(home);
	errno = err;
	return ret;
}
