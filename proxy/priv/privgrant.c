// SPDX-License-Identifier: GPL-2.0-or-later
/* privgrant.c - what the privileged helper grants, and to which request
 *
 * Theory of operation: the helper (privhelper.c) makes a socket only if a
 * listener of a configuration it read itself asks for exactly that one:
 * a listening socket on the listener's address, in its client namespace;
 * a backend socket of one of its backends' families, in its backend
 * namespace, IP_TRANSPARENT only if the listener is --transparent. The
 * daemon, which runs unprivileged and may be compromised, only names what
 * it wants; nothing it sends widens that.
 *
 * Three configurations are granted from (enum SET_*): the running one,
 * the one before it (whose connections, still open after a reload, may
 * still fail over to their next backend), and a candidate a reload read
 * (PRIV_OP_RELOAD) before it commits (PRIV_OP_COMMIT) or the daemon refuses it
 * (PRIV_OP_ABORT). The one before is dropped once --drain-timeout has passed.
 * Each comes with the namespaces it names, opened by the helper when it
 * read the file.
 *
 * A transparent backend socket takes the address of a client socket the
 * daemon sends along, and client_ok() checks that socket is one the
 * named listener accepted: its peer sent this host the SYN the kernel
 * saved on it (acceptproof.c), which a socket the daemon connect()ed
 * itself cannot have. What no check here can bound: the daemon
 * connect()s every socket it is given, to any destination its namespace
 * routes to; only a cgroup connect4/connect6 BPF program binds that.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>

#include "priv/acceptproof.h"
#include "common/monotime.h"
#include "common/netns.h"
#include "priv/privgrant.h"

/**
 * privgrant_free() - close a configuration's namespaces and free it
 * @a:	the configuration, or one with @cfg NULL
 */
void privgrant_free(struct allowed *a)
{
	if (!a->cfg)
		return;
	for (unsigned i = 0; i < a->cfg->nls; i++)
		for (int side = 0; side < SIDE_COUNT; side++)
			if (a->ns[i][side] >= 0)
				close(a->ns[i][side]);
	free(a->cfg);
	a->cfg = NULL;
}

/**
 * privgrant_open() - open every namespace a configuration names
 * @a:		@cfg set, @ns filled in
 * @err:	buffer for one line saying which cannot be opened
 * @errlen:	its size
 *
 * Return: 0, or -1 with @err set (and what was opened closed).
 */
int privgrant_open(struct allowed *a, char *err, size_t errlen)
{
	char why[160];

	for (unsigned i = 0; i < CONFIG_MAX_LISTENERS; i++)
		a->ns[i][SIDE_CLIENT] = a->ns[i][SIDE_BACKEND] = -1;
	for (unsigned i = 0; i < a->cfg->nls; i++)
		for (int side = 0; side < SIDE_COUNT; side++) {
			const char *path = a->cfg->ls[i].netns[side];

			if (!*path)
				continue;
			a->ns[i][side] =
				netns_open(path, a->cfg->ls[i].foreign_netns,
					   why, sizeof(why));
			if (a->ns[i][side] < 0) {
				snprintf(err, errlen, "listener %s: %s",
					 a->cfg->ls[i].name, why);
				privgrant_free(a);
				return -1;
			}
		}
	return 0;
}

/**
 * backend_allowed() - does a listener allow this backend socket
 * @lo:	the listener
 * @r:	the request
 *
 * A socket without IP_TRANSPARENT is less than one with it, so a
 * transparent listener allows both. Only the listener the request names
 * is asked: another's --transparent lends this one nothing.
 *
 * Return: true if it does.
 */
static bool backend_allowed(const struct listen_opts *lo,
			    const struct ph_req *r)
{
	bool family = false;

	for (unsigned b = 0; b < lo->nbackends; b++)
		family |= lo->backend[b].addr.ss_family == r->family;
	return family && !strcmp(lo->name, r->listener) &&
	       !strcmp(lo->netns[SIDE_BACKEND], r->netns) &&
	       lo->mptcp[SIDE_BACKEND] == !!r->mptcp &&
	       (lo->transparent || !r->transparent);
}

/**
 * listen_allowed() - does a listener listen on exactly this
 * @lo:	the listener
 * @r:	the request
 *
 * Return: true if it does.
 */
static bool listen_allowed(const struct listen_opts *lo, const struct ph_req *r)
{
	return lo->listen.len && lo->listen.len == r->addrlen &&
	       !memcmp(&lo->listen.addr, &r->addr, r->addrlen) &&
	       !strcmp(lo->netns[SIDE_CLIENT], r->netns) &&
	       lo->mptcp[SIDE_CLIENT] == !!r->mptcp;
}

/**
 * allowed_expire() - drop the configuration before, once its time is up
 * @set:	the configurations requests are granted from
 */
static void allowed_expire(struct allowed set[NSETS])
{
	if (set[SET_PREVIOUS].cfg && set[SET_PREVIOUS].expires &&
	    mono_ns() > set[SET_PREVIOUS].expires)
		privgrant_free(&set[SET_PREVIOUS]);
}

/**
 * sock_int() - one int socket option
 * @fd:		the socket
 * @level:	its level
 * @name:	its name
 *
 * Return: the value, or INT_MIN if it cannot be read.
 */
static int sock_int(int fd, int level, int name)
{
	int v;
	socklen_t len = sizeof(v);

	return getsockopt(fd, level, name, &v, &len) || len != sizeof(v)
		       ? -0x7fffffff - 1
		       : v;
}

/**
 * same_ns() - is a socket in a namespace
 * @fd:	the socket
 * @ns:	the namespace
 *
 * Return: true if SIOCGSKNS says it is.
 */
static bool same_ns(int fd, int ns)
{
	int its = ioctl(fd, SIOCGSKNS);
	bool same;

	if (its < 0)
		return false;
	same = netns_ino(its) && netns_ino(its) == netns_ino(ns);
	close(its);
	return same;
}

/**
 * accepted_here() - is a local address the listener's
 * @lo:		the listener
 * @sa:		the socket's own address (getsockname())
 *
 * The port must be the listener's, the address too unless it listens on
 * the wildcard. A listener with no address (its socket came from socket
 * activation) has nothing to compare: the saved SYN (client_ok()) is then
 * the whole proof.
 *
 * Return: true if it is.
 */
static bool accepted_here(const struct listen_opts *lo,
			  const struct sockaddr_storage *sa)
{
	const struct sockaddr_storage *l = &lo->listen.addr;

	if (!lo->listen.len)
		return true;
	if (l->ss_family != sa->ss_family)
		return false;
	if (sa->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)sa,
					 *b = (const void *)l;

		return a->sin_port == b->sin_port &&
		       (b->sin_addr.s_addr == htonl(INADDR_ANY) ||
			a->sin_addr.s_addr == b->sin_addr.s_addr);
	}
	const struct sockaddr_in6 *a = (const void *)sa, *b = (const void *)l;

	return a->sin6_port == b->sin6_port &&
	       (IN6_IS_ADDR_UNSPECIFIED(&b->sin6_addr) ||
		IN6_ARE_ADDR_EQUAL(&a->sin6_addr, &b->sin6_addr));
}

/**
 * client_ok() - is a socket a client the listener accepted, and whose
 *		 address may a transparent backend socket take
 * @lo:		the listener
 * @client_ns:	its client namespace
 * @fd:		the socket the daemon sent
 * @family:	the backend socket's family
 * @g:		@peer and @peerlen set to the client's address
 *
 * getpeername() alone proves nothing: a UDP socket the daemon connect()ed
 * anywhere, without sending a byte, has a peer, and so has a TCP socket
 * it bound to the listener's port (after closing its copy of the
 * listener) and connect()ed to any host. So the socket must be a
 * connected TCP stream of the backend's family, not listening, whose own
 * address is the listener's, which lives in the listener's client
 * namespace, and which carries the SYN its peer sent to that address
 * (acceptproof_check()): a socket that only accept() on that listener gives.
 *
 * Under --accept-proxy the address to bind would be the one in the PROXY
 * header, which no socket vouches for: options.c refuses transparent
 * with accept-proxy under --user.
 *
 * Return: true if it is.
 */
static bool client_ok(const struct listen_opts *lo, int client_ns, int fd,
		      int family, struct grant *g)
{
	struct sockaddr_storage self;
	socklen_t slen = sizeof(self);
	struct tcp_info ti;
	socklen_t tlen = sizeof(ti);

	g->peerlen = sizeof(g->peer);
	return !(sock_int(fd, SOL_SOCKET, SO_DOMAIN) != family ||
		 sock_int(fd, SOL_SOCKET, SO_TYPE) != SOCK_STREAM ||
		 sock_int(fd, SOL_SOCKET, SO_PROTOCOL) != IPPROTO_TCP ||
		 sock_int(fd, SOL_SOCKET, SO_ACCEPTCONN) != 0 ||
		 getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &tlen) ||
		 tlen < offsetof(struct tcp_info, tcpi_state) + 1 ||
		 (ti.tcpi_state != TCP_ESTABLISHED &&
		  ti.tcpi_state != TCP_CLOSE_WAIT) ||
		 getsockname(fd, (struct sockaddr *)&self, &slen) ||
		 !accepted_here(lo, &self) || !same_ns(fd, client_ns) ||
		 getpeername(fd, (struct sockaddr *)&g->peer, &g->peerlen) ||
		 g->peer.ss_family != family ||
		 !acceptproof_check(fd, &self, &g->peer));
}

/**
 * privgrant_find() - the listener and namespace a request may be served by
 * @set:	the configurations requests are granted from
 * @r:		the request
 * @client:	the descriptor that came with it, or -1
 * @g:		filled in
 *
 * A transparent PRIV_OP_BACKEND is granted by the first listener of that name
 * that accepted @client: a reload may have moved it, and a client of the
 * listener as it was still fails over to its next backend.
 *
 * Return: 0, or -1 with errno set: EPERM if no listener allows the
 * request, EINVAL for a transparent one with no client socket.
 */
int privgrant_find(struct allowed set[NSETS], const struct ph_req *r,
		   int client, struct grant *g)
{
	int side = r->op == PRIV_OP_LISTEN ? SIDE_CLIENT : SIDE_BACKEND;
	bool proof = r->op == PRIV_OP_BACKEND && r->transparent;

	if (proof && client < 0) {
		errno = EINVAL;
		return -1;
	}
	allowed_expire(set);
	for (int s = 0; s < NSETS; s++) {
		const struct config *c = set[s].cfg;

		for (unsigned i = 0; c && i < c->nls; i++) {
			const int *ns = set[s].ns[i];
			int home = netns_home();

			if (r->op == PRIV_OP_LISTEN
				    ? !listen_allowed(&c->ls[i], r)
				    : !backend_allowed(&c->ls[i], r))
				continue;
			if (proof &&
			    !client_ok(&c->ls[i],
				       ns[SIDE_CLIENT] >= 0 ? ns[SIDE_CLIENT]
							    : home,
				       client, r->family, g))
				continue;
			g->lo = &c->ls[i];
			g->ns = ns[side] >= 0 ? ns[side] : home;
			return 0;
		}
	}
	errno = EPERM;
	return -1;
}

/**
 * privgrant_reload() - PRIV_OP_RELOAD: read the configuration as the candidate
 * @set:	the configurations requests are granted from
 * @argc:	the daemon's command line
 * @argv:	its arguments
 * @inherited:	the daemon had sockets from socket activation
 * @msg:	buffer for one line saying why the file is refused
 * @msglen:	its size
 *
 * The candidate before, if any, is dropped, whether this one is taken
 * or not.
 *
 * Return: 0, or an errno with @msg set.
 */
int privgrant_reload(struct allowed set[NSETS], int argc, char **argv,
		     bool inherited, char *msg, size_t msglen)
{
	struct allowed next = { .cfg = calloc(1, sizeof(*next.cfg)) };

	if (!next.cfg)
		return ENOMEM;
	privgrant_free(&set[SET_CANDIDATE]); /* refused or not, it is gone */
	if (options_parse(next.cfg, argc, argv, inherited, msg, msglen) !=
	    OPT_OK) {
		free(next.cfg);
		return EINVAL;
	}
	if (privgrant_open(&next, msg, msglen))
		return EINVAL;
	set[SET_CANDIDATE] = next;
	return 0;
}

/**
 * privgrant_commit() - PRIV_OP_COMMIT: the candidate runs; the one before stays
 * a while
 * @set:	the configurations requests are granted from
 *
 * The one before stays for the new configuration's --drain-timeout, as
 * the helper read it (with 0, "as long as they last", until the next
 * commit): its connections may fail over to a next backend meanwhile.
 *
 * Return: 0, or EINVAL if there is no candidate.
 */
int privgrant_commit(struct allowed set[NSETS])
{
	double drain;

	if (!set[SET_CANDIDATE].cfg)
		return EINVAL;
	drain = set[SET_CANDIDATE].cfg->o.drain_timeout;
	privgrant_free(&set[SET_PREVIOUS]);
	set[SET_PREVIOUS] = set[SET_RUNNING];
	set[SET_RUNNING] = set[SET_CANDIDATE];
	set[SET_CANDIDATE].cfg = NULL;
	set[SET_PREVIOUS].expires =
		drain > 0 ? mono_ns() + (uint64_t)(drain * 1e9) : 0;
	return 0;
}

/**
 * privgrant_abort() - PRIV_OP_ABORT: the daemon refused the candidate
 * @set:	the configurations requests are granted from
 *
 * Return: 0 (a candidate or none, there is none after).
 */
int privgrant_abort(struct allowed set[NSETS])
{
	privgrant_free(&set[SET_CANDIDATE]);
	return 0;
}
