// SPDX-License-Identifier: GPL-2.0-or-later
/* test_walk.c - the advisor's walk of SMB streams: tally, holes, resync
 *
 * Theory of operation: SMB streams are built here field by field (a
 * client's and a server's) and given to the walk exactly as the
 * reassembler would: begin(), then data() and hole() in order. Each test
 * checks the tally the walk ends with: what the streams carried, counted
 * once each however the bytes were split; the same counts when holes fall
 * inside payloads; one message fewer, and the framing found again, when a
 * hole takes a header; READ pipeline depth from MessageIds. The frame-start
 * test of the resync search is checked on its own.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "resync.h"
#include "walk.h"

/* --- building streams --------------------------------------------------- */

struct vec {
	uint8_t *b;
	size_t len, cap;
};

static struct vec cli, srv, *cur;

static void put8(uint8_t v)
{
	if (cur->len == cur->cap) {
		cur->cap = cur->cap ? cur->cap * 2 : 4096;
		cur->b = realloc(cur->b, cur->cap);
		assert_non_null(cur->b);
	}
	cur->b[cur->len++] = v;
}

static void put16(uint16_t v)
{
	put8(v & 0xff);
	put8(v >> 8);
}

static void put32(uint32_t v)
{
	put16(v & 0xffff);
	put16(v >> 16);
}

static void put64(uint64_t v)
{
	put32((uint32_t)v);
	put32((uint32_t)(v >> 32));
}

static void putn(uint8_t v, size_t n)
{
	while (n--)
		put8(v);
}

static void prefix(uint32_t len)
{
	put8(0);
	put8((uint8_t)(len >> 16));
	put8((uint8_t)(len >> 8));
	put8((uint8_t)len);
}

static void hdr(uint16_t cmd, uint32_t flags, uint32_t status, uint64_t mid)
{
	put32(SMB2_MAGIC);
	put16(64);
	put16(1);
	put32(status);
	put16(cmd);
	put16(1);
	put32(flags);
	put32(0);
	put64(mid);
	put64(flags & SMB2_FLAG_ASYNC ? 0x99 : 0);
	put64(0x1234);
	putn(0, 16);
}

static void simple(uint16_t cmd, bool resp, uint64_t mid, size_t body)
{
	prefix((uint32_t)(64 + body));
	hdr(cmd, resp ? SMB2_FLAG_RESPONSE : 0, 0, mid);
	putn(0x11, body);
}

static void read_req(uint64_t mid)
{
	simple(SMB2_READ, false, mid, 49);
}

static void read_rsp(uint64_t mid, uint32_t len)
{
	prefix(80 + len);
	hdr(SMB2_READ, SMB2_FLAG_RESPONSE, 0, mid);
	put16(17);
	put8(80);
	put8(0);
	put32(len);
	put32(0);
	put32(0);
	putn(0xda, len);
}

static void interim(uint64_t mid)
{
	prefix(64 + 9);
	hdr(SMB2_READ, SMB2_FLAG_RESPONSE | SMB2_FLAG_ASYNC,
	    SMB2_STATUS_PENDING, mid);
	put16(9);
	putn(0, 7);
}

static void write_req(uint64_t mid, uint32_t len)
{
	prefix(112 + len);
	hdr(SMB2_WRITE, 0, 0, mid);
	put16(49);
	put16(112);
	put32(len);
	put64(0);
	putn(0, 32);
	putn(0x77, len);
}

static void negotiate_rsp(uint16_t dialect, uint32_t max_read)
{
	prefix(64 + 65);
	hdr(SMB2_NEGOTIATE, SMB2_FLAG_RESPONSE, 0, 0);
	put16(65);
	put16(0);
	put16(dialect);
	putn(0, 0x18 - 6);
	put32(0);	 /* capabilities */
	put32(max_read); /* MaxTransactSize */
	put32(max_read); /* MaxReadSize */
	put32(max_read); /* MaxWriteSize */
	putn(0, 65 - 0x28);
}

static void reset(void)
{
	free(cli.b);
	free(srv.b);
	memset(&cli, 0, sizeof(cli));
	memset(&srv, 0, sizeof(srv));
}

/* The usual session: three pipelined READs (the first answered after an
 * interim response), a WRITE, and their answers. */
static size_t rsp2_at, rsp3_at;

static void build_session(void)
{
	reset();
	cur = &cli;
	simple(SMB2_NEGOTIATE, false, 0, 36);
	read_req(1);
	read_req(2);
	read_req(3);
	write_req(4, 70000);
	cur = &srv;
	negotiate_rsp(0x0311, 8 << 20);
	interim(1);
	read_rsp(1, 65536);
	rsp2_at = srv.len;
	read_rsp(2, 4096);
	rsp3_at = srv.len;
	read_rsp(3, 1 << 20);
	simple(SMB2_WRITE, true, 4, 17);
}

/* --- driving the walk ------------------------------------------------------
 */

static struct walk w;

/* Deliver a stream in pieces of @chunk bytes (0: whole). */
static void deliver(void *conn, enum rs_dir d, const struct vec *v, size_t from,
		    size_t to, size_t chunk)
{
	while (from < to) {
		size_t k = chunk && chunk < to - from ? chunk : to - from;

		walk_ops.data(conn, d, v->b + from, k);
		from += k;
	}
}

/* One connection: the client's stream, then the server's, each whole or
 * in chunks, from their start. */
static void walk_session(size_t chunk)
{
	struct rs_key key = { 0 };
	void *conn;

	walk_init(&w);
	conn = walk_ops.open(&w, &key);
	walk_ops.begin(conn, RS_TO_SERVER, true);
	walk_ops.begin(conn, RS_TO_CLIENT, true);
	deliver(conn, RS_TO_SERVER, &cli, 0, cli.len, chunk);
	deliver(conn, RS_TO_CLIENT, &srv, 0, srv.len, chunk);
	walk_ops.close(conn);
}

static uint64_t reads(void)
{
	uint64_t bytes;

	return tally_total(&w.tally.read, &bytes);
}

/* --- tests
 * -------------------------------------------------------------------- */

static void test_session_counts(void **state)
{
	const struct tally *t = &w.tally;
	uint64_t bytes;

	build_session();
	walk_session(0);
	assert_int_equal(t->cmd[RS_TO_SERVER][SMB2_READ].count, 3);
	assert_int_equal(t->cmd[RS_TO_SERVER][SMB2_WRITE].count, 1);
	assert_int_equal(t->cmd[RS_TO_SERVER][SMB2_WRITE].bytes, 112 + 70000);
	assert_int_equal(t->cmd[RS_TO_CLIENT][SMB2_READ].count, 4);
	assert_int_equal(t->cmd[RS_TO_CLIENT][SMB2_NEGOTIATE].count, 1);
	assert_int_equal(tally_total(&t->read, &bytes), 3);
	assert_int_equal(bytes, 65536 + 4096 + (1 << 20));
	assert_int_equal(t->read.count[tally_size_bin(4096)], 1);
	assert_int_equal(t->read.count[tally_size_bin(65536)], 1);
	assert_int_equal(t->read.count[tally_size_bin(1 << 20)], 1);
	assert_int_equal(tally_total(&t->write, &bytes), 1);
	assert_int_equal(bytes, 70000);
	assert_int_equal(t->interim, 1);
	assert_int_equal(t->read_requests, 3);
	/* Three READs sent before any answer: depths 1, 2 and 3. */
	assert_int_equal(t->depth_max, 3);
	assert_int_equal(t->depth[0], 1);
	assert_int_equal(t->depth[1], 1);
	assert_int_equal(t->depth[2], 1);
	assert_int_equal(t->smb_conns, 1);
	assert_int_equal(t->dialects[4], 1); /* 3.1.1 */
	assert_int_equal(t->max_read, 8 << 20);
	assert_int_equal(w.ws.unparsed_bytes, 0);
	assert_int_equal(w.ws.opaque, 0);
}

/* However the bytes are split, the tally is the same. */
static void test_any_split(void **state)
{
	struct tally whole;

	build_session();
	walk_session(0);
	whole = w.tally;
	walk_session(1);
	assert_memory_equal(&whole, &w.tally, sizeof(whole));
	walk_session(4093);
	assert_memory_equal(&whole, &w.tally, sizeof(whole));
}

/* A synchronous client: each READ answered before the next: depth 1. */
static void test_depth_one(void **state)
{
	struct rs_key key = { 0 };
	void *conn;

	reset();
	walk_init(&w);
	conn = walk_ops.open(&w, &key);
	walk_ops.begin(conn, RS_TO_SERVER, true);
	walk_ops.begin(conn, RS_TO_CLIENT, true);
	for (uint64_t mid = 1; mid <= 5; mid++) {
		size_t c0 = cli.len, s0 = srv.len;

		cur = &cli;
		read_req(mid);
		cur = &srv;
		read_rsp(mid, 8192);
		deliver(conn, RS_TO_SERVER, &cli, c0, cli.len, 0);
		deliver(conn, RS_TO_CLIENT, &srv, s0, srv.len, 0);
	}
	walk_ops.close(conn);
	assert_int_equal(w.tally.depth_max, 1);
	assert_int_equal(w.tally.depth[0], 5);
	assert_int_equal(reads(), 5);
}

/* Holes inside payloads are passed over: the same counts, framing kept. */
static void test_hole_in_payload(void **state)
{
	struct rs_key key = { 0 };
	struct tally whole;
	size_t cut = rsp3_at + 4 + 80 + 1000;
	void *conn;

	build_session();
	walk_session(0);
	whole = w.tally;
	walk_init(&w);
	conn = walk_ops.open(&w, &key);
	walk_ops.begin(conn, RS_TO_SERVER, true);
	walk_ops.begin(conn, RS_TO_CLIENT, true);
	deliver(conn, RS_TO_SERVER, &cli, 0, cli.len, 0);
	deliver(conn, RS_TO_CLIENT, &srv, 0, cut, 0);
	walk_ops.hole(conn, RS_TO_CLIENT, 500000, RS_HOLE_LOST);
	deliver(conn, RS_TO_CLIENT, &srv, cut + 500000, srv.len, 1500);
	walk_ops.close(conn);
	assert_memory_equal(&whole, &w.tally, sizeof(whole));
	assert_int_equal(w.ws.skipped_bytes, 500000);
	assert_int_equal(w.ws.sync_lost, 0);
	assert_int_equal(w.ws.unparsed_bytes, 0);
}

/* A hole over a header loses the framing: that READ response is not
 * counted, the next one is, and what lay between is unparsed. */
static void test_hole_over_header(void **state)
{
	struct rs_key key = { 0 };
	size_t from = rsp2_at - 100, to = rsp2_at + 30;
	void *conn;

	build_session();
	walk_init(&w);
	conn = walk_ops.open(&w, &key);
	walk_ops.begin(conn, RS_TO_SERVER, true);
	walk_ops.begin(conn, RS_TO_CLIENT, true);
	deliver(conn, RS_TO_SERVER, &cli, 0, cli.len, 0);
	deliver(conn, RS_TO_CLIENT, &srv, 0, from, 0);
	walk_ops.hole(conn, RS_TO_CLIENT, to - from, RS_HOLE_SNAPLEN);
	deliver(conn, RS_TO_CLIENT, &srv, to, srv.len, 700);
	walk_ops.close(conn);
	assert_int_equal(w.ws.sync_lost, 1);
	assert_int_equal(w.ws.skipped_bytes, 100);
	assert_int_equal(w.ws.unparsed_bytes, rsp3_at - rsp2_at);
	assert_int_equal(reads(), 2);
	assert_int_equal(w.tally.read.count[tally_size_bin(4096)], 0);
	assert_int_equal(w.tally.cmd[RS_TO_CLIENT][SMB2_READ].count, 3);
}

/* A stream the capture joined in the middle of a payload: the search
 * finds the next frame, one byte at a time too. */
static void test_midstream(void **state)
{
	struct rs_key key = { 0 };
	size_t from = rsp2_at - 5000;
	void *conn;

	build_session();
	for (size_t chunk = 0; chunk <= 1; chunk++) {
		walk_init(&w);
		conn = walk_ops.open(&w, &key);
		walk_ops.begin(conn, RS_TO_CLIENT, false);
		deliver(conn, RS_TO_CLIENT, &srv, from, srv.len, chunk);
		walk_ops.close(conn);
		assert_int_equal(reads(), 2);
		assert_int_equal(w.ws.unparsed_bytes, 5000);
		assert_int_equal(w.ws.unframed, 0);
	}
}

/* A frame the framer cannot make sense of: it gives up, and the walk
 * finds the valid frame right behind it, in the same delivery. */
static void test_gives_up_then_finds(void **state)
{
	struct rs_key key = { 0 };
	void *conn;

	reset();
	cur = &srv;
	read_rsp(1, 5000);
	prefix(100);
	put32(0x58585858); /* not a protocol id */
	putn(0x77, 96);
	read_rsp(2, 6000);
	walk_init(&w);
	conn = walk_ops.open(&w, &key);
	walk_ops.begin(conn, RS_TO_CLIENT, true);
	deliver(conn, RS_TO_CLIENT, &srv, 0, srv.len, 0);
	walk_ops.close(conn);
	assert_int_equal(reads(), 2);
	assert_int_equal(w.ws.opaque, 1);
	assert_string_equal(w.ws.opaque_why, "unknown protocol id");
}

/* Bytes that never hold a frame. */
static void test_not_smb(void **state)
{
	struct rs_key key = { 0 };
	static const uint8_t text[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
	void *conn;

	walk_init(&w);
	conn = walk_ops.open(&w, &key);
	walk_ops.begin(conn, RS_TO_SERVER, true);
	walk_ops.data(conn, RS_TO_SERVER, text, sizeof(text) - 1);
	walk_ops.close(conn);
	assert_int_equal(w.tally.smb_conns, 0);
	assert_int_equal(w.ws.opaque, 1);
	walk_init(&w);
	conn = walk_ops.open(&w, &key);
	walk_ops.begin(conn, RS_TO_SERVER, false);
	walk_ops.data(conn, RS_TO_SERVER, text, sizeof(text) - 1);
	walk_ops.close(conn);
	assert_int_equal(w.ws.unframed, 1);
}

/* Losing the server's framing forgets the READs outstanding: their
 * answers may have passed unseen. */
static void test_depth_forgotten(void **state)
{
	struct rs_key key = { 0 };
	void *conn;

	reset();
	cur = &cli;
	read_req(1);
	read_req(2);
	walk_init(&w);
	conn = walk_ops.open(&w, &key);
	walk_ops.begin(conn, RS_TO_SERVER, true);
	walk_ops.begin(conn, RS_TO_CLIENT, true);
	deliver(conn, RS_TO_SERVER, &cli, 0, cli.len, 0);
	walk_ops.hole(conn, RS_TO_CLIENT, 10, RS_HOLE_LOST);
	cur = &cli;
	read_req(3);
	deliver(conn, RS_TO_SERVER, &cli, cli.len - 117, cli.len, 0);
	walk_ops.close(conn);
	assert_int_equal(w.tally.read_requests, 3);
	assert_int_equal(w.tally.depth_max, 2);
	assert_int_equal(w.tally.depth[0], 2);
}

/* The framer's skip span: the rest of a message past its header. */
static void test_skip_span(void **state)
{
	struct smb_thresholds th = { { SMB_THRESHOLD_OFF, SMB_THRESHOLD_OFF,
				       SMB_THRESHOLD_OFF } };
	struct smb_dir_stats st = { 0 };
	struct smb_framer f;

	reset();
	cur = &srv;
	read_rsp(1, 3000); /* below any splice: splice_span is 0 */
	smb_framer_init(&f, &th, &st);
	assert_int_equal(smb_framer_skip_span(&f), 0);
	smb_framer_feed(&f, srv.b, 4 + 71); /* one short of the fields */
	assert_int_equal(smb_framer_skip_span(&f), 0);
	smb_framer_feed(&f, srv.b + 4 + 71, 1);
	assert_int_equal(smb_framer_skip_span(&f), 80 + 3000 - 72);
	assert_int_equal(smb_framer_splice_span(&f), 0);
	smb_framer_advance(&f, 80 + 3000 - 72);
	assert_int_equal(smb_framer_skip_span(&f), 0);
	assert_false(smb_framer_mid_message(&f));
}

/* --- the frame-start test ------------------------------------------------- */

static void test_plausible(void **state)
{
	uint8_t b[72];

	reset();
	cur = &srv;
	simple(SMB2_ECHO, true, 5, 4);
	memcpy(b, srv.b, 4 + 64);
	assert_int_equal(frame_start_plausible(b, 68), FRAME_YES);
	for (size_t n = 0; n < 28; n++)
		assert_int_equal(frame_start_plausible(b, n), FRAME_MORE);
	b[0] = 1;
	assert_int_equal(frame_start_plausible(b, 68), FRAME_NO);
	b[0] = 0;
	b[5] = 'X'; /* not FE 'S' 'M' 'B' */
	assert_int_equal(frame_start_plausible(b, 6), FRAME_NO);
	b[5] = 'S';
	b[8] = 63; /* StructureSize */
	assert_int_equal(frame_start_plausible(b, 68), FRAME_NO);
	b[8] = 64;
	b[16] = 0x13; /* a command past OPLOCK_BREAK */
	assert_int_equal(frame_start_plausible(b, 68), FRAME_NO);
	b[16] = SMB2_ECHO;
	b[24] = 12; /* NextCommand misaligned */
	assert_int_equal(frame_start_plausible(b, 68), FRAME_NO);
	b[24] = 0;
	b[3] = 60; /* too short a frame for any SMB2 message */
	assert_int_equal(frame_start_plausible(b, 68), FRAME_NO);

	/* An encryption transform header: its size must match. */
	memset(b, 0, sizeof(b));
	b[3] = 52 + 200;
	memcpy(b + 4, "\xfdSMB", 4);
	b[4 + 36] = 200;
	b[4 + 42] = 1;
	assert_int_equal(frame_start_plausible(b, 48), FRAME_YES);
	assert_int_equal(frame_start_plausible(b, 47), FRAME_MORE);
	b[4 + 36] = 199;
	assert_int_equal(frame_start_plausible(b, 48), FRAME_NO);
}

/* The search keeps the bytes that may start a frame across deliveries. */
static void test_search_across_deliveries(void **state)
{
	struct resync r = { 0 };
	uint8_t junk[10] = { 0xaa, 0xbb, 0xcc, 0x00, 0x01 };

	reset();
	cur = &srv;
	simple(SMB2_ECHO, true, 5, 4);
	assert_int_equal(resync_find(&r, junk, 3), -1);
	assert_int_equal(r.n, 0);
	assert_int_equal(resync_find(&r, srv.b, 3), -1);
	assert_int_equal(r.n, 3);
	assert_int_equal(resync_find(&r, srv.b + 3, 10), -1);
	assert_int_equal(r.n, 13);
	assert_int_equal(resync_find(&r, srv.b + 13, 20), 0);
	resync_reset(&r);
	assert_int_equal(resync_find(&r, junk, 10), -1);
	assert_int_equal(r.n, 4); /* the trailing zeros might start one */
	assert_int_equal(resync_find(&r, srv.b, srv.len), 4);
}

static int cleanup(void **state)
{
	reset();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_session_counts),
		cmocka_unit_test(test_any_split),
		cmocka_unit_test(test_depth_one),
		cmocka_unit_test(test_hole_in_payload),
		cmocka_unit_test(test_hole_over_header),
		cmocka_unit_test(test_midstream),
		cmocka_unit_test(test_gives_up_then_finds),
		cmocka_unit_test(test_not_smb),
		cmocka_unit_test(test_depth_forgotten),
		cmocka_unit_test(test_skip_span),
		cmocka_unit_test(test_plausible),
		cmocka_unit_test(test_search_across_deliveries),
	};

	return cmocka_run_group_tests(tests, NULL, cleanup);
}
