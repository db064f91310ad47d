// SPDX-License-Identifier: GPL-2.0-or-later
/* privhelper.c - the one process that keeps a privilege after --user
 *
 * Theory of operation: threads share one address space, so a capability
 * kept in any thread of the daemon is a capability of whatever code a
 * bad /metrics request or a bad SMB byte might run. With --user the
 * daemon therefore keeps none, in any thread, and the bounding set is
 * empty. What still needs a privilege after start is asked, OpenSSH
 * monitor style, of a small helper process forked before the drop:
 *
 *   PRIV_OP_BACKEND
 *		a backend socket made inside a network namespace
 *		(CAP_SYS_ADMIN for setns()), and with --transparent made
 *		IP_TRANSPARENT (CAP_NET_ADMIN) and bound to the client's
 *		address. The daemon sends the accepted client socket along
 *		and names its listener; the helper takes the address from
 *		getpeername() on it only once it is a connected TCP socket
 *		of that listener's address, port and client namespace
 *		(privgrant.c), so the daemon can only borrow the
 *		address of a client connected to it, never choose one.
 *   PRIV_OP_LISTEN
 *		a listening socket with SO_REUSEPORT, made by root (and
 *		below 1024 if configured: CAP_NET_BIND_SERVICE), so that no
 *		process of the daemon's user can join its reuseport group
 *		and take a share of the clients.
 *   PRIV_OP_RELOAD
 *		read the configuration again (SIGHUP), as root: the
 *		candidate, which the reload's new listeners are checked
 *		against;
 *   PRIV_OP_COMMIT
 *		the daemon applied it: the candidate runs now;
 *   PRIV_OP_ABORT
 *		the daemon refused it: the candidate is dropped.
 *
 * What the helper validates, and why: it reads the configuration itself
 * (it starts with the daemon's, and re-reads the file on PRIV_OP_RELOAD, never
 * taking a listener from the daemon), and grants a request only if a
 * listener of the running configuration, of the candidate a reload is
 * preparing, or of the one that ran before (connections of a listener a
 * reload retired still fail over to its next backend) has that
 * namespace, that address family and MPTCP setting, and for PRIV_OP_LISTEN
 * that exact address, or for a transparent PRIV_OP_BACKEND that the listener
 * it names has --transparent set and accepted the client socket sent to
 * take the address from. A compromised daemon can so ask only for what
 * the configuration already allows it. The connect() stays in the
 * daemon, which needs no privilege for it, and which can so connect a
 * backend socket to any destination of the backend namespace: only a
 * cgroup connect4/connect6 BPF program bounds where it goes.
 *
 * The wire: SOCK_SEQPACKET socketpairs, one per thread that asks (the
 * main thread, and each worker), so that requests need no lock and the
 * helper, single-threaded, serves them in turn with poll(). Requests and
 * replies are fixed-size structs; a reply carries the descriptor
 * (fdpass) or an errno, and the request's number, so that a reply
 * that came after the asker gave up (SO_RCVTIMEO) is recognised and
 * dropped. The helper never blocks on the daemon: it sends with
 * MSG_DONTWAIT, and a daemon that does not read loses its reply.
 *
 * The helper keeps uid 0 (so its sockets are root's) but only
 * PRIVHELPER_CAPS, with securebits locking out what uid 0 would otherwise
 * grant; it closes every descriptor but its socketpair ends and its home
 * namespace (0, 1 and 2 become /dev/null), ignores the signals a service
 * manager sends the whole group, and ends when the daemon does
 * (PR_SET_PDEATHSIG, and the hang-up of its channels). It logs nothing:
 * the daemon logs the errno it gets.
 *
 * It is forked whenever --user is given, even when no listener uses a
 * namespace or --transparent: a reload may add one, and every listening
 * socket a reload adds must be root's all the same. Without --user there
 * is none: the daemon is whatever it was started as, and a helper would
 * hold nothing the daemon lacks.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "common/fdpass.h"
#include "common/log.h"
#include "common/netns.h"
#include "priv/privgrant.h"
#include "priv/privhelper.h"
#include "priv/privs.h"
#include "io/sock.h"

/* How long the daemon waits for a reply before it gives up on one. */
#define REPLY_TIMEOUT_MS 1000

/* ---- the helper's side -------------------------------------------------- */

/**
 * make_backend() - a backend socket, made IP_TRANSPARENT and bound to the
 *		    client's address if asked
 * @r:		the request
 * @g:		what allows it, with the client's address if transparent
 *
 * Return: the socket, or -1 with errno set.
 */
static int make_backend(const struct ph_req *r, const struct grant *g)
{
	int fd, err;

	fd = sock_stream(r->family, r->mptcp);
	if (fd < 0 || !r->transparent)
		return fd;
	if (sock_set_transparent(fd, r->family) ||
	    sock_bind_any_port(fd, (const struct sockaddr *)&g->peer,
			       g->peerlen)) {
		err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

/**
 * serve_config() - PRIV_OP_RELOAD, PRIV_OP_COMMIT or PRIV_OP_ABORT
 * @set:	the configurations requests are checked against
 * @argc:	the daemon's command line, for PRIV_OP_RELOAD
 * @argv:	its arguments
 * @inherited:	the daemon had sockets from socket activation
 * @r:		the request
 * @rep:	filled in
 *
 * The file is read at home: names it resolves (getaddrinfo()) resolve
 * as they did at start, not in the backend namespace entered last.
 */
static void serve_config(struct allowed set[NSETS], int argc, char **argv,
			 bool inherited, const struct ph_req *r,
			 struct ph_rep *rep)
{
	if (r->op == PRIV_OP_COMMIT)
		rep->err = privgrant_commit(set);
	else if (r->op == PRIV_OP_ABORT)
		rep->err = privgrant_abort(set);
	else if (netns_enter(netns_home()))
		rep->err = errno;
	else
		rep->err = privgrant_reload(set, argc, argv, inherited,
					    rep->msg, sizeof(rep->msg));
}

/**
 * serve() - carry out one request
 * @set:	the configurations requests are checked against
 * @argv:	the daemon's command line, for PRIV_OP_RELOAD
 * @argc:	its length
 * @inherited:	the daemon had sockets from socket activation
 * @r:		the request
 * @client:	the descriptor that came with it, or -1
 * @rep:	filled in
 *
 * Return: the descriptor to send back, or -1 (with @rep->err set).
 */
static int serve(struct allowed set[NSETS], int argc, char **argv,
		 bool inherited, const struct ph_req *r, int client,
		 struct ph_rep *rep)
{
	static int here = -1; /* the namespace entered last, so as to skip
			       * a setns() to the same one */
	struct grant g;
	int fd = -1;

	if (r->op == PRIV_OP_RELOAD || r->op == PRIV_OP_COMMIT ||
	    r->op == PRIV_OP_ABORT) {
		here = -1; /* netns_open() comes home; numbers get reused */
		serve_config(set, argc, argv, inherited, r, rep);
		return -1;
	}
	if ((r->op != PRIV_OP_BACKEND && r->op != PRIV_OP_LISTEN) ||
	    memchr(r->netns, '\0', sizeof(r->netns)) == NULL ||
	    memchr(r->listener, '\0', sizeof(r->listener)) == NULL ||
	    r->addrlen > sizeof(r->addr)) {
		rep->err = EINVAL;
		return -1;
	}
	if (privgrant_find(set, r, client, &g) ||
	    (g.ns != here && netns_enter(g.ns))) {
		rep->err = errno;
		here = -1;
		return -1;
	}
	here = g.ns;
	if (r->op == PRIV_OP_LISTEN)
		fd = sock_listen((const struct sockaddr *)&r->addr, r->addrlen,
				 true, r->mptcp);
	else
		fd = make_backend(r, &g);
	if (fd < 0)
		rep->err = errno;
	return fd;
}

/**
 * recv_one() - receive a message and at most one descriptor with it
 * @fd:		the socket
 * @buf:	where the message goes
 * @len:	its size; a message of another size is refused
 * @flags:	MSG_DONTWAIT, or 0
 * @got:	set to the descriptor that came with it, or -1
 *
 * More descriptors than one, or a message of another size, are closed
 * and refused: neither side ever sends them.
 *
 * Return: the message's length, 0 on hang-up, -1 with errno set
 * (EBADMSG for a message refused; EMFILE for a message whose descriptor
 * could not be received, the receiver being out of them).
 */
static ssize_t recv_one(int fd, void *buf, size_t len, int flags, int *got)
{
	unsigned nfds;
	ssize_t n;

	*got = -1;
	/* A short message that also lost its descriptor fails as EMFILE,
	 * and its sequence number is answered: let what it did not fill
	 * be zeros, not what the stack held. */
	memset(buf, 0, len);
	n = fdpass_recv(fd, buf, len, got, 1, &nfds, flags);
	if (n < 0 && (errno == EMSGSIZE || errno == ETOOMANYREFS))
		errno = EBADMSG;
	if (n < 0 || (n > 0 && (size_t)n == len))
		return n;
	if (*got >= 0)
		close(*got);
	*got = -1;
	if (!n)
		return 0; /* an empty message is a hang-up to recvmsg() */
	errno = EBADMSG;
	return -1;
}

/**
 * send_one() - send a message and, if @fd is not -1, a descriptor with it
 * @sock:	the socket
 * @buf:	the message
 * @len:	its length
 * @fd:		the descriptor, or -1
 * @flags:	MSG_DONTWAIT, or 0
 *
 * Return: 0, or -1 with errno set.
 */
static int send_one(int sock, const void *buf, size_t len, int fd, int flags)
{
	return fdpass_send(sock, buf, len, &fd, fd >= 0, flags);
}

/**
 * close_all_but() - close every descriptor not in @keep
 * @keep:	the descriptors to keep
 * @n:		how many
 */
static void close_all_but(const int *keep, unsigned n)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	if (!d)
		return; /* no /proc: what the daemon opened stays open */
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name);
		bool kept = e->d_name[0] == '.' || fd == dirfd(d);

		for (unsigned i = 0; i < n && !kept; i++)
			kept = keep[i] == fd;
		if (!kept)
			close(fd);
	}
	closedir(d);
}

/**
 * helper_isolate() - make the forked process the helper: quiet, alone,
 *		      with only PRIVHELPER_CAPS, and bound to the daemon
 * @fds:	the helper's ends of the channels, kept open
 * @nchan:	how many
 * @parent:	the daemon's pid
 *
 * Exits the process on any failure: a helper half isolated serves no one.
 */
static void helper_isolate(const int *fds, unsigned nchan, pid_t parent)
{
	static const int quiet[] = { SIGHUP,  SIGINT,  SIGTERM,
				     SIGUSR1, SIGUSR2, SIGPIPE };
	int *keep = calloc(nchan + 4 + NETNS_MAX_PINS, sizeof(int)), nul;
	unsigned n;
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (size_t i = 0; i < sizeof(quiet) / sizeof(quiet[0]); i++)
		signal(quiet[i], SIG_IGN); /* the daemon's to act on */
	if (!keep)
		_exit(1);
	prctl(PR_SET_NAME, "smbsplice-priv", 0, 0, 0);
	/* 0, 1 and 2 stay taken, so that no socket of the helper's is
	 * written to by a stray line (options_parse() may log). */
	nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int fd = 0; fd < 3 && nul >= 0; fd++)
		if (fd != nul)
			dup2(nul, fd);
	memcpy(keep, fds, nchan * sizeof(int));
	keep[nchan] = netns_home();
	keep[nchan + 1] = 0;
	keep[nchan + 2] = 1;
	keep[nchan + 3] = 2;
	/* The namespaces the daemon resolved: the helper's reloads take
	 * the same ones, whatever their paths name by then (netns.c). */
	n = nchan + 4 + netns_pins(keep + nchan + 4, NETNS_MAX_PINS);
	close_all_but(keep, n);
	free(keep);
	/* After the drop: a change of credentials may clear it. */
	if (privs_restrict(PRIVHELPER_CAPS) ||
	    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) || getppid() != parent)
		_exit(1);
}

/**
 * helper_answer() - read one request from a channel and answer it
 * @chan:	the channel
 * @set:	the configurations requests are granted from
 * @argc:	the daemon's command line, for PRIV_OP_RELOAD
 * @argv:	its arguments
 * @inherited:	the daemon had sockets from socket activation
 *
 * Exits the process when the daemon is gone.
 */
static void helper_answer(int chan, struct allowed set[NSETS], int argc,
			  char **argv, bool inherited)
{
	struct ph_req r;
	struct ph_rep rep;
	int client, fd;
	ssize_t n;

	n = recv_one(chan, &r, sizeof(r), MSG_DONTWAIT, &client);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR &&
		       errno != EBADMSG && errno != EMFILE))
		_exit(0); /* the daemon is gone */
	if (n < 0 && errno != EBADMSG && errno != EMFILE)
		return;
	memset(&rep, 0, sizeof(rep));
	if (n < 0) {
		rep.seq = errno == EMFILE ? r.seq : 0;
		rep.err = errno == EMFILE ? EMFILE : EINVAL;
		fd = -1;
	} else {
		rep.seq = r.seq;
		fd = serve(set, argc, argv, inherited, &r, client, &rep);
	}
	if (client >= 0)
		close(client);
	/* A daemon that does not read loses the reply. */
	send_one(chan, &rep, sizeof(rep), fd, MSG_DONTWAIT);
	if (fd >= 0)
		close(fd);
}

/**
 * helper_main() - the helper process, from fork() to its end
 * @cfg:	the daemon's configuration at start (the helper's copy)
 * @argc:	the daemon's command line, for PRIV_OP_RELOAD
 * @argv:	its arguments
 * @inherited:	the daemon had sockets from socket activation
 * @fds:	the helper's ends of the channels
 * @nchan:	how many
 * @parent:	the daemon's pid
 */
static void __attribute__((noreturn))
helper_main(const struct config *cfg, int argc, char **argv, bool inherited,
	    int *fds, unsigned nchan, pid_t parent)
{
	struct allowed set[NSETS] = { { 0 } };
	struct pollfd *p = calloc(nchan, sizeof(*p));
	char why[256];

	helper_isolate(fds, nchan, parent);
	if (!p)
		_exit(1);
	set[SET_RUNNING].cfg = malloc(sizeof(*cfg));
	if (!set[SET_RUNNING].cfg)
		_exit(1);
	memcpy(set[SET_RUNNING].cfg, cfg, sizeof(*cfg));
	if (privgrant_open(&set[SET_RUNNING], why, sizeof(why)))
		_exit(1); /* the daemon opened them a moment ago */
	for (unsigned i = 0; i < nchan; i++)
		p[i] = (struct pollfd){ fds[i], POLLIN, 0 };
	for (;;) {
		if (poll(p, nchan, -1) < 0) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		for (unsigned i = 0; i < nchan; i++)
			if (p[i].revents)
				helper_answer(fds[i], set, argc, argv,
					      inherited);
	}
}

/* ---- the daemon's side -------------------------------------------------- */

/**
 * privhelper_start() - fork the helper, before the daemon gives up root
 * @ph:		filled in
 * @cfg:	the configuration in force, which the helper starts with
 * @argc:	the command line, which the helper reads again on a reload
 * @argv:	its arguments
 * @inherited:	listening sockets came from socket activation
 * @nchan:	channels: 1 for the main thread + one per worker
 * @err:	buffer for one line saying what failed
 * @errlen:	its size
 *
 * Call it while the process is single-threaded.
 *
 * Return: 0, or -1 with @err set.
 */
int privhelper_start(struct privhelper *ph, const struct config *cfg, int argc,
		     char **argv, bool inherited, unsigned nchan, char *err,
		     size_t errlen)
{
	struct timeval tmo = { REPLY_TIMEOUT_MS / 1000,
			       REPLY_TIMEOUT_MS % 1000 * 1000 };
	int *theirs = calloc(nchan, sizeof(int)), sv[2];
	pid_t parent = getpid(), pid;
	unsigned i;

	*ph = (struct privhelper){ .nchan = nchan };
	ph->fds = calloc(nchan, sizeof(int));
	ph->seq = calloc(nchan, sizeof(unsigned));
	if (!theirs || !ph->fds || !ph->seq) {
		snprintf(err, errlen,
			 "out of memory for the privileged helper");
		goto fail;
	}
	for (i = 0; i < nchan; i++)
		ph->fds[i] = theirs[i] = -1;
	for (i = 0; i < nchan; i++) {
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
			snprintf(
				err, errlen,
				"cannot make the privileged helper's channel: %s",
				strerror(errno));
			goto fail;
		}
		setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo));
		setsockopt(sv[0], SOL_SOCKET, SO_SNDTIMEO, &tmo, sizeof(tmo));
		ph->fds[i] = sv[0];
		theirs[i] = sv[1];
	}
	pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "cannot fork the privileged helper: %s",
			 strerror(errno));
		goto fail;
	}
	if (!pid)
		helper_main(cfg, argc, argv, inherited, theirs, nchan, parent);
	ph->pid = pid;
	for (i = 0; i < nchan; i++)
		close(theirs[i]);
	free(theirs);
	return 0;
fail:
	for (i = 0; theirs && ph->fds && i < nchan; i++)
		if (ph->fds[i] >= 0) {
			close(ph->fds[i]);
			close(theirs[i]);
		}
	free(theirs);
	free(ph->fds);
	free(ph->seq);
	*ph = (struct privhelper){ 0 };
	return -1;
}

/**
 * helper_gone() - the helper hung up: say so once, and reap it
 * @ph:	the helper
 */
static void helper_gone(struct privhelper *ph)
{
	int status;

	if (__atomic_exchange_n(&ph->dead, true, __ATOMIC_ACQ_REL))
		return;
	waitpid(ph->pid, &status, WNOHANG);
	log_err("the privileged helper (pid %d) is gone: new connections that need it (--transparent, a backend in another namespace) are reset, and a reload cannot add listeners; restart smbsplice",
		(int)ph->pid);
}

/**
 * ask() - one request and its reply
 * @ph:		the helper
 * @chan:	the calling thread's channel
 * @r:		the request; its number is set here
 * @with:	a descriptor to send along, or -1
 * @rep:	the reply
 *
 * Return: the descriptor that came with the reply, or -1 with errno set
 * (the reply's errno; ETIMEDOUT; EOWNERDEAD once the helper is gone).
 */
static int ask(struct privhelper *ph, unsigned chan, struct ph_req *r, int with,
	       struct ph_rep *rep)
{
	int fd = ph->fds[chan], got;
	ssize_t n;

	if (__atomic_load_n(&ph->dead, __ATOMIC_ACQUIRE))
		goto dead;
	r->seq = ++ph->seq[chan];
	while (send_one(fd, r, sizeof(*r), with, 0))
		if (errno != EINTR)
			goto gone;
	for (;;) {
		n = recv_one(fd, rep, sizeof(*rep), 0, &got);
		if (n == 0)
			goto gone;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			errno = ETIMEDOUT;
			return -1;
		}
		if (n < 0 && errno == EMFILE && rep->seq == r->seq)
			return -1; /* the socket came, but found no slot */
		if (n < 0 && errno != EBADMSG && errno != EMFILE)
			goto gone;
		if (n < 0 || rep->seq != r->seq) { /* a late reply: drop it */
			if (got >= 0)
				close(got);
			continue;
		}
		if (rep->err) {
			if (got >= 0)
				close(got);
			errno = rep->err;
			return -1;
		}
		/* PRIV_OP_RELOAD: a reply with no descriptor is a yes */
		errno = 0;
		return got;
	}
gone:
	helper_gone(ph);
dead:
	errno = EOWNERDEAD;
	return -1;
}

/**
 * privhelper_backend() - a backend socket from the helper
 * @ph:		the helper
 * @chan:	the calling thread's channel
 * @listener:	the name of the listener it is for
 * @netns:	the namespace's path as configured, "" for the process's own
 * @family:	the backend's address family
 * @mptcp:	Multipath TCP
 * @client:	with --transparent, the client's socket, whose address the
 *		socket is bound to; -1 otherwise
 *
 * Return: a non-blocking socket, or -1 with errno set (EPERM: the
 * configuration the helper read allows no such socket, or @client is not
 * a client that listener accepted).
 */
int privhelper_backend(struct privhelper *ph, unsigned chan,
		       const char *listener, const char *netns, int family,
		       bool mptcp, int client)
{
	struct ph_req r = { .op = PRIV_OP_BACKEND,
			    .family = family,
			    .mptcp = mptcp,
			    .transparent = client >= 0 };
	struct ph_rep rep;

	snprintf(r.listener, sizeof(r.listener), "%s", listener);
	snprintf(r.netns, sizeof(r.netns), "%s", netns);
	return ask(ph, chan, &r, client, &rep);
}

/**
 * privhelper_listen() - a listening socket from the helper, made by root
 * @ph:		the helper
 * @chan:	the calling thread's channel
 * @netns:	the listen namespace's path as configured, or ""
 * @sa:		the address, exactly as configured
 * @len:	its length
 * @mptcp:	Multipath TCP
 *
 * Return: the socket, or -1 with errno set.
 */
int privhelper_listen(struct privhelper *ph, unsigned chan, const char *netns,
		      const struct sockaddr *sa, socklen_t len, bool mptcp)
{
	struct ph_req r = { .op = PRIV_OP_LISTEN, .mptcp = mptcp };
	struct ph_rep rep;

	if (len > sizeof(r.addr)) {
		errno = EINVAL;
		return -1;
	}
	snprintf(r.netns, sizeof(r.netns), "%s", netns);
	memcpy(&r.addr, sa, len);
	r.addrlen = len;
	return ask(ph, chan, &r, -1, &rep);
}

/**
 * privhelper_reload() - have the helper read the configuration again
 * @ph:		the helper
 * @err:	buffer for one line saying why it refused
 * @errlen:	its size
 *
 * From the main thread (channel 0), before the daemon applies the file,
 * so that the new listeners' requests are granted.
 *
 * Return: 0, or -1 with @err set.
 */
int privhelper_reload(struct privhelper *ph, char *err, size_t errlen)
{
	struct ph_req r = { .op = PRIV_OP_RELOAD };
	struct ph_rep rep = { 0 };

	if (ask(ph, 0, &r, -1, &rep) >= 0 || !errno)
		return 0;
	snprintf(err, errlen, "the privileged helper %s: %s%s",
		 *rep.msg ? "refused the file" : "did not read the file",
		 *rep.msg ? rep.msg : strerror(errno),
		 *rep.msg ? "" : privhelper_hint(errno));
	return -1;
}

/**
 * tell() - a request with no descriptor either way, its failure logged
 * @ph:		the helper
 * @op:		PRIV_OP_COMMIT or PRIV_OP_ABORT
 * @what:	what the helper then did not do, for the line
 */
static void tell(struct privhelper *ph, enum priv_op op, const char *what)
{
	struct ph_req r = { .op = op };
	struct ph_rep rep = { 0 };

	if (ask(ph, 0, &r, -1, &rep) < 0 && errno)
		log_warn("the privileged helper did not %s: %s%s", what,
			 strerror(errno), privhelper_hint(errno));
}

/**
 * privhelper_commit() - tell the helper the file it read last was applied
 * @ph:	the helper
 *
 * From the main thread. A helper that does not hear it keeps granting
 * from the configuration before, and the candidate: one line says so.
 */
void privhelper_commit(struct privhelper *ph)
{
	tell(ph, PRIV_OP_COMMIT, "take the new configuration");
}

/**
 * privhelper_abort() - tell the helper the file it read last was refused
 * @ph:	the helper
 *
 * From the main thread, when the daemon refuses a reload the helper
 * accepted: the candidate is granted from no more.
 */
void privhelper_abort(struct privhelper *ph)
{
	tell(ph, PRIV_OP_ABORT, "drop the refused configuration");
}

/**
 * privhelper_hint() - what to add to a line about a helper's errno
 * @err:	the errno
 *
 * Return: the hint, or "".
 */
const char *privhelper_hint(int err)
{
	return err == EPERM
		       ? " (the privileged helper found no such socket in the configuration it read)"
	       : err == EOWNERDEAD
		       ? " (the privileged helper is gone; restart smbsplice)"
		       : "";
}

/**
 * privhelper_stop() - close the channels and wait for the helper to end
 * @ph:	the helper, or one never started (@fds NULL)
 *
 * Call it once no worker runs.
 */
void privhelper_stop(struct privhelper *ph)
{
	if (!ph->fds)
		return;
	for (unsigned i = 0; i < ph->nchan; i++)
		close(ph->fds[i]);
	if (!ph->dead)
		waitpid(ph->pid, NULL, 0);
	free(ph->fds);
	free(ph->seq);
	*ph = (struct privhelper){ 0 };
}
