// SPDX-License-Identifier: GPL-2.0-or-later
/* capture.c - read a capture file with libpcap and find its TCP segments
 *
 * Theory of operation: libpcap reads both file formats (pcap, with either
 * byte order and timestamp precision, and pcapng), whoever wrote them
 * (tcpdump, dumpcap, tshark). Each record is taken apart here, down to
 * the TCP payload: first the link layer, of the kinds a capture of SMB is
 * made on (Ethernet with VLAN tags, as `-i eth0` and `-i lo` give; Linux
 * cooked v1 and v2, as `-i any` gives; raw IP; BSD loopback), then IPv4
 * or IPv6 (with its extension headers), then TCP.
 *
 * Lengths come from the IP header, not from the record: an Ethernet frame
 * may carry padding after the IP packet, and a record may hold less than
 * the packet (the snaplen). So each segment says both how many payload
 * bytes it carried and how many the record holds, and the reassembler
 * accounts for the difference. A segment that offloading made larger than
 * IP can say (an IPv4 total length of 0, an IPv6 jumbogram) takes its
 * length from the record's original length instead.
 *
 * libpcap reports a file cut short in the middle of a record as an error
 * from pcap_next_ex(); capture_next() passes that on as CAP_ERROR, after
 * every record before it has been handed out.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "capture.h"

#ifndef DLT_LINUX_SLL2
#define DLT_LINUX_SLL2 276
#endif
#ifndef DLT_IPV4
#define DLT_IPV4 228
#endif
#ifndef DLT_IPV6
#define DLT_IPV6 229
#endif

#define ETH_P_IPV4   0x0800
#define ETH_P_IPV6   0x86dd
#define ETH_P_8021Q  0x8100
#define ETH_P_8021AD 0x88a8
#define ETH_P_QINQ   0x9100

#define IPPROTO_TCP_ 6

/**
 * be16() - a big-endian 16-bit field
 * @p:	its first byte
 *
 * Return: its value.
 */
static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/**
 * be32() - a big-endian 32-bit field
 * @p:	its first byte
 *
 * Return: its value.
 */
static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

/**
 * capture_link_name() - a link-layer type for the report
 * @linktype:	DLT_ value
 *
 * Return: libpcap's description, or "DLT n" when it has none.
 */
const char *capture_link_name(int linktype)
{
	const char *d = pcap_datalink_val_to_description(linktype);

	return d ? d : "an unknown link type";
}

/**
 * bsd_af_family() - the IP version of a BSD loopback header's family
 * @af:	the address family value, in whichever byte order
 *
 * The header holds the capturing host's AF_ value in its own byte order
 * (DLT_NULL) or in network order (DLT_LOOP); AF_INET6 differs between
 * systems.
 *
 * Return: 4, 6, or 0 for neither.
 */
static int bsd_af_family(uint32_t af)
{
	if (af > 0xffff)
		af = __builtin_bswap32(af);
	if (af == 2)
		return 4;
	if (af == 10 || af == 24 || af == 28 || af == 30)
		return 6;
	return 0;
}

/**
 * ether_type_family() - the IP version an EtherType announces
 * @type:	EtherType (or a cooked header's protocol)
 *
 * Return: 4, 6, or 0 for neither.
 */
static int ether_type_family(uint16_t type)
{
	return type == ETH_P_IPV4 ? 4 : type == ETH_P_IPV6 ? 6 : 0;
}

/**
 * link_header() - find the IP packet in a record
 * @linktype:	the capture's DLT_ type
 * @p:		the record
 * @caplen:	bytes it holds
 * @family:	set to 4 or 6
 *
 * Return: offset of the IP header, or -1 when the record holds no IP
 * packet (another protocol, or too short to tell).
 */
static long link_header(int linktype, const uint8_t *p, uint32_t caplen,
			int *family)
{
	uint32_t off;
	uint16_t type;

	switch (linktype) {
	case DLT_EN10MB:
		off = 12;
		if (caplen < off + 2)
			return -1;
		type = be16(p + off);
		/* 802.1Q, 802.1ad and the old QinQ tag, stacked. */
		while ((type == ETH_P_8021Q || type == ETH_P_8021AD ||
			type == ETH_P_QINQ) &&
		       caplen >= off + 6) {
			off += 4;
			type = be16(p + off);
		}
		*family = ether_type_family(type);
		off += 2;
		break;
	case DLT_LINUX_SLL:
		if (caplen < 16)
			return -1;
		*family = ether_type_family(be16(p + 14));
		off = 16;
		break;
	case DLT_LINUX_SLL2:
		if (caplen < 20)
			return -1;
		*family = ether_type_family(be16(p));
		off = 20;
		break;
	case DLT_NULL:
	case DLT_LOOP:
		if (caplen < 4)
			return -1;
		*family = bsd_af_family(be32(p));
		off = 4;
		break;
	case DLT_RAW:
	case DLT_IPV4:
	case DLT_IPV6:
		if (caplen < 1)
			return -1;
		*family = p[0] >> 4 == 4 ? 4 : p[0] >> 4 == 6 ? 6 : 0;
		off = 0;
		break;
	default:
		return -1;
	}
	return *family ? (long)off : -1;
}

/**
 * ipv4_header() - take apart an IPv4 header
 * @p:		the IP header
 * @avail:	bytes of it the record holds
 * @wire:	bytes of the IP packet on the wire, from the record's length
 * @s:		the segment: addresses filled in
 * @hlen:	set to the header's length
 * @plen:	set to the IP payload's length on the wire
 * @st:		counters
 *
 * Return: true for the first and only fragment of a TCP packet.
 */
static bool ipv4_header(const uint8_t *p, uint32_t avail, uint32_t wire,
			struct tcp_seg *s, uint32_t *hlen, uint32_t *plen,
			struct capture_stats *st)
{
	uint32_t ihl, total;

	if (avail < 20) {
		st->short_hdr++;
		return false;
	}
	ihl = (p[0] & 0xfu) * 4;
	total = be16(p + 2);
	/* A segment offloading made larger than 64 KiB says 0. */
	if (total == 0)
		total = wire;
	if (p[0] >> 4 != 4 || ihl < 20 || total < ihl) {
		st->malformed++;
		return false;
	}
	if (p[9] != IPPROTO_TCP_) {
		st->other++;
		return false;
	}
	if (be16(p + 6) & 0x3fff) { /* more fragments, or an offset */
		st->fragments++;
		return false;
	}
	if (avail < ihl) {
		st->short_hdr++;
		return false;
	}
	s->family = 4;
	memcpy(s->src, p + 12, 4);
	memcpy(s->dst, p + 16, 4);
	*hlen = ihl;
	*plen = total - ihl;
	return true;
}

/**
 * ipv6_header() - take apart an IPv6 header and its extension headers
 * @p:		the IP header
 * @avail:	bytes of it the record holds
 * @wire:	bytes of the IP packet on the wire, from the record's length
 * @s:		the segment: addresses filled in
 * @hlen:	set to the length of the headers up to TCP
 * @plen:	set to the length of what follows them on the wire
 * @st:		counters
 *
 * Return: true for an unfragmented TCP packet.
 */
static bool ipv6_header(const uint8_t *p, uint32_t avail, uint32_t wire,
			struct tcp_seg *s, uint32_t *hlen, uint32_t *plen,
			struct capture_stats *st)
{
	uint32_t off = 40, total;
	uint8_t next;

	if (avail < 40) {
		st->short_hdr++;
		return false;
	}
	total = 40 + be16(p + 4);
	if (total == 40 && wire > 40) /* a jumbogram, or offloading */
		total = wire;
	next = p[6];
	/* Hop-by-hop, routing, destination options and AH; a fragment
	 * header means a fragment, which is skipped. */
	while (next == 0 || next == 43 || next == 60 || next == 51 ||
	       next == 44) {
		if (next == 44) {
			st->fragments++;
			return false;
		}
		if (avail < off + 8) {
			st->short_hdr++;
			return false;
		}
		next = p[off];
		off += next == 51 ? ((uint32_t)p[off + 1] + 2) * 4
				  : ((uint32_t)p[off + 1] + 1) * 8;
	}
	if (next != IPPROTO_TCP_) {
		st->other++;
		return false;
	}
	if (total < off) {
		st->malformed++;
		return false;
	}
	s->family = 6;
	memcpy(s->src, p + 8, 16);
	memcpy(s->dst, p + 24, 16);
	*hlen = off;
	*plen = total - off;
	return true;
}

/**
 * tcp_header() - take apart a TCP header and place its payload
 * @p:		the TCP header
 * @avail:	bytes from it to the record's end
 * @plen:	bytes of TCP header and payload on the wire
 * @s:		the segment: ports, numbers, flags and payload filled in
 * @st:		counters
 *
 * Return: true when the header is whole and consistent.
 */
static bool tcp_header(const uint8_t *p, uint32_t avail, uint32_t plen,
		       struct tcp_seg *s, struct capture_stats *st)
{
	uint32_t doff;

	if (avail < 20 || avail < (uint32_t)(p[12] >> 4) * 4) {
		st->short_hdr++;
		return false;
	}
	doff = (uint32_t)(p[12] >> 4) * 4;
	if (doff < 20 || doff > plen) {
		st->malformed++;
		return false;
	}
	s->sport = be16(p);
	s->dport = be16(p + 2);
	s->seq = be32(p + 4);
	s->ack = be32(p + 8);
	s->flags = p[13] & (TCP_F_FIN | TCP_F_SYN | TCP_F_RST | TCP_F_ACK);
	s->data = p + doff;
	s->len = plen - doff;
	s->caplen = avail - doff < s->len ? avail - doff : s->len;
	if (s->caplen < s->len)
		st->snapped++;
	return true;
}

/**
 * capture_decode() - find the TCP segment in one record
 * @linktype:	the capture's DLT_ type
 * @p:		the record's bytes
 * @caplen:	how many the record holds
 * @len:	how long the packet was on the wire
 * @s:		filled in with the segment
 * @st:		counters of what the records held
 *
 * Return: true for a TCP segment over IPv4 or IPv6.
 */
bool capture_decode(int linktype, const uint8_t *p, uint32_t caplen,
		    uint32_t len, struct tcp_seg *s, struct capture_stats *st)
{
	uint32_t hlen = 0, plen = 0, wire;
	int family = 0;
	long off = link_header(linktype, p, caplen, &family);
	bool ok;

	if (off < 0) {
		st->other++;
		return false;
	}
	wire = len > (uint32_t)off ? len - (uint32_t)off : 0;
	p += off;
	caplen -= (uint32_t)off;
	if (family == 4)
		ok = ipv4_header(p, caplen, wire, s, &hlen, &plen, st);
	else
		ok = ipv6_header(p, caplen, wire, s, &hlen, &plen, st);
	if (!ok)
		return false;
	if (caplen < hlen) {
		st->short_hdr++;
		return false;
	}
	if (!tcp_header(p + hlen, caplen - hlen, plen, s, st))
		return false;
	st->tcp++;
	return true;
}

/**
 * supported_link() - can capture_decode() read this link-layer type
 * @linktype:	DLT_ value
 *
 * Return: true if so.
 */
static bool supported_link(int linktype)
{
	switch (linktype) {
	case DLT_EN10MB:
	case DLT_LINUX_SLL:
	case DLT_LINUX_SLL2:
	case DLT_NULL:
	case DLT_LOOP:
	case DLT_RAW:
	case DLT_IPV4:
	case DLT_IPV6:
		return true;
	default:
		return false;
	}
}

/**
 * capture_open() - open a capture file and check that it can be read
 * @c:		the capture, filled in
 * @path:	its path, or "-" for standard input
 *
 * An empty file gets a message of its own: libpcap's ("truncated dump
 * file; tried to read 4 file header bytes, only got 0") does not say
 * that nothing is there.
 *
 * Return: 0, or -1 with @c->err set.
 */
int capture_open(struct capture *c, const char *path)
{
	char errbuf[PCAP_ERRBUF_SIZE] = "";
	struct stat sb;

	memset(c, 0, sizeof(*c));
	if (strcmp(path, "-") && stat(path, &sb)) {
		snprintf(c->err, sizeof(c->err), "%s", strerror(errno));
		return -1;
	}
	if (strcmp(path, "-") && S_ISREG(sb.st_mode) && sb.st_size == 0) {
		snprintf(c->err, sizeof(c->err),
			 "the file is empty: not a capture");
		return -1;
	}
	c->pcap = pcap_open_offline(path, errbuf);
	if (!c->pcap) {
		snprintf(c->err, sizeof(c->err),
			 "not a capture libpcap can read (pcap or pcapng): %s",
			 errbuf);
		return -1;
	}
	c->linktype = pcap_datalink(c->pcap);
	/* A pcapng section header says 1.0, a pcap file header 2.4. */
	c->format = pcap_major_version(c->pcap) == 1 ? "pcapng" : "pcap";
	c->st.snaplen = (uint32_t)pcap_snapshot(c->pcap);
	if (!supported_link(c->linktype)) {
		snprintf(
			c->err, sizeof(c->err),
			"its link-layer type is %s (%d): only Ethernet, Linux cooked (SLL, SLL2), raw IP and BSD loopback are read",
			capture_link_name(c->linktype), c->linktype);
		capture_close(c);
		return -1;
	}
	return 0;
}

/**
 * capture_next() - the next TCP segment of the capture
 * @c:	the capture
 * @s:	filled in with it
 *
 * Records that hold no TCP segment are counted and passed over.
 *
 * Return: CAP_SEG, CAP_END at the end of the file, or CAP_ERROR when the
 * file breaks off in the middle of a record or is corrupt (@c->err says
 * how).
 */
enum cap_result capture_next(struct capture *c, struct tcp_seg *s)
{
	struct pcap_pkthdr *h;
	const u_char *p;
	uint64_t usec;
	int r;

	for (;;) {
		r = pcap_next_ex(c->pcap, &h, &p);
		if (r == PCAP_ERROR_BREAK)
			return CAP_END;
		if (r != 1) {
			snprintf(c->err, sizeof(c->err), "%s",
				 pcap_geterr(c->pcap));
			/* libpcap's words for a record cut short. */
			c->cut = strstr(c->err, "truncated") != NULL;
			return CAP_ERROR;
		}
		c->st.packets++;
		usec = (uint64_t)h->ts.tv_sec * 1000000u +
		       (uint64_t)h->ts.tv_usec;
		if (c->st.packets == 1)
			c->st.first_usec = usec;
		c->st.last_usec = usec;
		if (capture_decode(c->linktype, p, h->caplen, h->len, s,
				   &c->st)) {
			s->usec = usec;
			return CAP_SEG;
		}
	}
}

/**
 * capture_break_text() - how a capture that ended in CAP_ERROR ended
 * @c:	the capture
 *
 * Return: "breaks off after" for a file cut short in the middle of a
 * record, "is unreadable after" for one libpcap cannot read on (such as
 * a pcapng file with interfaces of different link-layer types); the
 * number of packets read follows.
 */
const char *capture_break_text(const struct capture *c)
{
	return c->cut ? "breaks off after" : "is unreadable after";
}

/**
 * capture_close() - close the file
 * @c:	the capture
 */
void capture_close(struct capture *c)
{
	if (c->pcap)
		pcap_close(c->pcap);
	c->pcap = NULL;
}
