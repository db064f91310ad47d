// SPDX-License-Identifier: GPL-2.0-or-later
/* test_acceptproof.c - the helper reads a saved SYN's addresses right: an
 * IPv4 header with options, an IPv6 header with and without extension
 * headers; it refuses a truncated header, a segment without SYN, another
 * IP version and an extension header it does not walk; an IPv4 endpoint
 * equals its v4-mapped IPv6 form and nothing else. The proof on live
 * sockets is in test_privhelper (test_transparent, test_forged_client).
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <cmocka.h>

#include "priv/acceptproof.h"

/* A TCP header from port 50000 to 445 with @flags, at @p. */
static void tcp_at(uint8_t *p, uint8_t flags)
{
	memset(p, 0, 20);
	p[0] = 50000 >> 8, p[1] = 50000 & 0xff;
	p[2] = 445 >> 8, p[3] = 445 & 0xff;
	p[12] = 5 << 4;
	p[13] = flags;
}

/* An IPv4 SYN from 192.0.2.1 to 192.0.2.2 with @opt bytes of options. */
static size_t syn4(uint8_t *b, size_t opt, uint8_t flags)
{
	memset(b, 0, 20 + opt);
	b[0] = 0x40 | (uint8_t)((20 + opt) / 4);
	b[9] = IPPROTO_TCP;
	inet_pton(AF_INET, "192.0.2.1", b + 12);
	inet_pton(AF_INET, "192.0.2.2", b + 16);
	tcp_at(b + 20 + opt, flags);
	return 40 + opt;
}

/* An IPv6 SYN from 2001:db8::1 to 2001:db8::2, behind one extension
 * header of type @ext (0: none) of 8 bytes. */
static size_t syn6(uint8_t *b, uint8_t ext)
{
	size_t off = 40;

	memset(b, 0, 80);
	b[0] = 0x60;
	b[6] = ext ? ext : IPPROTO_TCP;
	inet_pton(AF_INET6, "2001:db8::1", b + 8);
	inet_pton(AF_INET6, "2001:db8::2", b + 24);
	if (ext) {
		b[40] = IPPROTO_TCP;
		b[41] = 0;
		off += 8;
	}
	tcp_at(b + off, 0x02);
	return off + 20;
}

/* @ss is @addr port @port. */
static void assert_endpoint(const struct sockaddr_storage *ss, int family,
			    const char *addr, unsigned port)
{
	char text[INET6_ADDRSTRLEN];
	const void *a =
		family == AF_INET
			? (const void *)&((const struct sockaddr_in *)ss)
				  ->sin_addr
			: (const void *)&((const struct sockaddr_in6 *)ss)
				  ->sin6_addr;
	unsigned p =
		ntohs(family == AF_INET
			      ? ((const struct sockaddr_in *)ss)->sin_port
			      : ((const struct sockaddr_in6 *)ss)->sin6_port);

	assert_int_equal(ss->ss_family, family);
	assert_string_equal(inet_ntop(family, a, text, sizeof(text)), addr);
	assert_int_equal(p, port);
}

static void test_v4(void **state)
{
	struct sockaddr_storage src, dst;
	uint8_t b[128];
	size_t len;

	(void)state;
	len = syn4(b, 0, 0x02);
	assert_true(acceptproof_syn_addresses(b, len, &src, &dst));
	assert_endpoint(&src, AF_INET, "192.0.2.1", 50000);
	assert_endpoint(&dst, AF_INET, "192.0.2.2", 445);
	len = syn4(b, 12, 0x02); /* IP options move the TCP header */
	assert_true(acceptproof_syn_addresses(b, len, &src, &dst));
	assert_endpoint(&dst, AF_INET, "192.0.2.2", 445);
	assert_false(acceptproof_syn_addresses(b, len - 1, &src,
					       &dst)); /* truncated */
	len = syn4(b, 0, 0x10);			       /* an ACK, no SYN */
	assert_false(acceptproof_syn_addresses(b, len, &src, &dst));
	len = syn4(b, 0, 0x02);
	b[0] = 0x44; /* an IHL below 5 */
	assert_false(acceptproof_syn_addresses(b, len, &src, &dst));
	b[0] = 0x55; /* IP version 5 */
	assert_false(acceptproof_syn_addresses(b, len, &src, &dst));
	assert_false(acceptproof_syn_addresses(b, 0, &src, &dst));
}

static void test_v6(void **state)
{
	struct sockaddr_storage src, dst;
	uint8_t b[128];
	size_t len;

	(void)state;
	len = syn6(b, 0);
	assert_true(acceptproof_syn_addresses(b, len, &src, &dst));
	assert_endpoint(&src, AF_INET6, "2001:db8::1", 50000);
	assert_endpoint(&dst, AF_INET6, "2001:db8::2", 445);
	len = syn6(b, IPPROTO_DSTOPTS);
	assert_true(acceptproof_syn_addresses(b, len, &src, &dst));
	assert_endpoint(&dst, AF_INET6, "2001:db8::2", 445);
	assert_false(acceptproof_syn_addresses(b, len - 1, &src, &dst));
	assert_false(acceptproof_syn_addresses(b, 39, &src, &dst));
	len = syn6(b, IPPROTO_FRAGMENT); /* not one a SYN carries */
	assert_false(acceptproof_syn_addresses(b, len, &src, &dst));
	len = syn6(b, IPPROTO_ROUTING);
	b[41] = 200; /* a length past the end */
	assert_false(acceptproof_syn_addresses(b, len, &src, &dst));
}

static void test_same_host(void **state)
{
	struct sockaddr_storage a = { 0 }, b = { 0 };
	struct sockaddr_in *v4 = (struct sockaddr_in *)&a;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&b;

	(void)state;
	v4->sin_family = AF_INET;
	v4->sin_port = htons(445);
	inet_pton(AF_INET, "192.0.2.1", &v4->sin_addr);
	v6->sin6_family = AF_INET6;
	v6->sin6_port = htons(445);
	inet_pton(AF_INET6, "::ffff:192.0.2.1", &v6->sin6_addr);
	assert_true(acceptproof_same_host(&a, &b));
	assert_true(acceptproof_same_host(&b, &a));
	v6->sin6_port = htons(446);
	assert_false(acceptproof_same_host(&a, &b));
	v6->sin6_port = htons(445);
	inet_pton(AF_INET6, "2001:db8::1", &v6->sin6_addr);
	assert_false(acceptproof_same_host(&a, &b));
	b.ss_family = AF_UNIX;
	assert_false(acceptproof_same_host(&a, &b));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_v4),
		cmocka_unit_test(test_v6),
		cmocka_unit_test(test_same_host),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
