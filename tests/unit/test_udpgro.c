// SPDX-License-Identifier: GPL-2.0-or-later
/* test_udpgro.c - datagrams the kernel coalesced (UDP_GRO) are cut again
 * where the sender's segments ended, and a socket without GRO reads one
 * datagram a time, as the QUIC listener and backend expect of io/sock.c
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "io/sock.h"

#ifndef UDP_GRO
#define UDP_GRO 104
#endif

#define SEG  1200
#define SEGS 10
#define LAST 500

/* A bound UDP socket on 127.0.0.1 and its address. */
static int udp_on_loopback(struct sockaddr_in *sa)
{
	socklen_t len = sizeof(*sa);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	assert_true(fd >= 0);
	*sa = (struct sockaddr_in){ .sin_family = AF_INET,
				    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_int_equal(bind(fd, (struct sockaddr *)sa, sizeof(*sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)sa, &len), 0);
	return fd;
}

/* SEGS segments of SEG bytes and one of LAST, each byte its offset. */
static void send_run(int tx, const struct sockaddr_in *to, uint8_t *buf)
{
	for (size_t i = 0; i < SEGS * SEG + LAST; i++)
		buf[i] = (uint8_t)(i * 7 + i / SEG);
	assert_int_equal(sock_send_gso(tx, (const struct sockaddr *)to,
				       sizeof(*to), buf, SEGS * SEG + LAST,
				       SEG),
			 0);
}

/* One read into a buffer of SOCK_GRO_MAX; its segment size. */
static size_t read_one(int rx, uint8_t *buf, size_t *seg)
{
	union {
		char b[SOCK_GRO_CMSG];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { buf, SOCK_GRO_MAX };
	struct msghdr h = { .msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = ctl.b,
			    .msg_controllen = sizeof(ctl.b) };
	ssize_t n = recvmsg(rx, &h, MSG_DONTWAIT);

	assert_true(n > 0);
	assert_false(h.msg_flags & MSG_TRUNC);
	*seg = sock_gro_seg(&h, (size_t)n);
	return (size_t)n;
}

static void test_coalesced(void **state)
{
	static uint8_t out[SOCK_GRO_MAX], in[SOCK_GRO_MAX];
	struct sockaddr_in a, b;
	int rx = udp_on_loopback(&a), tx = udp_on_loopback(&b);
	size_t n, seg;

	(void)state;
	assert_true(sock_gro_on(rx));
	send_run(tx, &a, out);
	n = read_one(rx, in, &seg);
	/* the whole run in one read, cut where the sender's segments were */
	assert_int_equal(n, SEGS * SEG + LAST);
	assert_int_equal(seg, SEG);
	assert_memory_equal(in, out, n);
	close(rx);
	close(tx);
}

static void test_without_gro(void **state)
{
	static uint8_t out[SOCK_GRO_MAX], in[SOCK_GRO_MAX];
	struct sockaddr_in a, b;
	int rx = udp_on_loopback(&a), tx = udp_on_loopback(&b);
	size_t n, seg, at = 0;

	(void)state;
	send_run(tx, &a, out);
	for (int i = 0; i <= SEGS; i++) {
		n = read_one(rx, in, &seg);
		assert_int_equal(n, i < SEGS ? SEG : LAST);
		assert_int_equal(seg, n); /* one datagram: the read itself */
		assert_memory_equal(in, out + at, n);
		at += n;
	}
	close(rx);
	close(tx);
}

/* A segment size that no read could have (0, or longer than the read)
 * is the read's own length: a run is never cut past its end. */
static void test_seg_bounds(void **state)
{
	union {
		char b[SOCK_GRO_CMSG];
		struct cmsghdr align;
	} ctl;
	struct msghdr h = { .msg_control = ctl.b,
			    .msg_controllen = sizeof(ctl.b) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&h);
	int v;

	(void)state;
	assert_int_equal(sock_gro_seg(&(struct msghdr){ 0 }, 900), 900);
	c->cmsg_level = SOL_UDP;
	c->cmsg_type = UDP_GRO;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	for (int i = 0; i < 3; i++) {
		const int segs[] = { 0, 5000, 300 };
		const size_t want[] = { 900, 900, 300 };

		v = segs[i];
		memcpy(CMSG_DATA(c), &v, sizeof(v));
		assert_int_equal(sock_gro_seg(&h, 900), want[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_coalesced),
		cmocka_unit_test(test_without_gro),
		cmocka_unit_test(test_seg_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
