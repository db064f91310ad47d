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
 * network namespace (netns.c), so nothing here enters a namespace.
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

#include "dial.h"
#include "sock.h"

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
 * take the latter); keepalive and congestion control were asked for.
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
	*step = &step_cc;
	if (sock_set_congestion(fd, lo->cc[SIDE_BACKEND]))
		goto fail;
	*step = &step_transparent;
	if (lo->transparent && sock_set_transparent(fd, family))
		goto fail;
	sock_set_nodelay(fd);
	sock_set_oobinline(fd);
	/* MPTCP sockets may refuse some keepalive options: no error. */
	*step = &step_keepalive;
	if (sock_set_keepalive(fd, &lo->keepalive) && !lo->mptcp[SIDE_BACKEND])
		goto fail;
	return fd;
fail:
	err = errno;
	close(fd);
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
	const struct sockaddr *from = NULL;
	socklen_t from_len = 0;
	const struct step *step;
	int s, r, err;

	s = backend_socket(lo, be->addr.ss_family, &step);
	if (s < 0)
		return -1;
	if (lo->transparent) {
		from = client;
		from_len = client->sa_family == AF_INET6
				   ? sizeof(struct sockaddr_in6)
				   : sizeof(struct sockaddr_in);
	} else if (lo->source.len) {
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
 * dial_check() - can every backend socket setting be made
 * @lo:		the listener's settings
 * @err:	buffer for one line saying what cannot, and what to do
 * @errlen:	its size
 *
 * Call it from a thread in the backend namespace.
 *
 * Return: 0, or -1 with @err set.
 */
int dial_check(const struct listen_opts *lo, char *err, size_t errlen)
{
	const struct step *step;
	int fd;

	for (unsigned i = 0; i < lo->nbackends; i++) {
		fd = backend_socket(lo, lo->backend[i].addr.ss_family, &step);
		if (fd < 0) {
			bool cc = step == &step_cc;

			snprintf(err, errlen,
				 "listener %s: backend sockets: %s%s%s: %s%s%s",
				 lo->name, step->what, cc ? " " : "",
				 cc ? lo->cc[SIDE_BACKEND] : "",
				 strerror(errno), *step->hint ? "; " : "",
				 step->hint);
			return -1;
		}
		if (lo->source.len &&
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
