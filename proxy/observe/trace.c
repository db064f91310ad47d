// SPDX-License-Identifier: GPL-2.0-or-later
/* trace.c - a headers-only capture of each connection's client side
 *
 * Theory of operation: with --trace, every connection is written to the
 * capture file (tracefile.c) as the client saw it: the client's and the
 * listener's real addresses and ports, a SYN, SYN-ACK and ACK when it
 * starts, then one TCP segment per SMB frame, each direction's sequence
 * numbers counting every byte the stream carried, and a FIN or RST at the
 * end. A segment's record holds the frame's first bytes only: up to the
 * first READ or WRITE data, the first payload that is spliced, or the
 * first byte the framer says no record may keep (smb_msg_storable(): a
 * SESSION_SETUP's security blob, from which a password can be cracked),
 * and at most TRACE_SNAP bytes; its original length is the whole
 * frame's, as a capture with a snaplen would have it. A frame longer
 * than an IP packet is written as one segment with its first bytes and
 * empty ones after it, each written once the bytes it stands for have
 * passed: a header claiming 16 MiB makes one record, not 257, until the
 * 16 MiB come. So the trace reads like tcpdump -s 512 of the client
 * side, and tshark decodes every SMB2 header in it; yet nothing spliced
 * is ever copied, and the trace costs a copy of a few hundred bytes per
 * frame and one record per 64 KiB that passed.
 *
 * The bytes come from the pump (trace_chunk(), around each read; spliced
 * bytes are only counted) and where frames start and what they hold from
 * the framer (trace_message()). A frame is written once its bytes up to
 * the cut are in; only one frame per direction can be waiting for bytes,
 * the last one of a read, and it waits in @buf. A direction that is not
 * SMB (tcp mode, or the framer gave up) is written as one segment with
 * its first TRACE_RAW_SNAP bytes, with a log line saying so: too few to
 * hold an SMB session's second message (in tcp mode, its SESSION_SETUP).
 *
 * A live handover carries a capture whole (trace_conn_save(),
 * trace_conn_restore()): the new process goes on with the same addresses
 * and sequence numbers, and completes the record in progress from the
 * bytes the old one had put in @buf.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "observe/trace.h"
#include "observe/tracefile.h"

/* Bytes of a stream not framed as SMB that its one record holds: enough
 * to tell what it is, too few to reach a second SMB message. */
#define TRACE_RAW_SNAP 64u
/* IP and TCP header bytes, and the most one segment can claim to carry. */
#define IP4_HDR	   20u
#define IP6_HDR	   40u
#define TCP_HDR	   20u
#define IP_MAX_LEN 65535u
#define TCP_FIN	   0x01
#define TCP_SYN	   0x02
#define TCP_RST	   0x04
#define TCP_PSH	   0x08
#define TCP_ACK	   0x10

/**
 * struct trace_dir - one direction's capture
 * @seen:	stream bytes passed so far (the sequence number's offset)
 * @f_off:	stream offset of the frame being captured
 * @f_len:	its length, prefix included, once the framer reported it
 * @f_cut:	how much of it the record takes
 * @f_known:	the framer has reported it
 * @f_done:	its first record is written
 * @f_sent:	bytes of it the records written so far stand for
 * @f_have:	bytes of it in @buf
 * @f_ts:	when it was reported
 * @c_p:	the read being walked: its bytes (NULL if spliced)
 * @c_off:	its stream offset
 * @c_n:	its length
 * @raw:	not SMB: the first bytes are written once, then nothing
 * @raw_done:	and they were
 * @buf:	the frame's first bytes
 */
struct trace_dir {
	uint64_t seen;
	uint64_t f_off;
	uint32_t f_len, f_cut;
	bool f_known, f_done;
	uint32_t f_sent;
	uint32_t f_have;
	struct timespec f_ts;
	const uint8_t *c_p;
	uint64_t c_off;
	size_t c_n;
	bool raw, raw_done;
	uint8_t buf[TRACE_SNAP];
};

/**
 * struct trace_conn - a connection's capture
 * @v6:		the addresses are IPv6
 * @addr:	the client's and the listener's address (4 or 16 bytes)
 * @port:	their ports, network order
 * @isn:	initial sequence number of each direction
 * @what:	the connection, for the log
 * @dir:	per direction; [DIR_TO_SERVER] is the client's
 */
struct trace_conn {
	bool v6;
	uint8_t addr[2][16];
	uint16_t port[2];
	uint32_t isn[DIR_COUNT];
	char what[64];
	struct trace_dir dir[DIR_COUNT];
};

/**
 * take_addr() - an address and port, IPv4-mapped ones as IPv4
 * @sa:		the address
 * @addr:	set to its 4 or 16 bytes
 * @port:	set to its port, network order
 *
 * Return: true if it is IPv6.
 */
static bool take_addr(const struct sockaddr_storage *sa, uint8_t *addr,
		      uint16_t *port)
{
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
	const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;

	if (sa->ss_family == AF_INET) {
		memcpy(addr, &s4->sin_addr, 4);
		*port = s4->sin_port;
		return false;
	}
	*port = s6->sin6_port;
	if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
		memcpy(addr, &s6->sin6_addr.s6_addr[12], 4);
		return false;
	}
	memcpy(addr, &s6->sin6_addr, 16);
	return true;
}

/**
 * trace_conn_new() - begin a connection's capture
 * @client:	the client's address
 * @local:	the listener's address, as the client reached it
 * @what:	the connection, for the log
 *
 * Return: the capture, or NULL if --trace is off or memory ran out.
 */
struct trace_conn *trace_conn_new(const struct sockaddr_storage *client,
				  const struct sockaddr_storage *local,
				  const char *what)
{
	struct trace_conn *t;

	if (!tracefile_enabled() || !(t = calloc(1, sizeof(*t))))
		return NULL;
	t->v6 = take_addr(client, t->addr[0], &t->port[0]);
	/* A dual-stack listener gives both in the same form. */
	take_addr(local, t->addr[1], &t->port[1]);
	t->isn[DIR_TO_SERVER] = 0x10000000u;
	t->isn[DIR_TO_CLIENT] = 0x20000000u;
	snprintf(t->what, sizeof(t->what), "%s", what);
	return t;
}

/**
 * put_segment() - write one TCP segment's record
 * @t:		the connection
 * @d:		the direction
 * @ts:		when
 * @flags:	TCP flags
 * @off:	stream offset of the segment's first byte
 * @data:	its first bytes
 * @have:	how many
 * @len:	how many it carried
 */
static void put_segment(const struct trace_conn *t, enum dir_index d,
			const struct timespec *ts, uint8_t flags, uint64_t off,
			const uint8_t *data, uint32_t have, uint32_t len)
{
	uint8_t pkt[IP6_HDR + TCP_HDR + TRACE_SNAP];
	const struct trace_dir *o =
		&t->dir[d == DIR_TO_SERVER ? DIR_TO_CLIENT : DIR_TO_SERVER];
	unsigned from = d == DIR_TO_SERVER ? 0 : 1,
		 ip = t->v6 ? IP6_HDR : IP4_HDR;
	uint32_t seq = t->isn[d] + 1 + (uint32_t)off;
	uint32_t ack =
		t->isn[d == DIR_TO_SERVER ? DIR_TO_CLIENT : DIR_TO_SERVER] + 1 +
		(uint32_t)o->seen;
	uint8_t *tcp = pkt + ip;
	uint32_t sum = 0;

	memset(pkt, 0, ip + TCP_HDR);
	if (t->v6) {
		pkt[0] = 0x60;
		*(uint16_t *)(pkt + 4) = htons((uint16_t)(TCP_HDR + len));
		pkt[6] = IPPROTO_TCP;
		pkt[7] = 64;
		memcpy(pkt + 8, t->addr[from], 16);
		memcpy(pkt + 24, t->addr[!from], 16);
	} else {
		pkt[0] = 0x45;
		*(uint16_t *)(pkt + 2) =
			htons((uint16_t)(IP4_HDR + TCP_HDR + len));
		pkt[6] = 0x40; /* don't fragment */
		pkt[8] = 64;
		pkt[9] = IPPROTO_TCP;
		memcpy(pkt + 12, t->addr[from], 4);
		memcpy(pkt + 16, t->addr[!from], 4);
		for (unsigned i = 0; i < IP4_HDR; i += 2)
			sum += (uint32_t)pkt[i] << 8 | pkt[i + 1];
		sum = (sum & 0xffff) + (sum >> 16);
		sum = (sum & 0xffff) + (sum >> 16);
		*(uint16_t *)(pkt + 10) = htons((uint16_t)~sum);
	}
	*(uint16_t *)(tcp + 0) = t->port[from];
	*(uint16_t *)(tcp + 2) = t->port[!from];
	*(uint32_t *)(tcp + 4) = htonl(flags & TCP_SYN ? t->isn[d] : seq);
	*(uint32_t *)(tcp + 8) = htonl(flags & TCP_ACK ? ack : 0);
	tcp[12] = (TCP_HDR / 4) << 4;
	tcp[13] = flags;
	*(uint16_t *)(tcp + 14) = htons(65535);
	if (have) /* memcpy() may not be given NULL, even for 0 bytes */
		memcpy(tcp + TCP_HDR, data, have);
	tracefile_put(ts, pkt, ip + TCP_HDR + have, ip + TCP_HDR + len);
}

/**
 * put_frame() - write a frame's records, as far as its bytes have passed
 * @t:		the connection
 * @d:		the direction
 * @off:	the frame's stream offset
 * @len:	its length
 * @sent:	bytes of it already written (0: the first record is due),
 *		updated
 * @passed:	stream offset up to which bytes have passed
 * @data:	its first bytes, for the first record
 * @have:	how many
 * @ts:		when
 *
 * The first record is written at once; the empty ones after it each
 * once the bytes it stands for have passed, or the last, shorter one
 * once the frame has. Records follow the bytes, so a header claiming a
 * long frame costs one record, not one per 64 KiB of the claim.
 */
static void put_frame(const struct trace_conn *t, enum dir_index d,
		      uint64_t off, uint64_t len, uint32_t *sent,
		      uint64_t passed, const uint8_t *data, uint32_t have,
		      const struct timespec *ts)
{
	uint32_t max = IP_MAX_LEN - (t->v6 ? 0 : IP4_HDR) - TCP_HDR, n;

	for (; *sent < len; *sent += n) {
		n = len - *sent < max ? (uint32_t)(len - *sent) : max;
		if (*sent && off + *sent + n > passed)
			break;
		put_segment(t, d, ts, TCP_PSH | TCP_ACK, off + *sent,
			    *sent ? NULL : data, *sent ? 0 : have, n);
	}
}

/**
 * trace_conn_start() - the connection is set up: its handshake
 * @t:	the capture, or NULL
 */
void trace_conn_start(struct trace_conn *t)
{
	struct timespec ts;

	if (!t)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	put_segment(t, DIR_TO_SERVER, &ts, TCP_SYN, 0, NULL, 0, 0);
	put_segment(t, DIR_TO_CLIENT, &ts, TCP_SYN | TCP_ACK, 0, NULL, 0, 0);
	put_segment(t, DIR_TO_SERVER, &ts, TCP_ACK, 0, NULL, 0, 0);
}

/**
 * fill() - copy the read's bytes of the frame being captured into @buf
 * @td:	the direction
 */
static void fill(struct trace_dir *td)
{
	uint32_t snap = td->raw ? TRACE_RAW_SNAP : TRACE_SNAP;
	uint64_t want = td->f_off + (td->f_known ? td->f_cut : snap);
	uint64_t from = td->f_off + td->f_have, to = td->c_off + td->c_n;

	if (!td->c_p || from < td->c_off || from >= to)
		return;
	if (to > want)
		to = want;
	if (to <= from)
		return;
	memcpy(td->buf + td->f_have, td->c_p + (from - td->c_off), to - from);
	td->f_have += (uint32_t)(to - from);
}

/**
 * finish_frame() - write the frame's first record if its bytes up to the
 *		    cut are in, and the records for the bytes since
 * @t:		the connection
 * @d:		the direction
 * @passed:	stream offset up to which bytes have passed
 */
static void finish_frame(struct trace_conn *t, enum dir_index d,
			 uint64_t passed)
{
	struct trace_dir *td = &t->dir[d];

	if (!td->f_known || td->f_have < td->f_cut)
		return;
	put_frame(t, d, td->f_off, td->f_len, &td->f_sent, passed, td->buf,
		  td->f_have, &td->f_ts);
	td->f_done = true;
}

/**
 * end_frame() - the frame being captured ended where the next one begins
 * @t:		the connection
 * @d:		the direction
 * @next:	the next frame's stream offset
 *
 * Its bytes are all in by now. A frame the framer never reported (a
 * NetBIOS keepalive has no message) is written as it is, so that no byte
 * of the stream is missing from the sequence numbers.
 */
static void end_frame(struct trace_conn *t, enum dir_index d, uint64_t next)
{
	struct trace_dir *td = &t->dir[d];

	fill(td);
	if (td->f_known) {
		finish_frame(t, d, next);
	} else if (next > td->f_off) {
		uint64_t len = next - td->f_off;

		clock_gettime(CLOCK_REALTIME, &td->f_ts);
		td->f_sent = 0;
		put_frame(t, d, td->f_off, len, &td->f_sent, next, td->buf,
			  td->f_have < len ? td->f_have : (uint32_t)len,
			  &td->f_ts);
	}
	td->f_off = next;
	td->f_known = false;
	td->f_have = 0;
}

/**
 * trace_chunk() - a read is about to be walked by the framer
 * @t:	the capture, or NULL
 * @d:	its direction
 * @p:	its bytes, NULL if they were spliced
 * @n:	how many
 */
void trace_chunk(struct trace_conn *t, enum dir_index d, const uint8_t *p,
		 size_t n)
{
	struct trace_dir *td;

	if (!t)
		return;
	td = &t->dir[d];
	td->c_p = p;
	td->c_off = td->seen;
	td->c_n = n;
}

/**
 * trace_message() - the framer reported a message
 * @t:	the capture, or NULL
 * @d:	its direction
 * @m:	the message
 *
 * A frame's first message begins its capture, and ends the one before,
 * whose bytes are all in by now. Any message may cut the record short:
 * READ and WRITE data, whatever is spliced, and what the framer says no
 * record may keep (a SESSION_SETUP's security blob) stay out.
 */
void trace_message(struct trace_conn *t, enum dir_index d,
		   const struct smb_msg *m)
{
	struct trace_dir *td;
	uint64_t len, keep;

	if (!t || t->dir[d].raw)
		return;
	td = &t->dir[d];
	if (m->start == 0) {
		if (td->f_off != m->frame_off)
			end_frame(t, d, m->frame_off);
		len = smb_msg_frame_end(m) - m->frame_off;
		td->f_off = m->frame_off;
		td->f_len = (uint32_t)len;
		td->f_cut = len < TRACE_SNAP ? (uint32_t)len : TRACE_SNAP;
		td->f_known = true;
		td->f_done = false;
		td->f_sent = 0;
		clock_gettime(CLOCK_REALTIME, &td->f_ts);
	}
	keep = SMB_PREFIX_LEN + (uint64_t)m->start + smb_msg_storable(m);
	if (keep < td->f_cut)
		td->f_cut = (uint32_t)keep;
	if (m->pay_end > m->pay_start &&
	    (m->pay_class != SMB_CLASS_OTHER || m->pay_splice) &&
	    SMB_PREFIX_LEN + m->pay_start < td->f_cut)
		td->f_cut = SMB_PREFIX_LEN + m->pay_start;
}

/**
 * write_raw() - a direction that is not SMB: its first bytes, once
 * @t:	the connection
 * @d:	the direction
 */
static void write_raw(struct trace_conn *t, enum dir_index d)
{
	struct trace_dir *td = &t->dir[d];
	struct timespec ts;

	if (td->raw_done || !td->f_have)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	td->f_sent = 0;
	put_frame(t, d, td->f_off, td->f_have, &td->f_sent,
		  td->f_off + td->f_have, td->buf, td->f_have, &ts);
	td->raw_done = true;
	log_rate(
		LOG_LVL_INFO,
		"conn %s: trace: %s is not framed as SMB (tcp mode, or not SMB as smbsplice reads it): only its first %u bytes are in the trace",
		t->what,
		d == DIR_TO_SERVER ? "client to server" : "server to client",
		td->f_have);
}

/**
 * trace_chunk_done() - the framer has walked the read
 * @t:		the capture, or NULL
 * @d:		its direction
 * @opaque:	the stream is not SMB, or no longer
 */
void trace_chunk_done(struct trace_conn *t, enum dir_index d, bool opaque)
{
	struct trace_dir *td;

	if (!t)
		return;
	td = &t->dir[d];
	if (opaque && !td->raw) {
		/* From the frame where it stopped being SMB, or the one after
		 * the last written: its first bytes, and nothing after. */
		if (td->f_known && td->f_done)
			finish_frame(t, d, td->c_off + td->c_n);
		td->raw = true;
		if (td->f_known && td->f_done) {
			td->f_off += td->f_len;
			td->f_have = 0;
		}
		td->f_known = false;
	}
	fill(td);
	if (td->raw) {
		if (td->f_have >= TRACE_RAW_SNAP)
			write_raw(t, d);
	} else {
		finish_frame(t, d, td->c_off + td->c_n);
		/* The frame is over: what follows belongs to the next one. */
		if (td->f_known &&
		    td->c_off + td->c_n >= td->f_off + td->f_len) {
			end_frame(t, d, td->f_off + td->f_len);
			fill(td);
		}
	}
	td->seen = td->c_off + td->c_n;
	td->c_p = NULL;
}

/**
 * trace_conn_end() - the connection ends: its FINs, or a reset
 * @t:		the capture, or NULL; freed
 * @clean:	both sides closed cleanly
 */
void trace_conn_end(struct trace_conn *t, bool clean)
{
	struct timespec ts;

	if (!t)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	for (int d = 0; d < DIR_COUNT; d++) {
		struct trace_dir *td = &t->dir[d];
		uint64_t at = td->f_off + td->f_sent;

		if (td->raw) {
			write_raw(t, d);
		} else if (td->f_known && td->f_done &&
			   td->f_sent < td->f_len && td->seen > at) {
			/* A frame cut off: a last segment for what came of it,
			 * so that the FIN's sequence number follows on. */
			put_segment(t, d, &ts, TCP_PSH | TCP_ACK, at, NULL, 0,
				    (uint32_t)(td->seen - at));
		}
	}
	if (clean) {
		put_segment(t, DIR_TO_SERVER, &ts, TCP_FIN | TCP_ACK,
			    t->dir[DIR_TO_SERVER].seen, NULL, 0, 0);
		put_segment(t, DIR_TO_CLIENT, &ts, TCP_FIN | TCP_ACK,
			    t->dir[DIR_TO_CLIENT].seen, NULL, 0, 0);
	} else {
		put_segment(t, DIR_TO_CLIENT, &ts, TCP_RST | TCP_ACK,
			    t->dir[DIR_TO_CLIENT].seen, NULL, 0, 0);
	}
	free(t);
}

/**
 * trace_conn_save() - write a connection's capture out, for a live handover
 * @t:	the capture, between two events (no read is being walked)
 * @s:	filled whole
 */
void trace_conn_save(const struct trace_conn *t, struct trace_conn_saved *s)
{
	memset(s, 0, sizeof(*s));
	s->v6 = t->v6;
	memcpy(s->addr, t->addr, sizeof(s->addr));
	memcpy(s->port, t->port, sizeof(s->port));
	memcpy(s->isn, t->isn, sizeof(s->isn));
	memcpy(s->what, t->what, sizeof(s->what));
	for (int d = 0; d < DIR_COUNT; d++) {
		const struct trace_dir *td = &t->dir[d];
		struct trace_dir_saved *o = &s->dir[d];

		o->seen = td->seen;
		o->f_off = td->f_off;
		o->f_ts_sec = td->f_ts.tv_sec;
		o->f_ts_nsec = (uint32_t)td->f_ts.tv_nsec;
		o->f_len = td->f_len;
		o->f_cut = td->f_cut;
		o->f_sent = td->f_sent;
		o->f_have = td->f_have;
		o->f_known = td->f_known;
		o->f_done = td->f_done;
		o->raw = td->raw;
		o->raw_done = td->raw_done;
		memcpy(o->buf, td->buf,
		       td->f_have <= TRACE_SNAP ? td->f_have : 0);
	}
}

/**
 * saved_dir_ok() - may a saved direction be restored
 * @o:	the direction, from a handover image (input, not trusted)
 *
 * fill() copies into @buf up to @f_cut (or a snap) from @f_have, and
 * put_segment() copies @f_have bytes into a packet of TRACE_SNAP: both
 * must be within it. The flags must be ones trace_message() and
 * trace_chunk_done() can leave: a raw direction reports no frame (@f_done
 * may outlive its frame: end_frame() leaves it). A reported frame's cut
 * and records lie in it.
 *
 * Return: true if it may.
 */
static bool saved_dir_ok(const struct trace_dir_saved *o)
{
	if (o->f_known > 1 || o->f_done > 1 || o->raw > 1 || o->raw_done > 1 ||
	    o->f_have > TRACE_SNAP || o->f_cut > TRACE_SNAP ||
	    o->f_ts_nsec >= 1000000000u || o->f_ts_sec < 0 ||
	    (o->raw_done && !o->raw) || (o->raw && o->f_known))
		return false;
	if (o->f_known && (o->f_len < SMB_PREFIX_LEN || o->f_cut > o->f_len ||
			   o->f_sent > o->f_len))
		return false;
	for (uint32_t i = o->f_have; i < TRACE_SNAP; i++)
		if (o->buf[i])
			return false;
	return true;
}

/**
 * trace_conn_restore() - continue a connection's capture in a new process
 * @out:	set to the capture, or to NULL when --trace is off here
 * @s:	what trace_conn_save() wrote in the old process
 *
 * Return: 0; -1 if @s is not a capture's state or memory ran out, @out
 * then NULL.
 */
int trace_conn_restore(struct trace_conn **out,
		       const struct trace_conn_saved *s)
{
	struct trace_conn *t;

	*out = NULL;
	if (s->v6 > 1 || !memchr(s->what, 0, sizeof(s->what)))
		return -1;
	for (int a = 0; a < 2; a++)
		for (unsigned i = s->v6 ? 16 : 4; i < 16; i++)
			if (s->addr[a][i])
				return -1;
	for (int d = 0; d < DIR_COUNT; d++)
		if (!saved_dir_ok(&s->dir[d]))
			return -1;
	if (!tracefile_enabled())
		return 0;
	if (!(t = calloc(1, sizeof(*t))))
		return -1;
	t->v6 = s->v6;
	memcpy(t->addr, s->addr, sizeof(t->addr));
	memcpy(t->port, s->port, sizeof(t->port));
	memcpy(t->isn, s->isn, sizeof(t->isn));
	memcpy(t->what, s->what, sizeof(t->what));
	for (int d = 0; d < DIR_COUNT; d++) {
		const struct trace_dir_saved *o = &s->dir[d];
		struct trace_dir *td = &t->dir[d];

		td->seen = o->seen;
		td->f_off = o->f_off;
		td->f_len = o->f_len;
		td->f_cut = o->f_cut;
		td->f_known = o->f_known;
		td->f_done = o->f_done;
		td->f_sent = o->f_sent;
		td->f_have = o->f_have;
		td->f_ts.tv_sec = (time_t)o->f_ts_sec;
		td->f_ts.tv_nsec = (long)o->f_ts_nsec;
		/* No read is being walked: fill() copies nothing until the
		 * next trace_chunk() says where one is. */
		td->c_p = NULL;
		td->c_off = o->seen;
		td->c_n = 0;
		td->raw = o->raw;
		td->raw_done = o->raw_done;
		memcpy(td->buf, o->buf, sizeof(td->buf));
	}
	*out = t;
	return 0;
}

/**
 * trace_conn_free() - drop a capture without writing its end
 * @t:	the capture, or NULL
 *
 * For a connection handed over: the next process writes the rest of its
 * records, and its end, from the state trace_conn_save() gave it.
 */
void trace_conn_free(struct trace_conn *t)
{
	free(t);
}
