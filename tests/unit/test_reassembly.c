// SPDX-License-Identifier: GPL-2.0-or-later
/* test_reassembly.c - the advisor's packet decoding and TCP reassembly
 *
 * Theory of operation: segments are built here directly (struct tcp_seg)
 * and given to the reassembler, whose consumer records what it is told:
 * each direction's bytes, its holes (where, how long, why) and the order
 * of calls. Each test checks that every byte of the stream arrives once
 * and in order, whatever order, repetition or wraparound the segments
 * come with, and that every missing byte is a hole of the right kind in
 * the right place. The decoder is tested on hand-built records of each
 * link-layer type.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "capture.h"
#include "reassembly.h"

/* --- a recording consumer ------------------------------------------------ */

#define MAXBYTES (1u << 20)
#define MAXHOLES 64

struct hole_rec {
	uint64_t at, n;
	enum rs_hole_kind kind;
};

struct dir_rec {
	bool begun, at_start;
	uint8_t *bytes; /* grown as bytes come */
	uint64_t off;	/* bytes and holes so far */
	size_t nbytes;
	struct hole_rec holes[MAXHOLES]; /* the first MAXHOLES */
	unsigned nholes;		 /* all of them */
	uint64_t hole_bytes;
};

struct conn_rec {
	struct rs_key key;
	struct dir_rec dir[2];
	bool closed;
};

#define MAXCONNS 2048
static struct conn_rec *conns[MAXCONNS];
static unsigned nconns;

static void *rec_open(void *ctx, const struct rs_key *key)
{
	struct conn_rec *c = calloc(1, sizeof(*c));

	assert_non_null(c);
	assert_true(nconns < MAXCONNS);
	c->key = *key;
	conns[nconns++] = c;
	return c;
}

static void rec_begin(void *conn, enum rs_dir d, bool at_start)
{
	struct dir_rec *r = &((struct conn_rec *)conn)->dir[d];

	assert_false(r->begun);
	r->begun = true;
	r->at_start = at_start;
}

static void rec_data(void *conn, enum rs_dir d, const uint8_t *p, size_t n)
{
	struct dir_rec *r = &((struct conn_rec *)conn)->dir[d];

	assert_true(r->begun);
	assert_false(((struct conn_rec *)conn)->closed);
	assert_true(n > 0);
	assert_true(r->nbytes + n <= MAXBYTES);
	r->bytes = realloc(r->bytes, r->nbytes + n);
	assert_non_null(r->bytes);
	memcpy(r->bytes + r->nbytes, p, n);
	r->nbytes += n;
	r->off += n;
}

static void rec_hole(void *conn, enum rs_dir d, uint64_t n,
		     enum rs_hole_kind kind)
{
	struct dir_rec *r = &((struct conn_rec *)conn)->dir[d];

	assert_true(r->begun);
	assert_true(n > 0);
	if (r->nholes < MAXHOLES)
		r->holes[r->nholes] = (struct hole_rec){ r->off, n, kind };
	r->nholes++;
	r->hole_bytes += n;
	r->off += n;
}

static void rec_close(void *conn)
{
	struct conn_rec *c = conn;

	assert_false(c->closed);
	c->closed = true;
}

static const struct rs_ops rec_ops = {
	.open = rec_open,
	.begin = rec_begin,
	.data = rec_data,
	.hole = rec_hole,
	.close = rec_close,
};

static struct rs_table *table;

/* The capture time of the segments seg() builds, in microseconds. */
static uint64_t clock_usec;

static int setup(void **state)
{
	nconns = 0;
	clock_usec = 0;
	table = rs_new(&rec_ops, NULL);
	return 0;
}

static int teardown(void **state)
{
	rs_free(table);
	for (unsigned i = 0; i < nconns; i++) {
		free(conns[i]->dir[0].bytes);
		free(conns[i]->dir[1].bytes);
		free(conns[i]);
	}
	nconns = 0;
	return 0;
}

/* --- building segments -----------------------------------------------------
 */

static uint8_t pattern[MAXBYTES];

static void fill_pattern(void)
{
	for (size_t i = 0; i < sizeof(pattern); i++)
		pattern[i] = (uint8_t)(i * 7 + i / 251);
}

/* A segment of connection @id (client port 40000 + id) in direction @to,
 * carrying stream bytes [off, off + len) of the pattern (keeping @cap of
 * them), with sequence numbers from @isn. */
static struct tcp_seg seg(unsigned id, bool to_server, uint32_t isn,
			  uint32_t off, uint32_t len, uint32_t cap,
			  uint8_t flags)
{
	struct tcp_seg s = { 0 };
	uint8_t a[4] = { 10, 0, 0, 1 }, b[4] = { 10, 0, 0, 2 };

	s.family = 4;
	memcpy(to_server ? s.src : s.dst, a, 4);
	memcpy(to_server ? s.dst : s.src, b, 4);
	s.sport = to_server ? (uint16_t)(40000 + id) : 445;
	s.dport = to_server ? 445 : (uint16_t)(40000 + id);
	s.seq = isn + 1 + off;
	s.flags = flags;
	s.data = pattern + off;
	s.len = len;
	s.caplen = cap;
	s.usec = clock_usec;
	return s;
}

/* Without ACK: send_ack() says what a peer acknowledges. */
static void send_seg(unsigned id, bool to_server, uint32_t isn, uint32_t off,
		     uint32_t len, uint8_t flags)
{
	struct tcp_seg s =
		seg(id, to_server, isn, off, len, len, flags & ~TCP_F_ACK);

	rs_segment(table, &s, to_server);
}

static void send_syn(unsigned id, bool to_server, uint32_t isn)
{
	struct tcp_seg s = seg(id, to_server, isn, 0, 0, 0,
			       TCP_F_SYN | (to_server ? 0 : TCP_F_ACK));

	s.seq = isn;
	rs_segment(table, &s, to_server);
}

static void send_ack(unsigned id, bool to_server, uint32_t peer_isn,
		     uint32_t acked)
{
	struct tcp_seg s = seg(id, to_server, 0, 0, 0, 0, TCP_F_ACK);

	s.ack = peer_isn + 1 + acked;
	rs_segment(table, &s, to_server);
}

static void assert_stream(const struct dir_rec *r, size_t n)
{
	assert_int_equal(r->nbytes, n);
	assert_memory_equal(r->bytes, pattern, n);
}

/* --- reassembly
 * ---------------------------------------------------------------- */

/* SYN, data both ways, FIN both ways: in order, one close. */
static void test_in_order(void **state)
{
	send_syn(1, true, 1000);
	send_syn(1, false, 5000);
	send_seg(1, true, 1000, 0, 100, TCP_F_ACK);
	send_seg(1, false, 5000, 0, 3000, TCP_F_ACK);
	send_seg(1, false, 5000, 3000, 3000, TCP_F_ACK);
	send_seg(1, true, 1000, 100, 0, TCP_F_ACK | TCP_F_FIN);
	assert_false(conns[0]->closed);
	send_seg(1, false, 5000, 6000, 0, TCP_F_ACK | TCP_F_FIN);
	assert_int_equal(nconns, 1);
	assert_true(conns[0]->closed);
	assert_true(conns[0]->dir[RS_TO_SERVER].at_start);
	assert_true(conns[0]->dir[RS_TO_CLIENT].at_start);
	assert_stream(&conns[0]->dir[RS_TO_SERVER], 100);
	assert_stream(&conns[0]->dir[RS_TO_CLIENT], 6000);
	assert_int_equal(conns[0]->key.port[0], 40001);
	assert_int_equal(conns[0]->key.port[1], 445);
	assert_int_equal(rs_stats(table)->lost_bytes, 0);
}

/* Segments in reverse order, then retransmitted and overlapping ones:
 * every byte once, in order. */
static void test_out_of_order_and_retransmits(void **state)
{
	const struct rs_stats *st = rs_stats(table);

	send_syn(1, true, 77);
	for (int i = 9; i >= 0; i--)
		send_seg(1, true, 77, (uint32_t)i * 1000, 1000, TCP_F_ACK);
	assert_stream(&conns[0]->dir[RS_TO_SERVER], 10000);
	assert_int_equal(st->ooo_segments, 9);
	send_seg(1, true, 77, 0, 1000, TCP_F_ACK);    /* repeat */
	send_seg(1, true, 77, 9500, 1000, TCP_F_ACK); /* half new */
	send_seg(1, true, 77, 10800, 200, TCP_F_ACK); /* ahead */
	send_seg(1, true, 77, 10700, 200, TCP_F_ACK); /* overlaps it */
	send_seg(1, true, 77, 10500, 300, TCP_F_ACK); /* fills the gap */
	assert_stream(&conns[0]->dir[RS_TO_SERVER], 11000);
	assert_int_equal(st->dup_bytes, 1000 + 500 + 100 + 100);
	rs_finish(table);
	assert_int_equal(st->lost_bytes, 0);
}

/* Sequence numbers that wrap past 2^32 in the middle of the stream. */
static void test_wraparound(void **state)
{
	uint32_t isn = 0xffffffffu - 2500;

	send_syn(1, false, isn);
	for (uint32_t off = 0; off < 8000; off += 1000)
		send_seg(1, false, isn, off, 1000, TCP_F_ACK);
	/* An old segment from before the wrap, repeated after it. */
	send_seg(1, false, isn, 2000, 1000, TCP_F_ACK);
	rs_finish(table);
	assert_stream(&conns[0]->dir[RS_TO_CLIENT], 8000);
	assert_int_equal(rs_stats(table)->lost_bytes, 0);
}

/* A segment the capture lacks, in the middle: a lost hole of its size in
 * its place, found at the FIN. */
static void test_lost_segment_at_fin(void **state)
{
	const struct dir_rec *r;

	send_syn(1, false, 9);
	send_seg(1, false, 9, 0, 1000, TCP_F_ACK);
	send_seg(1, false, 9, 2000, 1000, TCP_F_ACK);
	send_seg(1, false, 9, 3000, 0, TCP_F_ACK | TCP_F_FIN);
	rs_finish(table);
	r = &conns[0]->dir[RS_TO_CLIENT];
	assert_int_equal(r->nholes, 1);
	assert_int_equal(r->holes[0].at, 1000);
	assert_int_equal(r->holes[0].n, 1000);
	assert_int_equal(r->holes[0].kind, RS_HOLE_LOST);
	assert_int_equal(r->nbytes, 2000);
	assert_memory_equal(r->bytes, pattern, 1000);
	assert_memory_equal(r->bytes + 1000, pattern + 2000, 1000);
	assert_int_equal(rs_stats(table)->lost_bytes, 1000);
	assert_int_equal(rs_stats(table)->lost_conns, 1);
}

/* The peer keeps acknowledging past a hole while later data waits: the
 * hole is declared lost before the connection ends. */
static void test_lost_segment_by_ack(void **state)
{
	const struct dir_rec *r;

	send_syn(1, true, 100);
	send_syn(1, false, 200);
	send_seg(1, false, 200, 0, 500, TCP_F_ACK);
	send_seg(1, false, 200, 1500, 500, TCP_F_ACK);
	r = &conns[0]->dir[RS_TO_CLIENT];
	for (int i = 0; i < 7; i++)
		send_ack(1, true, 200, 2000);
	assert_int_equal(r->nholes, 0);
	send_ack(1, true, 200, 2000);
	assert_int_equal(r->nholes, 1);
	assert_int_equal(r->holes[0].at, 500);
	assert_int_equal(r->holes[0].n, 1000);
	assert_int_equal(r->nbytes, 1000);
	assert_false(conns[0]->closed);
}

/* A capture on several CPUs may write a segment after the ACK that
 * answers it: it fills its hole, and nothing is lost. */
static void test_segment_after_its_ack(void **state)
{
	send_syn(1, true, 100);
	send_syn(1, false, 200);
	send_seg(1, false, 200, 0, 500, TCP_F_ACK);
	send_seg(1, false, 200, 1500, 500, TCP_F_ACK);
	send_ack(1, true, 200, 2000);
	send_ack(1, true, 200, 2000);
	send_seg(1, false, 200, 500, 1000, TCP_F_ACK);
	for (int i = 0; i < 10; i++)
		send_ack(1, true, 200, 2000);
	rs_finish(table);
	assert_int_equal(conns[0]->dir[RS_TO_CLIENT].nholes, 0);
	assert_stream(&conns[0]->dir[RS_TO_CLIENT], 2000);
	assert_int_equal(rs_stats(table)->lost_bytes, 0);
}

/* A record that kept less than its segment carried: the bytes it kept,
 * then a snaplen hole for the rest, and no lost bytes. */
static void test_snaplen(void **state)
{
	struct tcp_seg s;
	const struct dir_rec *r;

	send_syn(1, false, 0);
	s = seg(1, false, 0, 0, 65000, 180, TCP_F_ACK);
	rs_segment(table, &s, false);
	s = seg(1, false, 0, 65000, 100, 100, TCP_F_ACK);
	rs_segment(table, &s, false);
	rs_finish(table);
	r = &conns[0]->dir[RS_TO_CLIENT];
	assert_int_equal(r->nholes, 1);
	assert_int_equal(r->holes[0].at, 180);
	assert_int_equal(r->holes[0].n, 65000 - 180);
	assert_int_equal(r->holes[0].kind, RS_HOLE_SNAPLEN);
	assert_int_equal(r->off, 65100);
	assert_memory_equal(r->bytes + 180, pattern + 65000, 100);
	assert_int_equal(rs_stats(table)->snapped_bytes, 65000 - 180);
	assert_int_equal(rs_stats(table)->lost_bytes, 0);
}

/* A RST ends the connection; what follows is late; a new SYN on the same
 * addresses starts a second connection. */
static void test_rst_and_reuse(void **state)
{
	send_syn(1, true, 10);
	send_seg(1, true, 10, 0, 50, TCP_F_ACK);
	send_seg(1, true, 10, 50, 0, TCP_F_ACK | TCP_F_RST);
	assert_true(conns[0]->closed);
	send_seg(1, true, 10, 50, 50, TCP_F_ACK);
	assert_int_equal(rs_stats(table)->late_segments, 1);
	send_syn(1, true, 90000);
	send_seg(1, true, 90000, 0, 70, TCP_F_ACK);
	rs_finish(table);
	assert_int_equal(nconns, 2);
	assert_stream(&conns[0]->dir[RS_TO_SERVER], 50);
	assert_stream(&conns[1]->dir[RS_TO_SERVER], 70);
	assert_true(conns[1]->closed);
}

/* Without the SYN the stream begins at its first segment; the SYN-ACK
 * alone gives the client's start. */
static void test_midstream(void **state)
{
	send_seg(1, false, 3000, 500, 100, TCP_F_ACK);
	{
		struct tcp_seg s =
			seg(2, false, 7000, 0, 0, 0, TCP_F_SYN | TCP_F_ACK);

		s.seq = 7000;
		s.ack = 4001; /* the client's ISN was 4000 */
		rs_segment(table, &s, false);
	}
	send_seg(2, true, 4000, 0, 30, TCP_F_ACK);
	rs_finish(table);
	assert_int_equal(nconns, 2);
	assert_false(conns[0]->dir[RS_TO_CLIENT].at_start);
	assert_int_equal(conns[0]->dir[RS_TO_CLIENT].nbytes, 100);
	assert_true(conns[1]->dir[RS_TO_SERVER].at_start);
	assert_stream(&conns[1]->dir[RS_TO_SERVER], 30);
	assert_int_equal(rs_stats(table)->midstream, 1);
}

/* Too many segments waiting behind a hole: the hole is taken as lost. */
static void test_waiting_bound(void **state)
{
	send_syn(1, true, 0);
	for (uint32_t i = 0; i < 16500; i++)
		send_seg(1, true, 0, 10 + i, 1, TCP_F_ACK);
	assert_int_equal(conns[0]->dir[RS_TO_SERVER].nholes, 1);
	assert_int_equal(conns[0]->dir[RS_TO_SERVER].holes[0].n, 10);
	assert_int_equal(rs_stats(table)->given_up, 1);
	rs_finish(table);
	assert_int_equal(conns[0]->dir[RS_TO_SERVER].off, 10 + 16500);
}

/* Segments in a scrambled order, many waiting at once, some of them
 * twice: every byte once, in order. */
static void test_any_order(void **state)
{
	const unsigned n = 5000, len = 200;
	unsigned i, k;

	send_syn(1, true, 3);
	/* i -> i * 2003 mod n is a permutation: 2003 is prime to 5000. */
	for (i = 0; i < n; i++) {
		k = (i * 2003u) % n;
		if (!k)
			continue;
		send_seg(1, true, 3, k * len, len, TCP_F_ACK);
		if (i % 7 == 0)
			send_seg(1, true, 3, k * len, len, TCP_F_ACK);
	}
	assert_int_equal(conns[0]->dir[RS_TO_SERVER].nbytes, 0);
	send_seg(1, true, 3, 0, len, TCP_F_ACK);
	assert_stream(&conns[0]->dir[RS_TO_SERVER], n * len);
	assert_int_equal(conns[0]->dir[RS_TO_SERVER].nholes, 0);
	assert_int_equal(rs_stats(table)->given_up, 0);
}

/* Two segments at one offset with different bytes (a hostile capture):
 * the one that came first is delivered, as a sorted list would have it,
 * and the second counts as repeated. */
static void test_same_offset_first_wins(void **state)
{
	static const uint8_t other[100];
	struct tcp_seg s;

	send_syn(1, true, 0);
	for (int i = 0; i < 9; i++) /* others around them in the heap */
		send_seg(1, true, 0, 1000 + (uint32_t)i * 100, 100, 0);
	send_seg(1, true, 0, 100, 100, 0);
	s = seg(1, true, 0, 100, 100, 100, 0);
	s.data = other;
	rs_segment(table, &s, true);
	send_seg(1, true, 0, 200, 800, 0);
	send_seg(1, true, 0, 0, 100, 0);
	assert_stream(&conns[0]->dir[RS_TO_SERVER], 1900);
	assert_int_equal(rs_stats(table)->dup_bytes, 100);
}

/* A gap before every segment, never filled: past the bound each segment
 * gives up on one gap, and what is held stays at the bound. */
static void test_gap_before_every_segment(void **state)
{
	const uint32_t n = 40000;
	const struct dir_rec *r;

	send_syn(1, true, 0);
	for (uint32_t i = 0; i < n; i++)
		send_seg(1, true, 0, 2 * i + 1, 1, 0);
	r = &conns[0]->dir[RS_TO_SERVER];
	assert_int_equal(rs_stats(table)->given_up, n - 16384);
	assert_int_equal(r->nbytes, n - 16384);
	assert_int_equal(r->nholes, n - 16384);
	rs_finish(table);
	assert_int_equal(r->nbytes, n);
	assert_int_equal(r->hole_bytes, n);
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(r->bytes[i], pattern[2 * i + 1]);
}

/* Past the bound on connections, the least recent one without payload
 * makes room, then ended ones go first, uncounted; one with payload
 * outlives them. */
static void test_connection_bound(void **state)
{
	const struct rs_stats *st = rs_stats(table);

	rs_set_max_conns(table, 100);
	send_syn(0, true, 0);
	send_seg(0, true, 0, 0, 10, 0);
	for (unsigned id = 1; id <= 150; id++)
		send_syn(id, true, id);
	assert_int_equal(nconns, 151);
	assert_int_equal(st->evicted, 51);
	for (unsigned i = 1; i <= 51; i++)
		assert_true(conns[i]->closed);
	for (unsigned i = 52; i <= 150; i++)
		assert_false(conns[i]->closed);
	assert_false(conns[0]->closed);
	/* An ended one is remembered, and is the first to go. */
	send_seg(100, true, 100, 0, 0, TCP_F_RST);
	assert_true(conns[100]->closed);
	send_syn(200, true, 9);
	assert_int_equal(st->evicted, 51);
	assert_int_equal(nconns, 152);
	/* A segment of one that was ended early starts a new connection,
	 * joined in the middle. */
	send_seg(1, true, 1, 0, 10, 0);
	assert_int_equal(nconns, 153);
	assert_int_equal(st->evicted, 52);
	assert_false(conns[152]->dir[RS_TO_SERVER].at_start);
	send_seg(0, true, 0, 10, 10, 0);
	rs_finish(table);
	assert_stream(&conns[0]->dir[RS_TO_SERVER], 20);
}

/* Idle connections are ended; ended ones are remembered for their late
 * segments for a while, then forgotten. */
static void test_idle_and_linger(void **state)
{
	const struct rs_stats *st = rs_stats(table);

	send_syn(1, true, 0);
	send_seg(1, true, 0, 0, 10, 0); /* payload: idle after an hour */
	send_syn(2, true, 0);		/* none: after 3 minutes */
	send_syn(3, true, 0);
	send_seg(3, true, 0, 0, 10, TCP_F_RST);
	clock_usec = 59000000;
	send_seg(3, true, 0, 10, 10, 0); /* late: remembered */
	assert_int_equal(st->late_segments, 1);
	assert_int_equal(nconns, 3);
	clock_usec = 61000000;
	send_syn(4, true, 0); /* time moves on: 3 is forgotten */
	send_seg(3, true, 0, 20, 10, 0);
	assert_int_equal(st->late_segments, 1);
	assert_int_equal(nconns, 5);
	assert_false(conns[4]->dir[RS_TO_SERVER].at_start);
	assert_false(conns[1]->closed);
	clock_usec = 181000001;
	send_syn(5, true, 0);
	assert_true(conns[1]->closed);
	assert_false(conns[0]->closed);
	assert_int_equal(st->idle_ended, 0);
	clock_usec = 3600000001;
	send_syn(6, true, 0);
	assert_true(conns[0]->closed);
	assert_stream(&conns[0]->dir[RS_TO_SERVER], 10);
	assert_int_equal(st->idle_ended, 1);
	/* Its next segment is a new connection. */
	send_seg(1, true, 0, 10, 10, 0);
	assert_int_equal(nconns, 8);
	/* Time going back (a merged capture) ends nothing. */
	clock_usec = 1;
	send_seg(1, true, 0, 20, 10, 0);
	rs_finish(table);
	assert_int_equal(conns[7]->dir[RS_TO_SERVER].nbytes, 20);
}

/* Many connections at once, IPv6 among them, interleaved. */
static void test_many_connections(void **state)
{
	for (unsigned id = 0; id < 1500; id++)
		send_syn(id, true, id * 1000);
	for (uint32_t off = 0; off < 300; off += 100)
		for (unsigned id = 0; id < 1500; id++)
			send_seg(id, true, id * 1000, off, 100, TCP_F_ACK);
	{
		struct tcp_seg s = seg(0, true, 0, 0, 40, 40, TCP_F_SYN);

		s.family = 6;
		s.src[15] = 1;
		s.dst[15] = 2;
		s.seq = 0;
		rs_segment(table, &s, true);
	}
	rs_finish(table);
	assert_int_equal(nconns, 1501);
	for (unsigned i = 0; i < 1500; i++)
		assert_stream(&conns[i]->dir[RS_TO_SERVER], 300);
	assert_int_equal(conns[1500]->key.family, 6);
	assert_stream(&conns[1500]->dir[RS_TO_SERVER], 40);
}

/* --- decoding ----------------------------------------------------------------
 */

static uint8_t rec[2048];

static size_t put_ipv4_tcp(uint8_t *p, uint16_t total, uint16_t frag)
{
	memset(p, 0, 40);
	p[0] = 0x45;
	p[2] = (uint8_t)(total >> 8);
	p[3] = (uint8_t)total;
	p[6] = (uint8_t)(frag >> 8);
	p[7] = (uint8_t)frag;
	p[9] = 6;
	memcpy(p + 12, "\x0a\x00\x00\x01\x0a\x00\x00\x02", 8);
	p += 20;
	p[0] = 0x9c; /* port 40000 */
	p[1] = 0x40;
	p[2] = 0x01; /* port 445 */
	p[3] = 0xbd;
	p[4] = 0x12; /* seq 0x12345678 */
	p[5] = 0x34;
	p[6] = 0x56;
	p[7] = 0x78;
	p[12] = 5 << 4;
	p[13] = 0x18; /* PSH, ACK */
	return 40;
}

static void test_decode_ethernet_vlan(void **state)
{
	struct capture_stats st = { 0 };
	struct tcp_seg s;
	size_t n;

	memset(rec, 0, sizeof(rec));
	rec[12] = 0x81; /* 802.1Q */
	rec[13] = 0x00;
	rec[16] = 0x08;
	rec[17] = 0x00;
	n = 18 + put_ipv4_tcp(rec + 18, 40 + 100, 0);
	memset(rec + n, 0xab, 100);
	/* 20 bytes of Ethernet padding after the packet, not payload. */
	assert_true(capture_decode(DLT_EN10MB, rec, (uint32_t)n + 120,
				   (uint32_t)n + 120, &s, &st));
	assert_int_equal(s.family, 4);
	assert_int_equal(s.sport, 40000);
	assert_int_equal(s.dport, 445);
	assert_int_equal(s.seq, 0x12345678);
	assert_int_equal(s.flags, TCP_F_ACK);
	assert_int_equal(s.len, 100);
	assert_int_equal(s.caplen, 100);
	assert_ptr_equal(s.data, rec + n);
	/* Snapped at 30 payload bytes. */
	assert_true(capture_decode(DLT_EN10MB, rec, (uint32_t)n + 30,
				   (uint32_t)n + 100, &s, &st));
	assert_int_equal(s.len, 100);
	assert_int_equal(s.caplen, 30);
	assert_int_equal(st.snapped, 1);
	/* Snapped inside the TCP header. */
	assert_false(capture_decode(DLT_EN10MB, rec, 18 + 30, (uint32_t)n + 100,
				    &s, &st));
	assert_int_equal(st.short_hdr, 1);
}

static void test_decode_sll2_and_offload(void **state)
{
	struct capture_stats st = { 0 };
	struct tcp_seg s;
	size_t n;

	memset(rec, 0, sizeof(rec));
	rec[0] = 0x08; /* SLL2: protocol first */
	n = 20 + put_ipv4_tcp(rec + 20, 0, 0x4000 /* DF */);
	/* Total length 0: a segment offloading made larger than IP can say;
	 * its length is the record's. */
	assert_true(capture_decode(DLT_LINUX_SLL2, rec, (uint32_t)n + 10,
				   (uint32_t)n + 100000, &s, &st));
	assert_int_equal(s.len, 100000);
	assert_int_equal(s.caplen, 10);
}

static void test_decode_fragment_and_other(void **state)
{
	struct capture_stats st = { 0 };
	struct tcp_seg s;
	size_t n;

	memset(rec, 0, sizeof(rec));
	rec[14] = 0x08;
	n = 16 + put_ipv4_tcp(rec + 16, 40 + 8, 0x2000 /* MF */);
	assert_false(capture_decode(DLT_LINUX_SLL, rec, (uint32_t)n + 8,
				    (uint32_t)n + 8, &s, &st));
	assert_int_equal(st.fragments, 1);
	rec[12] = 0x08;
	rec[13] = 0x06; /* ARP */
	assert_false(capture_decode(DLT_EN10MB, rec, 60, 60, &s, &st));
	assert_int_equal(st.other, 1);
}

static void test_decode_raw_ipv6_with_extension(void **state)
{
	struct capture_stats st = { 0 };
	struct tcp_seg s;
	uint8_t *p = rec;

	memset(rec, 0, sizeof(rec));
	p[0] = 0x60;
	p[4] = 0;
	p[5] = 8 + 20 + 5; /* payload length */
	p[6] = 0;	   /* hop-by-hop first */
	p[23] = 1;
	p[39] = 2;
	p[40] = 6; /* then TCP */
	p[41] = 0; /* 8 bytes */
	p[48 + 12] = 5 << 4;
	p[48 + 13] = 0x11; /* FIN, ACK */
	assert_true(capture_decode(DLT_RAW, rec, 48 + 25, 48 + 25, &s, &st));
	assert_int_equal(s.family, 6);
	assert_int_equal(s.src[15], 1);
	assert_int_equal(s.dst[15], 2);
	assert_int_equal(s.len, 5);
	assert_int_equal(s.flags, TCP_F_FIN | TCP_F_ACK);
}

static void test_decode_bsd_loopback(void **state)
{
	struct capture_stats st = { 0 };
	struct tcp_seg s;
	size_t n;

	memset(rec, 0, sizeof(rec));
	rec[0] = 2; /* AF_INET, little-endian host */
	n = 4 + put_ipv4_tcp(rec + 4, 40, 0);
	assert_true(capture_decode(DLT_NULL, rec, (uint32_t)n, (uint32_t)n, &s,
				   &st));
	assert_int_equal(s.len, 0);
	rec[0] = 0;
	rec[3] = 2; /* network order, DLT_LOOP */
	assert_true(capture_decode(DLT_LOOP, rec, (uint32_t)n, (uint32_t)n, &s,
				   &st));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_out_of_order_and_retransmits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wraparound, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_lost_segment_at_fin, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_lost_segment_by_ack, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_segment_after_its_ack,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_snaplen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rst_and_reuse, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_midstream, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_waiting_bound, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_many_connections, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_any_order, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_same_offset_first_wins,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_gap_before_every_segment,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_connection_bound, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_idle_and_linger, setup,
						teardown),
		cmocka_unit_test(test_decode_ethernet_vlan),
		cmocka_unit_test(test_decode_sll2_and_offload),
		cmocka_unit_test(test_decode_fragment_and_other),
		cmocka_unit_test(test_decode_raw_ipv6_with_extension),
		cmocka_unit_test(test_decode_bsd_loopback),
	};

	fill_pattern();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
