/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_ADVISE_CAPTURE_H
#define SMBSPLICE_ADVISE_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <pcap/pcap.h>

/* TCP header flags the reassembler looks at. */
#define TCP_F_FIN 0x01
#define TCP_F_SYN 0x02
#define TCP_F_RST 0x04
#define TCP_F_ACK 0x10

/**
 * struct tcp_seg - one TCP segment, as a capture record holds it
 * @family:	4 or 6
 * @src:	source address (4 or 16 bytes used)
 * @dst:	destination address
 * @sport:	source port
 * @dport:	destination port
 * @seq:	sequence number
 * @ack:	acknowledgement number (meaningful with TCP_F_ACK)
 * @flags:	TCP_F_*
 * @data:	the payload bytes the record holds (valid until the next
 *		capture_next())
 * @caplen:	how many: at most @len, fewer when the snaplen cut them
 * @len:	payload bytes the segment carried on the wire
 * @usec:	when the capture saw it, microseconds since the epoch
 */
struct tcp_seg {
	uint8_t family;
	uint8_t src[16], dst[16];
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint8_t flags;
	const uint8_t *data;
	uint32_t caplen, len;
	uint64_t usec;
};

/**
 * struct capture_stats - what the records of a capture held
 * @packets:	records read
 * @tcp:	TCP segments decoded from them
 * @other:	records that are not TCP over IPv4 or IPv6 (ARP, UDP, ...)
 * @fragments:	IP fragments, which are skipped: a capture of TCP on a
 *		host holds none, since TCP segments to fit the path
 * @short_hdr:	records cut short before the end of their TCP header,
 *		whose payload is lost to the reassembler
 * @malformed:	headers that contradict themselves
 * @snapped:	TCP segments whose payload the snaplen cut
 * @snaplen:	the capture's snaplen
 * @first_usec:	time of the first record, microseconds since the epoch
 * @last_usec:	time of the last
 */
struct capture_stats {
	uint64_t packets, tcp, other, fragments, short_hdr, malformed;
	uint64_t snapped;
	uint32_t snaplen;
	uint64_t first_usec, last_usec;
};

/**
 * struct capture - an open capture file
 * @pcap:	libpcap's handle
 * @linktype:	its DLT_ link-layer type
 * @format:	"pcap" or "pcapng"
 * @st:		what was read so far
 * @cut:	after CAP_ERROR: the file breaks off in the middle of a record
 *		(rather than holding something libpcap cannot read)
 * @err:	after CAP_ERROR or a failed capture_open(): what went wrong,
 *		one line without the file's name
 */
struct capture {
	pcap_t *pcap;
	int linktype;
	const char *format;
	struct capture_stats st;
	bool cut;
	char err[PCAP_ERRBUF_SIZE + 128];
};

enum cap_result {
	CAP_SEG,   /* a TCP segment */
	CAP_END,   /* the end of the file */
	CAP_ERROR, /* the file is cut short or corrupt: see @err */
};

int capture_open(struct capture *c, const char *path);
const char *capture_break_text(const struct capture *c);
enum cap_result capture_next(struct capture *c, struct tcp_seg *s);
void capture_close(struct capture *c);
const char *capture_link_name(int linktype);
bool capture_decode(int linktype, const uint8_t *p, uint32_t caplen,
		    uint32_t len, struct tcp_seg *s, struct capture_stats *st);

#endif /* SMBSPLICE_ADVISE_CAPTURE_H */
