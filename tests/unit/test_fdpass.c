// SPDX-License-Identifier: GPL-2.0-or-later
/* test_fdpass.c - descriptors passed over AF_UNIX sockets: 0, 1 and
 * FDPASS_MAX descriptors arrive with their payload, the same files, in
 * order, close-on-exec; a receiver with less room than was sent, a
 * datagram over its buffer and a receiver out of descriptors (MSG_CTRUNC)
 * each fail with their errno and keep none (/proc/self/fd counted);
 * an empty non-blocking socket is EAGAIN, a hang-up is 0 with no
 * descriptor; a signal without SA_RESTART during a blocking receive is
 * retried, not returned; credentials beside the descriptors are ignored
 * and take no room from them; a send to a closed peer is EPIPE, not
 * SIGPIPE. EINTR on the sending side is not provoked: a send on a socket
 * with room does not sleep, and one without room is the same loop.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "common/fdpass.h"
#include "testnet.h"

static int sv[2] = { -1, -1 };

/**
 * pair() - a fresh SOCK_SEQPACKET pair in sv[]
 * @state:	unused
 *
 * Return: 0.
 */
static int pair(void **state)
{
	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	return 0;
}

/**
 * unpair() - close what is left of sv[]
 * @state:	unused
 *
 * Return: 0.
 */
static int unpair(void **state)
{
	(void)state;
	for (int i = 0; i < 2; i++)
		if (sv[i] >= 0)
			close(sv[i]);
	sv[0] = sv[1] = -1;
	return 0;
}

/**
 * same_file() - do @a and @b name one open file
 * @a:	a descriptor
 * @b:	another
 *
 * Return: true if device and inode agree.
 */
static bool same_file(int a, int b)
{
	struct stat sa, sb;

	assert_int_equal(fstat(a, &sa), 0);
	assert_int_equal(fstat(b, &sb), 0);
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/**
 * round_trip() - send @n descriptors of distinct files and a payload,
 *		  and check what arrives
 * @n:	how many, at most FDPASS_MAX
 */
static void round_trip(unsigned n)
{
	static int mine[FDPASS_MAX], got[FDPASS_MAX];
	char out[64] = "payload", in[64] = { 0 };
	int before = testnet_count_fds();
	unsigned nfds = ~0u;

	for (unsigned i = 0; i < n; i += 2)
		assert_int_equal(pipe(mine + i), 0); /* n is even, or 1 */
	if (n == 1)
		close(mine[1]);
	assert_int_equal(fdpass_send(sv[0], out, sizeof(out), mine, n, 0), 0);
	assert_int_equal(fdpass_recv(sv[1], in, sizeof(in), got, n, &nfds, 0),
			 sizeof(in));
	assert_memory_equal(in, out, sizeof(out));
	assert_int_equal(nfds, n);
	for (unsigned i = 0; i < n; i++) {
		assert_true(same_file(mine[i], got[i]));
		assert_int_equal(fcntl(got[i], F_GETFD), FD_CLOEXEC);
		close(got[i]);
		close(mine[i]);
	}
	assert_int_equal(testnet_count_fds(), before);
}

static void test_round_trip(void **state)
{
	(void)state;
	round_trip(0);
	round_trip(1);
	round_trip(FDPASS_MAX - 1); /* even, as round_trip() makes pipes */
}

/* FDPASS_MAX itself: one pipe's ends, over and over. */
static void test_max(void **state)
{
	static int mine[FDPASS_MAX], got[FDPASS_MAX];
	int p[2], before = testnet_count_fds();
	unsigned nfds;
	char b = 'x';

	(void)state;
	assert_int_equal(pipe(p), 0);
	for (int i = 0; i < FDPASS_MAX; i++)
		mine[i] = p[i & 1];
	assert_int_equal(fdpass_send(sv[0], &b, 1, mine, FDPASS_MAX, 0), 0);
	assert_int_equal(
		fdpass_recv(sv[1], &b, 1, got, FDPASS_MAX, &nfds, MSG_DONTWAIT),
		1);
	assert_int_equal(nfds, FDPASS_MAX);
	for (int i = 0; i < FDPASS_MAX; i++) {
		assert_true(same_file(got[i], p[i & 1]));
		close(got[i]);
	}
	/* One more than the kernel takes is the caller's mistake. */
	assert_int_equal(fdpass_send(sv[0], &b, 1, mine, FDPASS_MAX + 1, 0),
			 -1);
	assert_int_equal(errno, EINVAL);
	close(p[0]);
	close(p[1]);
	assert_int_equal(testnet_count_fds(), before);
}

/* Pieces in, pieces out: a head and a body, as howire sends them. */
static void test_vectors(void **state)
{
	uint32_t head[2] = { 7, 5 }, h[2];
	char body[5] = "abcde", b[16];
	struct iovec out[2] = { { head, sizeof(head) },
				{ body, sizeof(body) } };
	struct iovec in[2] = { { h, sizeof(h) }, { b, sizeof(b) } };
	int fd, got;
	unsigned nfds;

	(void)state;
	fd = open("/dev/null", O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(fdpass_sendv(sv[0], out, 2, &fd, 1, 0), 0);
	assert_int_equal(fdpass_recvv(sv[1], in, 2, &got, 1, &nfds, 0),
			 sizeof(head) + sizeof(body));
	assert_memory_equal(h, head, sizeof(head));
	assert_memory_equal(b, body, sizeof(body));
	assert_int_equal(nfds, 1);
	assert_true(same_file(fd, got));
	close(got);
	close(fd);
}

/* Three sent, room for two (and for none): all three closed, ETOOMANYREFS,
 * and the message is gone, not left for the next call. */
static void test_less_room(void **state)
{
	int p[2], mine[3], got[2] = { -1, -1 }, before;
	unsigned nfds = 9;
	char b = 'x';

	(void)state;
	assert_int_equal(pipe(p), 0);
	mine[0] = p[0];
	mine[1] = p[1];
	mine[2] = p[0];
	before = testnet_count_fds();
	for (unsigned room = 0; room <= 2; room += 2) {
		assert_int_equal(fdpass_send(sv[0], &b, 1, mine, 3, 0), 0);
		assert_int_equal(fdpass_recv(sv[1], &b, 1, room ? got : NULL,
					     room, &nfds, 0),
				 -1);
		assert_int_equal(errno, ETOOMANYREFS);
		assert_int_equal(nfds, 0);
		assert_int_equal(testnet_count_fds(), before);
	}
	assert_int_equal(fdpass_recv(sv[1], &b, 1, got, 2, &nfds, MSG_DONTWAIT),
			 -1);
	assert_int_equal(errno, EAGAIN);
	close(p[0]);
	close(p[1]);
}

/* A datagram over the buffer: EMSGSIZE, its descriptor closed. */
static void test_truncated(void **state)
{
	char big[32] = "over", small[8];
	int fd = open("/dev/null", O_RDONLY), got = -1, before;
	unsigned nfds = 9;

	(void)state;
	assert_true(fd >= 0);
	before = testnet_count_fds();
	assert_int_equal(fdpass_send(sv[0], big, sizeof(big), &fd, 1, 0), 0);
	assert_int_equal(
		fdpass_recv(sv[1], small, sizeof(small), &got, 1, &nfds, 0),
		-1);
	assert_int_equal(errno, EMSGSIZE);
	assert_int_equal(nfds, 0);
	assert_int_equal(testnet_count_fds(), before);
	close(fd);
}

/* RLIMIT_NOFILE leaves the receiver a few slots for ten descriptors: the
 * kernel installs what fits and says MSG_CTRUNC; fdpass closes those
 * and says EMFILE. */
static void test_ctrunc(void **state)
{
	struct rlimit old, rl;
	int fd = open("/dev/null", O_RDONLY), mine[10], got[10], before, top;
	unsigned nfds = 9;
	char b = 'x';

	(void)state;
	assert_true(fd >= 0);
	for (int i = 0; i < 10; i++)
		mine[i] = fd;
	assert_int_equal(fdpass_send(sv[0], &b, 1, mine, 10, 0), 0);
	before = testnet_count_fds();
	top = dup(sv[1]); /* the lowest free slot: it and two more */
	assert_true(top >= 0);
	close(top);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	rl = old;
	rl.rlim_cur = (rlim_t)top + 3;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	assert_int_equal(fdpass_recv(sv[1], &b, 1, got, 10, &nfds, 0), -1);
	assert_int_equal(errno, EMFILE);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(nfds, 0);
	assert_int_equal(testnet_count_fds(), before);
	close(fd);
}

/* Empty and non-blocking is EAGAIN; a hang-up is 0 with no descriptor;
 * an empty datagram with one is 0 with it (which is why a protocol over
 * this sends no empty datagram, or one with a descriptor only). */
static void test_eagain_and_eof(void **state)
{
	int fd = open("/dev/null", O_RDONLY), got = -1;
	unsigned nfds = 9;
	char b;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(
		fdpass_recv(sv[1], &b, 1, &got, 1, &nfds, MSG_DONTWAIT), -1);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(nfds, 0);
	assert_int_equal(fdpass_send(sv[0], "", 0, &fd, 1, 0), 0);
	assert_int_equal(fdpass_recv(sv[1], &b, 1, &got, 1, &nfds, 0), 0);
	assert_int_equal(nfds, 1);
	assert_true(same_file(fd, got));
	close(got);
	close(sv[0]);
	sv[0] = -1;
	nfds = 9;
	assert_int_equal(fdpass_recv(sv[1], &b, 1, &got, 1, &nfds, 0), 0);
	assert_int_equal(nfds, 0);
	/* And the other way: a send to a closed peer, without SIGPIPE. */
	assert_int_equal(fdpass_send(sv[1], "x", 1, &fd, 1, 0), -1);
	assert_int_equal(errno, EPIPE);
	close(fd);
}

static volatile sig_atomic_t alarms;

/**
 * on_alarm() - count SIGALRM
 * @sig:	SIGALRM
 */
static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

/* A blocking receive, interrupted by signals without SA_RESTART before
 * the message comes: retried, and the message is what it returns. */
static void test_eintr(void **state)
{
	struct sigaction sa = { .sa_handler = on_alarm }, old;
	struct itimerval it = { { 0, 20000 }, { 0, 20000 } }, off = { 0 };
	char b = 0;
	int status, got;
	unsigned nfds;
	pid_t pid;

	(void)state;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGALRM, &sa, &old), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		usleep(300000);
		_exit(fdpass_send(sv[0], "y", 1, &sv[0], 1, 0) ? 1 : 0);
	}
	alarms = 0;
	assert_int_equal(setitimer(ITIMER_REAL, &it, NULL), 0);
	assert_int_equal(fdpass_recv(sv[1], &b, 1, &got, 1, &nfds, 0), 1);
	setitimer(ITIMER_REAL, &off, NULL);
	sigaction(SIGALRM, &old, NULL);
	assert_true(alarms > 0);
	assert_int_equal(b, 'y');
	assert_int_equal(nfds, 1);
	close(got);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(status, 0);
}

/* SO_PASSCRED puts credentials ahead of the descriptors: ignored, and
 * FDPASS_MAX descriptors still fit beside them. */
static void test_credentials(void **state)
{
	static int mine[FDPASS_MAX], got[FDPASS_MAX];
	int on = 1, fd = open("/dev/null", O_RDONLY), before;
	unsigned nfds;
	char b = 'x';

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(
		setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)), 0);
	for (int i = 0; i < FDPASS_MAX; i++)
		mine[i] = fd;
	before = testnet_count_fds();
	assert_int_equal(fdpass_send(sv[0], &b, 1, mine, FDPASS_MAX, 0), 0);
	assert_int_equal(fdpass_recv(sv[1], &b, 1, got, FDPASS_MAX, &nfds, 0),
			 1);
	assert_int_equal(nfds, FDPASS_MAX);
	for (int i = 0; i < FDPASS_MAX; i++)
		close(got[i]);
	assert_int_equal(testnet_count_fds(), before);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_round_trip, pair, unpair),
		cmocka_unit_test_setup_teardown(test_max, pair, unpair),
		cmocka_unit_test_setup_teardown(test_vectors, pair, unpair),
		cmocka_unit_test_setup_teardown(test_less_room, pair, unpair),
		cmocka_unit_test_setup_teardown(test_truncated, pair, unpair),
		cmocka_unit_test_setup_teardown(test_ctrunc, pair, unpair),
		cmocka_unit_test_setup_teardown(test_eagain_and_eof, pair,
						unpair),
		cmocka_unit_test_setup_teardown(test_eintr, pair, unpair),
		cmocka_unit_test_setup_teardown(test_credentials, pair, unpair),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
