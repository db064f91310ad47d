// SPDX-License-Identifier: GPL-2.0-or-later
/* sock.c - small socket helpers, one job each
 *
 * Theory of operation: everything here is a thin wrapper over one or two
 * system calls, so that the connection and pump code reads as policy rather
 * than as setsockopt() plumbing. Every socket smbsplice opens is
 * non-blocking and close-on-exec from the start.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <netinet/udp.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "io/sock.h"

#ifndef UDP_GRO
#define UDP_GRO 104
#endif

/**
 * sock_set_nodelay() - turn Nagle off
 * @fd:	a TCP socket
 *
 * Nagle would hold a message's short tail until the previous segment is
 * acknowledged: with delayed ACKs that is a 40 ms stall. smbsplice decides
 * itself when to hold bytes back (MORE, TCP_CORK) and when to push.
 *
 * Return: 0, or -1 with errno set.
 */
int sock_set_nodelay(int fd)
{
	int one = 1;

	return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/**
 * sock_set_oobinline() - deliver TCP urgent data in line with the rest
 * @fd:	a TCP socket
 *
 * A proxy must forward every byte in order. Without this, recv() skips
 * the urgent byte and splice() stops at it; with it, the byte is read in
 * its place (it reaches the other side as ordinary data).
 *
 * Return: 0, or -1 with errno set.
 */
int sock_set_oobinline(int fd)
{
	int one = 1;

	return setsockopt(fd, SOL_SOCKET, SO_OOBINLINE, &one, sizeof(one));
}

/**
 * sock_set_save_syn() - keep, or not, each accepted client's SYN
 * @fd:		a listening TCP socket
 * @on:		keep it
 *
 * Return: 0, or -1 with errno set.
 */
int sock_set_save_syn(int fd, bool on)
{
	int v = on;

	return setsockopt(fd, IPPROTO_TCP, TCP_SAVE_SYN, &v, sizeof(v));
}

/**
 * sock_set_linger0() - make the next close() send RST instead of FIN
 * @fd:	a TCP socket
 *
 * Return: 0, or -1 with errno set.
 */
int sock_set_linger0(int fd)
{
	struct linger l = { .l_onoff = 1, .l_linger = 0 };

	return setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
}

/**
 * sock_uncork() - push bytes that an earlier MORE write left waiting
 * @s:	the socket and its cork flag
 *
 * Clearing TCP_CORK pushes every pending segment even when TCP_CORK itself
 * was never set, which is what MSG_MORE and SPLICE_F_MORE leave behind.
 * Without this push the kernel sends the tail only when its 200 ms
 * probe timer fires. The flag keeps the call to the times it is needed.
 * A socket that is not TCP (a QUIC stream's socketpair, proxy/quic/)
 * holds nothing back for MORE and has no TCP_CORK: its EOPNOTSUPP is no
 * failure.
 *
 * Return: 0, or -1 with errno set.
 */
int sock_uncork(struct sock *s)
{
	int zero = 0;

	if (!s->corked)
		return 0;
	s->corked = false;
	if (setsockopt(s->fd, IPPROTO_TCP, TCP_CORK, &zero, sizeof(zero)) &&
	    errno != EOPNOTSUPP)
		return -1;
	return 0;
}

/* Deeper than any kernel allows: listen() clamps it to net.core.somaxconn,
 * so an administrator who raises that sysctl gets the deeper queue. */
#define LISTEN_BACKLOG 65535

/**
 * sock_listen_hold() - stop a listening socket taking connections, or
 *			start it again
 * @fd:		the socket, bound and listening (or held)
 * @hold:	true to stop, false to start
 *
 * Held, the socket is no longer in the kernel's listening table (a
 * client is refused as if nothing listened, and SO_REUSEPORT hands new
 * connections to the group's other sockets) but keeps its address, so
 * listen() takes it back without a bind() that another process could
 * race. Connections already queued are reset by the kernel: those are
 * the ones a closing listener would reset too.
 *
 * Return: 0, or -1 with errno set.
 */
int sock_listen_hold(int fd, bool hold)
{
	return hold ? shutdown(fd, SHUT_RD) : listen(fd, LISTEN_BACKLOG);
}

/**
 * sock_stream() - a new non-blocking, close-on-exec stream socket
 * @family:	AF_INET or AF_INET6
 * @mptcp:	Multipath TCP instead of TCP (a peer without it falls back)
 *
 * Return: the socket, or -1 with errno set.
 */
int sock_stream(int family, bool mptcp)
{
	return socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		      mptcp ? IPPROTO_MPTCP : 0);
}

/**
 * bind_or_close() - bind a new socket (IPv6 only for an IPv6 address), or
 *		     close it
 * @fd:		the socket
 * @sa:		address to bind
 * @len:	its length
 *
 * Return: @fd, or -1 with errno set and @fd closed.
 */
static int bind_or_close(int fd, const struct sockaddr *sa, socklen_t len)
{
	int one = 1, err;

	if (sa->sa_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (!bind(fd, sa, len))
		return fd;
	err = errno;
	close(fd);
	errno = err;
	return -1;
}

/**
 * sock_bound() - a non-blocking socket bound as a listening one is, not
 *		  yet listening
 * @sa:		address to bind
 * @len:	its length
 * @reuseport:	share the address with other sockets of this user
 *		(SO_REUSEPORT): one per worker, and a new smbsplice
 *		starting while an old one drains
 * @mptcp:	Multipath TCP (and plain TCP)
 *
 * Without listen(), so that whether a listening socket can be had is
 * found out without taking a single client: --check binds one and closes
 * it.
 *
 * Return: the socket, or -1 with errno set.
 */
int sock_bound(const struct sockaddr *sa, socklen_t len, bool reuseport,
	       bool mptcp)
{
	int fd, one = 1, err;

	fd = sock_stream(sa->sa_family, mptcp);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (reuseport &&
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)))
		goto fail;
	return bind_or_close(fd, sa, len);
fail:
	err = errno;
	close(fd);
	errno = err;
	return -1;
}

/**
 * sock_send_gso() - packets of one size, written one after another, as
 *		     one sendmsg() with UDP_SEGMENT (GSO)
 * @fd:		a UDP socket
 * @to:		where, or NULL for a connected socket
 * @tolen:	its length
 * @buf:	the packets
 * @len:	their bytes
 * @seg:	each one's size, the last one's at most
 *
 * For the QUIC listener and the QUIC backend alike.
 *
 * Return: 0 (a full buffer counts: it is a loss like any other), or -1
 * if the kernel refused segmentation itself (EIO: the device cannot
 * segment; EINVAL, ENOPROTOOPT: no UDP_SEGMENT): send one by one then.
 */
int sock_send_gso(int fd, const struct sockaddr *to, socklen_t tolen,
		  const void *buf, size_t len, size_t seg)
{
	union {
		char buf[CMSG_SPACE(sizeof(uint16_t))];
		struct cmsghdr align;
	} u = { { 0 } }; /* the padding goes to the kernel too */
	struct iovec iov = { (void *)buf, len };
	struct msghdr mh = { .msg_name = (void *)to,
			     .msg_namelen = to ? tolen : 0,
			     .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	uint16_t s = (uint16_t)seg;

	cm->cmsg_level = SOL_UDP;
	cm->cmsg_type = UDP_SEGMENT;
	cm->cmsg_len = CMSG_LEN(sizeof(s));
	memcpy(CMSG_DATA(cm), &s, sizeof(s));
	while (sendmsg(fd, &mh, 0) < 0) {
		if (errno == EINTR)
			continue;
		return errno == EIO || errno == EINVAL || errno == ENOPROTOOPT
			       ? -1
			       : 0;
	}
	return 0;
}

/**
 * sock_gro_on() - let the kernel hand a UDP socket's datagrams over
 *		   coalesced (UDP_GRO)
 * @fd:		a UDP socket
 *
 * A peer that sends with UDP_SEGMENT (ngtcp2's peers do, and ours) then
 * costs one read per batch instead of one per datagram; sock_gro_seg()
 * tells where each datagram ends. Reads must then offer room for a
 * coalesced batch (SOCK_GRO_MAX).
 *
 * Return: true if the kernel will coalesce; false if it has no UDP_GRO,
 * and then each read is one datagram as before.
 */
bool sock_gro_on(int fd)
{
	int one = 1;

	return setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof(one)) == 0;
}

/**
 * sock_gro_seg() - the size of the datagrams one read returned together
 * @h:		the header recvmsg() or recvmmsg() filled, with room for
 *		SOCK_GRO_CMSG in its control buffer
 * @len:	the bytes read
 *
 * Return: each datagram's size, the last one's at most; @len when the
 * read is one datagram.
 */
size_t sock_gro_seg(const struct msghdr *h, size_t len)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR((struct msghdr *)h); c;
	     c = CMSG_NXTHDR((struct msghdr *)h, c)) {
		int seg;

		if (c->cmsg_level != SOL_UDP || c->cmsg_type != UDP_GRO ||
		    c->cmsg_len < CMSG_LEN(sizeof(seg)))
			continue;
		memcpy(&seg, CMSG_DATA(c), sizeof(seg));
		return seg > 0 && (size_t)seg < len ? (size_t)seg : len;
	}
	return len;
}

/**
 * sock_udp_bound() - a non-blocking UDP socket bound to an address, for a
 *		      QUIC listener
 * @sa:		address to bind
 * @len:	its length
 * @reuseport:	SO_REUSEPORT: one socket per worker, their datagrams
 *		steered by connection ID (reuseport.c); the caller has made
 *		sure no other process is bound there first
 *
 * Return: the socket, or -1 with errno set.
 */
int sock_udp_bound(const struct sockaddr *sa, socklen_t len, bool reuseport)
{
	int fd, one = 1, err;

	fd = socket(sa->sa_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
	if (fd < 0)
		return -1;
	/* Datagrams wait in the receive queue while the worker is busy, and
	 * a burst (a thousand clients' keepalives or closes at once) is
	 * lost past the default 208 KiB: room for a few thousand, where the
	 * process may (past net.core.rmem_max needs CAP_NET_ADMIN). */
	sock_set_buffers(fd, SOCK_UDP_BUF);
	if (reuseport &&
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one))) {
		err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	return bind_or_close(fd, sa, len);
}

/**
 * sock_listen() - open a non-blocking listening socket
 * @sa:		address to bind
 * @len:	its length
 * @reuseport:	SO_REUSEPORT, as for sock_bound()
 * @mptcp:	listen for Multipath TCP (and plain TCP) clients
 *
 * Return: the socket, or -1 with errno set.
 */
int sock_listen(const struct sockaddr *sa, socklen_t len, bool reuseport,
		bool mptcp)
{
	int fd = sock_bound(sa, len, reuseport, mptcp), err;

	if (fd < 0 || !listen(fd, LISTEN_BACKLOG))
		return fd;
	err = errno;
	close(fd);
	errno = err;
	return -1;
}

/**
 * sock_bind_any_port() - bind to an address, the port chosen at connect
 * @fd:		a socket not yet connected
 * @sa:		the address; its port is ignored
 * @len:	its length
 *
 * IP_BIND_ADDRESS_NO_PORT defers the port to connect(), which may then
 * reuse a port towards other destinations: bind() alone would reserve a
 * port per connection and run out of them.
 *
 * Return: 0, or -1 with errno set.
 */
int sock_bind_any_port(int fd, const struct sockaddr *sa, socklen_t len)
{
	struct sockaddr_storage a;
	int one = 1;

	memcpy(&a, sa, len);
	if (a.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&a)->sin6_port = 0;
	else
		((struct sockaddr_in *)&a)->sin_port = 0;
	setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
	return bind(fd, (struct sockaddr *)&a, len);
}

/**
 * sock_set_transparent() - let a socket use an address that is not local
 * @fd:		a socket not yet bound
 * @family:	its family
 *
 * Needs CAP_NET_ADMIN.
 *
 * Return: 0, or -1 with errno set.
 */
int sock_set_transparent(int fd, int family)
{
	int one = 1;

	if (family == AF_INET6)
		return setsockopt(fd, IPPROTO_IPV6, IPV6_TRANSPARENT, &one,
				  sizeof(one));
	return setsockopt(fd, IPPROTO_IP, IP_TRANSPARENT, &one, sizeof(one));
}

/**
 * sock_set_keepalive() - probe a silent peer, and give up on a dead one
 * @fd:	a TCP socket
 * @k:	the settings; idle 0 leaves keepalive off
 *
 * TCP_USER_TIMEOUT is set to the time the probes take, so that a peer
 * that vanished while bytes were in flight is given up on as soon as one
 * that vanished while the line was quiet.
 *
 * Return: 0, or -1 with errno set.
 */
int sock_set_keepalive(int fd, const struct keepalive *k)
{
	unsigned timeout = (k->idle + k->intvl * k->cnt) * 1000u;
	int one = 1, idle = (int)k->idle, intvl = (int)k->intvl,
	    cnt = (int)k->cnt;

	if (!k->idle)
		return 0;
	if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle)) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl)) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt)))
		return -1;
	return setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &timeout,
			  sizeof(timeout));
}

/**
 * sock_set_congestion() - choose a congestion control algorithm
 * @fd:		a TCP socket
 * @alg:	its name ("bbr"), or "" for the system's default
 *
 * Return: 0, or -1 with errno set (ENOENT: no such algorithm; EPERM: not
 * in net.ipv4.tcp_allowed_congestion_control, and no CAP_NET_ADMIN).
 */
int sock_set_congestion(int fd, const char *alg)
{
	if (!*alg)
		return 0;
	return setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, alg, strlen(alg));
}

/**
 * sock_set_buffers() - fix a socket's send and receive buffers
 * @fd:		a TCP socket, or a QUIC listener's UDP one
 * @bytes:	the size of each, or 0 to leave the kernel's autotuning
 *
 * A fixed size turns autotuning off for the socket. The FORCE options
 * pass net.core.wmem_max and rmem_max when the process may (CAP_NET_ADMIN);
 * otherwise the kernel caps the size there, silently.
 *
 * Return: 0, or -1 with errno set.
 */
int sock_set_buffers(int fd, unsigned bytes)
{
	int v = (int)bytes;

	if (!bytes)
		return 0;
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof(v)) &&
	    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v)))
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)) &&
	    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)))
		return -1;
	return 0;
}

/**
 * sock_connect_start() - begin a non-blocking connect
 * @fd:		a non-blocking socket
 * @sa:		address to connect to
 * @len:	its length
 *
 * Return: 0 if connected already, 1 if in progress (wait for writable, then
 * sock_connect_result()), -1 with errno set on failure.
 */
int sock_connect_start(int fd, const struct sockaddr *sa, socklen_t len)
{
	if (!connect(fd, sa, len))
		return 0;
	return errno == EINPROGRESS ? 1 : -1;
}

/**
 * sock_connect_result() - the outcome of a connect that became writable
 * @fd:	the socket
 *
 * Return: 0 if connected, else the errno of the failure.
 */
int sock_connect_result(int fd)
{
	socklen_t len = sizeof(int);
	int err = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len))
		return errno;
	return err;
}

/**
 * sock_addr_text() - format an address as HOST:PORT or [HOST]:PORT
 * @sa:		the address
 * @out:	buffer
 * @outlen:	its size
 */
void sock_addr_text(const struct sockaddr *sa, char *out, size_t outlen)
{
	char host[INET6_ADDRSTRLEN] = "?";

	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)sa;

		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
		snprintf(out, outlen, "[%s]:%u", host, ntohs(a->sin6_port));
	} else if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)sa;

		inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
		snprintf(out, outlen, "%s:%u", host, ntohs(a->sin_port));
	} else {
		snprintf(out, outlen, "?");
	}
}

/**
 * sock_set_rcvlowat() - be woken only once @n bytes are queued
 * @fd:	a TCP socket
 * @n:	bytes; 1 is the default
 *
 * A client that sent part of its first frame keeps its socket readable;
 * a low-water mark lets the wait for the rest cost no wake-ups. A peer's
 * FIN or reset still wakes the socket.
 *
 * Return: 0, or -1 with errno set (MPTCP sockets of older kernels).
 */
int sock_set_rcvlowat(int fd, int n)
{
	return setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &n, sizeof(n));
}

/**
 * sock_peer_shut() - has the peer closed its side, or the socket failed
 * @fd:	a socket
 *
 * Return: true once the peer's FIN came (POLLRDHUP), or on an error or
 * hang-up; false otherwise, without waiting.
 */
bool sock_peer_shut(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLRDHUP };

	return poll(&p, 1, 0) == 1 &&
	       p.revents & (POLLRDHUP | POLLERR | POLLHUP);
}

/**
 * sock_bound_to() - is a socket bound to this very address
 * @fd:		the socket
 * @sa:		the address
 * @len:	its length
 *
 * For a socket another process handed over, before it takes the place
 * of one bound to @sa.
 *
 * Return: true if getsockname() gives @sa, byte for byte.
 */
bool sock_bound_to(int fd, const struct sockaddr *sa, socklen_t len)
{
	struct sockaddr_storage a;
	socklen_t alen = sizeof(a);

	return !getsockname(fd, (struct sockaddr *)&a, &alen) && alen == len &&
	       !memcmp(&a, sa, len);
}
