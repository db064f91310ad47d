// SPDX-License-Identifier: GPL-2.0-or-later
/* test_trace.c - a capture carried across a live handover: for every cut
 * between two events of a connection (a read of either direction, copied
 * or spliced), a capture saved there and restored (trace_conn_save(),
 * trace_conn_restore(), with the framers saved and restored alongside)
 * writes the same records, byte for byte, as one never moved: the same
 * sequence numbers, the record in progress completed from the bytes the
 * old process held, the FINs or the reset where they were; and a restore
 * refuses a saved state no capture can have.
 *
 * The capture file is replaced (the linker's --wrap) by a list in memory.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "smb/framer.h"
#include "observe/trace.h"
#include "smb/wire.h"

/* --- the capture file, in memory ------------------------------------------ */

#define MAX_RECS 4096
#define REC_MAX	 (40 + 20 + TRACE_SNAP)

struct rec {
	uint32_t caplen, len;
	uint8_t data[REC_MAX];
};

static struct rec *recs; /* where records go now */
static unsigned nrecs;

bool __wrap_tracefile_enabled(void);
void __wrap_tracefile_put(const struct timespec *ts, const void *data,
			  uint32_t caplen, uint32_t len);

bool __wrap_tracefile_enabled(void)
{
	return true;
}

void __wrap_tracefile_put(const struct timespec *ts, const void *data,
			  uint32_t caplen, uint32_t len)
{
	(void)ts; /* two runs side by side read the clock apart */
	assert_true(nrecs < MAX_RECS);
	assert_true(caplen <= REC_MAX);
	recs[nrecs].caplen = caplen;
	recs[nrecs].len = len;
	memcpy(recs[nrecs].data, data, caplen);
	nrecs++;
}

/* --- the streams ------------------------------------------------------------
 */

static uint8_t vec[2][1 << 20];
static size_t vlen[2];
static int cur;

static void put8(uint8_t v)
{
	vec[cur][vlen[cur]++] = v;
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

static void putn(uint8_t v, size_t n)
{
	memset(vec[cur] + vlen[cur], v, n);
	vlen[cur] += n;
}

static void prefix(uint32_t len)
{
	put8(0);
	put8((uint8_t)(len >> 16));
	put8((uint8_t)(len >> 8));
	put8((uint8_t)len);
}

static void smb2_hdr(uint16_t cmd, uint32_t flags, uint32_t next, uint32_t id)
{
	put32(SMB2_MAGIC);
	put16(64);
	put16(1);
	put32(0);
	put16(cmd);
	put16(1);
	put32(flags);
	put32(next);
	put32(id);
	putn(0, 4);
	putn(0, 8);
	putn(0x99, 8);
	putn(0, 16);
}

static void simple_frame(uint16_t cmd, uint32_t flags, uint32_t id, size_t body)
{
	prefix(64 + body);
	smb2_hdr(cmd, flags, 0, id);
	for (size_t i = 0; i < body; i++)
		put8((uint8_t)(i * 7 + id));
}

static void read_rsp_frame(uint32_t id, uint32_t len)
{
	prefix(80 + len);
	smb2_hdr(SMB2_READ, SMB2_FLAG_RESPONSE, 0, id);
	put16(17);
	put8(80);
	put8(0);
	put32(len);
	put32(0);
	put32(0);
	for (uint32_t i = 0; i < len; i++)
		put8((uint8_t)(i ^ id));
}

/* A compound of two responses, the second past TRACE_SNAP. */
static void compound_frame(uint32_t id)
{
	prefix(72 + 64 + 600);
	smb2_hdr(SMB2_CLOSE, SMB2_FLAG_RESPONSE, 72, id);
	putn(0x31, 8);
	smb2_hdr(SMB2_QUERY_INFO, SMB2_FLAG_RESPONSE, 0, id + 1);
	putn(0x32, 600);
}

/* A client and a server talking: small requests, a SESSION_SETUP whose
 * blob stays out, large READs (spliced, longer than an IP packet), a
 * compound; with @garbage, the server's stream stops being SMB. */
static void build(bool garbage)
{
	vlen[0] = vlen[1] = 0;
	for (uint32_t id = 1; id <= 3; id++) {
		cur = DIR_TO_SERVER;
		simple_frame(id == 2 ? SMB2_SESSION_SETUP : SMB2_CREATE, 0, id,
			     100 + 30 * id);
		simple_frame(SMB2_READ, 0, 10 + id, 49);
		cur = DIR_TO_CLIENT;
		simple_frame(id == 2 ? SMB2_SESSION_SETUP : SMB2_CREATE,
			     SMB2_FLAG_RESPONSE, id, 200);
		read_rsp_frame(10 + id, id == 2 ? 200 : 70000 * id);
		compound_frame(20 + id);
	}
	if (garbage) {
		cur = DIR_TO_CLIENT;
		putn(0x77, 300);
	}
}

/* --- running a connection ---------------------------------------------------
 */

static struct smb_thresholds th = { { 65536, 65536, 65536 } };

/* One side of the proxy: its framers and its capture. */
struct side {
	struct smb_framer fr[DIR_COUNT];
	struct smb_dir_stats st[DIR_COUNT];
	struct trace_conn *t;
	enum dir_index cur;
};

static void observe(void *ctx, const struct smb_msg *m)
{
	struct side *s = ctx;

	trace_message(s->t, s->cur, m);
}

static void side_start(struct side *s)
{
	struct sockaddr_storage cli = { 0 }, loc = { 0 };
	struct sockaddr_in *c4 = (struct sockaddr_in *)&cli,
			   *l4 = (struct sockaddr_in *)&loc;

	memset(s, 0, sizeof(*s));
	c4->sin_family = l4->sin_family = AF_INET;
	c4->sin_port = htons(50000);
	l4->sin_port = htons(445);
	c4->sin_addr.s_addr = htonl(0x7f000001);
	l4->sin_addr.s_addr = htonl(0x7f000002);
	for (int d = 0; d < DIR_COUNT; d++) {
		smb_framer_init(&s->fr[d], &th, &s->st[d]);
		smb_framer_observe(&s->fr[d], observe, s);
	}
	s->t = trace_conn_new(&cli, &loc, "test");
	assert_non_null(s->t);
	trace_conn_start(s->t);
}

/* The new process: framers and capture rebuilt from what @s saved. */
static void side_move(struct side *s)
{
	static struct trace_conn_saved ts, again;
	struct smb_framer_saved fs[DIR_COUNT];
	struct trace_conn *nt;

	trace_conn_save(s->t, &ts);
	for (int d = 0; d < DIR_COUNT; d++)
		smb_framer_save(&s->fr[d], &fs[d]);
	/* The old process goes without writing a word more: its capture is
	 * freed, and nothing of it can be used after (the sanitizers see). */
	free(s->t);
	for (int d = 0; d < DIR_COUNT; d++) {
		smb_framer_init(&s->fr[d], &th, &s->st[d]);
		smb_framer_observe(&s->fr[d], observe, s);
		assert_int_equal(smb_framer_restore(&s->fr[d], &fs[d]), 0);
	}
	assert_int_equal(trace_conn_restore(&nt, &ts), 0);
	assert_non_null(nt);
	trace_conn_save(nt, &again);
	assert_memory_equal(&ts, &again, sizeof(ts));
	s->t = nt;
}

/* One event: the next read of direction @d, up to @n bytes from @off. */
static size_t side_read(struct side *s, enum dir_index d, size_t off, size_t n)
{
	struct smb_framer *f = &s->fr[d];
	size_t span = smb_framer_splice_span(f);

	if (n > vlen[d] - off)
		n = vlen[d] - off;
	s->cur = d;
	if (span) {
		n = span < n ? span : n;
		trace_chunk(s->t, d, NULL, n);
		smb_framer_advance(f, n);
	} else {
		trace_chunk(s->t, d, vec[d] + off, n);
		smb_framer_feed(f, vec[d] + off, n);
	}
	trace_chunk_done(s->t, d, smb_framer_opaque(f));
	return n;
}

/* The whole conversation in reads of pseudo-random sizes, the same for
 * a given @seed, each direction to @upto[d]; moved after event @cut (or
 * never, for a negative one). Return: events run. */
static int converse(struct rec *into, int cut, unsigned seed,
		    const size_t *upto, bool clean)
{
	static struct side s;
	size_t off[DIR_COUNT] = { 0 };
	int ev = 0;

	recs = into;
	nrecs = 0;
	srand(seed);
	side_start(&s);
	while (off[0] < upto[0] || off[1] < upto[1]) {
		enum dir_index d = off[0] >= upto[0]   ? DIR_TO_CLIENT
				   : off[1] >= upto[1] ? DIR_TO_SERVER
				   : rand() % 2	       ? DIR_TO_CLIENT
						       : DIR_TO_SERVER;
		size_t n = 1 + (size_t)rand() % (seed % 2     ? 64
						 : rand() % 3 ? 300
							      : 40000);

		if (n > upto[d] - off[d])
			n = upto[d] - off[d];
		off[d] += side_read(&s, d, off[d], n);
		if (ev++ == cut)
			side_move(&s);
	}
	trace_conn_end(s.t, clean);
	return ev;
}

static struct rec run_a[MAX_RECS], run_b[MAX_RECS];

static void compare_runs(bool garbage, bool cut_short, unsigned seed)
{
	size_t upto[DIR_COUNT];
	unsigned na;
	int events;

	build(garbage);
	for (int d = 0; d < DIR_COUNT; d++)
		upto[d] = vlen[d] - (cut_short ? 1000 : 0);
	events = converse(run_a, -1, seed, upto, !cut_short);
	na = nrecs;
	assert_true(na > 10);
	if (getenv("TEST_TRACE_VERBOSE"))
		print_message("%d events, %u records\n", events, na);
	/* Every cut in the first 400 events (the first frames of both ways,
	 * read a few bytes at a time), some 400 spread over the rest. */
	for (int cut = 0; cut < events;
	     cut += cut < 400 ? 1 : 1 + events / 400) {
		converse(run_b, cut, seed, upto, !cut_short);
		assert_int_equal(nrecs, na);
		for (unsigned i = 0; i < na; i++) {
			assert_int_equal(run_b[i].len, run_a[i].len);
			assert_int_equal(run_b[i].caplen, run_a[i].caplen);
			assert_memory_equal(run_b[i].data, run_a[i].data,
					    run_a[i].caplen);
		}
	}
}

static void test_handover_writes_the_same_records(void **state)
{
	(void)state;
	for (unsigned seed = 1; seed <= 4; seed++)
		compare_runs(false, false, seed);
}

/* Cut off mid-frame at the end (a last segment for what came of it, then
 * a reset), and a server that stops being SMB (its raw bytes). */
static void test_handover_cut_short_and_raw(void **state)
{
	(void)state;
	compare_runs(false, true, 5);
	compare_runs(true, false, 6);
	compare_runs(true, true, 7);
}

/* --- what a restore refuses -------------------------------------------------
 */

static void refused(const struct trace_conn_saved *s)
{
	struct trace_conn *t = (struct trace_conn *)1;

	assert_int_equal(trace_conn_restore(&t, s), -1);
	assert_null(t);
}

static void test_restore_refuses_bad_states(void **state)
{
	static struct trace_conn_saved ok, s;
	static struct side side;
	struct trace_conn *t;

	(void)state;
	recs = run_a;
	nrecs = 0;
	build(false);
	side_start(&side);
	side_read(&side, DIR_TO_SERVER, 0, 90); /* a record in progress */
	trace_conn_save(side.t, &ok);
	assert_int_equal(ok.dir[DIR_TO_SERVER].f_known, 1);
	assert_int_equal(ok.dir[DIR_TO_SERVER].f_have, 90);
	assert_int_equal(trace_conn_restore(&t, &ok), 0);
	trace_conn_end(t, true);
	trace_conn_end(side.t, true);

	s = ok, s.v6 = 2;
	refused(&s);
	s = ok, s.addr[0][4] = 1; /* IPv4 is 4 bytes */
	refused(&s);
	s = ok, memset(s.what, 'x', sizeof(s.what));
	refused(&s);
	s = ok, s.dir[0].f_have = TRACE_SNAP + 1;
	refused(&s);
	s = ok, s.dir[0].f_cut = TRACE_SNAP + 1;
	refused(&s);
	s = ok, s.dir[0].buf[100] = 1; /* past f_have */
	refused(&s);
	s = ok, s.dir[0].f_known = 2;
	refused(&s);
	s = ok, s.dir[0].raw = 1; /* raw, yet a frame reported */
	refused(&s);
	s = ok, s.dir[1].raw_done = 1; /* done, not raw */
	refused(&s);
	s = ok, s.dir[0].f_cut = s.dir[0].f_len + 1;
	refused(&s);
	s = ok, s.dir[0].f_sent = s.dir[0].f_len + 1;
	refused(&s);
	s = ok, s.dir[0].f_ts_nsec = 1000000000;
	refused(&s);
	s = ok, s.dir[0].f_ts_sec = -1;
	refused(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_handover_writes_the_same_records),
		cmocka_unit_test(test_handover_cut_short_and_raw),
		cmocka_unit_test(test_restore_refuses_bad_states),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
