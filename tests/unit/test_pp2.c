// SPDX-License-Identifier: GPL-2.0-or-later
/* test_pp2.c - PROXY protocol v2: headers built for IPv4, IPv6 and
 * mixed families read back to the same addresses; two headers captured
 * from HAProxy 2.6's send-proxy-v2 (IPv4 without TLVs; IPv6 with its
 * CRC32C and UNIQUE_ID TLVs) read as HAProxy meant them; LOCAL; and
 * malformed input: every header cut at every byte is PP2_NEED_MORE
 * (never OK, never past the bytes given), every single-byte change of the
 * fixed part that breaks it is an error, a length past the caller's
 * bound, addresses longer than the length, a TLV cut short or longer than
 * what is left, DGRAM and UNIX under PROXY, and a stream that is not
 * PROXY protocol at all, refused at its first byte */
#include "config.h"

#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "pp2/pp2.h"

/* HAProxy 2.6.12: `server s1 127.0.0.1:18811 send-proxy-v2`, a client
 * 127.0.0.1:50574 to the frontend 127.0.0.1:18801. */
static const uint8_t haproxy_v4[] = {
	0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49,
	0x54, 0x0a, 0x21, 0x11, 0x00, 0x0c, 0x7f, 0x00, 0x00, 0x01,
	0x7f, 0x00, 0x00, 0x01, 0xc5, 0x8e, 0x49, 0x71,
};

/* HAProxy 2.6.12: `send-proxy-v2 proxy-v2-options crc32c,unique-id`,
 * unique-id-format smbsplice-%ci, a client [::1]:32936 to [::1]:18802. */
static const uint8_t haproxy_v6_tlv[] = {
	0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54,
	0x0a, 0x21, 0x21, 0x00, 0x3b, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x01, 0x80, 0xa8, 0x49, 0x72, 0x03, 0x00, 0x04,
	0xc7, 0xda, 0x43, 0x10, 0x05, 0x00, 0x0d, 0x73, 0x6d, 0x62, 0x73,
	0x70, 0x6c, 0x69, 0x63, 0x65, 0x2d, 0x3a, 0x3a, 0x31,
};

static struct sockaddr_in v4(const char *ip, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port) };

	assert_int_equal(inet_pton(AF_INET, ip, &a.sin_addr), 1);
	return a;
}

static struct sockaddr_in6 v6(const char *ip, uint16_t port)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6,
				  .sin6_port = htons(port) };

	assert_int_equal(inet_pton(AF_INET6, ip, &a.sin6_addr), 1);
	return a;
}

static enum pp2_result parse(const uint8_t *b, size_t n, struct pp2_info *info,
			     const char **why)
{
	*why = NULL;
	return pp2_parse(b, n, 1024, info, why);
}

/* Every prefix of a valid header is PP2_NEED_MORE, the whole is OK. */
static void every_prefix(const uint8_t *b, size_t len)
{
	struct pp2_info info;
	const char *why;

	for (size_t n = 0; n < len; n++)
		assert_int_equal(parse(b, n, &info, &why), PP2_NEED_MORE);
	assert_int_equal(parse(b, len, &info, &why), PP2_OK);
	assert_int_equal(info.len, len);
}

static void test_build_v4(void **state)
{
	(void)state;
	struct sockaddr_in s = v4("192.0.2.10", 50000),
			   d = v4("192.0.2.1", 445);
	uint8_t out[PP2_BUILD_MAX], more[PP2_BUILD_MAX + 5];
	struct pp2_info info;
	const char *why;
	int n = pp2_build(out, sizeof(out), (struct sockaddr *)&s,
			  (struct sockaddr *)&d);

	assert_int_equal(n, 28);
	assert_memory_equal(out, PP2_SIG, PP2_SIG_LEN);
	assert_int_equal(out[12], 0x21);
	assert_int_equal(out[13], 0x11);
	every_prefix(out, (size_t)n);
	/* The stream's own bytes after it are not the header's. */
	memcpy(more, out, (size_t)n);
	memcpy(more + n, "\0\0\0\x54\xfe", 5);
	assert_int_equal(parse(more, (size_t)n + 5, &info, &why), PP2_OK);
	assert_int_equal(info.len, 28);
	assert_true(info.has_addr && !info.local);
	assert_int_equal(info.addrlen, sizeof(s));
	assert_memory_equal(&info.src, &s, sizeof(s));
	assert_memory_equal(&info.dst, &d, sizeof(d));
	assert_int_equal(pp2_build(out, 27, (struct sockaddr *)&s,
				   (struct sockaddr *)&d),
			 -1);
}

static void test_build_v6_and_mixed(void **state)
{
	(void)state;
	struct sockaddr_in6 s = v6("2001:db8::10", 50001),
			    d = v6("2001:db8::1", 445);
	struct sockaddr_in s4 = v4("192.0.2.10", 50002);
	struct sockaddr_in6 mapped = v6("::ffff:192.0.2.10", 50002);
	struct {
		sa_family_t f;
		char p[8];
	} u = { AF_UNIX, "x" };
	uint8_t out[PP2_BUILD_MAX];
	struct pp2_info info;
	const char *why;
	int n = pp2_build(out, sizeof(out), (struct sockaddr *)&s,
			  (struct sockaddr *)&d);

	assert_int_equal(n, PP2_BUILD_MAX);
	assert_int_equal(out[13], 0x21);
	every_prefix(out, (size_t)n);
	assert_int_equal(parse(out, (size_t)n, &info, &why), PP2_OK);
	assert_int_equal(info.addrlen, sizeof(s));
	assert_memory_equal(&info.src, &s, sizeof(s));
	assert_memory_equal(&info.dst, &d, sizeof(d));

	/* An IPv4 client to an IPv6 destination: both as IPv6. */
	n = pp2_build(out, sizeof(out), (struct sockaddr *)&s4,
		      (struct sockaddr *)&d);
	assert_int_equal(n, PP2_BUILD_MAX);
	assert_int_equal(parse(out, (size_t)n, &info, &why), PP2_OK);
	assert_memory_equal(&info.src, &mapped, sizeof(mapped));

	assert_int_equal(pp2_build(out, sizeof(out), (struct sockaddr *)&u,
				   (struct sockaddr *)&d),
			 -1);
}

static void test_haproxy(void **state)
{
	(void)state;
	struct sockaddr_in s = v4("127.0.0.1", 50574),
			   d = v4("127.0.0.1", 18801);
	struct sockaddr_in6 s6 = v6("::1", 32936), d6 = v6("::1", 18802);
	struct pp2_info info;
	const char *why;

	every_prefix(haproxy_v4, sizeof(haproxy_v4));
	assert_int_equal(parse(haproxy_v4, sizeof(haproxy_v4), &info, &why),
			 PP2_OK);
	assert_int_equal(info.tlvs, 0);
	assert_memory_equal(&info.src, &s, sizeof(s));
	assert_memory_equal(&info.dst, &d, sizeof(d));

	every_prefix(haproxy_v6_tlv, sizeof(haproxy_v6_tlv));
	assert_int_equal(
		parse(haproxy_v6_tlv, sizeof(haproxy_v6_tlv), &info, &why),
		PP2_OK);
	assert_int_equal(info.len, 75);
	assert_int_equal(info.tlvs, 2);
	assert_memory_equal(&info.src, &s6, sizeof(s6));
	assert_memory_equal(&info.dst, &d6, sizeof(d6));
}

static void test_local(void **state)
{
	(void)state;
	uint8_t b[64];
	struct pp2_info info;
	const char *why;

	/* LOCAL with no addresses, and LOCAL with IPv4 ones: ignored. */
	memcpy(b, PP2_SIG, PP2_SIG_LEN);
	b[12] = 0x20, b[13] = 0x00, b[14] = 0, b[15] = 0;
	every_prefix(b, 16);
	assert_int_equal(parse(b, 16, &info, &why), PP2_OK);
	assert_true(info.local && !info.has_addr);
	memcpy(b, haproxy_v4, sizeof(haproxy_v4));
	b[12] = 0x20;
	assert_int_equal(parse(b, sizeof(haproxy_v4), &info, &why), PP2_OK);
	assert_true(info.local && !info.has_addr);
	/* PROXY with UNSPEC: no addresses to use. */
	memcpy(b, PP2_SIG, PP2_SIG_LEN);
	b[12] = 0x21, b[13] = 0x00, b[14] = 0, b[15] = 0;
	assert_int_equal(parse(b, 16, &info, &why), PP2_OK);
	assert_true(!info.local && !info.has_addr);
}

static void expect_error(const uint8_t *b, size_t n, const char *reason)
{
	struct pp2_info info;
	const char *why;

	assert_int_equal(parse(b, n, &info, &why), PP2_ERROR);
	assert_non_null(why);
	if (reason && !strstr(why, reason))
		fail_msg("reason '%s', expected '%s'", why, reason);
}

static void test_malformed_fixed(void **state)
{
	(void)state;
	uint8_t b[sizeof(haproxy_v6_tlv)];
	struct pp2_info info;
	const char *why;

	/* Not PROXY protocol: an SMB NEGOTIATE, refused at its first byte,
	 * and a v1 header. */
	expect_error((const uint8_t *)"\0\0\0\x54\xfeSMB", 1, "signature");
	expect_error((const uint8_t *)"PROXY TCP4 ", 11, "signature");
	/* Each signature byte wrong, seen as soon as it arrives. */
	for (size_t i = 0; i < PP2_SIG_LEN; i++) {
		memcpy(b, haproxy_v4, sizeof(haproxy_v4));
		b[i] ^= 0x40;
		expect_error(b, i + 1, "signature");
	}
	memcpy(b, haproxy_v4, sizeof(haproxy_v4));
	b[12] = 0x11;
	expect_error(b, 13, "version 2");
	b[12] = 0x22;
	expect_error(b, 13, "command");
	b[12] = 0x21, b[13] = 0x41;
	expect_error(b, 14, "family");
	b[13] = 0x13;
	expect_error(b, 14, "family");
	b[13] = 0x12; /* UDP */
	expect_error(b, 14, "TCP");
	b[13] = 0x31; /* UNIX stream */
	expect_error(b, 14, "TCP");
	/* Addresses longer than the length says. */
	b[13] = 0x11, b[15] = 11;
	expect_error(b, 16, "shorter than its addresses");
	b[13] = 0x21, b[15] = 12;
	expect_error(b, 16, "shorter than its addresses");
	/* A length past the caller's bound, and the largest there is. */
	b[13] = 0x11, b[14] = 0x04, b[15] = 0x00;
	expect_error(b, 16, "longer than allowed");
	b[14] = 0xff, b[15] = 0xff;
	expect_error(b, 16, "longer than allowed");
	assert_int_equal(pp2_parse(b, 16, PP2_MAX_LEN, &info, &why),
			 PP2_NEED_MORE);
}

static void test_malformed_tlv(void **state)
{
	(void)state;
	uint8_t b[sizeof(haproxy_v6_tlv) + 8];
	size_t n = sizeof(haproxy_v6_tlv);

	/* The last TLV's length one past the end, and the largest. */
	memcpy(b, haproxy_v6_tlv, n);
	b[n - 13 - 2 + 1] = 0x0e;
	expect_error(b, n, "TLV longer");
	b[n - 13 - 2] = 0xff, b[n - 13 - 2 + 1] = 0xff;
	expect_error(b, n, "TLV longer");
	/* The first TLV's length past the end. */
	memcpy(b, haproxy_v6_tlv, n);
	b[53] = 0x01;
	expect_error(b, n, "TLV longer");
	/* One and two bytes of TLV after the last one: no room for a
	 * TLV's own header. */
	for (size_t extra = 1; extra <= 2; extra++) {
		memcpy(b, haproxy_v6_tlv, n);
		memset(b + n, 0x04, extra);
		b[15] = (uint8_t)(0x3b + extra);
		expect_error(b, n + extra, "TLV cut short");
	}
	/* An empty TLV (length 0) is fine. */
	memcpy(b, haproxy_v6_tlv, n);
	memcpy(b + n, "\x04\x00\x00", 3);
	b[15] = 0x3b + 3;
	struct pp2_info info;
	const char *why;

	assert_int_equal(parse(b, n + 3, &info, &why), PP2_OK);
	assert_int_equal(info.tlvs, 3);
}

/* Random bytes after a valid signature, at every length: the parser
 * answers, never reads past what it was given (ASan checks the copy on
 * the heap, sized exactly), and an OK header fits in the bytes given. */
static void test_random(void **state)
{
	(void)state;
	srand(20);
	for (int round = 0; round < 20000; round++) {
		size_t n = (size_t)(rand() % 96);
		uint8_t *b = malloc(n ? n : 1);
		struct pp2_info info;
		const char *why;

		assert_non_null(b);
		for (size_t i = 0; i < n; i++)
			b[i] = (uint8_t)rand();
		memcpy(b, PP2_SIG, n < PP2_SIG_LEN ? n : PP2_SIG_LEN);
		if (n > 12 && rand() % 2)
			b[12] = 0x21;
		if (n > 13 && rand() % 2)
			b[13] = rand() % 2 ? 0x11 : 0x21;
		if (n > 14 && rand() % 2)
			b[14] = 0;
		enum pp2_result r = parse(b, n, &info, &why);

		if (r == PP2_OK)
			assert_true(info.len <= n && info.len >= PP2_FIXED_LEN);
		free(b);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_build_v4),
		cmocka_unit_test(test_build_v6_and_mixed),
		cmocka_unit_test(test_haproxy),
		cmocka_unit_test(test_local),
		cmocka_unit_test(test_malformed_fixed),
		cmocka_unit_test(test_malformed_tlv),
		cmocka_unit_test(test_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
