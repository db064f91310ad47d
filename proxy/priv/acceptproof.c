// SPDX-License-Identifier: GPL-2.0-or-later
/* acceptproof.c - did this socket come from accept()
 *
 * Theory of operation: under --user, a transparent backend socket is
 * bound, by the root helper, to the address of the client socket the
 * daemon sends with the request. The daemon may be compromised, so the
 * helper must tell a socket that a listener accepted (its peer really
 * sent this host a SYN) from one the daemon made itself: it can close
 * its copy of the listener, bind the port (any port from 1024 up, or any
 * port where ip_unprivileged_port_start allows), connect() to any host X
 * and send that, and no address, port, state or namespace check tells
 * the two apart.
 *
 * The kernel does: a listener with TCP_SAVE_SYN keeps, on each socket it
 * accepts, the IP and TCP headers of the client's SYN, and TCP_SAVED_SYN
 * reads them once. A socket that connect()ed has none, whatever its
 * options, and no unprivileged process can make the kernel record a SYN
 * that was not received. So the helper reads the saved SYN and takes the
 * socket only if the SYN came from the socket's peer to the socket's own
 * address and port.
 *
 * The read consumes the SYN, and the same client socket comes again when
 * its connection fails over to the next backend. So the helper remembers
 * each socket it proved by its cookie (SO_COOKIE, unique until reboot)
 * and peer, in a ring of PROOF_RING: a socket without a SYN is taken if
 * it is there with the same peer (a TCP socket can be disconnected with
 * AF_UNSPEC and connected elsewhere, keeping its cookie). A failover
 * after PROOF_RING newer transparent clients is refused, and that client
 * reset as if its backend had refused.
 *
 * What has no saved SYN and is refused: a connection the kernel accepted
 * through a SYN cookie (its listen queue had overflowed: raise
 * net.core.somaxconn and net.ipv4.tcp_max_syn_backlog), and MPTCP
 * sockets, which do not keep it (options.c refuses transparent with a
 * Multipath TCP client side under --user).
 */
#include "config.h"

#include <string.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip6.h>
#include <netinet/tcp.h>

#include "priv/acceptproof.h"

#ifndef SO_COOKIE
#define SO_COOKIE 57
#endif

/**
 * struct proof - a socket proven accepted
 * @cookie:	its SO_COOKIE; 0 for an empty slot
 * @peer:	its peer then
 */
struct proof {
	uint64_t cookie;
	struct sockaddr_in6 peer;
};

/* The helper is single-threaded: one ring, its next slot. */
static struct proof ring[PROOF_RING];
static unsigned ring_next;

/**
 * set_v4() - an IPv4 endpoint from header fields
 * @ss:		filled in
 * @addr:	the address, network order, as in the header
 * @port:	the port, network order
 */
static void set_v4(struct sockaddr_storage *ss, const uint8_t *addr,
		   const uint8_t *port)
{
	struct sockaddr_in *a = (struct sockaddr_in *)ss;

	memset(ss, 0, sizeof(*ss));
	a->sin_family = AF_INET;
	memcpy(&a->sin_addr, addr, 4);
	memcpy(&a->sin_port, port, 2);
}

/**
 * set_v6() - an IPv6 endpoint from header fields
 * @ss:		filled in
 * @addr:	the address, as in the header
 * @port:	the port, network order
 */
static void set_v6(struct sockaddr_storage *ss, const uint8_t *addr,
		   const uint8_t *port)
{
	struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	a->sin6_family = AF_INET6;
	memcpy(&a->sin6_addr, addr, 16);
	memcpy(&a->sin6_port, port, 2);
}

/**
 * tcp_after_v6() - where the TCP header starts after an IPv6 header
 * @syn:	the headers
 * @len:	their length
 *
 * Walks the extension headers a SYN may carry (hop-by-hop, routing,
 * destination options); anything else is not a SYN this helper knows.
 *
 * Return: the offset, or 0 if there is no TCP header where it should be.
 */
static size_t tcp_after_v6(const uint8_t *syn, size_t len)
{
	size_t off = sizeof(struct ip6_hdr);
	uint8_t next = syn[6];

	while (next != IPPROTO_TCP) {
		if ((next != IPPROTO_HOPOPTS && next != IPPROTO_ROUTING &&
		     next != IPPROTO_DSTOPTS) ||
		    off + 2 > len)
			return 0;
		next = syn[off];
		off += ((size_t)syn[off + 1] + 1) * 8;
	}
	return off;
}

/**
 * acceptproof_syn_addresses() - the source and destination of a saved SYN
 * @syn:	the IP and TCP headers, as TCP_SAVED_SYN gives them
 * @len:	their length
 * @src:	set to the client's address and port
 * @dst:	set to the address and port it was sent to
 *
 * Return: true if @syn is an IPv4 or IPv6 header and a whole TCP header
 * with SYN set.
 */
bool acceptproof_syn_addresses(const uint8_t *syn, size_t len,
			       struct sockaddr_storage *src,
			       struct sockaddr_storage *dst)
{
	size_t tcp;

	if (len < 1)
		return false;
	if (syn[0] >> 4 == 4) {
		tcp = (size_t)(syn[0] & 0xf) * 4;
		if (tcp < sizeof(struct ip) ||
		    len < tcp + sizeof(struct tcphdr))
			return false;
		set_v4(src, syn + 12, syn + tcp);
		set_v4(dst, syn + 16, syn + tcp + 2);
	} else if (syn[0] >> 4 == 6 && len >= sizeof(struct ip6_hdr)) {
		tcp = tcp_after_v6(syn, len);
		if (!tcp || len < tcp + sizeof(struct tcphdr))
			return false;
		set_v6(src, syn + 8, syn + tcp);
		set_v6(dst, syn + 24, syn + tcp + 2);
	} else {
		return false;
	}
	return syn[tcp + 13] & TH_SYN;
}

/**
 * as_v6() - an endpoint in IPv6 form: IPv4 ones as v4-mapped
 * @ss:		the endpoint
 * @out:	set to it
 *
 * A dual-stack listener's client from IPv4 has a v4-mapped peer, and the
 * SYN that brought it an IPv4 header.
 *
 * Return: true if @ss is IPv4 or IPv6.
 */
static bool as_v6(const struct sockaddr_storage *ss, struct sockaddr_in6 *out)
{
	memset(out, 0, sizeof(*out));
	out->sin6_family = AF_INET6;
	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)ss;

		out->sin6_addr = a->sin6_addr;
		out->sin6_port = a->sin6_port;
		return true;
	}
	if (ss->ss_family != AF_INET)
		return false;
	const struct sockaddr_in *a = (const void *)ss;

	out->sin6_addr.s6_addr[10] = out->sin6_addr.s6_addr[11] = 0xff;
	memcpy(&out->sin6_addr.s6_addr[12], &a->sin_addr, 4);
	out->sin6_port = a->sin_port;
	return true;
}

/**
 * acceptproof_same_host() - are two endpoints the same address and port
 * @a:	one (IPv4 or IPv6)
 * @b:	the other
 *
 * An IPv4 endpoint equals its v4-mapped IPv6 form; scope ids and flow
 * labels are not compared (a SYN header has none of the former).
 *
 * Return: true if they are.
 */
bool acceptproof_same_host(const struct sockaddr_storage *a,
			   const struct sockaddr_storage *b)
{
	struct sockaddr_in6 x, y;

	return as_v6(a, &x) && as_v6(b, &y) && x.sin6_port == y.sin6_port &&
	       !memcmp(&x.sin6_addr, &y.sin6_addr, sizeof(x.sin6_addr));
}

/**
 * ring_find() - was a socket proven before, with this peer
 * @cookie:	its SO_COOKIE
 * @peer:	its peer now
 *
 * Return: true if it was.
 */
static bool ring_find(uint64_t cookie, const struct sockaddr_storage *peer)
{
	struct sockaddr_in6 p;

	if (!cookie || !as_v6(peer, &p))
		return false;
	for (unsigned i = 0; i < PROOF_RING; i++)
		if (ring[i].cookie == cookie)
			return ring[i].peer.sin6_port == p.sin6_port &&
			       !memcmp(&ring[i].peer.sin6_addr, &p.sin6_addr,
				       sizeof(p.sin6_addr));
	return false;
}

/**
 * ring_add() - remember a proven socket, forgetting the oldest
 * @cookie:	its SO_COOKIE
 * @peer:	its peer
 */
static void ring_add(uint64_t cookie, const struct sockaddr_storage *peer)
{
	struct proof *p = &ring[ring_next];

	if (!cookie || !as_v6(peer, &p->peer))
		return;
	p->cookie = cookie;
	ring_next = (ring_next + 1) % PROOF_RING;
}

/**
 * acceptproof_check() - did a listener accept this socket from its peer
 * @fd:		a connected TCP socket the daemon sent
 * @self:	its own address (getsockname())
 * @peer:	its peer's (getpeername())
 *
 * Return: true if its saved SYN came from @peer to @self, or it was
 * proven so before with the same peer.
 */
bool acceptproof_check(int fd, const struct sockaddr_storage *self,
		       const struct sockaddr_storage *peer)
{
	uint8_t syn[SAVED_SYN_MAX];
	socklen_t len = sizeof(syn), clen;
	struct sockaddr_storage src, dst;
	uint64_t cookie = 0;

	clen = sizeof(cookie);
	if (getsockopt(fd, SOL_SOCKET, SO_COOKIE, &cookie, &clen))
		cookie = 0;
	if (getsockopt(fd, IPPROTO_TCP, TCP_SAVED_SYN, syn, &len))
		return false; /* MPTCP, or a SYN longer than any we take */
	if (!len)
		return ring_find(cookie, peer);
	if (!acceptproof_syn_addresses(syn, len, &src, &dst) ||
	    !acceptproof_same_host(&src, peer) ||
	    !acceptproof_same_host(&dst, self))
		return false;
	ring_add(cookie, peer);
	return true;
}

/**
 * acceptproof_forget_all() - forget every proven socket (for the tests)
 */
void acceptproof_forget_all(void)
{
	memset(ring, 0, sizeof(ring));
	ring_next = 0;
}
