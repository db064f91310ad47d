// SPDX-License-Identifier: GPL-2.0-or-later
/* options.c - command line parsing
 *
 * Theory of operation: every option is parsed into struct options before
 * the daemon opens a single socket. A bad value produces exactly one line
 * in the caller's buffer, naming the option, the value and what is
 * expected, and the caller exits with status 2. Nothing here logs or exits,
 * so all of it runs under the unit tests.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <netdb.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "options.h"

/**
 * parse_size() - parse a byte count with an optional K or M suffix
 * @s:		text such as "65536", "64K" or "1M" (suffixes are binary)
 * @out:	the parsed size
 *
 * Return: 0 on success, -1 if @s is empty, not a number, zero, or larger
 * than 1 GiB (no size in smbsplice makes sense beyond that).
 */
int parse_size(const char *s, size_t *out)
{
	unsigned long long v, mult = 1;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	if (*end == 'k' || *end == 'K')
		mult = 1ull << 10;
	else if (*end == 'm' || *end == 'M')
		mult = 1ull << 20;
	if (mult > 1)
		end++;
	if (*end || v == 0 || v > (1ull << 30) / mult)
		return -1;
	*out = (size_t)(v * mult);
	return 0;
}

/**
 * parse_count() - parse a whole number in a range
 * @s:		decimal digits, nothing else
 * @min:	smallest allowed
 * @max:	largest allowed
 * @out:	the parsed count
 *
 * Return: 0 on success, -1 if @s is not a number in [@min, @max].
 */
int parse_count(const char *s, unsigned min, unsigned max, unsigned *out)
{
	unsigned long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = (unsigned)v;
	return 0;
}

/**
 * parse_seconds() - parse a non-negative number of seconds
 * @s:		text such as "5" or "0.25"
 * @out:	the parsed value
 *
 * Return: 0 on success, -1 if @s is not a finite number in [0, 1e7].
 */
int parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	if (!s || !*s)
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v < 0 || v > 1e7)
		return -1;
	*out = v;
	return 0;
}

/**
 * parse_threshold() - parse a splice threshold: a size, or "off"
 * @s:		text such as "64K" or "off"
 * @out:	bytes, or SMB_THRESHOLD_OFF
 *
 * Return: 0 on success, -1 if @s is neither.
 */
int parse_threshold(const char *s, uint32_t *out)
{
	size_t v;

	if (s && !strcmp(s, "off")) {
		*out = SMB_THRESHOLD_OFF;
		return 0;
	}
	if (parse_size(s, &v) || v > (16u << 20))
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/**
 * split_host_port() - split "HOST:PORT" or "[V6HOST]:PORT"
 * @s:		the text
 * @host:	buffer for the host part (may come back empty)
 * @hostlen:	size of @host
 * @port:	the port, 1 to 65535
 *
 * Return: 0 on success, -1 on a malformed string.
 */
static int split_host_port(const char *s, char *host, size_t hostlen,
			   unsigned *port)
{
	const char *colon, *hs = s, *he;
	unsigned long p;
	char *end;

	if (*s == '[') {
		hs = s + 1;
		he = strchr(hs, ']');
		if (!he || he[1] != ':')
			return -1;
		colon = he + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon || memchr(s, ':', colon - s))
			return -1; /* bare IPv6 needs brackets */
		he = colon;
	}
	if ((size_t)(he - hs) >= hostlen)
		return -1;
	memcpy(host, hs, he - hs);
	host[he - hs] = '\0';

	if (colon[1] < '0' || colon[1] > '9')
		return -1;
	errno = 0;
	p = strtoul(colon + 1, &end, 10);
	if (errno || *end || p == 0 || p > 65535)
		return -1;
	*port = (unsigned)p;
	return 0;
}

/**
 * parse_endpoint() - resolve HOST:PORT into a socket address
 * @s:		"127.0.0.1:445", "[::1]:445", "localhost:445"; with @passive,
 *		"*:445" or ":445" mean every IPv4 address
 * @ep:		filled in on success
 * @passive:	true for an address to listen on
 *
 * Return: 0 on success, -1 if the text is malformed or does not resolve.
 */
int parse_endpoint(const char *s, struct endpoint *ep, bool passive)
{
	struct addrinfo hints = { 0 }, *res;
	char host[256], portstr[8];
	unsigned port;
	const char *node;

	if (!s || split_host_port(s, host, sizeof(host), &port))
		return -1;
	node = host;
	if (!*host || !strcmp(host, "*")) {
		if (!passive)
			return -1;
		node = "0.0.0.0";
	}
	snprintf(portstr, sizeof(portstr), "%u", port);
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
	if (getaddrinfo(node, portstr, &hints, &res))
		return -1;
	memcpy(&ep->addr, res->ai_addr, res->ai_addrlen);
	ep->len = res->ai_addrlen;
	freeaddrinfo(res);
	snprintf(ep->text, sizeof(ep->text), "%s", s);
	return 0;
}

/**
 * options_usage() - print the help text
 * @f:	where to print it
 */
void options_usage(FILE *f)
{
	fprintf(f,
		"Usage: smbsplice --listen HOST:PORT --backend HOST:PORT [options]\n"
		"\n"
		"Forward TCP between SMB clients and an SMB server, splicing large\n"
		"payloads socket -> pipe -> socket and copying small messages.\n"
		"\n"
		"  -l, --listen HOST:PORT     address to accept clients on ([::1]:445 for IPv6)\n"
		"  -b, --backend HOST:PORT    SMB server to forward to\n"
		"  -m, --mode smb|tcp         smb: message-aware (default); tcp: opaque\n"
		"      --pipe-size BYTES      size of each splice pipe (default %uK)\n"
		"      --max-pipes N          cap on open pipes, then copy (default %u)\n"
		"      --buffer-size BYTES    copy buffer per direction (default %uK)\n"
		"      --no-splice            copy everything (baseline for comparisons)\n"
		"      --read-threshold SIZE  smb mode: splice READ data from this size (default %uK)\n"
		"      --write-threshold SIZE smb mode: splice WRITE data from this size (default %uK)\n"
		"      --other-threshold SIZE smb mode: splice the rest of encrypted and other\n"
		"                             large messages from this size (default off);\n"
		"                             'off' never splices that class\n"
		"      --stats HOST:PORT      serve Prometheus metrics at http://HOST:PORT/metrics\n"
		"      --workers N            event loop threads (default: one per usable CPU)\n"
		"      --max-conns N          refuse clients beyond N open connections\n"
		"                             (default: as many as the open-files limit allows)\n"
		"      --max-conns-per-source N refuse a client address beyond N open\n"
		"                             connections (default: no cap)\n"
		"      --handshake-timeout SEC smb mode: time a client has to send its first\n"
		"                             byte; the backend is dialled only then (default %g)\n"
		"      --connect-timeout SEC  backend connect timeout (default %g)\n"
		"      --idle-timeout SEC     close connections idle this long, 0 = never\n"
		"                             (default %g)\n"
		"  -v, --verbose              more log lines; repeat for more\n"
		"  -h, --help                 this text\n"
		"  -V, --version              print the version\n"
		"\n"
		"Sizes take K or M suffixes (binary). Logs go to standard error.\n",
		OPT_DEFAULT_PIPE_SIZE >> 10, OPT_DEFAULT_MAX_PIPES,
		OPT_DEFAULT_BUF_SIZE >> 10, OPT_DEFAULT_THRESHOLD >> 10,
		OPT_DEFAULT_THRESHOLD >> 10, OPT_DEFAULT_HANDSHAKE_TMO,
		OPT_DEFAULT_CONNECT_TMO, OPT_DEFAULT_IDLE_TMO);
}

enum {
	OPT_PIPE_SIZE = 256,
	OPT_MAX_PIPES,
	OPT_BUF_SIZE,
	OPT_NO_SPLICE,
	OPT_CONNECT_TMO,
	OPT_IDLE_TMO,
	OPT_READ_TH,
	OPT_WRITE_TH,
	OPT_OTHER_TH,
	OPT_STATS,
	OPT_WORKERS,
	OPT_HANDSHAKE_TMO,
	OPT_MAX_CONNS,
	OPT_MAX_PER_SOURCE,
};

_Static_assert(OPT_WRITE_TH - OPT_READ_TH == SMB_CLASS_WRITE &&
		       OPT_OTHER_TH - OPT_READ_TH == SMB_CLASS_OTHER,
	       "threshold options follow enum smb_class");

static const struct option long_opts[] = {
	{ "listen", required_argument, NULL, 'l' },
	{ "backend", required_argument, NULL, 'b' },
	{ "mode", required_argument, NULL, 'm' },
	{ "pipe-size", required_argument, NULL, OPT_PIPE_SIZE },
	{ "max-pipes", required_argument, NULL, OPT_MAX_PIPES },
	{ "buffer-size", required_argument, NULL, OPT_BUF_SIZE },
	{ "no-splice", no_argument, NULL, OPT_NO_SPLICE },
	{ "connect-timeout", required_argument, NULL, OPT_CONNECT_TMO },
	{ "idle-timeout", required_argument, NULL, OPT_IDLE_TMO },
	{ "read-threshold", required_argument, NULL, OPT_READ_TH },
	{ "write-threshold", required_argument, NULL, OPT_WRITE_TH },
	{ "other-threshold", required_argument, NULL, OPT_OTHER_TH },
	{ "stats", required_argument, NULL, OPT_STATS },
	{ "workers", required_argument, NULL, OPT_WORKERS },
	{ "handshake-timeout", required_argument, NULL, OPT_HANDSHAKE_TMO },
	{ "max-conns", required_argument, NULL, OPT_MAX_CONNS },
	{ "max-conns-per-source", required_argument, NULL, OPT_MAX_PER_SOURCE },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

/**
 * options_defaults() - fill @o with the documented defaults
 * @o:	options to reset
 */
static void options_defaults(struct options *o)
{
	memset(o, 0, sizeof(*o));
	o->mode = MODE_SMB;
	o->pipe_size = OPT_DEFAULT_PIPE_SIZE;
	o->max_pipes = OPT_DEFAULT_MAX_PIPES;
	o->buf_size = OPT_DEFAULT_BUF_SIZE;
	o->handshake_timeout = OPT_DEFAULT_HANDSHAKE_TMO;
	o->connect_timeout = OPT_DEFAULT_CONNECT_TMO;
	o->idle_timeout = OPT_DEFAULT_IDLE_TMO;
	o->splice = true;
	o->th.min[SMB_CLASS_READ] = OPT_DEFAULT_THRESHOLD;
	o->th.min[SMB_CLASS_WRITE] = OPT_DEFAULT_THRESHOLD;
	/* Splicing encrypted frames cost throughput in every bench run. */
	o->th.min[SMB_CLASS_OTHER] = SMB_THRESHOLD_OFF;
}

/**
 * bad() - write the one-line complaint about an option value
 * @err:	buffer for the line
 * @errlen:	its size
 * @opt:	option name, without dashes
 * @val:	the rejected value
 * @want:	what would have been accepted
 *
 * Return: OPT_BAD, so callers can return bad(...) directly.
 */
static enum opt_result bad(char *err, size_t errlen, const char *opt,
			   const char *val, const char *want)
{
	snprintf(err, errlen, "--%s '%s': %s", opt, val, want);
	return OPT_BAD;
}

/**
 * parse_one() - apply one option returned by getopt_long()
 * @o:		options being built
 * @c:		the option code
 * @arg:	its argument, if any
 * @err:	buffer for a complaint
 * @errlen:	its size
 *
 * Return: OPT_OK to go on, OPT_EXIT after --help/--version, OPT_BAD.
 */
static enum opt_result parse_one(struct options *o, int c, const char *arg,
				 char *err, size_t errlen)
{
	size_t sz;

	switch (c) {
	case 'l':
		if (parse_endpoint(arg, &o->listen, true))
			return bad(
				err, errlen, "listen", arg,
				"expected HOST:PORT or [IPV6]:PORT that resolves");
		return OPT_OK;
	case 'b':
		if (parse_endpoint(arg, &o->backend, false))
			return bad(
				err, errlen, "backend", arg,
				"expected HOST:PORT or [IPV6]:PORT that resolves");
		return OPT_OK;
	case 'm':
		if (!strcmp(arg, "smb"))
			o->mode = MODE_SMB;
		else if (!strcmp(arg, "tcp"))
			o->mode = MODE_TCP;
		else
			return bad(err, errlen, "mode", arg,
				   "expected smb or tcp");
		return OPT_OK;
	case OPT_PIPE_SIZE:
		if (parse_size(arg, &sz) || sz < 4096 || sz > (1u << 30))
			return bad(
				err, errlen, "pipe-size", arg,
				"expected a size from 4K to 1024M, e.g. 8K or 1M");
		o->pipe_size = sz;
		return OPT_OK;
	case OPT_BUF_SIZE:
		if (parse_size(arg, &sz) || sz < 1024 || sz > (64u << 20))
			return bad(err, errlen, "buffer-size", arg,
				   "expected a size from 1K to 64M");
		o->buf_size = sz;
		return OPT_OK;
	case OPT_MAX_PIPES:
		if (parse_count(arg, 1, 1000000, &o->max_pipes))
			return bad(err, errlen, "max-pipes", arg,
				   "expected a count from 1 to 1000000");
		return OPT_OK;
	case OPT_NO_SPLICE:
		o->splice = false;
		return OPT_OK;
	case OPT_CONNECT_TMO:
		if (parse_seconds(arg, &o->connect_timeout) ||
		    o->connect_timeout <= 0)
			return bad(
				err, errlen, "connect-timeout", arg,
				"expected seconds greater than 0, e.g. 5 or 0.5");
		return OPT_OK;
	case OPT_HANDSHAKE_TMO:
		if (parse_seconds(arg, &o->handshake_timeout) ||
		    o->handshake_timeout <= 0)
			return bad(err, errlen, "handshake-timeout", arg,
				   "expected seconds greater than 0, e.g. 30");
		return OPT_OK;
	case OPT_IDLE_TMO:
		if (parse_seconds(arg, &o->idle_timeout))
			return bad(err, errlen, "idle-timeout", arg,
				   "expected seconds, 0 for never");
		return OPT_OK;
	/* The three options are in the order of enum smb_class. */
	case OPT_READ_TH:
	case OPT_WRITE_TH:
	case OPT_OTHER_TH:
		if (parse_threshold(arg, &o->th.min[c - OPT_READ_TH]))
			return bad(
				err, errlen,
				c == OPT_READ_TH    ? "read-threshold"
				: c == OPT_WRITE_TH ? "write-threshold"
						    : "other-threshold",
				arg,
				"expected a size up to 16M, e.g. 64K, or off");
		return OPT_OK;
	case OPT_STATS:
		if (parse_endpoint(arg, &o->stats, true))
			return bad(
				err, errlen, "stats", arg,
				"expected HOST:PORT or [IPV6]:PORT that resolves");
		return OPT_OK;
	case OPT_MAX_CONNS:
		if (parse_count(arg, 1, 10000000, &o->max_conns))
			return bad(err, errlen, "max-conns", arg,
				   "expected a count from 1 to 10000000");
		return OPT_OK;
	case OPT_MAX_PER_SOURCE:
		if (parse_count(arg, 1, 10000000, &o->max_per_source))
			return bad(err, errlen, "max-conns-per-source", arg,
				   "expected a count from 1 to 10000000");
		return OPT_OK;
	case OPT_WORKERS:
		if (parse_count(arg, 1, OPT_MAX_WORKERS, &o->workers))
			return bad(err, errlen, "workers", arg,
				   "expected a count from 1 to 1024");
		return OPT_OK;
	case 'v':
		o->verbose++;
		return OPT_OK;
	case 'h':
		options_usage(stdout);
		return OPT_EXIT;
	case 'V':
		printf("smbsplice %s\n", PACKAGE_VERSION);
		return OPT_EXIT;
	default:
		return OPT_BAD; /* options_parse() words the complaint */
	}
}

/**
 * options_parse() - parse argv into @o
 * @o:		filled with defaults, then the options given
 * @argc:	argument count
 * @argv:	arguments
 * @err:	buffer for the one-line complaint, on OPT_BAD
 * @errlen:	its size
 *
 * Return: OPT_OK, OPT_EXIT or OPT_BAD.
 */
enum opt_result options_parse(struct options *o, int argc, char **argv,
			      char *err, size_t errlen)
{
	enum opt_result r;
	int c;

	options_defaults(o);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":l:b:m:vhV", long_opts, NULL)) !=
	       -1) {
		if (c == ':' || c == '?') {
			snprintf(err, errlen, "%s '%s'; see smbsplice --help",
				 c == ':' ? "missing value for option"
					  : "unknown option",
				 argv[optind - 1]);
			return OPT_BAD;
		}
		r = parse_one(o, c, optarg, err, errlen);
		if (r != OPT_OK)
			return r;
	}
	if (optind < argc) {
		snprintf(err, errlen,
			 "unexpected argument '%s'; see smbsplice --help",
			 argv[optind]);
		return OPT_BAD;
	}
	if (!o->listen.len || !o->backend.len) {
		snprintf(
			err, errlen,
			"--listen and --backend are both required; see smbsplice --help");
		return OPT_BAD;
	}
	return OPT_OK;
}
