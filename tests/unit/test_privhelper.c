// SPDX-License-Identifier: GPL-2.0-or-later
/* test_privhelper.c - the privileged helper grants what its configuration
 * names and nothing else: a listening socket on the configured address only,
 * backend sockets of the configured family, namespace and MPTCP setting only,
 * a transparent one bound to the peer of the client socket sent along and
 * refused for a socket with no peer; a malformed request is answered and
 * the helper serves on; a thread that stops reading its replies holds up
 * no other; a daemon out of descriptors gets EMFILE at once;
 * once the helper is gone, every request fails at once with EOWNERDEAD. Needs
 * root (the helper keeps capabilities): skipped otherwise.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "options.h"
#include "privhelper.h"

static struct config cfg;
static struct privhelper ph;
static struct sockaddr_in listen_at;
static char listen_text[32];

/* A port free on 127.0.0.1 now. */
static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

/* One listener: listen_text, backend 127.0.0.1:9, --transparent. */
static int setup(void **state)
{
	static char *argv[] = { "smbsplice", "--listen",    listen_text,
				"--backend", "127.0.0.1:9", "--transparent",
				NULL };
	char err[256];

	(void)state;
	listen_at = (struct sockaddr_in){ .sin_family = AF_INET,
					  .sin_port = htons(free_port()) };
	listen_at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	snprintf(listen_text, sizeof(listen_text), "127.0.0.1:%d",
		 ntohs(listen_at.sin_port));
	assert_int_equal(options_parse(&cfg, 6, argv, false, err, sizeof(err)),
			 OPT_OK);
	assert_int_equal(privhelper_start(&ph, &cfg, 6, argv, false, 2, err,
					  sizeof(err)),
			 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	privhelper_stop(&ph);
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
	fd = privhelper_backend(&ph, 1, "", AF_INET, false, -1);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(privhelper_backend(&ph, 1, "", AF_INET6, false, -1),
			 -1);
	assert_int_equal(errno, EPERM);
	assert_int_equal(privhelper_backend(&ph, 1, "", AF_INET, true, -1), -1);
	assert_int_equal(errno, EPERM);
	assert_int_equal(privhelper_backend(&ph, 1, "/proc/1/ns/net", AF_INET,
					    false, -1),
			 -1);
	assert_int_equal(errno, EPERM);
}

static void test_transparent(void **state)
{
	struct sockaddr_in a = listen_at, got;
	socklen_t len = sizeof(a);
	int l, c, s, fd, on = 0;

	(void)state;
	a.sin_port = 0;
	l = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&a, &len), 0);
	c = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(c, (struct sockaddr *)&a, sizeof(a)), 0);
	s = accept(l, NULL, NULL);
	assert_true(s >= 0);

	fd = privhelper_backend(&ph, 1, "", AF_INET, false, s);
	assert_true(fd >= 0);
	len = sizeof(on);
	getsockopt(fd, IPPROTO_IP, IP_TRANSPARENT, &on, &len);
	assert_int_equal(on, 1);
	len = sizeof(got);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&got, &len), 0);
	assert_int_equal(got.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	close(fd);

	/* A socket with no peer proves no client. */
	assert_int_equal(privhelper_backend(&ph, 1, "", AF_INET, false, l), -1);
	assert_int_equal(errno, EINVAL);
	close(s);
	close(c);
	close(l);
}

static void test_malformed(void **state)
{
	char buf[1024];
	int fd;

	(void)state;
	assert_int_equal(send(ph.fds[1], "bad", 3, 0), 3);
	assert_true(recv(ph.fds[1], buf, sizeof(buf), 0) > 0);
	fd = privhelper_backend(&ph, 1, "", AF_INET, false, -1);
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
	fd = privhelper_backend(&ph, 1, "", AF_INET, false, -1);
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
	fd = privhelper_backend(&ph, 1, "", AF_INET, false, -1);
	err = errno;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	while (n)
		close(fds[--n]);
	setrlimit(RLIMIT_NOFILE, &old);
	assert_int_equal(fd, -1);
	assert_int_equal(err, EMFILE);
	assert_true(t1.tv_sec - t0.tv_sec < 1);
	fd = privhelper_backend(&ph, 1, "", AF_INET, false, -1);
	assert_true(fd >= 0);
	close(fd);
}

static void test_gone(void **state)
{
	(void)state;
	kill(ph.pid, SIGKILL);
	waitpid(ph.pid, NULL, 0);
	assert_int_equal(privhelper_backend(&ph, 1, "", AF_INET, false, -1),
			 -1);
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
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_unread),
		cmocka_unit_test(test_emfile),
		cmocka_unit_test(test_gone),
	};

	if (geteuid()) {
		printf("SKIP: the helper keeps capabilities: needs root\n");
		return 77;
	}
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, setup, teardown);
}
