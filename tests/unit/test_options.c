// SPDX-License-Identifier: GPL-2.0-or-later
/* test_options.c - command line, size, time and address parsing */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <cmocka.h>

#include "options.h"

static void test_sizes(void **state)
{
	size_t v;

	assert_int_equal(parse_size("65536", &v), 0);
	assert_int_equal(v, 65536);
	assert_int_equal(parse_size("8K", &v), 0);
	assert_int_equal(v, 8192);
	assert_int_equal(parse_size("64k", &v), 0);
	assert_int_equal(v, 65536);
	assert_int_equal(parse_size("1M", &v), 0);
	assert_int_equal(v, 1 << 20);
	assert_int_equal(parse_size("1024M", &v), 0);
	assert_int_equal(v, 1u << 30);

	assert_int_equal(parse_size("", &v), -1);
	assert_int_equal(parse_size("0", &v), -1);
	assert_int_equal(parse_size("-1", &v), -1);
	assert_int_equal(parse_size("K", &v), -1);
	assert_int_equal(parse_size("12Q", &v), -1);
	assert_int_equal(parse_size("8KB", &v), -1);
	assert_int_equal(parse_size("1025M", &v), -1);
	assert_int_equal(parse_size("99999999999999999999999", &v), -1);
	assert_int_equal(parse_size(" 5", &v), -1);
}

static void test_seconds(void **state)
{
	double v;

	assert_int_equal(parse_seconds("5", &v), 0);
	assert_true(v == 5.0);
	assert_int_equal(parse_seconds("0.25", &v), 0);
	assert_true(v == 0.25);
	assert_int_equal(parse_seconds("0", &v), 0);
	assert_int_equal(parse_seconds("-1", &v), -1);
	assert_int_equal(parse_seconds("nan", &v), -1);
	assert_int_equal(parse_seconds("inf", &v), -1);
	assert_int_equal(parse_seconds("3s", &v), -1);
	assert_int_equal(parse_seconds("", &v), -1);
}

static void test_endpoints(void **state)
{
	struct endpoint ep;
	const struct sockaddr_in *a4 = (const void *)&ep.addr;
	const struct sockaddr_in6 *a6 = (const void *)&ep.addr;

	assert_int_equal(parse_endpoint("127.0.0.1:445", &ep, false), 0);
	assert_int_equal(a4->sin_family, AF_INET);
	assert_int_equal(ntohs(a4->sin_port), 445);
	assert_string_equal(ep.text, "127.0.0.1:445");

	assert_int_equal(parse_endpoint("[::1]:1445", &ep, false), 0);
	assert_int_equal(a6->sin6_family, AF_INET6);
	assert_int_equal(ntohs(a6->sin6_port), 1445);

	assert_int_equal(parse_endpoint("*:445", &ep, true), 0);
	assert_int_equal(a4->sin_addr.s_addr, htonl(INADDR_ANY));
	assert_int_equal(parse_endpoint(":445", &ep, true), 0);

	assert_int_equal(parse_endpoint("*:445", &ep, false), -1);
	assert_int_equal(parse_endpoint("127.0.0.1", &ep, false), -1);
	assert_int_equal(parse_endpoint("127.0.0.1:", &ep, false), -1);
	assert_int_equal(parse_endpoint("127.0.0.1:0", &ep, false), -1);
	assert_int_equal(parse_endpoint("127.0.0.1:65536", &ep, false), -1);
	assert_int_equal(parse_endpoint("127.0.0.1:44x", &ep, false), -1);
	assert_int_equal(parse_endpoint("::1:445", &ep, false), -1);
	assert_int_equal(parse_endpoint("[::1:445", &ep, false), -1);
	assert_int_equal(parse_endpoint("999.1.1.1:445", &ep, false), -1);
}

#define ARGV(...)                                                              \
	char *argv[] = { "smbsplice", __VA_ARGS__, NULL };                     \
	int argc = (int)(sizeof(argv) / sizeof(argv[0])) - 1

static void test_full_command_line(void **state)
{
	ARGV("--listen", "127.0.0.1:1445", "--backend", "[::1]:445", "--mode",
	     "tcp", "--pipe-size", "8K", "--max-pipes", "16", "--buffer-size",
	     "4K", "--connect-timeout", "0.5", "--idle-timeout", "0", "-v",
	     "-v", "--no-splice");
	struct options o;
	char err[256] = "";

	assert_int_equal(options_parse(&o, argc, argv, err, sizeof(err)),
			 OPT_OK);
	assert_int_equal(o.mode, MODE_TCP);
	assert_int_equal(o.pipe_size, 8192);
	assert_int_equal(o.max_pipes, 16);
	assert_int_equal(o.buf_size, 4096);
	assert_true(o.connect_timeout == 0.5);
	assert_true(o.idle_timeout == 0);
	assert_int_equal(o.verbose, 2);
	assert_false(o.splice);
}

static void test_defaults(void **state)
{
	ARGV("-l", "127.0.0.1:1445", "-b", "127.0.0.1:445");
	struct options o;
	char err[256] = "";

	assert_int_equal(options_parse(&o, argc, argv, err, sizeof(err)),
			 OPT_OK);
	assert_int_equal(o.mode, MODE_SMB);
	assert_int_equal(o.pipe_size, OPT_DEFAULT_PIPE_SIZE);
	assert_int_equal(o.max_pipes, OPT_DEFAULT_MAX_PIPES);
	assert_int_equal(o.buf_size, OPT_DEFAULT_BUF_SIZE);
	assert_true(o.splice);
	assert_int_equal(o.th.min[SMB_CLASS_READ], OPT_DEFAULT_THRESHOLD);
	assert_int_equal(o.th.min[SMB_CLASS_OTHER], SMB_THRESHOLD_OFF);
	assert_int_equal(o.stats.len, 0);
}

/* Each bad command line gets one line naming what is wrong. */
static void expect_bad(int argc, char **argv, const char *needle)
{
	struct options o;
	char err[256] = "";

	assert_int_equal(options_parse(&o, argc, argv, err, sizeof(err)),
			 OPT_BAD);
	assert_non_null(strstr(err, needle));
	assert_null(strchr(err, '\n'));
}

static void test_bad_pipe_size(void **state)
{
	ARGV("-l", "127.0.0.1:1", "-b", "127.0.0.1:2", "--pipe-size", "12Q");
	expect_bad(argc, argv, "--pipe-size '12Q'");
}

static void test_bad_mode(void **state)
{
	ARGV("-l", "127.0.0.1:1", "-b", "127.0.0.1:2", "--mode", "udp");
	expect_bad(argc, argv, "--mode 'udp'");
}

static void test_missing_backend(void **state)
{
	ARGV("-l", "127.0.0.1:1");
	expect_bad(argc, argv, "--backend");
}

static void test_unknown_option(void **state)
{
	ARGV("-l", "127.0.0.1:1", "-b", "127.0.0.1:2", "--frobnicate");
	expect_bad(argc, argv, "unknown option '--frobnicate'");
}

static void test_stray_argument(void **state)
{
	ARGV("-l", "127.0.0.1:1", "-b", "127.0.0.1:2", "extra");
	expect_bad(argc, argv, "'extra'");
}

static void test_thresholds_and_stats(void **state)
{
	ARGV("-l", "127.0.0.1:1", "-b", "127.0.0.1:2", "--read-threshold",
	     "16K", "--write-threshold", "off", "--other-threshold", "1M",
	     "--stats", "127.0.0.1:9445");
	struct options o;
	char err[256] = "";
	uint32_t v;

	assert_int_equal(options_parse(&o, argc, argv, err, sizeof(err)),
			 OPT_OK);
	assert_int_equal(o.th.min[SMB_CLASS_READ], 16384);
	assert_int_equal(o.th.min[SMB_CLASS_WRITE], SMB_THRESHOLD_OFF);
	assert_int_equal(o.th.min[SMB_CLASS_OTHER], 1 << 20);
	assert_true(o.stats.len > 0);

	assert_int_equal(parse_threshold("off", &v), 0);
	assert_int_equal(v, SMB_THRESHOLD_OFF);
	assert_int_equal(parse_threshold("17M", &v), -1);
	assert_int_equal(parse_threshold("never", &v), -1);
}

static void test_bad_threshold(void **state)
{
	ARGV("-l", "127.0.0.1:1", "-b", "127.0.0.1:2", "--write-threshold",
	     "big");
	expect_bad(argc, argv, "--write-threshold 'big'");
}

static void test_bad_timeout(void **state)
{
	ARGV("-l", "127.0.0.1:1", "-b", "127.0.0.1:2", "--connect-timeout",
	     "0");
	expect_bad(argc, argv, "--connect-timeout");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_seconds),
		cmocka_unit_test(test_endpoints),
		cmocka_unit_test(test_full_command_line),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_bad_pipe_size),
		cmocka_unit_test(test_bad_mode),
		cmocka_unit_test(test_missing_backend),
		cmocka_unit_test(test_unknown_option),
		cmocka_unit_test(test_stray_argument),
		cmocka_unit_test(test_bad_timeout),
		cmocka_unit_test(test_thresholds_and_stats),
		cmocka_unit_test(test_bad_threshold),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
