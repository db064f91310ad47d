// SPDX-License-Identifier: GPL-2.0-or-later
/* test_hostile.c - a compromised daemon against the real privileged helper
 * and the real launcher (OpenSSH regress style)
 *
 * The daemon under --user may run code of an attacker's (a parser bug):
 * it then sends the helper, smbsplice-priv, and the launcher whatever it
 * likes on the descriptors it holds. This test plays that daemon. It
 * starts the real helper with privhelper_start() on a real configuration
 * (listeners with --transparent, a backend namespace and a client
 * namespace it makes with `ip netns add`, 192.0.2.0/24 and 2001:db8::/32
 * inside them, loopback outside) and writes raw frames on the channels:
 * wrong sizes, unknown opcodes, strings without a NUL, listeners and
 * namespaces not configured, other families and MPTCP settings,
 * transparent where it is not configured, listen addresses off by port,
 * address or family, SCM_RIGHTS with 0, 2 or many descriptors, descriptors
 * that are no client (a pipe, a file, a directory, a connected UDP socket,
 * a listening one, one of another port or namespace), COMMIT and ABORT
 * with no RELOAD, and a storm of RELOADs. After each refusal the helper
 * must still answer a legitimate request correctly, hold no descriptor
 * more than before (/proc/PID/fd), and every socket it ever returns must
 * be no more than the configuration names: family, IP_TRANSPARENT, bound
 * address, namespace (SIOCGSKNS).
 *
 * The launcher, likewise: malformed requests, every wrong kind of
 * descriptor 3, requests that try to name another binary, repeated
 * requests while a child runs; each refused with the launcher still up,
 * and nothing run but the binary and arguments it was given at start.
 *
 * The group "closed holes" holds the cases issue 28 (items 2 and 3) found
 * let through before: a client socket the daemon forged itself (bound to
 * the listener's port, connected to a host X, for which the helper must
 * not return a transparent socket bound to X), a listener from socket
 * activation, which had no check, and a namespace named by PID that, at a
 * reload, names another namespace. Needs root: skipped otherwise.
 *
 * A frame of no bytes is, to recvmsg(), what a hang-up is: the helper and
 * the launcher both end on it today (status 0), as on a hang-up, which
 * the daemon can cause anyway by closing its end; the test accepts that,
 * or a refusal. HOSTILE_FILTER=PATTERN runs only the tests whose names
 * match (cmocka's * and ?), e.g. HOSTILE_FILTER='test_forged*'.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "common/fdpass.h"
#include "handover/exesafe.h"
#include "handover/launcher.h"
#include "conf/options.h"
#include "priv/privgrant.h"
#include "priv/privhelper.h"
#include "priv/privs.h"
#include "io/sock.h"
#include "testnet.h"

#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262
#endif

/* How long a reply may take before the helper counts as hung. */
#define REPLY_MS 3000
/* The whole program's bound: a hang fails it, namespaces still go. */
#define WATCHDOG_S 240

/* The listeners of the main configuration, by index in cfg.ls. */
enum { L_FRONT, L_PLAIN, L_INNER };

static char dir[] = "/tmp/test_hostile.XXXXXX", conf[64];
static char ns_be_name[32], ns_cl_name[32], be_path[64], cl_path[64];
static int ns_home = -1, ns_be = -1, ns_cl = -1;
static struct config cfg;
static struct privhelper ph;
static uint32_t seq = 1000;
static int helper_fds; /* /proc/<helper>/fd entries once it settled */
static int held[CONFIG_MAX_LISTENERS]; /* the daemon's listening sockets */

/* ---- namespaces, and their removal whatever happens ---------------------- */

/**
 * run() - run a shell command, quietly
 * @fmt:	printf() format of the command
 *
 * Return: its exit status (as system() gives it).
 */
static int __attribute__((format(printf, 1, 2))) run(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(cmd, sizeof(cmd) - 16, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(cmd) - 16)
		return -1;
	strcat(cmd, " >/dev/null 2>&1");
	return system(cmd);
}

/**
 * ns_cleanup() - delete the namespaces and the directory this test made
 *
 * Safe to call more than once, from atexit() and the watchdog alike.
 */
static void ns_cleanup(void)
{
	if (*ns_be_name)
		run("ip netns del %s", ns_be_name);
	if (*ns_cl_name)
		run("ip netns del %s", ns_cl_name);
	*ns_be_name = *ns_cl_name = '\0';
	if (*conf) {
		run("rm -rf %s", dir);
		*conf = '\0';
	}
}

/**
 * watchdog() - SIGALRM (the test hung), SIGTERM, SIGINT or SIGHUP (it is
 *		stopped): remove the namespaces, and fail
 * @sig:	the signal
 */
static void watchdog(int sig)
{
	static const char msg[] = "test_hostile: a hang, or stopped\n";

	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(98);
	ns_cleanup();
	_exit(sig == SIGALRM ? 99 : 128 + sig);
}

/**
 * open_ns() - open a namespace's file
 * @path:	its path
 *
 * Return: the descriptor (the test fails otherwise).
 */
static int open_ns(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		fail_msg("%s: %s", path, strerror(errno));
	return fd;
}

/**
 * ns_setup() - the backend and client namespaces, with lo up and
 *		documentation addresses on it
 *
 * Return: 0, or -1 (with a line saying which command failed).
 */
static int ns_setup(void)
{
	static const char *const be_addrs[] = { "192.0.2.1/24",
						"2001:db8::1/64 nodad" };
	static const char *const cl_addrs[] = { "192.0.2.10/24",
						"192.0.2.20/24",
						"192.0.2.99/24" };

	snprintf(ns_be_name, sizeof(ns_be_name), "hostile-be-%d", getpid());
	snprintf(ns_cl_name, sizeof(ns_cl_name), "hostile-cl-%d", getpid());
	snprintf(be_path, sizeof(be_path), "/run/netns/%s", ns_be_name);
	snprintf(cl_path, sizeof(cl_path), "/run/netns/%s", ns_cl_name);
	if (run("ip netns add %s", ns_be_name) ||
	    run("ip netns add %s", ns_cl_name) ||
	    run("ip -n %s link set lo up", ns_be_name) ||
	    run("ip -n %s link set lo up", ns_cl_name)) {
		printf("cannot make the namespaces (ip netns add)\n");
		return -1;
	}
	for (size_t i = 0; i < sizeof(be_addrs) / sizeof(be_addrs[0]); i++)
		if (run("ip -n %s addr add %s dev lo", ns_be_name, be_addrs[i]))
			return -1;
	for (size_t i = 0; i < sizeof(cl_addrs) / sizeof(cl_addrs[0]); i++)
		if (run("ip -n %s addr add %s dev lo", ns_cl_name, cl_addrs[i]))
			return -1;
	return 0;
}

/**
 * sock_in() - a socket made inside a namespace
 * @ns:		the namespace
 * @family:	its family
 * @type:	its type
 *
 * Return: the socket (the test fails otherwise); the test is back home.
 */
static int sock_in(int ns, int family, int type)
{
	int fd, e, back;

	if (setns(ns, CLONE_NEWNET))
		fail_msg("setns: %s", strerror(errno));
	fd = socket(family, type | SOCK_CLOEXEC, 0);
	e = errno;
	back = setns(ns_home, CLONE_NEWNET);
	assert_int_equal(back, 0);
	if (fd < 0)
		fail_msg("socket(%d, %d): %s", family, type, strerror(e));
	return fd;
}

/**
 * ino_of() - the inode of a namespace descriptor
 * @fd:	the descriptor
 *
 * Return: its inode number.
 */
static ino_t ino_of(int fd)
{
	struct stat st;

	assert_int_equal(fstat(fd, &st), 0);
	return st.st_ino;
}

/**
 * sock_ns() - the namespace a socket lives in (SIOCGSKNS)
 * @fd:	the socket
 *
 * Return: its inode number.
 */
static ino_t sock_ns(int fd)
{
	int ns = ioctl(fd, SIOCGSKNS);
	ino_t ino;

	if (ns < 0)
		fail_msg("SIOCGSKNS: %s", strerror(errno));
	ino = ino_of(ns);
	close(ns);
	return ino;
}

/**
 * fd_count() - how many descriptors a process holds
 * @pid:	the process
 *
 * Return: the number of entries in /proc/@pid/fd.
 */
static int fd_count(pid_t pid)
{
	char path[64];
	struct dirent *e;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		fail_msg("%s: %s", path, strerror(errno));
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/**
 * fd_list() - print what a process's descriptors are, for a failure's log
 * @pid:	the process
 */
static void fd_list(pid_t pid)
{
	char path[300], target[256];
	struct dirent *e;
	DIR *d;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/fd/%s", (int)pid,
			 e->d_name);
		n = readlink(path, target, sizeof(target) - 1);
		target[n > 0 ? n : 0] = '\0';
		printf("  pid %d fd %s -> %s\n", (int)pid, e->d_name, target);
	}
	if (d)
		closedir(d);
}

/**
 * sa_make() - a socket address from text
 * @ss:		filled in
 * @ip:		an IPv4 or IPv6 address
 * @port:	the port, host order
 *
 * Return: its length.
 */
static socklen_t sa_make(struct sockaddr_storage *ss, const char *ip, int port)
{
	struct sockaddr_in *a = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *b = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, ip, &a->sin_addr) == 1) {
		a->sin_family = AF_INET;
		a->sin_port = htons(port);
		return sizeof(*a);
	}
	assert_int_equal(inet_pton(AF_INET6, ip, &b->sin6_addr), 1);
	b->sin6_family = AF_INET6;
	b->sin6_port = htons(port);
	return sizeof(*b);
}

/**
 * sa_port() - the port of a socket address
 * @ss:	the address
 *
 * Return: the port, host order.
 */
static int sa_port(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET
		       ? ntohs(((const struct sockaddr_in *)ss)->sin_port)
		       : ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
}

/**
 * same_host() - do two socket addresses name the same host (ports aside)
 * @a:	one
 * @b:	the other
 *
 * Return: true if they do.
 */
static bool same_host(const struct sockaddr_storage *a,
		      const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return IN6_ARE_ADDR_EQUAL(&((const struct sockaddr_in6 *)a)->sin6_addr,
				  &((const struct sockaddr_in6 *)b)->sin6_addr);
}

/**
 * sock_int() - one int socket option
 * @fd:		the socket
 * @level:	its level
 * @name:	its name
 *
 * Return: its value (the test fails if it cannot be read).
 */
static int sock_int(int fd, int level, int name)
{
	socklen_t len = sizeof(int);
	int v = 0;

	if (getsockopt(fd, level, name, &v, &len))
		fail_msg("getsockopt(%d, %d): %s", level, name,
			 strerror(errno));
	return v;
}

/* ---- what the helper may hand out --------------------------------------- */

/**
 * transparent_of() - is a socket IP_TRANSPARENT (or IPV6_TRANSPARENT)
 * @fd:		the socket
 * @family:	its family
 *
 * Return: true if it is.
 */
static bool transparent_of(int fd, int family)
{
	return family == AF_INET
		       ? sock_int(fd, IPPROTO_IP, IP_TRANSPARENT) != 0
		       : sock_int(fd, IPPROTO_IPV6, IPV6_TRANSPARENT) != 0;
}

/**
 * assert_backend() - a backend socket is no more than allowed
 * @fd:		the socket the helper returned
 * @family:	the family the configuration names
 * @transparent: whether the listener is --transparent and asked for it
 * @bound:	the client's address it must be bound to, or NULL (unbound)
 * @ns:		the backend namespace's inode
 */
static void assert_backend(int fd, int family, bool transparent,
			   const struct sockaddr_storage *bound, ino_t ns)
{
	struct sockaddr_storage self, none;
	socklen_t len = sizeof(self);

	assert_int_equal(sock_int(fd, SOL_SOCKET, SO_DOMAIN), family);
	assert_int_equal(sock_int(fd, SOL_SOCKET, SO_TYPE), SOCK_STREAM);
	assert_int_equal(sock_int(fd, SOL_SOCKET, SO_PROTOCOL), IPPROTO_TCP);
	assert_int_equal(sock_int(fd, SOL_SOCKET, SO_ACCEPTCONN), 0);
	assert_int_equal(transparent_of(fd, family), transparent);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&self, &len), 0);
	if (bound) {
		assert_true(same_host(&self, bound));
	} else {
		sa_make(&none, family == AF_INET ? "0.0.0.0" : "::", 0);
		assert_true(same_host(&self, &none));
		assert_int_equal(sa_port(&self), 0);
	}
	if (sock_ns(fd) != ns)
		fail_msg("a backend socket in namespace %lu, not %lu",
			 (unsigned long)sock_ns(fd), (unsigned long)ns);
}

/**
 * assert_listener() - a listening socket is exactly the configured one
 * @fd:	the socket the helper returned
 * @lo:	the listener it was asked for
 * @ns:	its client namespace's inode
 */
static void assert_listener(int fd, const struct listen_opts *lo, ino_t ns)
{
	struct sockaddr_storage self;
	socklen_t len = sizeof(self);
	int family = lo->listen.addr.ss_family;

	assert_int_equal(sock_int(fd, SOL_SOCKET, SO_DOMAIN), family);
	assert_int_equal(sock_int(fd, SOL_SOCKET, SO_ACCEPTCONN), 1);
	assert_int_equal(sock_int(fd, SOL_SOCKET, SO_REUSEPORT), 1);
	assert_false(transparent_of(fd, family));
	assert_int_equal(getsockname(fd, (struct sockaddr *)&self, &len), 0);
	assert_int_equal(len, lo->listen.len);
	assert_true(same_host(&self, &lo->listen.addr));
	assert_int_equal(sa_port(&self), sa_port(&lo->listen.addr));
	assert_int_equal(sock_ns(fd), ns);
}

/* ---- the daemon's side of the wire, as an attacker writes it ------------- */

/**
 * send_raw() - one frame on a channel, with descriptors
 * @sock:	the channel (or the launcher's socket)
 * @buf:	the frame
 * @len:	its length (any: 0, short, long)
 * @fds:	descriptors to send with it, or NULL
 * @nfds:	how many (at most 64)
 */
static void send_raw(int sock, const void *buf, size_t len, const int *fds,
		     int nfds)
{
	assert_true(nfds >= 0 && nfds <= 64);
	if (fdpass_send(sock, buf, len, fds, (unsigned)nfds, 0))
		fail_msg("sendmsg: %s", strerror(errno));
}

/**
 * recv_raw() - one frame, within REPLY_MS, and at most one descriptor
 * @sock:	the socket
 * @buf:	where it goes
 * @len:	its size
 * @fd:		set to the descriptor that came, or -1
 *
 * A peer that does not answer in time, hangs up, or sends more than one
 * descriptor or a frame over @len fails the test.
 *
 * Return: the frame's length.
 */
static ssize_t recv_raw(int sock, void *buf, size_t len, int *fd)
{
	struct pollfd p = { sock, POLLIN, 0 };
	unsigned nfds;
	ssize_t n;

	*fd = -1;
	if (poll(&p, 1, REPLY_MS) != 1)
		fail_msg("no answer within %d ms", REPLY_MS);
	n = fdpass_recv(sock, buf, len, fd, 1, &nfds, MSG_DONTWAIT);
	if (n < 0)
		fail_msg("a bad frame (%s)", strerror(errno));
	if (n == 0 && !nfds)
		fail_msg("the peer hung up");
	return n;
}

/**
 * sync_helper() - wait until the helper finished with the request before
 *
 * It closes the descriptor it granted after sending it: once it answered
 * one more frame (a byte: EINVAL, nothing changed), that is done.
 */
static void sync_helper(void)
{
	struct ph_rep rep;
	int fd;

	send_raw(ph.fds[0], "?", 1, NULL, 0);
	assert_int_equal(recv_raw(ph.fds[0], &rep, sizeof(rep), &fd),
			 sizeof(rep));
	assert_int_equal(fd, -1);
	assert_int_equal(rep.err, EINVAL);
}

/**
 * accept_within() - accept a connection that is there, or fail
 * @l:	the listening socket
 *
 * A listener that is not the one the connection went to (a helper that
 * keeps its own in the SO_REUSEPORT group) fails the test, not hangs it.
 *
 * Return: the accepted socket.
 */
static int accept_within(int l)
{
	struct pollfd p = { l, POLLIN, 0 };
	int s;

	if (poll(&p, 1, REPLY_MS) != 1)
		fail_msg("no connection to accept within %d ms", REPLY_MS);
	s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	assert_true(s >= 0);
	return s;
}

/**
 * ask_raw() - a frame to the helper, and its reply
 * @chan:	the channel
 * @buf:	the frame (a struct ph_req, or anything)
 * @len:	its length
 * @fds:	descriptors sent along, or NULL
 * @nfds:	how many
 * @rep:	the reply
 *
 * Return: the descriptor that came with the reply, or -1.
 */
static int ask_raw(unsigned chan, const void *buf, size_t len, const int *fds,
		   int nfds, struct ph_rep *rep)
{
	int fd;

	assert_true(chan < ph.nchan);
	send_raw(ph.fds[chan], buf, len, fds, nfds);
	assert_int_equal(recv_raw(ph.fds[chan], rep, sizeof(*rep), &fd),
			 sizeof(*rep));
	if (fd >= 0 && rep->err)
		fail_msg("a descriptor came with errno %d", rep->err);
	/* A listening socket granted: a helper may keep its own copy (of
	 * what the configuration names); what it holds is counted anew. */
	if (fd >= 0 && len == sizeof(struct ph_req) &&
	    ((const struct ph_req *)buf)->op == PRIV_OP_LISTEN) {
		sync_helper();
		helper_fds = fd_count(ph.pid);
	}
	return fd;
}

/**
 * req() - a well-formed request, numbered
 * @op:		its operation
 * @listener:	the listener it names, or NULL
 * @netns:	the namespace it names
 * @family:	the family (PRIV_OP_BACKEND)
 *
 * Return: the request.
 */
static struct ph_req req(uint32_t op, const char *listener, const char *netns,
			 int family)
{
	struct ph_req r = { .seq = ++seq, .op = op, .family = family };

	snprintf(r.listener, sizeof(r.listener), "%s",
		 listener ? listener : "");
	snprintf(r.netns, sizeof(r.netns), "%s", netns);
	return r;
}

/**
 * listen_req() - a PRIV_OP_LISTEN for what a listener of @cfg names
 * @lo:	the listener
 *
 * Return: the request, exactly as the daemon sends it.
 */
static struct ph_req listen_req(const struct listen_opts *lo)
{
	struct ph_req r = req(PRIV_OP_LISTEN, NULL, lo->netns[SIDE_CLIENT], 0);

	memcpy(&r.addr, &lo->listen.addr, lo->listen.len);
	r.addrlen = lo->listen.len;
	r.mptcp = lo->mptcp[SIDE_CLIENT];
	return r;
}

/* ---- the helper under test ----------------------------------------------- */

/**
 * start_helper() - write a configuration and start the real helper on it
 * @text:	the file's contents
 * @inherited:	as after socket activation (listeners without an address)
 *
 * Waits for the helper's first answer (a PRIV_OP_ABORT with nothing to abort),
 * so that it has closed what it inherited, then counts its descriptors.
 */
static void start_helper(const char *text, bool inherited)
{
	static char *argv[] = { "smbsplice", "--config", conf, NULL };
	struct ph_req r = req(PRIV_OP_ABORT, NULL, "", 0);
	struct ph_rep rep;
	char err[256];
	FILE *f = fopen(conf, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	for (int i = 0; i < CONFIG_MAX_LISTENERS; i++)
		held[i] = -1;
	memset(&cfg, 0, sizeof(cfg));
	if (options_parse(&cfg, 3, argv, inherited, err, sizeof(err)) != OPT_OK)
		fail_msg("the configuration: %s", err);
	if (privhelper_start(&ph, &cfg, 3, argv, inherited, 3, err,
			     sizeof(err)))
		fail_msg("privhelper_start: %s", err);
	assert_int_equal(ask_raw(0, &r, sizeof(r), NULL, 0, &rep), -1);
	assert_int_equal(rep.err, 0);
	helper_fds = fd_count(ph.pid);
}

/**
 * stop_helper() - close the listening sockets held, hang up on the
 *		   helper and reap it
 * @state:	unused (a cmocka teardown)
 *
 * Return: 0.
 */
static int stop_helper(void **state)
{
	(void)state;
	for (int i = 0; i < CONFIG_MAX_LISTENERS; i++)
		if (held[i] >= 0) {
			close(held[i]);
			held[i] = -1;
		}
	if (ph.fds)
		privhelper_stop(&ph);
	return 0;
}

/**
 * main_conf() - the main configuration's text
 * @buf:	where it goes
 * @len:	its size
 *
 * [front] on loopback, transparent, dials into the backend namespace;
 * [plain] on ::1, not transparent, IPv6 backend in that namespace;
 * [inner] listens in the client namespace on 192.0.2.10, transparent,
 * dials from here. Ports are free ones.
 */
static void main_conf(char *buf, size_t len)
{
	int p1 = free_port(), p2 = free_port();

	while (p2 == p1)
		p2 = free_port();
	snprintf(buf, len,
		 "[front]\nlisten = 127.0.0.1:%d\nbackend = 192.0.2.1:445\n"
		 "backend-netns = %s\ntransparent = yes\n"
		 "[plain]\nlisten = [::1]:%d\nbackend = [2001:db8::1]:445\n"
		 "backend-netns = %s\n"
		 "[inner]\nlisten-netns = %s\nlisten = 192.0.2.10:%d\n"
		 "backend = 127.0.0.1:9\ntransparent = yes\n",
		 p1, be_path, p2, be_path, cl_path, p1);
}

/**
 * setup_main() - the helper on the main configuration
 * @state:	unused (a cmocka setup)
 *
 * Return: 0.
 */
static int setup_main(void **state)
{
	char text[1024];

	(void)state;
	main_conf(text, sizeof(text));
	start_helper(text, false);
	assert_string_equal(cfg.ls[L_FRONT].name, "front");
	assert_string_equal(cfg.ls[L_INNER].name, "inner");
	return 0;
}

/**
 * probe() - a legitimate request, answered correctly: the helper serves
 *
 * Also: the helper holds no descriptor more than when it settled, so a
 * refusal before leaked none.
 */
static void probe(void)
{
	struct ph_req r = req(PRIV_OP_BACKEND, "front", be_path, AF_INET);
	struct ph_rep rep;
	int n, fd;

	sync_helper();
	n = fd_count(ph.pid);

	if (n != helper_fds) {
		fd_list(ph.pid);
		fail_msg("the helper holds %d descriptors, %d before", n,
			 helper_fds);
	}
	fd = ask_raw(2, &r, sizeof(r), NULL, 0, &rep);
	if (fd < 0)
		fail_msg("a legitimate request refused: %s", strerror(rep.err));
	assert_int_equal(rep.seq, r.seq);
	assert_backend(fd, AF_INET, false, NULL, ino_of(ns_be));
	close(fd);
}

/**
 * refuse() - send a frame, see it refused with @want, and the helper serve
 * @chan:	the channel
 * @buf:	the frame
 * @len:	its length
 * @fds:	descriptors sent along, or NULL
 * @nfds:	how many
 * @want:	the errno the reply must carry
 * @what:	what the frame is, for the failure's line
 */
static void refuse(unsigned chan, const void *buf, size_t len, const int *fds,
		   int nfds, int want, const char *what)
{
	struct ph_rep rep;
	int fd = ask_raw(chan, buf, len, fds, nfds, &rep);

	if (fd >= 0)
		fail_msg("%s: GRANTED a socket (family %d, transparent %d)",
			 what, sock_int(fd, SOL_SOCKET, SO_DOMAIN),
			 sock_int(fd, IPPROTO_IP, IP_TRANSPARENT));
	if (rep.err != want)
		fail_msg("%s: errno %d (%s), want %d", what, rep.err,
			 strerror(rep.err), want);
	/* A whole request's number comes back; a frame refused unread
	 * (a bad size, more than one descriptor) is answered as number 0. */
	if (len == sizeof(struct ph_req) && rep.seq)
		assert_int_equal(rep.seq, ((const struct ph_req *)buf)->seq);
	probe();
}

/**
 * refuse_req() - refuse() for a whole request
 * @r:		the request
 * @fd:		a descriptor sent along, or -1
 * @want:	the errno
 * @what:	what it is
 */
static void refuse_req(const struct ph_req *r, int fd, int want,
		       const char *what)
{
	refuse(1, r, sizeof(*r), &fd, fd >= 0, want, what);
}

/**
 * held_listener() - the daemon's listening socket of a listener
 * @lo:	the listener (in cfg)
 *
 * Asked of the helper once (a legitimate PRIV_OP_LISTEN), as the daemon does
 * at start, and held until drop_listener() or stop_helper().
 *
 * Return: the socket.
 */
static int held_listener(const struct listen_opts *lo)
{
	size_t i = (size_t)(lo - cfg.ls);
	struct ph_req r = listen_req(lo);
	struct ph_rep rep;
	int l;

	assert_true(i < cfg.nls);
	if (held[i] >= 0)
		return held[i];
	l = ask_raw(0, &r, sizeof(r), NULL, 0, &rep);
	if (l < 0)
		fail_msg("PRIV_OP_LISTEN for %s: %s", lo->name,
			 strerror(rep.err));
	assert_listener(l, lo,
			ino_of(*lo->netns[SIDE_CLIENT] ? ns_cl : ns_home));
	/* As dial_client_side() does for a transparent listener under
	 * --user: the helper's proof of each client is its saved SYN. */
	assert_int_equal(sock_set_save_syn(l, lo->transparent), 0);
	held[i] = l;
	return l;
}

/**
 * drop_listener() - the daemon closes its listening socket of a listener
 * @lo:	the listener
 *
 * Once the helper answered one more frame, it holds no copy of its own
 * (or, if it keeps one, the port stays taken).
 */
static void drop_listener(const struct listen_opts *lo)
{
	size_t i = (size_t)(lo - cfg.ls);

	if (held[i] >= 0)
		close(held[i]);
	held[i] = -1;
	sync_helper();
}

/**
 * client_of() - a client the daemon's listening socket accepted
 * @lo:		the listener (as in cfg)
 * @ns:		its client namespace
 * @from:	the client's address (port 0), or NULL for any
 * @c:		set to the client's end
 *
 * Return: the accepted socket.
 */
static int client_of(const struct listen_opts *lo, int ns, const char *from,
		     int *c)
{
	struct sockaddr_storage src;
	int l = held_listener(lo), family = lo->listen.addr.ss_family;

	*c = sock_in(ns, family, SOCK_STREAM);
	if (from)
		assert_int_equal(bind(*c, (struct sockaddr *)&src,
				      sa_make(&src, from, 0)),
				 0);
	if (connect(*c, (const struct sockaddr *)&lo->listen.addr,
		    lo->listen.len))
		fail_msg("connect to %s: %s", lo->listen.text, strerror(errno));
	return accept_within(l);
}

/**
 * transparent_req() - a transparent PRIV_OP_BACKEND as the daemon sends it
 * @lo:	the listener
 *
 * Return: the request.
 */
static struct ph_req transparent_req(const struct listen_opts *lo)
{
	struct ph_req r =
		req(PRIV_OP_BACKEND, lo->name, lo->netns[SIDE_BACKEND],
		    lo->backend[0].addr.ss_family);

	r.transparent = 1;
	r.mptcp = lo->mptcp[SIDE_BACKEND];
	return r;
}

/* ---- the main group: every case here passed before issue 28 too --------- */

/**
 * test_legitimate() - what the configuration names is granted, exactly
 * @state:	unused
 *
 * The control for every refusal below: each listener's listening socket,
 * each backend socket, and a transparent one bound to the address of a
 * client the helper's own listening socket accepted.
 */
static void test_legitimate(void **state)
{
	const struct listen_opts *ls = cfg.ls;
	struct sockaddr_storage want;
	struct ph_req r;
	struct ph_rep rep;
	int c, s, fd;

	(void)state;
	for (int i = L_FRONT; i <= L_PLAIN; i++) {
		r = req(PRIV_OP_BACKEND, ls[i].name, be_path,
			ls[i].backend[0].addr.ss_family);
		fd = ask_raw(1, &r, sizeof(r), NULL, 0, &rep);
		assert_true(fd >= 0);
		assert_backend(fd, r.family, false, NULL, ino_of(ns_be));
		close(fd);
	}
	s = client_of(&ls[L_FRONT], ns_home, "127.0.0.1", &c);
	r = transparent_req(&ls[L_FRONT]);
	fd = ask_raw(1, &r, sizeof(r), &s, 1, &rep);
	if (fd < 0)
		fail_msg("a client [front] accepted: %s", strerror(rep.err));
	sa_make(&want, "127.0.0.1", 0);
	assert_backend(fd, AF_INET, true, &want, ino_of(ns_be));
	close(fd);
	close(s);
	close(c);
	s = client_of(&ls[L_INNER], ns_cl, "192.0.2.20", &c);
	r = transparent_req(&ls[L_INNER]);
	fd = ask_raw(1, &r, sizeof(r), &s, 1, &rep);
	if (fd < 0)
		fail_msg("a client [inner] accepted: %s", strerror(rep.err));
	sa_make(&want, "192.0.2.20", 0);
	assert_backend(fd, AF_INET, true, &want, ino_of(ns_home));
	close(fd);
	close(s);
	close(c);
	probe();
}

/**
 * test_sizes() - frames shorter or longer than a request
 * @state:	unused
 *
 * Each is answered EINVAL (request number 0) and a descriptor that came
 * with one is closed. A zero-length frame: see test_zero_frame().
 */
static void test_sizes(void **state)
{
	static const size_t lens[] = { 1, 3, sizeof(struct ph_req) - 1,
				       sizeof(struct ph_req) + 1, 4096 };
	char buf[4096];
	struct ph_req r = req(PRIV_OP_BACKEND, "front", be_path, AF_INET);
	int p[2];

	(void)state;
	memset(buf, 0, sizeof(buf));
	memcpy(buf, &r, sizeof(r));
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		refuse(i % 3, buf, lens[i], NULL, 0, EINVAL, "a bad size");
		refuse(i % 3, buf, lens[i], p, 1, EINVAL,
		       "a bad size, with a descriptor");
	}
	close(p[0]);
	close(p[1]);
}

/**
 * test_opcodes() - unknown operations, and the daemon's replies sent back
 * @state:	unused
 */
static void test_opcodes(void **state)
{
	static const uint32_t ops[] = { 0, PRIV_OP_ABORT + 1, 99, 0x80000001u,
					0xffffffffu };
	struct ph_req r;
	int c, s;

	(void)state;
	s = client_of(&cfg.ls[L_FRONT], ns_home, NULL, &c);
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		r = transparent_req(&cfg.ls[L_FRONT]);
		r.op = ops[i];
		refuse_req(&r, -1, EINVAL, "an unknown operation");
		r.seq = ++seq;
		refuse_req(&r, s, EINVAL, "an unknown operation with a client");
	}
	close(s);
	close(c);
}

/**
 * test_strings() - strings with no NUL, address lengths out of range
 * @state:	unused
 */
static void test_strings(void **state)
{
	static const uint32_t lens[] = { sizeof(struct sockaddr_storage) + 1,
					 0x10000, 0xffffffffu };
	struct ph_req r;

	(void)state;
	r = req(PRIV_OP_BACKEND, "front", be_path, AF_INET);
	memset(r.listener, 'A', sizeof(r.listener));
	refuse_req(&r, -1, EINVAL, "a listener name with no NUL");
	r = req(PRIV_OP_BACKEND, "front", be_path, AF_INET);
	memset(r.netns, '/', sizeof(r.netns));
	refuse_req(&r, -1, EINVAL, "a namespace path with no NUL");
	r = listen_req(&cfg.ls[L_FRONT]);
	memset(r.netns, 'x', sizeof(r.netns));
	refuse_req(&r, -1, EINVAL, "PRIV_OP_LISTEN, a namespace with no NUL");
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		r = listen_req(&cfg.ls[L_FRONT]);
		r.addrlen = lens[i];
		refuse_req(&r, -1, EINVAL, "an address length past the field");
	}
	r = listen_req(&cfg.ls[L_FRONT]);
	r.addrlen = 0;
	refuse_req(&r, -1, EPERM, "an address length of 0");
}

/**
 * test_names() - listeners the configuration does not name
 * @state:	unused
 */
static void test_names(void **state)
{
	static const char *const names[] = { "nosuch", "",	 "FRONT",
					     "front ", " front", "fron" };
	struct ph_req r;

	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		r = req(PRIV_OP_BACKEND, names[i], be_path, AF_INET);
		refuse_req(&r, -1, EPERM, "a listener not configured");
	}
	/* [inner] dials from here: the backend namespace is not its. */
	r = req(PRIV_OP_BACKEND, "inner", be_path, AF_INET);
	refuse_req(&r, -1, EPERM, "another listener's namespace");
}

/**
 * own_netns() - a process in a network namespace of the daemon's making
 * @path:	set to /proc/PID/ns/net of it
 * @len:	its size
 *
 * Return: the process; the caller kills (SIGKILL) and reaps it.
 */
static pid_t own_netns(char *path, size_t len)
{
	int p[2];
	char b;
	pid_t pid;

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		if (unshare(CLONE_NEWNET) || write(p[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	assert_int_equal(read(p[0], &b, 1), 1);
	close(p[0]);
	snprintf(path, len, "/proc/%d/ns/net", (int)pid);
	return pid;
}

/**
 * test_netns() - namespaces the configuration does not name
 * @state:	unused
 *
 * The helper's own, init's, the client namespace, aliases of the
 * configured path (a trailing slash, "..", a symlink of the daemon's) and
 * a namespace the daemon made: each refused, for PRIV_OP_BACKEND and
 * PRIV_OP_LISTEN alike.
 */
static void test_netns(void **state)
{
	char own[64], link[96], alias[128], slash[80];
	const char *paths[] = { "",
				"/proc/self/ns/net",
				"/proc/1/ns/net",
				cl_path,
				slash,
				alias,
				link,
				own };
	struct ph_req r;
	pid_t pid = own_netns(own, sizeof(own));

	(void)state;
	snprintf(slash, sizeof(slash), "%s/", be_path);
	snprintf(alias, sizeof(alias), "/run/netns/../netns/%s", ns_be_name);
	snprintf(link, sizeof(link), "%s/ns", dir);
	assert_int_equal(symlink(be_path, link), 0);
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		r = req(PRIV_OP_BACKEND, "front", paths[i], AF_INET);
		refuse_req(&r, -1, EPERM, paths[i]);
		r = listen_req(&cfg.ls[L_INNER]);
		if (!strcmp(paths[i], cl_path))
			continue; /* that one is [inner]'s own */
		snprintf(r.netns, sizeof(r.netns), "%s", paths[i]);
		refuse_req(&r, -1, EPERM, paths[i]);
	}
	r = listen_req(&cfg.ls[L_FRONT]);
	snprintf(r.netns, sizeof(r.netns), "%s", cl_path);
	refuse_req(&r, -1, EPERM, "[front]'s address in the client namespace");
	unlink(link);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/**
 * test_families() - address families the listener's backends do not have
 * @state:	unused
 */
static void test_families(void **state)
{
	static const int fams[] = {
		AF_UNIX,   AF_PACKET, AF_NETLINK, AF_INET6,
		AF_UNSPEC, -1,	      12345,	  0x7fffffff
	};
	struct ph_req r;

	(void)state;
	for (size_t i = 0; i < sizeof(fams) / sizeof(fams[0]); i++) {
		r = req(PRIV_OP_BACKEND, "front", be_path, fams[i]);
		refuse_req(&r, -1, EPERM, "a family [front] has no backend of");
	}
	r = req(PRIV_OP_BACKEND, "plain", be_path, AF_INET);
	refuse_req(&r, -1, EPERM, "IPv4 for the IPv6-only [plain]");
}

/**
 * test_mptcp() - MPTCP where the configuration says TCP
 * @state:	unused
 */
static void test_mptcp(void **state)
{
	static const uint8_t on[] = { 1, 2, 255 };
	struct ph_req r;

	(void)state;
	for (size_t i = 0; i < sizeof(on) / sizeof(on[0]); i++) {
		r = req(PRIV_OP_BACKEND, "front", be_path, AF_INET);
		r.mptcp = on[i];
		refuse_req(&r, -1, EPERM, "a backend with MPTCP flipped");
		r = listen_req(&cfg.ls[L_FRONT]);
		r.mptcp = on[i];
		refuse_req(&r, -1, EPERM, "a listener with MPTCP flipped");
	}
}

/**
 * test_not_transparent() - transparent where the listener is not, and
 *			    transparent with no client socket
 * @state:	unused
 */
static void test_not_transparent(void **state)
{
	static const uint8_t on[] = { 1, 2, 255 };
	struct ph_req r;
	int c, s;

	(void)state;
	s = client_of(&cfg.ls[L_PLAIN], ns_home, "::1", &c);
	for (size_t i = 0; i < sizeof(on) / sizeof(on[0]); i++) {
		r = transparent_req(&cfg.ls[L_PLAIN]);
		r.transparent = on[i];
		refuse_req(&r, s, EPERM, "transparent for [plain]");
	}
	r = transparent_req(&cfg.ls[L_FRONT]);
	refuse_req(&r, -1, EINVAL, "transparent with no client socket");
	/* [plain]'s client lends [front] nothing (family, port). */
	r = transparent_req(&cfg.ls[L_FRONT]);
	refuse_req(&r, s, EPERM, "[plain]'s client for [front]");
	close(s);
	close(c);
}

/**
 * off_by() - [front]'s listen request with one thing changed
 * @what:	0 port+1, 1 port-1, 2 port 0, 3 127.0.0.2, 4 0.0.0.0,
 *		5 the family field AF_INET6, 6 ::ffff:127.0.0.1 (IPv6),
 *		7 sin_zero not zero, 8 length + 1, 9 the whole storage
 * @r:		set to the request
 */
static void off_by(int what, struct ph_req *r)
{
	struct sockaddr_in *a = (struct sockaddr_in *)&r->addr;
	int port;

	*r = listen_req(&cfg.ls[L_FRONT]);
	port = ntohs(a->sin_port);
	if (what == 0 || what == 1 || what == 2)
		a->sin_port = htons(what == 2 ? 0 : port + (what ? -1 : 1));
	else if (what == 3)
		inet_pton(AF_INET, "127.0.0.2", &a->sin_addr);
	else if (what == 4)
		a->sin_addr.s_addr = htonl(INADDR_ANY);
	else if (what == 5)
		a->sin_family = AF_INET6;
	else if (what == 6)
		r->addrlen = sa_make(&r->addr, "::ffff:127.0.0.1", port);
	else if (what == 7)
		a->sin_zero[3] = 1;
	else if (what == 8)
		r->addrlen++;
	else
		r->addrlen = sizeof(r->addr);
}

/**
 * test_listen_addrs() - listen addresses off by port, address or family
 * @state:	unused
 *
 * And [plain]'s ::1 with a scope or a flow label, [inner]'s address in
 * the namespace of the helper.
 */
static void test_listen_addrs(void **state)
{
	struct sockaddr_in6 *b;
	struct ph_req r;

	(void)state;
	for (int what = 0; what < 10; what++) {
		off_by(what, &r);
		refuse_req(&r, -1, EPERM, "a listen address off by one thing");
	}
	r = listen_req(&cfg.ls[L_PLAIN]);
	b = (struct sockaddr_in6 *)&r.addr;
	b->sin6_scope_id = 1;
	refuse_req(&r, -1, EPERM, "::1 with a scope id");
	r = listen_req(&cfg.ls[L_PLAIN]);
	b = (struct sockaddr_in6 *)&r.addr;
	b->sin6_flowinfo = htonl(1);
	refuse_req(&r, -1, EPERM, "::1 with a flow label");
	r = listen_req(&cfg.ls[L_INNER]);
	r.netns[0] = '\0';
	refuse_req(&r, -1, EPERM, "[inner]'s address at home");
}

/**
 * test_scm_rights() - 0, 2 and many descriptors, and one not asked for
 * @state:	unused
 *
 * Two or more are refused whole (EINVAL) and every one closed; one with a
 * request that needs none changes nothing of what is granted.
 */
static void test_scm_rights(void **state)
{
	struct ph_req r = transparent_req(&cfg.ls[L_FRONT]);
	struct ph_rep rep;
	int c[2], s[2], many[40], fd;

	(void)state;
	refuse(1, &r, sizeof(r), NULL, 0, EINVAL, "transparent, no descriptor");
	s[0] = client_of(&cfg.ls[L_FRONT], ns_home, NULL, &c[0]);
	s[1] = client_of(&cfg.ls[L_FRONT], ns_home, NULL, &c[1]);
	r.seq = ++seq;
	refuse(1, &r, sizeof(r), s, 2, EINVAL, "two clients");
	for (int i = 0; i < 40; i++)
		many[i] = s[i % 2];
	r.seq = ++seq;
	refuse(1, &r, sizeof(r), many, 40, EINVAL, "40 descriptors");
	r.seq = ++seq;
	refuse(0, &r, sizeof(r), many, 3, EINVAL, "3 descriptors");
	/* A client sent with a request that takes none: it is not used. */
	r = req(PRIV_OP_BACKEND, "front", be_path, AF_INET);
	fd = ask_raw(1, &r, sizeof(r), s, 1, &rep);
	assert_true(fd >= 0);
	assert_backend(fd, AF_INET, false, NULL, ino_of(ns_be));
	close(fd);
	r = listen_req(&cfg.ls[L_FRONT]);
	fd = ask_raw(1, &r, sizeof(r), s, 1, &rep);
	assert_true(fd >= 0);
	assert_listener(fd, &cfg.ls[L_FRONT], ino_of(ns_home));
	close(fd);
	probe();
	for (int i = 0; i < 2; i++) {
		close(s[i]);
		close(c[i]);
	}
}

/**
 * test_not_sockets() - descriptors that are no socket at all
 * @state:	unused
 *
 * A pipe's two ends, the configuration file, a directory, /dev/null, a
 * namespace: each refused as a transparent request's client.
 */
static void test_not_sockets(void **state)
{
	struct ph_req r;
	int p[2], fds[6];

	(void)state;
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	fds[0] = p[0];
	fds[1] = p[1];
	fds[2] = open(conf, O_RDONLY | O_CLOEXEC);
	fds[3] = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	fds[4] = open("/dev/null", O_RDWR | O_CLOEXEC);
	fds[5] = ns_be;
	for (int i = 0; i < 6; i++) {
		assert_true(fds[i] >= 0);
		r = transparent_req(&cfg.ls[L_FRONT]);
		refuse_req(&r, fds[i], EPERM, "a descriptor that is no socket");
	}
	for (int i = 0; i < 5; i++)
		close(fds[i]);
}

/**
 * wrong_ns_client() - a client accepted on [front]'s very address and
 *		       port, in the backend namespace
 * @l:	set to the listener
 * @c:	set to the client's end
 *
 * Return: the accepted socket.
 */
static int wrong_ns_client(int *l, int *c)
{
	const struct endpoint *at = &cfg.ls[L_FRONT].listen;

	*l = sock_in(ns_be, AF_INET, SOCK_STREAM);
	assert_int_equal(bind(*l, (const struct sockaddr *)&at->addr, at->len),
			 0);
	assert_int_equal(listen(*l, 4), 0);
	*c = sock_in(ns_be, AF_INET, SOCK_STREAM);
	assert_int_equal(
		connect(*c, (const struct sockaddr *)&at->addr, at->len), 0);
	return accept_within(*l);
}

/**
 * bound_to_front() - a socket of @type bound to [front]'s address
 * @type:	SOCK_STREAM or SOCK_DGRAM
 *
 * Return: the socket, or -1 if a TCP one cannot be bound there (the
 * helper holds the port).
 */
static int bound_to_front(int type)
{
	const struct endpoint *at = &cfg.ls[L_FRONT].listen;
	int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0), on = 1;

	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	if (bind(fd, (const struct sockaddr *)&at->addr, at->len)) {
		/* A helper that keeps [front]'s listening socket leaves the
		 * daemon no way to make one: nothing to refuse then. */
		if (errno != EADDRINUSE || type == SOCK_DGRAM)
			fail_msg("bind %s: %s", at->text, strerror(errno));
		printf("%s is held: no socket of the daemon's on it\n",
		       at->text);
		close(fd);
		return -1;
	}
	return fd;
}

/**
 * test_wrong_sockets() - sockets that are no client [front] accepted
 * @state:	unused
 *
 * A UDP socket on [front]'s port connect()ed elsewhere, a listening
 * socket and an unconnected one on [front]'s address, a client accepted
 * in the wrong namespace, the connecting end, one accepted on another
 * port, one reset by its peer, AF_UNIX and raw sockets, and [front]'s
 * client named as [inner]'s and the other way round.
 */
static void test_wrong_sockets(void **state)
{
	struct sockaddr_storage x;
	struct linger lg = { 1, 0 };
	struct ph_req r = transparent_req(&cfg.ls[L_FRONT]);
	int fds[12], n = 0, l, c, s, l2, c2, u[2], mine;
	struct sockaddr_in any = { .sin_family = AF_INET };

	(void)state;
	/* On [front]'s address, one at a time, once the daemon closed its
	 * listening socket: UDP connect()ed elsewhere, listening, bound. */
	drop_listener(&cfg.ls[L_FRONT]);
	for (; n < 3; n++) {
		fds[n] = bound_to_front(n ? SOCK_STREAM : SOCK_DGRAM);
		if (fds[n] < 0)
			continue;
		if (!n)
			assert_int_equal(connect(fds[n], (struct sockaddr *)&x,
						 sa_make(&x, "127.0.0.2", 9)),
					 0);
		if (n == 1)
			assert_int_equal(listen(fds[n], 1), 0);
		refuse_req(&r, fds[n], EPERM, "a socket on [front]'s address");
		r.seq = ++seq;
		close(fds[n]);
	}
	mine = client_of(&cfg.ls[L_FRONT], ns_home, NULL, &c2);
	n = 0;
	fds[n] = wrong_ns_client(&l, &c);
	fds[++n] = l;
	fds[++n] = c;
	fds[++n] = c2; /* the connecting end of a client of [front] */
	any.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	tcp_pair(any, &l2, &c, &s); /* accepted on another port */
	fds[++n] = s;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, u),
			 0);
	fds[++n] = u[0];
	fds[++n] = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_TCP);
	for (int i = 0; i <= n; i++) {
		r.seq = ++seq;
		refuse_req(&r, fds[i], EPERM,
			   "a socket [front] did not accept");
	}
	/* A client of [front] reset by its peer: CLOSE, no peer. */
	setsockopt(c2, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	for (int i = 0; i <= n; i++)
		close(fds[i]);
	usleep(20000);
	r.seq = ++seq;
	refuse_req(&r, mine, EPERM, "a client reset by its peer");
	close(mine);
	close(l2);
	close(c);
	close(u[1]);
}

/**
 * test_crossed_clients() - a client of one listener named as another's
 * @state:	unused
 */
static void test_crossed_clients(void **state)
{
	struct ph_req r;
	int c, s;

	(void)state;
	s = client_of(&cfg.ls[L_FRONT], ns_home, NULL, &c);
	r = transparent_req(&cfg.ls[L_INNER]);
	refuse_req(&r, s, EPERM, "[front]'s client as [inner]'s");
	close(s);
	close(c);
	s = client_of(&cfg.ls[L_INNER], ns_cl, "192.0.2.20", &c);
	r = transparent_req(&cfg.ls[L_FRONT]);
	refuse_req(&r, s, EPERM, "[inner]'s client as [front]'s");
	close(s);
	close(c);
}

/**
 * test_commit_abort() - a commit and an abort with no reload before
 * @state:	unused
 *
 * COMMIT has nothing to commit (EINVAL), ABORT nothing to drop (0); the
 * running configuration is granted from as before.
 */
static void test_commit_abort(void **state)
{
	struct ph_req r;
	struct ph_rep rep;
	int fd;

	(void)state;
	for (int i = 0; i < 3; i++) {
		r = req(PRIV_OP_COMMIT, NULL, "", 0);
		refuse(i, &r, sizeof(r), NULL, 0, EINVAL, "COMMIT, no RELOAD");
		r = req(PRIV_OP_ABORT, NULL, "", 0);
		refuse(i, &r, sizeof(r), NULL, 0, 0, "ABORT, no RELOAD");
	}
	r = listen_req(&cfg.ls[L_INNER]);
	fd = ask_raw(0, &r, sizeof(r), NULL, 0, &rep);
	assert_true(fd >= 0);
	assert_listener(fd, &cfg.ls[L_INNER], ino_of(ns_cl));
	close(fd);
}

/**
 * test_reload_storm() - 200 PRIV_OP_RELOADs, from every channel, in under 10 s
 * @state:	unused
 *
 * Each is answered (the file is unchanged: 0); a descriptor sent with one
 * is closed; after a PRIV_OP_ABORT the helper holds what it held before (the
 * candidates' namespaces closed), a PRIV_OP_COMMIT finds nothing to commit,
 * and it serves as before.
 */
static void test_reload_storm(void **state)
{
	struct timespec t0, t1;
	struct ph_req r;
	struct ph_rep rep;
	int p[2];

	(void)state;
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < 200; i++) {
		r = req(PRIV_OP_RELOAD, NULL, "", 0);
		assert_int_equal(ask_raw(i % 3, &r, sizeof(r), p, i % 2, &rep),
				 -1);
		assert_int_equal(rep.seq, r.seq);
		if (rep.err)
			fail_msg("reload %d: %s", i, rep.msg);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(t1.tv_sec - t0.tv_sec < 10);
	close(p[0]);
	close(p[1]);
	r = req(PRIV_OP_ABORT, NULL, "", 0);
	refuse(0, &r, sizeof(r), NULL, 0, 0, "ABORT after the storm");
	r = req(PRIV_OP_COMMIT, NULL, "", 0);
	refuse(0, &r, sizeof(r), NULL, 0, EINVAL, "COMMIT after ABORT");
}

/**
 * test_commit_storm() - 50 RELOAD and COMMIT pairs of the same file
 * @state:	unused
 *
 * The helper holds at most the configuration before's namespaces more
 * (three: [front]'s, [plain]'s and [inner]'s), however many commits.
 */
static void test_commit_storm(void **state)
{
	struct ph_req r;
	struct ph_rep rep;
	int base = helper_fds, n;

	(void)state;
	for (int i = 0; i < 50; i++) {
		r = req(i % 2 ? PRIV_OP_COMMIT : PRIV_OP_RELOAD, NULL, "", 0);
		assert_int_equal(ask_raw(i % 3, &r, sizeof(r), NULL, 0, &rep),
				 -1);
		assert_int_equal(rep.err, 0);
	}
	n = fd_count(ph.pid);
	if (n > base + 3)
		fail_msg("%d descriptors after 25 commits, %d before", n, base);
	helper_fds = n;
	probe();
}

/* ---- a zero-length frame ------------------------------------------------- */

/**
 * test_zero_frame() - a frame of no bytes on a worker's channel
 * @state:	unused
 *
 * recvmsg() gives 0 for it as for a hang-up, and today the helper ends
 * as on a hang-up: cleanly (status 0), granting nothing. The daemon can
 * end it as well by closing a channel, so this gives it nothing; a
 * helper that refuses the frame and serves on passes too.
 */
static void test_zero_frame(void **state)
{
	struct ph_rep rep;
	struct pollfd p = { ph.fds[2], POLLIN, 0 };
	int st = 0, fd = -1;
	pid_t got = 0;

	(void)state;
	send_raw(ph.fds[2], "", 0, NULL, 0);
	if (poll(&p, 1, REPLY_MS) == 1 &&
	    recv(ph.fds[2], &rep, sizeof(rep), MSG_PEEK | MSG_DONTWAIT) > 0) {
		assert_int_equal(recv_raw(ph.fds[2], &rep, sizeof(rep), &fd),
				 sizeof(rep));
		assert_int_equal(fd, -1);
		assert_int_not_equal(rep.err, 0);
		printf("zero-length frame: refused (%s), serving on\n",
		       strerror(rep.err));
		probe();
		return;
	}
	for (int i = 0; i < 300 && got == 0; i++) {
		got = waitpid(ph.pid, &st, WNOHANG);
		if (!got)
			usleep(10000);
	}
	assert_int_equal(got, ph.pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	ph.dead = true;
	printf("zero-length frame: the helper ended, status 0, as on a hang-up\n");
}

/* ---- closed holes: these failed before issue 28's items 2 and 3 --------- */

/**
 * forge() - the forged client: the daemon closes its copy of a listener,
 *	     binds its port itself, connects to a host X and sends that
 * @lo:		the listener (transparent, port >= 1024)
 * @ns:		its client namespace
 * @x_ip:	X, an address of that namespace
 *
 * The helper must not return an IP_TRANSPARENT socket bound to X. A
 * helper that keeps the port (the bind fails) has closed the hole too.
 */
static void forge(const struct listen_opts *lo, int ns, const char *x_ip)
{
	struct sockaddr_storage x, self;
	socklen_t len = sizeof(x);
	struct ph_req r;
	struct ph_rep rep;
	int xs, f, a, fd, on = 1;
	char text[INET6_ADDRSTRLEN];

	held_listener(lo);
	drop_listener(lo); /* the daemon's only copy */
	xs = sock_in(ns, AF_INET, SOCK_STREAM);
	assert_int_equal(bind(xs, (struct sockaddr *)&x, sa_make(&x, x_ip, 0)),
			 0);
	assert_int_equal(listen(xs, 1), 0);
	assert_int_equal(getsockname(xs, (struct sockaddr *)&x, &len), 0);
	f = sock_in(ns, AF_INET, SOCK_STREAM);
	setsockopt(f, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	if (bind(f, (const struct sockaddr *)&lo->listen.addr,
		 lo->listen.len)) {
		printf("%s: cannot bind the port (%s): not forgeable\n",
		       lo->name, strerror(errno));
		close(f);
		close(xs);
		return;
	}
	assert_int_equal(connect(f, (struct sockaddr *)&x, len), 0);
	a = accept_within(xs);
	r = transparent_req(lo);
	fd = ask_raw(1, &r, sizeof(r), &f, 1, &rep);
	if (fd >= 0) {
		len = sizeof(self);
		getsockname(fd, (struct sockaddr *)&self, &len);
		inet_ntop(AF_INET, &((struct sockaddr_in *)&self)->sin_addr,
			  text, sizeof(text));
		fail_msg(
			"[%s]: a forged client got an IP_TRANSPARENT (%d) socket bound to %s (X = %s)",
			lo->name, transparent_of(fd, AF_INET), text, x_ip);
	}
	assert_int_not_equal(rep.err, 0);
	close(a);
	close(f);
	close(xs);
	probe();
}

/**
 * test_forged_loopback() - forge() on [front], 127.0.0.1, X = 127.0.0.2
 * @state:	unused
 */
static void test_forged_loopback(void **state)
{
	(void)state;
	forge(&cfg.ls[L_FRONT], ns_home, "127.0.0.2");
}

/**
 * test_forged_netns() - forge() on [inner], in the client namespace,
 *			 X = 192.0.2.99
 * @state:	unused
 */
static void test_forged_netns(void **state)
{
	(void)state;
	forge(&cfg.ls[L_INNER], ns_cl, "192.0.2.99");
}

/**
 * setup_activated() - the helper as after socket activation: [act] has
 *		       no listen address, and is transparent
 * @state:	unused (a cmocka setup)
 *
 * Return: 0.
 */
static int setup_activated(void **state)
{
	(void)state;
	start_helper("[act]\nbackend = 127.0.0.1:9\ntransparent = yes\n", true);
	return 0;
}

/**
 * test_activated() - a socket-activated listener: the daemon's own
 *		      socket, connected to X from any port, is no client
 * @state:	unused
 */
static void test_activated(void **state)
{
	struct sockaddr_storage x;
	socklen_t len = sizeof(x);
	struct ph_req r = req(PRIV_OP_BACKEND, "act", "", AF_INET);
	struct ph_rep rep;
	int xs, f, a, fd;

	(void)state;
	r.transparent = 1;
	xs = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(
		bind(xs, (struct sockaddr *)&x, sa_make(&x, "127.0.0.2", 0)),
		0);
	assert_int_equal(listen(xs, 1), 0);
	assert_int_equal(getsockname(xs, (struct sockaddr *)&x, &len), 0);
	f = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(f, (struct sockaddr *)&x, len), 0);
	a = accept_within(xs);
	fd = ask_raw(1, &r, sizeof(r), &f, 1, &rep);
	if (fd >= 0)
		fail_msg(
			"[act] (socket activation): the daemon's own socket got an IP_TRANSPARENT (%d) socket bound to X = 127.0.0.2",
			transparent_of(fd, AF_INET));
	assert_int_not_equal(rep.err, 0);
	close(a);
	close(f);
	close(xs);
}

static pid_t switcher = -1; /* the process whose PID names a namespace */
static int switcher_cmd = -1, switcher_ack = -1;

/**
 * switcher_main() - the child: a namespace of its own, then, when told,
 *		     another one in a user namespace of its own, as a local
 *		     user who took the PID would have
 * @cmd:	read end: a byte means switch, EOF means exit
 * @ack:	write end: a byte once each namespace is entered
 */
static void __attribute__((noreturn)) switcher_main(int cmd, int ack)
{
	struct pollfd p = { cmd, POLLIN, 0 };
	char b;

	/* The helper keeps no CAP_SYS_PTRACE: it may open /proc/PID/ns/net
	 * only of a process whose capabilities are a subset of its own, and
	 * dumpable (or in a user namespace uid 0 owns, as the second). */
	if (unshare(CLONE_NEWNET) || privs_restrict(0) ||
	    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) || write(ack, "a", 1) != 1)
		_exit(1);
	if (poll(&p, 1, 60000) != 1 || read(cmd, &b, 1) != 1)
		_exit(0);
	if (unshare(CLONE_NEWUSER | CLONE_NEWNET) || write(ack, "b", 1) != 1)
		_exit(1);
	poll(&p, 1, 60000);
	_exit(0);
}

/**
 * ns_ino_of_pid() - the inode of a process's network namespace
 * @pid:	the process
 *
 * Return: it.
 */
static ino_t ns_ino_of_pid(pid_t pid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	assert_int_equal(stat(path, &st), 0);
	return st.st_ino;
}

/**
 * setup_pid() - the switcher in its first namespace, and the helper on
 *		 [pid], whose backend namespace is named by its PID
 * @state:	unused (a cmocka setup)
 *
 * Return: 0.
 */
static int setup_pid(void **state)
{
	int cmd[2], ack[2];
	char text[256], b;

	(void)state;
	assert_int_equal(pipe2(cmd, O_CLOEXEC), 0);
	assert_int_equal(pipe2(ack, O_CLOEXEC), 0);
	switcher = fork();
	assert_true(switcher >= 0);
	if (!switcher)
		switcher_main(cmd[0], ack[1]);
	close(cmd[0]);
	close(ack[1]);
	switcher_cmd = cmd[1];
	switcher_ack = ack[0];
	assert_int_equal(read(ack[0], &b, 1), 1);
	snprintf(text, sizeof(text),
		 "[pid]\nlisten = 127.0.0.1:%d\nbackend = 192.0.2.1:445\n"
		 "backend-netns = %d\n",
		 free_port(), (int)switcher);
	start_helper(text, false);
	return 0;
}

/**
 * teardown_pid() - end the switcher and the helper
 * @state:	unused (a cmocka teardown)
 *
 * Return: 0.
 */
static int teardown_pid(void **state)
{
	if (switcher > 0) {
		close(switcher_cmd);
		close(switcher_ack);
		kill(switcher, SIGKILL);
		waitpid(switcher, NULL, 0);
		switcher = -1;
	}
	return stop_helper(state);
}

/**
 * switch_ns() - tell the switcher to take another namespace
 *
 * Return: the new namespace's inode.
 */
static ino_t switch_ns(void)
{
	struct pollfd p = { switcher_ack, POLLIN, 0 };
	char b = 0;

	assert_int_equal(write(switcher_cmd, "s", 1), 1);
	assert_int_equal(poll(&p, 1, REPLY_MS), 1);
	assert_int_equal(read(switcher_ack, &b, 1), 1);
	assert_int_equal(b, 'b');
	return ns_ino_of_pid(switcher);
}

/**
 * test_pid_netns() - a reload after the PID's process moved namespace
 * @state:	unused
 *
 * --backend-netns PID names a namespace the helper opened at start. The
 * process then takes another (a new user and network namespace: what a
 * local user who got the PID after it was freed would hold), and the
 * daemon sends PRIV_OP_RELOAD with the file unchanged. The reload must be
 * refused, and no backend socket may ever come from the new namespace.
 */
static void test_pid_netns(void **state)
{
	const struct listen_opts *lo = &cfg.ls[0];
	struct ph_req r =
		req(PRIV_OP_BACKEND, "pid", lo->netns[SIDE_BACKEND], AF_INET);
	struct ph_rep rep;
	ino_t first = ns_ino_of_pid(switcher), second;
	int fd, reload;

	(void)state;
	fd = ask_raw(1, &r, sizeof(r), NULL, 0, &rep);
	assert_true(fd >= 0);
	assert_backend(fd, AF_INET, false, NULL, first);
	close(fd);
	second = switch_ns();
	assert_true(second != first);
	r = req(PRIV_OP_RELOAD, NULL, "", 0);
	assert_int_equal(ask_raw(0, &r, sizeof(r), NULL, 0, &rep), -1);
	reload = rep.err;
	if (!reload) {
		r = req(PRIV_OP_COMMIT, NULL, "", 0);
		assert_int_equal(ask_raw(0, &r, sizeof(r), NULL, 0, &rep), -1);
	}
	r = req(PRIV_OP_BACKEND, "pid", lo->netns[SIDE_BACKEND], AF_INET);
	fd = ask_raw(1, &r, sizeof(r), NULL, 0, &rep);
	if (fd >= 0 && sock_ns(fd) == second)
		fail_msg(
			"after a reload, a backend socket in namespace %lu: the one %s now names (another user namespace's), not %lu",
			(unsigned long)second, lo->netns[SIDE_BACKEND],
			(unsigned long)first);
	if (fd >= 0)
		close(fd);
	if (!reload)
		fail_msg(
			"a reload whose unchanged %s now names another namespace was accepted",
			lo->netns[SIDE_BACKEND]);
}

/* ---- the launcher -------------------------------------------------------- */

/* Its wire, as launcher.c has it (private there: written out here as an
 * attacker would). */
enum { LN_LAUNCH = 1, LN_PID, LN_REFUSED, LN_EXIT };

/**
 * struct ln_msg - a launcher message
 * @op:		LN_*
 * @pid:	the child's
 * @err:	an errno
 * @status:	a wait status
 * @why:	LN_REFUSED with EPERM: the part of the binary's path the
 *		--user account could write
 */
struct ln_msg {
	int32_t op, pid, err, status;
	char why[EXE_SAFE_WHY];
};

static struct launcher ln = LAUNCHER_NONE;
static char marker[96], script[256];
static char *ln_argv[] = { "sh",	  "-c",		 script,
			   "hostile-exe", "hostile-arg", NULL };
static int ln_fds;     /* /proc/<launcher>/fd entries once it settled */
static pid_t ln_child; /* the child the launcher runs now, 0 for none */

/**
 * marker_lines() - how many times the launcher's binary ran
 *
 * Return: the lines in the marker file, each "ran:$0:$1" of a run.
 */
static int marker_lines(void)
{
	FILE *f = fopen(marker, "r");
	char line[128];
	int n = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		assert_string_equal(line, "ran:hostile-exe:hostile-arg\n");
		n++;
	}
	fclose(f);
	return n;
}

/**
 * children_of() - how many processes have @pid as parent
 * @pid:	the parent
 *
 * Return: their number, from /proc/PID/stat.
 */
static int children_of(pid_t pid)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	char path[300], buf[512], *rp;
	int n = 0, ppid;
	FILE *f;

	assert_non_null(d);
	while ((e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		rp = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
		if (rp && sscanf(rp, ") %*c %d", &ppid) == 1 && ppid == pid)
			n++;
		fclose(f);
	}
	closedir(d);
	return n;
}

/**
 * ln_reply() - the launcher's next reply other than LN_EXIT
 * @m:		set to it
 * @exited:	set to the LN_EXIT that came first, if any (op 0 if none)
 */
static void ln_reply(struct ln_msg *m, struct ln_msg *exited)
{
	int fd;

	memset(exited, 0, sizeof(*exited));
	for (int i = 0; i < 4; i++) {
		assert_int_equal(recv_raw(ln.fd, m, sizeof(*m), &fd),
				 sizeof(*m));
		assert_int_equal(fd, -1);
		if (m->op != LN_EXIT)
			return;
		*exited = *m;
	}
	fail_msg("only LN_EXIT from the launcher");
}

/**
 * ln_up() - the launcher runs, holds what it held, and has no child
 * @child:	the child it may have, or 0
 */
static void ln_up(pid_t child)
{
	assert_int_equal(waitpid(ln.pid, NULL, WNOHANG), 0);
	if (fd_count(ln.pid) != ln_fds)
		fail_msg("the launcher holds %d descriptors, %d before",
			 fd_count(ln.pid), ln_fds);
	assert_int_equal(children_of(ln.pid), child ? 1 : 0);
}

/**
 * ln_refuse() - a frame the launcher must refuse with @want
 * @buf:	the frame
 * @len:	its length
 * @fds:	descriptors sent along, or NULL
 * @nfds:	how many
 * @want:	the errno of its LN_REFUSED
 * @what:	what it is, for the failure's line
 */
static void ln_refuse(const void *buf, size_t len, const int *fds, int nfds,
		      int want, const char *what)
{
	struct ln_msg m, exited;
	int ran = marker_lines();

	send_raw(ln.fd, buf, len, fds, nfds);
	ln_reply(&m, &exited);
	if (m.op != LN_REFUSED || m.err != want)
		fail_msg("%s: op %d pid %d errno %d (%s), want LN_REFUSED %d",
			 what, m.op, m.pid, m.err, strerror(m.err), want);
	usleep(2000);
	assert_int_equal(marker_lines(), ran);
	ln_up(ln_child);
}

/**
 * setup_launcher() - the real launcher, told at start to run sh -c script
 * @state:	unused (a cmocka setup)
 *
 * The script writes "ran:$0:$1" to the marker file, then waits for its
 * descriptor 3 to hang up and exits 7.
 *
 * Return: 0.
 */
static int setup_launcher(void **state)
{
	struct ln_msg m = { .op = 0 }, rep, exited;

	(void)state;
	snprintf(marker, sizeof(marker), "%s/marker", dir);
	snprintf(script, sizeof(script),
		 "echo \"ran:$0:$1\" >> %s; read x <&3; exit 7", marker);
	assert_int_equal(launcher_start(&ln, "/bin/sh", ln_argv), 0);
	send_raw(ln.fd, &m, sizeof(m), NULL, 0); /* settles it */
	ln_reply(&rep, &exited);
	assert_int_equal(rep.op, LN_REFUSED);
	ln_fds = fd_count(ln.pid);
	return 0;
}

/**
 * teardown_launcher() - hang up on the launcher and reap it
 * @state:	unused (a cmocka teardown)
 *
 * Return: 0.
 */
static int teardown_launcher(void **state)
{
	(void)state;
	if (ln.fd >= 0)
		launcher_stop(&ln);
	return 0;
}

/**
 * seqpacket() - a fresh AF_UNIX SOCK_SEQPACKET pair: what LN_LAUNCH takes
 * @sv:	set to the two ends
 */
static void seqpacket(int sv[2])
{
	assert_int_equal(
		socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
}

/**
 * test_ln_sizes() - frames shorter or longer than a message, one that
 *		     carries another binary and its arguments after it
 * @state:	unused
 */
static void test_ln_sizes(void **state)
{
	static const size_t lens[] = { 1, sizeof(struct ln_msg) - 1,
				       sizeof(struct ln_msg) + 1, 4096 };
	char buf[4096] = { 0 };
	struct ln_msg m = { .op = LN_LAUNCH };
	int sv[2];

	(void)state;
	memcpy(buf, &m, sizeof(m));
	memcpy(buf + sizeof(m), "/bin/false\0-c\0id > /tmp/x", 26);
	seqpacket(sv);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		ln_refuse(buf, lens[i], NULL, 0, EINVAL, "a bad size");
		ln_refuse(buf, lens[i], &sv[1], 1, EINVAL,
			  "a bad size, with a socket");
	}
	/* No bytes but a descriptor: not a hang-up, a bad size. */
	ln_refuse(buf, 0, &sv[1], 1, EINVAL, "no bytes, with a socket");
	close(sv[0]);
	close(sv[1]);
}

/**
 * test_ln_opcodes() - operations other than LN_LAUNCH, the launcher's own
 *		       replies among them
 * @state:	unused
 */
static void test_ln_opcodes(void **state)
{
	static const int32_t ops[] = { 0, LN_PID, LN_REFUSED, LN_EXIT,
				       5, -1,	  INT32_MIN };
	struct ln_msg m = { 0 };
	int sv[2];

	(void)state;
	seqpacket(sv);
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		m = (struct ln_msg){ .op = ops[i], .pid = 1, .status = 9 };
		ln_refuse(&m, sizeof(m), &sv[1], 1, EINVAL,
			  "an operation not LN_LAUNCH");
	}
	close(sv[0]);
	close(sv[1]);
}

/**
 * test_ln_fds() - LN_LAUNCH with 0, 2, 4, 5 and 40 descriptors
 * @state:	unused
 *
 * Refused (EINVAL), and every descriptor closed (ln_up() counts them).
 */
static void test_ln_fds(void **state)
{
	static const int counts[] = { 0, 2, 4, 5, 40 };
	struct ln_msg m = { .op = LN_LAUNCH };
	int sv[2], many[40];

	(void)state;
	seqpacket(sv);
	for (int i = 0; i < 40; i++)
		many[i] = sv[1];
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
		ln_refuse(&m, sizeof(m), many, counts[i], EINVAL,
			  "not one descriptor");
	close(sv[0]);
	close(sv[1]);
}

/**
 * test_ln_kinds() - descriptor 3 of every wrong kind
 * @state:	unused
 *
 * No socket (a pipe, a file, the launcher's binary itself, a directory,
 * /dev/null, a namespace): ENOTSOCK. A socket not AF_UNIX SOCK_SEQPACKET
 * (stream, datagram, TCP, UDP, listening, netlink, IPv6): EPROTOTYPE.
 */
static void test_ln_kinds(void **state)
{
	struct ln_msg m = { .op = LN_LAUNCH };
	int fds[13], p[2], u[2], d[2];

	(void)state;
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, u),
			 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, d),
			 0);
	fds[0] = p[0];
	fds[1] = p[1];
	fds[2] = open("/bin/sh", O_RDONLY | O_CLOEXEC);
	fds[3] = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	fds[4] = open("/dev/null", O_RDWR | O_CLOEXEC);
	fds[5] = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	fds[6] = u[0];
	fds[7] = d[0];
	fds[8] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	fds[9] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	fds[10] = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	fds[11] = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	fds[12] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(listen(fds[12], 1), 0);
	for (int i = 0; i < 13; i++) {
		assert_true(fds[i] >= 0);
		ln_refuse(&m, sizeof(m), &fds[i], 1,
			  i < 6 ? ENOTSOCK : EPROTOTYPE,
			  "a wrong descriptor 3");
	}
	for (int i = 0; i < 13; i++)
		close(fds[i]);
	close(u[1]);
	close(d[1]);
}

/**
 * ln_launch() - a legitimate LN_LAUNCH (its other fields junk): the
 *		 binary and arguments of the start run, and nothing else
 * @sv:		set to the handover pair; the child holds @sv[1] as its 3
 *
 * Return: the child.
 */
static pid_t ln_launch(int sv[2])
{
	static const char want[] = "sh\0-c";
	struct ln_msg m = { .op = LN_LAUNCH, .pid = 1, .err = 5, .status = 9 },
		      rep, exited;
	char exe[256] = "", sh[256], cmd[64], path[64];
	int ran = marker_lines(), fd;

	seqpacket(sv);
	send_raw(ln.fd, &m, sizeof(m), &sv[1], 1);
	ln_reply(&rep, &exited);
	if (rep.op != LN_PID || rep.err || rep.pid <= 0)
		fail_msg("a legitimate launch: op %d errno %d", rep.op,
			 rep.err);
	close(sv[1]);
	for (int i = 0; i < 300 && marker_lines() == ran; i++)
		usleep(10000);
	assert_int_equal(marker_lines(), ran + 1);
	snprintf(path, sizeof(path), "/proc/%d/exe", rep.pid);
	assert_true(readlink(path, exe, sizeof(exe) - 1) > 0);
	assert_non_null(realpath("/bin/sh", sh));
	assert_string_equal(exe, sh);
	snprintf(path, sizeof(path), "/proc/%d/cmdline", rep.pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0 && read(fd, cmd, sizeof(cmd)) > 6);
	close(fd);
	assert_memory_equal(cmd, want, sizeof(want));
	ln_child = rep.pid;
	return rep.pid;
}

/**
 * ln_end_child() - hang up on the child; the launcher reports it, exit 7
 * @sv:	the handover pair's end kept here
 */
static void ln_end_child(int sv)
{
	struct ln_msg m;
	int fd;

	close(sv);
	assert_int_equal(recv_raw(ln.fd, &m, sizeof(m), &fd), sizeof(m));
	assert_int_equal(fd, -1);
	assert_int_equal(m.op, LN_EXIT);
	assert_int_equal(m.pid, ln_child);
	assert_true(WIFEXITED(m.status));
	assert_int_equal(WEXITSTATUS(m.status), 7);
	ln_child = 0;
	ln_up(0);
}

/**
 * test_ln_repeat() - LN_LAUNCH 200 times while a child runs, then again
 *		      once it ended
 * @state:	unused
 *
 * One child at a time: each repeat is refused (EBUSY) and runs nothing;
 * once the child ended the next launch runs the same binary again.
 */
static void test_ln_repeat(void **state)
{
	struct ln_msg m = { .op = LN_LAUNCH };
	int sv[2], other[2];

	(void)state;
	ln_launch(sv);
	seqpacket(other);
	for (int i = 0; i < 200; i++)
		ln_refuse(&m, sizeof(m), &other[1], 1, EBUSY,
			  "a launch while one runs");
	close(other[0]);
	close(other[1]);
	ln_end_child(sv[0]);
	ln_launch(sv);
	ln_end_child(sv[0]);
}

/**
 * test_ln_zero() - a frame of no bytes and no descriptor
 * @state:	unused
 *
 * The launcher takes it as the hang-up of its socket (recvmsg() gives 0
 * for both) and ends, status 0, running nothing: its documented end.
 * A launcher that refuses it and serves on passes too.
 */
static void test_ln_zero(void **state)
{
	struct pollfd p = { ln.fd, POLLIN, 0 };
	int ran = marker_lines(), st = 0;
	struct ln_msg m, exited;
	pid_t got = 0;

	(void)state;
	send_raw(ln.fd, "", 0, NULL, 0);
	if (poll(&p, 1, 500) == 1 &&
	    recv(ln.fd, &m, sizeof(m), MSG_PEEK | MSG_DONTWAIT) > 0) {
		ln_reply(&m, &exited);
		assert_int_equal(m.op, LN_REFUSED);
		ln_up(0);
		return;
	}
	for (int i = 0; i < 300 && got == 0; i++) {
		got = waitpid(ln.pid, &st, WNOHANG);
		if (!got)
			usleep(10000);
	}
	assert_int_equal(got, ln.pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(marker_lines(), ran);
	close(ln.fd);
	ln = LAUNCHER_NONE;
	printf("zero-length frame: the launcher ended, status 0, as on a hang-up\n");
}

/* ---- the groups ---------------------------------------------------------- */

static const struct CMUnitTest helper[] = {
	cmocka_unit_test(test_legitimate),
	cmocka_unit_test(test_sizes),
	cmocka_unit_test(test_opcodes),
	cmocka_unit_test(test_strings),
	cmocka_unit_test(test_names),
	cmocka_unit_test(test_netns),
	cmocka_unit_test(test_families),
	cmocka_unit_test(test_mptcp),
	cmocka_unit_test(test_not_transparent),
	cmocka_unit_test(test_listen_addrs),
	cmocka_unit_test(test_scm_rights),
	cmocka_unit_test(test_not_sockets),
	cmocka_unit_test(test_wrong_sockets),
	cmocka_unit_test(test_crossed_clients),
	cmocka_unit_test(test_commit_abort),
	cmocka_unit_test(test_reload_storm),
	cmocka_unit_test(test_commit_storm),
	cmocka_unit_test(test_legitimate),
};
static const struct CMUnitTest zero[] = {
	cmocka_unit_test_setup_teardown(test_zero_frame, setup_main,
					stop_helper),
};
static const struct CMUnitTest launcher[] = {
	cmocka_unit_test(test_ln_sizes),  cmocka_unit_test(test_ln_opcodes),
	cmocka_unit_test(test_ln_fds),	  cmocka_unit_test(test_ln_kinds),
	cmocka_unit_test(test_ln_repeat), cmocka_unit_test(test_ln_zero),
};
static const struct CMUnitTest holes[] = {
	cmocka_unit_test_setup_teardown(test_forged_loopback, setup_main,
					stop_helper),
	cmocka_unit_test_setup_teardown(test_forged_netns, setup_main,
					stop_helper),
	cmocka_unit_test_setup_teardown(test_activated, setup_activated,
					stop_helper),
	cmocka_unit_test_setup_teardown(test_pid_netns, setup_pid,
					teardown_pid),
};

/**
 * main() - the groups: helper, zero-length frame, launcher, closed holes
 *
 * Return: 0 if every test passed, 77 (skip) without root.
 */
int main(void)
{
	int failed = 0;

	if (geteuid()) {
		printf("SKIP: plays the daemon against root's helper: needs root\n");
		return 77;
	}
	/* HOSTILE_FILTER=test_forged* runs only those (cmocka's pattern). */
	if (getenv("HOSTILE_FILTER"))
		cmocka_set_test_filter(getenv("HOSTILE_FILTER"));
	signal(SIGPIPE, SIG_IGN);
	signal(SIGALRM, watchdog);
	signal(SIGTERM, watchdog);
	signal(SIGINT, watchdog);
	signal(SIGHUP, watchdog);
	alarm(WATCHDOG_S);
	if (!mkdtemp(dir))
		return 1;
	snprintf(conf, sizeof(conf), "%s/smbsplice.conf", dir);
	atexit(ns_cleanup);
	if (ns_setup())
		return 1;
	ns_home = open_ns("/proc/self/ns/net");
	ns_be = open_ns(be_path);
	ns_cl = open_ns(cl_path);
	failed += cmocka_run_group_tests_name("hostile daemon: helper", helper,
					      setup_main, stop_helper);
	failed += cmocka_run_group_tests_name(
		"hostile daemon: helper, no bytes", zero, NULL, NULL);
	failed += cmocka_run_group_tests_name("hostile daemon: launcher",
					      launcher, setup_launcher,
					      teardown_launcher);
	failed += cmocka_run_group_tests_name(
		"hostile daemon: closed holes (issue 28 items 2, 3)", holes,
		NULL, NULL);
	return failed ? 1 : 0;
}
