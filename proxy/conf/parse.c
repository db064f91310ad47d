// SPDX-License-Identifier: GPL-2.0-or-later
/* parse.c - reading option values: sizes, counts, seconds, addresses,
 * networks, keepalive settings, namespace paths
 *
 * Theory of operation: every function here turns one text into one value
 * and says only whether it could; it never logs or exits, and it touches
 * nothing but its output, so the command line, the config file and the
 * unit tests share it. The caller words the complaint, naming the option
 * and what it expects.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "conf/parse.h"
#include "smb/threshold.h"

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
	if (parse_size(s, &v) || v > PARSE_MAX_THRESHOLD)
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
 * Return: 0 on success, -1 if the text is malformed, -2 if it is well
 * formed but the name does not resolve now (no such name, or the resolver
 * cannot answer: it may later, when the network is up).
 */
int parse_endpoint(const char *s, struct endpoint *ep, bool passive)
{
	struct addrinfo hints = { 0 }, *res;
	char host[256], portstr[8];
	struct in_addr probe;
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
	/* Digits and dots are an IPv4 address or a mistake, never a name to
	 * look up: "999.1.1.1" is malformed, not unresolved. */
	if (node == host && strspn(host, "0123456789.") == strlen(host) &&
	    inet_pton(AF_INET, host, &probe) != 1)
		return -1;
	snprintf(portstr, sizeof(portstr), "%u", port);
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
	if (getaddrinfo(node, portstr, &hints, &res))
		return -2;
	memcpy(&ep->addr, res->ai_addr, res->ai_addrlen);
	ep->len = res->ai_addrlen;
	freeaddrinfo(res);
	snprintf(ep->text, sizeof(ep->text), "%s", s);
	return 0;
}

/**
 * parse_address() - an address without a port, for binding
 * @s:		"192.0.2.1" or "2001:db8::1" (brackets allowed)
 * @ep:		filled in, port 0
 *
 * Return: 0 on success, -1 if @s is not a numeric IPv4 or IPv6 address.
 */
int parse_address(const char *s, struct endpoint *ep)
{
	struct sockaddr_in *a4 = (struct sockaddr_in *)&ep->addr;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ep->addr;
	char host[INET6_ADDRSTRLEN + 2];
	size_t n;

	if (!s || (n = strlen(s)) == 0 || n >= sizeof(host))
		return -1;
	memcpy(host, s, n + 1);
	if (host[0] == '[' && host[n - 1] == ']') {
		host[n - 1] = '\0';
		memmove(host, host + 1, n - 1);
	}
	memset(ep, 0, sizeof(*ep));
	if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		ep->len = sizeof(*a4);
	} else if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		ep->len = sizeof(*a6);
	} else {
		return -1;
	}
	snprintf(ep->text, sizeof(ep->text), "%s", s);
	return 0;
}

/**
 * parse_cidr() - a network: ADDR/BITS, or a single ADDR
 * @s:	"192.0.2.0/24", "2001:db8::/32", "10.1.2.3"
 * @c:	the network; the address's host bits are cleared
 *
 * Return: 0 on success, -1 if @s is not an IPv4 or IPv6 network.
 */
int parse_cidr(const char *s, struct cidr *c)
{
	char host[INET6_ADDRSTRLEN];
	const char *slash = s ? strchr(s, '/') : NULL;
	size_t n = slash ? (size_t)(slash - s) : (s ? strlen(s) : 0);
	unsigned max, bits;

	if (!s || !n || n >= sizeof(host))
		return -1;
	memcpy(host, s, n);
	host[n] = '\0';
	memset(c, 0, sizeof(*c));
	if (inet_pton(AF_INET, host, c->addr) == 1)
		c->family = AF_INET, max = 32;
	else if (inet_pton(AF_INET6, host, c->addr) == 1)
		c->family = AF_INET6, max = 128;
	else
		return -1;
	bits = max;
	if (slash && parse_count(slash + 1, 0, max, &bits))
		return -1;
	c->bits = bits;
	for (unsigned i = bits; i < max; i++)
		c->addr[i / 8] &= (uint8_t) ~(0x80u >> (i % 8));
	return 0;
}

/**
 * prefix_equal() - do two addresses share their first @bits bits
 * @a:		an address
 * @b:		another
 * @bits:	how many bits to compare
 *
 * Return: true if they do.
 */
static bool prefix_equal(const uint8_t *a, const uint8_t *b, unsigned bits)
{
	unsigned whole = bits / 8, rest = bits % 8;
	uint8_t mask = (uint8_t)(0xff00u >> rest);

	if (memcmp(a, b, whole))
		return false;
	return !rest || ((a[whole] ^ b[whole]) & mask) == 0;
}

static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };

/**
 * parse_cidr_is_mapped() - is a network inside ::ffff:0:0/96 (IPv4-mapped)
 * @c:	the network
 *
 * Such a network can never match: parse_cidr_match() takes an IPv4-mapped
 * client for the IPv4 client it is, so it can only be meant as IPv4.
 *
 * Return: true if it is.
 */
bool parse_cidr_is_mapped(const struct cidr *c)
{
	return c->family == AF_INET6 && c->bits >= 96 &&
	       !memcmp(c->addr, mapped, sizeof(mapped));
}

/**
 * parse_cidr_match() - is an address inside a network
 * @c:	the network
 * @sa:	the address; an IPv4-mapped IPv6 address (an IPv4 client of a
 *	dual-stack socket) matches IPv4 networks only, so that ::/0 does
 *	not let in every IPv4 client of [::]:445
 *
 * Return: true if it is.
 */
bool parse_cidr_match(const struct cidr *c, const struct sockaddr *sa)
{
	const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)sa;
	const struct sockaddr_in *a4 = (const struct sockaddr_in *)sa;
	const uint8_t *p6 = a6->sin6_addr.s6_addr;

	if (sa->sa_family == AF_INET && c->family == AF_INET)
		return prefix_equal((const uint8_t *)&a4->sin_addr, c->addr,
				    c->bits);
	if (sa->sa_family != AF_INET6)
		return false;
	if (memcmp(p6, mapped, sizeof(mapped)))
		return c->family == AF_INET6 &&
		       prefix_equal(p6, c->addr, c->bits);
	return c->family == AF_INET && prefix_equal(p6 + 12, c->addr, c->bits);
}

/**
 * parse_keepalive() - IDLE[:INTERVAL:COUNT], or "off"
 * @s:	"60", "60:10:6", "off"
 * @k:	the settings; IDLE alone keeps @k's interval and count
 *
 * Return: 0 on success, -1 if @s is malformed or a number is out of range
 * (idle and interval 1 to 32767 s, count 1 to 127, as the kernel takes).
 */
int parse_keepalive(const char *s, struct keepalive *k)
{
	char buf[64], *intvl, *cnt;
	struct keepalive r = *k;

	if (!s)
		return -1;
	if (!strcmp(s, "off")) {
		k->idle = 0;
		return 0;
	}
	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	intvl = strchr(buf, ':');
	if (intvl) {
		*intvl++ = '\0';
		cnt = strchr(intvl, ':');
		if (!cnt)
			return -1;
		*cnt++ = '\0';
		if (parse_count(intvl, 1, 32767, &r.intvl) ||
		    parse_count(cnt, 1, 127, &r.cnt))
			return -1;
	}
	if (parse_count(buf, 1, 32767, &r.idle))
		return -1;
	*k = r;
	return 0;
}

/**
 * parse_netns() - where a network namespace is, as pasta takes it
 * @s:		a path ("/run/netns/NAME", "/proc/PID/ns/net"), a bare NAME
 *		(for /run/netns/NAME) or a PID (for /proc/PID/ns/net)
 * @path:	the path
 * @len:	its size
 *
 * Return: 0 on success, -1 if @s is empty or too long. Whether the path
 * is a network namespace is checked when it is opened.
 */
int parse_netns(const char *s, char *path, size_t len)
{
	size_t digits;
	int n;

	if (!s || !*s)
		return -1;
	digits = strspn(s, "0123456789");
	if (strchr(s, '/'))
		n = snprintf(path, len, "%s", s);
	else if (!s[digits])
		n = snprintf(path, len, "/proc/%s/ns/net", s);
	else
		n = snprintf(path, len, "/run/netns/%s", s);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}
