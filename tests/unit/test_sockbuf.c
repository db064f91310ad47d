// SPDX-License-Identifier: GPL-2.0-or-later
/* test_sockbuf.c - a socket's buffers held to what its path needs */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "io/sockbuf.h"
#include "testnet.h"

static void test_choose(void **state)
{
	(void)state;
	assert_int_equal(sockbuf_choose(SOCKBUF_AUTO, 0), 0);
	assert_int_equal(sockbuf_choose(SOCKBUF_AUTO, 1), SOCKBUF_SHORT_BYTES);
	assert_int_equal(sockbuf_choose(SOCKBUF_AUTO, SOCKBUF_SHORT_RTT_US - 1),
			 SOCKBUF_SHORT_BYTES);
	assert_int_equal(sockbuf_choose(SOCKBUF_AUTO, SOCKBUF_SHORT_RTT_US), 0);
	assert_int_equal(sockbuf_choose(SOCKBUF_AUTO, 40000), 0);
	/* kernel, and a size dial.c fixed before the handshake: untouched */
	assert_int_equal(sockbuf_choose(SOCKBUF_KERNEL, 20), 0);
	assert_int_equal(sockbuf_choose(1u << 20, 20), 0);
}

/* What the kernel makes of SOCKBUF_SHORT_BYTES on one side: twice it, or
 * twice net.core.{r,w}mem_max where that is lower and the FORCE options
 * are not ours (a package built as an ordinary user). */
static int held_size(int fd, int force_opt, const char *max_path)
{
	int v = SOCKBUF_SHORT_BYTES;
	long max = 0;
	FILE *f;

	if (setsockopt(fd, SOL_SOCKET, force_opt, &v, sizeof(v)) == 0)
		return 2 * SOCKBUF_SHORT_BYTES;
	f = fopen(max_path, "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%ld", &max), 1);
	fclose(f);
	return 2 * (int)(max < v ? max : v);
}

static int rcvbuf(int fd)
{
	int v = 0;
	socklen_t len = sizeof(v);

	assert_int_equal(getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, &len), 0);
	return v;
}

static int sndbuf(int fd)
{
	int v = 0;
	socklen_t len = sizeof(v);

	assert_int_equal(getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, &len), 0);
	return v;
}

/* Both ends of a loopback pair have an RTT from the handshake; either it
 * is short (as it is unless the machine is very busy) and the socket is
 * held, both ways, at what the kernel makes of SOCKBUF_SHORT_BYTES, or it
 * is not and the socket is left exactly as it was. */
static void test_fit_loopback(void **state)
{
	struct sockaddr_in at = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int l, c, s, ends[2];
	unsigned rtt;

	(void)state;
	tcp_pair(at, &l, &c, &s);
	ends[0] = c;
	ends[1] = s;
	for (int i = 0; i < 2; i++) {
		int rb = rcvbuf(ends[i]), tb = sndbuf(ends[i]);
		int r = sockbuf_fit(ends[i], SOCKBUF_AUTO, &rtt);

		assert_true(rtt > 0);
		if (rtt < SOCKBUF_SHORT_RTT_US) {
			assert_int_equal(r, SOCKBUF_SHORT_BYTES);
			assert_int_equal(
				rcvbuf(ends[i]),
				held_size(ends[i], SO_RCVBUFFORCE,
					  "/proc/sys/net/core/rmem_max"));
			assert_int_equal(
				sndbuf(ends[i]),
				held_size(ends[i], SO_SNDBUFFORCE,
					  "/proc/sys/net/core/wmem_max"));
		} else {
			assert_int_equal(r, 0);
			assert_int_equal(rcvbuf(ends[i]), rb);
			assert_int_equal(sndbuf(ends[i]), tb);
		}
	}
	close(l);
	close(c);
	close(s);
}

/* kernel leaves the socket as it is, RTT or not */
static void test_fit_kernel(void **state)
{
	struct sockaddr_in at = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int l, c, s, rb;
	unsigned rtt = 7;

	(void)state;
	tcp_pair(at, &l, &c, &s);
	rb = rcvbuf(s);
	assert_int_equal(sockbuf_fit(s, SOCKBUF_KERNEL, &rtt), 0);
	assert_int_equal(rtt, 0);
	assert_int_equal(rcvbuf(s), rb);
	close(l);
	close(c);
	close(s);
}

/* no RTT to go by (TCP_INFO refused): nothing is changed, nothing fails */
static void test_fit_no_rtt(void **state)
{
	int p[2];
	unsigned rtt = 7;

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(sockbuf_fit(p[0], SOCKBUF_AUTO, &rtt), 0);
	assert_int_equal(rtt, 0);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_choose),
		cmocka_unit_test(test_fit_loopback),
		cmocka_unit_test(test_fit_kernel),
		cmocka_unit_test(test_fit_no_rtt),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
