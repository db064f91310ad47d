// SPDX-License-Identifier: GPL-2.0-or-later
/* test_timing.c - per-command and per-frame timing: a request is timed
 * from the write that handed its last byte on to its final response, never
 * from an interim one; frames are timed from parse to flush; the block is
 * lent only while something is in flight; the cap counts what it drops; frames
 * beyond the ring share a slot; responses the framer cannot read stop the
 * timing of requests; a live handover (timing_save(), timing_restore())
 * times what was in flight as if there had been none, and refuses a
 * saved state no connection can have */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "common/monotime.h"
#include "smb/srt.h"
#include "observe/timing.h"
#include "smb/wire.h"

static struct totals tot;
static struct timing_pool pool;

/* A one-message frame of @len bytes after its prefix at stream @off. */
static struct smb_msg msg(uint64_t off, uint32_t len, uint16_t cmd,
			  uint32_t flags, uint32_t status, uint64_t id)
{
	return (struct smb_msg){ .kind = SMB_MSG_SMB2,
				 .frame_off = off,
				 .frame_len = len,
				 .end = len,
				 .command = cmd,
				 .flags = flags,
				 .status = status,
				 .message_id = id };
}

static void sleep_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000 };

	nanosleep(&ts, NULL);
}

static void setup_all(void)
{
	memset(&tot, 0, sizeof(tot));
	timing_pool_trim(&pool);
	pool.used = false;
	timing_pool_trim(&pool);
}

static void test_request_timed_to_final_response(void **state)
{
	struct timing tm;
	struct smb_msg m;
	struct hist *h = &tot.request[SMB2_READ];

	setup_all();
	timing_init(&tm, &pool, &tot);
	m = msg(0, 100, SMB2_READ, 0, 0, 42);
	timing_message(&tm, DIR_TO_SERVER, &m);
	assert_non_null(tm.b);
	timing_wrote(&tm, DIR_TO_SERVER, 104,
		     mono_ns()); /* its last byte written */
	sleep_ms(20);
	m = msg(0, 72, SMB2_READ, SMB2_FLAG_RESPONSE | SMB2_FLAG_ASYNC,
		SMB2_STATUS_PENDING, 42);
	timing_message(&tm, DIR_TO_CLIENT, &m); /* interim: not the end */
	assert_int_equal(hist_count(h), 0);
	timing_wrote(&tm, DIR_TO_CLIENT, 76, mono_ns());
	/* The request is still out: its table stays, the frame clocks go. */
	assert_null(tm.b);
	assert_non_null(tm.srt);
	assert_int_equal(tm.srt->cap, 8);
	sleep_ms(20);
	m = msg(76, 1000, SMB2_READ, SMB2_FLAG_RESPONSE | SMB2_FLAG_ASYNC, 0,
		42);
	timing_message(&tm, DIR_TO_CLIENT, &m);
	assert_int_equal(hist_count(h), 1);
	assert_true(h->sum_ns >= 40000000 && h->sum_ns < 1000000000);
	timing_wrote(&tm, DIR_TO_CLIENT, 1080, mono_ns());
	assert_null(tm.b); /* nothing in flight: given back */
	assert_null(tm.srt);
	assert_int_equal(pool.nfree, 1);
	assert_int_equal(pool.ntables, 1);
	/* Two frames to the client, one to the server, each timed. */
	assert_int_equal(hist_count(&tot.dir[DIR_TO_CLIENT].forward), 2);
	assert_int_equal(hist_count(&tot.dir[DIR_TO_SERVER].forward), 1);
	timing_end(&tm);
}

static void test_not_yet_sent_is_not_timed(void **state)
{
	struct timing tm;
	struct smb_msg m;

	setup_all();
	timing_init(&tm, &pool, &tot);
	m = msg(0, 1 << 20, SMB2_WRITE, 0, 0, 7);
	timing_message(&tm, DIR_TO_SERVER, &m);
	timing_wrote(&tm, DIR_TO_SERVER, 65536,
		     mono_ns()); /* part of it only */
	m = msg(0, 9, SMB2_WRITE, SMB2_FLAG_RESPONSE, 0xc000007f, 7);
	timing_message(&tm, DIR_TO_CLIENT, &m); /* an early error */
	assert_int_equal(hist_count(&tot.request[SMB2_WRITE]), 0);
	timing_end(&tm);
	assert_null(tm.b);
}

static void test_cancel_and_unsolicited(void **state)
{
	struct timing tm;
	struct smb_msg m;

	setup_all();
	timing_init(&tm, &pool, &tot);
	m = msg(0, 64, SMB2_CANCEL, 0, 0, 3);
	timing_message(&tm, DIR_TO_SERVER, &m);
	timing_wrote(&tm, DIR_TO_SERVER, 68, mono_ns());
	assert_null(tm.b); /* a CANCEL is never answered: not waited for */
	m = msg(0, 88, SMB2_OPLOCK_BREAK, SMB2_FLAG_RESPONSE, 0,
		0xffffffffffffffffull);
	timing_message(&tm, DIR_TO_CLIENT, &m);
	timing_wrote(&tm, DIR_TO_CLIENT, 92, mono_ns());
	assert_int_equal(hist_count(&tot.request[SMB2_OPLOCK_BREAK]), 0);
	assert_null(tm.b);
	timing_end(&tm);
}

static void test_caps_count_what_they_drop(void **state)
{
	struct timing tm;
	struct smb_msg m;
	uint64_t off = 0;

	setup_all();
	timing_init(&tm, &pool, &tot);
	/* 2000 requests in 2000 frames in flight, as one read would bring
	 * them: every frame is timed, and 1024 requests. */
	for (uint64_t id = 0; id < 2000; id++) {
		m = msg(off, 64, SMB2_READ, 0, 0, id);
		timing_message(&tm, DIR_TO_SERVER, &m);
		off += 68;
	}
	assert_int_equal(tot.untimed_requests, 2000 - 1024);
	timing_wrote(&tm, DIR_TO_SERVER, off - 68,
		     mono_ns()); /* all but the last */
	assert_int_equal(hist_count(&tot.dir[DIR_TO_SERVER].forward), 1999);
	timing_wrote(&tm, DIR_TO_SERVER, off, mono_ns());
	assert_int_equal(hist_count(&tot.dir[DIR_TO_SERVER].forward), 2000);
	for (uint64_t id = 0; id < 2000; id++) {
		m = msg(id * 76, 72, SMB2_READ, SMB2_FLAG_RESPONSE, 0, id);
		timing_message(&tm, DIR_TO_CLIENT, &m);
	}
	assert_int_equal(hist_count(&tot.request[SMB2_READ]), 1024);
	timing_end(&tm);
	assert_null(tm.b);
	assert_null(tm.srt);
	/* The table grew to hold 1024: it is freed, not pooled. */
	assert_true(pool.ntables <= 1);
}

/* At the cap, a request that reuses a held MessageId replaces the old
 * one, as below the cap: its response is counted as its own command. */
static void test_reused_id_at_the_cap_is_its_own(void **state)
{
	struct timing tm;
	struct smb_msg m;
	uint64_t off = 0;

	setup_all();
	timing_init(&tm, &pool, &tot);
	for (uint64_t id = 0; id < 1024; id++, off += 68) {
		m = msg(off, 64, SMB2_CHANGE_NOTIFY, 0, 0, id);
		timing_message(&tm, DIR_TO_SERVER, &m);
	}
	m = msg(off, 64, SMB2_READ, 0, 0, 7);
	timing_message(&tm, DIR_TO_SERVER, &m);
	off += 68;
	assert_int_equal(tot.untimed_requests, 0);
	timing_wrote(&tm, DIR_TO_SERVER, off, mono_ns());
	m = msg(0, 72, SMB2_READ, SMB2_FLAG_RESPONSE, 0, 7);
	timing_message(&tm, DIR_TO_CLIENT, &m);
	assert_int_equal(hist_count(&tot.request[SMB2_READ]), 1);
	assert_int_equal(hist_count(&tot.request[SMB2_CHANGE_NOTIFY]), 0);
	/* back at the cap, a new MessageId is refused and counted */
	m = msg(off, 64, SMB2_READ, 0, 0, 5000);
	timing_message(&tm, DIR_TO_SERVER, &m);
	assert_int_equal(tot.untimed_requests, 0);
	m = msg(off + 68, 64, SMB2_READ, 0, 0, 5001);
	timing_message(&tm, DIR_TO_SERVER, &m);
	assert_int_equal(tot.untimed_requests, 1);
	timing_end(&tm);
}

/* Once the server compresses its responses, no request could be paired:
 * those waiting and those to come are counted as untimed, and the table
 * goes back, rather than filling to the cap for the connection's life.
 * Frames are still timed. */
static void test_compressed_responses_stop_request_timing(void **state)
{
	struct timing tm;
	struct smb_msg m;

	setup_all();
	timing_init(&tm, &pool, &tot);
	for (uint64_t id = 0; id < 3; id++) {
		m = msg(id * 68, 64, SMB2_READ, 0, 0, id);
		timing_message(&tm, DIR_TO_SERVER, &m);
	}
	timing_wrote(&tm, DIR_TO_SERVER, 3 * 68, mono_ns());
	assert_non_null(tm.srt);
	m = msg(0, 200, 0, 0, 0, 0);
	m.kind = SMB_MSG_COMPRESSED;
	timing_message(&tm, DIR_TO_CLIENT, &m);
	assert_null(tm.srt);
	assert_int_equal(tot.untimed_requests, 3);
	m = msg(3 * 68, 64, SMB2_READ, 0, 0, 3);
	timing_message(&tm, DIR_TO_SERVER, &m);
	assert_null(tm.srt);
	assert_int_equal(tot.untimed_requests, 4);
	timing_wrote(&tm, DIR_TO_SERVER, 4 * 68, mono_ns());
	assert_int_equal(hist_count(&tot.dir[DIR_TO_SERVER].forward), 4);
	timing_responses_hidden(&tm); /* again, as opaque: no double count */
	assert_int_equal(tot.untimed_requests, 4);
	timing_end(&tm);
}

static void spoil_dup_id(struct timing_saved *s) { s->req[1].id = 5; }
static void spoil_sent_flag(struct timing_saved *s) { s->req[1].sent = 2; }
static void spoil_sent_at_0(struct timing_saved *s) { s->req[0].sent_ns = 0; }
static void spoil_hidden(struct timing_saved *s) { s->hidden = 2; }
static void spoil_hidden_reqs(struct timing_saved *s) { s->hidden = 1; }
static void spoil_nreq(struct timing_saved *s)
{
	s->nreq = TIMING_MAX_REQUESTS + 1;
}
static void spoil_ring_len(struct timing_saved *s)
{
	s->fwd[DIR_TO_SERVER].len = TIMING_FWD_SLOTS + 1;
}
static void spoil_ring_order(struct timing_saved *s)
{
	s->fwd[DIR_TO_SERVER].end[1] = 99;
}
static void spoil_ring_n(struct timing_saved *s) { s->fwd[DIR_TO_SERVER].n[1] = 0; }
static void spoil_ring_stale(struct timing_saved *s)
{
	s->fwd[DIR_TO_CLIENT].end[3] = 1;
}
static void spoil_clock_idle(struct timing_saved *s)
{
	s->fwd[DIR_TO_SERVER] = (struct timing_saved_ring){ 0 };
	s->frame_t0[DIR_TO_CLIENT] = 5;
}

/* Two connections, one handed over: what each times must match. */
struct pair {
	struct totals tot;
	struct timing tm;
};

static void both_message(struct pair *p, enum dir_index d, struct smb_msg m)
{
	for (int i = 0; i < 2; i++)
		timing_message(&p[i].tm, d, &m);
}

static void both_wrote(struct pair *p, enum dir_index d, uint64_t written,
		       uint64_t at)
{
	for (int i = 0; i < 2; i++)
		timing_wrote(&p[i].tm, d, written, at);
}

/* The two parse the same message microseconds apart (a millisecond or
 * so under the sanitizers): their samples are the same but for that. A
 * sample placed mid-bucket stays in its bucket; @buckets says whether
 * all were. */
static void assert_same_hist(const struct hist *a, const struct hist *b,
			     bool buckets)
{
	assert_int_equal(hist_count(a), hist_count(b));
	if (buckets)
		assert_memory_equal(a->bucket, b->bucket, sizeof(a->bucket));
	assert_true(a->sum_ns - b->sum_ns + 50000000 <= 100000000);
}

/* Requests sent (at times far apart, so their samples fall in different
 * buckets) and not yet sent, frames in flight both ways, a compound
 * response half parsed: saved from A, restored into B, every response
 * after that gives B the samples an unbroken A gives. */
static void test_handover_times_as_before(void **state)
{
	static struct timing_saved s, again;
	static struct pair p[2];
	struct timing_pool pool_b = { 0 };
	struct timing moved;
	uint64_t now = mono_ns();
	struct smb_msg m;

	setup_all();
	memset(p, 0, sizeof(p));
	for (int i = 0; i < 2; i++)
		timing_init(&p[i].tm, &pool, &p[i].tot);
	/* 20 requests, so the table has grown past its first size. */
	for (uint64_t id = 1; id <= 20; id++)
		both_message(p, DIR_TO_SERVER,
			     msg(100 * (id - 1), 96, SMB2_READ, 0, 0, id));
	/* Sent at times mid-bucket: 3 s ago, 170 ms ago. */
	both_wrote(p, DIR_TO_SERVER, 1000, now - 3000000000ull); /* 1-10 */
	both_wrote(p, DIR_TO_SERVER, 1500, now - 170000000ull);	 /* 11-15 */
	/* A frame to the client in flight: a compound, first element in. */
	m = msg(0, 300, SMB2_READ, SMB2_FLAG_RESPONSE, 0, 1);
	m.end = 104;
	both_message(p, DIR_TO_CLIENT, m);
	both_wrote(p, DIR_TO_CLIENT, 50, now);
	assert_int_equal(p[0].tm.srt->count, 19);
	assert_true(p[0].tm.srt->cap > 8);
	assert_non_null(p[0].tm.b);

	timing_save(&p[1].tm, &s);
	assert_int_equal(s.nreq, 19);
	assert_int_equal(s.fwd[DIR_TO_CLIENT].len, 1);
	assert_true(s.fwd[DIR_TO_SERVER].len > 0); /* 1500 of 2000 */
	timing_init(&moved, &pool_b, &p[1].tot);
	assert_int_equal(timing_restore(&moved, &s), 0);
	timing_save(&moved, &again);
	assert_int_equal(again.nreq, s.nreq);
	assert_memory_equal(again.fwd, s.fwd, sizeof(s.fwd));
	assert_memory_equal(again.frame_t0, s.frame_t0, sizeof(s.frame_t0));
	timing_end(&p[1].tm);
	p[1].tm = moved;

	/* The compound's second element answers request 2 (sent long ago)
	 * with the frame's clock; the rest are sent, and all answered. */
	m = msg(0, 300, SMB2_READ, SMB2_FLAG_RESPONSE, 0, 2);
	m.start = 104;
	both_message(p, DIR_TO_CLIENT, m);
	both_wrote(p, DIR_TO_CLIENT, 304, mono_ns());
	both_wrote(p, DIR_TO_SERVER, 2000, mono_ns() - 35000000); /* 16-20 */
	for (uint64_t id = 3; id <= 20; id++) {
		both_message(p, DIR_TO_CLIENT,
			     msg(304 + 100 * (id - 3), 96, SMB2_READ,
				 SMB2_FLAG_RESPONSE, 0, id));
		both_wrote(p, DIR_TO_CLIENT, 304 + 100 * (id - 2), mono_ns());
	}
	assert_int_equal(hist_count(&p[0].tot.request[SMB2_READ]), 20);
	assert_same_hist(&p[0].tot.request[SMB2_READ],
			 &p[1].tot.request[SMB2_READ], true);
	/* Frames are written microseconds after their parse, or (to the
	 * server, for the requests' times above) stamped before it. */
	for (int d = 0; d < DIR_COUNT; d++)
		assert_same_hist(&p[0].tot.dir[d].forward,
				 &p[1].tot.dir[d].forward, false);
	assert_int_equal(p[0].tot.untimed_requests, p[1].tot.untimed_requests);
	/* Nothing in flight: both gave their tables and blocks back. */
	for (int i = 0; i < 2; i++) {
		assert_null(p[i].tm.srt);
		assert_null(p[i].tm.b);
		timing_end(&p[i].tm);
	}
	timing_pool_trim(&pool_b);
	pool_b.used = false;
	timing_pool_trim(&pool_b);
}

/* A restore refuses what no connection's timing can be, holding nothing
 * after; the most requests a table holds come back whole. */
static void test_handover_refuses_bad_states(void **state)
{
	static struct timing_saved ok, s;
	struct timing tm;

	setup_all();
	memset(&ok, 0, sizeof(ok));
	ok.nreq = 2;
	ok.req[0] = (struct timing_saved_request){ .id = 5, .end = 100,
						   .sent_ns = 77, .cmd = 8,
						   .sent = 1 };
	ok.req[1] = (struct timing_saved_request){ .id = 6, .end = 200,
						   .cmd = 8 };
	ok.fwd[DIR_TO_SERVER].len = 2;
	ok.fwd[DIR_TO_SERVER].t0[0] = ok.fwd[DIR_TO_SERVER].t0[1] = 1;
	ok.fwd[DIR_TO_SERVER].end[0] = 100;
	ok.fwd[DIR_TO_SERVER].end[1] = 200;
	ok.fwd[DIR_TO_SERVER].n[0] = ok.fwd[DIR_TO_SERVER].n[1] = 1;
	timing_init(&tm, &pool, &tot);
	assert_int_equal(timing_restore(&tm, &ok), 0);
	assert_int_equal(tm.srt->count, 2);
	assert_int_equal(tm.srt->unsent, 1);
	timing_end(&tm);

	struct {
		void (*spoil)(struct timing_saved *);
	} cases[] = {
		{ spoil_dup_id },     { spoil_sent_flag },  { spoil_sent_at_0 },
		{ spoil_hidden },     { spoil_hidden_reqs }, { spoil_nreq },
		{ spoil_ring_len },   { spoil_ring_order }, { spoil_ring_n },
		{ spoil_ring_stale }, { spoil_clock_idle },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		s = ok;
		cases[i].spoil(&s);
		timing_init(&tm, &pool, &tot);
		assert_int_equal(timing_restore(&tm, &s), -1);
		assert_null(tm.srt);
		assert_null(tm.b);
		assert_false(tm.hidden);
	}

	memset(&s, 0, sizeof(s));
	s.nreq = TIMING_MAX_REQUESTS;
	for (uint32_t i = 0; i < s.nreq; i++)
		s.req[i] = (struct timing_saved_request){ .id = 1000 + i,
							  .end = i };
	timing_init(&tm, &pool, &tot);
	assert_int_equal(timing_restore(&tm, &s), 0);
	assert_int_equal(tm.srt->count, TIMING_MAX_REQUESTS);
	timing_save(&tm, &ok);
	assert_int_equal(ok.nreq, TIMING_MAX_REQUESTS);
	timing_end(&tm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request_timed_to_final_response),
		cmocka_unit_test(test_not_yet_sent_is_not_timed),
		cmocka_unit_test(test_cancel_and_unsolicited),
		cmocka_unit_test(test_caps_count_what_they_drop),
		cmocka_unit_test(test_reused_id_at_the_cap_is_its_own),
		cmocka_unit_test(test_compressed_responses_stop_request_timing),
		cmocka_unit_test(test_handover_times_as_before),
		cmocka_unit_test(test_handover_refuses_bad_states),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
