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

#include "conf/options.h"

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
#define ARGV_2(...)                                                            \
	char *argv2[] = { "smbsplice", __VA_ARGS__, NULL };                    \
	int argc2 = (int)(sizeof(argv2) / sizeof(argv2[0])) - 1
#define ARGV_3(...)                                                            \
	char *argv3[] = { "smbsplice", __VA_ARGS__, NULL };                    \
	int argc3 = (int)(sizeof(argv3) / sizeof(argv3[0])) - 1

static void test_full_command_line(void **state)
{
	ARGV("--listen", "127.0.0.1:1445", "--backend", "[::1]:445", "--mode",
	     "tcp", "--pipe-size", "8K", "--max-pipes", "16", "--buffer-size",
	     "4K", "--connect-timeout", "0.5", "--idle-timeout", "0", "-v",
	     "-v", "--no-splice");
	static struct config c;
	char err[256] = "";

	assert_int_equal(options_parse(&c, argc, argv, false, err, sizeof(err)),
			 OPT_OK);
	assert_int_equal(c.ls[0].mode, MODE_TCP);
	assert_int_equal(c.o.pipe_size, 8192);
	assert_int_equal(c.o.max_pipes, 16);
	assert_int_equal(c.o.buf_size, 4096);
	assert_true(c.ls[0].connect_timeout == 0.5);
	assert_true(c.ls[0].idle_timeout == 0);
	assert_int_equal(c.o.verbose, 2);
	assert_false(c.ls[0].splice);
}

static void test_defaults(void **state)
{
	ARGV("-l", "127.0.0.1:1445", "-b", "127.0.0.1:445");
	static struct config c;
	char err[256] = "";

	assert_int_equal(options_parse(&c, argc, argv, false, err, sizeof(err)),
			 OPT_OK);
	assert_int_equal(c.ls[0].mode, MODE_SMB);
	assert_int_equal(c.o.pipe_size, OPT_DEFAULT_PIPE_SIZE);
	assert_int_equal(c.o.max_pipes, OPT_DEFAULT_MAX_PIPES);
	assert_int_equal(c.o.buf_size, OPT_DEFAULT_BUF_SIZE);
	assert_true(c.ls[0].splice);
	assert_int_equal(c.ls[0].th.min[SMB_CLASS_READ], OPT_DEFAULT_THRESHOLD);
	assert_int_equal(c.ls[0].th.min[SMB_CLASS_OTHER], SMB_THRESHOLD_OFF);
	assert_int_equal(c.o.stats.len, 0);
}

/* Each bad command line gets one line naming what is wrong. */
static void expect_bad(int argc, char **argv, const char *needle)
{
	static struct config c;
	char err[256] = "";

	assert_int_equal(options_parse(&c, argc, argv, false, err, sizeof(err)),
			 OPT_BAD);
	assert_non_null(strstr(err, needle));
	assert_null(strchr(err, '\n'));
}

static void test_bad_pipe_size(void **state)
{
	ARGV("-l", "127.0.0.1:1", "-b", "127.0.0.1:2", "--pipe-size", "12Q");
	expect_bad(argc, argv, "--pipe-size '12Q'");
}

/* a port out of range is named as such, not as a name that does not
 * resolve */
static void test_bad_port(void **state)
{
	ARGV("-l", "127.0.0.1:99999", "-b", "127.0.0.1:2");
	ARGV_2("-l", "127.0.0.1:1", "-b", "[::1]:0");
	ARGV_3("-l", "127.0.0.1:44x", "-b", "127.0.0.1:2");

	expect_bad(
		argc, argv,
		"--listen '127.0.0.1:99999': expected a port from 1 to 65535");
	expect_bad(argc2, argv2,
		   "--backend '[::1]:0': expected a port from 1 to 65535");
	expect_bad(argc3, argv3, "that resolves");
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
	static struct config c;
	char err[256] = "";
	uint32_t v;

	assert_int_equal(options_parse(&c, argc, argv, false, err, sizeof(err)),
			 OPT_OK);
	assert_int_equal(c.ls[0].th.min[SMB_CLASS_READ], 16384);
	assert_int_equal(c.ls[0].th.min[SMB_CLASS_WRITE], SMB_THRESHOLD_OFF);
	assert_int_equal(c.ls[0].th.min[SMB_CLASS_OTHER], 1 << 20);
	assert_true(c.o.stats.len > 0);

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

/* Per-listener WAN and deployment options, and the ones that repeat. */
static void test_deployment_options(void **state)
{
	ARGV("-l", "[::]:445", "-b", "[2001:db8::1]:445", "--backend",
	     "[2001:db8::2]:445", "--allow", "2001:db8::/32", "--allow",
	     "192.0.2.7", "--keepalive", "30:5:4", "--congestion", "bbr",
	     "--congestion", "client:reno", "--source", "2001:db8::9",
	     "--mptcp", "backend", "--listen-netns", "files", "--backend-netns",
	     "1234", "--idle-timeout", "off");
	static struct config c;
	char err[256] = "";

	assert_int_equal(options_parse(&c, argc, argv, false, err, sizeof(err)),
			 OPT_OK);
	assert_int_equal(c.ls[0].nbackends, 2);
	assert_string_equal(c.ls[0].backend[1].text, "[2001:db8::2]:445");
	assert_int_equal(c.ls[0].nallow, 2);
	assert_int_equal(c.ls[0].allow[0].bits, 32);
	assert_int_equal(c.ls[0].allow[1].family, AF_INET);
	assert_int_equal(c.ls[0].allow[1].bits, 32);
	assert_int_equal(c.ls[0].keepalive.idle, 30);
	assert_int_equal(c.ls[0].keepalive.intvl, 5);
	assert_int_equal(c.ls[0].keepalive.cnt, 4);
	assert_string_equal(c.ls[0].cc[SIDE_CLIENT], "reno");
	assert_string_equal(c.ls[0].cc[SIDE_BACKEND], "bbr");
	assert_true(c.ls[0].source.len > 0);
	assert_false(c.ls[0].mptcp[SIDE_CLIENT]);
	assert_true(c.ls[0].mptcp[SIDE_BACKEND]);
	assert_string_equal(c.ls[0].netns[SIDE_CLIENT], "/run/netns/files");
	assert_string_equal(c.ls[0].netns[SIDE_BACKEND], "/proc/1234/ns/net");
	assert_true(c.ls[0].idle_timeout == 0);
}

/* The defaults a WAN gateway relies on: keepalive on, no idle timeout. */
static void test_wan_defaults(void **state)
{
	ARGV("-l", "127.0.0.1:1", "-b", "127.0.0.1:2");
	static struct config c;
	char err[256] = "";

	assert_int_equal(options_parse(&c, argc, argv, false, err, sizeof(err)),
			 OPT_OK);
	assert_int_equal(c.ls[0].keepalive.idle, OPT_DEFAULT_KA_IDLE);
	assert_true(c.ls[0].idle_timeout == 0);
	assert_int_equal(c.ls[0].nallow, 0);
	assert_false(c.ls[0].transparent);
	assert_int_equal(c.ls[0].sockbuf[SIDE_CLIENT], SOCKBUF_AUTO);
	assert_int_equal(c.ls[0].sockbuf[SIDE_BACKEND], SOCKBUF_AUTO);
}

/* auto, kernel and a size, per side or both; the last word for a side
 * wins, as for --congestion */
static void test_socket_buffer_words(void **state)
{
	ARGV("-l", "127.0.0.1:1", "-b", "127.0.0.1:2", "--socket-buffer",
	     "kernel", "--socket-buffer", "backend:auto", "--socket-buffer",
	     "client:64K");
	static struct config c;
	char err[256] = "";

	assert_int_equal(options_parse(&c, argc, argv, false, err, sizeof(err)),
			 OPT_OK);
	assert_int_equal(c.ls[0].sockbuf[SIDE_CLIENT], 64u << 10);
	assert_int_equal(c.ls[0].sockbuf[SIDE_BACKEND], SOCKBUF_AUTO);
}

static void test_bad_socket_buffer_word(void **state)
{
	ARGV("-l", "127.0.0.1:1", "-b", "127.0.0.1:2", "--socket-buffer",
	     "client:Auto");
	expect_bad(argc, argv, "auto, kernel or SIZE");
}

static void test_cidr(void **state)
{
	struct sockaddr_in a4 = { .sin_family = AF_INET };
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6 };
	struct cidr c;

	assert_int_equal(parse_cidr("192.0.2.0/24", &c), 0);
	inet_pton(AF_INET, "192.0.2.200", &a4.sin_addr);
	assert_true(parse_cidr_match(&c, (struct sockaddr *)&a4));
	inet_pton(AF_INET, "192.0.3.1", &a4.sin_addr);
	assert_false(parse_cidr_match(&c, (struct sockaddr *)&a4));
	/* An IPv4-mapped client matches IPv4 networks. */
	inet_pton(AF_INET6, "::ffff:192.0.2.9", &a6.sin6_addr);
	assert_true(parse_cidr_match(&c, (struct sockaddr *)&a6));
	/* Host bits are cleared; odd prefix lengths compare bit by bit. */
	assert_int_equal(parse_cidr("2001:db8:ff00::1/36", &c), 0);
	inet_pton(AF_INET6, "2001:db8:f000::5", &a6.sin6_addr);
	assert_true(parse_cidr_match(&c, (struct sockaddr *)&a6));
	inet_pton(AF_INET6, "2001:db8:e000::5", &a6.sin6_addr);
	assert_false(parse_cidr_match(&c, (struct sockaddr *)&a6));
	assert_int_equal(parse_cidr("0.0.0.0/0", &c), 0);
	assert_true(parse_cidr_match(&c, (struct sockaddr *)&a4));
	assert_false(
		parse_cidr_match(&c, (struct sockaddr *)&a6)); /* not mapped */
	/* An IPv4-mapped client (IPv4 on a dual-stack [::] socket) is the
	 * IPv4 client it is: IPv6 networks, ::/0 included, never hold it. */
	assert_int_equal(parse_cidr("::/0", &c), 0);
	assert_true(parse_cidr_match(&c, (struct sockaddr *)&a6));
	inet_pton(AF_INET6, "::ffff:127.0.0.1", &a6.sin6_addr);
	assert_false(parse_cidr_match(&c, (struct sockaddr *)&a6));
	assert_false(parse_cidr_is_mapped(&c));
	assert_int_equal(parse_cidr("::ffff:0:0/96", &c), 0);
	assert_true(parse_cidr_is_mapped(&c));
	assert_int_equal(parse_cidr("127.0.0.0/8", &c), 0);
	assert_true(parse_cidr_match(&c, (struct sockaddr *)&a6));

	assert_int_equal(parse_cidr("192.0.2.0/33", &c), -1);
	assert_int_equal(parse_cidr("2001:db8::/129", &c), -1);
	assert_int_equal(parse_cidr("192.0.2.0/", &c), -1);
	assert_int_equal(parse_cidr("example.com/8", &c), -1);
	assert_int_equal(parse_cidr("", &c), -1);
}

static void test_keepalive_and_netns(void **state)
{
	struct keepalive k = { 60, 10, 6 };
	char path[64];

	assert_int_equal(parse_keepalive("30", &k), 0);
	assert_int_equal(k.idle, 30);
	assert_int_equal(k.intvl, 10); /* kept */
	assert_int_equal(parse_keepalive("off", &k), 0);
	assert_int_equal(k.idle, 0);
	assert_int_equal(parse_keepalive("10:2", &k), -1);
	assert_int_equal(parse_keepalive("10:2:200", &k), -1);
	assert_int_equal(parse_keepalive("0", &k), -1);
	assert_int_equal(parse_keepalive("x", &k), -1);

	assert_int_equal(parse_netns("/var/run/netns/a", path, sizeof(path)),
			 0);
	assert_string_equal(path, "/var/run/netns/a");
	assert_int_equal(parse_netns("42", path, sizeof(path)), 0);
	assert_string_equal(path, "/proc/42/ns/net");
	assert_int_equal(parse_netns("ctr1", path, sizeof(path)), 0);
	assert_string_equal(path, "/run/netns/ctr1");
	assert_int_equal(parse_netns("", path, sizeof(path)), -1);
}

static void test_bad_deployment_options(void **state)
{
	{
		ARGV("-l", "127.0.0.1:1", "-b", "127.0.0.1:2", "--allow",
		     "10.0.0.0/40");
		expect_bad(argc, argv, "--allow '10.0.0.0/40'");
	}
	{
		ARGV("-l", "127.0.0.1:1", "-b", "127.0.0.1:2", "--allow",
		     "::ffff:10.0.0.0/104");
		expect_bad(argc, argv, "write the IPv4 network");
	}
	{
		ARGV("-l", "127.0.0.1:1", "-b", "127.0.0.1:2", "--stats-allow",
		     "::ffff:0:0/96");
		expect_bad(argc, argv, "--stats-allow '::ffff:0:0/96'");
	}
	{
		ARGV("-l", "127.0.0.1:1", "-b", "127.0.0.1:2",
		     "--source-prefix6", "129");
		expect_bad(argc, argv, "--source-prefix6 '129'");
	}
	{
		ARGV("-l", "127.0.0.1:1", "-b", "127.0.0.1:2", "--congestion",
		     "left:bbr");
		expect_bad(argc, argv, "--congestion 'left:bbr'");
	}
	{
		ARGV("-l", "127.0.0.1:1", "-b", "127.0.0.1:2", "--mptcp",
		     "sometimes");
		expect_bad(argc, argv, "--mptcp 'sometimes'");
	}
	{
		ARGV("-l", "127.0.0.1:1", "-b", "[::1]:2", "--transparent");
		expect_bad(argc, argv, "same address family");
	}
	{
		ARGV("-l", "127.0.0.1:1", "-b", "127.0.0.1:2", "--transparent",
		     "--mptcp", "listen", "--user", "nobody");
		expect_bad(argc, argv, "mptcp on the listen side");
	}
	{
		ARGV("-l", "127.0.0.1:1", "-b", "127.0.0.1:2", "--source",
		     "::1");
		expect_bad(argc, argv, "different address families");
	}
	{
		ARGV("-l", "127.0.0.1:1", "-b", "127.0.0.1:2", "--mode", "tcp",
		     "--mode", "smb");
		expect_bad(argc, argv, "--mode given twice");
	}
}

/* Transparent under --user keeps each client's SYN for the helper; not
 * without --user (no helper reads it), nor without transparent. */
static void test_save_syn(void **state)
{
	struct config c;
	char err[256] = "";

	(void)state;
	{
		ARGV("-l", "127.0.0.1:1", "-b", "127.0.0.1:2", "--transparent",
		     "--user", "nobody");
		assert_int_equal(
			options_parse(&c, argc, argv, false, err, sizeof(err)),
			OPT_OK);
		assert_true(c.ls[0].save_syn);
	}
	{
		ARGV("-l", "127.0.0.1:1", "-b", "127.0.0.1:2", "--transparent");
		assert_int_equal(
			options_parse(&c, argc, argv, false, err, sizeof(err)),
			OPT_OK);
		assert_false(c.ls[0].save_syn);
	}
	{
		ARGV("-l", "127.0.0.1:1", "-b", "127.0.0.1:2", "--user",
		     "nobody");
		assert_int_equal(
			options_parse(&c, argc, argv, false, err, sizeof(err)),
			OPT_OK);
		assert_false(c.ls[0].save_syn);
	}
}

static void test_bad_timeout(void **state)
{
	ARGV("-l", "127.0.0.1:1", "-b", "127.0.0.1:2", "--connect-timeout",
	     "0");
	expect_bad(argc, argv, "--connect-timeout");
}

/**
 * struct refusal - one bad value and the complaint it gets, word for word
 * @opt:	the option
 * @val:	the value
 * @err:	the whole complaint
 */
struct refusal {
	const char *opt, *val, *err;
};

/* The options whose apply function is shared, or names the option only
 * through its row: each complaint is composed from the row, so these pin
 * the words each option said when it had a setter of its own. */
static const struct refusal refusals[] = {
	{ "--handshake-timeout", "0",
	  "--handshake-timeout '0': expected seconds greater than 0, e.g. 30" },
	{ "--handshake-timeout", "off",
	  "--handshake-timeout 'off': expected seconds greater than 0, e.g. 30" },
	{ "--auth-timeout", "0",
	  "--auth-timeout '0': expected seconds greater than 0, e.g. 60, or off" },
	{ "--connect-timeout", "off",
	  "--connect-timeout 'off': expected seconds greater than 0, e.g. 5 or 0.5" },
	{ "--idle-timeout", "-1",
	  "--idle-timeout '-1': expected seconds, or off (0 is off too)" },
	{ "--drain-timeout", "off",
	  "--drain-timeout 'off': expected seconds, 0 to wait as long as connections last" },
	{ "--pipe-size", "2K",
	  "--pipe-size '2K': expected a size from 4K to 1024M, e.g. 8K or 1M" },
	{ "--buffer-size", "65M",
	  "--buffer-size '65M': expected a size from 1K to 64M" },
	{ "--backend", "x",
	  "--backend 'x': expected HOST:PORT or [IPV6]:PORT that resolves" },
	{ "--mode", "udp", "--mode 'udp': expected smb or tcp" },
	{ "--first-frame", "first",
	  "--first-frame 'first': expected negotiate or any" },
	{ "--keepalive", "0",
	  "--keepalive '0': expected IDLE or IDLE:INTERVAL:COUNT in seconds (e.g. 60:10:6), or off" },
	{ "--congestion", "BBR",
	  "--congestion 'BBR': expected ALG, client:ALG or backend:ALG, e.g. bbr" },
	{ "--source", "host",
	  "--source 'host': expected a numeric IPv4 or IPv6 address" },
	{ "--mptcp", "on",
	  "--mptcp 'on': expected listen, backend, both or off" },
	{ "--config", "", "--config '': expected a file name" },
	{ "--user", "", "--user '': expected a user name" },
};

/* Each refusal is the whole line, not just its start: the words after the
 * option's name are the ones that come from the row. */
static void test_refusals_word_for_word(void **state)
{
	static struct config c;

	for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
		char *argv[] = { "smbsplice",
				 "-l",
				 "127.0.0.1:1",
				 "-b",
				 "127.0.0.1:2",
				 (char *)refusals[i].opt,
				 (char *)refusals[i].val,
				 NULL };
		char err[256] = "";

		assert_int_equal(
			options_parse(&c, 7, argv, false, err, sizeof(err)),
			OPT_BAD);
		assert_string_equal(err, refusals[i].err);
	}
}

/* What the shared timeout and size setters take, and where it lands. */
static void test_shared_setters_accept(void **state)
{
	static struct config c;
	char err[256] = "";
	ARGV("-l", "127.0.0.1:1", "-b", "127.0.0.1:2", "--handshake-timeout",
	     "0.5", "--auth-timeout", "off", "--connect-timeout", "7",
	     "--idle-timeout", "0", "--drain-timeout", "0", "--pipe-size", "8K",
	     "--buffer-size", "1M");

	assert_int_equal(options_parse(&c, argc, argv, false, err, sizeof(err)),
			 OPT_OK);
	assert_true(c.ls[0].handshake_timeout == 0.5);
	assert_true(c.ls[0].auth_timeout == 0);
	assert_true(c.ls[0].connect_timeout == 7);
	assert_true(c.ls[0].idle_timeout == 0);
	assert_true(c.o.drain_timeout == 0);
	assert_int_equal(c.o.pipe_size, 8192);
	assert_int_equal(c.o.buf_size, 1 << 20);
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
		cmocka_unit_test(test_deployment_options),
		cmocka_unit_test(test_wan_defaults),
		cmocka_unit_test(test_socket_buffer_words),
		cmocka_unit_test(test_bad_socket_buffer_word),
		cmocka_unit_test(test_bad_port),
		cmocka_unit_test(test_cidr),
		cmocka_unit_test(test_keepalive_and_netns),
		cmocka_unit_test(test_bad_deployment_options),
		cmocka_unit_test(test_save_syn),
		cmocka_unit_test(test_refusals_word_for_word),
		cmocka_unit_test(test_shared_setters_accept),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
