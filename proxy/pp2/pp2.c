// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pp2.c - PROXY protocol version 2 headers, made and read
 *
 * Theory of operation: a gateway pair keeps the client's address by
 * putting a PROXY protocol v2 header (HAProxy's specification, section
 * 2.2) before the first byte of the stream: 12 signature bytes, a byte of
 * version (2, high nibble) and command (LOCAL 0, PROXY 1), a byte of
 * address family (UNSPEC 0, INET 1, INET6 2, UNIX 3) and transport
 * (UNSPEC 0, STREAM 1, DGRAM 2), a 16-bit big-endian length of what
 * follows, the addresses (source, destination, source port, destination
 * port, in network order), and then TLVs (type, 16-bit length, value) up
 * to that length.
 *
 * The builder makes only what a TCP gateway sends: PROXY, STREAM, over
 * IPv4 or IPv6, no TLVs. A client and destination of different families
 * (an IPv4 client on a dual-stack socket seen as ::ffff:a.b.c.d) are both
 * sent as IPv6.
 *
 * The parser is strict, since what it reads comes from the network
 * before anything else is trusted: every field is checked, the declared
 * length is bounded by the caller (a sender may not make the receiver
 * hold 64 KiB for it unless it allows that), each TLV's length must fit
 * in what is left, and a header that is not whole yet is PP2_NEED_MORE
 * only while every byte seen so far could still begin a valid one, so a
 * stream that is not PROXY protocol at all is refused at its first wrong
 * byte. It reads a buffer and writes nothing but @info: no socket, no
 * allocation. TLVs are skipped: smbsplice uses none of them (cloud load
 * balancers and HAProxy send some), and a CRC32C TLV is not verified.
 */
#include "pp2/pp2.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#define PP2_VERSION	 0x20
#define PP2_CMD_LOCAL	 0x0
#define PP2_CMD_PROXY	 0x1
#define PP2_FAM_UNSPEC	 0x0
#define PP2_FAM_INET	 0x1
#define PP2_FAM_INET6	 0x2
#define PP2_FAM_UNIX	 0x3
#define PP2_PROTO_STREAM 0x1
#define PP2_ADDR_INET	 12
#define PP2_ADDR_INET6	 36
#define PP2_ADDR_UNIX	 216

/**
 * as_v6() - an address as IPv6: itself, or an IPv4 one v4-mapped
 * @sa:	an AF_INET or AF_INET6 address
 * @out:	the IPv6 form
 */
static void as_v6(const struct sockaddr *sa, struct sockaddr_in6 *out)
{
	memset(out, 0, sizeof(*out));
	out->sin6_family = AF_INET6;
	if (sa->sa_family == AF_INET6) {
		*out = *(const struct sockaddr_in6 *)sa;
		return;
	}
	const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

	out->sin6_port = in->sin_port;
	out->sin6_addr.s6_addr[10] = 0xff;
	out->sin6_addr.s6_addr[11] = 0xff;
	memcpy(&out->sin6_addr.s6_addr[12], &in->sin_addr, 4);
}

/**
 * pp2_build() - a PROXY (TCP) v2 header for a client and its destination
 * @out:	where to write it
 * @outlen:	room at @out; PP2_BUILD_MAX is always enough
 * @src:	the client's address (AF_INET or AF_INET6)
 * @dst:	the address the client connected to (AF_INET or AF_INET6)
 *
 * Return: the header's length, or -1 with errno EAFNOSUPPORT (another
 * family) or EMSGSIZE (@outlen too small).
 */
int pp2_build(uint8_t *out, size_t outlen, const struct sockaddr *src,
	      const struct sockaddr *dst)
{
	bool v4 = src->sa_family == AF_INET && dst->sa_family == AF_INET;
	size_t alen = v4 ? PP2_ADDR_INET : PP2_ADDR_INET6;
	uint8_t *p = out + PP2_FIXED_LEN;

	if ((src->sa_family != AF_INET && src->sa_family != AF_INET6) ||
	    (dst->sa_family != AF_INET && dst->sa_family != AF_INET6)) {
		errno = EAFNOSUPPORT;
		return -1;
	}
	if (outlen < PP2_FIXED_LEN + alen) {
		errno = EMSGSIZE;
		return -1;
	}
	memcpy(out, PP2_SIG, PP2_SIG_LEN);
	out[12] = PP2_VERSION | PP2_CMD_PROXY;
	out[13] = (uint8_t)((v4 ? PP2_FAM_INET : PP2_FAM_INET6) << 4 |
			    PP2_PROTO_STREAM);
	out[14] = 0;
	out[15] = (uint8_t)alen;
	if (v4) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)src;
		const struct sockaddr_in *d = (const struct sockaddr_in *)dst;

		memcpy(p, &s->sin_addr, 4);
		memcpy(p + 4, &d->sin_addr, 4);
		memcpy(p + 8, &s->sin_port, 2);
		memcpy(p + 10, &d->sin_port, 2);
	} else {
		struct sockaddr_in6 s, d;

		as_v6(src, &s);
		as_v6(dst, &d);
		memcpy(p, &s.sin6_addr, 16);
		memcpy(p + 16, &d.sin6_addr, 16);
		memcpy(p + 32, &s.sin6_port, 2);
		memcpy(p + 34, &d.sin6_port, 2);
	}
	return (int)(PP2_FIXED_LEN + alen);
}

/**
 * fail() - PP2_ERROR, with its reason
 * @why:	where the reason goes
 * @reason:	a static string saying what was wrong
 *
 * Return: PP2_ERROR.
 */
static enum pp2_result fail(const char **why, const char *reason)
{
	*why = reason;
	return PP2_ERROR;
}

/**
 * read_addrs() - the client's and destination's addresses of a header
 * @p:		the address block
 * @fam:	PP2_FAM_INET or PP2_FAM_INET6
 * @info:	where they go
 */
static void read_addrs(const uint8_t *p, unsigned fam, struct pp2_info *info)
{
	memset(&info->src, 0, sizeof(info->src));
	memset(&info->dst, 0, sizeof(info->dst));
	info->has_addr = true;
	if (fam == PP2_FAM_INET) {
		struct sockaddr_in *s = (struct sockaddr_in *)&info->src;
		struct sockaddr_in *d = (struct sockaddr_in *)&info->dst;

		s->sin_family = d->sin_family = AF_INET;
		memcpy(&s->sin_addr, p, 4);
		memcpy(&d->sin_addr, p + 4, 4);
		memcpy(&s->sin_port, p + 8, 2);
		memcpy(&d->sin_port, p + 10, 2);
		info->addrlen = sizeof(*s);
		return;
	}
	struct sockaddr_in6 *s = (struct sockaddr_in6 *)&info->src;
	struct sockaddr_in6 *d = (struct sockaddr_in6 *)&info->dst;

	s->sin6_family = d->sin6_family = AF_INET6;
	memcpy(&s->sin6_addr, p, 16);
	memcpy(&d->sin6_addr, p + 16, 16);
	memcpy(&s->sin6_port, p + 32, 2);
	memcpy(&d->sin6_port, p + 34, 2);
	info->addrlen = sizeof(*s);
}

/**
 * pp2_parse() - read a PROXY protocol v2 header at the start of a stream
 * @buf:	the stream's first bytes
 * @n:		how many there are
 * @max_len:	the longest header accepted, at least PP2_FIXED_LEN +
 *		PP2_ADDR_INET6 and at most PP2_MAX_LEN; a longer one is an
 *		error as soon as its length field is read
 * @info:	what the header said, on PP2_OK
 * @why:	on PP2_ERROR, a static string saying what was wrong
 *
 * Return: PP2_OK (@info->len bytes are the header), PP2_NEED_MORE (all
 * @n bytes could begin a valid header: read more, up to @max_len in
 * all) or PP2_ERROR.
 */
enum pp2_result pp2_parse(const uint8_t *buf, size_t n, size_t max_len,
			  struct pp2_info *info, const char **why)
{
	size_t body, alen = 0, off;
	unsigned cmd, fam, proto;

	if (memcmp(buf, PP2_SIG, n < PP2_SIG_LEN ? n : PP2_SIG_LEN))
		return fail(why, "no PROXY protocol v2 signature");
	if (n < PP2_SIG_LEN + 1)
		return PP2_NEED_MORE;
	if ((buf[12] & 0xf0) != PP2_VERSION)
		return fail(why, "not PROXY protocol version 2");
	cmd = buf[12] & 0x0f;
	if (cmd != PP2_CMD_LOCAL && cmd != PP2_CMD_PROXY)
		return fail(why, "unknown PROXY protocol command");
	if (n < PP2_SIG_LEN + 2)
		return PP2_NEED_MORE;
	fam = buf[13] >> 4;
	proto = buf[13] & 0x0f;
	if (fam > PP2_FAM_UNIX || proto > 2)
		return fail(why, "unknown address family or transport");
	if (cmd == PP2_CMD_PROXY && fam != PP2_FAM_UNSPEC &&
	    (fam == PP2_FAM_UNIX || proto != PP2_PROTO_STREAM))
		return fail(why, "PROXY for other than TCP over IPv4 or IPv6");
	if (n < PP2_FIXED_LEN)
		return PP2_NEED_MORE;
	body = (size_t)buf[14] << 8 | buf[15];
	if (PP2_FIXED_LEN + body > max_len)
		return fail(why, "PROXY protocol header longer than allowed");
	if (fam == PP2_FAM_INET)
		alen = PP2_ADDR_INET;
	else if (fam == PP2_FAM_INET6)
		alen = PP2_ADDR_INET6;
	else if (fam == PP2_FAM_UNIX)
		alen = PP2_ADDR_UNIX;
	if (body < alen)
		return fail(why,
			    "PROXY protocol length shorter than its addresses");
	if (n < PP2_FIXED_LEN + body)
		return PP2_NEED_MORE;

	memset(info, 0, sizeof(*info));
	info->len = PP2_FIXED_LEN + body;
	info->local = cmd == PP2_CMD_LOCAL;
	if (!info->local && (fam == PP2_FAM_INET || fam == PP2_FAM_INET6))
		read_addrs(buf + PP2_FIXED_LEN, fam, info);
	/* LOCAL: whatever addresses it carries are the sender's own
	 * business (spec 2.2: the receiver must ignore them). */
	for (off = PP2_FIXED_LEN + alen; off < info->len;) {
		size_t left = info->len - off, tlen;

		if (left < 3)
			return fail(why, "PROXY protocol TLV cut short");
		tlen = (size_t)buf[off + 1] << 8 | buf[off + 2];
		if (tlen > left - 3)
			return fail(
				why,
				"PROXY protocol TLV longer than the header");
		off += 3 + tlen;
		info->tlvs++;
	}
	return PP2_OK;
}
