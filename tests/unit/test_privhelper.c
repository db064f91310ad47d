// SPDX-License-Identifier: GPL-2.0-or-later
/* test_privhelper.c - the privileged helper grants what its configuration
 * names and nothing else: a listening socket on the configured address only,
 * backend sockets of the configured listener, family, namespace and MPTCP
 * setting only, a transparent one bound to the peer of the client socket
 * sent along, and refused for any socket that is not a client the named
 * listener accepted (a connected UDP socket, a listening one, a TCP one of
 * another port, one of another namespace); a refused reload's candidate
 * (PRIV_OP_ABORT) and, after --drain-timeout, the configuration before are
 * granted from no more; netns_open() neither blocks on a FIFO nor asks a
 * device its namespace type; a malformed request is answered and
 * the helper serves on; a thread that stops reading its replies holds up
 * no other; a daemon out of descriptors gets EMFILE at once;
 * once the helper is gone, every request fails at once with EOWNERDEAD. Needs
 * root (the helper keeps capabilities): skipped otherwise.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "common/fdpass.h"
#include "common/netns.h"
#include "conf/options.h"
#include "priv/privhelper.h"
#include "testnet.h"

static struct config cfg;
static struct privhelper ph;
static struct sockaddr_in listen_at, late_at;
static char dir[] = "/tmp/test_privhelper.XXXXXX", conf[64];

/* The config file: [global] drain-timeout = 1; [front] on 127.0.0.1:@front
 * (0: none), backend 127.0.0.1:9, --transparent; with @late, [late] on
 * late_at. */
static void write_conf(int front, bool late)
{
	FILE *f = fopen(conf, "w");

	assert_non_null(f);
	fprintf(f, "[global]\ndrain-timeout = 1\n");
	if (front)
		fprintf(f,
			"[front]\nlisten = 127.0.0.1:%d\nbackend = 127.0.0.1:9\n"
			"transparent = yes\n",
			front);
	if (late)
		fprintf(f,
			"[late]\nlisten = 127.0.0.1:%d\nbackend = 127.0.0.1:9\n",
			ntohs(late_at.sin_port));
	assert_int_equal(fclose(f), 0);
}

static int setup(void **state)
{
	static char *argv[] = { "smbsplice", "--config", conf, NULL };
	char err[256];

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(conf, sizeof(conf), "%s/smbsplice.conf", dir);
	listen_at = (struct sockaddr_in){ .sin_family = AF_INET,
					  .sin_port = htons(free_port()) };
	listen_at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	late_at = listen_at;
	late_at.sin_port = htons(free_port());
	write_conf(ntohs(listen_at.sin_port), false);
	assert_int_equal(options_parse(&cfg, 3, argv, false, err, sizeof(err)),
			 OPT_OK);
	assert_int_equal(privhelper_start(&ph, &cfg, 3, argv, false, 2, err,
					  sizeof(err)),
			 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	privhelper_stop(&ph);
	unlink(conf);
	rmdir(dir);
	return 0;
}

static void test_listen(void **state)
{
	struct sockaddr_in other = listen_at, got;
	socklen_t len = sizeof(got);
	int fd, on = 0;

	(void)state;
	fd = privhelper_listen(&ph, 0, "", (struct sockaddr *)&listen_at,
			       sizeof(listen_at), false);
	assert_true(fd >= 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&got, &len), 0);
	assert_memory_equal(&got, &listen_at, sizeof(got));
	len = sizeof(on);
	getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len);
	assert_int_equal(on, 1);
	close(fd);

	other.sin_port = htons(ntohs(listen_at.sin_port) ^ 1);
	assert_int_equal(privhelper_listen(&ph, 0, "",
					   (struct sockaddr *)&other,
					   sizeof(other), false),
			 -1);
	assert_int_equal(errno, EPERM);
	assert_int_equal(privhelper_listen(&ph, 1, "/run/netns/not-configured",
					   (struct sockaddr *)&listen_at,
					   sizeof(listen_at), false),
			 -1);
	assert_int_equal(errno, EPERM);
	assert_int_equal(privhelper_listen(&ph, 1, "",
					   (struct sockaddr *)&listen_at,
					   sizeof(listen_at), true),
			 -1);
	assert_int_equal(errno, EPERM);
}

static void test_backend(void **state)
{
	int fd;

	(void)state;
	fd = privhelper_backend(&ph, 1, "front", "", AF_INET, false, -1);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(
		privhelper_backend(&ph, 1, "front", "", AF_INET6, false, -1),
		-1);
	assert_int_equal(errno, EPERM);
	assert_int_equal(
		privhelper_backend(&ph, 1, "front", "", AF_INET, true, -1), -1);
	assert_int_equal(errno, EPERM);
	assert_int_equal(privhelper_backend(&ph, 1, "front", "/proc/1/ns/net",
					    AF_INET, false, -1),
			 -1);
	assert_int_equal(errno, EPERM);
}

/* The helper refuses @fd as a transparent request's client, with EPERM. */
static void refused(const char *listener, int fd)
{
	int got = privhelper_backend(&ph, 1, listener, "", AF_INET, false, fd);

	if (got >= 0)
		fail_msg("granted a transparent socket for fd %d", fd);
	assert_int_equal(errno, EPERM);
}

/* An accepted socket of a loopback pair on listen_at's very address and
 * port, made in a namespace of its own by a child and sent back here. */
static int foreign_client(void)
{
	int sv[2], l, c, s, fd, status;
	unsigned nfds;
	pid_t pid;
	char b = 0;

	assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		if (unshare(CLONE_NEWNET) || system("ip link set lo up"))
			_exit(1);
		tcp_pair(listen_at, &l, &c, &s);
		_exit(fdpass_send(sv[1], &b, 1, &s, 1, 0) ? 1 : 0);
	}
	close(sv[1]);
	assert_int_equal(fdpass_recv(sv[0], &b, 1, &fd, 1, &nfds, 0), 1);
	assert_int_equal(nfds, 1);
	close(sv[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(status, 0);
	return fd;
}

static void test_transparent(void **state)
{
	struct sockaddr_in got, any = { .sin_family = AF_INET };
	struct sockaddr_in doc = { .sin_family = AF_INET,
				   .sin_port = htons(1) };
	socklen_t len;
	int l, c, s, l2, c2, s2, u, fd, on = 0;

	(void)state;
	any.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	tcp_pair(listen_at, &l, &c, &s);
	fd = privhelper_backend(&ph, 1, "front", "", AF_INET, false, s);
	if (fd < 0)
		fail_msg("the accepted client was refused: %s",
			 strerror(errno));
	len = sizeof(on);
	getsockopt(fd, IPPROTO_IP, IP_TRANSPARENT, &on, &len);
	assert_int_equal(on, 1);
	len = sizeof(got);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&got, &len), 0);
	assert_int_equal(got.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	close(fd);
	/* Its SYN was read; a failover sends it again, and it is known. */
	fd = privhelper_backend(&ph, 1, "front", "", AF_INET, false, s);
	if (fd < 0)
		fail_msg("the same client, again, was refused: %s",
			 strerror(errno));
	close(fd);

	/* A UDP socket connect()ed anywhere has a peer, and proves nothing. */
	inet_pton(AF_INET, "192.0.2.77", &doc.sin_addr);
	u = socket(AF_INET, SOCK_DGRAM, 0);
	assert_int_equal(connect(u, (struct sockaddr *)&doc, sizeof(doc)), 0);
	refused("front", u);
	refused("front", l); /* listening: no peer */
	refused("front", c); /* the connecting end: not the listener's port */
	tcp_pair(any, &l2, &c2, &s2); /* accepted, on another port */
	refused("front", s2);
	refused("late", s); /* no such listener */
	close(s2);
	close(c2);
	close(l2);
	close(u);
	/* Same address and port, in another namespace. */
	fd = foreign_client();
	refused("front", fd);
	close(fd);
	close(s);
	close(c);
	close(l);
}

/* What a compromised daemon can make of an unprivileged listen port: it
 * closes its listener, binds the port and connect()s to any host X (here
 * a listener of its own); every address and state check passes, and only
 * the missing SYN tells. A real client disconnected (AF_UNSPEC) and
 * connected elsewhere keeps its cookie, not its proof. */
static void test_forged_client(void **state)
{
	struct sockaddr_in x = { .sin_family = AF_INET };
	struct sockaddr unspec = { .sa_family = AF_UNSPEC };
	int lx, cx, sx, forged, l, c, s, fd, on = 1;

	(void)state;
	x.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	tcp_pair(x, &lx, &cx, &sx); /* X, listening on a port of its own */
	close(cx);
	close(sx);
	socklen_t len = sizeof(x);

	assert_int_equal(getsockname(lx, (struct sockaddr *)&x, &len), 0);
	forged = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(forged, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	setsockopt(forged, IPPROTO_TCP, TCP_SAVE_SYN, &on, sizeof(on));
	assert_int_equal(
		bind(forged, (struct sockaddr *)&listen_at, sizeof(listen_at)),
		0);
	assert_int_equal(connect(forged, (struct sockaddr *)&x, sizeof(x)), 0);
	refused("front", forged);
	close(forged);

	tcp_pair(listen_at, &l, &c, &s);
	fd = privhelper_backend(&ph, 1, "front", "", AF_INET, false, s);
	assert_true(fd >= 0);
	close(fd);
	close(l);
	assert_int_equal(connect(s, &unspec, sizeof(unspec)), 0);
	assert_int_equal(connect(s, (struct sockaddr *)&x, sizeof(x)), 0);
	refused("front", s);
	close(s);
	close(c);
	close(lx);
}

/* netns_open() neither blocks on a FIFO nor asks a device its type. */
static void test_netns_open(void **state)
{
	char fifo[80], err[160];
	int fd;

	(void)state;
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	alarm(5); /* a helper that blocks: the test fails, not hangs */
	assert_int_equal(netns_open(fifo, false, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not a network namespace"));
	assert_int_equal(netns_open("/dev/null", false, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not a network namespace"));
	alarm(0);
	unlink(fifo);
	fd = netns_open("/proc/self/ns/net", false, err, sizeof(err));
	assert_true(fd >= 0);
	close(fd);
}

static void test_malformed(void **state)
{
	char buf[1024];
	int fd;

	(void)state;
	assert_int_equal(send(ph.fds[1], "bad", 3, 0), 3);
	assert_true(recv(ph.fds[1], buf, sizeof(buf), 0) > 0);
	fd = privhelper_backend(&ph, 1, "front", "", AF_INET, false, -1);
	assert_true(fd >= 0);
	close(fd);
}

/* A thread that stops reading its replies holds up no other: the helper
 * drops what that channel has no room for, and serves the next. */
static void test_unread(void **state)
{
	char buf[1024];
	int sent = 0, fd;

	(void)state;
	for (int i = 0; sent < 2000 && i < 100000; i++) {
		if (send(ph.fds[1], "bad", 3, MSG_DONTWAIT) == 3)
			sent++;
		else
			usleep(100);
	}
	assert_int_equal(sent, 2000);
	fd = privhelper_listen(&ph, 0, "", (struct sockaddr *)&listen_at,
			       sizeof(listen_at), false);
	if (fd < 0)
		fail_msg("channel 0: %s", strerror(errno));
	close(fd);
	/* The replies that found room, read at last; the rest were lost,
	 * which is what a thread that does not read asks for. */
	while (poll(&(struct pollfd){ ph.fds[1], POLLIN, 0 }, 1, 200) > 0 &&
	       recv(ph.fds[1], buf, sizeof(buf), 0) > 0)
		;
	fd = privhelper_backend(&ph, 1, "front", "", AF_INET, false, -1);
	assert_true(fd >= 0);
	close(fd);
}

/* Out of descriptors: the helper's socket cannot be received, and the
 * request fails at once with EMFILE, as socket() would, not after the
 * reply timeout. */
static void test_emfile(void **state)
{
	struct rlimit old, low = { 64, 64 };
	struct timespec t0, t1;
	int fds[64], n = 0, fd, err;

	(void)state;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low.rlim_max = old.rlim_max;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	while (n < 64 && (fds[n] = dup(0)) >= 0)
		n++;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	fd = privhelper_backend(&ph, 1, "front", "", AF_INET, false, -1);
	err = errno;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	while (n)
		close(fds[--n]);
	setrlimit(RLIMIT_NOFILE, &old);
	assert_int_equal(fd, -1);
	assert_int_equal(err, EMFILE);
	assert_true(t1.tv_sec - t0.tv_sec < 1);
	fd = privhelper_backend(&ph, 1, "front", "", AF_INET, false, -1);
	assert_true(fd >= 0);
	close(fd);
}

/* A reload the daemon refused (PRIV_OP_ABORT): its listeners are granted from
 * no more; while it was prepared, a listener it moves still served its
 * clients where it ran. */
static void test_abort(void **state)
{
	char err[256];
	int l, c, s, fd;

	(void)state;
	write_conf(free_port(), true); /* [front] moves, [late] comes */
	assert_int_equal(privhelper_reload(&ph, err, sizeof(err)), 0);
	fd = privhelper_listen(&ph, 0, "", (struct sockaddr *)&late_at,
			       sizeof(late_at), false);
	assert_true(fd >= 0); /* the candidate's */
	close(fd);
	/* A client of [front] where it runs still gets its socket. */
	tcp_pair(listen_at, &l, &c, &s);
	fd = privhelper_backend(&ph, 1, "front", "", AF_INET, false, s);
	if (fd < 0)
		fail_msg("a client of the running [front]: %s",
			 strerror(errno));
	close(fd);
	close(s);
	close(c);
	close(l);
	privhelper_abort(&ph);
	assert_int_equal(privhelper_listen(&ph, 0, "",
					   (struct sockaddr *)&late_at,
					   sizeof(late_at), false),
			 -1);
	assert_int_equal(errno, EPERM);
}

/* The configuration before a commit is granted from for --drain-timeout
 * (1 s here), then no more. */
static void test_previous_expires(void **state)
{
	char err[256];
	int fd;

	(void)state;
	write_conf(0, true);
	assert_int_equal(privhelper_reload(&ph, err, sizeof(err)), 0);
	privhelper_commit(&ph);
	fd = privhelper_backend(&ph, 1, "front", "", AF_INET, false, -1);
	assert_true(fd >= 0); /* [front] ran before: still granted */
	close(fd);
	usleep(1200 * 1000);
	assert_int_equal(
		privhelper_backend(&ph, 1, "front", "", AF_INET, false, -1),
		-1);
	assert_int_equal(errno, EPERM);
	fd = privhelper_backend(&ph, 1, "late", "", AF_INET, false, -1);
	assert_true(fd >= 0);
	close(fd);
}

static void test_gone(void **state)
{
	(void)state;
	kill(ph.pid, SIGKILL);
	waitpid(ph.pid, NULL, 0);
	assert_int_equal(
		privhelper_backend(&ph, 1, "late", "", AF_INET, false, -1), -1);
	assert_int_equal(errno, EOWNERDEAD);
	assert_int_equal(privhelper_listen(&ph, 0, "",
					   (struct sockaddr *)&listen_at,
					   sizeof(listen_at), false),
			 -1);
	assert_int_equal(errno, EOWNERDEAD);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_listen),
		cmocka_unit_test(test_backend),
		cmocka_unit_test(test_transparent),
		cmocka_unit_test(test_forged_client),
		cmocka_unit_test(test_netns_open),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_unread),
		cmocka_unit_test(test_emfile),
		cmocka_unit_test(test_abort),
		cmocka_unit_test(test_previous_expires),
		cmocka_unit_test(test_gone),
	};

	if (geteuid()) {
		printf("SKIP: the helper keeps capabilities: needs root\n");
		return 77;
	}
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, setup, teardown);
}
