// SPDX-License-Identifier: GPL-2.0-or-later
/* listener.c - the process's listeners: their sockets and their settings
 *
 * Theory of operation: a listener is one named section of the
 * configuration ("main" on the command line). The main thread makes it:
 * one listening socket per worker, bound to the same address with
 * SO_REUSEPORT inside the listen namespace (or, under socket activation,
 * the inherited socket, shared by every worker), each socket then handed
 * to its worker (accept.c), which alone accepts on it. After --user, the
 * privileged helper makes them (privhelper.c), as root.
 *
 * A listener's settings are an lcfg: immutable, reference counted, held
 * by the listener while current and by every connection that started
 * under it. A reload that changes a listener's thresholds, say, gives it
 * a new lcfg; connections already open keep the old one to their end.
 * Only a change of what the socket is (address, namespace, MPTCP) makes
 * a new listener, and the old one is retired: its workers close their
 * sockets, its connections run on, and the main thread frees it once the
 * last of them has ended (listener_reap()). Counters are per name and per
 * worker: a listener that replaces one of its name counts on into the
 * same ones, as do the old one's last connections, so /metrics shows one
 * series per name that never goes back. The same worker writes a set
 * whichever listener the connection came from, so they stay single-writer.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/stat.h>

#include "net/dial.h"
#include "net/listener.h"
#include "common/log.h"
#include "common/netns.h"
#include "priv/privhelper.h"
#include "core/proxy.h"
#include "io/sock.h"

/**
 * listener_cfg_new() - settings for connections, with their namespaces opened
 * @o:		the listener's options
 * @err:	buffer for one line saying what is wrong
 * @errlen:	its size
 *
 * Return: the settings, holding one reference, or NULL with @err set.
 */
struct lcfg *listener_cfg_new(const struct listen_opts *o, char *err,
			      size_t errlen)
{
	static const char *const opt_name[SIDE_COUNT] = { "listen-netns",
							  "backend-netns" };
	struct lcfg *c = calloc(1, sizeof(*c));
	struct stat st;
	char why[400];

	if (!c) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	c->o = *o;
	c->refs = 1;
	for (int side = 0; side < SIDE_COUNT; side++) {
		c->netns[side] = -1;
		if (!o->netns[side][0])
			continue;
		c->netns[side] = netns_open(o->netns[side], o->foreign_netns,
					    why, sizeof(why));
		if (c->netns[side] < 0) {
			snprintf(err, errlen, "listener %s: --%s %s", o->name,
				 opt_name[side], why);
			listener_cfg_put(c);
			return NULL;
		}
		if (!fstat(c->netns[side], &st))
			c->netns_ino[side] = st.st_ino;
	}
	return c;
}

/**
 * listener_cfg_get() - take a reference
 * @c:	the settings
 */
void listener_cfg_get(struct lcfg *c)
{
	__atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
}

/**
 * listener_cfg_put() - drop a reference; the last one frees the settings
 * @c:	the settings
 */
void listener_cfg_put(struct lcfg *c)
{
	if (__atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL))
		return;
	for (int side = 0; side < SIDE_COUNT; side++)
		if (c->netns[side] >= 0)
			close(c->netns[side]);
	free(c);
}

/**
 * listener_get() - take a reference
 * @l:	the listener
 */
void listener_get(struct listener *l)
{
	__atomic_add_fetch(&l->refs, 1, __ATOMIC_RELAXED);
}

/**
 * listener_put() - drop a reference
 * @l:	the listener
 *
 * Never frees: workers drop their references from their own threads, and
 * the main thread may be reading the listener's counters for a scrape. The
 * main thread frees it in listener_reap().
 */
void listener_put(struct listener *l)
{
	__atomic_sub_fetch(&l->refs, 1, __ATOMIC_RELEASE);
}

/**
 * listener_same_socket() - do two settings listen on the same socket
 * @a:	the settings in use
 * @b:	the new ones
 *
 * Return: true if the address, the namespace and MPTCP are the same, so
 * that a reload can keep the socket and change only the settings.
 */
bool listener_same_socket(const struct lcfg *a, const struct lcfg *b)
{
	const struct endpoint *x = &a->o.listen, *y = &b->o.listen;

	return x->len == y->len && !memcmp(&x->addr, &y->addr, x->len) &&
	       a->o.quic == b->o.quic &&
	       a->netns_ino[SIDE_CLIENT] == b->netns_ino[SIDE_CLIENT] &&
	       a->o.mptcp[SIDE_CLIENT] == b->o.mptcp[SIDE_CLIENT];
}

/**
 * take_inherited() - claim a socket passed by socket activation
 * @px:		the process, with its inherited sockets
 * @cfg:	the listener's settings; with no listen address, the first
 *		unclaimed socket is taken and its address filled in
 *
 * Return: the socket, or -1 if none matches.
 */
static int take_inherited(struct proxy *px, struct lcfg *cfg)
{
	struct endpoint *ep = &cfg->o.listen;
	struct sockaddr_storage a;
	socklen_t len;
	int fd;

	for (unsigned i = 0; i < px->ninherited; i++) {
		fd = px->inherited[i];
		if (fd < 0)
			continue;
		len = sizeof(a);
		if (getsockname(fd, (struct sockaddr *)&a, &len))
			continue;
		if (ep->len && (len != ep->len || memcmp(&a, &ep->addr, len)))
			continue;
		if (!ep->len) {
			memcpy(&ep->addr, &a, len);
			ep->len = len;
			sock_addr_text((struct sockaddr *)&a, ep->text,
				       sizeof(ep->text));
		}
		px->inherited[i] = -1;
		return fd;
	}
	return -1;
}

/**
 * take_handed() - claim the sockets a handover brought for a listener
 * @px:		the process, with its seam to the handover (@take_handed)
 * @l:		the listener, with @fds all -1
 * @ep:		its listen address; none under socket activation
 *
 * The handover matches its sockets to the listener; a worker that had
 * none (out of memory at a reload) shares one.
 *
 * Return: true if it got its sockets (every worker one).
 */
static bool take_handed(struct proxy *px, struct listener *l,
			const struct endpoint *ep)
{
	unsigned got = px->take_handed ? px->take_handed(l->name, ep, l->fds,
							 l->nworkers)
				       : 0;

	for (unsigned i = 0; got && i < l->nworkers; i++)
		for (unsigned j = 0; l->fds[i] < 0 && j < l->nworkers; j++)
			if (l->fds[j] >= 0)
				l->fds[i] =
					fcntl(l->fds[j], F_DUPFD_CLOEXEC, 0);
	return got > 0;
}

/**
 * helper_sockets() - one listening socket per worker, from the helper
 * @px:		the process, with its privileged helper
 * @l:		the listener, with @fds all -1
 * @cfg:	its settings
 *
 * After --user, so that the sockets are root's like those bound at start:
 * SO_REUSEPORT admits to a group only sockets of the same owner, and no
 * process of the daemon's user can then take a share of the clients.
 *
 * Return: 0, or an errno.
 */
static int helper_sockets(struct proxy *px, struct listener *l,
			  const struct lcfg *cfg)
{
	const struct endpoint *ep = &cfg->o.listen;

	for (unsigned i = 0; i < l->nworkers; i++) {
		l->fds[i] = privhelper_listen(
			&px->helper, 0, cfg->o.netns[SIDE_CLIENT],
			(const struct sockaddr *)&ep->addr, ep->len,
			cfg->o.mptcp[SIDE_CLIENT]);
		if (l->fds[i] < 0)
			return errno;
	}
	return 0;
}

/**
 * unprivileged_port_start() - the lowest port a process may bind without
 *			       CAP_NET_BIND_SERVICE, in this thread's network
 *			       namespace
 *
 * Return: net.ipv4.ip_unprivileged_port_start, or 1024 if it cannot be
 * read.
 */
static int unprivileged_port_start(void)
{
	FILE *f = fopen("/proc/sys/net/ipv4/ip_unprivileged_port_start", "re");
	int port = 1024;

	if (f) {
		if (fscanf(f, "%d", &port) != 1)
			port = 1024;
		fclose(f);
	}
	return port;
}

/**
 * listen_failed() - the line for a listening socket that cannot be had
 * @err:	buffer for it
 * @errlen:	its size
 * @cfg:	the listener's settings
 * @in_ns:	the socket was made in the listen namespace, which the line
 *		names
 * @e:		the errno
 * @low:	for EACCES, the lowest port bound without a capability in that
 *		namespace (unprivileged_port_start())
 *
 * A start and --check say the same, and what to do.
 */
static void listen_failed(char *err, size_t errlen, const struct lcfg *cfg,
			  bool in_ns, int e, int low)
{
	char why[400] = "";

	if (e == EACCES)
		snprintf(
			why, sizeof(why),
			" (ports below %d need root or CAP_NET_BIND_SERVICE: start smbsplice as root, with --user to give root up once it listens; grant it the capability, AmbientCapabilities=CAP_NET_BIND_SERVICE as smbsplice.service does; or have systemd pass the socket, as smbsplice.socket does)",
			low);
	else if (e == EADDRNOTAVAIL)
		snprintf(
			why, sizeof(why),
			" (no interface of this host has that address: give one it has, or 0.0.0.0 or [::] for all)");
	else if (e == EADDRINUSE)
		snprintf(
			why, sizeof(why),
			" (another program, or another user's smbsplice, listens there)");
	snprintf(err, errlen, "listener %s: cannot listen on %s%s%s: %s%s%s",
		 cfg->o.name, cfg->o.listen.text, in_ns ? " in " : "",
		 in_ns ? cfg->o.netns[SIDE_CLIENT] : "", strerror(e), why,
		 privhelper_hint(e));
}

/**
 * overlap() - would sockets on two addresses share their clients
 * @a:	an address
 * @b:	another
 *
 * Listening sockets are IPV6_V6ONLY (sock_bound()), so an IPv4 and an
 * IPv6 address never overlap; one family's wildcard overlaps all of it.
 *
 * Return: true if the ports are the same and the hosts the same, or one
 * of them is the wildcard.
 */
static bool overlap(const struct endpoint *a, const struct endpoint *b)
{
	const struct sockaddr_in *x4 = (const void *)&a->addr,
				 *y4 = (const void *)&b->addr;
	const struct sockaddr_in6 *x6 = (const void *)&a->addr,
				  *y6 = (const void *)&b->addr;

	if (a->addr.ss_family != b->addr.ss_family)
		return false;
	if (a->addr.ss_family == AF_INET)
		return x4->sin_port == y4->sin_port &&
		       (x4->sin_addr.s_addr == y4->sin_addr.s_addr ||
			x4->sin_addr.s_addr == htonl(INADDR_ANY) ||
			y4->sin_addr.s_addr == htonl(INADDR_ANY));
	return x6->sin6_port == y6->sin6_port &&
	       (IN6_ARE_ADDR_EQUAL(&x6->sin6_addr, &y6->sin6_addr) ||
		IN6_IS_ADDR_UNSPECIFIED(&x6->sin6_addr) ||
		IN6_IS_ADDR_UNSPECIFIED(&y6->sin6_addr));
}

/**
 * ours() - does this process listen on that address already
 * @px:		the process
 * @cfg:	the new listener's settings
 *
 * Its own sockets would fail listened_on()'s probe: a reload that makes
 * a new socket where a listener of its own listens (its MPTCP changed,
 * say) binds beside it as the workers do, and the old one is retired
 * once the new one is in place; and two listeners may listen on
 * 0.0.0.0:445 and 127.0.0.1:445. Such an address is not probed, so a
 * foreign socket on it goes unseen, as before the probe.
 *
 * Return: true if a listener of @px, running, retired or opening in the
 * same start or reload, has an address that overlaps it in the same
 * namespace.
 */
static bool ours(const struct proxy *px, const struct lcfg *cfg)
{
	const struct listener *lists[] = { px->listeners, px->opening };

	for (unsigned i = 0; i < 2; i++)
		for (const struct listener *l = lists[i]; l; l = l->next)
			if (l->cfg && l->cfg->o.listen.len &&
			    overlap(&l->cfg->o.listen, &cfg->o.listen) &&
			    l->cfg->netns_ino[SIDE_CLIENT] ==
				    cfg->netns_ino[SIDE_CLIENT])
				return true;
	return false;
}

/**
 * listened_on() - does another socket listen on the address already
 * @cfg:	the listener's settings, in its listen namespace
 *
 * SO_REUSEPORT, which the workers' sockets need, would also let this
 * process join the group of another process of the same user on the
 * same address (a second smbsplice with another backend, say), and take
 * half its clients without a word. So a socket with SO_REUSEADDR and
 * without SO_REUSEPORT is bound first and closed: the kernel refuses it
 * where any socket listens on the address or one that overlaps it
 * (0.0.0.0 and 127.0.0.1), but not for connections a stopped smbsplice
 * left (TIME_WAIT, or still draining), nor for sockets bound with
 * SO_REUSEADDR and not listening. Two smbsplice started at the same
 * instant may both pass it before either listens; a start after another
 * listens cannot.
 *
 * Return: true if one does; any other failure is the real bind's to say.
 */
static bool listened_on(const struct lcfg *cfg)
{
	const struct endpoint *ep = &cfg->o.listen;
	int fd = sock_bound((const struct sockaddr *)&ep->addr, ep->len, false,
			    cfg->o.mptcp[SIDE_CLIENT]);

	if (fd < 0)
		return errno == EADDRINUSE;
	close(fd);
	return false;
}

/**
 * open_sockets() - one listening socket per worker, in the listen
 *		    namespace
 * @px:		the process
 * @l:		the listener, with @fds all -1
 * @cfg:	its settings
 * @err:	buffer for one line saying what is wrong
 * @errlen:	its size
 *
 * Return: 0, or -1 with @err set.
 */
static int open_sockets(struct proxy *px, struct listener *l,
			const struct lcfg *cfg, char *err, size_t errlen)
{
	const struct endpoint *ep = &cfg->o.listen;
	int ns = cfg->netns[SIDE_CLIENT], e = 0, low = 0;
	bool taken = false;

	/* A QUIC listener reloaded after --user binds as the user: the
	 * helper makes only TCP sockets (a port below 1024 then needs a
	 * restart, as the line says). */
	if (px->helper.fds && !cfg->o.quic) {
		e = helper_sockets(px, l, cfg);
		ns = cfg->o.netns[SIDE_CLIENT][0] ? 0 : -1; /* for the line */
		goto out;
	}
	if (ns >= 0 && netns_enter(ns)) {
		snprintf(err, errlen, "listener %s: cannot enter %s: %s",
			 l->name, cfg->o.netns[SIDE_CLIENT], strerror(errno));
		return -1;
	}
	if (cfg->o.quic) {
		e = listener_open_quic(px, l, ep, err, errlen);
		if (e < 0) { /* @err says why */
			if (ns >= 0)
				netns_enter(netns_home());
			return -1;
		}
	} else if (!px->opt->share_address && !ours(px, cfg) &&
		   listened_on(cfg)) {
		taken = true;
		e = EADDRINUSE;
	}
	for (unsigned i = 0; i < l->nworkers && !e && !cfg->o.quic; i++) {
		l->fds[i] =
			sock_listen((const struct sockaddr *)&ep->addr, ep->len,
				    true, cfg->o.mptcp[SIDE_CLIENT]);
		if (l->fds[i] < 0)
			e = errno;
	}
	if (e == EACCES)
		low = unprivileged_port_start();
	if (ns >= 0)
		netns_enter(netns_home());
out:
	if (taken)
		snprintf(
			err, errlen,
			"listener %s: cannot listen on %s%s%s: Address already in use: another process listens there (if an smbsplice, the two would share its clients): stop it or choose another address; to start a new smbsplice beside an old one and then stop the old (drain and start), give --share-address",
			cfg->o.name, ep->text, ns >= 0 ? " in " : "",
			ns >= 0 ? cfg->o.netns[SIDE_CLIENT] : "");
	else if (e)
		listen_failed(err, errlen, cfg, ns >= 0, e, low);
	return e ? -1 : 0;
}

/**
 * listener_check_bind() - --check: could a start bind this listener's
 *			   address
 * @cfg:	the listener's settings
 * @err:	buffer for one line saying why not
 * @errlen:	its size
 *
 * One socket is bound as a start binds it, in the listen namespace, and
 * closed without listening: a port below net.ipv4.ip_unprivileged_port_start
 * without CAP_NET_BIND_SERVICE, or an address not on this host, fails
 * here as it would at start. An address in use passes: the smbsplice
 * that --check is run for may hold it. A listener with no listen address
 * waits for systemd's socket and binds nothing.
 *
 * Return: 0, or -1 with @err set.
 */
int listener_check_bind(const struct lcfg *cfg, char *err, size_t errlen)
{
	const struct endpoint *ep = &cfg->o.listen;
	int ns = cfg->netns[SIDE_CLIENT], fd, e, low = 0;

	if (!ep->len)
		return 0;
	if (ns >= 0 && netns_enter(ns)) {
		snprintf(err, errlen, "listener %s: cannot enter %s: %s",
			 cfg->o.name, cfg->o.netns[SIDE_CLIENT],
			 strerror(errno));
		return -1;
	}
	if (cfg->o.quic)
		fd = sock_udp_bound((const struct sockaddr *)&ep->addr, ep->len,
				    false);
	else
		fd = sock_bound((const struct sockaddr *)&ep->addr, ep->len,
				true, cfg->o.mptcp[SIDE_CLIENT]);
	e = fd < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	if (e == EACCES)
		low = unprivileged_port_start();
	if (ns >= 0)
		netns_enter(netns_home());
	if (!e || e == EADDRINUSE)
		return 0;
	listen_failed(err, errlen, cfg, ns >= 0, e, low);
	return -1;
}

/**
 * listener_new() - make a listener and its sockets
 * @px:		the process
 * @cfg:	its settings; the listener takes over the caller's reference
 * @err:	buffer for one line saying what is wrong
 * @errlen:	its size
 *
 * Return: the listener, holding the process's reference, or NULL with @err
 * set (and @cfg's reference dropped).
 */
struct listener *listener_new(struct proxy *px, struct lcfg *cfg, char *err,
			      size_t errlen)
{
	struct listener *l = calloc(1, sizeof(*l));
	int fd;

	if (!l || !(l->fds = malloc(px->nworkers * sizeof(int))) ||
	    !(l->counters = calloc(
		      1, sizeof(*l->counters) +
				 px->nworkers *
					 (sizeof(*l->st) + sizeof(uint64_t) +
					  sizeof(struct lquic))))) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	l->counters->users = 1;
	l->counters->active = (uint64_t *)&l->counters->w[px->nworkers];
	l->counters->quic = (struct lquic *)&l->counters->active[px->nworkers];
	l->st = l->counters->w;
	snprintf(l->name, sizeof(l->name), "%s", cfg->o.name);
	l->nworkers = px->nworkers;
	l->refs = 1;
	l->quic_map = -1;
	l->cfg = cfg;
	for (unsigned i = 0; i < l->nworkers; i++)
		l->fds[i] = -1;
	if (cfg->o.quic) {
		/* Bound here always: a QUIC listener's socket is not handed
		 * over (issue 33) nor taken from systemd. */
		if (open_sockets(px, l, cfg, err, errlen))
			goto fail;
		return l;
	} else if (take_handed(px, l, &cfg->o.listen)) {
		/* Bound already, by the process that handed over. */
		listener_mark(l, LISTENER_HANDED);
	} else if ((fd = take_inherited(px, cfg)) >= 0) {
		/* One socket from systemd: every worker accepts on it. */
		listener_mark(l, LISTENER_INHERITED);
		l->fds[0] = fd;
		for (unsigned i = 1; i < l->nworkers; i++)
			l->fds[i] = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	} else if (!cfg->o.listen.len) {
		snprintf(
			err, errlen,
			"listener %s: no listen address, and no socket from systemd is left for it; give it one (listen = ADDR:PORT)",
			l->name);
		goto fail;
	} else if (open_sockets(px, l, cfg, err, errlen)) {
		goto fail;
	}
	/* Accepted sockets inherit these, so every client has them from its
	 * first byte, before the backend is even dialled. A handed socket is
	 * still the old process's until it says GO: handover_in.c has the
	 * workers set them then (accept_set_cfg()). */
	for (unsigned i = 0; i < l->nworkers; i++)
		if (!listener_is(l, LISTENER_HANDED) &&
		    dial_client_side(l->fds[i], &cfg->o, err, errlen))
			goto fail;
	return l;
fail:
	if (l) {
		l->cfg = NULL;
		listener_free(l);
	}
	listener_cfg_put(cfg);
	return NULL;
}

/**
 * listener_set_cfg() - new settings for a listener that keeps its sockets
 * @l:		the listener
 * @cfg:	the settings; the listener takes over the caller's reference
 * @err:	buffer for one line saying what is wrong
 * @errlen:	its size
 *
 * The client side's socket options are set again on the listening
 * sockets this thread still holds; those a worker has taken, the worker
 * sets when it is handed the settings (accept_set_cfg()).
 *
 * Return: 0, or -1 with @err set (the old settings stay).
 */
int listener_set_cfg(struct listener *l, struct lcfg *cfg, char *err,
		     size_t errlen)
{
	unsigned was = sockbuf_fixed(l->cfg->o.sockbuf[SIDE_CLIENT]);

	/* A fixed size locked the listening socket's buffers, and its clients
	 * inherit them. Unlocking (SO_BUF_LOCK) would also take restoring the
	 * namespace's tcp_rmem and tcp_wmem defaults: the reload says so. */
	if (was && !sockbuf_fixed(cfg->o.sockbuf[SIDE_CLIENT]))
		log_warn("listener %s: socket-buffer: new clients keep the "
			 "fixed %u bytes until smbsplice is restarted (a "
			 "listening socket cannot return to autotuning)",
			 l->name, was);
	for (unsigned i = 0; i < l->nworkers; i++)
		if (l->fds[i] >= 0 && !cfg->o.quic &&
		    dial_client_side(l->fds[i], &cfg->o, err, errlen)) {
			listener_cfg_put(cfg);
			return -1;
		}
	listener_cfg_put(l->cfg);
	l->cfg = cfg;
	return 0;
}

/**
 * drop_counters() - stop counting into a listener's counters
 * @l:	the listener
 */
static void drop_counters(struct listener *l)
{
	if (l->counters && !--l->counters->users)
		free(l->counters);
	l->counters = NULL;
	l->st = NULL;
}

/**
 * listener_share_counters() - a new listener counts on where @old did
 * @l:		the new listener, whose sockets no worker has yet
 * @old:	the listener of the same name it replaces
 */
void listener_share_counters(struct listener *l, struct listener *old)
{
	drop_counters(l);
	l->counters = old->counters;
	l->counters->users++;
	l->st = l->counters->w;
	listener_mark(old, LISTENER_PASSED_ON);
}

/**
 * listener_free() - free a listener no one refers to any more
 * @l:	the listener; sockets still in @fds (never handed to a worker)
 *	are closed
 */
void listener_free(struct listener *l)
{
	if (l->fds)
		for (unsigned i = 0; i < l->nworkers; i++)
			if (l->fds[i] >= 0)
				close(l->fds[i]);
	if (l->cfg)
		listener_cfg_put(l->cfg);
	if (l->quic_map >= 0)
		close(l->quic_map);
	free(l->fds);
	drop_counters(l);
	free(l);
}

/**
 * listener_mark() - record what happened to a listener
 * @l:		the listener
 * @flag:	one LISTENER_*, never cleared
 */
void listener_mark(struct listener *l, enum listener_flag flag)
{
	if (!(l->flags & flag))
		log_debug("listener %s: %s", l->name,
			  flag == LISTENER_INHERITED   ? "inherited"
			  : flag == LISTENER_PASSED_ON ? "passed on"
			  : flag == LISTENER_HANDED    ? "handed over"
						       : "retired");
	l->flags |= flag;
}

/**
 * listener_hold() - record that its workers were told to stop accepting
 *		     on it (drain) or to start again (resume)
 * @l:		the listener
 * @held:	drained, not resumed
 */
void listener_hold(struct listener *l, bool held)
{
	l->held = held;
}

/**
 * listener_reap() - free the retired listeners whose last connection ended
 * @px:	the process
 */
void listener_reap(struct proxy *px)
{
	struct listener **link = &px->listeners, *l;

	while ((l = *link)) {
		if (listener_is(l, LISTENER_RETIRED) &&
		    !__atomic_load_n(&l->refs, __ATOMIC_ACQUIRE)) {
			*link = l->next;
			listener_free(l);
		} else {
			link = &l->next;
		}
	}
}

/**
 * listener_restore_counters() - go on counting where a handover left off
 * @l:		the listener
 * @worker:	whose set
 * @words:	the counters, a struct lstats as uint64_t words (unaligned)
 *
 * Only at start, before the workers run: nothing else writes them yet.
 */
void listener_restore_counters(struct listener *l, unsigned worker,
			       const void *words)
{
	if (worker < l->nworkers)
		memcpy(&l->st[worker], words, sizeof(l->st[worker]));
}

/**
 * listener_named() - the running listener of a name
 * @px:		the process
 * @name:	the name
 *
 * Return: the listener, or NULL (none, or only retired ones).
 */
struct listener *listener_named(struct proxy *px, const char *name)
{
	for (struct listener *l = px->listeners; l; l = l->next)
		if (!listener_is(l, LISTENER_RETIRED) && !strcmp(l->name, name))
			return l;
	return NULL;
}

/**
 * listener_admin_name() - an admin state's name, as the control socket
 *			   takes it and the log and /metrics show it
 * @admin:	the state
 *
 * Return: "ready", "drain" or "maint".
 */
const char *listener_admin_name(enum be_admin admin)
{
	static const char *const name[BE_ADMIN_COUNT] = { "ready", "drain",
							  "maint" };

	return admin < BE_ADMIN_COUNT ? name[admin] : "?";
}

/**
 * listener_pick_backend() - the backend a connection dials next
 * @c:		the listener's settings the connection started with
 * @from:	the first index it may take: 0 for a new connection, one
 *		past the backend that just failed for a failover
 *
 * Only a backend the admin left ready is dialled. Of those, one the
 * checks call up comes first; a down one is dialled only when no ready
 * one from @from on is up, since the checks may be wrong and trying
 * costs one connect, while refusing costs the client. Called by workers:
 * the states are read atomically.
 *
 * Return: the index, or -1 if every backend from @from on is drained or
 * in maintenance.
 */
int listener_pick_backend(const struct lcfg *c, unsigned from)
{
	int fallback = -1;

	for (unsigned i = from; i < c->o.nbackends; i++) {
		if (__atomic_load_n(&c->be[i].admin, __ATOMIC_RELAXED) !=
		    BE_READY)
			continue;
		if (!__atomic_load_n(&c->be[i].down, __ATOMIC_RELAXED))
			return (int)i;
		if (fallback < 0)
			fallback = (int)i;
	}
	return fallback;
}

/**
 * note_change() - log and count one change of a backend's state
 * @c:		the listener's settings
 * @i:		the backend
 * @was:	the state's name before
 * @now:	after
 * @why:	what changed it
 * @lvl:	the line's level: a warning for a backend found down, which
 *		`journalctl -p warning` should show; info for the rest
 */
static void note_change(struct lcfg *c, unsigned i, const char *was,
			const char *now, const char *why, enum log_level lvl)
{
	__atomic_add_fetch(&c->be[i].changes, 1, __ATOMIC_RELAXED);
	log_at(lvl, "listener %s backend %s: %s -> %s (%s)", c->o.name,
	       c->o.backend[i].text, was, now, why);
}

/**
 * listener_set_admin() - the admin drains a backend, puts it in
 *			  maintenance, or makes it ready again
 * @c:		the listener's current settings
 * @i:		the backend
 * @admin:	its new state
 * @why:	who asked, for the log line
 *
 * Main thread only. Open connections are not touched: a drained backend
 * only gets no new ones.
 */
void listener_set_admin(struct lcfg *c, unsigned i, enum be_admin admin,
			const char *why)
{
	enum be_admin was = c->be[i].admin;

	if (was == admin)
		return;
	__atomic_store_n(&c->be[i].admin, (unsigned char)admin,
			 __ATOMIC_RELAXED);
	note_change(c, i, listener_admin_name(was), listener_admin_name(admin),
		    why, LOG_LVL_INFO);
}

/**
 * listener_set_down() - the checks found a backend down, or up again
 * @c:		the listener's current settings
 * @i:		the backend
 * @down:	its new health
 * @why:	what the last probe saw
 *
 * Main thread only.
 */
void listener_set_down(struct lcfg *c, unsigned i, bool down, const char *why)
{
	if (c->be[i].down == down)
		return;
	__atomic_store_n(&c->be[i].down, down, __ATOMIC_RELAXED);
	note_change(c, i, down ? "up" : "down", down ? "down" : "up", why,
		    down ? LOG_LVL_WARN : LOG_LVL_INFO);
}

/**
 * listener_carry_states() - new settings keep the states of the backends
 *			     they keep
 * @c:		the new settings, which no worker has yet
 * @was:	the listener's settings until now
 *
 * A backend is the same one when its address is: it keeps its admin
 * state, its health and its count of changes, wherever it moved in the
 * list. A new backend starts ready and up.
 */
void listener_carry_states(struct lcfg *c, const struct lcfg *was)
{
	for (unsigned i = 0; i < c->o.nbackends; i++) {
		const struct endpoint *e = &c->o.backend[i];

		for (unsigned j = 0; j < was->o.nbackends; j++) {
			const struct endpoint *f = &was->o.backend[j];

			if (e->len == f->len &&
			    !memcmp(&e->addr, &f->addr, e->len)) {
				c->be[i] = was->be[j];
				break;
			}
		}
	}
}
