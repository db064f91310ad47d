// SPDX-License-Identifier: GPL-2.0-or-later
/* quicsock.c - a QUIC listener's UDP sockets: one per worker, steered by
 * connection ID, or one for worker 0 where the steering program cannot be
 * loaded; or, taking over from a process that serves the address, this
 * process's sockets beside its own
 *
 * Apart from listener.c, which calls listener_open_quic() (declared in
 * listener.h) for a listener that is quic:, so that neither passes the
 * daemon's 1000-line file limit. The steering itself is io/reuseport.c's.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "common/log.h"
#include "core/proxy.h"
#include "io/reuseport.h"
#include "io/sock.h"
#include "net/listener.h"

/**
 * quic_alone() - a QUIC listener's one socket, served by worker 0
 * @l:		the listener, @fds[0] bound with SO_REUSEPORT
 * @sa:		its address
 * @len:	its length
 * @why:	why its datagrams cannot be steered, for the line
 *
 * Bound again without SO_REUSEPORT, so that no other socket can join it.
 *
 * Return: 0, or an errno.
 */
static int quic_alone(struct listener *l, const struct sockaddr *sa,
		      socklen_t len, const char *why)
{
	for (unsigned i = 0; i < l->nworkers; i++)
		if (l->fds[i] >= 0) {
			close(l->fds[i]);
			l->fds[i] = -1;
		}
	l->fds[0] = sock_udp_bound(sa, len, false);
	if (l->fds[0] < 0)
		return errno;
	log_warn("listener %s: QUIC datagrams cannot be steered to the worker "
		 "of their connection (%s): worker 0 serves all of this "
		 "listener's QUIC connections, and a live upgrade (SIGUSR2) "
		 "cannot keep them; run smbsplice with CAP_BPF (as root at "
		 "start) to spread them over the workers",
		 l->name, why);
	return 0;
}

/**
 * quic_bind_all() - a QUIC listener's socket per worker, with SO_REUSEPORT
 * @l:		the listener, with @fds all -1
 * @sa:		the address
 * @len:	its length
 *
 * Return: 0, or an errno (the sockets bound are closed).
 */
static int quic_bind_all(struct listener *l, const struct sockaddr *sa,
			 socklen_t len)
{
	int e;

	for (unsigned i = 0; i < l->nworkers; i++)
		if ((l->fds[i] = sock_udp_bound(sa, len, true)) < 0) {
			e = errno;
			while (i--) {
				close(l->fds[i]);
				l->fds[i] = -1;
			}
			return e;
		}
	return 0;
}

/**
 * quic_join() - a QUIC listener whose address the process before this one
 *		 serves: this process's sockets join its group
 * @l:		the listener, with @fds all -1
 * @ep:		its address
 * @map:	the steering map the handover brought, which the listener
 *		takes
 * @err:	buffer for one line saying what is wrong
 * @errlen:	its size
 *
 * The old process keeps its sockets and connections; these take free
 * slots of the map, and this process's program takes every new client's
 * Initial from then on (io/reuseport.c).
 *
 * Return: 0, or -1 with @err set.
 */
static int quic_join(struct listener *l, const struct endpoint *ep, int map,
		     char *err, size_t errlen)
{
	char why[160];
	int e;

	l->quic_map = map;
	e = quic_bind_all(l, (const struct sockaddr *)&ep->addr, ep->len);
	if (e)
		snprintf(why, sizeof(why), "%s", strerror(e));
	else if (!reuseport_steer_quic(&l->quic_map, l->fds, l->nworkers,
				       &l->quic_base, why, sizeof(why)))
		return 0;
	snprintf(err, errlen,
		 "listener %s: cannot join the QUIC sockets of the process "
		 "handing over (%s)",
		 l->name, why);
	return -1;
}

/**
 * listener_open_quic() - a QUIC listener's UDP sockets: one per worker, each
 *		 datagram steered to its connection's worker
 * @px:		the process, with its seam to a handover (@take_quic_map)
 * @l:		the listener, with @fds all -1
 * @ep:		its address
 * @err:	buffer for one line saying what is wrong, when it is not the
 *		bind's
 * @errlen:	its size
 *
 * A socket is bound alone first, without SO_REUSEPORT: a second process
 * on the address must fail here rather than take half of every
 * connection's datagrams. Its address (the port, if 0 was asked for) is
 * then the one every worker's socket binds, with SO_REUSEPORT, and
 * reuseport.c's program steers each datagram by the worker named in its
 * connection ID. Where the program cannot be loaded (no CAP_BPF, an old
 * kernel), one socket and worker 0 serve the listener, as a single
 * worker does. Taking over from a process that serves the address, the
 * sockets join its group instead (quic_join()).
 *
 * Return: 0, an errno (the bind's), or -1 with @err set.
 */
int listener_open_quic(struct proxy *px, struct listener *l,
		       const struct endpoint *ep, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	const struct sockaddr *sa = (const struct sockaddr *)&ss;
	int map = px->take_quic_map ? px->take_quic_map(l->name, ep) : -1;
	char why[160];
	int e;

	if (map >= 0)
		return quic_join(l, ep, map, err, errlen);
	l->fds[0] = sock_udp_bound((const struct sockaddr *)&ep->addr, ep->len,
				   false);
	if (l->fds[0] < 0)
		return errno;
	if (getsockname(l->fds[0], (struct sockaddr *)&ss, &len))
		return quic_alone(l, (const struct sockaddr *)&ep->addr,
				  ep->len, strerror(errno));
	close(l->fds[0]);
	l->fds[0] = -1;
	if ((e = quic_bind_all(l, sa, len))) {
		snprintf(why, sizeof(why), "a socket per worker: %s",
			 strerror(e));
		return quic_alone(l, sa, len, why);
	}
	if (reuseport_steer_quic(&l->quic_map, l->fds, l->nworkers,
				 &l->quic_base, why, sizeof(why)))
		return quic_alone(l, sa, len, why);
	return 0;
}
